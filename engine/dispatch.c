/* dispatch.c — qs_method_run() and qs_method_estimate(), read top-down: prepare
 * the call (prep.c), gather the candidates (choice.c), calibrate the cold
 * ones (calibrate.c), choose, execute and account (exec.c), fall back to
 * the next best on failure, report. Composite steps re-enter here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl/clrt.h"
#include "internal.h"

/* Composite steps re-enter the dispatcher; their outputs belong to the
 * composite (qs_image_free). */
int dispatch_step(const qs_method_call *c, const char *method,
                  const char *impl, const qs_image *in, size_t n_in,
                  const qs_param *p, size_t n_p, qs_image *out, size_t n_out) {
  qs_engine *e = c->engine_;
  qs_run_request rq = {.inputs = in,
                       .n_inputs = n_in,
                       .params = p,
                       .n_params = n_p,
                       .impl = impl};
  e->in_step++;
  int rc = qs_method_run(e, method, &rq, out, n_out, NULL);
  e->in_step--;
  if (rc && c->err)
    snprintf(c->err, c->err_len, "step %s: %s", method, e->err);
  return rc;
}

int qs_method_estimate(qs_engine *e, const char *method,
                       const qs_run_request *rq, qs_run_report *report) {
  if (!e) return QS_EINVAL;
  if (!report)
    return engine_fail(e, QS_EINVAL, "qs_method_estimate: no report");
  memset(report, 0, sizeof *report);
  const qs_method_desc *d = qs_method_find(e, method);
  prep pr;
  int rc = prep_call(e, method, rq, d ? d->n_outputs : 0, 1, &pr);
  if (rc) return rc;
  cands cs;
  pr.m->runs++; /* as qs_method_run counts the call before choosing */
  rc = cands_build(e, &pr, rq, &cs);
  pr.m->runs--;
  if (rc) goto done;
  unsigned char cold[QS_MAX_ESTIMATES];
  size_t n_cold = cands_cold(e, pr.m, &cs, cold);
  cands_waiting(e, &pr, &cs, cold);
  double est[QS_MAX_ESTIMATES];
  int src[QS_MAX_ESTIMATES];
  const char *reason = "static";
  uint64_t rng = e->rng; /* the draw the next qs_method_run would make */
  long pick = cands_choose(e, &pr, &cs, &rng, &reason, est, src);
  if (n_cold && calibrate_startable(e, &pr, cold, cands_known(&pr, &cs, cold)))
    reason = "calibration";
  if (pick >= 0)
    snprintf(report->impl, sizeof report->impl, "%s",
             pr.m->impls[pick].name);
  snprintf(report->reason, sizeof report->reason, "%s", reason);
  report_estimates(report, pr.m, &cs, est, src);
done:
  prep_done(&pr);
  return rc;
}

/* A one-shot plan: the same path as a plan's run, without kept states. */
int qs_method_run(qs_engine *e, const char *method, const qs_run_request *rq,
                  qs_image *outputs, size_t n_outputs, qs_run_report *report) {
  if (!e) return QS_EINVAL;
  if (!e->in_step && e->plan)
    return engine_fail(e, QS_EINVAL,
                       "qs_method_run: called from inside a "
                       "plan's run");
  return dispatch_run(e, method, rq, outputs, n_outputs, report);
}

int dispatch_run(qs_engine *e, const char *method, const qs_run_request *rq,
                 qs_image *outputs, size_t n_outputs, qs_run_report *report) {
  if (report) memset(report, 0, sizeof *report);
  if (!outputs && n_outputs) return engine_fail(e, QS_EINVAL, "no outputs");
  int given = rq && rq->outputs_given; /* the caller's, never freed here */
  for (size_t i = 0; !given && i < n_outputs; i++)
    outputs[i] = (qs_image){0};
  prep pr;
  int rc = prep_call(e, method, rq, n_outputs, 0, &pr);
  if (rc) return rc;
  /* A top-level call owns the progress hook; composite steps share it. */
  int top = !e->in_step;
  if (top && (rc = prog_open(e, rq))) {
    prep_done(&pr);
    return rc;
  }
  mstate *m = pr.m;
  const qs_method_desc *d = m->desc;
  cands cs;
  m->runs++; /* before the retry rule reads it */
  rc = cands_build(e, &pr, rq, &cs);
  if (rc) goto done;
  if (e->stop_ns) cands_stoppable(&pr, &cs);
  /* outputs live where the inputs live (quicksilver_image.h), or where
   * the caller gave them */
  rc = given    ? outputs_take(e, &pr, outputs, d->n_outputs)
       : pr.dev ? devcall_outputs(e, &pr, outputs, d->n_outputs)
                : outputs_alloc(e, pr.shape, d->n_outputs, outputs);
  if (rc) goto done;
  /* a device call's outputs in host memory, for an implementation of
   * another place (then pushed to the device outputs) */
  qs_image hout[QS_MAX_OUTPUTS];
  int have_hout = 0, used_dev = 0, used_host = 0;

  double calib = 0, calib_once = 0;
  double load0 = clrt_load_seconds(e->cl);
  unsigned char cold[QS_MAX_ESTIMATES];
  /* a composite's steps in a calibration slice run with a time limit
   * calibrate nothing: their slices would spend that run's limit (and an
   * OpenCL program build no poll can stop) */
  if (!e->stop_ns && cands_cold(e, m, &cs, cold)) {
    /* slices are cut from host memory: device inputs pulled (once) */
    const qs_image *own_in = pr.in;
    if (pr.dev && devcall_pull(e, &pr) == QS_OK) pr.in = pr.host_in;
    prog_counting(e, 0);
    if (!pr.dev || pr.pulled) {
      calib = calibrate(e, &pr, cold, cands_known(&pr, &cs, cold), outputs,
                        &calib_once);
      /* the runtimes loaded for a listed device are the process's start,
       * as discovery at open was, not calibration's (load_seconds) */
      calib -= clrt_load_seconds(e->cl) - load0;
      if (calib < 0) calib = 0;
    }
    prog_counting(e, 1);
    pr.in = own_in;
    for (size_t i = 0; i < m->n_impls; i++)
      if (cold[i]) cand_refresh(e, &pr, &cs, i);
    cands_prior(e, m, &cs);
    cands_waiting(e, &pr, &cs, cold);
  }

  double est[QS_MAX_ESTIMATES];
  int src[QS_MAX_ESTIMATES];
  run_result res = {0};
  const char *reason = "forced";
  int fallbacks = 0;
  long pick = -1, last = -1;
  for (;;) {
    const char *why_pick = "forced";
    if (prog_cancelled(e) || prog_stop_due(e)) { /* in calibration, or
                                                    before a fallback */
      res.status = QS_ECANCELLED;
      break;
    }
    pick = cands_choose(e, &pr, &cs, &e->rng, &why_pick, est, src);
    if (pick < 0) break;
    if (!cs.exact && calib > 0 && src[pick] == SRC_MODEL)
      why_pick = "calibration";
    if (fallbacks == 0) reason = why_pick;
    last = pick;
    /* a device call: the implementation runs on the device images, or
     * on host memory the engine moves (devimg.c) */
    int native = !pr.dev || devcall_native(&pr, &m->impls[pick]);
    const qs_image *in = pr.in;
    qs_image *out = outputs;
    int reused = fallbacks > 0;
    if (pr.dev) {
      int mrc = QS_OK;
      if (!native) {
        mrc = devcall_pull(e, &pr);
        if (!mrc && !have_hout)
          have_hout = !(mrc = outputs_alloc(e, pr.shape, d->n_outputs, hout));
        in = pr.host_in;
        out = hout;
      }
      if (mrc) { /* the move failed, not the implementation */
        res = (run_result){.status = mrc};
        snprintf(res.err, sizeof res.err, "%.500s", e->err);
        break;
      }
      int *used = native ? &used_dev : &used_host;
      reused = *used;
      *used = 1;
    }
    e->in_run = top;
    run_once(e, m, (size_t)pick, in, pr.n_in, out, d->n_outputs, pr.p,
             reused, &res);
    e->in_run = 0;
    if (res.status && (prog_cancelled(e) || prog_stop_due(e)))
      res.status = QS_ECANCELLED;
    run_account(e, &pr, (size_t)pick, devcall_key(&pr, &m->impls[pick]),
                pr.work, &res, res.status);
    if (res.status == QS_OK && !native &&
        (res.status = devcall_push(e, &pr, hout, outputs, d->n_outputs))) {
      snprintf(res.err, sizeof res.err, "%.500s", e->err);
      break; /* the move failed, not the implementation */
    }
    if (res.status == QS_OK || cs.exact || res.status == QS_ECANCELLED)
      break;
    cs.c[pick].excluded = "failed";
    snprintf(cs.why[pick], sizeof cs.why[pick], "%.120s", res.err);
    fallbacks++;
    reason = "fallback";
  }
  if (res.status == QS_ECANCELLED) {
    if (!given) outputs_free(outputs, d->n_outputs);
    rc = engine_fail(e, QS_ECANCELLED, "method %s: %s", d->name,
                     prog_cancelled(e) ? "cancelled by the caller"
                                       : "stopped at calibration's time "
                                         "limit");
  } else if (pick < 0 || res.status) {
    if (!given) outputs_free(outputs, d->n_outputs);
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
    report->bytes_up = res.bytes_up + pr.bytes_pushed;
    report->bytes_down = res.bytes_down + pr.bytes_pulled;
    report->bytes_pulled = pr.bytes_pulled;
    report->bytes_pushed = pr.bytes_pushed;
    report->calibration_seconds = calib;
    report->calibration_once_seconds = calib_once;
    report->load_seconds = clrt_load_seconds(e->cl) - load0;
    report->fallbacks = fallbacks;
    report_estimates(report, m, &cs, est, src);
  }
  if (have_hout) outputs_free(hout, d->n_outputs);
done:
  if (report) report->record_status = e->rec_status;
  if (top) {
    if (rc == QS_OK) prog_finish(e);
    prog_close(e);
  }
  prep_done(&pr);
  return rc;
}
