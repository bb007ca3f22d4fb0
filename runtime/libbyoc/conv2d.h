/* What the convolution (conv2d.c) shares with its register tiles, which are
 * translation units of their own (conv2d_rows.c, conv2d_columns16.c,
 * conv2d_columns32.c): GCC takes seconds over the unrolled tiles, and
 * libbyoc's build compiles its units on every core at once. Not part of
 * libbyoc's interface. See conv2d.c for the two register layouts.
 */
#ifndef BYOC_CONV2D_H
#define BYOC_CONV2D_H

#include "kernels.h"

#define ROWS_MR 8          /* output channels per ROWS tile */
#define ROWS_NV 3          /* vectors of pixels per ROWS tile */
#define ROWS_NR (ROWS_NV * LANES)
#define ROWS_BLOCK 4       /* ROWS panels a chunk computes (32 channels) */
#define ROWS_RANGE 16      /* ROWS tiles a chunk computes (768 grid positions) */
#define COLS_WIDTH 32      /* output channels per COLUMNS panel */
#define COLS_NR 12         /* pixels per COLUMNS tile */

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

/* A ROWS tile of nv vectors of pixels (ROWS_NV at most). */
typedef void (*rows_fn)(int64_t, const float *restrict, const float *restrict,
                        const int64_t *restrict, const rows_out *, const epilogue *);
/* byoc_rows_tiles[nv] computes a tile of nv vectors (conv2d_rows.c). */
BYOC_HIDDEN extern const rows_fn byoc_rows_tiles[ROWS_NV + 1];

/* Where a COLUMNS tile's outputs go: channel o, tile pixel q at
 * out[o * plane + q] (and the residual at the same place). */
typedef struct columns_out {
  float *out;
  const float *residual; /* or NULL */
  const float *bias;     /* 32 of them (zero-padded), or NULL */
  int64_t plane;         /* floats between two output channels */
  int64_t rows;          /* channels of the panel that exist (<= 32) */
  const float *ahead;    /* rows [0, ahead_rows) of a panel to prefetch, or NULL */
  int64_t ahead_rows;
} columns_out;

typedef void (*columns_fn)(int64_t, const float *restrict, const float *restrict,
                           const int64_t *restrict, int64_t, const columns_out *,
                           const epilogue *, float *restrict);
/* byoc_columns16_tiles[nr] computes nr pixels of a panel of 16 channels
 * (conv2d_columns16.c), byoc_columns32_tiles[nr] of 32 (conv2d_columns32.c). */
BYOC_HIDDEN extern const columns_fn byoc_columns16_tiles[COLS_NR + 1];
BYOC_HIDDEN extern const columns_fn byoc_columns32_tiles[COLS_NR + 1];

/* byoc_rt_conv2d of BYOC_RT_WINOGRAD and BYOC_RT_WINOGRAD4 (conv2d_winograd.c). */
BYOC_HIDDEN int32_t byoc_winograd_conv2d(const byoc_rt_conv *cv, const float *data,
                                         const float *weight, const float *bias,
                                         const float *residual, float *out);

#endif
