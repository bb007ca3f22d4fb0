/* relay.qnn.quantize of float32 to bytes with one scale and zero point, for
 * ccompiler (byoc.backends.ccompiler_int8.quantize_kernel), bit for bit as
 * lower_qnn lowers it: clamp(round_half_even(x / scale) + zero).
 *
 * The division is what costs (one vdivps per 16 values, 0.034 of the bench
 * conv's 0.045 ms quantize). With AVX-512 it becomes a multiplication by
 * r = 1 / scale: y = x * r is within 3 * 2^-24 |y| (two roundings of r and
 * one of the product, against the quotient's one) of the correctly rounded
 * quotient x / scale, so both round to the same integer unless a half-integer
 * lies within that distance of y. The lanes within 2^-20 |y| of one (four
 * times the distance; all lanes of 2^22 and more) are divided exactly: about
 * one vector in a thousand. A scale whose reciprocal is not a normal float
 * divides every lane. Elsewhere the portable loop divides.
 */
#include "byoc_runtime.h"
#include "kernels.h"

#include <float.h>
#include <math.h>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__)
#include <immintrin.h>
#define QUANTIZE_AVX512 1
#else
#define QUANTIZE_AVX512 0
#endif

/* One value, as lower_qnn.saturate_round computes it. */
static inline int32_t quantize_one(float x, float scale, float low, float high, int32_t zero) {
  float v = x / scale;
  v = v > low ? v : low;
  v = v < high ? v : high;
  return (int32_t)((v + 12582912.0f) - 12582912.0f) + zero;
}

void byoc_rt_quantize(int64_t n, int64_t first, int64_t chunk, const float *x, float scale,
                      int32_t zero, int64_t low, int64_t high, void *out) {
  uint8_t *bytes = out;
  const int64_t end = min64(n, first + chunk);
  /* The bounds before the zero point, in float as saturate_round has them. */
  const float low_f = (float)low - (float)zero, high_f = (float)high - (float)zero;
  int64_t i = first;
#if QUANTIZE_AVX512
  const float reciprocal = 1.0f / scale;
  if (isnormal(reciprocal) && isnormal(scale)) {
    const __m512 r = _mm512_set1_ps(reciprocal), s = _mm512_set1_ps(scale);
    const __m512 lo = _mm512_set1_ps(low_f), hi = _mm512_set1_ps(high_f);
    const __m512 half = _mm512_set1_ps(0.5f), margin = _mm512_set1_ps(0x1p-20f);
    const __m512i z = _mm512_set1_epi32(zero);
    /* Whole vectors, then the last part under a mask. */
    for (; i < end; i += 16) {
      const __mmask16 lanes = end - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (end - i)) - 1u);
      const __m512 xv = lanes == 0xffff ? _mm512_loadu_ps(x + i) : _mm512_maskz_loadu_ps(lanes, x + i);
      __m512 y = _mm512_mul_ps(xv, r);
      /* y rounded (half to even), and whether a half-integer is near: |y -
       * rounded| within 2^-20 |y| of 1/2 (NaN and infinities compare false:
       * x / scale gives them too). */
      __m512 rounded = _mm512_roundscale_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      const __m512 off = _mm512_abs_ps(_mm512_sub_ps(y, rounded));
      const __m512 reach = _mm512_add_ps(off, _mm512_mul_ps(_mm512_abs_ps(y), margin));
      const __mmask16 near = _mm512_mask_cmp_ps_mask(lanes, reach, half, _CMP_GE_OQ);
      if (__builtin_expect(near != 0, 0)) {
        y = _mm512_mask_div_ps(y, near, xv, s);
        rounded = _mm512_roundscale_ps(y, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      }
      /* saturate_round clamps, then rounds: the bounds are integers, so
       * rounding first gives the same. (v > low ? v : low) sends NaN to low,
       * as max does. */
      rounded = _mm512_min_ps(_mm512_max_ps(rounded, lo), hi);
      const __m128i q = _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(rounded), z));
      if (lanes == 0xffff)
        _mm_storeu_si128((__m128i *)(bytes + i), q);
      else
        _mm_mask_storeu_epi8(bytes + i, lanes, q);
    }
    return;
  }
#endif
  for (; i < end; i++)
    bytes[i] = (uint8_t)quantize_one(x[i], scale, low_f, high_f, zero);
}
