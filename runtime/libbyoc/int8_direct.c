/* ccompiler's int8 stride-1 convolution without im2col
 * (byoc.backends.ccompiler_int8, byoc_runtime.h has the layouts).
 *
 * The image is packed once per call, 4 channels side by side, into a grid of
 * the padded image; output (oy, ox) is position oy * width + ox of that grid,
 * so kernel tap (i, j) of 16 consecutive outputs is one 64-byte vector at a
 * fixed distance from them, for every row at once (the grid's last columns
 * give outputs that mean nothing: 2 of 58 on a 56-wide 3x3 conv). With
 * AVX-512 VNNI a register block is 8 output channels times 3 vectors of 16
 * positions: per tap and group of 4 channels, 3 vector loads and 24 `vpdpbusd`
 * whose weight operand (the channel's 4 bytes) is broadcast from memory. The
 * sums come out with the positions in the lanes, which is the layout of the
 * NCHW output: no window copies (im2col), no transposes of the sums, and 97%
 * of `vpdpbusd`'s peak on the bench's 64->64 3x3 56x56 conv against 92% for
 * im2col and the products of int8.c.
 *
 * Without VNNI (or with $BYOC_RT_INT8_PORTABLE, as int8.c) a portable loop of
 * GCC vector code gives the same sums: they are exact in int32 either way.
 */
#include "byoc_runtime.h"
#include "kernels.h"

#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512VNNI__)
#include <immintrin.h>
#define DIRECT_VNNI 1
#else
#define DIRECT_VNNI 0
#endif
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define DIRECT_LANES 16 /* positions per vector */
#define DIRECT_MO 8     /* output channels per packed block */
#define DIRECT_NV 3     /* vectors per register block */
#define DIRECT_SLACK 64 /* bytes after the grid a vector may read */

/* The requantizing epilogue of byoc_rt_int8_conv_requantize. */
typedef struct direct_requantize {
  const int32_t *correction;
  const float *multiplier;
  const int32_t *zero;
  float low, high; /* the output's bounds, before the zero point is added */
  void *out;       /* the image's output, [units][out_plane] */
  int64_t out_width, out_plane;
  const float *float_scale; /* dequantized to floats if not NULL */
  const int32_t *float_zero;
} direct_requantize;

typedef struct direct_job {
  int64_t units, steps, groups, taps;
  int64_t plane;                           /* bytes of one group's grid */
  int64_t width;                           /* positions of a grid row */
  int64_t tap[BYOC_RT_INT8_DIRECT_MAX_TAPS]; /* bytes from a position to its taps */
  const uint8_t *image;
  const int8_t *weight;
  int32_t *tile; /* the sums go here, or through `requantize` if there is none */
  int64_t tile_step;
  direct_requantize requantize;
} direct_job;

/* Output channel u's value of the sum `sum` (relay.qnn.requantize as
 * lower_qnn.saturate_round computes it: the same float operations in the same
 * order, rounded half to even by the 1.5 * 2^23 constant). */
static inline int32_t requantize_one(const direct_requantize *r, int64_t u, int32_t sum) {
  float v = (float)(sum + r->correction[u]) * r->multiplier[u];
  float zero = (float)r->zero[u];
  float low = r->low - zero, high = r->high - zero;
  v = v > low ? v : low;
  v = v < high ? v : high;
  return (int32_t)((v + 12582912.0f) - 12582912.0f) + r->zero[u];
}

/* Output `index` of channel u: the requantized q, or it dequantized
 * (lower_qnn.lower_dequantize: float(q - zero) * scale). */
static inline void put_one(const direct_requantize *r, int64_t u, int64_t index, int32_t q) {
  if (r->float_scale != NULL)
    ((float *)r->out)[u * r->out_plane + index] = (float)(q - r->float_zero[u]) * r->float_scale[u];
  else
    ((uint8_t *)r->out)[u * r->out_plane + index] = (uint8_t)q;
}

/* Where the lanes of a vector of 16 positions from p go in the output: up
 * to 16 stretches (rows of the grid it crosses), each the lanes of `mask`
 * stored from `offset` (lane L at offset + L), the grid's columns past the
 * output's width and the lanes past `valid` left out. */
typedef struct lane_rows {
  int count;
  uint32_t mask[DIRECT_LANES];
  int64_t offset[DIRECT_LANES];
} lane_rows;

static inline void find_lane_rows(const direct_job *j, int64_t p, int64_t valid, lane_rows *rows) {
  const int64_t out_width = j->requantize.out_width;
  int64_t y = p / j->width, x = p % j->width;
  rows->count = 0;
  for (int64_t lane = 0; lane < valid && lane < DIRECT_LANES; y++, x = 0) {
    int64_t end = min64(lane + out_width - x, min64(valid, DIRECT_LANES));
    if (end > lane) {
      rows->mask[rows->count] = (uint32_t)((1u << end) - (1u << lane));
      rows->offset[rows->count] = y * out_width + x - lane;
      rows->count++;
    }
    lane += j->width - x;
  }
}

/* The sums of block `ub` for `valid` positions from p, lanes [m][v], into the tile. */
static inline void direct_put(const direct_job *j, int64_t ub, int64_t p, int64_t valid,
                              int32_t sums[DIRECT_MO][DIRECT_NV][DIRECT_LANES]) {
  int channels = (int)min64(DIRECT_MO, j->units - ub * DIRECT_MO);
  for (int m = 0; m < channels; m++) {
    int32_t *out = j->tile + (ub * DIRECT_MO + m) * j->tile_step + p;
    for (int v = 0; v < DIRECT_NV && v * DIRECT_LANES < valid; v++)
      memcpy(out + v * DIRECT_LANES, sums[m][v],
             (size_t)min64(DIRECT_LANES, valid - v * DIRECT_LANES) * sizeof(int32_t));
  }
}

typedef int32_t direct_lanes __attribute__((vector_size(4 * DIRECT_LANES)));
typedef uint32_t direct_ulanes __attribute__((vector_size(4 * DIRECT_LANES)));

/* Without VNNI: each position's 4 bytes of a tap read as one uint32 lane, byte
 * l taken out by a shift and a mask and multiplied by channel m's weight byte. */
static void portable_block(const direct_job *j, int64_t ub, int64_t p, int64_t valid) {
  direct_lanes sums[DIRECT_MO][DIRECT_NV];
  memset(sums, 0, sizeof sums);
  int nv = (int)ceil_div(valid, DIRECT_LANES);
  const int8_t *w = j->weight + ub * j->steps * DIRECT_MO * 4;
  const uint8_t *base = j->image + p * 4;
  for (int64_t g = 0; g < j->groups; g++)
    for (int64_t t = 0; t < j->taps; t++, w += DIRECT_MO * 4) {
      const uint8_t *d = base + g * j->plane + j->tap[t];
      for (int v = 0; v < nv; v++) {
        direct_ulanes x;
        memcpy(&x, d + v * 4 * DIRECT_LANES, sizeof x);
        for (int l = 0; l < 4; l++) {
          direct_lanes bytes = (direct_lanes)((x >> (8 * l)) & 0xffu);
          for (int m = 0; m < DIRECT_MO; m++)
            sums[m][v] += bytes * (int32_t)w[4 * m + l];
        }
      }
    }
  int32_t out[DIRECT_MO][DIRECT_NV][DIRECT_LANES];
  memcpy(out, sums, sizeof out);
  if (j->tile != NULL) {
    direct_put(j, ub, p, valid, out);
    return;
  }
  const direct_requantize *r = &j->requantize;
  for (int v = 0; v < nv; v++) {
    lane_rows rows;
    find_lane_rows(j, p + v * DIRECT_LANES, valid - v * DIRECT_LANES, &rows);
    for (int m = 0; m < DIRECT_MO && ub * DIRECT_MO + m < j->units; m++) {
      int64_t u = ub * DIRECT_MO + m;
      for (int k = 0; k < rows.count; k++)
        for (int lane = 0; lane < DIRECT_LANES; lane++)
          if (rows.mask[k] >> lane & 1u)
            put_one(r, u, rows.offset[k] + lane, requantize_one(r, u, out[m][v][lane]));
    }
  }
}

#if DIRECT_VNNI
/* acc += d's unsigned bytes times the 4 signed bytes at w, broadcast to every
 * lane ({1to16}): asm, as int8.c's, so GCC 12 keeps the 24 accumulators in
 * registers, and the broadcast stays a memory operand (no extra register). */
#define DP_BCAST(acc, d, w)                                                             \
  __asm__("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(d), "m"(*(const int32_t *)(w)))

#define EACH_MV(M)                                                                      \
  M(0, 0) M(0, 1) M(0, 2) M(1, 0) M(1, 1) M(1, 2) M(2, 0) M(2, 1) M(2, 2) M(3, 0) M(3, 1) \
  M(3, 2) M(4, 0) M(4, 1) M(4, 2) M(5, 0) M(5, 1) M(5, 2) M(6, 0) M(6, 1) M(6, 2) M(7, 0) \
  M(7, 1) M(7, 2)
#define D_ZERO(m, v) __m512i acc##m##v = _mm512_setzero_si512();
#define D_PRODUCT(m, v)                                                                 \
  if (v < nv)                                                                           \
    DP_BCAST(acc##m##v, d##v, w + 4 * m);
#define D_SAVE(m, v)                                                                    \
  if (v < nv && m < channels)                                                           \
    _mm512_mask_storeu_epi32(out + m * j->tile_step + v * DIRECT_LANES, mask##v, acc##m##v);
#define D_REQUANTIZE(m, v)                                                              \
  if (v < nv && m < channels)                                                           \
    requantize_vector(&j->requantize, ub * DIRECT_MO + m, &rows##v, acc##m##v);

/* The first `n` of 16 lanes (none if n <= 0). */
static inline __mmask16 lane_mask(int64_t n) {
  return n >= DIRECT_LANES ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1u);
}

/* requantize_one on 16 lanes, stored as bytes where `rows` says. */
static inline void requantize_vector(const direct_requantize *r, int64_t u, const lane_rows *rows,
                                     __m512i acc) {
  const float zero = (float)r->zero[u];
  __m512 v = _mm512_cvtepi32_ps(_mm512_add_epi32(acc, _mm512_set1_epi32(r->correction[u])));
  v = _mm512_mul_ps(v, _mm512_set1_ps(r->multiplier[u]));
  v = _mm512_max_ps(v, _mm512_set1_ps(r->low - zero));
  v = _mm512_min_ps(v, _mm512_set1_ps(r->high - zero));
  __m512i q = _mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  q = _mm512_add_epi32(q, _mm512_set1_epi32(r->zero[u]));
  if (r->float_scale != NULL) {
    __m512 f = _mm512_cvtepi32_ps(_mm512_sub_epi32(q, _mm512_set1_epi32(r->float_zero[u])));
    f = _mm512_mul_ps(f, _mm512_set1_ps(r->float_scale[u]));
    float *base = (float *)r->out + u * r->out_plane;
    for (int k = 0; k < rows->count; k++)
      _mm512_mask_storeu_ps(base + rows->offset[k], (__mmask16)rows->mask[k], f);
    return;
  }
  __m128i bytes = _mm512_cvtepi32_epi8(q);
  uint8_t *base = (uint8_t *)r->out + u * r->out_plane;
  for (int k = 0; k < rows->count; k++)
    _mm_mask_storeu_epi8(base + rows->offset[k], (__mmask16)rows->mask[k], bytes);
}

/* Positions [p, p + valid) (valid <= 16 * NV) of packed block ub. */
#define DIRECT_BLOCK(NV)                                                                \
  static void vnni_direct_##NV(const direct_job *j, int64_t ub, int64_t p, int64_t valid) { \
    enum { nv = NV };                                                                   \
    const int8_t *w = j->weight + ub * j->steps * DIRECT_MO * 4;                        \
    const uint8_t *base = j->image + p * 4;                                             \
    EACH_MV(D_ZERO)                                                                     \
    for (int64_t g = 0; g < j->groups; g++, base += j->plane)                          \
      for (int64_t t = 0; t < j->taps; t++, w += DIRECT_MO * 4) {                       \
        const uint8_t *d = base + j->tap[t];                                            \
        const __m512i d0 = _mm512_loadu_si512(d);                                       \
        const __m512i d1 = nv > 1 ? _mm512_loadu_si512(d + 64) : _mm512_setzero_si512(); \
        const __m512i d2 = nv > 2 ? _mm512_loadu_si512(d + 128) : _mm512_setzero_si512(); \
        EACH_MV(D_PRODUCT)                                                              \
      }                                                                                 \
    /* Straight from the registers (a copy through memory cost 13%). */                 \
    const int channels = (int)min64(DIRECT_MO, j->units - ub * DIRECT_MO);             \
    if (j->tile == NULL) {                                                              \
      lane_rows rows0, rows1, rows2;                                                    \
      find_lane_rows(j, p, valid, &rows0);                                              \
      if (nv > 1)                                                                       \
        find_lane_rows(j, p + DIRECT_LANES, valid - DIRECT_LANES, &rows1);              \
      if (nv > 2)                                                                       \
        find_lane_rows(j, p + 2 * DIRECT_LANES, valid - 2 * DIRECT_LANES, &rows2);      \
      EACH_MV(D_REQUANTIZE)                                                             \
      return;                                                                           \
    }                                                                                   \
    int32_t *out = j->tile + ub * DIRECT_MO * j->tile_step + p;                         \
    const __mmask16 mask0 = lane_mask(valid), mask1 = lane_mask(valid - DIRECT_LANES);  \
    const __mmask16 mask2 = lane_mask(valid - 2 * DIRECT_LANES);                        \
    (void)mask1;                                                                        \
    (void)mask2;                                                                        \
    EACH_MV(D_SAVE)                                                                     \
  }
DIRECT_BLOCK(1)
DIRECT_BLOCK(2)
DIRECT_BLOCK(3)
#endif

/* The job's geometry (its sums' destination set by the caller). */
static void direct_setup(direct_job *j, int64_t units, int64_t groups, int64_t kh, int64_t kw,
                         int64_t dilation_h, int64_t dilation_w, int64_t rows, int64_t width,
                         const void *image, const void *weight) {
  memset(j, 0, sizeof *j);
  j->units = units;
  j->steps = groups * kh * kw;
  j->groups = groups;
  j->taps = kh * kw;
  j->plane = rows * width * 4;
  j->width = width;
  j->image = image;
  j->weight = weight;
  if (j->taps > BYOC_RT_INT8_DIRECT_MAX_TAPS)
    abort(); /* the caller checks kh * kw (ccompiler_int8.direct_conv) */
  for (int64_t i = 0; i < kh; i++)
    for (int64_t t = 0; t < kw; t++)
      j->tap[i * kw + t] = (i * dilation_h * width + t * dilation_w) * 4;
}

static void direct_run(const direct_job *j, int64_t first, int64_t count);

void byoc_rt_int8_conv_products(int64_t units, int64_t groups, int64_t kh, int64_t kw,
                                int64_t dilation_h, int64_t dilation_w, int64_t rows,
                                int64_t width, const void *image, int64_t first, int64_t count,
                                const void *weight, int32_t *tile, int64_t tile_step) {
  direct_job j;
  direct_setup(&j, units, groups, kh, kw, dilation_h, dilation_w, rows, width, image, weight);
  j.tile = tile;
  j.tile_step = tile_step;
  direct_run(&j, first, count);
}

void byoc_rt_int8_conv_requantize(int64_t units, int64_t groups, int64_t kh, int64_t kw,
                                  int64_t dilation_h, int64_t dilation_w, int64_t rows,
                                  int64_t width, const void *image, int64_t first, int64_t count,
                                  const void *weight, const int32_t *correction,
                                  const float *multiplier, const int32_t *zero, int64_t low,
                                  int64_t high, void *out, int64_t out_image, int64_t out_width,
                                  int64_t out_plane) {
  direct_job j;
  direct_setup(&j, units, groups, kh, kw, dilation_h, dilation_w, rows, width, image, weight);
  j.requantize = (direct_requantize){correction, multiplier, zero, (float)low, (float)high,
                                     (uint8_t *)out + out_image * units * out_plane, out_width,
                                     out_plane, NULL, NULL};
  direct_run(&j, first, count);
}

void byoc_rt_int8_conv_dequantize(int64_t units, int64_t groups, int64_t kh, int64_t kw,
                                  int64_t dilation_h, int64_t dilation_w, int64_t rows,
                                  int64_t width, const void *image, int64_t first, int64_t count,
                                  const void *weight, const int32_t *correction,
                                  const float *multiplier, const int32_t *zero, int64_t low,
                                  int64_t high, float *out, int64_t out_image, int64_t out_width,
                                  int64_t out_plane, const float *float_scale,
                                  const int32_t *float_zero) {
  direct_job j;
  direct_setup(&j, units, groups, kh, kw, dilation_h, dilation_w, rows, width, image, weight);
  j.requantize = (direct_requantize){correction, multiplier, zero, (float)low, (float)high,
                                     out + out_image * units * out_plane, out_width, out_plane,
                                     float_scale, float_zero};
  direct_run(&j, first, count);
}

static void direct_run(const direct_job *j, int64_t first, int64_t count) {
  const int64_t units = j->units;
  const int64_t block = DIRECT_NV * DIRECT_LANES, end = first + count;
  int vnni = byoc_rt_int8_uses_vnni();
  (void)vnni;
  /* Packed blocks outside, positions inside: a block's weight (32 bytes per
   * tap and group) stays in L1 while it meets every position. */
  for (int64_t ub = 0; ub < ceil_div(units, DIRECT_MO); ub++)
    for (int64_t p = first; p < end; p += block) {
      int64_t valid = min64(block, end - p);
#if DIRECT_VNNI
      if (vnni) {
        if (valid > 2 * DIRECT_LANES)
          vnni_direct_3(j, ub, p, valid);
        else if (valid > DIRECT_LANES)
          vnni_direct_2(j, ub, p, valid);
        else
          vnni_direct_1(j, ub, p, valid);
        continue;
      }
#endif
      portable_block(j, ub, p, valid);
    }
}

/* dst[4 x + l] = src[l][x] ^ flip for x < n: 4 channel rows side by side. */
static void interleave4(uint8_t *dst, const uint8_t *const src[4], int64_t n, uint8_t flip) {
  int64_t x = 0;
#if defined(__SSE2__)
  const __m128i f = _mm_set1_epi8((char)flip);
  for (; x + 16 <= n; x += 16) {
    __m128i a = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(src[0] + x)), f);
    __m128i b = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(src[1] + x)), f);
    __m128i c = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(src[2] + x)), f);
    __m128i d = _mm_xor_si128(_mm_loadu_si128((const __m128i *)(src[3] + x)), f);
    __m128i ab_lo = _mm_unpacklo_epi8(a, b), ab_hi = _mm_unpackhi_epi8(a, b);
    __m128i cd_lo = _mm_unpacklo_epi8(c, d), cd_hi = _mm_unpackhi_epi8(c, d);
    _mm_storeu_si128((__m128i *)(dst + 4 * x), _mm_unpacklo_epi16(ab_lo, cd_lo));
    _mm_storeu_si128((__m128i *)(dst + 4 * x + 16), _mm_unpackhi_epi16(ab_lo, cd_lo));
    _mm_storeu_si128((__m128i *)(dst + 4 * x + 32), _mm_unpacklo_epi16(ab_hi, cd_hi));
    _mm_storeu_si128((__m128i *)(dst + 4 * x + 48), _mm_unpackhi_epi16(ab_hi, cd_hi));
  }
#endif
  for (; x < n; x++)
    for (int l = 0; l < 4; l++)
      dst[4 * x + l] = src[l][x] ^ flip;
}

void byoc_rt_int8_pack_image(int64_t channels, int64_t height, int64_t image_width,
                             const void *data, int64_t image, int64_t groups, int64_t rows, int64_t width,
                             int64_t top, int64_t left, int64_t pad, int64_t flip,
                             int64_t first_group, int64_t end_group, void *packed) {
  const uint8_t *in = (const uint8_t *)data + image * channels * height * image_width;
  uint8_t *grid = packed;
  const uint8_t pad_byte = (uint8_t)pad, flip_byte = (uint8_t)flip;
  const int64_t right = width - left - image_width;
  /* A channel past the last reads a row of pad bytes. */
  uint8_t pads[image_width > 0 ? image_width : 1];
  memset(pads, pad_byte ^ flip_byte, sizeof pads);
  for (int64_t g = first_group; g < end_group; g++) {
    uint8_t *plane = grid + g * rows * width * 4;
    for (int64_t y = 0; y < rows; y++) {
      uint8_t *row = plane + y * width * 4;
      int64_t iy = y - top;
      if (iy < 0 || iy >= height) {
        memset(row, pad_byte, (size_t)(width * 4));
        continue;
      }
      memset(row, pad_byte, (size_t)(left * 4));
      memset(row + (left + image_width) * 4, pad_byte, (size_t)(right * 4));
      const uint8_t *src[4];
      for (int l = 0; l < 4; l++) {
        int64_t c = 4 * g + l;
        src[l] = c < channels ? in + (c * height + iy) * image_width : pads;
      }
      interleave4(row + left * 4, src, image_width, flip_byte);
    }
    if (g == groups - 1)
      memset(grid + groups * rows * width * 4, pad_byte, DIRECT_SLACK);
  }
}

void byoc_rt_int8_conv_weight_sums(int64_t units, int64_t steps, const void *weight,
                                   int32_t *sums) {
  const int8_t *w = weight;
  for (int64_t ub = 0; ub < ceil_div(units, DIRECT_MO); ub++) {
    int32_t acc[DIRECT_MO * 4] = {0};
    for (int64_t s = 0; s < steps; s++, w += DIRECT_MO * 4)
      for (int k = 0; k < DIRECT_MO * 4; k++)
        acc[k] += w[k];
    for (int m = 0; m < DIRECT_MO && ub * DIRECT_MO + m < units; m++)
      sums[ub * DIRECT_MO + m] = acc[4 * m] + acc[4 * m + 1] + acc[4 * m + 2] + acc[4 * m + 3];
  }
}
