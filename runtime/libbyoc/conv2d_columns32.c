/* COLUMNS tiles of 32 output channels (2 vectors), one per count of
 * pixels 1..12 (see conv2d_columns.h). */
#include "conv2d_columns.h"

COLUMNS_TILES(2)

const columns_fn byoc_columns32_tiles[COLS_NR + 1] = {
    NULL, columns_tile_2_1, columns_tile_2_2, columns_tile_2_3, columns_tile_2_4,
    columns_tile_2_5, columns_tile_2_6, columns_tile_2_7, columns_tile_2_8,
    columns_tile_2_9, columns_tile_2_10, columns_tile_2_11, columns_tile_2_12,
};
