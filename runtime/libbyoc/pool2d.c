/* 2-d max and average pooling with strides 1 and 2 of NCHW float32 tensors
 * (Inception's 3x3 "same" pools, the 3x3 stride-2 pools of SqueezeNet,
 * ResNet and Inception), see byoc_runtime.h for the contract.
 *
 * Two ways, per plane:
 *   two passes   the kernel rows combined (whole vectors along the rows), then
 *                each output row the kernel columns of that (unaligned vector
 *                loads; with stride 2 two loads joined by one permute taking
 *                their even floats; the row's tail masked). A pool with
 *                padding (or with windows past the image, ceil_mode) reads a
 *                padded copy of the plane whose padding holds the pool's
 *                identity (-inf for max, 0 for an average); one with all its
 *                windows inside reads the plane itself, each row's end
 *                masked. With stride 1 the copy's rows are combined as one run
 *                across the whole copy, rows and padding alike, so a 7x7
 *                plane is a few vectors, not seven rows of seven.
 *   in registers column stride 2, a kernel of at most 3x3 and rows wider than
 *                two vectors (`row_stride2`, AVX-512): each output row from
 *                its input rows read in place, the padding masked, with no
 *                copy and no pass through memory, a plane's rows in one
 *                loop: 112x112 planes with padding 1 (ResNet's) 2.8 -> 1.6
 *                us a plane. Narrower rows are faster in two passes.
 * A window the size of the plane (a global pool) is one run of vectors
 * (`whole_plane`).
 * Generated loops over rows of 7 or 14 outputs were scalar: a 1024x7x7 pool
 * took 0.21 ms where onnxruntime (vectors of channels, NCHWc) takes 0.044;
 * SqueezeNet's three stride-2 pools took 0.32 ms on ccompiler (0.17 here)
 * where onnxruntime takes 0.16. The copy's padding is written once per chunk
 * of planes; only its interior changes from plane to plane.
 */
#define _GNU_SOURCE
#include "byoc_runtime.h"
#include "kernels.h"
#include "row_ends.h"
#include "pool2d.h"

#include <stdatomic.h>
#include <string.h>
#ifdef __AVX512F__
#include <immintrin.h>
#endif

typedef struct pool_job {
  const byoc_rt_pool *p;
  const float *data;
  float *out;
  int64_t pitch, rows; /* of the padded copy of a plane */
  int padded;          /* reads a padded copy (else the plane itself) */
  int in_registers;    /* each output row in registers (row_stride2) */
  int whole;           /* one window, the plane (whole_plane) */
  int64_t reach;       /* input columns a row of windows covers */
  int64_t line;        /* floats between two rows of the kernel rows combined */
  int64_t per;         /* planes per chunk */
  atomic_int failed;
} pool_job;

/* max(x, y), NaN if y is (a NaN x stays): relay's max, as the generated pools. */
static inline vec max_vector(vec x, vec y) {
#ifdef __AVX512F__
  /* maxps(y, x) is y > x ? y : x, so x's NaN stays; y's is put back (a
   * masked move: the generic blend costs a mask-to-vector move more). */
  __m512 m = _mm512_max_ps((__m512)y, (__m512)x);
  return (vec)_mm512_mask_mov_ps(m, _mm512_cmp_ps_mask((__m512)y, (__m512)y, _CMP_UNORD_Q), (__m512)y);
#else
  return blend((y > x) | (y != y), y, x);
#endif
}

/* How many of the taps [0, kernel) of a window starting at `start` (in the
 * image's coordinates) lie in [low, high). */
static int64_t taps_in(int64_t start, int64_t kernel, int64_t low, int64_t high) {
  int64_t first = max64(0, low - start), end = min64(kernel, high - start);
  return max64(0, end - first);
}

/* The first `count` (<= LANES) floats at `src`, the other lanes 0; nothing
 * read past them. */
static inline vec load_lanes(const float *src, int64_t count) {
  return count == LANES ? load(src) : load_part(src, count, 0.0f);
}

/* The first `count` (<= LANES) lanes of `v` to `dst`. */
static inline void store_lanes(float *dst, vec v, int64_t count) {
  if (count == LANES)
    store(dst, v);
  else
    store_part(dst, v, count);
}

/* `count` floats from `src` to `dst`, neither read nor written past them. */
static inline void copy_row(float *dst, const float *src, int64_t count) {
  int64_t x = 0;
  for (; x + LANES <= count; x += LANES)
    store(dst + x, load(src + x));
  if (x < count)
    store_lanes(dst + x, load_lanes(src + x, count - x), count - x);
}

/* The floats line[s * i] for the 16 lanes i (stride s = 1 or 2). */
static inline vec strided(const float *line, int64_t s) {
  if (s == 1)
    return load(line);
#ifdef __AVX512F__
  const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  return (vec)_mm512_permutex2var_ps((__m512)load(line), evens, (__m512)load(line + LANES));
#else
  vec v = splat(0.0f);
  for (int i = 0; i < LANES; i++)
    v[i] = line[s * i];
  return v;
#endif
}

#ifdef __AVX512F__
/* max_vector or +, as the pool combines. */
static inline __attribute__((always_inline)) vec combine(const int is_max, vec x, vec y) {
  return is_max ? max_vector(x, y) : x + y;
}

/* Lanes [low, high) of 16 (none if high <= low). */
static inline __mmask16 lane_range(int64_t low, int64_t high) {
  low = max64(0, low);
  high = min64(LANES, high);
  return high <= low ? 0 : (__mmask16)(((1u << high) - 1) & ~((1u << low) - 1));
}

/* The kernel rows `rows[0..count)` combined at input columns [c, c + 32),
 * split into their even and odd columns. Columns outside the row [0, w) are
 * the pool's identity `fill`, never read, unless they lie before `limit`
 * (floats past the last row's start that may be read: no output stored
 * reads a column past w then, and the plane goes on). */
static inline __attribute__((always_inline)) void
columns_at(const int is_max, const int count, const float *const *rows, int64_t c, int64_t w,
           int64_t limit, __m512 fill, vec *even, vec *odd) {
  const __m512i evens = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odds = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  /* Row by row into two accumulators, no arrays: a vector spilled to the
   * stack and read back whole waits for its two halves' stores. */
  vec a, b;
  if (c >= 0 && c + 2 * LANES <= limit) {
    a = load(rows[0] + c);
    b = load(rows[0] + c + LANES);
    for (int r = 1; r < count; r++) {
      a = combine(is_max, a, load(rows[r] + c));
      b = combine(is_max, b, load(rows[r] + c + LANES));
    }
  } else {
    /* Nothing is read through a lane the mask leaves out. */
    __mmask16 first = lane_range(-c, w - c), second = lane_range(-c - LANES, w - c - LANES);
    a = (vec)fill;
    b = (vec)fill;
    for (int r = 0; r < count; r++) {
      if (first)
        a = combine(is_max, a, (vec)_mm512_mask_loadu_ps(fill, first, rows[r] + c));
      if (second)
        b = combine(is_max, b, (vec)_mm512_mask_loadu_ps(fill, second, rows[r] + c + LANES));
    }
  }
  *even = (vec)_mm512_permutex2var_ps((__m512)a, evens, (__m512)b);
  *odd = (vec)_mm512_permutex2var_ps((__m512)a, odds, (__m512)b);
}

/* One output row of a pool with column stride 2, a kernel 2 or 3 columns
 * wide and 1 to 3 of its rows inside the image (`rows`), read in place: per
 * 16 outputs, the kernel rows of 32 input columns combined (two vectors a
 * row) and split by one permute each into even and odd columns; the third
 * kernel column is the even columns shifted by one lane, the next 16
 * outputs' first even column joined at the top. No copy of the plane and no
 * pass through memory between the rows and the columns (SqueezeNet's 3x3
 * stride-2 pools: 2x faster than the two passes). */
static inline __attribute__((always_inline)) void
row_stride2(const int is_max, const int count, const int kw, const float *const *rows,
            int64_t w, int64_t limit, int64_t ow, int64_t left, float counted,
            const float *divisor, float *dst) {
  const __m512 fill = _mm512_set1_ps(is_max ? -__builtin_inff() : 0.0f);
  vec even, odd, next_even, next_odd;
  columns_at(is_max, count, rows, -left, w, limit, fill, &even, &odd);
  for (int64_t x = 0; x < ow; x += LANES) {
    vec acc = combine(is_max, even, odd);
    if (kw > 2 || x + LANES < ow)
      columns_at(is_max, count, rows, 2 * (x + LANES) - left, w, limit, fill, &next_even, &next_odd);
    if (kw > 2)
      acc = combine(is_max, acc, (vec)_mm512_alignr_epi32((__m512i)next_even, (__m512i)even, 1));
    if (!is_max) {
      vec total = load(divisor + x) * counted;
      acc = acc / blend(total < 1.0f, splat(1.0f), total);
    }
    store_lanes(dst + x, acc, min64(LANES, ow - x));
    even = next_even;
    odd = next_odd;
  }
}

typedef void (*stride2_fn)(const float *const *, int64_t, int64_t, int64_t, int64_t, float,
                           const float *, float *);
#define STRIDE2(is_max, count, kw)                                                      \
  static void stride2_##is_max##_##count##_##kw(                                        \
      const float *const *rows, int64_t w, int64_t limit, int64_t ow, int64_t left,     \
      float counted, const float *divisor, float *dst) {                                \
    row_stride2(is_max, count, kw, rows, w, limit, ow, left, counted, divisor, dst);    \
  }
#define STRIDE2_COUNTS(is_max, kw) STRIDE2(is_max, 1, kw) STRIDE2(is_max, 2, kw) STRIDE2(is_max, 3, kw)
STRIDE2_COUNTS(0, 2) STRIDE2_COUNTS(0, 3) STRIDE2_COUNTS(1, 2) STRIDE2_COUNTS(1, 3)
/* [is_max][kw - 2][count - 1] */
static const stride2_fn stride2_rows[2][2][3] = {
    {{stride2_0_1_2, stride2_0_2_2, stride2_0_3_2}, {stride2_0_1_3, stride2_0_2_3, stride2_0_3_3}},
    {{stride2_1_1_2, stride2_1_2_2, stride2_1_3_2}, {stride2_1_1_3, stride2_1_2_3, stride2_1_3_3}},
};

/* Output rows [y0, y1) of a plane of a pool with column stride 2 in
 * registers, in one loop: those whose kh kernel rows all lie in the plane
 * inlined with kh a constant (a call per row took a third of a 27x27
 * plane's time), the others (padding) through stride2_rows. The plane's
 * input rows from `row0` on are at `src`, w floats each (all of them for a
 * whole plane; a band of them for a fused conv, conv2d.c); output row y at
 * dst + y * ow. */
static inline __attribute__((always_inline)) void
plane_stride2(const int is_max, const int kh, const int kw, const byoc_rt_pool *p,
              const float *src, int64_t row0, int64_t y0, int64_t y1, float *dst,
              const float *end, const float *divisor) {
  int64_t h = p->height, w = p->width, ow = p->out_width;
  int64_t sh = p->stride_h, top = p->pad_top, left = p->pad_left;
  /* Whether a stored output reads a column past the row (right padding or
   * ceil_mode); else the loads may run on into the next row. */
  int overhang = (ow - 1) * 2 + kw - left > w;
  int64_t low_y = p->count_include_pad ? -top : 0;
  int64_t high_y = p->count_include_pad ? h + p->pad_bottom : h;
  for (int64_t y = y0; y < y1; y++) {
    int64_t first = y * sh - top;
    float *to = dst + y * ow;
    float counted = (float)taps_in(first, kh, low_y, high_y);
    const float *rows[3] = {NULL, NULL, NULL};
    if (first >= 0 && first + kh <= h) {
      for (int r = 0; r < kh; r++)
        rows[r] = src + (first + r - row0) * w;
      int64_t limit = overhang ? w : end - rows[kh - 1];
      row_stride2(is_max, kh, kw, rows, w, limit, ow, left, counted, divisor, to);
      continue;
    }
    int64_t count = 0;
    for (int64_t r = max64(first, 0); r < min64(first + kh, h); r++)
      rows[count++] = src + (r - row0) * w;
    if (count == 0) { /* windows in the padding only: -inf, or 0 / count */
      for (int64_t x = 0; x < ow; x += LANES)
        store_lanes(to + x, splat(is_max ? -__builtin_inff() : 0.0f), min64(LANES, ow - x));
      continue;
    }
    int64_t limit = overhang ? w : end - rows[count - 1];
    stride2_rows[is_max][kw - 2][count - 1](rows, w, limit, ow, left, counted, divisor, to);
  }
}

typedef void (*plane_fn)(const byoc_rt_pool *, const float *, int64_t, int64_t, int64_t, float *,
                         const float *, const float *);
#define PLANE2(is_max, kh, kw)                                                          \
  static void plane2_##is_max##_##kh##_##kw(const byoc_rt_pool *p, const float *src,    \
                                            int64_t row0, int64_t y0, int64_t y1,       \
                                            float *dst, const float *end,               \
                                            const float *divisor) {                     \
    plane_stride2(is_max, kh, kw, p, src, row0, y0, y1, dst, end, divisor);             \
  }
#define PLANE2_ROWS(is_max, kw) PLANE2(is_max, 1, kw) PLANE2(is_max, 2, kw) PLANE2(is_max, 3, kw)
PLANE2_ROWS(0, 2) PLANE2_ROWS(0, 3) PLANE2_ROWS(1, 2) PLANE2_ROWS(1, 3)
/* [is_max][kw - 2][kh - 1] */
static const plane_fn stride2_planes[2][2][3] = {
    {{plane2_0_1_2, plane2_0_2_2, plane2_0_3_2}, {plane2_0_1_3, plane2_0_2_3, plane2_0_3_3}},
    {{plane2_1_1_2, plane2_1_2_2, plane2_1_3_2}, {plane2_1_1_3, plane2_1_2_3, plane2_1_3_3}},
};
#endif

/* Lane i holds i. */
static inline vec lane_index(void) {
  return (vec){0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
}

/* The max or the mean of the `count` floats at `src` (a window the size of
 * the plane: a global pool): one run of vectors into four accumulators, the
 * last vector masked, then its lanes. Through the two passes a 7x7 plane
 * took 74 cycles, its chains of dependent maxima or sums one per row and per
 * column. */
static float whole_plane(const float *src, int64_t count, int is_max) {
  vec fill = splat(is_max ? -__builtin_inff() : 0.0f);
  vec acc[4] = {fill, fill, fill, fill};
  int64_t i = 0;
  for (; i + 4 * LANES <= count; i += 4 * LANES)
    for (int a = 0; a < 4; a++) {
      vec v = load(src + i + a * LANES);
      acc[a] = is_max ? max_vector(acc[a], v) : acc[a] + v;
    }
  for (int a = 0; i < count; i += LANES, a++) {
    int64_t n = min64(LANES, count - i);
    vec v = load_lanes(src + i, n);
    if (n < LANES && is_max) /* the lanes past the end: the identity, not 0 */
      v = blend(lane_index() < (float)n, v, fill);
    acc[a] = is_max ? max_vector(acc[a], v) : acc[a] + v;
  }
  for (int a = 1; a < 4; a++)
    acc[0] = is_max ? max_vector(acc[0], acc[a]) : acc[0] + acc[a];
#ifdef __AVX512F__
  /* The lanes combined in a tree: halves, quarters, pairs, neighbours. */
  vec v = acc[0], u;
  u = (vec)_mm512_shuffle_f32x4((__m512)v, (__m512)v, 0x4e);
  v = is_max ? max_vector(v, u) : v + u;
  u = (vec)_mm512_shuffle_f32x4((__m512)v, (__m512)v, 0xb1);
  v = is_max ? max_vector(v, u) : v + u;
  u = (vec)_mm512_permute_ps((__m512)v, 0x4e);
  v = is_max ? max_vector(v, u) : v + u;
  u = (vec)_mm512_permute_ps((__m512)v, 0xb1);
  v = is_max ? max_vector(v, u) : v + u;
  float total = v[0];
#else
  float lane[LANES];
  store(lane, acc[0]);
  float total = lane[0];
  for (int l = 1; l < LANES; l++) {
    float y = lane[l];
    total = is_max ? (y != y || y > total ? y : total) : total + y;
  }
#endif
  return is_max ? total : total / (float)count;
}

void byoc_pool_divisor(const byoc_rt_pool *p, float *divisor) {
  int64_t w = p->width, ow = p->out_width, left = p->pad_left;
  int64_t low_x = p->count_include_pad ? -left : 0;
  int64_t high_x = p->count_include_pad ? w + p->pad_right : w;
  for (int64_t x = 0; x < ceil_div(ow, LANES) * LANES; x++)
    divisor[x] = (float)taps_in(min64(x, ow - 1) * p->stride_w - left, p->kernel_w, low_x, high_x);
}

int byoc_pool_in_registers(const byoc_rt_pool *p) {
#ifdef __AVX512F__
  /* Rows of two vectors or less go faster in two passes. */
  return p->stride_w == 2 && p->kernel_w >= 2 && p->kernel_w <= 3 && p->kernel_h <= 3 &&
         p->width > 2 * LANES;
#else
  (void)p;
  return 0;
#endif
}

void byoc_pool_rows(const byoc_rt_pool *p, const float *src, int64_t row0, int64_t y0, int64_t y1,
                    float *dst, const float *end, const float *divisor) {
#ifdef __AVX512F__
  stride2_planes[p->kind == BYOC_RT_MAX_POOL][p->kernel_w - 2][p->kernel_h - 1](p, src, row0, y0, y1,
                                                                            dst, end, divisor);
#else
  (void)p, (void)src, (void)row0, (void)y0, (void)y1, (void)dst, (void)end, (void)divisor;
#endif
}

/* Planes [index * per, (index + 1) * per) of all images. */
static void pool_chunk(void *context, int64_t index) {
  pool_job *j = context;
  const byoc_rt_pool *p = j->p;
  int64_t h = p->height, w = p->width, oh = p->out_height, ow = p->out_width;
  int64_t kh = p->kernel_h, kw = p->kernel_w, sh = p->stride_h, sw = p->stride_w;
  int64_t top = p->pad_top, left = p->pad_left;
  int64_t pitch = j->pitch, rows = j->rows, line = j->line, reach = j->reach;
  int is_max = p->kind == BYOC_RT_MAX_POOL;
  float identity = is_max ? -__builtin_inff() : 0.0f;
  int64_t columns = ceil_div(ow, LANES) * LANES;
  /* The padded copy (and a vector's margin), the kernel rows combined (and
   * the margin the column pass reads: two vectors past a row's last window
   * with stride 2), and an average's divisors per column. */
  int64_t copy_floats = j->padded && !j->in_registers ? rows * pitch + LANES : 0;
  int64_t combined_floats = oh * line + (sw + 2) * LANES + kw;
  float *copy = byoc_thread_scratch((size_t)(copy_floats + combined_floats + columns));
  if (copy == NULL) {
    atomic_store(&j->failed, BYOC_RT_OUT_OF_MEMORY);
    return;
  }
  float *combined = copy + copy_floats, *divisor = combined + combined_floats;
  for (int64_t i = 0; i < copy_floats; i++)
    copy[i] = identity;
  /* The column pass's last vectors read past the last row (lanes it does not
   * store): defined floats keep sanitizers quiet. */
  memset(combined + oh * line, 0, (size_t)(combined_floats - oh * line) * sizeof(float));
  /* An average divides by the taps inside the image (or inside its explicit
   * padding): per output, (rows counted) x (columns counted), at least 1. */
  int64_t low_y = p->count_include_pad ? -top : 0;
  int64_t high_y = p->count_include_pad ? h + p->pad_bottom : h;
  byoc_pool_divisor(p, divisor);
  int64_t planes = p->batch * p->channels;
  if (j->whole) {
    for (int64_t plane = index * j->per; plane < min64(planes, (index + 1) * j->per); plane++)
      j->out[plane] = whole_plane(j->data + plane * h * w, h * w, is_max);
    return;
  }
  for (int64_t plane = index * j->per; plane < min64(planes, (index + 1) * j->per); plane++) {
    const float *src = j->data + plane * h * w;
    float *dst = j->out + plane * oh * ow;
#ifdef __AVX512F__
    if (j->in_registers) {
      stride2_planes[is_max][kw - 2][kh - 1](p, src, 0, 0, oh, dst, j->data + planes * h * w, divisor);
      continue;
    }
#endif
    /* Kernel rows: combined[y * line + x] = op over ki of row y * sh + ki. */
    if (j->padded) {
      for (int64_t y = 0; y < h; y++)
        copy_row(copy + (top + y) * pitch + left, src + y * w, w);
      /* line == pitch; with stride 1 the rows are one run. */
      int64_t run = sh == 1 ? oh * pitch : reach, step = sh == 1 ? 0 : sh * pitch;
      for (int64_t y = 0; y < (sh == 1 ? 1 : oh); y++) {
        const float *from = copy + y * step;
        float *to = combined + y * pitch;
        for (int64_t i = 0; i < run; i += LANES) {
          vec acc = load(from + i);
          for (int64_t ki = 1; ki < kh; ki++) {
            vec v = load(from + i + ki * pitch);
            acc = is_max ? max_vector(acc, v) : acc + v;
          }
          store(to + i, acc);
        }
      }
    } else {
      /* Every window inside the plane: its rows read in place, each row's
       * last vector masked at the windows' reach. */
      for (int64_t y = 0; y < oh; y++) {
        const float *from = src + y * sh * w;
        float *to = combined + y * line;
        for (int64_t i = 0; i < reach; i += LANES) {
          int64_t count = min64(LANES, reach - i);
          vec acc = load_lanes(from + i, count);
          for (int64_t ki = 1; ki < kh; ki++) {
            vec v = load_lanes(from + i + ki * w, count);
            acc = is_max ? max_vector(acc, v) : acc + v;
          }
          store(to + i, acc);
        }
      }
    }
    /* Kernel columns, one output row at a time. */
    for (int64_t y = 0; y < oh; y++) {
      const float *row = combined + y * line;
      float counted = (float)taps_in(y * sh - top, kh, low_y, high_y);
      for (int64_t x = 0; x < ow; x += LANES) {
        vec acc = strided(row + x * sw, sw);
        for (int64_t kj = 1; kj < kw; kj++) {
          vec v = strided(row + x * sw + kj, sw);
          acc = is_max ? max_vector(acc, v) : acc + v;
        }
        if (!is_max) {
          vec count = load(divisor + x) * counted;
          acc = acc / blend(count < 1.0f, splat(1.0f), count);
        }
        store_lanes(dst + y * ow + x, acc, min64(LANES, ow - x));
      }
    }
  }
}

int32_t byoc_rt_pool2d(const byoc_rt_pool *p, const float *data, float *out) {
  if (p->stride_h < 1 || p->stride_h > 2 || p->stride_w < 1 || p->stride_w > 2)
    return BYOC_RT_FAILED;
  /* Input rows and columns the windows cover, from the padding's start. */
  int64_t reach = (p->out_width - 1) * p->stride_w + p->kernel_w;
  int64_t reach_h = (p->out_height - 1) * p->stride_h + p->kernel_h;
  int padded = p->pad_top > 0 || p->pad_left > 0 || reach > p->width || reach_h > p->height;
  /* The copy holds every input tap of every output; with stride 1 its
   * kernel rows are combined in one run, whose last vector reads up to a
   * vector past the last window's row (into the copy's margin). */
  int64_t pitch = max64(p->width + p->pad_left, reach);
  int64_t rows = max64(p->height + p->pad_top, reach_h);
  int64_t planes = p->batch * p->channels;
  int64_t threads = byoc_rt_num_threads();
  /* Several chunks a thread, each at least a few thousand inputs. */
  int64_t work = max64(1, max64(p->height * p->width, p->out_height * p->out_width));
  int64_t per = max64(ceil_div(planes, 4 * threads), ceil_div(4096, work));
  pool_job j = {
      .p = p,
      .data = data,
      .out = out,
      .pitch = pitch,
      .rows = rows,
      .padded = padded,
      .whole = p->out_height == 1 && p->out_width == 1 && p->kernel_h == p->height &&
               p->kernel_w == p->width && !padded && p->pad_bottom == 0 && p->pad_right == 0,
      .in_registers = byoc_pool_in_registers(p),
      .reach = reach,
      .line = padded ? pitch : ceil_div(reach, LANES) * LANES,
      .per = per,
  };
  atomic_init(&j.failed, 0);
  if (planes > 0 && p->out_height > 0 && p->out_width > 0)
    byoc_rt_parallel_for(ceil_div(planes, per), pool_chunk, &j);
  return atomic_load(&j.failed);
}
