/* 2-d convolution of NCHW float32 tensors as products of pre-packed weights
 * with image columns, the epilogue (bias, residual, activation) applied while
 * the output is in registers (see byoc_runtime.h for the contract).
 *
 * Per image and group the convolution is a matrix product
 * out[O/G, P] = W[O/G, K] x X[K, P], P = OH*OW output pixels, K = C/G*KH*KW.
 * X is the image itself for a 1x1 convolution with stride 1 and no padding,
 * a copy of the pixels it reads for one with strides (subsampled);
 * otherwise its columns are gathered (im2col) a tile at a time.
 *
 * Two register layouts, chosen per convolution by byoc at compile time (the
 * weights are packed for one of them):
 *   ROWS     8 output channels x 48 pixels: three vectors along the pixels
 *            (so the output is stored as it lies in NCHW) times a broadcast
 *            weight; for images with many pixels, where a multiple of 16 of
 *            them wastes nothing;
 *   COLUMNS  32 output channels x 12 pixels: two vectors along the channels
 *            times a broadcast pixel, stored transposed through a small
 *            tile; for small images (14x14, 7x7) whose rows would leave most
 *            of a vector empty, which have long reductions that hide the
 *            transposed store.
 * Vectors are GCC/Clang vector extensions: with -march=native they become
 * AVX-512 (or AVX2, NEON) instructions, with 24 accumulators in registers.
 * This file is the driver; the tiles are in conv2d_rows.c and
 * conv2d_columns*.c (translation units of their own, see conv2d.h).
 */
#define _GNU_SOURCE
#include "byoc_runtime.h"
#include "conv2d.h"
#include "pool2d.h"

#include <stdlib.h>
#include <string.h>

#ifdef __AVX512F__
#include <immintrin.h>

/* The first n lanes (all for n >= 16, none for n <= 0). */
static inline __mmask16 lane_mask(int64_t n) {
  return n <= 0 ? 0 : n >= LANES ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
}
#endif

/* Where each vector of a ROWS tile goes (`at`). */
static void rows_place(rows_out *t) {
  /* Without grid positions past the rows' ends (a 1x1 convolution reading
   * the image as it is) the outputs are contiguous across rows. */
  int contiguous = t->grid == t->width;
  for (int v = 0; v < ROWS_NV; v++) {
    int64_t g = t->first + v * LANES, x = g % t->grid;
    int whole = t->count - v * LANES >= LANES && (contiguous || x + LANES <= t->width);
    t->at[v] = whole ? g / t->grid * t->width + x : -1;
  }
}

/* ---- The convolution -------------------------------------------------------- */

/* The input as the kernels read it: tap k of output pixel (y, x) is at
 * base[offset[k] + y * row_step + x * step]. `base` is the image itself or a
 * copy with its padding written out as zeros (`pitch` floats a row). */
typedef struct job {
  const byoc_rt_conv *cv;
  const float *data, *weight;
  float *out;
  epilogue e;
  int64_t og, k, pixels;   /* channels per group, reduction, OH*OW */
  int64_t panels;          /* weight panels per group */
  int direct;              /* a 1x1 convolution reading the image (or `copy`) as it is */
  int subsampled;          /* a strided 1x1 convolution: `copy` holds the pixels it reads */
  int padded;              /* reads `copy`, a zero-padded (or subsampled) copy */
  int64_t pitch, height;   /* row pitch and rows of a channel of the source */
  int64_t grid;            /* ROWS: grid positions per output row */
  int64_t tiles;           /* ROWS: tiles of 48 grid positions per image and group */
  int64_t panel_blocks, per_block; /* ROWS: chunks of panels */
  int64_t tile_ranges, per_range;  /* ROWS: chunks of tiles */
  int64_t row_tiles;       /* COLUMNS: tiles per output row (all pixels if direct) */
  int64_t tile_groups;     /* COLUMNS: chunks of tiles per panel */
  const int64_t *offset;
  float *copy;             /* the padded copy of the current image and group */
  int64_t image, group;
} job;

static int is_direct(const byoc_rt_conv *cv) {
  return cv->kernel_h == 1 && cv->kernel_w == 1 && cv->stride_h == 1 &&
         cv->stride_w == 1 && cv->pad_top == 0 && cv->pad_left == 0 &&
         cv->height == cv->out_height && cv->width == cv->out_width;
}

/* A 1x1 convolution with strides and no padding: a direct one of the pixels
 * it reads (every other pixel of every other row for stride 2). */
static int is_subsampled(const byoc_rt_conv *cv) {
  return cv->kernel_h == 1 && cv->kernel_w == 1 && (cv->stride_h > 1 || cv->stride_w > 1) &&
         cv->pad_top == 0 && cv->pad_left == 0 && cv->dilation_h == 1 && cv->dilation_w == 1;
}

/* The group's first input channel of image n. */
static const float *group_input(const job *j, int64_t n, int64_t g) {
  const byoc_rt_conv *cv = j->cv;
  return j->data + (n * cv->channels + g * (cv->channels / cv->groups)) * cv->height * cv->width;
}

/* Channels [8 index, 8 index + 8) of the padded copy of the current image and group. */
static void pad_chunk(void *context, int64_t index) {
  job *j = context;
  const byoc_rt_conv *cv = j->cv;
  int64_t cg = cv->channels / cv->groups;
  const float *x = group_input(j, j->image, j->group);
  int64_t h = cv->height, w = cv->width, top = cv->pad_top, left = cv->pad_left;
  int64_t pitch = j->pitch, plane = j->height * pitch;
  for (int64_t c = index * 8; c < min64(cg, index * 8 + 8); c++) {
    float *dst = j->copy + c * plane;
    const float *src = x + c * h * w;
    memset(dst, 0, (size_t)(top * pitch) * sizeof(float));
    for (int64_t y = 0; y < h; y++) {
      float *row = dst + (top + y) * pitch;
      memset(row, 0, (size_t)left * sizeof(float));
      memcpy(row + left, src + y * w, (size_t)w * sizeof(float));
      memset(row + left + w, 0, (size_t)(pitch - left - w) * sizeof(float));
    }
    memset(dst + (top + h) * pitch, 0, (size_t)((j->height - top - h) * pitch) * sizeof(float));
  }
}

/* Channels [8 index, 8 index + 8) of the subsampled copy of the current image
 * and group: the pixels a strided 1x1 convolution reads, side by side. Read in
 * place, ResNet-50's stride-2 1x1 convs (its projection shortcuts) gathered
 * every other float of a row, a broadcast each, from lines half of which
 * they did not need. */
static void subsample_chunk(void *context, int64_t index) {
  job *j = context;
  const byoc_rt_conv *cv = j->cv;
  int64_t cg = cv->channels / cv->groups;
  const float *x = group_input(j, j->image, j->group);
  int64_t w = cv->width, sh = cv->stride_h, sw = cv->stride_w;
  int64_t oh = cv->out_height, ow = cv->out_width;
  for (int64_t c = index * 8; c < min64(cg, index * 8 + 8); c++) {
    float *dst = j->copy + c * oh * ow;
    const float *src = x + c * cv->height * w;
    for (int64_t y = 0; y < oh; y++) {
      const float *row = src + y * sh * w;
      float *out = dst + y * ow;
      int64_t xx = 0;
#ifdef __AVX512F__
      if (sw == 2) { /* two vectors, their even floats (a masked load past the row's end) */
        const __m512i evens = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
        for (; xx < ow; xx += LANES) {
          int64_t n = min64(LANES, ow - xx), reach = min64(2 * LANES, w - 2 * xx);
          __m512 lo = _mm512_maskz_loadu_ps(lane_mask(min64(reach, LANES)), row + 2 * xx);
          __m512 hi = _mm512_maskz_loadu_ps(lane_mask(reach - LANES), row + 2 * xx + LANES);
          _mm512_mask_storeu_ps(out + xx, lane_mask(n), _mm512_permutex2var_ps(lo, evens, hi));
        }
      }
#endif
      for (; xx < ow; xx++)
        out[xx] = row[xx * sw];
    }
  }
}

/* One ROWS chunk: a block of output channels of one group of one image, at
 * a run of tiles of 48 consecutive grid positions. Each tile's columns are
 * read from cache by every panel of the block; the block's outputs are
 * written row by row, a few long runs. */
static void rows_chunk(void *context, int64_t index) {
  job *j = context;
  const byoc_rt_conv *cv = j->cv;
  int64_t range = index % j->tile_ranges, rest = index / j->tile_ranges;
  int64_t block = rest % j->panel_blocks, image_group = rest / j->panel_blocks;
  int64_t g = j->padded ? j->group : image_group % cv->groups;
  int64_t n = j->padded ? j->image : image_group / cv->groups;
  int64_t last = (cv->out_height - 1) * j->grid + cv->out_width; /* grid positions used */
  const float *source = j->padded ? j->copy : group_input(j, n, g);
  int64_t out_at = (n * cv->out_channels + g * j->og) * j->pixels;
  const float *bias = j->e.bias ? j->e.bias + g * j->og : NULL;
  const float *a = j->weight + g * j->panels * j->k * ROWS_MR;
  int64_t panel0 = block * j->per_block, panel1 = min64(j->panels, panel0 + j->per_block);
  int64_t tile0 = range * j->per_range, tile1 = min64(j->tiles, tile0 + j->per_range);
  for (int64_t tile = tile0; tile < tile1; tile++) {
    int64_t first = tile * ROWS_NR, count = min64(ROWS_NR, last - first);
    rows_out t = {
        .out = j->out + out_at,
        .residual = j->e.residual ? j->e.residual + out_at : NULL,
        .plane = j->pixels,
        .grid = j->grid,
        .width = cv->out_width,
        .first = first,
        .count = count,
    };
    rows_place(&t);
    rows_fn fn = byoc_rows_tiles[ceil_div(count, LANES)];
    for (int64_t panel = panel0; panel < panel1; panel++) {
      int64_t o0 = panel * ROWS_MR;
      rows_out part = t;
      part.out += o0 * j->pixels;
      if (part.residual != NULL)
        part.residual += o0 * j->pixels;
      part.bias = bias != NULL ? bias + o0 : NULL;
      part.rows = min64(ROWS_MR, j->og - o0);
      fn(j->k, a + panel * j->k * ROWS_MR, source + first, j->offset, &part, &j->e);
    }
  }
}

/* One COLUMNS chunk: one panel of output channels at a run of pixel tiles. */
static void columns_chunk(void *context, int64_t index) {
  job *j = context;
  const byoc_rt_conv *cv = j->cv;
  int64_t image_group = index / (j->panels * j->tile_groups), rest = index % (j->panels * j->tile_groups);
  int64_t panel = rest / j->tile_groups, part = rest % j->tile_groups;
  int64_t g = j->padded ? j->group : image_group % cv->groups;
  int64_t n = j->padded ? j->image : image_group / cv->groups;
  int64_t o0 = panel * COLS_WIDTH;
  int64_t rows = min64(COLS_WIDTH, j->og - o0);
  int nv = rows > LANES ? 2 : 1;
  const float *a = j->weight + (g * j->panels + panel) * j->k * COLS_WIDTH;
  int64_t out_at = (n * cv->out_channels + g * j->og + o0) * j->pixels;
  float *out = j->out + out_at;
  const float *residual = j->e.residual ? j->e.residual + out_at : NULL;
  const float *bias = j->e.bias ? j->e.bias + g * j->og + o0 : NULL;
  float padded_bias[COLS_WIDTH];
  if (bias != NULL && rows < COLS_WIDTH) { /* the vectors read 32 */
    memset(padded_bias, 0, sizeof padded_bias);
    memcpy(padded_bias, bias, (size_t)rows * sizeof(float));
    bias = padded_bias;
  }
  const float *source = j->padded ? j->copy : group_input(j, n, g);
  int64_t line = j->direct ? j->pixels : cv->out_width; /* pixels a row of tiles covers */
  int64_t row_step = j->direct ? 0 : cv->stride_h * j->pitch;
  int64_t step = j->direct ? 1 : cv->stride_w;
  int64_t lines = j->direct ? 1 : cv->out_height;
  int64_t total = lines * j->row_tiles;
  float tile[COLS_NR * COLS_WIDTH];
  /* The weights of the panel this thread likely computes next, prefetched a
   * part per tile: a panel's first tile would otherwise wait for them from
   * memory (ResNet-50's 7x7 convs read 4 MB of weights, 256 KB a panel, once
   * a call), and its other tiles find them in cache. */
  int64_t next = panel + ceil_div(byoc_rt_num_threads(), j->tile_groups);
  const float *ahead = next < j->panels ? j->weight + (g * j->panels + next) * j->k * COLS_WIDTH : NULL;
  /* The panel's tiles split evenly, its larger parts first. */
  int64_t first = ceil_div(part * total, j->tile_groups);
  int64_t end = ceil_div((part + 1) * total, j->tile_groups);
  for (int64_t t = first; t < end; t++) {
    int64_t y = t / j->row_tiles, r = t % j->row_tiles;
    int64_t x0 = r * line / j->row_tiles, x1 = (r + 1) * line / j->row_tiles;
    int64_t p0 = y * cv->out_width + x0;
    int64_t k0 = t * j->k / total, k1 = (t + 1) * j->k / total;
    columns_out place = {
        .out = out + p0,
        .residual = residual != NULL ? residual + p0 : NULL,
        .bias = bias,
        .plane = j->pixels,
        .rows = rows,
        .ahead = ahead != NULL ? ahead + k0 * COLS_WIDTH : NULL,
        .ahead_rows = k1 - k0,
    };
    (nv == 2 ? byoc_columns32_tiles : byoc_columns16_tiles)[x1 - x0](j->k, a, source + y * row_step + x0 * step, j->offset,
                                  step, &place, &j->e, tile);
  }
}

/* The job of a convolution up to its loops: its source (the image, or a
 * padded or subsampled copy, made per image and group by the loops) and tap
 * offsets, in the calling thread's scratch, `extra` floats after them for
 * the caller (at *more, 64-byte aligned). */
static int32_t setup(job *jp, const byoc_rt_conv *cv, const float *data, const float *weight,
                     const float *bias, const float *residual, float *out, size_t extra,
                     float **more) {
  if (cv->shuffle > 1)
    return BYOC_RT_FAILED; /* only the depthwise kernel reads shuffled channels */
  job j = {
      .cv = cv,
      .data = data,
      .weight = weight,
      .out = out,
      .e = {bias, residual, cv->activation, cv->low, cv->high},
      .og = cv->out_channels / cv->groups,
      .k = cv->channels / cv->groups * cv->kernel_h * cv->kernel_w,
      .pixels = cv->out_height * cv->out_width,
      .direct = is_direct(cv) || is_subsampled(cv),
      .subsampled = is_subsampled(cv),
  };
  int rows = cv->layout == BYOC_RT_ROWS;
  int64_t cg = cv->channels / cv->groups;
  int64_t kh = cv->kernel_h, kw = cv->kernel_w, dh = cv->dilation_h, dw = cv->dilation_w;
  if (rows && !j.direct && (cv->stride_h != 1 || cv->stride_w != 1))
    return BYOC_RT_FAILED; /* ROWS reads pixels side by side: stride 1 (or a subsampled copy) */
  /* The source: the image, or a zero-padded copy big enough for every tap of
   * every output (and, for ROWS, of the grid positions past a row's end). */
  j.pitch = cv->width;
  j.height = cv->height;
  if (j.subsampled) {
    j.padded = 1;
    j.pitch = cv->out_width;
    j.height = cv->out_height;
  } else if (!j.direct) {
    int64_t reach_w = (cv->out_width - 1) * cv->stride_w + (kw - 1) * dw + 1;
    int64_t reach_h = (cv->out_height - 1) * cv->stride_h + (kh - 1) * dh + 1;
    int64_t pitch = max64(cv->width + cv->pad_left, reach_w);
    int64_t height = max64(cv->height + cv->pad_top, reach_h);
    j.padded = rows || cv->pad_top > 0 || cv->pad_left > 0 || pitch > cv->width ||
               height > cv->height;
    if (j.padded) {
      j.pitch = pitch;
      j.height = height;
    }
  }
  int64_t plane = j.pitch * j.height;
  j.grid = rows && !j.direct ? j.pitch : cv->out_width;
  /* Scratch of the calling thread: the tap offsets, then the padded copy (with
   * a zeroed margin the last ROWS tile may read past the grid). */
  int64_t margin = ROWS_NR + j.pitch;
  size_t offsets = (size_t)ceil_div(j.k * (int64_t)sizeof(int64_t), 64) * 16;
  size_t copy = j.padded ? (size_t)ceil_div(cg * plane + margin, 16) * 16 : 0;
  float *scratch = byoc_thread_scratch(offsets + copy + extra);
  if (scratch == NULL)
    return BYOC_RT_OUT_OF_MEMORY;
  int64_t *offset = (int64_t *)scratch;
  for (int64_t k = 0; k < j.k; k++) {
    int64_t c = k / (kh * kw), i = k / kw % kh, jj = k % kw;
    offset[k] = j.direct ? k * j.pixels : c * plane + i * dh * j.pitch + jj * dw;
  }
  j.offset = offset;
  j.copy = scratch + offsets;
  if (j.padded)
    memset(j.copy + cg * plane, 0, (size_t)margin * sizeof(float));
  if (more != NULL)
    *more = scratch + offsets + copy;
  *jp = j;
  return 0;
}

int32_t byoc_rt_conv2d(const byoc_rt_conv *cv, const float *data, const float *weight,
                       const float *bias, const float *residual, float *out) {
  if ((cv->layout == BYOC_RT_WINOGRAD || cv->layout == BYOC_RT_WINOGRAD4) && cv->shuffle <= 1)
    return byoc_winograd_conv2d(cv, data, weight, bias, residual, out);
  job j;
  int32_t status = setup(&j, cv, data, weight, bias, residual, out, 0, NULL);
  if (status != 0)
    return status;
  int rows = cv->layout == BYOC_RT_ROWS;
  int64_t cg = cv->channels / cv->groups;
  if (rows) {
    j.panels = ceil_div(j.og, ROWS_MR);
    j.tiles = ceil_div((cv->out_height - 1) * j.grid + cv->out_width, ROWS_NR);
    j.per_block = min64(j.panels, ROWS_BLOCK);
    j.panel_blocks = ceil_div(j.panels, j.per_block);
    j.per_range = min64(j.tiles, ROWS_RANGE);
    j.tile_ranges = ceil_div(j.tiles, j.per_range);
    int64_t chunks = j.panel_blocks * j.tile_ranges;
    if (!j.padded) {
      byoc_rt_parallel_for(cv->batch * cv->groups * chunks, rows_chunk, &j);
      return 0;
    }
  } else {
    j.panels = ceil_div(j.og, COLS_WIDTH);
    int64_t line = j.direct ? j.pixels : cv->out_width;
    j.row_tiles = ceil_div(line, COLS_NR);
    int64_t total = (j.direct ? 1 : cv->out_height) * j.row_tiles;
    /* Enough chunks for every thread to take several, across the images and
     * groups an unpadded source lets one loop run. */
    int64_t loops = j.padded ? 1 : cv->batch * cv->groups;
    int64_t want = ceil_div(4 * (int64_t)byoc_rt_num_threads(), loops);
    j.tile_groups = min64(total, max64(1, ceil_div(want, j.panels)));
    /* As many chunks as a multiple of the threads, of tiles split evenly, so
     * no thread is left alone with the last one: Inception's 96-channel 3x3
     * convs at 28x28 (3 panels of 84 tiles) made 9 chunks, 5 for one of two
     * threads; DenseNet's 1x1 convs to 128 channels at 7x7 (4 panels of 5
     * tiles) 8 chunks of 3 and 2 tiles. The 2-thread time lost to the last
     * chunk, modelled over the convs of Inception v2 and DenseNet-121: 0.44
     * and 0.41 ms a call -> 0.04. */
    int64_t threads = byoc_rt_num_threads();
    while (j.tile_groups < total && loops * j.panels * j.tile_groups % threads != 0)
      j.tile_groups++;
    /* Every image and group in one loop: ShuffleNet's 1x1 convs of 8 groups
     * were 8 loops of 20 us, each ending in a wait for its last chunk. */
    if (!j.padded) {
      byoc_rt_parallel_for(loops * j.panels * j.tile_groups, columns_chunk, &j);
      return 0;
    }
  }
  for (int64_t n = 0; n < cv->batch; n++) {
    for (int64_t g = 0; g < cv->groups; g++) {
      j.image = n;
      j.group = g;
      if (j.padded)
        byoc_rt_parallel_for(ceil_div(cg, 8), j.subsampled ? subsample_chunk : pad_chunk, &j);
      if (rows)
        byoc_rt_parallel_for(j.panel_blocks * j.tile_ranges, rows_chunk, &j);
      else
        byoc_rt_parallel_for(j.panels * j.tile_groups, columns_chunk, &j);
    }
  }
  return 0;
}

/* ---- A convolution and the pool of its output --------------------------------- */

/* A conv whose output only a pool reads, the two a band of output rows at a
 * time: each band of the conv's output rows is pooled while in cache, and
 * the conv's output is never written whole. SqueezeNet's first conv (3->64,
 * 3x3 stride 2, 111x111) wrote 3.2 MB that its pool read back: more than a
 * core's L2, so each of its lines was first fetched from L3 or memory to be
 * written, and fetched again by the pool. */
typedef struct band_job {
  const job *j;
  const byoc_rt_pool *p;
  float *out;              /* the pool's output */
  float *bands;            /* a band of conv rows per chunk */
  int64_t band_rows;       /* conv rows a band holds (of every channel) */
  int64_t band_floats;     /* floats between two chunks' bands */
  int64_t step;            /* pool rows pooled from one band */
  int64_t ranges;          /* chunks (runs of pool rows) per image */
  const float *divisor;    /* an average pool's (byoc_pool_divisor) */
} band_job;

/* Output rows [y0, y1) of every channel of the job's image (COLUMNS, one
 * group, no residual) to band: channel o's row y at band[o * plane + (y -
 * y0) * out_width]. The input rows of the `ahead` output rows after them
 * are asked for into L2 first: the next band's, whose tiles would otherwise
 * wait for them (a model's input is in no cache; SqueezeNet's first conv
 * and pool, standalone with the caches flushed, 0.84 -> 0.70 ms minimum). */
static void columns_rows(const job *j, int64_t y0, int64_t y1, int64_t ahead, float *band,
                         int64_t plane) {
  const byoc_rt_conv *cv = j->cv;
  int64_t ow = cv->out_width, row_tiles = ceil_div(ow, COLS_NR);
  int64_t row_step = j->direct ? ow : cv->stride_h * j->pitch, step = j->direct ? 1 : cv->stride_w;
  const float *source = j->padded ? j->copy : group_input(j, j->image, 0);
  int64_t taps = cv->kernel_h * cv->kernel_w, pitch = j->direct ? ow : j->pitch;
  int64_t reach = (ow - 1) * step + (cv->kernel_w - 1) * cv->dilation_w + 1;
  for (int64_t y = y1; y < min64(y1 + ahead, cv->out_height); y++)
    for (int64_t c = 0; c < cv->channels; c++)
      for (int64_t i = 0; i < cv->kernel_h; i++) {
        const float *row = source + j->offset[c * taps] + y * row_step + i * cv->dilation_h * pitch;
        for (int64_t x = 0; x < reach; x += LANES)
          __builtin_prefetch(row + x, 0, 2);
      }
  float tile[COLS_NR * COLS_WIDTH];
  for (int64_t panel = 0; panel < j->panels; panel++) {
    int64_t o0 = panel * COLS_WIDTH, rows = min64(COLS_WIDTH, j->og - o0);
    const float *a = j->weight + panel * j->k * COLS_WIDTH;
    const float *bias = j->e.bias ? j->e.bias + o0 : NULL;
    float padded_bias[COLS_WIDTH];
    if (bias != NULL && rows < COLS_WIDTH) { /* the vectors read 32 */
      memset(padded_bias, 0, sizeof padded_bias);
      memcpy(padded_bias, bias, (size_t)rows * sizeof(float));
      bias = padded_bias;
    }
    const columns_fn *tiles = rows > LANES ? byoc_columns32_tiles : byoc_columns16_tiles;
    for (int64_t y = y0; y < y1; y++)
      for (int64_t r = 0; r < row_tiles; r++) {
        int64_t x0 = r * ow / row_tiles, x1 = (r + 1) * ow / row_tiles;
        columns_out place = {
            .out = band + o0 * plane + (y - y0) * ow + x0,
            .bias = bias,
            .plane = plane,
            .rows = rows,
        };
        tiles[x1 - x0](j->k, a, source + y * row_step + x0 * step, j->offset, step, &place, &j->e,
                       tile);
      }
  }
}

/* Pool rows [index * oh / ranges, (index + 1) * oh / ranges) of the job's
 * image, `step` at a time from a band of the conv rows they read; the rows
 * two steps share (the kernel's overlap) stay, moved to the band's start. */
static void band_chunk(void *context, int64_t index) {
  band_job *b = context;
  const job *j = b->j;
  const byoc_rt_conv *cv = j->cv;
  const byoc_rt_pool *p = b->p;
  int64_t oh = p->out_height, ow = p->out_width, width = cv->out_width, height = cv->out_height;
  int64_t plane = b->band_rows * width, channels = cv->out_channels;
  float *band = b->bands + index * b->band_floats;
  float *out = b->out + j->image * channels * oh * ow;
  int64_t r0 = index * oh / b->ranges, r1 = (index + 1) * oh / b->ranges;
  int64_t have0 = 0, have1 = 0; /* conv rows [have0, have1) are in the band */
  for (int64_t r = r0; r < r1; r += b->step) {
    int64_t re = min64(r1, r + b->step);
    int64_t need0 = min64(height, max64(0, r * p->stride_h - p->pad_top));
    int64_t need1 = min64(height, max64(need0, (re - 1) * p->stride_h - p->pad_top + p->kernel_h));
    int64_t kept = max64(0, min64(have1, need1) - need0);
    if (kept > 0 && need0 > have0)
      for (int64_t o = 0; o < channels; o++)
        memmove(band + o * plane, band + o * plane + (need0 - have0) * width,
                (size_t)(kept * width) * sizeof(float));
    columns_rows(j, need0 + kept, need1, need1 - need0 - kept, band + kept * width, plane);
    have0 = need0;
    have1 = need1;
    for (int64_t o = 0; o < channels; o++)
      byoc_pool_rows(p, band + o * plane, need0, r, re, out + o * oh * ow, band + channels * plane,
                     b->divisor);
  }
}

int32_t byoc_rt_conv2d_pool2d(const byoc_rt_conv *cv, const byoc_rt_pool *pool, const float *data,
                              const float *weight, const float *bias, float *out) {
  if (cv->layout != BYOC_RT_COLUMNS || cv->groups != 1 || !byoc_pool_in_registers(pool)) {
    /* The two one after the other, through the conv's whole output. */
    size_t floats = (size_t)(cv->batch * cv->out_channels * cv->out_height * cv->out_width);
    float *between = malloc((floats > 0 ? floats : 1) * sizeof(float));
    if (between == NULL)
      return BYOC_RT_OUT_OF_MEMORY;
    int32_t status = byoc_rt_conv2d(cv, data, weight, bias, NULL, between);
    if (status == 0)
      status = byoc_rt_pool2d(pool, between, out);
    free(between);
    return status;
  }
  int64_t oh = pool->out_height, width = cv->out_width, channels = cv->out_channels;
  int64_t threads = byoc_rt_num_threads();
  /* Bands of about 256 KB (in L2 with the input's rows they read); a run of
   * pool rows per thread, two with several (a thread late for its first
   * leaves it to the others), each computing its first band's overlap again. */
  int64_t per_row = max64(1, channels * width);
  int64_t step = max64(1, (65536 / per_row - pool->kernel_h) / pool->stride_h + 1);
  int64_t band_rows = (step - 1) * pool->stride_h + pool->kernel_h;
  int64_t band_floats = ceil_div(band_rows * per_row + 2 * LANES, 16) * 16;
  int64_t ranges = max64(1, min64(oh, threads > 1 ? 2 * threads : 1));
  int64_t divisor_floats = ceil_div(pool->out_width, LANES) * LANES;
  float *more;
  job j;
  int32_t status = setup(&j, cv, data, weight, bias, NULL, NULL,
                         (size_t)(ranges * band_floats + divisor_floats), &more);
  if (status != 0)
    return status;
  j.panels = ceil_div(j.og, COLS_WIDTH);
  band_job b = {
      .j = &j,
      .p = pool,
      .out = out,
      .bands = more + divisor_floats,
      .band_rows = band_rows,
      .band_floats = band_floats,
      .step = step,
      .ranges = ranges,
      .divisor = more,
  };
  byoc_pool_divisor(pool, more);
  for (int64_t n = 0; n < cv->batch; n++) {
    j.image = n;
    j.group = 0;
    if (j.padded)
      byoc_rt_parallel_for(ceil_div(cv->channels, 8), j.subsampled ? subsample_chunk : pad_chunk, &j);
    if (oh > 0 && pool->out_width > 0)
      byoc_rt_parallel_for(ranges, band_chunk, &b);
  }
  return 0;
}
