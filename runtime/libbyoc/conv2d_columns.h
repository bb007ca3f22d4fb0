/* COLUMNS register tiles of the convolution (conv2d.c): 32 (or 16) output
 * channels x up to 12 pixels, two vectors along the channels times a
 * broadcast pixel, stored transposed. Their 24 unrolled instances are most of
 * libbyoc's build: conv2d_columns16.c and conv2d_columns32.c instantiate half
 * each, so two cores compile them at once.
 */
#ifndef BYOC_CONV2D_COLUMNS_H
#define BYOC_CONV2D_COLUMNS_H

#include "conv2d.h"

#ifdef __AVX512F__
#include <immintrin.h>
#endif

#ifdef __AVX512F__
/* Transpose the 16x16 matrix in r (rows become columns) in registers: 64
 * shuffles instead of 256 scalar moves through memory. */
static inline __attribute__((always_inline)) void transpose16(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; i++) { /* pairs of rows interleaved, within 128-bit lanes */
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; i++) { /* s[4i + j], lane L: column 4L + j of rows 4i..4i+3 */
    __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
    __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int j = 0; j < 4; j++) { /* gather lane L of r[j], r[4 + j], r[8 + j], r[12 + j] */
    __m512 u0 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0x88);
    __m512 u1 = _mm512_shuffle_f32x4(r[j], r[4 + j], 0xdd);
    __m512 u2 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0x88);
    __m512 u3 = _mm512_shuffle_f32x4(r[8 + j], r[12 + j], 0xdd);
    t[j] = _mm512_shuffle_f32x4(u0, u2, 0x88);
    t[4 + j] = _mm512_shuffle_f32x4(u1, u3, 0x88);
    t[8 + j] = _mm512_shuffle_f32x4(u0, u2, 0xdd);
    t[12 + j] = _mm512_shuffle_f32x4(u1, u3, 0xdd);
  }
  for (int i = 0; i < 16; i++)
    r[i] = t[i];
}
#endif

/* out[o][q] for q < nr, o < 16 nv = act(sum_k a[k][o] * b[offset[k] + q * step]
 * + bias[o] + residual[o][q]): `a` a packed panel [K][32] (nv = 1: only its
 * first 16 channels exist). The accumulators hold channels along vectors;
 * the output has pixels along rows, so they are transposed on the way out:
 * in registers with AVX-512, else through `tile` ([12][32]) and scalar moves. */
static inline __attribute__((always_inline)) void
columns_product(const int nv, const int nr, int64_t k, const float *restrict a,
                const float *restrict b, const int64_t *restrict offset, int64_t step,
                const columns_out *t, const epilogue *e, float *restrict tile) {
  vec acc[COLS_NR][2];
#pragma GCC unroll 12
  for (int q = 0; q < nr; q++)
#pragma GCC unroll 2
    for (int v = 0; v < nv; v++)
      acc[q][v] = splat(0.0f);
  const float *ahead = t->ahead;
  int64_t ahead_rows = ahead != NULL ? t->ahead_rows : 0;
  for (int64_t kk = 0; kk < k; kk++) {
    const float *bk = b + offset[kk];
    vec w[2];
    if (kk < ahead_rows) { /* a row of 32 weights of a later panel: two lines, into L2 */
      __builtin_prefetch(ahead + kk * COLS_WIDTH, 0, 2);
      __builtin_prefetch(ahead + kk * COLS_WIDTH + LANES, 0, 2);
    }
#pragma GCC unroll 2
    for (int v = 0; v < nv; v++)
      w[v] = load(a + kk * COLS_WIDTH + v * LANES);
#pragma GCC unroll 12
    for (int q = 0; q < nr; q++) {
      float x = bk[q * step];
#pragma GCC unroll 2
      for (int v = 0; v < nv; v++)
        acc[q][v] += x * w[v];
    }
  }
#ifdef __AVX512F__
  (void)tile;
  const __mmask16 lanes = (__mmask16)((1u << nr) - 1);
#pragma GCC unroll 2
  for (int v = 0; v < nv; v++) {
    __m512 r[16];
#pragma GCC unroll 16
    for (int q = 0; q < 16; q++)
      r[q] = q < nr ? (__m512)acc[q][v] : _mm512_setzero_ps();
    transpose16(r);
    int64_t rows = min64(LANES, t->rows - v * LANES);
#pragma GCC unroll 16
    for (int o = 0; o < 16; o++) {
      if (o >= rows)
        break;
      int64_t at = (v * LANES + o) * t->plane;
      vec y = (vec)r[o];
      if (t->bias != NULL)
        y += t->bias[v * LANES + o];
      if (t->residual != NULL)
        y += (vec)_mm512_maskz_loadu_ps(lanes, t->residual + at);
      _mm512_mask_storeu_ps(t->out + at, lanes, (__m512)act_vector(e, y));
    }
  }
#else
  vec add[2] = {splat(0.0f), splat(0.0f)};
  if (t->bias != NULL) {
    add[0] = load(t->bias);
    if (nv == 2)
      add[1] = load(t->bias + LANES);
  }
#pragma GCC unroll 12
  for (int q = 0; q < nr; q++)
#pragma GCC unroll 2
    for (int v = 0; v < nv; v++) {
      vec y = acc[q][v] + add[v];
      store(tile + q * COLS_WIDTH + v * LANES, t->residual == NULL ? act_vector(e, y) : y);
    }
  for (int64_t o = 0; o < t->rows; o++) {
    float *dst = t->out + o * t->plane;
    if (t->residual == NULL) {
      for (int q = 0; q < nr; q++)
        dst[q] = tile[q * COLS_WIDTH + o];
      continue;
    }
    const float *res = t->residual + o * t->plane;
    for (int q = 0; q < nr; q++)
      dst[q] = act_scalar(e, tile[q * COLS_WIDTH + o] + res[q]);
  }
#endif
}

#define COLUMNS_TILE(nv, nr)                                                         \
  static void columns_tile_##nv##_##nr(int64_t k, const float *restrict a,           \
                                       const float *restrict b,                      \
                                       const int64_t *restrict offset, int64_t step, \
                                       const columns_out *t, const epilogue *e,      \
                                       float *restrict tile) {                       \
    columns_product(nv, nr, k, a, b, offset, step, t, e, tile);                      \
  }
#define COLUMNS_TILES(nv)                                                            \
  COLUMNS_TILE(nv, 1) COLUMNS_TILE(nv, 2) COLUMNS_TILE(nv, 3) COLUMNS_TILE(nv, 4)     \
  COLUMNS_TILE(nv, 5) COLUMNS_TILE(nv, 6) COLUMNS_TILE(nv, 7) COLUMNS_TILE(nv, 8)     \
  COLUMNS_TILE(nv, 9) COLUMNS_TILE(nv, 10) COLUMNS_TILE(nv, 11) COLUMNS_TILE(nv, 12)

#endif
