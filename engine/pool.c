/* pool.c — see pool.h. A loop is published as a job with a generation
 * number; the caller takes part as worker 0 and waits until every worker
 * has finished its share.
 *
 * Between loops a worker spins for POOL_SPIN_NS on the generation before
 * it sleeps on a condition variable, and the caller spins as long on the
 * workers' count before it sleeps: a call made of several short loops (a
 * table pass, then the rows; rgc on one small frame runs three) then pays
 * no futex wake-up and reschedule per loop, 20-40 us each on this VM,
 * which made about a fifth of a 150 us call. Where threads outnumber
 * cores (two ranks or two engines on two cores) a spin takes a core from
 * threads with work: a spin yields the core after its first pauses, and
 * one that got less than half of its wall in CPU (the core was wanted
 * elsewhere) makes the next POOL_CALM waits sleep at once, as before the
 * spin (spinning without either made two such processes' small rgc calls
 * 3x slower). A sleeper is woken only when one is registered: the
 * counters are sequentially consistent atomics, read after the store that
 * the other side reads (gen before sleepers, finished before caller_asleep),
 * so no wake-up is lost.
 *
 * A worker joins a loop by taking a seat (seat_take) before it touches the
 * job; when the caller has done its share it closes the seats, and a
 * worker that arrives later leaves the loop alone. The caller then waits
 * only for those seated, and runs the static parts no one took itself:
 * a worker asleep when the loop began (a core that the host had given
 * away) costs the loop nothing. On this 2-vCPU VM a worker's first
 * wake-up in a process took 0.3-2.3 ms in about a third of processes,
 * which every loop of 0.1-0.2 ms waited out (rgc on a calibration slice:
 * 0.12 ms on one thread, 0.17-2.5 ms on two).
 *
 * On Linux the workers are kept off the CPU the caller runs on
 * (keep_off_caller), while the caller's CPUs outnumber the workers: a
 * sleeping worker is woken where the kernel sees fit, often on the
 * waker's own CPU (its wake-up placement prefers the waker's cache),
 * where it cannot run before the caller is done with its share, and the
 * loop ran on one thread. On this 2-vCPU VM a fresh process's small call
 * (roberts_cross on 10 x 256 x 256, 0.4 ms on two threads) ran at its
 * one-thread time, 0.75 ms, in most processes: the worker was seated on
 * the caller's CPU. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getcpu, pthread_{get,set}affinity_np */
#endif
#include "pool.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#if defined(__linux__) && defined(CPU_SET)
#define POOL_AFFINITY 1
#else
#define POOL_AFFINITY 0
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define POOL_RELAX() _mm_pause()
#else
#define POOL_RELAX() ((void)0)
#endif

/* How long an idle worker, or a caller waiting for the workers, spins
 * before it sleeps. */
#define POOL_SPIN_NS 50000

typedef struct job {
  size_t begin, end, chunk;
  qs_schedule sched;
  qs_range_fn body;
  void *ctx;
  atomic_size_t next;   /* dynamic and guided: next unclaimed index */
  atomic_int error;     /* first nonzero body result */
} job;

struct pool {
  int threads;
  pthread_t *workers;
  int n_workers;        /* threads that were actually started */
  pthread_mutex_t mu;   /* guards the sleeps on wake and done */
  pthread_cond_t wake, done;
  pthread_mutex_t serial; /* one loop at a time from outside threads */
  atomic_ulong gen;     /* the job's generation, published last */
  /* The current job's seats: its generation's low 32 bits above
   * SEAT_CLOSED and the count of workers seated (seat_take). */
  atomic_ullong seats;
  atomic_int finished;  /* seated workers done with the current job */
  int seated;           /* seats taken when the caller closed them */
  atomic_int sleepers;  /* workers asleep (or about to be) on wake */
  atomic_int caller_asleep; /* the caller asleep (or about to be) on done */
  atomic_int stop;
  atomic_int calm;      /* waits left that sleep without spinning */
  int avoid;            /* the CPU the workers are kept off (-1: none;
                           under serial) */
  int started;          /* startup: workers that took their id (mu) */
  job *cur;             /* written before gen, read after it */
};

/* Keeps the workers off the CPU the caller runs on, when the caller may
 * run on more CPUs than there are workers: each may then run on any of
 * the caller's CPUs but that one. Only when the caller's CPU changed
 * since the last time (a few syscalls then). Under p->serial. */
static void keep_off_caller(pool *p) {
#if POOL_AFFINITY
  int cpu = sched_getcpu();
  if (cpu < 0 || cpu == p->avoid || p->n_workers < 1) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) ||
      !CPU_ISSET(cpu, &set) || CPU_COUNT(&set) <= p->n_workers)
    return;
  CPU_CLR(cpu, &set);
  for (int i = 0; i < p->n_workers; i++)
    pthread_setaffinity_np(p->workers[i], sizeof set, &set);
  p->avoid = cpu;
#else
  (void)p;
#endif
}

/* One step of a spin: a pause for the first POOL_SPIN_PAUSES, then a
 * yield of the core, so that where threads outnumber cores (two ranks or
 * two engines on two cores) a spinning thread hands its core to one with
 * work instead of holding it for the whole spin. */
#define POOL_SPIN_PAUSES 256
static void pool_relax(unsigned k) {
  if (k < POOL_SPIN_PAUSES)
    POOL_RELAX();
  else
    sched_yield();
}

static int64_t clock_ns(clockid_t id) {
  struct timespec t;
  if (clock_gettime(id, &t)) return 0;
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Waits after a spin that found the cores taken, which sleep at once. */
#define POOL_CALM 64

/* Spins until ready(p, arg) holds or POOL_SPIN_NS pass; whether it holds.
 * While p->calm is set, no spin: only the test. */
static int pool_spin(pool *p, int (*ready)(pool *, unsigned long),
                     unsigned long arg) {
  if (ready(p, arg)) return 1;
  if (atomic_load(&p->calm) > 0) {
    atomic_fetch_sub(&p->calm, 1);
    return 0;
  }
  int64_t t0 = clock_ns(CLOCK_MONOTONIC), until = t0 + POOL_SPIN_NS;
  int64_t c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  int ok = 0;
  for (unsigned k = 0;; k++) {
    if (ready(p, arg)) {
      ok = 1;
      break;
    }
    if ((k & 63) == 63 && clock_ns(CLOCK_MONOTONIC) > until) break;
    pool_relax(k);
  }
  int64_t wall = clock_ns(CLOCK_MONOTONIC) - t0;
  int64_t cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
  if (wall > POOL_SPIN_NS / 4 && 2 * cpu < wall)
    atomic_store(&p->calm, POOL_CALM);
  return ok;
}

/* Set while a thread runs a body, so that nested loops run inline. */
static _Thread_local int in_loop;

int pool_cores(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : (n > QS_MAX_THREADS ? QS_MAX_THREADS : (int)n);
}

static void fail(job *j, int rc) {
  int zero = 0;
  atomic_compare_exchange_strong(&j->error, &zero, rc);
}

static void run_range(job *j, size_t b, size_t e, int w) {
  int rc = j->body(j->ctx, b, e, w);
  if (rc) fail(j, rc);
}

#define SEAT_CLOSED 0x80000000ull
#define SEAT_COUNT 0x7fffffffull

/* Opens the seats of generation g (none taken). */
static unsigned long long seats_open(unsigned long g) {
  return (unsigned long long)(g & 0xffffffffu) << 32;
}

/* A seat at generation g's loop: 1, 2, ... in the order taken; 0 when
 * the caller has closed them (or moved on to a later loop). */
static int seat_take(pool *p, unsigned long g) {
  unsigned long long cur = atomic_load(&p->seats);
  for (;;) {
    if ((cur >> 32) != (g & 0xffffffffu) || (cur & SEAT_CLOSED)) return 0;
    if (atomic_compare_exchange_weak(&p->seats, &cur, cur + 1))
      return (int)(cur & SEAT_COUNT) + 1;
  }
}

/* Part `part` of job j split t ways, run by thread w (the id its body
 * sees, for its scratch): a static schedule's parts are fixed, the others
 * take chunks while any are left. */
static void share(job *j, int part, int w, int t) {
  size_t n = j->end - j->begin;
  size_t c = j->chunk ? j->chunk : 1;
  in_loop = 1;
  switch (j->sched) {
  case QS_SCHED_STATIC:
    if (j->chunk == 0) {
      size_t q = n / (size_t)t, r = n % (size_t)t, uw = (size_t)part;
      size_t b = j->begin + uw * q + (uw < r ? uw : r);
      size_t len = q + (uw < r ? 1 : 0);
      if (len) run_range(j, b, b + len, w);
    } else {
      for (size_t b = j->begin + (size_t)part * c; b < j->end;
           b += (size_t)t * c) {
        if (atomic_load_explicit(&j->error, memory_order_relaxed)) break;
        size_t e = (j->end - b > c) ? b + c : j->end;
        run_range(j, b, e, w);
        if (j->end - b <= (size_t)t * c) break;
      }
    }
    break;
  case QS_SCHED_DYNAMIC:
    for (;;) {
      if (atomic_load_explicit(&j->error, memory_order_relaxed)) break;
      size_t b = atomic_fetch_add(&j->next, c);
      if (b >= j->end || b < j->begin) break; /* b < begin: wrapped */
      size_t e = (j->end - b > c) ? b + c : j->end;
      run_range(j, b, e, w);
    }
    break;
  case QS_SCHED_GUIDED:
  default:
    for (;;) {
      if (atomic_load_explicit(&j->error, memory_order_relaxed)) break;
      size_t b = atomic_load(&j->next), e;
      do {
        if (b >= j->end) goto out;
        size_t left = j->end - b, g = left / (2 * (size_t)t);
        if (g < c) g = c;
        e = left > g ? b + g : j->end;
      } while (!atomic_compare_exchange_weak(&j->next, &b, e));
      run_range(j, b, e, w);
    }
  out:
    break;
  }
  in_loop = 0;
}

/* A new job (or the pool stopping) since generation seen. */
static int job_ready(pool *p, unsigned long seen) {
  return atomic_load(&p->gen) != seen || atomic_load(&p->stop);
}

/* Every seated worker done with the current job. */
static int workers_done(pool *p, unsigned long unused) {
  (void)unused;
  return atomic_load(&p->finished) >= p->seated;
}

/* Waits until the generation moves past seen or the pool stops: spinning
 * first, then asleep on wake. */
static void worker_wait(pool *p, unsigned long seen) {
  if (pool_spin(p, job_ready, seen)) return;
  pthread_mutex_lock(&p->mu);
  atomic_fetch_add(&p->sleepers, 1);
  while (!job_ready(p, seen)) pthread_cond_wait(&p->wake, &p->mu);
  atomic_fetch_sub(&p->sleepers, 1);
  pthread_mutex_unlock(&p->mu);
}

static void *worker_main(void *arg) {
  pool *p = arg;
  pthread_mutex_lock(&p->mu);
  int w = ++p->started; /* startup: each worker takes an id 1..n */
  unsigned long seen = atomic_load(&p->gen);
  pthread_cond_signal(&p->done);
  pthread_mutex_unlock(&p->mu);
  for (;;) {
    worker_wait(p, seen);
    if (atomic_load(&p->stop)) break;
    seen = atomic_load(&p->gen);
    int seat = seat_take(p, seen);
    if (!seat) continue; /* the loop went on without this worker */
    share(p->cur, seat, w, p->threads);
    atomic_fetch_add(&p->finished, 1);
    if (atomic_load(&p->caller_asleep)) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->done);
      pthread_mutex_unlock(&p->mu);
    }
  }
  return NULL;
}

int pool_create(pool **out, int threads) {
  *out = NULL;
  if (threads < 1) threads = 1;
  if (threads > QS_MAX_THREADS) threads = QS_MAX_THREADS;
  pool *p = calloc(1, sizeof *p);
  if (!p) return QS_ENOMEM;
  p->threads = threads;
  atomic_init(&p->gen, 0);
  atomic_init(&p->seats, SEAT_CLOSED);
  atomic_init(&p->finished, 0);
  atomic_init(&p->sleepers, 0);
  atomic_init(&p->caller_asleep, 0);
  atomic_init(&p->stop, 0);
  atomic_init(&p->calm, 0);
  p->avoid = -1;
  pthread_mutex_init(&p->mu, NULL);
  pthread_mutex_init(&p->serial, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  if (threads > 1) {
    p->workers = calloc((size_t)threads - 1, sizeof *p->workers);
    if (!p->workers) {
      pool_destroy(p);
      return QS_ENOMEM;
    }
    /* The workers block the asynchronous signals (they inherit the mask
     * they start with): a program's SIGINT or SIGTERM is taken by one of
     * its own threads, never by a worker while the program's thread goes
     * on (its handler's cleanup would then race the program: a worker
     * still spinning after a loop took a SIGTERM sent to a CLI stopped
     * mid-write, and the main thread renamed the output meanwhile).
     * Faults stay deliverable to the thread that causes them. */
    sigset_t async, was;
    sigfillset(&async);
    static const int sync_sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL,
                                    SIGTRAP, SIGABRT, SIGSYS};
    for (size_t k = 0; k < sizeof sync_sigs / sizeof *sync_sigs; k++)
      sigdelset(&async, sync_sigs[k]);
    int masked = pthread_sigmask(SIG_BLOCK, &async, &was) == 0;
    for (int i = 0; i < threads - 1; i++) {
      if (pthread_create(&p->workers[i], NULL, worker_main, p)) break;
      p->n_workers++;
    }
    if (masked) pthread_sigmask(SIG_SETMASK, &was, NULL);
    /* Wait until every started worker holds its id. */
    pthread_mutex_lock(&p->mu);
    while (p->started < p->n_workers) pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
    if (p->n_workers < threads - 1) {
      pool_destroy(p);
      return QS_ENOMEM;
    }
  }
  *out = p;
  return QS_OK;
}

void pool_destroy(pool *p) {
  if (!p) return;
  pthread_mutex_lock(&p->mu);
  atomic_store(&p->stop, 1);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->n_workers; i++) pthread_join(p->workers[i], NULL);
  free(p->workers);
  pthread_cond_destroy(&p->wake);
  pthread_cond_destroy(&p->done);
  pthread_mutex_destroy(&p->mu);
  pthread_mutex_destroy(&p->serial);
  free(p);
}

int pool_threads(const pool *p) { return p ? p->threads : 1; }

int pool_for(pool *p, size_t begin, size_t end, qs_schedule sched,
             size_t chunk, qs_range_fn body, void *ctx) {
  if (!body) return QS_EINVAL;
  if (end <= begin) return QS_OK;
  if (!p || p->threads == 1 || in_loop || end - begin == 1) {
    int was = in_loop;
    in_loop = 1;
    int rc = body(ctx, begin, end, 0);
    in_loop = was;
    return rc;
  }
  job j = {.begin = begin, .end = end, .chunk = chunk, .sched = sched,
           .body = body, .ctx = ctx};
  atomic_init(&j.next, begin);
  atomic_init(&j.error, 0);
  pthread_mutex_lock(&p->serial);
  keep_off_caller(p);
  p->cur = &j;
  atomic_store(&p->finished, 0);
  atomic_store(&p->seats, seats_open(atomic_load(&p->gen) + 1));
  atomic_fetch_add(&p->gen, 1); /* publishes cur and the seats */
  if (atomic_load(&p->sleepers) > 0) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
  }
  share(&j, 0, 0, p->threads);
  /* no seat after this: the chunks are all taken (dynamic, guided), and
   * the static parts of seats not taken are the caller's */
  p->seated = (int)(atomic_fetch_or(&p->seats, SEAT_CLOSED) & SEAT_COUNT);
  if (sched == QS_SCHED_STATIC)
    for (int part = p->seated + 1; part < p->threads; part++)
      share(&j, part, 0, p->threads);
  if (!pool_spin(p, workers_done, 0)) {
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->caller_asleep, 1);
    while (!workers_done(p, 0)) pthread_cond_wait(&p->done, &p->mu);
    atomic_store(&p->caller_asleep, 0);
    pthread_mutex_unlock(&p->mu);
  }
  p->cur = NULL;
  pthread_mutex_unlock(&p->serial);
  return atomic_load(&j.error);
}

int64_t pool_cpu_ns(const pool *p) {
  int64_t t = clock_ns(CLOCK_THREAD_CPUTIME_ID);
  for (int i = 0; p && i < p->n_workers; i++) {
    clockid_t id;
    if (!pthread_getcpuclockid(p->workers[i], &id)) t += clock_ns(id);
  }
  return t;
}

int64_t pool_process_cpu_ns(void) { return clock_ns(CLOCK_PROCESS_CPUTIME_ID); }
