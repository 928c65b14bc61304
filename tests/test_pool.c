/* test_pool.c — every index visited exactly once for every schedule, size
 * and thread count; back-to-back loops; nesting; errors; many pools; the
 * workers kept off the caller's CPU. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
#define _GNU_SOURCE /* sched_getcpu, pthread_getaffinity_np */
#endif
#include <criterion/criterion.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "pool.h"
#include "qs_test.h"

TestSuite(pool, .fini = qs_leak_check);

typedef struct visit {
  atomic_uchar *seen;
  size_t begin;
  int threads;
  atomic_int bad_worker;
} visit;

static int mark(void *ctx, size_t b, size_t e, int w) {
  visit *v = ctx;
  if (w < 0 || w >= v->threads) atomic_store(&v->bad_worker, 1);
  for (size_t i = b; i < e; i++) atomic_fetch_add(&v->seen[i - v->begin], 1);
  return 0;
}

static void check_once(pool *p, size_t begin, size_t n, qs_schedule s,
                       size_t chunk) {
  visit v = {.begin = begin, .threads = pool_threads(p)};
  v.seen = calloc(n ? n : 1, 1);
  cr_assert_not_null(v.seen);
  atomic_init(&v.bad_worker, 0);
  cr_assert_eq(pool_for(p, begin, begin + n, s, chunk, mark, &v), 0);
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(v.seen[i], 1, "index %zu visited %d times (sched %d chunk "
                 "%zu n %zu threads %d)", begin + i, v.seen[i], s, chunk, n,
                 v.threads);
  cr_assert_eq(atomic_load(&v.bad_worker), 0);
  free(v.seen);
}

Test(pool, every_index_once) {
  const size_t sizes[] = {0, 1, 7, 1000003};
  const int threads[] = {1, 2, 8, 13};
  const struct {
    qs_schedule s;
    size_t chunk;
  } scheds[] = {{QS_SCHED_STATIC, 0},   {QS_SCHED_STATIC, 1},
                {QS_SCHED_STATIC, 100}, {QS_SCHED_DYNAMIC, 0},
                {QS_SCHED_DYNAMIC, 64}, {QS_SCHED_GUIDED, 0},
                {QS_SCHED_GUIDED, 16}};
  for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
    pool *p;
    cr_assert_eq(pool_create(&p, threads[t]), QS_OK);
    cr_assert_eq(pool_threads(p), threads[t]);
    for (size_t n = 0; n < sizeof sizes / sizeof *sizes; n++)
      for (size_t s = 0; s < sizeof scheds / sizeof *scheds; s++)
        check_once(p, 5, sizes[n], scheds[s].s, scheds[s].chunk);
    pool_destroy(p);
  }
}

Test(pool, more_threads_than_work) {
  pool *p;
  cr_assert_eq(pool_create(&p, 16), QS_OK);
  for (qs_schedule s = QS_SCHED_STATIC; s <= QS_SCHED_GUIDED; s++)
    for (size_t n = 1; n < 20; n++) check_once(p, 0, n, s, 0);
  pool_destroy(p);
}

static int add_range(void *ctx, size_t b, size_t e, int w) {
  (void)w;
  atomic_fetch_add((atomic_size_t *)ctx, e - b);
  return 0;
}

Test(pool, back_to_back) {
  pool *p;
  cr_assert_eq(pool_create(&p, 4), QS_OK);
  atomic_size_t total;
  atomic_init(&total, 0);
  for (int i = 0; i < 10000; i++)
    cr_assert_eq(
        pool_for(p, 0, 10, (qs_schedule)(i % 3), 0, add_range, &total), 0);
  cr_assert_eq(atomic_load(&total), 100000);
  pool_destroy(p);
}

/* A body that notes a worker id in two bodies at once (a thread's
 * scratch is indexed by it). */
typedef struct owned {
  visit v;
  atomic_int busy[16];
  atomic_int shared;
} owned;

static int mark_owned(void *ctx, size_t b, size_t e, int w) {
  owned *o = ctx;
  if (w >= 0 && w < 16 && atomic_exchange(&o->busy[w], 1))
    atomic_store(&o->shared, 1);
  for (volatile int k = 0; k < 200; k++) {
  }
  int rc = mark(&o->v, b, e, w);
  if (w >= 0 && w < 16) atomic_store(&o->busy[w], 0);
  return rc;
}

/* Loops begun while the workers sleep (a pause past their spin before
 * each), more threads than cores: a worker that arrives after the caller
 * closed the loop leaves it, and the static parts no one took are the
 * caller's. Every index once, no worker id in two bodies at once. */
Test(pool, late_workers_leave_the_loop_to_the_caller) {
  pool *p;
  cr_assert_eq(pool_create(&p, 6), QS_OK);
  const qs_schedule sched[] = {QS_SCHED_STATIC, QS_SCHED_STATIC,
                               QS_SCHED_DYNAMIC, QS_SCHED_GUIDED};
  const size_t chunk[] = {0, 1, 1, 1};
  for (int i = 0; i < 400; i++) {
    if (i % 2) {
      struct timespec pause = {0, 200000};
      nanosleep(&pause, NULL);
    }
    size_t n = 1 + (size_t)(i % 23);
    owned o = {.v = {.threads = 6}};
    o.v.seen = calloc(n, 1);
    cr_assert_not_null(o.v.seen);
    cr_assert_eq(pool_for(p, 0, n, sched[i % 4], chunk[i % 4], mark_owned,
                          &o),
                 0);
    for (size_t k = 0; k < n; k++)
      cr_assert_eq(o.v.seen[k], 1, "loop %d index %zu: %d times", i, k,
                   o.v.seen[k]);
    cr_assert_eq(atomic_load(&o.shared), 0, "loop %d", i);
    cr_assert_eq(atomic_load(&o.v.bad_worker), 0);
    free(o.v.seen);
  }
  pool_destroy(p);
}

typedef struct nest {
  pool *p;
  atomic_size_t inner;
} nest;

static int outer(void *ctx, size_t b, size_t e, int w) {
  (void)w;
  nest *n = ctx;
  for (size_t i = b; i < e; i++) {
    int rc = pool_for(n->p, 0, 100, QS_SCHED_DYNAMIC, 3, add_range, &n->inner);
    if (rc) return rc;
  }
  return 0;
}

Test(pool, nested_runs_inline) {
  nest n;
  cr_assert_eq(pool_create(&n.p, 3), QS_OK);
  atomic_init(&n.inner, 0);
  cr_assert_eq(pool_for(n.p, 0, 50, QS_SCHED_STATIC, 0, outer, &n), 0);
  cr_assert_eq(atomic_load(&n.inner), 50 * 100);
  pool_destroy(n.p);
}

typedef struct errctx {
  atomic_size_t after;
} errctx;

static int fail_at_100(void *ctx, size_t b, size_t e, int w) {
  (void)w;
  errctx *c = ctx;
  if (b <= 100 && 100 < e) return QS_EFAIL;
  if (b > 100) atomic_fetch_add(&c->after, 1);
  return 0;
}

Test(pool, error_stops_and_returns) {
  for (int threads = 1; threads <= 4; threads += 3) {
    pool *p;
    cr_assert_eq(pool_create(&p, threads), QS_OK);
    for (qs_schedule s = QS_SCHED_STATIC; s <= QS_SCHED_GUIDED; s++) {
      errctx c;
      atomic_init(&c.after, 0);
      cr_assert_eq(pool_for(p, 0, 1000000, s, 1, fail_at_100, &c), QS_EFAIL);
      /* Chunks of 1 and a million of them: far from all may run after the
       * failure once it stops the hand-out. */
      cr_assert_lt(atomic_load(&c.after), 999000, "sched %d", s);
    }
    pool_destroy(p);
  }
}

Test(pool, many_pools) {
  for (int i = 0; i < 1000; i++) {
    pool *p;
    cr_assert_eq(pool_create(&p, 1 + i % 4), QS_OK);
    atomic_size_t total;
    atomic_init(&total, 0);
    cr_assert_eq(pool_for(p, 0, 8, QS_SCHED_DYNAMIC, 1, add_range, &total), 0);
    cr_assert_eq(atomic_load(&total), 8);
    pool_destroy(p);
  }
}

Test(pool, bad_arguments) {
  pool *p;
  cr_assert_eq(pool_create(&p, 0), QS_OK); /* clamped to 1 */
  cr_assert_eq(pool_threads(p), 1);
  cr_assert_eq(pool_for(p, 0, 10, QS_SCHED_STATIC, 0, NULL, NULL), QS_EINVAL);
  cr_assert_eq(pool_for(p, 10, 5, QS_SCHED_STATIC, 0, add_range, NULL), 0);
  pool_destroy(p);
  pool_destroy(NULL);
  cr_assert_gt(pool_cores(), 0);
}

#if defined(__linux__) && defined(CPU_SET)
/* What a loop's worker bodies saw of their own affinity. */
typedef struct aff {
  int caller_cpu;
  atomic_int checked, bad;
} aff;

static int note_affinity(void *ctx, size_t b, size_t e, int w) {
  aff *a = ctx;
  for (volatile size_t k = 0; k < (e - b) * 1000; k++) {
  }
  if (w == 0) return 0;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pthread_getaffinity_np(pthread_self(), sizeof set, &set)) return 0;
  atomic_fetch_add(&a->checked, 1);
  if (CPU_ISSET(a->caller_cpu, &set)) atomic_fetch_add(&a->bad, 1);
  return 0;
}

/* A worker woken by a loop may be placed on the caller's own CPU, where
 * it cannot run until the caller is done with its share (the loop then
 * ran on one thread in most fresh processes of a 2-vCPU VM). Where the
 * caller may run on more CPUs than there are workers, the pool keeps them
 * off the caller's CPU: a worker's body never runs with that CPU in its
 * affinity. Loops where the caller moved to another CPU meanwhile are
 * not counted. (Fails before keep_off_caller, pool.c: the workers' mask
 * was every CPU.) */
Test(pool, workers_kept_off_the_callers_cpu) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  cr_assert_eq(pthread_getaffinity_np(pthread_self(), sizeof mine, &mine),
               0);
  if (CPU_COUNT(&mine) < 2) cr_skip_test("this thread runs on one CPU");
  pool *p;
  cr_assert_eq(pool_create(&p, 2), QS_OK);
  int checked = 0;
  for (int i = 0; i < 500 && checked < 20; i++) {
    aff a = {.caller_cpu = sched_getcpu()};
    cr_assert_eq(
        pool_for(p, 0, 2048, QS_SCHED_DYNAMIC, 16, note_affinity, &a), 0);
    if (a.caller_cpu < 0 || sched_getcpu() != a.caller_cpu) continue;
    cr_assert_eq(atomic_load(&a.bad), 0,
                 "loop %d: a worker may run on the caller's CPU %d", i,
                 a.caller_cpu);
    checked += atomic_load(&a.checked) > 0;
  }
  cr_assert_geq(checked, 1, "no loop had a worker's body to check");
  pool_destroy(p);
}
#endif
