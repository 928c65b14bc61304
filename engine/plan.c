/* plan.c — plans (quicksilver.h, "plans"): a method, its resolved
 * parameters and planned shapes; the states its implementations opened
 * (impl_def.open) or kept (method_call.keep) across its runs; each run
 * through the dispatcher's one path (dispatch_run) with e->plan set, so
 * that the implementation the dispatcher runs on the plan's own inputs —
 * not a calibration slice, not a composite step — receives them in its
 * method_call. Nothing is attached to the engine between runs.
 *
 * Also the internal side the live eSRRF stream uses (plan.h): a run with
 * a method-specific argument, and the stream's own loops between runs on
 * the pool as the plan's last run ran them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "plan.h"

/* States implementations keep under tags (eSRRF keeps two: its maps
 * buffer, and an OpenCL chain or a fused plan). */
#define PLAN_KEPT 8

struct qs_plan {
  qs_engine *e;
  const qs_method_desc *d;
  size_t m;                     /* the method's index in e->methods */
  qs_param params[QS_MAX_PARAMS]; /* resolved, by the descriptor's names */
  size_t n_params;
  char *impl;                   /* rq->impl, NULL: the agent */
  qs_progress_fn progress;
  void *progress_ctx;
  int outputs_given;            /* rq->outputs_given */
  qs_image shape[QS_MAX_INPUTS]; /* planned shapes (no data) */
  size_t n_in;
  void *arg;                    /* the run under way's argument */
  int stateful;                 /* a run with an argument has been made */
  struct {
    void *state;
    int opened;                 /* open was called (state may be NULL) */
  } opened[QS_MAX_IMPLS];
  struct {
    const char *tag;
    void *state;
    void (*release)(void *state);
  } kept[PLAN_KEPT];
  size_t n_kept;
  int serial;                   /* the last run's loops: calling thread */
  qs_schedule sched;            /* else the pool with these */
  size_t chunk;
  char last[QS_NAME_MAX];       /* the last run's implementation */
};

int plan_stateful(const qs_plan *p) { return p && p->stateful; }

const char *qs_plan_impl(const qs_plan *p) { return p ? p->last : ""; }

int qs_method_open(qs_engine *e, const char *method, const qs_run_request *rq,
                   qs_plan **out) {
  if (out) *out = NULL;
  if (!e) return QS_EINVAL;
  if (!out || !rq)
    return engine_fail(e, QS_EINVAL, "qs_method_open: %s is NULL",
                       !out ? "out" : "the request");
  if (rq->n_inputs > QS_MAX_INPUTS)
    return engine_fail(e, QS_EINVAL, "qs_method_open: %zu inputs (at most %d)",
                       rq->n_inputs, QS_MAX_INPUTS);
  const qs_method_desc *d = qs_method_find(e, method);
  prep pr;
  int rc = prep_call(e, method, rq, d ? d->n_outputs : 0, 1, &pr);
  if (rc) return rc;
  qs_plan *p = calloc(1, sizeof *p);
  if (!p) {
    prep_done(&pr);
    return engine_fail(e, QS_ENOMEM, "qs_method_open: out of memory");
  }
  p->e = e;
  p->d = pr.m->desc;
  p->m = (size_t)(pr.m - e->methods);
  for (size_t i = 0; i < p->d->n_params; i++)
    p->params[i] = (qs_param){p->d->params[i].name, pr.p[i], NULL};
  p->n_params = p->d->n_params;
  p->n_in = rq->n_inputs;
  for (size_t i = 0; i < rq->n_inputs; i++) {
    p->shape[i] = rq->inputs[i];
    p->shape[i].data = NULL;
    p->shape[i].owner_ = NULL;
  }
  p->progress = rq->progress;
  p->progress_ctx = rq->progress_ctx;
  p->outputs_given = rq->outputs_given;
  if (rq->impl && !(p->impl = strdup(rq->impl))) rc = QS_ENOMEM;
  prep_done(&pr);
  if (rc) {
    qs_plan_close(p);
    return engine_fail(e, rc, "qs_method_open: out of memory");
  }
  /* The agent's choice for the planned shapes, opened now: planning
   * happens here, not in the first run (another choice later is opened
   * at its first run). */
  qs_run_report rep;
  qs_run_request est = {.inputs = p->shape,
                        .n_inputs = p->n_in,
                        .params = p->params,
                        .n_params = p->n_params,
                        .impl = p->impl};
  if (qs_method_estimate(e, p->d->name, &est, &rep) == QS_OK && rep.impl[0]) {
    mstate *m = &e->methods[p->m];
    for (size_t i = 0; i < m->n_impls; i++) {
      if (strcmp(m->impls[i].name, rep.impl) || !m->impls[i].def->open)
        continue;
      qs_method_call c;
      char err[256] = "";
      double v[QS_MAX_PARAMS];
      for (size_t k = 0; k < p->n_params; k++) v[k] = p->params[k].value;
      call_init(e, &m->impls[i], &c, p->shape, p->n_in, NULL, 0, v, err,
                sizeof err);
      /* a failed open is retried (and reported) by the first run */
      if (m->impls[i].def->open(&c, &p->opened[i].state) == QS_OK)
        p->opened[i].opened = 1;
      else
        p->opened[i].state = NULL;
    }
  }
  *out = p;
  return QS_OK;
}

/* Inputs of the plan's shapes: rows and columns as planned, frames at most
 * as planned. */
static int plan_shapes(qs_plan *p, const qs_image *in, size_t n) {
  if (n != p->n_in || (n && !in))
    return engine_fail(p->e, QS_EINVAL, "plan %s: %zu inputs, planned %zu",
                       p->d->name, n, p->n_in);
  for (size_t i = 0; i < n; i++)
    if (in[i].rows != p->shape[i].rows || in[i].cols != p->shape[i].cols ||
        in[i].frames > p->shape[i].frames || !in[i].frames)
      return engine_fail(p->e, QS_ESHAPE,
                         "plan %s: input %zu is %zu x %zu x %zu, planned "
                         "%zu x %zu x %zu (frames at most)",
                         p->d->name, i, in[i].frames, in[i].rows, in[i].cols,
                         p->shape[i].frames, p->shape[i].rows,
                         p->shape[i].cols);
  return QS_OK;
}

int plan_run_arg(qs_plan *p, const qs_image *inputs, size_t n_inputs,
                 void *arg, const char *impl, qs_image *outputs,
                 size_t n_outputs, qs_run_report *report) {
  if (!p) return QS_EINVAL;
  qs_engine *e = p->e;
  if (report) memset(report, 0, sizeof *report);
  for (size_t i = 0; !p->outputs_given && outputs && i < n_outputs; i++)
    outputs[i] = (qs_image){0};
  if (e->plan || e->in_step)
    return engine_fail(e, QS_EINVAL, "plan %s: run inside another run",
                       p->d->name);
  int rc = plan_shapes(p, inputs, n_inputs);
  if (rc) return rc;
  qs_run_request rq = {.inputs = inputs,
                       .n_inputs = n_inputs,
                       .params = p->params,
                       .n_params = p->n_params,
                       .impl = impl ? impl : p->impl,
                       .progress = p->progress,
                       .progress_ctx = p->progress_ctx,
                       .outputs_given = p->outputs_given};
  p->arg = arg;
  if (arg) p->stateful = 1;
  e->plan = p;
  qs_run_report own;
  qs_run_report *rep = report ? report : &own;
  rc = dispatch_run(e, p->d->name, &rq, outputs, n_outputs, rep);
  e->plan = NULL;
  p->arg = NULL;
  if (rep->impl[0]) snprintf(p->last, sizeof p->last, "%s", rep->impl);
  return rc;
}

int qs_plan_run(qs_plan *p, const qs_image *inputs, size_t n_inputs,
                qs_image *outputs, size_t n_outputs, qs_run_report *report) {
  return plan_run_arg(p, inputs, n_inputs, NULL, NULL, outputs, n_outputs,
                      report);
}

void qs_plan_close(qs_plan *p) {
  if (!p) return;
  while (p->n_kept--)
    if (p->kept[p->n_kept].release)
      p->kept[p->n_kept].release(p->kept[p->n_kept].state);
  const mstate *m = &p->e->methods[p->m];
  for (size_t i = 0; i < m->n_impls && i < QS_MAX_IMPLS; i++)
    if (p->opened[i].opened && m->impls[i].def->close)
      m->impls[i].def->close(p->opened[i].state);
  free(p->impl);
  free(p);
}

/* ----------------------------------------------- the runs' side (exec.c) */

int plan_state_of(qs_plan *p, const mstate *m, size_t impl,
                  const qs_method_call *c, void **state) {
  *state = NULL;
  if (impl >= QS_MAX_IMPLS || !m->impls[impl].def->open) return QS_OK;
  if (!p->opened[impl].opened) {
    int rc = m->impls[impl].def->open(c, &p->opened[impl].state);
    if (rc) {
      p->opened[impl].state = NULL;
      return rc;
    }
    p->opened[impl].opened = 1;
  }
  *state = p->opened[impl].state;
  return QS_OK;
}

void plan_loops(qs_plan *p, const qs_method_call *c) {
  p->serial = c->threads == 1;
  p->sched = c->sched;
  p->chunk = c->chunk;
}

void *plan_arg_of(const qs_method_call *c) {
  const qs_plan *p = c->plan_;
  return p ? p->arg : NULL;
}

void *plan_kept(const qs_method_call *c, const char *tag) {
  const qs_plan *p = c->plan_;
  for (size_t i = 0; p && i < p->n_kept; i++)
    if (!strcmp(p->kept[i].tag, tag)) return p->kept[i].state;
  return NULL;
}

int plan_keep(const qs_method_call *c, const char *tag, void *state,
              void (*release)(void *state)) {
  qs_plan *p = c->plan_;
  if (!p) {
    if (release) release(state);
    return QS_EUNAVAIL;
  }
  for (size_t i = 0; i < p->n_kept; i++)
    if (!strcmp(p->kept[i].tag, tag)) {
      if (p->kept[i].release && p->kept[i].state != state)
        p->kept[i].release(p->kept[i].state);
      p->kept[i].state = state;
      p->kept[i].release = release;
      return QS_OK;
    }
  if (p->n_kept == PLAN_KEPT) {
    if (release) release(state);
    return QS_ENOMEM;
  }
  p->kept[p->n_kept].tag = tag;
  p->kept[p->n_kept].state = state;
  p->kept[p->n_kept].release = release;
  p->n_kept++;
  return QS_OK;
}

/* ------------------------------------------ the stream's loops (plan.h) */

int plan_for(qs_plan *p, size_t begin, size_t end, qs_range_fn body,
             void *ctx) {
  if (p->serial) return end > begin ? body(ctx, begin, end, 0) : QS_OK;
  return pool_for(p->e->pool, begin, end,
                  p->serial ? QS_SCHED_STATIC : p->sched, p->chunk, body, ctx);
}

void plan_touch(qs_plan *p, const qs_image *img) {
  plan_for(p, 0, touch_ranges(img), touch_blocks, (void *)img);
}
