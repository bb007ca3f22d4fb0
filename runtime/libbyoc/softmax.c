/* Softmax along contiguous rows of float32 (see byoc_runtime.h): attention's
 * scores, called by the batch matmul that computed them, on each batch's
 * rows while they are in that thread's cache.
 *
 * Per row, three runs of vectors over the row in L1: the maximum; exp(x -
 * max) stored and summed; the stores scaled by 1 / sum. The row's end is a
 * masked vector, its absent lanes -inf (their exp 0). The generated host
 * loops took 0.34 ms for BERT-base's 12x128x128 scores on one thread, apart
 * from the batch matmul (onnxruntime's softmax 0.09 ms). An additive
 * attention mask is added to each row first (byoc_softmax_row_masked).
 */
#include "byoc_runtime.h"
#include "kernels.h"
#include "row_ends.h"

/* exp(x) for x <= 0 (x - the row's maximum): 0 below -87, where float32's
 * normal numbers end (exp_negative's scaling by 2^n needs n >= -126). A NaN
 * stays NaN (as numpy's softmax of a row holding one: all NaN). */
static inline vec exp_nonpositive(vec x) {
  mask tiny = x < -87.0f;
  return blend(tiny, splat(0.0f), exp_negative(blend(tiny, splat(-87.0f), x)));
}

/* x and y may be the same row (in place). */
void byoc_softmax_row(const float *x, float *y, int64_t n) {
  const float minus_inf = -__builtin_inff();
  int64_t full = n / LANES * LANES, rest = n - full;
  vec m0 = splat(minus_inf), m1 = m0;
  int64_t i = 0;
  for (; i + 2 * LANES <= full; i += 2 * LANES) {
    vec a = load(x + i), b = load(x + i + LANES);
    m0 = blend(a > m0, a, m0);
    m1 = blend(b > m1, b, m1);
  }
  if (i < full) {
    vec a = load(x + i);
    m0 = blend(a > m0, a, m0);
  }
  if (rest) {
    vec a = load_part(x + full, rest, minus_inf);
    m1 = blend(a > m1, a, m1);
  }
  float peak = lanes_max(blend(m1 > m0, m1, m0));
  vec top = splat(peak);
  vec s0 = splat(0.0f), s1 = s0;
  for (i = 0; i + 2 * LANES <= full; i += 2 * LANES) {
    vec a = exp_nonpositive(load(x + i) - top), b = exp_nonpositive(load(x + i + LANES) - top);
    store(y + i, a);
    store(y + i + LANES, b);
    s0 += a;
    s1 += b;
  }
  if (i < full) {
    vec a = exp_nonpositive(load(x + i) - top);
    store(y + i, a);
    s0 += a;
  }
  if (rest) {
    vec a = exp_nonpositive(load_part(x + full, rest, minus_inf) - top);
    store_part(y + full, a, rest);
    s1 += a;
  }
  vec scale = splat(1.0f / lanes_sum(s0 + s1));
  for (i = 0; i < full; i += LANES)
    store(y + i, load(y + i) * scale);
  if (rest)
    store_part(y + full, load_part(y + full, rest, 0.0f) * scale, rest);
}

/* The mask is added in a pass of its own, into y, while the row is in L1:
 * 128 keys cost a few nanoseconds, and the three passes above stay as they
 * are. The sum rounds to float32 as relay.add's does before the softmax. */
void byoc_softmax_row_masked(const float *x, const float *mask, float *y, int64_t n) {
  if (mask != NULL) {
    int64_t full = n / LANES * LANES, rest = n - full;
    for (int64_t i = 0; i < full; i += LANES)
      store(y + i, load(x + i) + load(mask + i));
    if (rest)
      store_part(y + full, load_part(x + full, rest, 0.0f) + load_part(mask + full, rest, 0.0f),
                 rest);
    x = y;
  }
  byoc_softmax_row(x, y, n);
}

int32_t byoc_rt_softmax(int64_t rows, int64_t length, const float *data, const float *mask,
                        int64_t mask_row, float *out) {
  for (int64_t r = 0; r < rows; r++)
    byoc_softmax_row_masked(data + r * length, mask == NULL ? NULL : mask + r * mask_row,
                            out + r * length, length);
  return BYOC_RT_OK;
}
