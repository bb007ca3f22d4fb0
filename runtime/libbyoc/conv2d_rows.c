/* ROWS register tiles of the convolution (conv2d.c): 8 output channels x up
 * to 48 pixels, three vectors along the pixels times a broadcast weight. A
 * translation unit of its own so libbyoc's build compiles it beside the others.
 */
#include "conv2d.h"

#ifdef __AVX512F__
#include <immintrin.h>

/* Lanes [lo, hi) of a mask of 16 (none when hi <= lo). */
static inline __mmask16 lane_range(int64_t lo, int64_t hi) {
  lo = max64(lo, 0);
  hi = min64(hi, LANES);
  return hi <= lo ? 0 : (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}
#endif

/* acc[r][v] = sum_k a[k][r] * b[offset[k] + 16 v ...]: `a` a packed panel [K][8]. */
static inline __attribute__((always_inline)) void
rows_product(const int nv, int64_t k, const float *restrict a, const float *restrict b,
             const int64_t *restrict offset, vec acc[ROWS_MR][ROWS_NV]) {
#pragma GCC unroll 8
  for (int r = 0; r < ROWS_MR; r++)
#pragma GCC unroll 3
    for (int v = 0; v < nv; v++)
      acc[r][v] = splat(0.0f);
  for (int64_t kk = 0; kk < k; kk++) {
    const float *bk = b + offset[kk];
    vec x[ROWS_NV];
#pragma GCC unroll 3
    for (int v = 0; v < nv; v++)
      x[v] = load(bk + v * LANES);
#pragma GCC unroll 8
    for (int r = 0; r < ROWS_MR; r++) {
      float weight = a[kk * ROWS_MR + r];
#pragma GCC unroll 3
      for (int v = 0; v < nv; v++)
        acc[r][v] += weight * x[v];
    }
  }
}

static inline __attribute__((always_inline)) void
rows_store(const int nv, vec acc[ROWS_MR][ROWS_NV], const rows_out *t, const epilogue *e) {
  for (int v = 0; v < nv; v++) {
    int64_t at = t->at[v];
    if (at >= 0) {
      /* Whole vectors, also for the rows of a group's last, partial panel
       * (ShuffleNet's groups of 34 and 68 channels: a fifth of its 1x1
       * tiles went lane by lane below). */
#pragma GCC unroll 8
      for (int r = 0; r < ROWS_MR; r++) {
        if (r >= t->rows)
          break;
        vec y = acc[r][v] + (t->bias != NULL ? t->bias[r] : 0.0f);
        if (t->residual != NULL)
          y += load(t->residual + r * t->plane + at);
        store(t->out + r * t->plane + at, act_vector(e, y));
      }
      continue;
    }
    int64_t g = t->first + v * LANES;
    int64_t lanes = min64(LANES, t->count - v * LANES);
#ifdef __AVX512F__
    if (t->grid >= LANES) {
      /* A vector crossing the end of an output row spans at most two grid
       * rows: two masked stores, the lanes before the row's end and those
       * from the next row's start (a padded 3x3 conv on 55 columns crosses
       * with 30% of its vectors, which went lane by lane below). */
      int64_t row = g / t->grid, x = g % t->grid;
      __mmask16 valid = lane_range(0, lanes);
      __mmask16 here = lane_range(0, t->width - x) & valid;
      __mmask16 next = lane_range(t->grid - x, t->grid - x + t->width) & valid;
      int64_t at_here = row * t->width + x, at_next = (row + 1) * t->width + x - t->grid;
#pragma GCC unroll 8
      for (int r = 0; r < ROWS_MR; r++) {
        if (r >= t->rows)
          break;
        vec y = acc[r][v] + (t->bias != NULL ? t->bias[r] : 0.0f);
        if (t->residual != NULL) {
          const float *res = t->residual + r * t->plane;
          y += (vec)_mm512_maskz_loadu_ps(here, res + at_here) +
               (vec)_mm512_maskz_loadu_ps(next, res + at_next);
        }
        __m512 result = (__m512)act_vector(e, y);
        _mm512_mask_storeu_ps(t->out + r * t->plane + at_here, here, result);
        _mm512_mask_storeu_ps(t->out + r * t->plane + at_next, next, result);
      }
      continue;
    }
#endif
    /* A vector crossing the end of an output row, lane by lane. */
    float lane[ROWS_MR][LANES];
#pragma GCC unroll 8
    for (int r = 0; r < ROWS_MR; r++)
      store(lane[r], acc[r][v]);
    for (int64_t l = 0; l < lanes; l++) {
      int64_t x = (g + l) % t->grid;
      if (x >= t->width)
        continue;
      int64_t atl = (g + l) / t->grid * t->width + x;
      for (int64_t r = 0; r < t->rows; r++) {
        float y = lane[r][l] + (t->bias != NULL ? t->bias[r] : 0.0f);
        if (t->residual != NULL)
          y += t->residual[r * t->plane + atl];
        t->out[r * t->plane + atl] = act_scalar(e, y);
      }
    }
  }
}

/* Ask for the output's cache lines two tiles ahead (the same panel's tile
 * after next: a chunk runs each tile's panels, then the next tile's) while
 * the product is computed: stores to lines not in cache wait for them, and a
 * line asked for by the tile that stores to it came too late when the output
 * was not in any cache (a model's buffers mostly are not: SqueezeNet's
 * 16->64 1x1 expand convs at 55x55, K = 16, in the model, 1 thread, CPU
 * minimum: 97-141 -> 93-100 us; ResNet-50's convs the same, 0.4% less). */
static inline void rows_prefetch(const int nv, const rows_out *t) {
  for (int v = 0; v < nv; v++) {
    if (t->at[v] < 0)
      continue;
    for (int r = 0; r < ROWS_MR; r++)
      __builtin_prefetch(t->out + r * t->plane + t->at[v] + 2 * ROWS_NR, 1, 3);
  }
}

#define ROWS_TILE(nv)                                                                  \
  static void rows_tile_##nv(int64_t k, const float *restrict a, const float *restrict b, \
                             const int64_t *restrict offset, const rows_out *t,         \
                             const epilogue *e) {                                      \
    vec acc[ROWS_MR][ROWS_NV];                                                         \
    rows_prefetch(nv, t);                                                              \
    rows_product(nv, k, a, b, offset, acc);                                            \
    rows_store(nv, acc, t, e);                                                         \
  }
ROWS_TILE(1)
ROWS_TILE(2)
ROWS_TILE(3)

const rows_fn byoc_rows_tiles[ROWS_NV + 1] = {NULL, rows_tile_1, rows_tile_2, rows_tile_3};
