/* What libbyoc's kernels share (not part of its interface): vectors as
 * GCC/Clang vector extensions (AVX-512, AVX2 or NEON with -march=native), the
 * fused epilogue, and per-thread scratch memory.
 */
#ifndef BYOC_KERNELS_H
#define BYOC_KERNELS_H

#include "byoc_runtime.h"

#include <stddef.h>
#include <stdint.h>

#define BYOC_HIDDEN __attribute__((visibility("hidden")))

#define LANES 16
typedef float vec __attribute__((vector_size(4 * LANES)));
typedef float vec_unaligned __attribute__((vector_size(4 * LANES), aligned(4)));
typedef int32_t mask __attribute__((vector_size(4 * LANES)));

static inline vec load(const float *p) { return *(const vec_unaligned *)p; }
static inline void store(float *p, vec v) { *(vec_unaligned *)p = v; }
static inline vec splat(float x) { return (vec){0} + x; }

typedef struct epilogue {
  const float *bias;     /* per output channel, or NULL */
  const float *residual; /* shaped as the output, or NULL */
  int64_t activation;
  float low, high;
} epilogue;

static inline vec blend(mask m, vec yes, vec no) {
  return (vec)(((mask)yes & m) | ((mask)no & ~m));
}

/* Horner's rule, lowest degree first. */
static inline vec polynomial(vec x, const float *c, int n) {
  vec total = splat(c[n - 1]);
  for (int i = n - 2; i >= 0; i--)
    total = total * x + c[i];
  return total;
}

/* exp(x) for x in [-16, 0] (all erf needs): 2^n exp(r), n = round(x / ln 2),
 * r reduced in two steps and exp(r) a polynomial, as byoc.passes.vector_math. */
static inline vec exp_negative(vec x) {
  static const float p[] = {0.49999988595112727f, 0.16666518459980315f,
                            0.04166953310923173f, 0.008368916341378761f,
                            0.0013751407895465904f};
  typedef int32_t ivec __attribute__((vector_size(4 * LANES)));
  ivec m = __builtin_convertvector(x * -1.4426950408889634f + 0.5f, ivec); /* -n, >= 0 */
  vec n = -__builtin_convertvector(m, vec);
  vec r = x - n * 0.693359375f;
  r = r - n * -2.1219444005469057e-4f;
  vec near_one = polynomial(r, p, 5) * (r * r) + r + 1.0f;
  return near_one * (vec)((127 - m) << 23);
}

/* erf(x), as byoc.passes.vector_math.erf_f32: x + x P(x^2) for |x| < 1, else
 * sign(x) (1 - exp(-x^2) Q(1 / |x|)) with |x| capped at 4 (8.6e-8 relative). */
static inline vec erf_vector(vec x) {
  static const float small_p[] = {0.1283791665100523f, -0.3761262884332517f,
                                  0.11283612428244737f, -0.02685480853720814f,
                                  0.005190053577800505f, -0.0008024354128336972f,
                                  7.898210205891345e-05f};
  static const float large_p[] = {0.0006925211121287756f, 0.5533405253338918f,
                                  0.07509803076087586f, -0.5793431943291053f,
                                  0.7119723752300146f, -0.5116241788624535f,
                                  0.23147337871661602f, -0.061303177973394296f,
                                  0.007277296138098336f};
  vec small = x + x * polynomial(x * x, small_p, 7);
  vec size = blend(x < 0.0f, -x, x);
  vec capped = blend(size < 4.0f, size, splat(4.0f));
  vec inverse = 1.0f / blend(capped > 1.0f, capped, splat(1.0f));
  vec positive = 1.0f - exp_negative(-(capped * capped)) * polynomial(inverse, large_p, 9);
  vec large = blend(x < 0.0f, -positive, positive);
  return blend(size < 1.0f, small, large);
}

/* relay.nn.gelu (erf form): y / 2 (1 + erf(y / sqrt 2)). */
static inline vec gelu_vector(vec y) {
  return y * 0.5f * (1.0f + erf_vector(y * 0.70710678118654752f));
}

static inline float act_scalar(const epilogue *e, float y) {
  if (e->activation == BYOC_RT_RELU)
    return y < 0.0f ? 0.0f : y; /* keeps NaN, as relay's max(x, 0) */
  if (e->activation == BYOC_RT_CLIP) {
    y = y < e->low ? e->low : y;
    return y > e->high ? e->high : y;
  }
  if (e->activation == BYOC_RT_GELU)
    return gelu_vector(splat(y))[0];
  return y;
}

static inline vec act_vector(const epilogue *e, vec y) {
  if (e->activation == BYOC_RT_RELU)
    return blend(y < 0.0f, splat(0.0f), y);
  if (e->activation == BYOC_RT_CLIP) {
    y = blend(y < e->low, splat(e->low), y);
    return blend(y > e->high, splat(e->high), y);
  }
  if (e->activation == BYOC_RT_GELU)
    return gelu_vector(y);
  return y;
}

static inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* At least `floats` floats of the calling thread's scratch, 64-byte aligned
 * (NULL if out of memory), kept for the thread's next call and freed when it
 * ends. A kernel that holds its caller's scratch during a parallel loop must
 * not let the loop's tasks use theirs: the caller runs tasks too. */
BYOC_HIDDEN float *byoc_thread_scratch(size_t floats);

/* The same, a second buffer, for a parallel loop's tasks (which may run on
 * the thread whose kernel holds byoc_thread_scratch's); a task must not call a
 * parallel loop while it holds it. */
BYOC_HIDDEN float *byoc_task_scratch(size_t floats);

/* Softmax of the `n` floats at x into y (may be x): softmax.c. */
BYOC_HIDDEN void byoc_softmax_row(const float *x, float *y, int64_t n);
/* The same of x + mask (mask NULL: of x): softmax.c. */
BYOC_HIDDEN void byoc_softmax_row_masked(const float *x, const float *mask, float *y, int64_t n);

#endif
