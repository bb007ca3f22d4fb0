/* 2-d convolution of NCHW float32 tensors as products of pre-packed weights
 * with image columns, the epilogue (bias, residual, activation) applied while
 * the output is in registers (see byoc_runtime.h for the contract).
 *
 * Per image and group the convolution is a matrix product
 * out[O/G, P] = W[O/G, K] x X[K, P], P = OH*OW output pixels, K = C/G*KH*KW.
 * X is the image itself for a 1x1 convolution with stride 1 and no padding;
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
 */
#define _GNU_SOURCE
#include "byoc_runtime.h"
#include "kernels.h"

#include <pthread.h>
#include <stdatomic.h>
#ifdef __AVX512F__
#include <immintrin.h>
#endif
#include <stdlib.h>
#include <string.h>

#define ROWS_MR 8          /* output channels per ROWS tile */
#define ROWS_NV 3          /* vectors of pixels per ROWS tile */
#define ROWS_NR (ROWS_NV * LANES)
#define ROWS_BLOCK 4       /* ROWS panels a chunk computes (32 channels) */
#define ROWS_RANGE 16      /* ROWS tiles a chunk computes (768 grid positions) */
#define COLS_WIDTH 32      /* output channels per COLUMNS panel */
#define COLS_NR 12         /* pixels per COLUMNS tile */





/* ---- ROWS: 8 channels x up to 48 pixels ----------------------------------- */

/* acc[r][v] = sum_k a[k][r] * b[offset[k] + 16 v ...]: `a` a packed panel [K][8]. */
static inline __attribute__((always_inline)) void
rows_product(const int nv, int64_t k, const float *restrict a, const float *restrict b,
             const int64_t *restrict offset, vec acc[ROWS_MR][ROWS_NV]) {
#pragma GCC unroll 8
  for (int r = 0; r < ROWS_MR; r++)
#pragma GCC unroll 3
    for (int v = 0; v < nv; v++)
      acc[r][v] = splat(0.0f);
  for (int64_t kk = 0; kk < k; kk++) {
    const float *bk = b + offset[kk];
    vec x[ROWS_NV];
#pragma GCC unroll 3
    for (int v = 0; v < nv; v++)
      x[v] = load(bk + v * LANES);
#pragma GCC unroll 8
    for (int r = 0; r < ROWS_MR; r++) {
      float weight = a[kk * ROWS_MR + r];
#pragma GCC unroll 3
      for (int v = 0; v < nv; v++)
        acc[r][v] += weight * x[v];
    }
  }
}

/* Where a ROWS tile's outputs go: output pixel (y, x) is grid position
 * y * grid + x, for x < width (grid positions x >= width are not outputs). */
typedef struct rows_out {
  float *out;
  const float *residual; /* at the same place as out, or NULL */
  const float *bias;     /* of the tile's first channel, or NULL */
  int64_t plane;         /* floats between two output channels */
  int64_t rows;          /* channels of the tile that exist (<= 8) */
  int64_t grid, width;   /* grid row pitch and output row width */
  int64_t first, count;  /* the tile's grid positions [first, first + count) */
  int64_t at[ROWS_NV];   /* output offset of each vector, -1 if it is not 16
                            outputs side by side */
} rows_out;

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

static inline __attribute__((always_inline)) void
rows_store(const int nv, vec acc[ROWS_MR][ROWS_NV], const rows_out *t, const epilogue *e) {
  for (int v = 0; v < nv; v++) {
    int64_t at = t->at[v];
    if (at >= 0 && t->rows == ROWS_MR) {
#pragma GCC unroll 8
      for (int r = 0; r < ROWS_MR; r++) {
        vec y = acc[r][v] + (t->bias != NULL ? t->bias[r] : 0.0f);
        if (t->residual != NULL)
          y += load(t->residual + r * t->plane + at);
        store(t->out + r * t->plane + at, act_vector(e, y));
      }
      continue;
    }
    /* A vector crossing the end of an output row, or a partial tile. */
    float lane[ROWS_MR][LANES];
#pragma GCC unroll 8
    for (int r = 0; r < ROWS_MR; r++)
      store(lane[r], acc[r][v]);
    int64_t g = t->first + v * LANES;
    int64_t lanes = min64(LANES, t->count - v * LANES);
    for (int64_t l = 0; l < lanes; l++) {
      int64_t x = (g + l) % t->grid;
      if (x >= t->width)
        continue;
      int64_t atl = (g + l) / t->grid * t->width + x;
      for (int64_t r = 0; r < t->rows; r++) {
        float y = lane[r][l] + (t->bias != NULL ? t->bias[r] : 0.0f);
        if (t->residual != NULL)
          y += t->residual[r * t->plane + atl];
        t->out[r * t->plane + atl] = act_scalar(e, y);
      }
    }
  }
}

/* Ask for the output's cache lines while the product is computed: stores
 * to lines not in cache would otherwise wait for them at the end. */
static inline void rows_prefetch(const int nv, const rows_out *t) {
  for (int v = 0; v < nv; v++) {
    if (t->at[v] < 0)
      continue;
    for (int r = 0; r < ROWS_MR; r++)
      __builtin_prefetch(t->out + r * t->plane + t->at[v], 1, 3);
  }
}

#define ROWS_TILE(nv)                                                                  \
  static void rows_tile_##nv(int64_t k, const float *restrict a, const float *restrict b, \
                             const int64_t *restrict offset, const rows_out *t,         \
                             const epilogue *e) {                                      \
    vec acc[ROWS_MR][ROWS_NV];                                                         \
    rows_prefetch(nv, t);                                                              \
    rows_product(nv, k, a, b, offset, acc);                                            \
    rows_store(nv, acc, t, e);                                                         \
  }
ROWS_TILE(1)
ROWS_TILE(2)
ROWS_TILE(3)

typedef void (*rows_fn)(int64_t, const float *restrict, const float *restrict,
                        const int64_t *restrict, const rows_out *, const epilogue *);
static const rows_fn ROWS_TILES[ROWS_NV + 1] = {NULL, rows_tile_1, rows_tile_2, rows_tile_3};

/* ---- COLUMNS: 32 (or 16) channels x up to 12 pixels ------------------------ */

/* Where a COLUMNS tile's outputs go: channel o, tile pixel q at
 * out[o * plane + q] (and the residual at the same place). */
typedef struct columns_out {
  float *out;
  const float *residual; /* or NULL */
  const float *bias;     /* 32 of them (zero-padded), or NULL */
  int64_t plane;         /* floats between two output channels */
  int64_t rows;          /* channels of the panel that exist (<= 32) */
} columns_out;

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
  for (int64_t kk = 0; kk < k; kk++) {
    const float *bk = b + offset[kk];
    vec w[2];
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

typedef void (*columns_fn)(int64_t, const float *restrict, const float *restrict,
                           const int64_t *restrict, int64_t, const columns_out *,
                           const epilogue *, float *restrict);

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
COLUMNS_TILES(1)
COLUMNS_TILES(2)

static const columns_fn COLUMNS_TILES_OF[3][COLS_NR + 1] = {
    {NULL},
    {NULL, columns_tile_1_1, columns_tile_1_2, columns_tile_1_3, columns_tile_1_4,
     columns_tile_1_5, columns_tile_1_6, columns_tile_1_7, columns_tile_1_8,
     columns_tile_1_9, columns_tile_1_10, columns_tile_1_11, columns_tile_1_12},
    {NULL, columns_tile_2_1, columns_tile_2_2, columns_tile_2_3, columns_tile_2_4,
     columns_tile_2_5, columns_tile_2_6, columns_tile_2_7, columns_tile_2_8,
     columns_tile_2_9, columns_tile_2_10, columns_tile_2_11, columns_tile_2_12},
};

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
  int direct;              /* a 1x1 convolution reading the image as it is */
  int padded;              /* reads a zero-padded copy */
  int64_t pitch, height;   /* row pitch and rows of a channel of the source */
  int64_t grid;            /* ROWS: grid positions per output row */
  int64_t tiles;           /* ROWS: tiles of 48 grid positions per image and group */
  int64_t panel_blocks, per_block; /* ROWS: chunks of panels */
  int64_t tile_ranges, per_range;  /* ROWS: chunks of tiles */
  int64_t row_tiles;       /* COLUMNS: tiles per output row (all pixels if direct) */
  int64_t tile_groups, per_group; /* COLUMNS: chunks of tiles per panel */
  const int64_t *offset;
  float *copy;             /* the padded copy of the current image and group */
  int64_t image, group;
} job;

static int is_direct(const byoc_rt_conv *cv) {
  return cv->kernel_h == 1 && cv->kernel_w == 1 && cv->stride_h == 1 &&
         cv->stride_w == 1 && cv->pad_top == 0 && cv->pad_left == 0 &&
         cv->height == cv->out_height && cv->width == cv->out_width;
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
    rows_fn fn = ROWS_TILES[ceil_div(count, LANES)];
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
  int64_t panel = index / j->tile_groups, part = index % j->tile_groups;
  int64_t n = j->image, g = j->group;
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
  for (int64_t t = part * j->per_group; t < min64(total, (part + 1) * j->per_group); t++) {
    int64_t y = t / j->row_tiles, r = t % j->row_tiles;
    int64_t x0 = r * line / j->row_tiles, x1 = (r + 1) * line / j->row_tiles;
    int64_t p0 = y * cv->out_width + x0;
    columns_out place = {
        .out = out + p0,
        .residual = residual != NULL ? residual + p0 : NULL,
        .bias = bias,
        .plane = j->pixels,
        .rows = rows,
    };
    COLUMNS_TILES_OF[nv][x1 - x0](j->k, a, source + y * row_step + x0 * step, j->offset,
                                  step, &place, &j->e, tile);
  }
}

int32_t byoc_rt_conv2d(const byoc_rt_conv *cv, const float *data, const float *weight,
                       const float *bias, const float *residual, float *out) {
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
      .direct = is_direct(cv),
  };
  int rows = cv->layout == BYOC_RT_ROWS;
  int64_t cg = cv->channels / cv->groups;
  int64_t kh = cv->kernel_h, kw = cv->kernel_w, dh = cv->dilation_h, dw = cv->dilation_w;
  if (rows && !j.direct && (cv->stride_h != 1 || cv->stride_w != 1))
    return BYOC_RT_FAILED; /* ROWS reads pixels side by side: stride 1 only */
  /* The source: the image, or a zero-padded copy big enough for every tap of
   * every output (and, for ROWS, of the grid positions past a row's end). */
  j.pitch = cv->width;
  j.height = cv->height;
  if (!j.direct) {
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
  size_t floats = offsets + (j.padded ? (size_t)(cg * plane + margin) : 0);
  float *scratch = byoc_thread_scratch(floats);
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
    /* Enough chunks for every thread to take several. */
    int64_t want = 4 * (int64_t)byoc_rt_num_threads();
    j.tile_groups = min64(total, max64(1, ceil_div(want, j.panels)));
    j.per_group = ceil_div(total, j.tile_groups);
    j.tile_groups = ceil_div(total, j.per_group);
  }
  for (int64_t n = 0; n < cv->batch; n++) {
    for (int64_t g = 0; g < cv->groups; g++) {
      j.image = n;
      j.group = g;
      if (j.padded)
        byoc_rt_parallel_for(ceil_div(cg, 8), pad_chunk, &j);
      if (rows)
        byoc_rt_parallel_for(j.panel_blocks * j.tile_ranges, rows_chunk, &j);
      else
        byoc_rt_parallel_for(j.panels * j.tile_groups, columns_chunk, &j);
    }
  }
  return 0;
}
