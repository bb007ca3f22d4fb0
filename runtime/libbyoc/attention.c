/* Attention's heads in one pass (see byoc_runtime.h): per head,
 * out = softmax(Q K^T) V, a block of query rows at a time, the scores of a
 * block never leaving the L1.
 *
 * A chunk is one head and a run of its query rows. It first packs the head's
 * keys transposed and its values into panels of 32 columns (as dense_packed
 * weights: [ceil(n / 32)][depth][32], zero-padded), then per tile of 12 query
 * rows: the scores against every key panel (24 vector accumulators, as
 * byoc_rt_dense's tiles), softmax of the 12 rows, and their product with the
 * value panels, stored straight into the output's rows (an additive mask
 * added to the scores' rows first: byoc_softmax_row_masked). The two batch
 * matmuls through OpenBLAS took 0.30 ms each for BERT-base's 12 heads of
 * 128 x 128 x 64 on one core (42 GFLOP/s: sgemm packs both operands per
 * call), the softmax between them 0.07 ms.
 */
#include "byoc_runtime.h"
#include "kernels.h"

#include <stdatomic.h>
#include <string.h>

#define ATT_MR 12 /* query rows per tile */
#define ATT_NR 32 /* columns per panel (two vectors) */

typedef struct attention_job {
  const byoc_rt_heads *a;
  const float *q, *k, *v, *mask;
  float *out;
  int64_t blocks;         /* row blocks per head */
  int64_t rows_per_block; /* a multiple of ATT_MR */
  int64_t key_panels, value_panels, score_stride;
  atomic_int failed;
} attention_job;

/* out[r][0:cols] = sum_k a[r * lda + k] * w[k][0:cols] for r < mr, k < depth:
 * `w` a packed panel (ATT_NR floats a step, zero past `cols`); `full`
 * stores whole vectors (out has room for ATT_NR floats a row). */
static inline __attribute__((always_inline)) void
panel_tile(const int mr, const int nv, const float *restrict a, int64_t lda,
           const float *restrict w, int64_t depth, float *restrict out, int64_t ldo,
           int64_t cols, int full) {
  vec acc[ATT_MR][2];
#pragma GCC unroll 12
  for (int r = 0; r < mr; r++)
    acc[r][0] = acc[r][1] = splat(0.0f);
  for (int64_t k = 0; k < depth; k++) {
    vec w0 = load(w + k * ATT_NR);
    vec w1 = nv == 2 ? load(w + k * ATT_NR + LANES) : splat(0.0f);
#pragma GCC unroll 12
    for (int r = 0; r < mr; r++) {
      float x = a[r * lda + k];
      acc[r][0] += x * w0;
      if (nv == 2)
        acc[r][1] += x * w1;
    }
  }
#pragma GCC unroll 12
  for (int r = 0; r < mr; r++) {
    float *dst = out + r * ldo;
    if (full || cols == nv * LANES) {
      store(dst, acc[r][0]);
      if (nv == 2)
        store(dst + LANES, acc[r][1]);
    } else {
      float part[ATT_NR];
      store(part, acc[r][0]);
      store(part + LANES, acc[r][1]);
      memcpy(dst, part, (size_t)cols * sizeof(float));
    }
  }
}

typedef void (*tile_fn)(const float *restrict, int64_t, const float *restrict, int64_t,
                        float *restrict, int64_t, int64_t, int);

#define ATT_TILE(mr)                                                                        \
  static void tile2_##mr(const float *restrict a, int64_t lda, const float *restrict w,     \
                         int64_t depth, float *restrict out, int64_t ldo, int64_t cols,      \
                         int full) {                                                         \
    panel_tile(mr, 2, a, lda, w, depth, out, ldo, cols, full);                               \
  }                                                                                          \
  static void tile1_##mr(const float *restrict a, int64_t lda, const float *restrict w,     \
                         int64_t depth, float *restrict out, int64_t ldo, int64_t cols,      \
                         int full) {                                                         \
    panel_tile(mr, 1, a, lda, w, depth, out, ldo, cols, full);                               \
  }
ATT_TILE(1) ATT_TILE(2) ATT_TILE(3) ATT_TILE(4) ATT_TILE(5) ATT_TILE(6)
ATT_TILE(7) ATT_TILE(8) ATT_TILE(9) ATT_TILE(10) ATT_TILE(11) ATT_TILE(12)

static const tile_fn ATT_TILES[2][ATT_MR + 1] = {
    {NULL, tile1_1, tile1_2, tile1_3, tile1_4, tile1_5, tile1_6, tile1_7, tile1_8, tile1_9,
     tile1_10, tile1_11, tile1_12},
    {NULL, tile2_1, tile2_2, tile2_3, tile2_4, tile2_5, tile2_6, tile2_7, tile2_8, tile2_9,
     tile2_10, tile2_11, tile2_12},
};

/* panels[p][k][j] = m[(32 p + j) * row + k] (`transposed`: the rows of m,
 * [n][depth], become columns) or m[k * row + 32 p + j] ([depth][n]), zero
 * past n. */
static void pack_panels(float *panels, const float *m, int64_t row, int64_t n, int64_t depth,
                        int transposed) {
  for (int64_t p = 0; p * ATT_NR < n; p++) {
    float *dst = panels + p * depth * ATT_NR;
    int64_t cols = min64(ATT_NR, n - p * ATT_NR);
    if (cols < ATT_NR)
      memset(dst, 0, (size_t)(depth * ATT_NR) * sizeof(float));
    if (transposed) {
      for (int64_t j = 0; j < cols; j++) {
        const float *src = m + (p * ATT_NR + j) * row;
        for (int64_t k = 0; k < depth; k++)
          dst[k * ATT_NR + j] = src[k];
      }
    } else {
      for (int64_t k = 0; k < depth; k++)
        memcpy(dst + k * ATT_NR, m + k * row + p * ATT_NR, (size_t)cols * sizeof(float));
    }
  }
}

static void attention_chunk(void *context, int64_t index) {
  attention_job *j = context;
  const byoc_rt_heads *a = j->a;
  int64_t head = index / j->blocks, block = index % j->blocks;
  int64_t r0 = block * j->rows_per_block, r1 = min64(a->rows, r0 + j->rows_per_block);
  int64_t key_floats = j->key_panels * a->depth * ATT_NR;
  int64_t value_floats = j->value_panels * a->keys * ATT_NR;
  float *scratch = byoc_thread_scratch((size_t)(key_floats + value_floats +
                                                ATT_MR * j->score_stride));
  if (scratch == NULL) {
    atomic_store(&j->failed, BYOC_RT_OUT_OF_MEMORY);
    return;
  }
  float *keys = scratch, *values = keys + key_floats, *scores = values + value_floats;
  pack_panels(keys, j->k + head * a->k_head, a->k_row, a->keys, a->depth, 1);
  pack_panels(values, j->v + head * a->v_head, a->v_row, a->width, a->keys, 0);
  const float *q = j->q + head * a->q_head;
  float *out = j->out + head * a->o_head;
  const float *mask = j->mask == NULL ? NULL : j->mask + head / a->mask_group * a->mask_head;
  for (int64_t row = r0; row < r1; row += ATT_MR) {
    int mr = (int)min64(ATT_MR, r1 - row);
    for (int64_t p = 0; p < j->key_panels; p++) {
      int64_t cols = min64(ATT_NR, a->keys - p * ATT_NR);
      ATT_TILES[cols > LANES][mr](q + row * a->q_row, a->q_row, keys + p * a->depth * ATT_NR,
                                  a->depth, scores + p * ATT_NR, j->score_stride, cols, 1);
    }
    for (int r = 0; r < mr; r++)
      byoc_softmax_row_masked(scores + r * j->score_stride,
                              mask == NULL ? NULL : mask + (row + r) * a->mask_row,
                              scores + r * j->score_stride, a->keys);
    for (int64_t p = 0; p < j->value_panels; p++) {
      int64_t cols = min64(ATT_NR, a->width - p * ATT_NR);
      ATT_TILES[cols > LANES][mr](scores, j->score_stride, values + p * a->keys * ATT_NR,
                                  a->keys, out + row * a->o_row + p * ATT_NR, a->o_row, cols, 0);
    }
  }
}

int32_t byoc_rt_attention(const byoc_rt_heads *a, const float *q, const float *k,
                          const float *v, const float *mask, float *out) {
  attention_job j = {a, q, k, v, mask, out, 1, 0, ceil_div(a->keys, ATT_NR),
                     ceil_div(a->width, ATT_NR), 0, 0};
  j.score_stride = j.key_panels * ATT_NR;
  /* Enough chunks for every thread to take several: few heads cut their
   * query rows too, in whole tiles. */
  int64_t want = 4 * (int64_t)byoc_rt_num_threads();
  int64_t tiles = ceil_div(a->rows, ATT_MR);
  j.blocks = min64(tiles, max64(1, ceil_div(want, a->heads)));
  j.rows_per_block = ceil_div(tiles, j.blocks) * ATT_MR;
  j.blocks = ceil_div(a->rows, j.rows_per_block);
  atomic_init(&j.failed, 0);
  byoc_rt_parallel_for(a->heads * j.blocks, attention_chunk, &j);
  return atomic_load(&j.failed);
}
