/* pool.c — see pool.h. Workers sleep on a condition variable between loops;
 * a loop is published as a job with a generation number, and the caller
 * waits until every worker has finished its share. */
#include "pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

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
  pthread_mutex_t mu;
  pthread_cond_t wake, done;
  pthread_mutex_t serial; /* one loop at a time from outside threads */
  unsigned long gen;
  int active;           /* workers still in the current job */
  int stop;
  job *cur;
};

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

/* Worker w's share of job j with t threads. */
static void share(job *j, int w, int t) {
  size_t n = j->end - j->begin;
  size_t c = j->chunk ? j->chunk : 1;
  in_loop = 1;
  switch (j->sched) {
  case QS_SCHED_STATIC:
    if (j->chunk == 0) {
      size_t q = n / (size_t)t, r = n % (size_t)t, uw = (size_t)w;
      size_t b = j->begin + uw * q + (uw < r ? uw : r);
      size_t len = q + (uw < r ? 1 : 0);
      if (len) run_range(j, b, b + len, w);
    } else {
      for (size_t b = j->begin + (size_t)w * c; b < j->end;
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

static void *worker_main(void *arg) {
  pool *p = arg;
  pthread_mutex_lock(&p->mu);
  int w = ++p->active; /* startup: each worker takes an id 1..n */
  unsigned long seen = p->gen;
  pthread_cond_signal(&p->done);
  for (;;) {
    while (!p->stop && p->gen == seen) pthread_cond_wait(&p->wake, &p->mu);
    if (p->stop) break;
    seen = p->gen;
    job *j = p->cur;
    pthread_mutex_unlock(&p->mu);
    share(j, w, p->threads);
    pthread_mutex_lock(&p->mu);
    if (--p->active == 0) pthread_cond_signal(&p->done);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

int pool_create(pool **out, int threads) {
  *out = NULL;
  if (threads < 1) threads = 1;
  if (threads > QS_MAX_THREADS) threads = QS_MAX_THREADS;
  pool *p = calloc(1, sizeof *p);
  if (!p) return QS_ENOMEM;
  p->threads = threads;
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
    for (int i = 0; i < threads - 1; i++) {
      if (pthread_create(&p->workers[i], NULL, worker_main, p)) break;
      p->n_workers++;
    }
    /* Wait until every started worker holds its id, then reset. */
    pthread_mutex_lock(&p->mu);
    while (p->active < p->n_workers) pthread_cond_wait(&p->done, &p->mu);
    p->active = 0;
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
  p->stop = 1;
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
  pthread_mutex_lock(&p->mu);
  p->cur = &j;
  p->active = p->n_workers;
  p->gen++;
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  share(&j, 0, p->threads);
  pthread_mutex_lock(&p->mu);
  while (p->active > 0) pthread_cond_wait(&p->done, &p->mu);
  p->cur = NULL;
  pthread_mutex_unlock(&p->mu);
  pthread_mutex_unlock(&p->serial);
  return atomic_load(&j.error);
}

static int64_t cpu_ns(clockid_t id) {
  struct timespec ts;
  if (clock_gettime(id, &ts)) return 0;
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t pool_cpu_ns(const pool *p) {
  int64_t t = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
  for (int i = 0; p && i < p->n_workers; i++) {
    clockid_t id;
    if (!pthread_getcpuclockid(p->workers[i], &id)) t += cpu_ns(id);
  }
  return t;
}

int64_t pool_process_cpu_ns(void) { return cpu_ns(CLOCK_PROCESS_CPUTIME_ID); }
