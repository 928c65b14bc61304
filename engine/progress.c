/* progress.c — a call's progress hook (run_request.progress) and its
 * cancellation.
 *
 * Implementations report units of work through method_call.advance from
 * any pool thread; the engine adds them up and calls the caller's hook
 * at most every QS_PROGRESS_INTERVAL_MS, one thread at a time, with `done`
 * that never goes back. Once the hook returns nonzero the call is
 * cancelled for good: every later advance, poll and parallel_for piece
 * says so, and the dispatcher returns QS_ECANCELLED without recording a
 * timing. Only the units of the implementation the call runs count (its
 * own method_call): those of composite steps, of the sub-runs an
 * implementation makes with a copy of its call, and of calibration (a
 * slice's) do not; those runs still poll the hook, so they can be
 * cancelled. A calibration slice's run has a time limit (qs_engine.stop_ns,
 * calibrate.c): past it the same polls stop that run alone. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "internal.h"

struct run_prog {
  qs_progress_fn fn;
  void *ctx;
  atomic_int cancelled;
  atomic_int counting;
  const qs_method_call *_Atomic owner; /* the run whose units count */
  atomic_uint_fast64_t done, total; /* its count */
  atomic_int_fast64_t next_ns;      /* the hook is due from then on */
  pthread_mutex_t lock;             /* held while the hook runs */
  uint64_t shown_done, shown_total; /* the last report (under lock) */
};

int prog_open(qs_engine *e, const qs_run_request *rq) {
  e->prog = NULL;
  if (!rq || !rq->progress) return QS_OK;
  run_prog *pg = calloc(1, sizeof *pg);
  if (!pg) return engine_fail(e, QS_ENOMEM, "no memory for a progress hook");
  pg->fn = rq->progress;
  pg->ctx = rq->progress_ctx;
  atomic_init(&pg->cancelled, 0);
  atomic_init(&pg->counting, 1);
  atomic_init(&pg->done, 0);
  atomic_init(&pg->total, 0);
  atomic_init(&pg->next_ns,
              qs_timer_ns() + QS_PROGRESS_INTERVAL_MS * 1000000LL);
  pthread_mutex_init(&pg->lock, NULL);
  e->prog = pg;
  return QS_OK;
}

void prog_close(qs_engine *e) {
  run_prog *pg = e->prog;
  if (!pg) return;
  pthread_mutex_destroy(&pg->lock);
  free(pg);
  e->prog = NULL;
}

void prog_counting(qs_engine *e, int on) {
  if (e->prog) atomic_store(&e->prog->counting, on);
}

void prog_own(qs_engine *e, const qs_method_call *c) {
  run_prog *pg = e->prog;
  if (!pg || e->in_step) return;
  if (c && !atomic_load(&pg->counting)) c = NULL;
  if (c) {
    atomic_store(&pg->done, 0);
    atomic_store(&pg->total, 0);
  }
  atomic_store(&pg->owner, c);
}

int prog_cancelled(const qs_engine *e) {
  return e->prog && atomic_load(&e->prog->cancelled);
}

int prog_stop_due(const qs_engine *e) {
  return e->stop_ns && engine_now(e) > e->stop_ns;
}

/* Calls the hook with the count as a fraction no smaller than the last
 * report's (a fallback's count starts again from zero). Under lock. */
static void prog_call(run_prog *pg, uint64_t done, uint64_t total) {
  if (total && done > total) done = total;
  /* compare done/total with shown_done/shown_total without overflow */
  int ahead = pg->shown_total == 0 ||
              (total && (long double)done * pg->shown_total >=
                            (long double)pg->shown_done * total);
  if (ahead && total) {
    pg->shown_done = done;
    pg->shown_total = total;
  }
  if (pg->fn(pg->ctx, pg->shown_done, pg->shown_total))
    atomic_store(&pg->cancelled, 1);
}

int prog_poll(qs_engine *e, int force) {
  /* past a calibration slice's time limit, every poll says stop; the
   * caller's call is not cancelled (calibrate.c) */
  if (prog_stop_due(e)) return 1;
  run_prog *pg = e->prog;
  if (!pg) return 0;
  if (atomic_load(&pg->cancelled)) return 1;
  int64_t now = qs_timer_ns();
  if (!force && now < atomic_load(&pg->next_ns)) return 0;
  /* one caller at a time; a thread that finds the hook busy goes on */
  if (force) pthread_mutex_lock(&pg->lock);
  else if (pthread_mutex_trylock(&pg->lock)) return 0;
  if (!atomic_load(&pg->cancelled) &&
      (force || qs_timer_ns() >= atomic_load(&pg->next_ns))) {
    prog_call(pg, atomic_load(&pg->done), atomic_load(&pg->total));
    atomic_store(&pg->next_ns,
                 qs_timer_ns() + QS_PROGRESS_INTERVAL_MS * 1000000LL);
  }
  pthread_mutex_unlock(&pg->lock);
  return atomic_load(&pg->cancelled);
}

int prog_advance(const qs_method_call *c, uint64_t n, uint64_t total) {
  qs_engine *e = c->engine_;
  run_prog *pg = e ? e->prog : NULL;
  if (!pg) return e && e->stop_ns ? prog_poll(e, 0) : 0;
  if (c == atomic_load(&pg->owner)) {
    if (total) atomic_store(&pg->total, total);
    atomic_fetch_add(&pg->done, n);
  }
  return prog_poll(e, 0);
}

void prog_finish(qs_engine *e) {
  run_prog *pg = e->prog;
  if (!pg || atomic_load(&pg->cancelled)) return;
  uint64_t total = atomic_load(&pg->total);
  if (!total) total = pg->shown_total ? pg->shown_total : 1;
  pthread_mutex_lock(&pg->lock);
  pg->fn(pg->ctx, total, total); /* the call is done: too late to cancel */
  pg->shown_done = pg->shown_total = total;
  pthread_mutex_unlock(&pg->lock);
}

int prog_set(qs_engine *e, uint64_t done, uint64_t total) {
  run_prog *pg = e->prog;
  if (!pg) return 0;
  atomic_store(&pg->total, total);
  atomic_store(&pg->done, done);
  return prog_poll(e, 0);
}

/* ------------------------------------------------ pieces of a parallel_for */

/* Pieces per thread of a parallel_for range: small enough for a check
 * every few milliseconds of a long loop, large enough that a body's setup
 * is paid a handful of times. */
#define PIECES_PER_THREAD 16

typedef struct piece_job {
  const qs_method_call *c;
  qs_range_fn body;
  void *ctx;
  size_t piece;
} piece_job;

static int piece_body(void *ctx, size_t b, size_t e, int worker) {
  const piece_job *j = ctx;
  qs_engine *en = j->c->engine_;
  for (size_t at = b; at < e;) {
    if (prog_poll(en, 0)) return QS_ECANCELLED;
    size_t hi = e - at > j->piece ? at + j->piece : e;
    int rc = j->body(j->ctx, at, hi, worker);
    if (rc) return rc;
    at = hi;
  }
  return QS_OK;
}

int prog_for(const qs_method_call *c, size_t begin, size_t end,
             qs_range_fn body, void *ctx,
             int (*run)(const qs_method_call *c, size_t begin, size_t end,
                        qs_range_fn body, void *ctx)) {
  qs_engine *e = c->engine_;
  if (!e || (!e->prog && !e->stop_ns) || end <= begin)
    return run(c, begin, end, body, ctx);
  if (prog_poll(e, 0)) return QS_ECANCELLED;
  size_t threads = c->threads > 0 ? (size_t)c->threads : 1;
  size_t piece = (end - begin) / (threads * PIECES_PER_THREAD);
  piece_job j = {.c = c, .body = body, .ctx = ctx,
                 .piece = piece ? piece : 1};
  return run(c, begin, end, piece_body, &j);
}
