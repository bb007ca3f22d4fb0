/* Matrix products out[M, N] = act(A[M, K] x W[N, K]^T + bias + residual) of
 * row-major float32 matrices, W packed at compile time (see byoc_runtime.h),
 * the epilogue applied while the output is in registers.
 *
 * A tile is 12 rows of A times a panel of 32 columns of W: 24 vector
 * accumulators (two vectors of 16 columns per row) in registers; each step
 * of the reduction loads the panel's two vectors of W[k] and broadcasts the
 * 12 values A[r][k]. The reduction is cut into blocks of DENSE_KC so a
 * panel's block (128 KB) and the rows' block of A stay in L2 while every row
 * tile passes over the panel; the output tile is kept in memory between
 * blocks and finished (epilogue) after the last one.
 *
 * OpenBLAS's sgemm packs both operands on every call; a weight is the larger
 * one in a transformer or an MLP (K x N against M x K for a short sequence),
 * so reading it packed saves most of the memory traffic of the call.
 */
#include "byoc_runtime.h"
#include "kernels.h"

#include <string.h>

#define DENSE_MR 12      /* rows of A per tile */
#define DENSE_NR 32      /* columns of W per panel (two vectors) */
#define DENSE_KC 1024    /* reduction block (measured: 256 to 4096 on Zen 4) */
#define DENSE_PANELS 4   /* panels a chunk computes (128 columns) */

typedef struct dense_job {
  const byoc_rt_product *d;
  const float *a, *w, *bias, *residual;
  float *out;
  int64_t panels, panel_groups, row_groups, rows_per_group;
  int copy; /* copies A's rows apart (rows_collide) */
} dense_job;

/* acc = (first ? 0 : out tile) + A[rows, k0:k1] x W panel[k0:k1]; then, on
 * the last block, the epilogue; stores the tile (its first `cols` columns).
 * `nv` vectors of columns: a last panel of at most LANES columns (a
 * classifier's 10) computes one, half the multiply-adds of a whole panel. */
static inline __attribute__((always_inline)) void
dense_tile(const int mr, const int nv, const dense_job *j, const float *restrict a, int64_t lda,
           int64_t row, int64_t col, int64_t cols, const float *restrict w, int64_t k0,
           int64_t k1) {
  const byoc_rt_product *d = j->d;
  float *restrict out = j->out + row * d->n + col;
  int full = cols == nv * LANES;
  vec acc[DENSE_MR][2];
  if (k0 == 0) {
#pragma GCC unroll 12
    for (int r = 0; r < mr; r++)
      acc[r][0] = acc[r][1] = splat(0.0f);
  } else {
    float part[DENSE_NR];
#pragma GCC unroll 12
    for (int r = 0; r < mr; r++) {
      const float *src = out + r * d->n;
      if (!full) {
        memset(part, 0, sizeof part);
        memcpy(part, src, (size_t)cols * sizeof(float));
        src = part;
      }
      acc[r][0] = load(src);
      acc[r][1] = nv == 2 ? load(src + LANES) : splat(0.0f);
    }
  }
  for (int64_t k = k0; k < k1; k++) {
    vec w0 = load(w + k * DENSE_NR);
    vec w1 = nv == 2 ? load(w + k * DENSE_NR + LANES) : splat(0.0f);
#pragma GCC unroll 12
    for (int r = 0; r < mr; r++) {
      float x = a[r * lda + (k - k0)];
      acc[r][0] += x * w0;
      if (nv == 2)
        acc[r][1] += x * w1;
    }
  }
  int last = k1 == d->k;
  epilogue e = {j->bias, j->residual, d->activation, d->low, d->high};
  vec b0 = splat(0.0f), b1 = splat(0.0f);
  if (last && j->bias != NULL) {
    float part[DENSE_NR] = {0};
    memcpy(part, j->bias + col, (size_t)cols * sizeof(float));
    b0 = load(part);
    b1 = load(part + LANES);
  }
#pragma GCC unroll 12
  for (int r = 0; r < mr; r++) {
    vec y0 = acc[r][0], y1 = acc[r][1];
    if (last) {
      y0 += b0;
      y1 += b1;
      if (j->residual != NULL) {
        const float *res = j->residual + (row + r) * d->n + col;
        float part[DENSE_NR] = {0};
        if (!full) {
          memcpy(part, res, (size_t)cols * sizeof(float));
          res = part;
        }
        y0 += load(res);
        if (nv == 2)
          y1 += load(res + LANES);
      }
      y0 = act_vector(&e, y0);
      if (nv == 2)
        y1 = act_vector(&e, y1);
    }
    float *dst = out + r * d->n;
    if (full) {
      store(dst, y0);
      if (nv == 2)
        store(dst + LANES, y1);
    } else {
      float part[DENSE_NR];
      store(part, y0);
      store(part + LANES, y1);
      memcpy(dst, part, (size_t)cols * sizeof(float));
    }
  }
}

#define DENSE_TILE(mr)                                                                \
  static void dense_tile_##mr(const dense_job *j, const float *restrict a, int64_t lda, \
                              int64_t row, int64_t col, int64_t cols,                 \
                              const float *restrict w, int64_t k0, int64_t k1) {      \
    dense_tile(mr, 2, j, a, lda, row, col, cols, w, k0, k1);                          \
  }                                                                                   \
  static void dense_half_##mr(const dense_job *j, const float *restrict a, int64_t lda, \
                              int64_t row, int64_t col, int64_t cols,                 \
                              const float *restrict w, int64_t k0, int64_t k1) {      \
    dense_tile(mr, 1, j, a, lda, row, col, cols, w, k0, k1);                          \
  }
DENSE_TILE(1) DENSE_TILE(2) DENSE_TILE(3) DENSE_TILE(4) DENSE_TILE(5) DENSE_TILE(6)
DENSE_TILE(7) DENSE_TILE(8) DENSE_TILE(9) DENSE_TILE(10) DENSE_TILE(11) DENSE_TILE(12)

typedef void (*dense_fn)(const dense_job *, const float *restrict, int64_t, int64_t, int64_t,
                         int64_t, const float *restrict, int64_t, int64_t);
static const dense_fn DENSE_TILES[2][DENSE_MR + 1] = {
    {NULL, dense_half_1, dense_half_2, dense_half_3, dense_half_4, dense_half_5, dense_half_6,
     dense_half_7, dense_half_8, dense_half_9, dense_half_10, dense_half_11, dense_half_12},
    {NULL, dense_tile_1, dense_tile_2, dense_tile_3, dense_tile_4, dense_tile_5, dense_tile_6,
     dense_tile_7, dense_tile_8, dense_tile_9, dense_tile_10, dense_tile_11, dense_tile_12},
};

/* Whether the DENSE_MR rows of a tile, `k` floats apart, fall into so few
 * sets of the L1 (64 sets of 64-byte lines, 8 ways on Zen 4, as on most
 * x86) that one set would hold more of them than it has ways: a tile reads
 * all its rows at every step of the reduction, so they would evict each
 * other on every step. K a multiple of 1024 (rows 512 apart, 6 to a set,
 * were 3% slower copied: bench/run.py's MLP, 64 x 512 x 1024). */
static int rows_collide(int64_t k) {
  int64_t bytes = k * (int64_t)sizeof(float);
  if (bytes % 64 != 0)
    return 0;
  int64_t lines = bytes / 64 % 64, sets = 64;
  while (lines != 0 && lines % 2 == 0 && sets > 1) {
    lines /= 2;
    sets /= 2;
  }
  if (lines == 0)
    sets = 1;
  return ceil_div(DENSE_MR, sets) > 8;
}

/* The first row of tile t of the n tiles rows [r0, r1) are cut into: as
 * even as can be (64 rows are 11, 11, 11, 11, 10, 10), not 12-row tiles and
 * a remainder: a tile of 4 rows keeps only 8 accumulators, too few chains
 * to hide the multiply-adds' latency (bench/run.py's MLP, 64 x 512 x 1024,
 * 1 thread: 0.631 -> 0.597 ms). */
static inline int64_t tile_row(int64_t r0, int64_t r1, int64_t n, int64_t t) {
  return r0 + t * (r1 - r0) / n;
}

/* One chunk: DENSE_PANELS panels of columns times a group of row tiles,
 * reduction block by block: per block, each panel over the row tiles (the
 * panel's block stays in L2 for all of them), or, when A's rows collide in
 * the L1 (`rows_collide`: BERT's 3072 -> 768 projection ran at 93-97
 * GFLOP/s where its 768-deep ones run at 110-115), each row tile's part of A
 * copied to rows DENSE_COPY_STRIDE floats (65 lines) apart, each in a set of
 * its own, then multiplied by every panel of the chunk. */
#define DENSE_COPY_STRIDE (DENSE_KC + LANES)

static void dense_chunk(void *context, int64_t index) {
  const dense_job *j = context;
  const byoc_rt_product *d = j->d;
  int64_t group = index % j->row_groups, block = index / j->row_groups;
  int64_t p0 = block * DENSE_PANELS, p1 = min64(j->panels, p0 + DENSE_PANELS);
  int64_t r0 = group * j->rows_per_group, r1 = min64(d->m, r0 + j->rows_per_group);
  float *copy = j->copy ? byoc_thread_scratch(DENSE_MR * DENSE_COPY_STRIDE) : NULL;
  int64_t n_tiles = ceil_div(r1 - r0, DENSE_MR);
  if (copy == NULL) { /* A read in place */
    for (int64_t k0 = 0; k0 < d->k; k0 += DENSE_KC) {
      int64_t k1 = min64(d->k, k0 + DENSE_KC);
      for (int64_t p = p0; p < p1; p++) {
        int64_t col = p * DENSE_NR, cols = min64(DENSE_NR, d->n - col);
        const float *w = j->w + p * d->k * DENSE_NR;
        const dense_fn *tiles = DENSE_TILES[cols > LANES];
        for (int64_t t = 0; t < n_tiles; t++) {
          int64_t row = tile_row(r0, r1, n_tiles, t);
          int mr = (int)(tile_row(r0, r1, n_tiles, t + 1) - row);
          tiles[mr](j, j->a + row * d->k + k0, d->k, row, col, cols, w, k0, k1);
        }
      }
    }
    return;
  }
  for (int64_t k0 = 0; k0 < d->k; k0 += DENSE_KC) {
    int64_t k1 = min64(d->k, k0 + DENSE_KC);
    for (int64_t t = 0; t < n_tiles; t++) {
      int64_t row = tile_row(r0, r1, n_tiles, t);
      int mr = (int)(tile_row(r0, r1, n_tiles, t + 1) - row);
      for (int r = 0; r < mr; r++)
        memcpy(copy + r * DENSE_COPY_STRIDE, j->a + (row + r) * d->k + k0,
               (size_t)(k1 - k0) * sizeof(float));
      for (int64_t p = p0; p < p1; p++) {
        int64_t col = p * DENSE_NR, cols = min64(DENSE_NR, d->n - col);
        const float *w = j->w + p * d->k * DENSE_NR;
        DENSE_TILES[cols > LANES][mr](j, copy, DENSE_COPY_STRIDE, row, col, cols, w, k0, k1);
      }
    }
  }
}

int32_t byoc_rt_dense(const byoc_rt_product *d, const float *a, const float *weight,
                      const float *bias, const float *residual, float *out) {
  dense_job j = {d, a, weight, bias, residual, out, ceil_div(d->n, DENSE_NR), 0, 0, 0,
                 d->m > 1 && rows_collide(d->k)};
  j.panel_groups = ceil_div(j.panels, DENSE_PANELS);
  /* Enough chunks for every thread to take several: cut the rows too when
   * there are few panels, in whole tiles. */
  int64_t want = 4 * (int64_t)byoc_rt_num_threads();
  int64_t tiles = ceil_div(d->m, DENSE_MR);
  j.row_groups = min64(tiles, max64(1, ceil_div(want, j.panel_groups)));
  j.rows_per_group = ceil_div(tiles, j.row_groups) * DENSE_MR;
  j.row_groups = ceil_div(d->m, j.rows_per_group);
  byoc_rt_parallel_for(j.panel_groups * j.row_groups, dense_chunk, &j);
  return BYOC_RT_OK;
}
