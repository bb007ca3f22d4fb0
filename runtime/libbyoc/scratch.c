/* Per-thread scratch memory of libbyoc's kernels (see kernels.h). */
#define _GNU_SOURCE
#include "kernels.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

typedef struct scratch {
  float *data;
  size_t floats;
} scratch;

static void free_scratch(void *p) {
  scratch *s = p;
  free(s->data);
  free(s);
}

static void make_scratch_key(void) { pthread_key_create(&scratch_key, free_scratch); }

float *byoc_thread_scratch(size_t floats) {
  pthread_once(&scratch_once, make_scratch_key);
  scratch *s = pthread_getspecific(scratch_key);
  if (s == NULL) {
    s = calloc(1, sizeof *s);
    if (s == NULL || pthread_setspecific(scratch_key, s) != 0) {
      free(s);
      return NULL;
    }
  }
  if (s->floats < floats) {
    size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
    float *data = aligned_alloc(64, bytes);
    if (data == NULL)
      return NULL;
    free(s->data);
    s->data = data;
    s->floats = floats;
  }
  return s->data;
}

