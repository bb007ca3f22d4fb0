/* 3x3 convolutions of stride 1 by Winograd's minimal filtering, F(2x2, 3x3)
 * (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks"):
 * each 2x2 block of outputs ("tile") of a channel is A^T [sum_c U[c] . V[c]] A,
 * V[c] = B^T d B of the 4x4 input patch d under the tile, U[c] = G g G^T of
 * the 3x3 kernel g (transformed at compile time: relay.nn.conv2d_packed's
 * "winograd8o" layout). 16 multiply-adds a tile and input channel instead of
 * 36: per position xi of the 4x4 patch, a product U_xi[O, C] x V_xi[C, tiles]
 * computed like a ROWS tile (8 output channels x up to 48 tiles, the
 * transformed weights broadcast). The transforms only add and subtract; all
 * of G's factors are halves, so the results match the direct product within
 * a few ulps of the output's scale.
 *
 * F(4x4, 3x3) (BYOC_RT_WINOGRAD4, "winograd4x4_8o") is the same with 4x4
 * tiles of 6x6 patches: 36 products a tile and input channel for 16 outputs
 * (2.25 an output against 4), its transforms' coefficients up to 8 (and G's
 * down to 1/24), so errors of a few 1e-6 of the output's scale.
 *
 * Work is split in blocks of up to 48 consecutive tiles (row-major) and ranges
 * of output-channel panels; a chunk is a block and a range, or a range over
 * every block (whole_ranges). Per block, a chunk transforms its tiles' patches
 * of every input channel into V (its thread's task scratch: 16 (36) x C x 48
 * floats), then per panel computes the 16 (36) products into M (16 (36) x 8 x
 * 48 floats) and transforms them into the output, bias, residual and
 * activation applied on the way. The input is read from a zero-padded copy
 * big enough for every tile's 4x4 patch.
 */
#define _GNU_SOURCE
#include "byoc_runtime.h"
#include "conv2d.h"

#include <stdlib.h>
#include <string.h>

#ifdef __AVX512F__
#include <immintrin.h>
#endif

#define WINO_NV 3                     /* vectors of tiles a product holds */
#define WINO_NT (WINO_NV * LANES)     /* tiles a chunk covers */
#define WINO_MR 8                     /* output channels per panel */

/* The first n floats at p as a vector (the rest 0; n <= 0: none). */
static inline vec load_n(const float *p, int64_t n) {
#ifdef __AVX512F__
  return (vec)_mm512_maskz_loadu_ps(n >= LANES ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1), p);
#else
  if (n >= LANES)
    return load(p);
  vec v = splat(0.0f);
  for (int64_t i = 0; i < n; i++)
    v[i] = p[i];
  return v;
#endif
}

/* The first n lanes of v to p. */
static inline void store_n(float *p, vec v, int64_t n) {
#ifdef __AVX512F__
  _mm512_mask_storeu_ps(p, n >= LANES ? (__mmask16)0xffff : n <= 0 ? 0 : (__mmask16)((1u << n) - 1), (__m512)v);
#else
  if (n >= LANES) {
    store(p, v);
    return;
  }
  for (int64_t i = 0; i < n; i++)
    p[i] = v[i];
#endif
}

/* The even and odd floats of the 32 in x[0], x[1]. */
static inline void deinterleave(const vec x[2], vec *even, vec *odd) {
  vec lo = x[0], hi = x[1];
  *even = __builtin_shufflevector(lo, hi, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  *odd = __builtin_shufflevector(lo, hi, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}

typedef struct wino_job {
  const byoc_rt_conv *cv;
  const float *data;
  const float *weight; /* [G][panels][C/G][xi][8] */
  float *out;
  epilogue e;
  float *copy;         /* the padded copy of the current image and group */
  int64_t pitch, plane; /* its row pitch and channel plane (floats) */
  int64_t cg, og, panels;
  int64_t m, xi;            /* outputs a tile is wide and high (2 or 4), patch positions ((m + 2)^2) */
  int64_t tiles_w, tiles;   /* tiles per tile row (as numbered), in all */
  int64_t stack;            /* tile rows a vector of 16 tiles spans: 1, 2 or 4 */
  int64_t blocks, ranges, per_range; /* blocks of tiles, ranges of panels (wino_chunk) */
  int64_t v_stride;         /* floats between two input channels' rows of V (>= tiles of a block) */
  int64_t xi_stride;        /* floats between two positions' V (C v_stride, and a line) */
  int64_t image, group;
  int failed;               /* a chunk found no scratch memory */
} wino_job;

/* The floats at 4 l + phase of the 64 in x[0 .. 3], phases 0 to 3, for lanes l. */
static inline void deinterleave4(const vec x[4], vec phase[4]) {
  vec e0, o0, e1, o1;
  deinterleave(x, &e0, &o0);          /* floats 0, 2, .. 30 and 1, 3, .. 31 */
  deinterleave(x + 2, &e1, &o1);
  phase[0] = __builtin_shufflevector(e0, e1, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  phase[2] = __builtin_shufflevector(e0, e1, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  phase[1] = __builtin_shufflevector(o0, o1, 0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  phase[3] = __builtin_shufflevector(o0, o1, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
}

/* y = B^T x of F(4x4, 3x3): B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0;
 * 0 -2 -1 2 1 0; 0 2 -1 -2 1 0; 0 4 0 -5 0 1]. */
static inline void bt6(const vec x[6], vec y[6]) {
  vec a = x[4] - 4.0f * x[2], b = 4.0f * x[1] - x[3];
  vec c = x[4] - x[2], d = 2.0f * (x[1] - x[3]);
  y[0] = 4.0f * x[0] - 5.0f * x[2] + x[4];
  y[1] = a - b;
  y[2] = a + b;
  y[3] = c - d;
  y[4] = c + d;
  y[5] = 4.0f * x[1] - 5.0f * x[3] + x[5];
}

/* y = B^T x of F(2x2, 3x3): B^T = [1 0 -1 0; 0 1 1 0; 0 -1 1 0; 0 1 0 -1]. */
static inline void bt4(const vec x[4], vec y[4]) {
  y[0] = x[0] - x[2];
  y[1] = x[1] + x[2];
  y[2] = x[2] - x[1];
  y[3] = x[1] - x[3];
}

/* y = B^T x of F(m x m, 3x3). */
static inline void bt(const int m, const vec *x, vec *y) {
  if (m == 4)
    bt6(x, y);
  else
    bt4(x, y);
}

/* The 16 m floats that 16 tiles' patch row starts at (m floats a tile), as m
 * vectors: from row[0] alone (a run of tiles in one tile row), or from
 * row[0 .. rows) (rows = 2 or 4 tile rows of 16 / rows tiles each). */
static inline void patch_row_floats(const int m, int rows, const float *const row[4], int64_t at,
                                    vec v[4]) {
  if (rows == 1) {
    for (int s = 0; s < m; s++)
      v[s] = load(row[0] + at + s * LANES);
  } else if (m * LANES / rows >= LANES) {
    int per = m / rows; /* vectors a tile row gives */
    for (int s = 0; s < m; s++)
      v[s] = load(row[s / per] + at + s % per * LANES);
  } else { /* F(2x2), 4 tile rows of 4 tiles: 8 floats each */
    for (int s = 0; s < 2; s++)
      v[s] = __builtin_shufflevector(load(row[2 * s] + at), load(row[2 * s + 1] + at), 0, 1, 2, 3,
                                     4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23);
  }
}

/* V[xi][c][t - t0] = (B^T d B)[xi] of tile t's (m + 2)^2 patch d in channel c,
 * for t in [t0, t1). A vector holds a run of tiles: up to 16 of one tile row
 * or, where tile rows are 8 or 4 tiles (j->stack 2 or 4; tiles numbered as if
 * rows were that long), 16 of 2 or 4 tile rows, read as one. Runs of a tile
 * row alone filled 4 of 16 lanes at 14x14 by F(4x4) and 7 at 28x28, and
 * the transform's arithmetic was done 4 and 2-3 times per 16 tiles. */
static inline __attribute__((always_inline)) void
transform_patches(const int m, const int stack, const wino_job *j, int64_t t0, int64_t t1,
                  float *v) {
  enum { MOST = 6 };
  const int n = m + 2;
  int64_t stride_xi = j->xi_stride, last_row = j->tiles / j->tiles_w - 1;
  for (int64_t c = 0; c < j->cg; c++) {
    const float *channel = j->copy + c * j->plane;
    float *vc = v + c * j->v_stride;
    for (int64_t t = t0; t < t1;) {
      int64_t ty = t / j->tiles_w, tx = t % j->tiles_w;
      int64_t lanes = min64(min64(LANES, j->tiles_w - tx), t1 - t);
      const float *row[4];
      for (int g = 0; g < stack; g++)
        row[g] = channel + m * min64(ty + g, last_row) * j->pitch + m * tx;
      if (stack > 1)
        lanes = min64(LANES, t1 - t);
      /* B^T along the columns first: per column k of the patches (a vector
       * over the tiles), its rows combined. */
      vec col[MOST][MOST]; /* col[k][i]: row i, column k */
      for (int i = 0; i < n; i++) {
        vec x[4] = {0}, ph[4]; /* x[2], x[3]: F(4x4) only */
        /* Columns 0 .. m - 1 of each tile's patch, then m and m + 1. */
        for (int shift = 0; shift < 2; shift++) {
          patch_row_floats(m, stack, row, i * j->pitch + shift * m, x);
          if (m == 4)
            deinterleave4(x, ph);
          else
            deinterleave(x, &ph[0], &ph[1]);
          for (int k = 0; k < (shift == 0 ? m : 2); k++)
            col[shift * m + k][i] = ph[k];
        }
      }
      vec rows[MOST][MOST]; /* rows[a][k]: (B^T d)[a] at column k */
      for (int k = 0; k < n; k++) {
        vec y[MOST];
        bt(m, col[k], y);
        for (int a = 0; a < n; a++)
          rows[a][k] = y[a];
      }
      /* Then along the rows. */
      float *dst = vc + (t - t0);
      for (int a = 0; a < n; a++) {
        vec y[MOST];
        bt(m, rows[a], y);
        for (int b = 0; b < n; b++)
          store_n(dst + (n * a + b) * stride_xi, y[b], lanes);
      }
      t += lanes;
    }
  }
}

/* transform_patches of j's m and stack, both constants there: a branch on the
 * stack in its inner loop made ResNet-50's 64-channel conv at 56x56 (runs of
 * whole tile rows) 2% slower. */
static void transform_input(const wino_job *j, int64_t t0, int64_t t1, float *v) {
  int variant = (j->m == 4 ? 3 : 0) + (j->stack == 4 ? 2 : j->stack == 2 ? 1 : 0);
  switch (variant) {
  case 0: transform_patches(2, 1, j, t0, t1, v); break;
  case 1: transform_patches(2, 2, j, t0, t1, v); break;
  case 2: transform_patches(2, 4, j, t0, t1, v); break;
  case 3: transform_patches(4, 1, j, t0, t1, v); break;
  case 4: transform_patches(4, 2, j, t0, t1, v); break;
  default: transform_patches(4, 4, j, t0, t1, v); break;
  }
}

/* m[r][q] = sum_c u[c][xi][r] v[c][q] for 8 channels r and nv vectors of tiles q. */
static inline __attribute__((always_inline)) void
wino_product(const int nv, int64_t k, const float *restrict u, int64_t u_stride,
             const float *restrict v, int64_t v_stride, float *restrict m) {
  vec acc[WINO_MR][WINO_NV];
#pragma GCC unroll 8
  for (int r = 0; r < WINO_MR; r++)
#pragma GCC unroll 3
    for (int q = 0; q < nv; q++)
      acc[r][q] = splat(0.0f);
  for (int64_t c = 0; c < k; c++) {
    /* The weights 16 channels on (a line each, 512 bytes apart), which a
     * model's call reads from memory: ResNet-50's 512-channel 3x3 convs at
     * 7x7 (16 MB of them) 3.08 -> 2.42 ms, as fast as the direct product. */
    __builtin_prefetch(u + (c + 16) * u_stride, 0, 3);
    vec x[WINO_NV];
#pragma GCC unroll 3
    for (int q = 0; q < nv; q++)
      x[q] = load(v + c * v_stride + q * LANES);
#pragma GCC unroll 8
    for (int r = 0; r < WINO_MR; r++) {
      float w = u[c * u_stride + r];
#pragma GCC unroll 3
      for (int q = 0; q < nv; q++)
        acc[r][q] += w * x[q];
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < WINO_MR; r++)
#pragma GCC unroll 3
    for (int q = 0; q < nv; q++)
      store(m + r * WINO_NT + q * LANES, acc[r][q]);
}

typedef void (*wino_product_fn)(int64_t, const float *restrict, int64_t, const float *restrict,
                                int64_t, float *restrict);
#define WINO_PRODUCT(nv)                                                                       \
  static void wino_product_##nv(int64_t k, const float *restrict u, int64_t u_stride,           \
                                const float *restrict v, int64_t v_stride, float *restrict m) { \
    wino_product(nv, k, u, u_stride, v, v_stride, m);                                          \
  }
WINO_PRODUCT(1)
WINO_PRODUCT(2)
WINO_PRODUCT(3)
static const wino_product_fn wino_products[WINO_NV + 1] = {NULL, wino_product_1, wino_product_2,
                                                           wino_product_3};

/* y = A^T x of F(2x2, 3x3): A^T = [1 1 1 0; 0 1 -1 -1]. */
static inline void at4(const vec x[4], vec y[2]) {
  y[0] = x[0] + x[1] + x[2];
  y[1] = x[1] - x[2] - x[3];
}

/* y = A^T x of F(4x4, 3x3): A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0;
 * 0 1 -1 8 -8 1]. */
static inline void at6(const vec x[6], vec y[4]) {
  vec p = x[1] + x[2], q = x[1] - x[2], u = x[3] + x[4], w = x[3] - x[4];
  y[0] = x[0] + p + u;
  y[1] = q + 2.0f * w;
  y[2] = p + 4.0f * u;
  y[3] = q + 8.0f * w + x[5];
}

/* y = A^T x of F(m x m, 3x3). */
static inline void at(const int m, const vec *x, vec *y) {
  if (m == 4)
    at6(x, y);
  else
    at4(x, y);
}

/* 16 / m tiles' outputs of one row, side by side: y[b][at + i] is tile i's
 * column b. */
static inline vec tile_columns(const int m, float *const y[4], int64_t at) {
  vec c0 = load(y[0] + at), c1 = load(y[1] + at);
  vec lo = __builtin_shufflevector(c0, c1, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  if (m == 2)
    return lo;
  vec c2 = load(y[2] + at), c3 = load(y[3] + at);
  vec hi = __builtin_shufflevector(c2, c3, 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  return __builtin_shufflevector(lo, hi, 0, 1, 16, 17, 2, 3, 18, 19, 4, 5, 20, 21, 6, 7, 22, 23);
}

/* Output channels [o0, o0 + rows) at tiles [t0, t1) from m ([(m + 2)^2][8][48]):
 * A^T M A, then bias, residual and activation, stored m x m a tile. */
static inline __attribute__((always_inline)) void
transform_tiles(const int m, const wino_job *j, int64_t o0, int64_t rows, int64_t t0, int64_t t1,
                const float *mm) {
  enum { MOST = 6 };
  const int n = m + 2;
  const byoc_rt_conv *cv = j->cv;
  int64_t oh = cv->out_height, ow = cv->out_width, plane = oh * ow;
  int64_t out_at = (j->image * cv->out_channels + j->group * j->og + o0) * plane;
  float y[4][4][WINO_NT + LANES]; /* y[a][b][t - t0]: output (m ty + a, m tx + b) */
  for (int64_t r = 0; r < rows; r++) {
    const float *mr = mm + r * WINO_NT;
    for (int64_t q = 0; q < t1 - t0; q += LANES) {
      vec s[MOST][4]; /* s[k][b]: (M A)[k][b] */
      for (int k = 0; k < n; k++) {
        vec x[MOST];
        for (int i = 0; i < n; i++)
          x[i] = load(mr + (n * k + i) * WINO_MR * WINO_NT + q);
        at(m, x, s[k]);
      }
      for (int b = 0; b < m; b++) {
        vec x[MOST], z[4];
        for (int k = 0; k < n; k++)
          x[k] = s[k][b];
        at(m, x, z);
        for (int a = 0; a < m; a++)
          store(y[a][b] + q, z[a]);
      }
    }
    float bias = j->e.bias != NULL ? j->e.bias[j->group * j->og + o0 + r] : 0.0f;
    float *out = j->out + out_at + r * plane;
    const float *residual = j->e.residual != NULL ? j->e.residual + out_at + r * plane : NULL;
    /* Row by row of tiles: 16 / m tiles' m columns interleaved into 16 outputs. */
    for (int64_t t = t0; t < t1;) {
      int64_t ty = t / j->tiles_w, tx = t % j->tiles_w;
      int64_t n_tiles = min64(j->tiles_w - tx, t1 - t);
      for (int a = 0; a < m && m * ty + a < oh; a++) {
        int64_t row = (m * ty + a) * ow;
        float *const ya[4] = {y[a][0], y[a][1], y[a][2], y[a][3]};
        for (int64_t i = 0; i < n_tiles; i += LANES / m) {
          int64_t x = m * (tx + i), count = min64(LANES, ow - x);
          vec z = tile_columns(m, ya, (t - t0) + i) + bias;
          if (residual != NULL)
            z += load_n(residual + row + x, count);
          store_n(out + row + x, act_vector(&j->e, z), min64(count, m * (n_tiles - i)));
        }
      }
      t += n_tiles;
    }
  }
}

static void transform_output(const wino_job *j, int64_t o0, int64_t rows, int64_t t0, int64_t t1,
                             const float *m) {
  if (j->m == 4)
    transform_tiles(4, j, o0, rows, t0, t1, m);
  else
    transform_tiles(2, j, o0, rows, t0, t1, m);
}

/* Block `block`'s tiles, panels [p0, p1), V and M in `v`. */
static void wino_block(const wino_job *j, int64_t block, int64_t p0, int64_t p1, float *v) {
  int64_t t0 = block * j->v_stride, t1 = min64(j->tiles, t0 + j->v_stride);
  float *m = v + j->xi * j->xi_stride;
  transform_input(j, t0, t1, v);
  wino_product_fn product = wino_products[ceil_div(t1 - t0, LANES)];
  int64_t u_stride = j->xi * WINO_MR; /* floats between two input channels' weights */
  const float *u = j->weight + j->group * j->panels * j->cg * u_stride;
  for (int64_t p = p0; p < p1; p++) {
    const float *up = u + p * j->cg * u_stride;
    for (int64_t xi = 0; xi < j->xi; xi++)
      product(j->cg, up + xi * WINO_MR, u_stride, v + xi * j->xi_stride, j->v_stride,
              m + xi * WINO_MR * WINO_NT);
    int64_t rows = min64(WINO_MR, j->og - p * WINO_MR);
    transform_output(j, p * WINO_MR, rows, t0, t1, m);
  }
}

/* Whether a chunk is a range of panels over every block (else a block and a
 * range): with several ranges, when a range's weights fit in half of L2, so
 * the thread that took the range reads them from its own L2 for every block
 * after the first. As (block, range) chunks, the block after read its
 * range's weights again on whichever thread took it, a cold read on the
 * other core's: SqueezeNet's 3x3 convs at 13x13 and 27x27 (then 49 tiles in
 * blocks of 48 and 1, 2 ranges at 2 threads; up to 512 KB of weights a range)
 * ran the single-tile chunks in 27 us after their range's block on one
 * thread, 60-96 us after it on the other. (Tile rows of up to 8 tiles are now
 * numbered as if 8 long, so the 13x13 conv's 49 tiles are 56.) */
static int whole_ranges(const wino_job *j, int64_t ranges) {
  int64_t per_range = ceil_div(j->panels, ranges);
  return ranges > 1 && j->cg * per_range * WINO_MR * j->xi <= 131072;
}

/* The chunks of the conv in `ranges` ranges, and chunk `index`'s blocks
 * [*b0, *b1) and range. */
static int64_t wino_chunks(const wino_job *j, int64_t ranges) {
  return whole_ranges(j, ranges) ? ranges : j->blocks * ranges;
}

static int64_t chunk_blocks(const wino_job *j, int64_t ranges, int64_t index, int64_t *b0,
                            int64_t *b1) {
  if (whole_ranges(j, ranges)) {
    *b0 = 0;
    *b1 = j->blocks;
    return index;
  }
  *b0 = index % j->blocks;
  *b1 = *b0 + 1;
  return index / j->blocks;
}

static void wino_chunk(void *context, int64_t index) {
  wino_job *j = context;
  int64_t b0, b1, range = chunk_blocks(j, j->ranges, index, &b0, &b1);
  int64_t p0 = range * j->per_range, p1 = min64(j->panels, p0 + j->per_range);
  float *v = byoc_task_scratch((size_t)(j->xi * j->xi_stride + j->xi * WINO_MR * WINO_NT));
  if (v == NULL) {
    __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
    return;
  }
  for (int64_t block = b0; block < b1; block++)
    wino_block(j, block, p0, p1, v);
}

/* Channels [8 index, 8 index + 8) of the zero-padded copy of the current
 * image and group. */
static void wino_pad(void *context, int64_t index) {
  const wino_job *j = context;
  const byoc_rt_conv *cv = j->cv;
  int64_t h = cv->height, w = cv->width, top = cv->pad_top, left = cv->pad_left;
  int64_t pitch = j->pitch, rows = j->plane / pitch;
  const float *x = j->data + (j->image * cv->channels + j->group * j->cg) * h * w;
  for (int64_t c = index * 8; c < min64(j->cg, index * 8 + 8); c++) {
    float *dst = j->copy + c * j->plane;
    const float *src = x + c * h * w;
    memset(dst, 0, (size_t)(top * pitch) * sizeof(float));
    for (int64_t y = 0; y < h; y++) {
      float *row = dst + (top + y) * pitch;
      memset(row, 0, (size_t)left * sizeof(float));
      memcpy(row + left, src + y * w, (size_t)w * sizeof(float));
      memset(row + left + w, 0, (size_t)(pitch - left - w) * sizeof(float));
    }
    memset(dst + (top + h) * pitch, 0, (size_t)((rows - top - h) * pitch) * sizeof(float));
  }
}

/* The runs of tiles the input transform of tiles [t0, t1) takes: a run
 * ends with its tile row (with its 2 or 4 stacked ones) or 16 tiles. */
static int64_t input_runs(const wino_job *j, int64_t t0, int64_t t1) {
  if (j->stack > 1)
    return ceil_div(t1 - t0, LANES);
  int64_t runs = 0;
  for (int64_t t = t0; t < t1; runs++)
    t += min64(min64(LANES, j->tiles_w - t % j->tiles_w), t1 - t);
  return runs;
}

/* Ranges of panels for `threads` threads: the count whose chunks, taken in
 * order by whichever thread is free, end first by a model of their costs in
 * products of a vector of tiles by 8 weights (1 a panel, input channel and
 * patch position), each chunk's input transform included (a run of tiles
 * and input channel about 9 of them for F(2x2), 36 for F(4x4), 1 thread:
 * 43 us a range of ResNet-50's 256 channels at 14x14 by F(2x2), 51 us of
 * Inception v2's 128 -> 192 by F(4x4)). Within 3% of the best, more chunks
 * win: they absorb a thread that comes late. A fixed count of chunks a
 * thread (four) transformed each block of ResNet-50's 256-channel convs at
 * 14x14 4 times at 2 threads; and F(4x4) at 14x14, one block of 16 tiles
 * (then transformed in 4 runs of 4), spent more on transforming than
 * splitting saved (Inception v2's 128 -> 192: 343 us at 1 thread; at 2, 261
 * in 4 ranges, 210 in 2). */
static int64_t wino_ranges(const wino_job *j, int64_t threads) {
  enum { MOST = 16 };
  int64_t per_run = j->m == 4 ? 36 : 9;
  int64_t n = min64(threads, 64);
  double ends[MOST + 1] = {0}, best = 0.0;
  for (int64_t r = 1; r <= min64(j->panels, MOST); r++) {
    int64_t per_range = ceil_div(j->panels, r);
    ends[r] = -1.0;
    if (ceil_div(j->panels, per_range) != r)
      continue; /* the same split as fewer ranges */
    double free_at[64] = {0};
    for (int64_t index = 0; index < wino_chunks(j, r); index++) {
      int64_t b0, b1, range = chunk_blocks(j, r, index, &b0, &b1);
      int64_t panels = min64(j->panels, (range + 1) * per_range) - range * per_range;
      double cost = 0.0;
      for (int64_t block = b0; block < b1; block++) {
        int64_t t0 = block * j->v_stride, t1 = min64(j->tiles, t0 + j->v_stride);
        cost += (double)j->cg * (double)(input_runs(j, t0, t1) * per_run +
                                         panels * j->xi * ceil_div(t1 - t0, LANES));
      }
      int64_t first = 0;
      for (int64_t t = 1; t < n; t++)
        if (free_at[t] < free_at[first])
          first = t;
      free_at[first] += cost;
    }
    for (int64_t t = 0; t < n; t++)
      ends[r] = free_at[t] > ends[r] ? free_at[t] : ends[r];
    if (r == 1 || ends[r] < best)
      best = ends[r];
  }
  int64_t choice = 1;
  for (int64_t r = 1; r <= min64(j->panels, MOST); r++)
    if (ends[r] >= 0.0 && ends[r] <= best * 1.03 && wino_chunks(j, r) >= wino_chunks(j, choice))
      choice = r;
  return choice;
}

int32_t byoc_winograd_conv2d(const byoc_rt_conv *cv, const float *data, const float *weight,
                             const float *bias, const float *residual, float *out) {
  if (cv->kernel_h != 3 || cv->kernel_w != 3 || cv->stride_h != 1 || cv->stride_w != 1 ||
      cv->dilation_h != 1 || cv->dilation_w != 1 || cv->shuffle > 1)
    return BYOC_RT_FAILED;
  wino_job j = {
      .cv = cv,
      .data = data,
      .weight = weight,
      .out = out,
      .e = {bias, residual, cv->activation, cv->low, cv->high},
      .cg = cv->channels / cv->groups,
      .og = cv->out_channels / cv->groups,
      .m = cv->layout == BYOC_RT_WINOGRAD4 ? 4 : 2,
  };
  j.xi = (j.m + 2) * (j.m + 2);
  j.panels = ceil_div(j.og, WINO_MR);
  /* Tile rows of up to 4 (8) tiles are numbered as if 4 (8) long, 4 (2) of
   * them a vector (transform_patches); the extra tiles' outputs are past the
   * output's width and not stored. The products take as many vectors (28x28
   * by F(4x4): 49 tiles or 56, 4 vectors). */
  j.tiles_w = ceil_div(cv->out_width, j.m);
  j.stack = j.tiles_w <= 4 ? 4 : j.tiles_w <= 8 ? 2 : 1;
  if (j.stack > 1)
    j.tiles_w = LANES / j.stack;
  j.tiles = ceil_div(cv->out_height, j.m) * j.tiles_w;
  /* The copy holds every tile's patch (and the image at its padding). */
  j.pitch = max64(cv->width + cv->pad_left, j.m * j.tiles_w + 2);
  int64_t rows = max64(cv->height + cv->pad_top, j.m * ceil_div(cv->out_height, j.m) + 2);
  j.plane = rows * j.pitch;
  /* Blocks of tiles whose V (xi x C x tiles floats) stays within half of L2:
   * ResNet-50's 256-channel convs at 14x14 take 32 tiles a block by F(2x2),
   * 16 by F(4x4). */
  int64_t most = min64(WINO_NT, max64(LANES, (131072 / j.xi / max64(j.cg, 1)) / LANES * LANES));
  /* Blocks of whole vectors of tiles but the last: split evenly, 784 tiles at
   * 56x56 made 17 blocks of 46 tiles in 48 lanes, 18 (at 2 threads) of 44. */
  j.v_stride = min64(most, ceil_div(j.tiles, LANES) * LANES);
  j.blocks = ceil_div(j.tiles, j.v_stride);
  int64_t threads = byoc_rt_num_threads();
  /* A line more than C rows: with C v_stride floats a multiple of 4 KB
   * (64 channels of 48 tiles), the 16 positions' stores of a patch all fell
   * in one set of L1 and evicted each other; the input transform took a
   * quarter of the products' time, now an eighth. */
  j.xi_stride = j.cg * j.v_stride + LANES;
  /* Panels split in ranges when blocks are too few for every thread to take
   * a fair share; each range transforms its block's input again. */
  j.ranges = threads > 1 ? wino_ranges(&j, threads) : 1;
  j.per_range = ceil_div(j.panels, j.ranges);
  j.ranges = ceil_div(j.panels, j.per_range);
  /* The copy, with a zeroed margin the last patches' vectors read past
   * (F(4x4) reads 64 floats from 4 past a patch's first column). */
  int64_t margin = 5 * LANES;
  float *copy = byoc_thread_scratch((size_t)(j.cg * j.plane + margin));
  if (copy == NULL)
    return BYOC_RT_OUT_OF_MEMORY;
  memset(copy + j.cg * j.plane, 0, (size_t)margin * sizeof(float));
  j.copy = copy;
  for (int64_t n = 0; n < cv->batch; n++) {
    for (int64_t g = 0; g < cv->groups; g++) {
      j.image = n;
      j.group = g;
      byoc_rt_parallel_for(ceil_div(j.cg, 8), wino_pad, &j);
      byoc_rt_parallel_for(wino_chunks(&j, j.ranges), wino_chunk, &j);
      if (__atomic_load_n(&j.failed, __ATOMIC_RELAXED))
        return BYOC_RT_OUT_OF_MEMORY;
    }
  }
  return BYOC_RT_OK;
}
