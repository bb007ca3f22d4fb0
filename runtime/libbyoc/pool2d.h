/* What the pool (pool2d.c) shares with the convolution, which can pool its
 * output a band of rows at a time (byoc_rt_conv2d_pool2d, conv2d.c). Not
 * part of libbyoc's interface.
 */
#ifndef BYOC_POOL2D_H
#define BYOC_POOL2D_H

#include "kernels.h"

/* Whether byoc_pool_rows computes pool `p`: column stride 2, a kernel of at
 * most 3x3 and rows wider than two vectors, on AVX-512. */
BYOC_HIDDEN int byoc_pool_in_registers(const byoc_rt_pool *p);

/* An average pool's divisors per output column (ceil(out_width / 16) * 16
 * floats), as byoc_pool_rows reads them. */
BYOC_HIDDEN void byoc_pool_divisor(const byoc_rt_pool *p, float *divisor);

/* Output rows [y0, y1) of one plane of `p` (byoc_pool_in_registers) to dst +
 * y * out_width: the plane's input rows row0 and on (those the rows read) at
 * `src`, `width` floats each. Loads stop before `end` (a row's last vector
 * may read on into the next row, never past end). */
BYOC_HIDDEN void byoc_pool_rows(const byoc_rt_pool *p, const float *src, int64_t row0, int64_t y0,
                                int64_t y1, float *dst, const float *end, const float *divisor);

#endif
