/* Per-thread scratch memory of libbyoc's kernels (see kernels.h). */
#define _GNU_SOURCE
#include "kernels.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

typedef struct buffer {
  float *data;
  size_t floats;
} buffer;

/* A thread's two buffers: its kernels' (byoc_thread_scratch) and its
 * parallel tasks' (byoc_task_scratch), which a caller's kernel holds while it
 * runs tasks itself. */
typedef struct scratch {
  buffer kernel, task;
} scratch;

static void free_scratch(void *p) {
  scratch *s = p;
  free(s->kernel.data);
  free(s->task.data);
  free(s);
}

static void make_scratch_key(void) { pthread_key_create(&scratch_key, free_scratch); }

static float *grow(buffer *b, size_t floats) {
  if (b->floats < floats) {
    size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
    float *data = aligned_alloc(64, bytes);
    if (data == NULL)
      return NULL;
    free(b->data);
    b->data = data;
    b->floats = floats;
  }
  return b->data;
}

static scratch *thread_scratch(void) {
  pthread_once(&scratch_once, make_scratch_key);
  scratch *s = pthread_getspecific(scratch_key);
  if (s == NULL) {
    s = calloc(1, sizeof *s);
    if (s == NULL || pthread_setspecific(scratch_key, s) != 0) {
      free(s);
      return NULL;
    }
  }
  return s;
}

float *byoc_thread_scratch(size_t floats) {
  scratch *s = thread_scratch();
  return s == NULL ? NULL : grow(&s->kernel, floats);
}

float *byoc_task_scratch(size_t floats) {
  scratch *s = thread_scratch();
  return s == NULL ? NULL : grow(&s->task, floats);
}

