/* COLUMNS tiles of 16 output channels (1 vector), one per count of
 * pixels 1..12 (see conv2d_columns.h). */
#include "conv2d_columns.h"

COLUMNS_TILES(1)

const columns_fn byoc_columns16_tiles[COLS_NR + 1] = {
    NULL, columns_tile_1_1, columns_tile_1_2, columns_tile_1_3, columns_tile_1_4,
    columns_tile_1_5, columns_tile_1_6, columns_tile_1_7, columns_tile_1_8,
    columns_tile_1_9, columns_tile_1_10, columns_tile_1_11, columns_tile_1_12,
};
