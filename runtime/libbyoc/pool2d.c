/* 2-d max and average pooling with stride 1 of NCHW float32 tensors
 * (Inception's 3x3 "same" pools), see byoc_runtime.h for the contract.
 *
 * Per plane, in two passes over a padded copy whose padding holds the pool's
 * identity (-inf for max, 0 for an average): the kernel rows combined
 * (`vertical`: contiguous across the whole copy, rows and padding alike, so
 * a 7x7 plane is a few vectors, not seven rows of seven), then each output row
 * the kernel columns of that (unaligned vector loads, the row's tail masked).
 * Generated loops over rows of 7 or 14 outputs were scalar: a 1024x7x7 pool
 * took 0.21 ms where onnxruntime (vectors of channels, NCHWc) takes 0.044.
 * The copy's padding is written once per chunk of planes; only its interior
 * changes from plane to plane.
 */
#define _GNU_SOURCE
#include "byoc_runtime.h"
#include "kernels.h"

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
  int64_t per;         /* planes per chunk */
  atomic_int failed;
} pool_job;

/* max(x, y), NaN if y is (a NaN x stays): relay's max, as the generated pools. */
static inline vec max_vector(vec x, vec y) {
#ifdef __AVX512F__
  /* maxps(y, x) is y > x ? y : x, so x's NaN stays; y's is put back. */
  return blend(y != y, y, (vec)_mm512_max_ps((__m512)y, (__m512)x));
#else
  return blend((y > x) | (y != y), y, x);
#endif
}

/* How many of the taps [0, kernel) of output `o` (stride 1) lie in [low, high)
 * after the shift `o - pad`. */
static int64_t taps_in(int64_t o, int64_t pad, int64_t kernel, int64_t low, int64_t high) {
  int64_t first = max64(0, low - (o - pad)), end = min64(kernel, high - (o - pad));
  return max64(0, end - first);
}

/* `count` floats from `src` to `dst`, neither read nor written past them. */
static inline void copy_row(float *dst, const float *src, int64_t count) {
#ifdef __AVX512F__
  int64_t x = 0;
  for (; x + LANES <= count; x += LANES)
    store(dst + x, load(src + x));
  if (x < count) {
    __mmask16 lanes = (__mmask16)((1u << (count - x)) - 1);
    _mm512_mask_storeu_ps(dst + x, lanes, _mm512_maskz_loadu_ps(lanes, src + x));
  }
#else
  memcpy(dst, src, (size_t)count * sizeof(float));
#endif
}

/* The first `count` (<= LANES) lanes of `v` to `dst`. */
static inline void store_lanes(float *dst, vec v, int64_t count) {
  if (count == LANES) {
    store(dst, v);
    return;
  }
#ifdef __AVX512F__
  _mm512_mask_storeu_ps(dst, (__mmask16)((1u << count) - 1), (__m512)v);
#else
  float lane[LANES];
  store(lane, v);
  memcpy(dst, lane, (size_t)count * sizeof(float));
#endif
}

/* Planes [index * per, (index + 1) * per) of all images. */
static void pool_chunk(void *context, int64_t index) {
  pool_job *j = context;
  const byoc_rt_pool *p = j->p;
  int64_t h = p->height, w = p->width, oh = p->out_height, ow = p->out_width;
  int64_t kh = p->kernel_h, kw = p->kernel_w, top = p->pad_top, left = p->pad_left;
  int64_t pitch = j->pitch, rows = j->rows;
  int is_max = p->kind == BYOC_RT_MAX_POOL;
  float identity = is_max ? -__builtin_inff() : 0.0f;
  int64_t columns = ceil_div(ow, LANES) * LANES;
  /* The padded copy (and a vector's margin), the kernel rows combined (and
   * the margin the column pass reads), and an average's divisors per column. */
  int64_t copy_floats = rows * pitch + LANES;
  int64_t combined_floats = oh * pitch + LANES + kw;
  float *copy = byoc_thread_scratch((size_t)(copy_floats + combined_floats + columns));
  if (copy == NULL) {
    atomic_store(&j->failed, BYOC_RT_OUT_OF_MEMORY);
    return;
  }
  float *combined = copy + copy_floats, *divisor = combined + combined_floats;
  for (int64_t i = 0; i < copy_floats; i++)
    copy[i] = identity;
  /* An average divides by the taps inside the image (or inside its explicit
   * padding): per output, (rows counted) x (columns counted), at least 1. */
  int64_t low_y = p->count_include_pad ? -top : 0;
  int64_t high_y = p->count_include_pad ? h + p->pad_bottom : h;
  int64_t low_x = p->count_include_pad ? -left : 0;
  int64_t high_x = p->count_include_pad ? w + p->pad_right : w;
  for (int64_t x = 0; x < columns; x++)
    divisor[x] = (float)taps_in(min64(x, ow - 1), left, kw, low_x, high_x);
  int64_t planes = p->batch * p->channels;
  for (int64_t plane = index * j->per; plane < min64(planes, (index + 1) * j->per); plane++) {
    const float *src = j->data + plane * h * w;
    float *dst = j->out + plane * oh * ow;
    for (int64_t y = 0; y < h; y++)
      copy_row(copy + (top + y) * pitch + left, src + y * w, w);
    /* Kernel rows: combined[i] = op over ki of copy[i + ki * pitch]. */
    for (int64_t i = 0; i < oh * pitch; i += LANES) {
      vec acc = load(copy + i);
      for (int64_t ki = 1; ki < kh; ki++) {
        vec v = load(copy + i + ki * pitch);
        acc = is_max ? max_vector(acc, v) : acc + v;
      }
      store(combined + i, acc);
    }
    /* Kernel columns, one output row at a time. */
    for (int64_t y = 0; y < oh; y++) {
      const float *line = combined + y * pitch;
      float counted = (float)taps_in(y, top, kh, low_y, high_y);
      for (int64_t x = 0; x < ow; x += LANES) {
        vec acc = load(line + x);
        for (int64_t kj = 1; kj < kw; kj++) {
          vec v = load(line + x + kj);
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
  /* The copy holds every input tap of every output (stride 1). The column
   * pass reads whole vectors: past a row's last output into the next row
   * (lanes it does not store), past the last row into a margin. */
  int64_t pitch = max64(p->width + p->pad_left, p->out_width + p->kernel_w - 1);
  int64_t rows = max64(p->height + p->pad_top, p->out_height + p->kernel_h - 1);
  int64_t planes = p->batch * p->channels;
  int64_t threads = byoc_rt_num_threads();
  /* Several chunks a thread, each at least a few thousand outputs. */
  int64_t per = max64(ceil_div(planes, 4 * threads), ceil_div(4096, max64(1, p->out_height * p->out_width)));
  pool_job j = {.p = p, .data = data, .out = out, .pitch = pitch, .rows = rows, .per = per};
  atomic_init(&j.failed, 0);
  if (planes > 0 && p->out_height > 0 && p->out_width > 0)
    byoc_rt_parallel_for(ceil_div(planes, per), pool_chunk, &j);
  return atomic_load(&j.failed);
}
