/* Depthwise 2-d convolution (groups == input channels, one input channel per
 * group) of NCHW float32 tensors, OIHW weights as they are, with the epilogue
 * of byoc_rt_conv2d (see byoc_runtime.h).
 *
 * Each output channel is a stencil over one input plane: a GEMM would have one
 * row. Vectors run along output rows. With AVX-512, strides 1 and 2 read the
 * plane itself through masked loads (`depthwise_direct`). Otherwise every
 * input row a channel reads is first
 * copied, zero-padded, into a row of scratch split by phase (the columns x with
 * x % stride == r side by side), so that for any stride the input of 16
 * neighbouring outputs under one kernel tap is 16 consecutive floats; each
 * split row ends in a vector's worth of zeros, so a row's last outputs are a
 * whole vector too.
 */
#define _GNU_SOURCE
#include "byoc_runtime.h"
#include "kernels.h"

#include <stdatomic.h>
#include <string.h>
#ifdef __AVX512F__
#include <immintrin.h>
#endif

typedef struct dw_job {
  const byoc_rt_conv *cv;
  const float *data, *weight, *bias, *residual;
  float *out;
  int64_t width;   /* floats of one phase of a split row */
  atomic_int failed;
} dw_job;

/* What the pass of output channel `o` of image `n` (input channel `c`)
 * reads and writes. */
typedef struct dw_channel {
  const float *plane, *weights, *residual; /* residual: NULL if none */
  float *out;
  float add; /* the bias, or 0 */
  epilogue e;
} dw_channel;

static dw_channel dw_channel_of(const dw_job *j, int64_t n, int64_t o, int64_t c) {
  const byoc_rt_conv *cv = j->cv;
  int64_t out_plane = (n * cv->out_channels + o) * cv->out_height * cv->out_width;
  dw_channel d = {
      .plane = j->data + (n * cv->channels + c) * cv->height * cv->width,
      .weights = j->weight + o * cv->kernel_h * cv->kernel_w,
      .residual = j->residual ? j->residual + out_plane : NULL,
      .out = j->out + out_plane,
      .add = j->bias != NULL ? j->bias[o] : 0.0f,
      .e = {j->bias, j->residual, cv->activation, cv->low, cv->high},
  };
  return d;
}

#ifdef __AVX512F__
/* Lanes [lo, hi) of a mask of 16 (none when hi <= lo). */
static inline __mmask16 lanes16(int64_t lo, int64_t hi) {
  lo = max64(lo, 0);
  hi = min64(hi, 16);
  return hi <= lo ? 0 : (__mmask16)(((1u << hi) - 1) & ~((1u << lo) - 1));
}

/* Output channel `o` of image `n` (input channel `c`) read straight from the
 * plane, for strides 1 and 2: a tap's inputs of 16 neighbouring outputs are
 * one masked load (stride 1), or two and a permute keeping every other float
 * (stride 2), the lanes in the padding masked to zero. Copying each row into
 * split scratch rows first took most of the time of the small planes
 * (ShuffleNet's 7x7 and 14x14: 2-4x onnxruntime's), and of stride 2 (a
 * scalar deinterleave of every input row: 0.30 ms against 0.08 for 112
 * channels of 56x56). */
static void depthwise_direct(const dw_job *j, int64_t n, int64_t o, int64_t c) {
  const byoc_rt_conv *cv = j->cv;
  int64_t h = cv->height, w = cv->width, oh = cv->out_height, ow = cv->out_width;
  int64_t kh = cv->kernel_h, kw = cv->kernel_w, sh = cv->stride_h, sw = cv->stride_w;
  int64_t dh = cv->dilation_h, dw = cv->dilation_w, top = cv->pad_top, left = cv->pad_left;
  dw_channel d = dw_channel_of(j, n, o, c);
  const float *plane = d.plane, *weights = d.weights, *residual = d.residual;
  float *out = d.out, add = d.add;
  epilogue e = d.e;
  const __m512i evens =
      _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  __mmask16 near[64], far[64]; /* per kernel column: the lanes inside the row */
  for (int64_t x = 0; x < ow; x += LANES) {
    for (int64_t jj = 0; jj < kw; jj++) {
      int64_t first = x * sw + jj * dw - left; /* lane 0's input column */
      near[jj] = lanes16(-first, w - first);
      far[jj] = lanes16(-first - 16, w - first - 16);
    }
    __mmask16 stored = lanes16(0, ow - x);
    for (int64_t y = 0; y < oh; y++) {
      vec acc = splat(add);
      for (int64_t i = 0; i < kh; i++) {
        int64_t iy = y * sh + i * dh - top;
        if (iy < 0 || iy >= h)
          continue; /* a row of padding: zeros */
        const float *row = plane + iy * w + x * sw - left;
        for (int64_t jj = 0; jj < kw; jj++) {
          __m512 v = _mm512_maskz_loadu_ps(near[jj], row + jj * dw);
          if (sw == 2)
            v = _mm512_permutex2var_ps(v, evens,
                                       _mm512_maskz_loadu_ps(far[jj], row + jj * dw + 16));
          acc += weights[i * kw + jj] * (vec)v;
        }
      }
      if (residual != NULL)
        acc += (vec)_mm512_maskz_loadu_ps(stored, residual + y * ow + x);
      _mm512_mask_storeu_ps(out + y * ow + x, stored, (__m512)act_vector(&e, acc));
    }
  }
}

/* As `depthwise_direct` for rows of at most 8 outputs (7x7 planes, where 7
 * of 16 lanes did work): two output rows a vector, rows y and y + 1 in lanes
 * 0-7 and 8-15, each tap a masked load from each input row (of 8 floats, or
 * 16 for stride 2) and one permute joining their halves (every other float
 * for stride 2). */
static void depthwise_pairs(const dw_job *j, int64_t n, int64_t o, int64_t c) {
  const byoc_rt_conv *cv = j->cv;
  int64_t h = cv->height, w = cv->width, oh = cv->out_height, ow = cv->out_width;
  int64_t kh = cv->kernel_h, kw = cv->kernel_w, sh = cv->stride_h, sw = cv->stride_w;
  int64_t dh = cv->dilation_h, dw = cv->dilation_w, top = cv->pad_top, left = cv->pad_left;
  dw_channel d = dw_channel_of(j, n, o, c);
  const float *plane = d.plane, *weights = d.weights, *residual = d.residual;
  float *out = d.out, add = d.add;
  epilogue e = d.e;
  /* Lanes 0-7 of the first row's load and of the second's (stride 1), or
   * the even lanes of each (stride 2). */
  const __m512i join =
      sw == 2 ? _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0)
              : _mm512_set_epi32(23, 22, 21, 20, 19, 18, 17, 16, 7, 6, 5, 4, 3, 2, 1, 0);
  __mmask16 inside[64]; /* per kernel column: the lanes inside the row */
  for (int64_t jj = 0; jj < kw; jj++) {
    int64_t first = jj * dw - left;
    inside[jj] = lanes16(-first, w - first) & (sw == 2 ? 0xFFFF : 0x00FF);
  }
  const __m512 zero = _mm512_setzero_ps();
  for (int64_t y = 0; y < oh; y += 2) {
    int pair = y + 1 < oh;
    __mmask16 low = lanes16(0, ow), high = pair ? (__mmask16)(low << 8) : 0;
    vec acc = splat(add);
    for (int64_t i = 0; i < kh; i++) {
      int64_t iy = y * sh + i * dh - top, next = iy + sh;
      int upper = iy >= 0 && iy < h, lower = pair && next >= 0 && next < h;
      if (!upper && !lower)
        continue; /* rows of padding: zeros */
      const float *a = plane + iy * w - left, *b = plane + next * w - left;
      for (int64_t jj = 0; jj < kw; jj++) {
        __m512 u = upper ? _mm512_maskz_loadu_ps(inside[jj], a + jj * dw) : zero;
        __m512 v = lower ? _mm512_maskz_loadu_ps(inside[jj], b + jj * dw) : zero;
        acc += weights[i * kw + jj] * (vec)_mm512_permutex2var_ps(u, join, v);
      }
    }
    float *at = out + y * ow;
    if (residual != NULL) {
      const float *r = residual + y * ow;
      acc += (vec)_mm512_maskz_loadu_ps(low, r) + (vec)_mm512_maskz_loadu_ps(high, r + ow - 8);
    }
    vec result = act_vector(&e, acc);
    _mm512_mask_storeu_ps(at, low, (__m512)result);
    _mm512_mask_storeu_ps(at + ow - 8, high, (__m512)result);
  }
}
#endif

/* Output channel `index` (of all images) of a depthwise convolution. */
static void depthwise_chunk(void *context, int64_t index) {
  dw_job *j = context;
  const byoc_rt_conv *cv = j->cv;
  int64_t o = index % cv->out_channels, n = index / cv->out_channels;
  int64_t multiplier = cv->out_channels / cv->channels;
  int64_t c = o / multiplier;
  if (cv->shuffle > 1) /* the channel shuffle before it, read in place */
    c = c % cv->shuffle * (cv->channels / cv->shuffle) + c / cv->shuffle;
#ifdef __AVX512F__
  if (cv->stride_w <= 2) {
    if (cv->out_width <= 8)
      depthwise_pairs(j, n, o, c);
    else
      depthwise_direct(j, n, o, c);
    return;
  }
#endif
  int64_t h = cv->height, w = cv->width, oh = cv->out_height, ow = cv->out_width;
  int64_t kh = cv->kernel_h, kw = cv->kernel_w, sh = cv->stride_h, sw = cv->stride_w;
  int64_t dh = cv->dilation_h, dw = cv->dilation_w, top = cv->pad_top, left = cv->pad_left;
  int64_t phase = j->width; /* floats per phase of one split input row */
  int64_t row_floats = sw * phase;
  /* One split row per input row of the plane, plus a zero row for the padding. */
  float *rows = byoc_thread_scratch((size_t)((h + 1) * row_floats + LANES));
  if (rows == NULL) {
    atomic_store(&j->failed, BYOC_RT_OUT_OF_MEMORY);
    return;
  }
  dw_channel d = dw_channel_of(j, n, o, c);
  const float *plane = d.plane, *weights = d.weights, *residual = d.residual;
  float *out = d.out, add = d.add;
  epilogue e = d.e;
  float *zero = rows + h * row_floats;
  memset(zero, 0, (size_t)row_floats * sizeof(float));
  int64_t whole = ceil_div(w, LANES) * LANES; /* floats the vector copy reads */
  for (int64_t y = 0; y < h; y++) {
    float *split = rows + y * row_floats;
    const float *src = plane + y * w;
    if (sw == 1 && left <= LANES && (h - 1 - y) * w >= whole - w) {
      /* Rows of a few dozen floats: whole vectors, not memset/memcpy calls
       * (they took a third of the time of ShuffleNet's depthwise convs).
       * The copy reads past the row into the plane's next rows and writes
       * past it into the split row's margin, which is then zeroed (the
       * last vector may spill zeros into the next split row, written
       * after this one). */
      store(split, splat(0.0f));
      for (int64_t x = 0; x < w; x += LANES) {
        store(split + left + x, load(src + x));
        __asm__("" : "+r"(x)); /* keeps the compiler from calling memcpy again */
      }
      for (int64_t x = left + w; x < row_floats; x += LANES)
        store(split + x, splat(0.0f));
      continue;
    }
    memset(split, 0, (size_t)row_floats * sizeof(float));
    if (sw == 1) {
      memcpy(split + left, src, (size_t)w * sizeof(float));
      continue;
    }
    /* Padded column t = x + left goes to phase t % sw, position t / sw. */
    for (int64_t r = 0; r < sw; r++) {
      int64_t x = ((r - left) % sw + sw) % sw;
      float *dst = split + r * phase + (x + left) / sw;
      for (; x < w; x += sw)
        *dst++ = src[x];
    }
  }
  /* Where each tap's input of output column 0 is within a split row: its
   * phase and position (padded column jj * dw). */
  int64_t column[64];
  float tap_weight[64];
  int taps = (int)(kh * kw);
  for (int t = 0; t < taps; t++) {
    int64_t at = t % kw * dw;
    column[t] = at % sw * phase + at / sw;
    tap_weight[t] = weights[t];
  }
  for (int64_t y = 0; y < oh; y++) {
    const float *tap[64];
    for (int64_t i = 0; i < kh; i++) {
      int64_t iy = y * sh + i * dh - top;
      const float *row = iy >= 0 && iy < h ? rows + iy * row_floats : zero;
      for (int64_t jj = 0; jj < kw; jj++)
        tap[i * kw + jj] = row + column[i * kw + jj];
    }
    float *dst = out + y * ow;
    const float *res = residual != NULL ? residual + y * ow : NULL;
    int64_t x = 0;
    for (; x + LANES <= ow; x += LANES) {
      vec acc = splat(add);
      for (int t = 0; t < taps; t++)
        acc += tap_weight[t] * load(tap[t] + x);
      if (res != NULL)
        acc += load(res + x);
      store(dst + x, act_vector(&e, acc));
    }
    if (x < ow) {
      /* The last, partial vector: the split rows hold a vector's worth past
       * the last output, so the product reads whole vectors (rows narrower
       * than a vector, 7x7 and 14x14 planes, are all tail). */
      vec acc = splat(add);
      for (int t = 0; t < taps; t++)
        acc += tap_weight[t] * load(tap[t] + x);
#ifdef __AVX512F__
      /* Masked, not memcpy calls: with rows of 7 to 28 outputs the tail
       * is most of the work. */
      __mmask16 lanes = (__mmask16)((1u << (ow - x)) - 1);
      if (res != NULL)
        acc += (vec)_mm512_maskz_loadu_ps(lanes, res + x);
      _mm512_mask_storeu_ps(dst + x, lanes, (__m512)act_vector(&e, acc));
#else
      size_t bytes = (size_t)(ow - x) * sizeof(float);
      float lane[LANES];
      if (res != NULL) {
        memcpy(lane, res + x, bytes);
        acc += load(lane);
      }
      store(lane, act_vector(&e, acc));
      memcpy(dst + x, lane, bytes);
#endif
    }
  }
}

int32_t byoc_rt_depthwise_conv2d(const byoc_rt_conv *cv, const float *data,
                                 const float *weight, const float *bias,
                                 const float *residual, float *out) {
  if (cv->kernel_h * cv->kernel_w > 64)
    return BYOC_RT_FAILED;
  /* A split row holds every padded column any output reads, and a vector's
   * worth past the last output (the vector loop never reads beyond it). */
  int64_t reach = (cv->out_width - 1) * cv->stride_w + (cv->kernel_w - 1) * cv->dilation_w + 1;
  int64_t padded = reach > cv->width + cv->pad_left ? reach : cv->width + cv->pad_left;
  dw_job j = {
      .cv = cv,
      .data = data,
      .weight = weight,
      .bias = bias,
      .residual = residual,
      .out = out,
      .width = (padded + cv->stride_w - 1) / cv->stride_w + LANES,
  };
  atomic_init(&j.failed, 0);
  byoc_rt_parallel_for(cv->batch * cv->out_channels, depthwise_chunk, &j);
  return atomic_load(&j.failed);
}
