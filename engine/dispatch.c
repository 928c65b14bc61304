/* dispatch.c — method_run(): validate, key, choose (forced, history, model,
 * calibration on a slice of the caller's input, static order), execute with
 * the engine's clock, record every run (failures too), fall back to the next
 * best implementation, report. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "cl/clrt.h"
#include "internal.h"

/* Failed implementations are skipped for their key for this many runs of
 * the method, then tried once more. */
#define RETRY_AFTER 20

/* ------------------------------------------------------------ call context */

static int call_parallel_for(const method_call *c, size_t begin, size_t end,
                             range_fn body, void *ctx) {
  const engine *e = c->engine_;
  return pool_for(e->pool, begin, end, c->sched, c->chunk, body, ctx);
}

/* A serial implementation's loops run on the calling thread alone: serial
 * is the one-thread reference the threaded schedules are measured against. */
static int call_serial_for(const method_call *c, size_t begin, size_t end,
                           range_fn body, void *ctx) {
  (void)c;
  return end > begin ? body(ctx, begin, end, 0) : QS_OK;
}

/* Composite steps re-enter the dispatcher; their outputs belong to the
 * composite (image_free). */
static int call_step(const method_call *c, const char *method,
                     const char *impl, const image *in, size_t n_in,
                     const param *p, size_t n_p, image *out, size_t n_out) {
  engine *e = c->engine_;
  run_request rq = {.inputs = in, .n_inputs = n_in, .params = p,
                    .n_params = n_p, .impl = impl};
  int rc = method_run(e, method, &rq, out, n_out, NULL);
  if (rc && c->err)
    snprintf(c->err, c->err_len, "step %s: %s", method, e->err);
  return rc;
}

void call_init(engine *e, const rimpl *r, method_call *c, const image *in,
               size_t n_in, image *out, size_t n_out, const double *p,
               char *err, size_t err_len) {
  *c = (method_call){.in = in, .n_in = n_in, .out = out, .n_out = n_out,
                     .p = p,
                     .threads = r->def->kind == IMPL_SERIAL ? 1 : e->threads,
                     .sched = r->def->sched,
                     .chunk = r->def->chunk,
                     .parallel_for = r->def->kind == IMPL_SERIAL
                                         ? call_serial_for
                                         : call_parallel_for,
                     .device = r->device,
                     .step = call_step, .err = err, .err_len = err_len,
                     .engine_ = e};
}

/* ------------------------------------------------------------- validation */

static const char *const kind_names[] = {"serial", "threaded", "opencl",
                                         "composite"};

static int shape_ok(engine *e, const method_desc *d, const char *what,
                    const char *slot, const image *im) {
  size_t n;
  if (!im->frames || !im->rows || !im->cols)
    return engine_fail(e, QS_ESHAPE, "method %s: %s %s is empty (%zux%zux%zu)",
                       d->name, what, slot, im->frames, im->rows, im->cols);
  if (image_pixels(im->frames, im->rows, im->cols, &n))
    return engine_fail(e, QS_EOVERFLOW, "method %s: %s %s is too large "
                       "(%zux%zux%zu)", d->name, what, slot, im->frames,
                       im->rows, im->cols);
  return QS_OK;
}

/* Output shapes of the method for these inputs and parameters. */
static int shapes_of(engine *e, const method_desc *d, const image *in,
                     const double *p, image *shape) {
  char msg[512] = "";
  memset(shape, 0, d->n_outputs * sizeof *shape);
  if (d->shape) {
    int rc = d->shape(in, p, shape, msg, sizeof msg);
    if (rc)
      return engine_fail(e, rc, "method %s: %s", d->name,
                         msg[0] ? msg : status_message(rc));
  } else {
    for (size_t i = 0; i < d->n_outputs; i++)
      shape[i] = (image){NULL, in[0].frames, in[0].rows, in[0].cols, NULL};
  }
  for (size_t i = 0; i < d->n_outputs; i++) {
    int rc = shape_ok(e, d, "output", d->outputs[i].name, &shape[i]);
    if (rc) return rc;
  }
  return QS_OK;
}

int prep_call(engine *e, const char *method, const run_request *rq,
              size_t n_outputs, prep *pr) {
  pr->m = NULL;
  pr->json = NULL;
  pr->key[0] = '\0';
  mstate *m = registry_find(e, method);
  if (!m) return registry_unknown(e, method);
  const method_desc *d = m->desc;
  if (!rq) return engine_fail(e, QS_EINVAL, "method %s: no request", d->name);
  if (rq->n_inputs != d->n_inputs || (rq->n_inputs && !rq->inputs))
    return engine_fail(e, QS_ESHAPE,
                       "method %s takes %zu input(s) (first: %s), %zu given",
                       d->name, d->n_inputs, d->inputs[0].name,
                       rq->inputs ? rq->n_inputs : 0);
  for (size_t i = 0; i < d->n_inputs; i++) {
    int rc = shape_ok(e, d, "input", d->inputs[i].name, &rq->inputs[i]);
    if (!rc && !rq->inputs[i].data)
      rc = engine_fail(e, QS_EINVAL, "method %s: input %s has no data",
                       d->name, d->inputs[i].name);
    if (rc) return rc;
  }
  if (n_outputs != d->n_outputs || d->n_outputs > QS_MAX_OUTPUTS)
    return engine_fail(e, QS_EINVAL,
                       "method %s gives %zu output(s), room for %zu given",
                       d->name, d->n_outputs, n_outputs);
  char msg[512] = "";
  int rc = params_resolve(d->params, d->n_params, rq->params,
                          rq->params ? rq->n_params : 0, pr->p, msg,
                          sizeof msg);
  if (rc) return engine_fail(e, rc, "method %s: %s", d->name, msg);
  rc = shapes_of(e, d, rq->inputs, pr->p, pr->shape);
  if (rc) return rc;
  if (key_text(d, rq->inputs, pr->p, pr->key, sizeof pr->key))
    return engine_fail(e, QS_EOVERFLOW, "method %s: key longer than %d bytes",
                       d->name, QS_KEY_MAX);
  pr->m = m;
  pr->in = rq->inputs;
  pr->n_in = rq->n_inputs;
  pr->work = key_work(d, rq->inputs, pr->p, pr->shape);
  return QS_OK;
}

void prep_done(prep *pr) {
  cJSON_free(pr->json);
  pr->json = NULL;
}

static const char *rimpl_name_at(const void *ctx, size_t i) {
  return ((const rimpl *)ctx)[i].name;
}

int impl_select(engine *e, const mstate *m, const char *text,
                unsigned char *mask, int *exact) {
  memset(mask, 0, m->n_impls);
  *exact = 0;
  const char *s = text;
  size_t words = 0;
  while (*s) {
    size_t len = strcspn(s, ",");
    char w[QS_NAME_MAX];
    snprintf(w, sizeof w, "%.*s", (int)(len < sizeof w ? len : sizeof w - 1),
             s);
    int hit = 0;
    for (size_t i = 0; i < m->n_impls; i++) {
      impl_kind k = m->impls[i].def->kind;
      if (!strcmp(w, m->impls[i].name) || !strcmp(w, kind_names[k]) ||
          (!strcmp(w, "cpu") && k != IMPL_OPENCL)) {
        mask[i] = 1;
        hit = 1;
        if (!strcmp(w, m->impls[i].name)) *exact = 1;
      }
    }
    if (!hit) {
      const char *near = name_nearest(w, rimpl_name_at, m->impls, m->n_impls);
      return engine_fail(e, QS_ENOIMPL,
                         "method %s has no implementation or kind \"%s\"%s%s%s",
                         m->desc->name, w, near ? " (did you mean " : "",
                         near ? near : "", near ? "?)" : "");
    }
    words++;
    s += len;
    if (*s == ',') s++;
  }
  if (words != 1) *exact = 0;
  return QS_OK;
}

/* -------------------------------------------------------------- execution */

int outputs_alloc(engine *e, const image *shape, size_t n, image *out) {
  for (size_t i = 0; i < n; i++) {
    int rc = image_alloc(&out[i], shape[i].frames, shape[i].rows,
                         shape[i].cols);
    if (rc) {
      outputs_free(out, i);
      return engine_fail(e, rc, "cannot allocate output %zu (%zux%zux%zu)",
                         i, shape[i].frames, shape[i].rows, shape[i].cols);
    }
  }
  return QS_OK;
}

void outputs_free(image *out, size_t n) {
  for (size_t i = 0; i < n; i++) image_free(&out[i]);
}

/* Zeroes 1 MiB blocks of one output on the pool: the pages of a fresh output
 * are first touched by every thread at once instead of by the caller. */
enum { ZERO_BLOCK = (1 << 20) / sizeof(float) };

static int zero_blocks(void *ctx, size_t b, size_t e, int w) {
  (void)w;
  const image *o = ctx;
  size_t n = o->frames * o->rows * o->cols;
  size_t lo = b * ZERO_BLOCK, hi = e * ZERO_BLOCK < n ? e * ZERO_BLOCK : n;
  memset(o->data + lo, 0, (hi - lo) * sizeof(float));
  return 0;
}

/* Every output starts as zeros: outputs_alloc gives zeros, and a run that
 * reuses outputs (fallbacks, calibration, benchmark repeats) zeroes them
 * again first, outside the timed region. */
static void outputs_zero(engine *e, image *out, size_t n_out) {
  for (size_t i = 0; i < n_out; i++) {
    size_t n = out[i].frames * out[i].rows * out[i].cols;
    pool_for(e->pool, 0, (n + ZERO_BLOCK - 1) / ZERO_BLOCK, SCHED_STATIC, 0,
             zero_blocks, &out[i]);
  }
}

int run_once(engine *e, const mstate *m, size_t impl, const image *in,
             size_t n_in, image *out, size_t n_out, const double *p,
             int reused, run_result *res) {
  const rimpl *r = &m->impls[impl];
  if (reused) outputs_zero(e, out, n_out);
  memset(res, 0, sizeof *res);
  method_call c;
  call_init(e, r, &c, in, n_in, out, n_out, p, res->err, sizeof res->err);
  c.device_seconds = &res->device_s;
  c.once_seconds = &res->once_s;
  uint64_t up0, down0, up1, down1;
  cldev_transfers(c.device, &up0, &down0);
  int64_t t0 = engine_now(e);
  int rc = r->def->run(&c);
  int64_t t1 = engine_now(e);
  cldev_transfers(c.device, &up1, &down1);
  res->bytes_up = up1 - up0;
  res->bytes_down = down1 - down0;
  res->wall = (double)(t1 - t0) * 1e-9;
  if (res->wall < 0) res->wall = 0;
  if (rc && !res->err[0]) snprintf(res->err, sizeof res->err, "%s",
                                   status_message(rc));
  if (!rc) res->err[0] = '\0';
  res->status = rc;
  return rc;
}

/* A threaded schedule's delay is every threaded schedule's: they share the
 * cores. */
static void delay_spread(mstate *m, size_t impl, const char *key,
                         double work, const hist *src) {
  if (m->impls[impl].def->kind != IMPL_THREADED) return;
  for (size_t i = 0; i < m->n_impls; i++) {
    if (i == impl || m->impls[i].def->kind != IMPL_THREADED) continue;
    hist *h = hist_get(m, i, key, work, src->delayed);
    if (!h) continue;
    h->delayed = src->delayed;
    h->factor = src->factor;
    h->p = src->p;
  }
}

void run_account(engine *e, prep *pr, size_t impl, const char *key,
                 double work, const run_result *res, int status) {
  mstate *m = pr->m;
  rimpl *r = &m->impls[impl];
  double steady = res->wall - res->once_s;
  if (steady < 0) steady = 0;
  if (!pr->json) pr->json = key_json(m->desc, pr->p);
  run_rec rec = {.key = key, .params = pr->json ? pr->json : "{}",
                 .work = work, .wall = steady, .device_s = res->device_s,
                 .once_s = res->once_s, .status = status,
                 .error = status == QS_EMISMATCH && !res->err[0]
                              ? status_message(status)
                              : res->err};
  engine_record(e, m, r, &rec);
  hist *h = hist_get(m, impl, key, work, 1);
  if (!h) return;
  if (status == QS_OK) {
    double prev[AGENT_WINDOW];
    size_t n = hist_walls(h, prev);
    int was = h->delayed;
    const stats *st = hist_stats(h);
    if (st)
      agent_inform_with(prev, n, st, steady, &h->delayed, &h->factor, &h->p);
    hist_add(h, steady);
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

/* ------------------------------------------------------------- candidates */

/* The storage behind a candidate's pointers. */
typedef struct cand_buf {
  double walls[AGENT_WINDOW];
} cand_buf;

/* Refits implementation i over its keys when its timings changed since the
 * last fit (fast-half mean per key, mismatching keys left out). */
static void impl_fit(mstate *m, size_t i) {
  rimpl *r = &m->impls[i];
  if (r->fit_gen == r->gen) return;
  size_t n = 0;
  for (hist *k = m->all; k; k = k->sibling)
    n += k->impl == i && k->n && !k->mismatch;
  double *works = n ? malloc(2 * n * sizeof *works) : NULL;
  if (n && !works) return; /* no model this time */
  double *times = works + n;
  /* m->all is newest key first; the fit keeps the newest when it must cut */
  size_t j = n;
  for (hist *k = m->all; k; k = k->sibling) {
    if (k->impl != i || !k->n || k->mismatch) continue;
    j--;
    works[j] = k->work;
    times[j] = hist_stats(k)->fast_mean;
  }
  r->fit_n = n && !agent_fit(works, times, n, &r->fit_a, &r->fit_b) ? n : 0;
  r->fit_gen = r->gen;
  free(works);
}

static void cand_fill(mstate *m, size_t i, const prep *pr,
                      const method_call *c, int forced, agent_cand *a,
                      cand_buf *b, char *why, size_t why_len) {
  rimpl *r = &m->impls[i];
  *a = (agent_cand){.kind = r->def->kind};
  if (!registry_usable(r, c, why, why_len)) a->excluded = "unavailable";
  hist *h = hist_get(m, i, pr->key, pr->work, 0);
  if (h) {
    a->n_walls = hist_walls(h, b->walls);
    a->walls = b->walls;
    const stats *st = hist_stats(h);
    a->fast = st ? st->fast_mean : 0;
    a->delayed = h->delayed;
    a->factor = h->factor;
    a->p = h->p;
    if (!a->excluded && !forced && h->mismatch) a->excluded = "mismatch";
    if (!a->excluded && !forced && h->failed &&
        m->runs - h->failed_at <= RETRY_AFTER)
      a->excluded = "failed";
  }
  if (!a->excluded && !forced && pr->work >= r->oom_work)
    a->excluded = "device_memory";
  if (a->n_walls) return; /* the exact key decides; no model needed */
  impl_fit(m, i);
  a->n_points = r->fit_n;
  a->fitted = r->fit_n > 0;
  a->fit_a = r->fit_a;
  a->fit_b = r->fit_b;
}

/* ------------------------------------------------------------ calibration */

/* Calibration: every cold implementation runs on a small slice of the
 * caller's input (a second time when the first run had one-time costs, so
 * a steady time is recorded); then, fastest on the small slice first, on a
 * slice twice as large per side, while the predicted cost of those runs
 * fits CALIB_SHARE of the best predicted full run (or CALIB_FLOOR seconds),
 * the fastest always. Two sizes give the fit a fixed cost and a slope; an
 * implementation left at one size is scaled proportionally, which only
 * overestimates it, and those left out are the slow ones on the slice. The
 * smaller slice is 1/32 of the rows and columns (1/1024 of a frame), never
 * below 16 pixels. */
#define CALIB_SHARE 0.05
#define CALIB_FLOOR 0.005
static size_t slice_side(size_t full) {
  size_t s = (full + 31) / 32;
  if (s < 16) s = 16;
  return s < full ? s : full;
}

/* The generic slice: first frame of every input, top-left crop of the same
 * fraction of each input's size. */
static int slice_generic(const method_desc *d, const image *in, size_t rows,
                         size_t cols, image *out) {
  for (size_t k = 0; k < d->n_inputs; k++) {
    size_t r = in[k].rows * rows / in[0].rows;
    size_t c = in[k].cols * cols / in[0].cols;
    r = r ? r : 1;
    c = c ? c : 1;
    int rc = image_alloc(&out[k], 1, r, c);
    if (rc) {
      outputs_free(out, k);
      return rc;
    }
    for (size_t y = 0; y < r; y++)
      memcpy(out[k].data + y * c, in[k].data + y * in[k].cols,
             c * sizeof(float));
  }
  return QS_OK;
}

/* A slice of the call's input at `rows` x `cols` with its output shapes,
 * allocated outputs, key and work. slice_done releases it. */
typedef struct slice {
  image in[QS_MAX_OUTPUTS], out[QS_MAX_OUTPUTS];
  char key[QS_KEY_MAX];
  double work;
} slice;

static void slice_done(const method_desc *d, slice *sl) {
  outputs_free(sl->out, d->n_outputs);
  outputs_free(sl->in, d->n_inputs);
}

static int slice_make(engine *e, const prep *pr, size_t rows, size_t cols,
                      slice *sl) {
  const method_desc *d = pr->m->desc;
  image shape[QS_MAX_OUTPUTS];
  char msg[512];
  memset(sl, 0, offsetof(slice, key));
  if (d->n_inputs > QS_MAX_OUTPUTS) return QS_EINVAL;
  int rc = d->slice ? d->slice(pr->in, pr->p, rows, cols, sl->in)
                    : slice_generic(d, pr->in, rows, cols, sl->in);
  if (rc) return rc;
  for (size_t k = 0; !rc && k < d->n_inputs; k++)
    rc = !sl->in[k].data || !sl->in[k].frames || !sl->in[k].rows ||
         !sl->in[k].cols;
  if (!rc && d->shape) rc = d->shape(sl->in, pr->p, shape, msg, sizeof msg);
  if (!rc && !d->shape)
    for (size_t i = 0; i < d->n_outputs; i++)
      shape[i] = (image){NULL, sl->in[0].frames, sl->in[0].rows,
                         sl->in[0].cols, NULL};
  if (!rc) rc = key_text(d, sl->in, pr->p, sl->key, sizeof sl->key);
  if (!rc) rc = outputs_alloc(e, shape, d->n_outputs, sl->out);
  if (rc) {
    outputs_free(sl->in, d->n_inputs);
    return rc ? rc : QS_ESHAPE;
  }
  sl->work = key_work(d, sl->in, pr->p, shape);
  return QS_OK;
}

/* Runs implementation i on the slice, recorded under the slice's key;
 * returns the steady seconds, or -1 if it failed (then it is also skipped
 * for the caller's key) or its probe refuses the slice. */
static double slice_run(engine *e, prep *pr, size_t i, slice *sl,
                        double *spent, double *once) {
  mstate *m = pr->m;
  const method_desc *d = m->desc;
  method_call probe;
  char why[128];
  call_init(e, &m->impls[i], &probe, sl->in, d->n_inputs, NULL, 0, pr->p,
            NULL, 0);
  if (!registry_usable(&m->impls[i], &probe, why, sizeof why)) return -1;
  run_result res;
  double best = -1;
  for (int k = 0; k < 2; k++) {
    run_once(e, m, i, sl->in, d->n_inputs, sl->out, d->n_outputs, pr->p, 1,
             &res);
    *spent += res.wall;
    *once += res.once_s;
    run_account(e, pr, i, sl->key, sl->work, &res, res.status);
    if (res.status) {
      hist *h = hist_get(m, i, pr->key, pr->work, 1);
      if (h) h->failed = 1, h->failed_at = m->runs;
      return -1;
    }
    double t = res.wall - res.once_s;
    if (best < 0 || t < best) best = t;
    if (res.once_s <= 0) break; /* steady already */
  }
  return best;
}

/* Calibrates the cold candidates (cold[i] != 0) as described above;
 * returns the seconds spent, *once the one-time part of them. A slice the
 * method rejects ends calibration (the cold ones then wait for the static
 * order or the benchmark). */
static double calibrate(engine *e, prep *pr, const unsigned char *cold,
                        double *once) {
  mstate *m = pr->m;
  const method_desc *d = m->desc;
  double spent = 0, small[QS_MAX_ESTIMATES];
  size_t rows = slice_side(pr->in[0].rows), cols = slice_side(pr->in[0].cols);
  slice sl;
  if (slice_make(e, pr, rows, cols, &sl)) return spent;
  double best = -1;
  long first = -1;
  for (size_t i = 0; i < m->n_impls; i++) {
    small[i] = cold[i] ? slice_run(e, pr, i, &sl, &spent, once) : -1;
    if (small[i] >= 0 && (best < 0 || small[i] < best))
      best = small[i], first = (long)i;
  }
  double w_small = sl.work;
  slice_done(d, &sl);
  size_t rows2 = rows * 2 < pr->in[0].rows ? rows * 2 : pr->in[0].rows;
  size_t cols2 = cols * 2 < pr->in[0].cols ? cols * 2 : pr->in[0].cols;
  if (first < 0 || (rows2 == rows && cols2 == cols) || !(w_small > 0) ||
      slice_make(e, pr, rows2, cols2, &sl))
    return spent;
  double grow = sl.work / w_small;
  double budget = CALIB_SHARE * best * pr->work / w_small;
  if (budget < CALIB_FLOOR) budget = CALIB_FLOOR;
  double used = 0;
  for (;;) { /* fastest on the small slice first */
    long next = -1;
    for (size_t i = 0; i < m->n_impls; i++)
      if (small[i] >= 0 && (next < 0 || small[i] < small[next]))
        next = (long)i;
    if (next < 0) break;
    double t = small[next];
    small[next] = -1;
    if (next != first && used + t * grow > budget) continue;
    double before = spent;
    slice_run(e, pr, (size_t)next, &sl, &spent, once);
    used += spent - before;
  }
  slice_done(d, &sl);
  return spent;
}

/* --------------------------------------------------------------- the call */

static const char *const source_names[] = {"none", "history", "model"};

int method_run(engine *e, const char *method, const run_request *rq,
               image *outputs, size_t n_outputs, run_report *report) {
  if (!e) return QS_EINVAL;
  if (report) memset(report, 0, sizeof *report);
  if (!outputs && n_outputs) return engine_fail(e, QS_EINVAL, "no outputs");
  for (size_t i = 0; i < n_outputs; i++) outputs[i] = (image){0};
  prep pr;
  int rc = prep_call(e, method, rq, n_outputs, &pr);
  if (rc) return rc;
  mstate *m = pr.m;
  const method_desc *d = m->desc;

  unsigned char mask[QS_MAX_ESTIMATES];
  int exact = 0;
  if (rq->impl && *rq->impl) {
    rc = impl_select(e, m, rq->impl, mask, &exact);
    if (rc) return rc;
  } else {
    memset(mask, 1, m->n_impls);
  }
  hist_load(e, m); /* without history the agent still chooses */
  m->runs++;

  agent_cand cand[QS_MAX_ESTIMATES];
  cand_buf buf[QS_MAX_ESTIMATES];
  char why[QS_MAX_ESTIMATES][128];
  method_call probe;
  long usable = -1;
  for (size_t i = 0; i < m->n_impls; i++) {
    call_init(e, &m->impls[i], &probe, pr.in, pr.n_in, NULL, 0, pr.p, NULL,
              0);
    cand_fill(m, i, &pr, &probe, exact, &cand[i], &buf[i], why[i],
              sizeof why[i]);
    if (!mask[i] && !cand[i].excluded) cand[i].excluded = "not_selected";
    if (!cand[i].excluded && usable < 0) usable = (long)i;
  }
  if (usable < 0) {
    size_t i = 0;
    while (i < m->n_impls && !mask[i]) i++;
    rc = engine_fail(e, QS_EUNAVAIL, "method %s: %s%s is not available here: "
                     "%s", d->name, rq->impl ? "implementation " : "",
                     rq->impl ? rq->impl : "no implementation",
                     i < m->n_impls && why[i][0] ? why[i] : "every candidate "
                     "was excluded");
    goto done;
  }
  rc = outputs_alloc(e, pr.shape, d->n_outputs, outputs);
  if (rc) goto done;

  double calib = 0, calib_once = 0;
  if (!exact && !e->no_calibration) {
    unsigned char cold[QS_MAX_ESTIMATES] = {0};
    int any = 0;
    for (size_t i = 0; i < m->n_impls; i++)
      any |= cold[i] = !cand[i].excluded && agent_cold(&cand[i]);
    if (any) {
      calib = calibrate(e, &pr, cold, &calib_once);
      for (size_t i = 0; i < m->n_impls; i++)
        if (cold[i]) {
          call_init(e, &m->impls[i], &probe, pr.in, pr.n_in, NULL, 0, pr.p,
                    NULL, 0);
          cand_fill(m, i, &pr, &probe, exact, &cand[i], &buf[i], why[i],
                    sizeof why[i]);
        }
    }
  }

  double est[QS_MAX_ESTIMATES];
  int src[QS_MAX_ESTIMATES];
  run_result res = {0};
  const char *reason = "forced";
  int fallbacks = 0;
  long pick = -1, last = -1;
  for (;;) {
    const char *why_pick = "forced";
    if (exact) {
      const char *unused;
      pick = usable;
      agent_choose(cand, m->n_impls, pr.work, 0, &e->rng, &unused, est, src);
    } else {
      pick = agent_choose(cand, m->n_impls, pr.work, e->no_calibration,
                          &e->rng, &why_pick, est, src);
      if (pick < 0) break;
      if (calib > 0 && src[pick] == SRC_MODEL) why_pick = "calibration";
    }
    if (fallbacks == 0) reason = why_pick;
    last = pick;
    run_once(e, m, (size_t)pick, pr.in, pr.n_in, outputs, d->n_outputs, pr.p,
             fallbacks > 0,
             &res);
    run_account(e, &pr, (size_t)pick, pr.key, pr.work, &res, res.status);
    if (res.status == QS_OK || exact) break;
    cand[pick].excluded = "failed";
    snprintf(why[pick], sizeof why[pick], "%.120s", res.err);
    fallbacks++;
    reason = "fallback";
  }
  if (pick < 0 || res.status) {
    outputs_free(outputs, d->n_outputs);
    rc = res.status ? res.status : QS_EFAIL;
    rc = engine_fail(e, rc, "method %s: %s failed: %s%s", d->name,
                     last >= 0 ? m->impls[last].name : "every implementation",
                     res.err,
                     fallbacks > 1 ? " (the last of every candidate)" : "");
  }
  if (report && pick >= 0) {
    snprintf(report->impl, sizeof report->impl, "%s", m->impls[pick].name);
    snprintf(report->reason, sizeof report->reason, "%s", reason);
    report->seconds = res.wall;
    report->device_seconds = res.device_s;
    report->once_seconds = res.once_s;
    report->bytes_up = res.bytes_up;
    report->bytes_down = res.bytes_down;
    report->calibration_seconds = calib;
    report->calibration_once_seconds = calib_once;
    report->fallbacks = fallbacks;
    report->n_estimates = m->n_impls;
    for (size_t i = 0; i < m->n_impls; i++) {
      run_estimate *x = &report->estimates[i];
      snprintf(x->impl, sizeof x->impl, "%s", m->impls[i].name);
      x->seconds = est[i];
      x->runs = (int)(cand[i].n_walls ? cand[i].n_walls : cand[i].n_points);
      const char *s = source_names[src[i]];
      if (cand[i].excluded && strcmp(cand[i].excluded, "not_selected"))
        s = cand[i].excluded;
      snprintf(x->source, sizeof x->source, "%s", s);
    }
  }
done:
  prep_done(&pr);
  return rc;
}
