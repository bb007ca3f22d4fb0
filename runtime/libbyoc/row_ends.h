/* A row's end shorter than a vector, and the reductions of a vector's lanes:
 * what libbyoc's row kernels (softmax.c, layer_norm.c, pool2d.c) share. Not part of
 * libbyoc's interface. */
#ifndef BYOC_ROW_ENDS_H
#define BYOC_ROW_ENDS_H

#include "kernels.h"

#include <string.h>
#ifdef __AVX512F__
#include <immintrin.h>
#endif

/* The first `count` (< LANES) floats at `src`, the other lanes `fill`;
 * nothing read past them. */
static inline vec load_part(const float *src, int64_t count, float fill) {
#ifdef __AVX512F__
  return (vec)_mm512_mask_loadu_ps((__m512)splat(fill), (__mmask16)((1u << count) - 1), src);
#else
  float lane[LANES];
  for (int l = 0; l < LANES; l++)
    lane[l] = fill;
  memcpy(lane, src, (size_t)count * sizeof(float));
  return load(lane);
#endif
}

/* The first `count` (< LANES) lanes of `v` to `dst`; nothing written past them. */
static inline void store_part(float *dst, vec v, int64_t count) {
#ifdef __AVX512F__
  _mm512_mask_storeu_ps(dst, (__mmask16)((1u << count) - 1), (__m512)v);
#else
  float lane[LANES];
  store(lane, v);
  memcpy(dst, lane, (size_t)count * sizeof(float));
#endif
}

static inline float lanes_max(vec v) {
#ifdef __AVX512F__
  return _mm512_reduce_max_ps((__m512)v);
#else
  float m = v[0];
  for (int l = 1; l < LANES; l++)
    m = v[l] > m ? v[l] : m;
  return m;
#endif
}

static inline float lanes_sum(vec v) {
#ifdef __AVX512F__
  return _mm512_reduce_add_ps((__m512)v);
#else
  float s = 0.0f;
  for (int l = 0; l < LANES; l++)
    s += v[l];
  return s;
#endif
}

#endif
