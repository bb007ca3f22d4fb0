/* Layer normalisation along contiguous rows of float32 (see
 * byoc_runtime.h), rows split across the pool.
 *
 * Per row, three runs of vectors over the row in L1: the sum (four
 * accumulators), the sum of squared deviations from the mean (the variance
 * from centred values: E[x^2] - mean^2 loses every digit when the mean is
 * large against the spread), then (x - mean) / sqrt(var + epsilon) * gamma +
 * beta. The generated host loops ran BERT's two 128x768 layer norms on the
 * calling thread alone, between the layer's cblas functions.
 */
#include "byoc_runtime.h"
#include "kernels.h"
#include "row_ends.h"

#include <math.h>

typedef struct norm_job {
  int64_t rows, length, per;
  const float *data, *gamma, *beta;
  float epsilon;
  float *out;
} norm_job;

/* The sum over the row of x - centre, or of its squares: four vector
 * accumulators, the end a masked vector whose absent lanes count nothing. */
static float row_sum(const float *x, int64_t n, float centre, int square) {
  vec acc[4] = {splat(0.0f), splat(0.0f), splat(0.0f), splat(0.0f)};
  vec c = splat(centre);
  const vec lane = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
  int64_t i = 0;
  for (; i + 4 * LANES <= n; i += 4 * LANES)
    for (int a = 0; a < 4; a++) {
      vec v = load(x + i + a * LANES) - c;
      acc[a] += square ? v * v : v;
    }
  for (int a = 0; i < n; i += LANES, a++) {
    int64_t count = min64(LANES, n - i);
    vec v = count == LANES ? load(x + i) - c
                           : blend(lane < (float)count, load_part(x + i, count, 0.0f) - c, splat(0.0f));
    acc[a] += square ? v * v : v;
  }
  return lanes_sum((acc[0] + acc[1]) + (acc[2] + acc[3]));
}

static void norm_chunk(void *context, int64_t index) {
  const norm_job *j = context;
  int64_t n = j->length;
  int64_t r1 = min64(j->rows, (index + 1) * j->per);
  for (int64_t r = index * j->per; r < r1; r++) {
    const float *x = j->data + r * n;
    float *y = j->out + r * n;
    float mean = row_sum(x, n, 0.0f, 0) / (float)n;
    float var = row_sum(x, n, mean, 1) / (float)n;
    vec m = splat(mean), inv = splat(1.0f / sqrtf(var + j->epsilon));
    for (int64_t i = 0; i < n; i += LANES) {
      int64_t count = min64(LANES, n - i);
      vec g = j->gamma == NULL ? splat(1.0f)
              : count == LANES ? load(j->gamma + i) : load_part(j->gamma + i, count, 0.0f);
      vec b = j->beta == NULL ? splat(0.0f)
              : count == LANES ? load(j->beta + i) : load_part(j->beta + i, count, 0.0f);
      vec v = count == LANES ? load(x + i) : load_part(x + i, count, 0.0f);
      vec out = (v - m) * inv * g + b;
      if (count == LANES)
        store(y + i, out);
      else
        store_part(y + i, out, count);
    }
  }
}

int32_t byoc_rt_layer_norm(int64_t rows, int64_t length, const float *data, const float *gamma,
                           const float *beta, float epsilon, float *out) {
  /* Chunks of about 16K floats: a few microseconds each. */
  int64_t per = max64(1, (1 << 14) / max64(1, length));
  norm_job j = {rows, length, per, data, gamma, beta, epsilon, out};
  byoc_rt_parallel_for(ceil_div(rows, per), norm_chunk, &j);
  return BYOC_RT_OK;
}
