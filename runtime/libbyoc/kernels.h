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

static inline float act_scalar(const epilogue *e, float y) {
  if (e->activation == BYOC_RT_RELU)
    return y < 0.0f ? 0.0f : y; /* keeps NaN, as relay's max(x, 0) */
  if (e->activation == BYOC_RT_CLIP) {
    y = y < e->low ? e->low : y;
    return y > e->high ? e->high : y;
  }
  return y;
}

static inline vec blend(mask m, vec yes, vec no) {
  return (vec)(((mask)yes & m) | ((mask)no & ~m));
}

static inline vec act_vector(const epilogue *e, vec y) {
  if (e->activation == BYOC_RT_RELU)
    return blend(y < 0.0f, splat(0.0f), y);
  if (e->activation == BYOC_RT_CLIP) {
    y = blend(y < e->low, splat(e->low), y);
    return blend(y > e->high, splat(e->high), y);
  }
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

#endif
