/* exec.c — one execution of one implementation, timed with the engine's
 * clock (outputs allocated, zeroed outside the timing), and its accounting:
 * the row for the store (through the write-behind recorder) and the
 * in-memory history (walls, delays, failures, out-of-memory limits). */
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "cl/clrt.h"
#include "internal.h"

/* Outputs of at least TOUCH_MIN bytes have their pages provided before
 * any timed run: one write per 4 KiB page, spread over the pool. A fresh
 * page costs the kernel a zeroing and, in a virtual machine whose host
 * reclaims the guest's free memory (free page reporting), a host fault
 * too: touching 104 MiB took 8-12 ms right after the same amount was
 * freed and 106-130 ms after a 10 s pause on the development machine; a
 * cold CLI call's roberts_cross run on 50 x 512 x 512 (104 MiB of
 * outputs) was 3.6x the same run in a process started right after
 * another. That cost depends on the memory's
 * history, not on the implementation, and every implementation writes
 * every output once; inside the timed region it made timings of one
 * implementation vary several times over and cold calls look slow. The
 * call still pays it, before the clock starts. */
#define TOUCH_MIN ((size_t)1 << 20)
#define TOUCH_PAGE 4096
#define TOUCH_BLOCK ((size_t)2 << 20)

size_t touch_ranges(const qs_image *o) {
  size_t n = o->frames * o->rows * o->cols * sizeof(float);
  return (n + TOUCH_BLOCK - 1) / TOUCH_BLOCK;
}

int touch_blocks(void *ctx, size_t b, size_t e, int w) {
  (void)w;
  const qs_image *o = ctx;
  size_t n = o->frames * o->rows * o->cols * sizeof(float);
  volatile unsigned char *base = (volatile unsigned char *)o->data;
  size_t hi = e * TOUCH_BLOCK < n ? e * TOUCH_BLOCK : n;
  /* zero over zero: the contents stay what qs_image_alloc promised */
  for (size_t at = b * TOUCH_BLOCK; at < hi; at += TOUCH_PAGE) base[at] = 0;
  base[hi - 1] = 0; /* the last page, when the block starts mid-page */
  return 0;
}

int outputs_alloc(qs_engine *e, const qs_image *shape, size_t n,
                  qs_image *out) {
  for (size_t i = 0; i < n; i++) {
    int rc =
        qs_image_alloc(&out[i], shape[i].frames, shape[i].rows, shape[i].cols);
    if (rc) {
      outputs_free(out, i);
      return engine_fail(e, rc, "cannot allocate output %zu (%zux%zux%zu)",
                         i, shape[i].frames, shape[i].rows, shape[i].cols);
    }
    size_t bytes = shape[i].frames * shape[i].rows * shape[i].cols *
                   sizeof(float);
    /* In a stateful plan (the live stream) the implementation may fold
     * into the plan's state and leave the output unwritten: touching it
     * would cost every push the pages it never uses. */
    if (bytes >= TOUCH_MIN && !(e->plan && plan_stateful(e->plan)))
      pool_for(e->pool, 0, touch_ranges(&out[i]), QS_SCHED_STATIC, 0,
               touch_blocks, &out[i]);
  }
  return QS_OK;
}

void outputs_free(qs_image *out, size_t n) {
  for (size_t i = 0; i < n; i++)
    qs_image_free(&out[i]);
}

/* Zeroes 1 MiB blocks of one output on the pool: the pages of a fresh output
 * are first touched by every thread at once instead of by the caller. */
enum { ZERO_BLOCK = (1 << 20) / sizeof(float) };

static int zero_blocks(void *ctx, size_t b, size_t e, int w) {
  (void)w;
  const qs_image *o = ctx;
  size_t n = o->frames * o->rows * o->cols;
  size_t lo = b * ZERO_BLOCK, hi = e * ZERO_BLOCK < n ? e * ZERO_BLOCK : n;
  memset(o->data + lo, 0, (hi - lo) * sizeof(float));
  return 0;
}

/* Every output starts as zeros: outputs_alloc gives zeros, and a run that
 * reuses outputs (fallbacks, calibration, benchmark repeats) zeroes them
 * again first, outside the timed region. */
void outputs_zero(qs_engine *e, qs_image *out, size_t n_out) {
  for (size_t i = 0; i < n_out; i++) {
    if (!out[i].data) { /* a device image */
      devimg_zero(e, &out[i]);
      continue;
    }
    size_t n = out[i].frames * out[i].rows * out[i].cols;
    pool_for(e->pool, 0, (n + ZERO_BLOCK - 1) / ZERO_BLOCK, QS_SCHED_STATIC, 0,
             zero_blocks, &out[i]);
  }
}

/* Whether the pixels of a and b share memory. */
static int overlap(const qs_image *a, const qs_image *b) {
  const char *a0 = (const char *)a->data, *b0 = (const char *)b->data;
  size_t na = a->frames * a->rows * a->cols * sizeof(float);
  size_t nb = b->frames * b->rows * b->cols * sizeof(float);
  return a0 && b0 && a0 < b0 + nb && b0 < a0 + na;
}

int outputs_take(qs_engine *e, const prep *pr, qs_image *out, size_t n) {
  const char *what = pr->m->desc->name;
  if (pr->dev)
    return engine_fail(e, QS_EINVAL, "method %s: outputs given in host "
                                     "memory for a call on device images",
                       what);
  for (size_t i = 0; i < n; i++) {
    const qs_image *s = &pr->shape[i];
    if (!out[i].data)
      return engine_fail(e, QS_EINVAL, "method %s: output %zu given without "
                                       "memory",
                         what, i);
    if (out[i].frames != s->frames || out[i].rows != s->rows ||
        out[i].cols != s->cols)
      return engine_fail(e, QS_ESHAPE, "method %s: output %zu given as %zu x "
                                       "%zu x %zu, the call makes %zu x %zu "
                                       "x %zu",
                         what, i, out[i].frames, out[i].rows, out[i].cols,
                         s->frames, s->rows, s->cols);
    for (size_t k = 0; k < pr->n_in; k++)
      if (overlap(&out[i], &pr->in[k]))
        return engine_fail(e, QS_EINVAL, "method %s: output %zu overlaps "
                                         "input %zu",
                           what, i, k);
    for (size_t k = 0; k < i; k++)
      if (overlap(&out[i], &out[k]))
        return engine_fail(e, QS_EINVAL, "method %s: outputs %zu and %zu "
                                         "overlap",
                           what, k, i);
  }
  outputs_zero(e, out, n);
  return QS_OK;
}

/* A watched run is disturbed when other threads of the process took more
 * than DISTURB_SHARE of its wall time in CPU, and over DISTURB_MIN_NS (the
 * clocks' reading noise on runs of microseconds); WATCH_RUNS quiet runs
 * end the watch. */
#define DISTURB_SHARE 0.05
#define DISTURB_MIN_NS 100000
#define WATCH_RUNS 8

int run_once(qs_engine *e, const mstate *m, size_t impl, const qs_image *in,
             size_t n_in, qs_image *out, size_t n_out, const double *p,
             int reused, run_result *res) {
  const rimpl *r = &m->impls[impl];
  if (reused) outputs_zero(e, out, n_out);
  memset(res, 0, sizeof *res);
  qs_method_call c;
  call_init(e, r, &c, in, n_in, out, n_out, p, res->err, sizeof res->err);
  if (c.plan_) {
    plan_loops(c.plan_, &c);
    int prc = plan_state_of(c.plan_, m, impl, &c, &c.state);
    if (prc) {
      if (!res->err[0])
        snprintf(res->err, sizeof res->err, "%s: opening its plan: %s",
                 r->name, qs_status_message(prc));
      res->status = prc;
      return prc;
    }
  }
  c.device_seconds = &res->device_s;
  c.once_seconds = &res->once_s;
  res->work_s = -1;
  c.work_seconds = &res->work_s;
  /* After an OpenCL device on the host's cores ran, the next CPU runs are
   * watched: CPU time the process spent outside the pool's threads during
   * the run (the OpenCL runtime's threads) marks it disturbed. */
  int watch = e->watch_runs > 0 && (r->def->kind == QS_IMPL_SERIAL ||
                                    r->def->kind == QS_IMPL_THREADED);
  int64_t proc0 = 0, pool0 = 0, real0 = 0;
  if (watch) {
    /* the process interval inside the pool's: the caller's own reads
     * never count as another thread's time */
    pool0 = pool_cpu_ns(e->pool);
    proc0 = pool_process_cpu_ns();
    real0 = qs_timer_ns();
  }
  /* a device from the cached list is matched with the runtime's before
   * the clock starts, as discovery at the engine's open never was part of
   * a run's time (a gone one fails in the run, with its message) */
  if (c.device) cldev_bind(c.device, NULL, 0);
  uint64_t up0, down0, up1, down1;
  cldev_transfers(c.device, &up0, &down0);
  prog_own(e, &c);
  int64_t t0 = engine_now(e);
  if (e->stop_in_ns > 0) {
    int64_t stop = t0 + e->stop_in_ns;
    if (!e->stop_ns || stop < e->stop_ns) e->stop_ns = stop;
    e->stop_in_ns = 0; /* not the nested runs' (a composite's steps) */
  }
  int rc = r->def->run(&c);
  int64_t t1 = engine_now(e);
  prog_own(e, NULL);
  cldev_transfers(c.device, &up1, &down1);
  res->bytes_up = up1 - up0;
  res->bytes_down = down1 - down0;
  if (watch) {
    int64_t real = qs_timer_ns() - real0;
    int64_t proc = pool_process_cpu_ns() - proc0;
    int64_t other = proc - (pool_cpu_ns(e->pool) - pool0);
    res->disturbed = other > DISTURB_MIN_NS &&
                     (double)other > DISTURB_SHARE * (double)real;
    e->watch_runs = res->disturbed ? WATCH_RUNS : e->watch_runs - 1;
  }
  if (r->def->kind == QS_IMPL_OPENCL && r->device &&
      cldev_about(r->device)->shares_host_cores)
    e->watch_runs = WATCH_RUNS;
  res->wall = (double)(t1 - t0) * 1e-9;
  if (res->wall < 0) res->wall = 0;
  if (rc && !res->err[0])
    snprintf(res->err, sizeof res->err, "%s", qs_status_message(rc));
  if (!rc) res->err[0] = '\0';
  res->status = rc;
  return rc;
}

/* The store's row of a run of impl under (key, work): wall seconds, the
 * device and one-time seconds of res (NULL: none), status and error;
 * returns the key's history entry (NULL: no memory). */
static hist *row_record(qs_engine *e, prep *pr, size_t impl, const char *key,
                        double work, double wall, const run_result *res,
                        int status, const char *error) {
  mstate *m = pr->m;
  if (!pr->json) pr->json = key_json(m->desc, pr->p);
  run_rec rec = {.key = key,
                 .params = pr->json ? pr->json : "{}",
                 .work = work,
                 .wall = wall,
                 .device_s = res ? res->device_s : 0,
                 .once_s = res ? res->once_s : 0,
                 .status = status,
                 .error = error,
                 .sliced = qs_db_key_is_slice(key)};
  engine_record(e, m, &m->impls[impl], &rec);
  return hist_get(m, impl, key, work, 1);
}

void run_stopped(qs_engine *e, prep *pr, size_t impl, const char *key,
                 double work, double wall) {
  hist *h = row_record(e, pr, impl, key, work, wall, NULL, QS_ECANCELLED,
                       "stopped at calibration's time limit");
  if (h) hist_stopped(h, wall);
}

/* A threaded schedule's delay is every threaded schedule's: they share the
 * cores. */
static void delay_spread(mstate *m, size_t impl, const char *key,
                         double work, const hist *src) {
  if (m->impls[impl].def->kind != QS_IMPL_THREADED) return;
  for (size_t i = 0; i < m->n_impls; i++) {
    if (i == impl || m->impls[i].def->kind != QS_IMPL_THREADED) continue;
    hist *h = hist_get(m, i, key, work, src->delayed);
    if (!h) continue;
    h->delayed = src->delayed;
    h->factor = src->factor;
    h->p = src->p;
  }
}

void run_account(qs_engine *e, prep *pr, size_t impl, const char *key,
                 double work, const run_result *res, int status) {
  mstate *m = pr->m;
  rimpl *r = &m->impls[impl];
  if (status == QS_ECANCELLED) return; /* neither a timing nor a failure */
  if (status == QS_OK && res->disturbed) { /* its time is not the impl's */
    e->disturbed_runs++;
    return;
  }
  double steady = res->work_s > 0 ? res->work_s : res->wall - res->once_s;
  if (steady < 0) steady = 0;
  hist *h = row_record(e, pr, impl, key, work, steady, res, status,
                       status == QS_EMISMATCH && !res->err[0]
                           ? qs_status_message(status)
                           : res->err);
  if (!h) return;
  if (status == QS_OK) {
    double prev[AGENT_WINDOW];
    size_t n = hist_walls(h, prev);
    int was = h->delayed;
    const qs_stats *st = hist_stats(h);
    if (st)
      agent_inform_with(prev, n, st, steady, &h->delayed, &h->factor, &h->p);
    hist_add(h, steady);
    hist_once(h, res->once_s, 1);
    r->gen++;
    h->failed = 0;
    if (was != h->delayed) delay_spread(m, impl, key, work, h);
    return;
  }
  if (status == QS_EMISMATCH) {
    h->mismatch = 1;
    r->gen++;
    return;
  }
  h->failed = 1;
  h->failed_at = m->runs;
  if (status == QS_EDEVMEM && work < r->oom_work) r->oom_work = work;
}
