/* The process's one pool of threads for generated code (see byoc_runtime.h).
 *
 * Why not OpenMP: a GNU OpenMP loop ends in a barrier every thread of the
 * team must reach, so when the machine is busy and one thread is not
 * scheduled, the loop waits for it a whole time slice (a 1024x1024 add went
 * from 0.44 ms to 15.9 ms beside one busy process); and its idle threads spin
 * for a long time (GOMP_SPINCOUNT, read once when libgomp loads). Here a loop
 * is a counter of chunks: whoever runs claims the next chunk, the caller
 * included, and the caller waits only for chunks already claimed.
 *
 * A job is published as (task, context, count) plus a 64-bit `state` holding
 * the job's generation (high half) and the next unclaimed chunk (low half). A
 * chunk is claimed by a compare-and-swap of `state`, so a worker that read an
 * older job's task can never run a chunk of a newer one: the generation in
 * `state` no longer matches and its swap fails.
 */
#define _GNU_SOURCE
#include "byoc_runtime.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256

/* How long a worker keeps looking for the next loop before it sleeps. A
 * model's loops follow each other within microseconds, but the host's ops
 * between two of them (BERT's softmax, ShuffleNet's pooling) take up to about
 * 330 us on one core: a worker that slept meanwhile joins the next loop
 * 20-25 us late (a futex wake and an idle vCPU's), most of a 30 us loop. After
 * a model's last loop the workers give the cores back within this time. */
#define SPIN_NANOSECONDS 400000L

/* A worker that finds, between two looks at the clock while spinning, that
 * this much time went by was not running: something else wants its core (a
 * busy machine). It then sleeps at once, and for a while spins only briefly
 * after each loop rather than against that work; woken, it preempts it for
 * the next loop. */
#define PREEMPTED_NANOSECONDS 100000L
#define CONTENDED_NANOSECONDS 20000000L
#define CONTENDED_SPIN_NANOSECONDS 20000L /* still bridges back-to-back loops */

/* A spinning worker gives its core away this often (sched_yield): when the OS
 * put it on its caller's core (the other core busy), the caller runs again
 * at once instead of waiting for the end of the worker's time slice. Its
 * caller ran none of one loop's chunks on a busy machine, held off its core
 * for the whole loop and the worker's spin after it (a 0.33 ms MLP call took
 * 1.3 ms). Had something else run meanwhile for over PREEMPTED_NANOSECONDS,
 * the worker counts itself preempted. Nothing else runnable: the call
 * returns at once (about 0.3 us). */
#define YIELD_NANOSECONDS 20000L

/* A worker that finds itself on the core its caller last started a loop on
 * moves to another core it may run on (at most this often, should the OS move
 * it back): the two would take turns on one core while the other idles. After
 * a pause (a worker asleep for over ~10 ms) this VM's scheduler woke the
 * worker on its waker's core 39 times in 40, where it waited for the caller's
 * time slice to end: the MLP's first loop after a pause ran on the caller
 * alone, late, and backed off. */
#define MOVE_NANOSECONDS 1000000L

/* A caller that wakes workers asleep for over this long first takes its own
 * core from the cores they may use, until they are up (they then take all
 * again): this VM's scheduler treats an idle vCPU as busy after about a
 * millisecond (the host has descheduled it), and woke a pthread on its
 * waker's core 34-38 times in 40 after 10-100 ms of sleep, 0-2 times when its
 * waker had narrowed it (a C test; 10-17 us for the sched_setaffinity). There
 * a worker either preempted its caller or waited for the caller's time slice
 * (4 ms). */
#define STEER_AFTER_NANOSECONDS 1000000L

/* A worker that has run this long without a break (a sleep or a yield) gives
 * its core away before its next chunk (see run_chunks). Two threads that
 * shared a core here ran 3-4 ms each in turn (a 4 ms tick; 0.75 ms at the
 * least), so a worker that ran less is rarely preempted inside a chunk. */
#define RUN_NANOSECONDS 1000000L

/* A loop that held its caller up, waiting for a chunk a worker held, this
 * much longer than two of the caller's own chunks had a worker the OS did not
 * run; so does a loop that starts while a worker woken this long ago has not
 * yet left its sleep (on a loaded machine a woken worker missed 4.8 of the QDQ
 * CNN's 4.9 loops a call, each paying a futex wake for nothing). The caller
 * then runs its next loops alone (that one too), BACKOFF_MIN_LOOPS of them,
 * doubled on every late loop up to BACKOFF_MAX_LOOPS, back to the minimum
 * after a loop a worker took part in without holding the caller up; and never
 * for longer than BACKOFF_MAX_NANOSECONDS after the late loop, so a machine
 * that is quiet again gets its workers back. A busy machine then costs a loop
 * at most one wait for a preempted worker's chunk per while. The back-off
 * counts loops, not time, so it scales with the model: a fixed 2 ms covered
 * six calls of a 0.33 ms MLP (two loops a call), now one.
 *
 * A worker that joins a loop late (or not at all) costs its caller nothing:
 * the caller claims the chunks meanwhile, and workers give their core away
 * between chunks, not inside one (see run_chunks). Backing off for it only
 * kept the worker out of the next loops: beside one busy process BERT's
 * caller ran most loops alone, at its 1-thread speed, and a woken worker that
 * an idle vCPU ran 0.6 ms late made the 2-thread MLP back off too. */
#define LATE_NANOSECONDS 250000L
#define BACKOFF_MIN_LOOPS 2
#define BACKOFF_MAX_LOOPS 256
#define BACKOFF_MAX_NANOSECONDS 64000000L

/* Chunks a thread claims at once run about this long (as its last claim's
 * took), and at most 1 / (2 x threads) of the chunks left, so the last claims
 * are single chunks and the threads end together. A claim is a compare-and-
 * swap on a line every thread claims from: 60-100 ns when the line comes from
 * the other core, as long as a chunk of ShuffleNet's depthwise convs (a 14x14
 * plane, 0.2 us). Claimed one at a time, 272 chunks of 0.3 us took 71 us at
 * best on 2 threads, 85 us on one (now 50 us); a worker preempted holding a
 * claim holds its caller up for at most this long and its current chunk.
 * $BYOC_POOL_BATCH_US replaces it (see batch_nanoseconds). */
#define BATCH_NANOSECONDS 2000L

/* A test's build of this file names a function its loops' callers run between
 * publishing a loop and waking the sleeping workers, to hold a caller there
 * as a busy machine may (tests/test_libbyoc.py); libbyoc's build names none. */
#ifdef BYOC_RT_TEST_AFTER_PUBLISH
void BYOC_RT_TEST_AFTER_PUBLISH(void);
#endif

typedef struct pool {
  pthread_mutex_t lock;
  pthread_cond_t wake;
  /* Each on a line of its own: the threads claim chunks from `state`, count
   * the chunks they ran in `done`, which the caller reads waiting, and the
   * rest is read once a loop. */
  _Alignas(64) _Atomic uint64_t state; /* generation << 32 | next chunk */
  _Alignas(64) _Atomic int64_t done;
  _Alignas(64) _Atomic(byoc_rt_task) task;
  _Atomic(void *) context;
  _Atomic int64_t count;
  _Atomic int busy;
  _Atomic int sleepers;
  _Atomic int joining; /* workers that take part in the current loop */
  _Atomic int32_t threads;
  _Atomic int caller_cpu; /* the core the latest loop started on (-1: unknown) */
  _Atomic int64_t first_claim; /* when a worker first claimed a chunk of this loop */
  int started;
  /* Loops still to run on their caller alone, but only until `alone_until`
   * (workers were late), and how many the next late loop makes (written by
   * the thread holding `busy`; a new thread count clears both counts). */
  _Atomic int64_t alone_left;
  _Atomic int64_t alone_until;
  _Atomic int64_t backoff;
  /* When a worker last fell asleep. */
  _Atomic int64_t slept_at;
  /* When the oldest wake-up no worker has answered yet was sent (0: none). */
  _Atomic int64_t woken_at;
  /* When a caller backing off last ran a loop alone (INT64_MAX while it runs
   * one): workers keep spinning meanwhile (see worker()). */
  _Atomic int64_t alone_at;
  _Atomic int64_t stats[BYOC_RT_STATS];
} pool;

static pool the_pool = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .caller_cpu = -1,
};

static void relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000L + t.tv_nsec;
}

static uint32_t generation(uint64_t state) { return (uint32_t)(state >> 32); }

static void count(pool *p, int which, int64_t amount) {
  atomic_fetch_add_explicit(&p->stats[which], amount, memory_order_relaxed);
}

/* Environment variable `name`, in microseconds (0 to 1000000), as
 * nanoseconds, else `fallback`; read once into `*cache` (-1 until then). */
static int64_t microseconds_setting(const char *name, _Atomic int64_t *cache, int64_t fallback) {
  int64_t ns = atomic_load_explicit(cache, memory_order_relaxed);
  if (ns < 0) {
    const char *text = getenv(name);
    char *end = NULL;
    long us = text == NULL ? -1 : strtol(text, &end, 10);
    ns = us >= 0 && us <= 1000000 && end != text && *end == '\0' ? us * 1000L : fallback;
    atomic_store_explicit(cache, ns, memory_order_relaxed);
  }
  return ns;
}

/* $BYOC_POOL_BATCH_US replaces BATCH_NANOSECONDS (0: a chunk a claim); read
 * once, at the first claim. */
static int64_t batch_nanoseconds(void) {
  static _Atomic int64_t batch = -1;
  return microseconds_setting("BYOC_POOL_BATCH_US", &batch, BATCH_NANOSECONDS);
}

/* Run chunks of job `gen` until none is left (or the job is no longer `gen`);
 * returns how many this thread ran. A claim takes a run of chunks
 * (BATCH_NANOSECONDS), the first a single one. A worker (`running`: since
 * when it has run without a break) gives its core away between two claims
 * once it has run RUN_NANOSECONDS: on a busy core the OS then runs the other
 * work while the worker holds no chunk, rather than preempt it inside one,
 * which held the caller up until the worker ran again (a time slice). */
static int64_t run_chunks(pool *p, uint32_t gen, int64_t *running) {
  byoc_rt_task task = atomic_load_explicit(&p->task, memory_order_relaxed);
  void *context = atomic_load_explicit(&p->context, memory_order_relaxed);
  int64_t chunks = atomic_load_explicit(&p->count, memory_order_relaxed);
  int64_t share = 2 * ((int64_t)atomic_load_explicit(&p->joining, memory_order_relaxed) + 1);
  uint64_t state = atomic_load_explicit(&p->state, memory_order_acquire);
  int64_t ran = 0, batch = 1, claims = 0, now = now_ns(), target = batch_nanoseconds();
  for (;;) {
    int64_t next = (int64_t)(uint32_t)state;
    if (generation(state) != gen || next >= chunks) {
      if (claims > 0)
        count(p, BYOC_RT_STAT_CLAIMS, claims);
      return ran;
    }
    if (running != NULL && now - *running > RUN_NANOSECONDS) {
      sched_yield();
      now = *running = now_ns();
      count(p, BYOC_RT_STAT_BREAKS, 1);
      state = atomic_load_explicit(&p->state, memory_order_acquire);
      continue;
    }
    int64_t claim = batch < chunks - next ? batch : chunks - next;
    if (atomic_compare_exchange_weak_explicit(&p->state, &state, state + (uint64_t)claim,
                                              memory_order_acquire,
                                              memory_order_acquire)) {
      if (running != NULL && ran == 0) {
        int64_t unset = 0;
        atomic_compare_exchange_strong(&p->first_claim, &unset, now);
      }
      for (int64_t i = next; i < next + claim; i++)
        task(context, i);
      atomic_fetch_add_explicit(&p->done, claim, memory_order_release);
      ran += claim;
      claims++;
      int64_t then = now;
      now = now_ns();
      int64_t each = (now - then) / claim, left = (chunks - next - claim) / share;
      batch = each > 0 ? target / each : target;
      batch = batch > left ? left : batch;
      batch = batch < 1 ? 1 : batch;
      state = atomic_load_explicit(&p->state, memory_order_acquire);
    }
  }
}

/* The generation each worker was started in: it joins the loops after it. */
static uint32_t started_in[MAX_THREADS];

/* Each worker's thread, the cores it may run on (both set when it starts),
 * and whether a caller has taken its own core from them (see
 * STEER_AFTER_NANOSECONDS). */
static _Atomic pid_t worker_tid[MAX_THREADS];
static cpu_set_t worker_cpus[MAX_THREADS];
static _Atomic int steered[MAX_THREADS];

/* The cores worker `id` may run on without `cpu`, if it may run on `cpu` and
 * on another; else 0. */
static int cpus_without(int id, int cpu, cpu_set_t *others) {
  if (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &worker_cpus[id]))
    return 0;
  *others = worker_cpus[id];
  CPU_CLR(cpu, others);
  return CPU_COUNT(others) > 0;
}

/* Takes the caller's core `cpu` from the cores of workers [0, n) before it
 * wakes them. */
static void steer_workers(pool *p, int n, int cpu) {
  for (int id = 0; id < n; id++) {
    pid_t tid = atomic_load_explicit(&worker_tid[id], memory_order_acquire);
    cpu_set_t others;
    if (tid == 0 || !cpus_without(id, cpu, &others))
      continue;
    /* Flagged after: a worker that unsteers before the flag keeps the narrow
     * cores only until it next joins a loop or wakes. */
    if (sched_setaffinity(tid, sizeof others, &others) == 0) {
      atomic_store(&steered[id], 1);
      count(p, BYOC_RT_STAT_STEERS, 1);
    }
  }
}

/* A worker a caller steered may run on all its cores again (it stays where it
 * is). */
static void unsteer(int id) {
  if (atomic_load_explicit(&steered[id], memory_order_relaxed) &&
      atomic_exchange(&steered[id], 0))
    sched_setaffinity(0, sizeof worker_cpus[id], &worker_cpus[id]);
}

/* $BYOC_POOL_SPIN_US (microseconds, 0 to 1000000) replaces SPIN_NANOSECONDS
 * (to measure other spins); read once, when the first worker starts. */
static int64_t spin_nanoseconds(void) {
  static _Atomic int64_t spin = -1;
  return microseconds_setting("BYOC_POOL_SPIN_US", &spin, SPIN_NANOSECONDS);
}

/* Moves worker `id` off the core its caller last used, if it is on it and may
 * run elsewhere: its cores without that one, then all of them again (which
 * leaves it where it is). Returns whether it moved. */
static int leave_callers_core(pool *p, int id) {
  int cpu = atomic_load_explicit(&p->caller_cpu, memory_order_relaxed);
  cpu_set_t others;
  if (sched_getcpu() != cpu || !cpus_without(id, cpu, &others))
    return 0;
  if (sched_setaffinity(0, sizeof others, &others) != 0)
    return 0;
  sched_setaffinity(0, sizeof worker_cpus[id], &worker_cpus[id]);
  atomic_store(&steered[id], 0);
  count(p, BYOC_RT_STAT_MOVES, 1);
  return 1;
}

/* A worker spins while loops may follow: until `spin` after the last loop it
 * saw, and while a caller backing off runs loops alone. The back-off ends
 * with a loop on the pool; a worker that slept meanwhile must be woken for
 * it, and a wake-up that comes late (an idle vCPU can take over 0.6 ms to
 * run again) makes that loop late too, so the back-off doubles and the worker
 * sleeps through it again: bench/models.py's MLP at 2 threads ran whole
 * rounds at its 1-thread speed that way on a quiet machine. A busy machine
 * preempts the spinning worker, which then stops spinning (calm_until). */
static void *worker(void *arg) {
  pool *p = &the_pool;
  int id = (int)(intptr_t)arg;
  uint32_t seen = started_in[id];
  if (sched_getaffinity(0, sizeof worker_cpus[id], &worker_cpus[id]) != 0)
    CPU_ZERO(&worker_cpus[id]); /* never steered nor moved */
  atomic_store_explicit(&worker_tid[id], gettid(), memory_order_release);
  int64_t spin = spin_nanoseconds();
  int64_t calm_until = 0; /* spin briefly before then: the core is contended */
  int64_t moved_at = INT64_MIN / 2;
  int64_t running = now_ns(); /* since when this worker runs without a break */
  for (;;) {
    int64_t last = now_ns();
    int64_t deadline = last + (last < calm_until ? CONTENDED_SPIN_NANOSECONDS : spin);
    int64_t yielded = last;
    int spins = 0;
    uint64_t state;
    while (generation(state = atomic_load(&p->state)) == seen) {
      relax();
      if (++spins < 64)
        continue;
      spins = 0;
      int64_t now = now_ns();
      if (now - last > PREEMPTED_NANOSECONDS) {
        calm_until = now + CONTENDED_NANOSECONDS;
        count(p, BYOC_RT_STAT_PREEMPTED, 1);
      } else {
        if (now >= deadline && now >= calm_until) {
          int64_t alone = atomic_load_explicit(&p->alone_at, memory_order_relaxed);
          if (alone > now - spin)
            deadline = alone == INT64_MAX ? now + spin : alone + spin;
        }
        if (now < deadline) {
          last = now;
          if (now - moved_at > MOVE_NANOSECONDS && leave_callers_core(p, id))
            last = moved_at = now_ns();
          if (now - yielded > YIELD_NANOSECONDS) {
            sched_yield(); /* `last` stays: a long yield was a preemption */
            yielded = running = now;
          }
          continue;
        }
      }
      pthread_mutex_lock(&p->lock);
      atomic_fetch_add(&p->sleepers, 1);
      atomic_store_explicit(&p->slept_at, now, memory_order_relaxed);
      count(p, BYOC_RT_STAT_SLEEPS, 1);
      while (generation(atomic_load(&p->state)) == seen) {
        pthread_cond_wait(&p->wake, &p->lock);
        /* Woken for a loop it had already seen, it sleeps on, but it has
         * answered the wake-up. That happens when the worker joins a loop
         * between its caller publishing it and waking the sleepers (the
         * caller preempted there: a busy machine) and falls asleep before
         * the wake. Left set, `woken_at` made every later loop of the process
         * back off for a worker that no loop woke again: they all ran on
         * their caller alone (a test's loop retried alone for its minute). */
        if (generation(atomic_load(&p->state)) == seen)
          atomic_store_explicit(&p->woken_at, 0, memory_order_relaxed);
      }
      atomic_fetch_sub(&p->sleepers, 1);
      int64_t woken = atomic_exchange_explicit(&p->woken_at, 0, memory_order_relaxed);
      pthread_mutex_unlock(&p->lock);
      unsteer(id);
      last = yielded = running = now_ns();
      if (woken != 0 && last > woken)
        count(p, BYOC_RT_STAT_WAKE_NS, last - woken);
      if (last - moved_at > MOVE_NANOSECONDS && leave_callers_core(p, id))
        last = yielded = moved_at = now_ns();
      deadline = last + (last < calm_until ? CONTENDED_SPIN_NANOSECONDS : spin);
    }
    seen = generation(state);
    if (id < atomic_load(&p->joining)) {
      unsteer(id);
      int64_t now = now_ns();
      if (now - moved_at > MOVE_NANOSECONDS && leave_callers_core(p, id))
        moved_at = running = now_ns();
      int64_t ran = run_chunks(p, seen, &running);
      if (ran > 0)
        count(p, BYOC_RT_STAT_WORKER_CHUNKS, ran);
      /* Its caller ran none of the loop's chunks: it was not running, maybe
       * because this worker took its core. Leave that core at once and spin
       * only briefly for a while. */
      if (ran > 1 && ran == atomic_load_explicit(&p->count, memory_order_relaxed) &&
          generation(atomic_load(&p->state)) == seen) {
        calm_until = now_ns() + CONTENDED_NANOSECONDS;
        count(p, BYOC_RT_STAT_CALLER_AWAY, 1);
        sched_yield();
        running = now_ns();
      }
    }
  }
  return NULL;
}

/* $BYOC_POOL_BACKOFF=0 keeps every loop on the pool however late its workers
 * (to measure the fall-back); read once, at the first late loop. */
static int backoff_enabled(void) {
  static _Atomic int enabled = -1;
  int e = atomic_load_explicit(&enabled, memory_order_relaxed);
  if (e < 0) {
    const char *text = getenv("BYOC_POOL_BACKOFF");
    e = text == NULL || strcmp(text, "0") != 0;
    atomic_store_explicit(&enabled, e, memory_order_relaxed);
  }
  return e;
}

/* Workers were late at `now`: run the next loops alone (see LATE_NANOSECONDS). */
static void back_off(pool *p, int64_t now) {
  count(p, BYOC_RT_STAT_LATE, 1);
  if (!backoff_enabled())
    return;
  int64_t backoff = atomic_load_explicit(&p->backoff, memory_order_relaxed) * 2;
  backoff = backoff < BACKOFF_MIN_LOOPS   ? BACKOFF_MIN_LOOPS
            : backoff > BACKOFF_MAX_LOOPS ? BACKOFF_MAX_LOOPS
                                          : backoff;
  atomic_store_explicit(&p->backoff, backoff, memory_order_relaxed);
  atomic_store_explicit(&p->alone_until, now + BACKOFF_MAX_NANOSECONDS, memory_order_relaxed);
  atomic_store_explicit(&p->alone_left, backoff, memory_order_relaxed);
}

static int32_t default_threads(void) {
  const char *names[] = {"BYOC_NUM_THREADS", "OMP_NUM_THREADS"};
  for (int i = 0; i < 2; i++) {
    const char *text = getenv(names[i]);
    if (text != NULL) {
      long n = strtol(text, NULL, 10);
      if (n >= 1)
        return n > MAX_THREADS ? MAX_THREADS : (int32_t)n;
    }
  }
  cpu_set_t cpus;
  if (sched_getaffinity(0, sizeof cpus, &cpus) == 0) {
    int n = CPU_COUNT(&cpus);
    if (n >= 1)
      return n > MAX_THREADS ? MAX_THREADS : n;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int32_t)n;
}

int32_t byoc_rt_num_threads(void) {
  int32_t n = atomic_load(&the_pool.threads);
  if (n == 0) {
    n = default_threads();
    int32_t expected = 0;
    if (!atomic_compare_exchange_strong(&the_pool.threads, &expected, n))
      n = expected;
  }
  return n;
}

void byoc_rt_set_num_threads(int32_t n) {
  atomic_store(&the_pool.threads, n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : n);
  atomic_store(&the_pool.alone_left, 0); /* try the workers again */
  atomic_store(&the_pool.backoff, 0);
}

/* Start workers until `wanted` run; fewer if the system refuses threads. */
static int start_workers(pool *p, int wanted) {
  while (p->started < wanted) {
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    started_in[p->started] = generation(atomic_load(&p->state));
    int failed = pthread_create(&thread, &attr, worker, (void *)(intptr_t)p->started);
    pthread_attr_destroy(&attr);
    if (failed)
      break;
    p->started++;
  }
  return p->started;
}

static void run_inline(int64_t n, byoc_rt_task task, void *context) {
  for (int64_t i = 0; i < n; i++)
    task(context, i);
}

/* Releases the pool this loop took and runs the loop on the caller alone;
 * one run under the back-off (`backed_off`) uses up one of its loops. */
static void release_and_run_alone(pool *p, int backed_off, int64_t n, byoc_rt_task task,
                                  void *context) {
  if (backed_off)
    atomic_fetch_sub_explicit(&p->alone_left, 1, memory_order_relaxed);
  atomic_store_explicit(&p->busy, 0, memory_order_release);
  count(p, BYOC_RT_STAT_ALONE, 1);
  if (backed_off) {
    count(p, BYOC_RT_STAT_BACKED_OFF, 1);
    atomic_store_explicit(&p->alone_at, INT64_MAX, memory_order_relaxed);
  }
  run_inline(n, task, context);
  if (backed_off)
    atomic_store_explicit(&p->alone_at, now_ns(), memory_order_relaxed);
}

void byoc_rt_parallel_for(int64_t n, byoc_rt_task task, void *context) {
  pool *p = &the_pool;
  int32_t threads = byoc_rt_num_threads();
  if (n <= 1 || threads <= 1 || n > (int64_t)UINT32_MAX ||
      atomic_exchange_explicit(&p->busy, 1, memory_order_acquire)) {
    count(p, BYOC_RT_STAT_ALONE, 1);
    run_inline(n, task, context);
    return;
  }
  int64_t wanted = n - 1 < threads - 1 ? n - 1 : threads - 1;
  int workers = start_workers(p, (int)wanted);
  if (workers == 0) {
    release_and_run_alone(p, 0, n, task, context);
    return;
  }
  int64_t start = now_ns();
  if (atomic_load_explicit(&p->alone_left, memory_order_relaxed) > 0) {
    if (start < atomic_load_explicit(&p->alone_until, memory_order_relaxed)) {
      release_and_run_alone(p, 1, n, task, context);
      return;
    }
    atomic_store_explicit(&p->alone_left, 0, memory_order_relaxed);
  }
  int64_t woken = atomic_load_explicit(&p->woken_at, memory_order_relaxed);
  if (woken != 0 && start - woken > LATE_NANOSECONDS && atomic_load(&p->sleepers) > 0 &&
      backoff_enabled()) {
    back_off(p, start);
    release_and_run_alone(p, 1, n, task, context);
    return;
  }
  atomic_store_explicit(&p->joining, workers < wanted ? workers : (int)wanted,
                        memory_order_relaxed);
  atomic_store_explicit(&p->task, task, memory_order_relaxed);
  atomic_store_explicit(&p->context, context, memory_order_relaxed);
  atomic_store_explicit(&p->count, n, memory_order_relaxed);
  atomic_store_explicit(&p->done, 0, memory_order_relaxed);
  atomic_store_explicit(&p->first_claim, 0, memory_order_relaxed);
  atomic_store_explicit(&p->caller_cpu, sched_getcpu(), memory_order_relaxed);
  uint64_t state = atomic_load(&p->state);
  uint32_t gen = generation(state) + 1;
  atomic_store(&p->state, (uint64_t)gen << 32);
#ifdef BYOC_RT_TEST_AFTER_PUBLISH
  BYOC_RT_TEST_AFTER_PUBLISH();
#endif
  if (atomic_load(&p->sleepers) > 0) {
    count(p, BYOC_RT_STAT_WAKES, 1);
    if (start - atomic_load_explicit(&p->slept_at, memory_order_relaxed) > STEER_AFTER_NANOSECONDS)
      steer_workers(p, atomic_load_explicit(&p->joining, memory_order_relaxed),
                    atomic_load_explicit(&p->caller_cpu, memory_order_relaxed));
    pthread_mutex_lock(&p->lock);
    /* Under the lock a sleeper is inside pthread_cond_wait, and clears this
     * (under the lock) when it wakes. */
    if (atomic_load(&p->sleepers) > 0 && atomic_load_explicit(&p->woken_at, memory_order_relaxed) == 0)
      atomic_store_explicit(&p->woken_at, start, memory_order_relaxed);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->lock);
  }
  int64_t ran = run_chunks(p, gen, NULL);
  /* Only chunks already claimed are outstanding: their threads are running. */
  int64_t waiting = 0;
  if (atomic_load_explicit(&p->done, memory_order_acquire) < n) {
    waiting = now_ns();
    int spins = 0;
    while (atomic_load_explicit(&p->done, memory_order_acquire) < n) {
      relax();
      if (++spins >= 1024) {
        spins = 0;
        sched_yield();
      }
    }
  }
  int64_t end = now_ns(), first = atomic_load(&p->first_claim);
  int64_t own = (waiting ? waiting : end) - start; /* the caller running chunks */
  if (waiting && ran > 0 && end - waiting > 2 * own / ran + LATE_NANOSECONDS) {
    back_off(p, end);
  } else if (ran < n) {
    atomic_store_explicit(&p->backoff, 0, memory_order_relaxed);
  }
  atomic_store_explicit(&p->busy, 0, memory_order_release);
  count(p, BYOC_RT_STAT_LOOPS, 1);
  count(p, BYOC_RT_STAT_CHUNKS, n);
  count(p, BYOC_RT_STAT_LOOP_NS, end - start);
  if (waiting)
    count(p, BYOC_RT_STAT_WAIT_NS, end - waiting);
  if (ran == n)
    count(p, BYOC_RT_STAT_MISSED, 1);
  else if (first > start)
    count(p, BYOC_RT_STAT_LATE_NS, first - start);
}

void byoc_rt_pool_stats(int64_t *out, int32_t size) {
  for (int i = 0; i < size && i < BYOC_RT_STATS; i++)
    out[i] = atomic_load_explicit(&the_pool.stats[i], memory_order_relaxed);
}

/* After fork() the child has none of the workers: forget them (new ones start
 * when the child runs a loop) and any loop that was running in the parent. */
static void forget_workers(void) {
  pool *p = &the_pool;
  pthread_mutex_init(&p->lock, NULL);
  pthread_cond_init(&p->wake, NULL);
  p->started = 0;
  for (int id = 0; id < MAX_THREADS; id++) {
    atomic_store(&worker_tid[id], 0);
    atomic_store(&steered[id], 0);
  }
  atomic_store(&p->sleepers, 0);
  atomic_store(&p->busy, 0);
  atomic_store(&p->alone_left, 0);
  atomic_store(&p->backoff, 0);
  atomic_store(&p->woken_at, 0);
}

__attribute__((constructor)) static void byoc_rt_threads_init(void) {
  pthread_atfork(NULL, NULL, forget_workers);
}
