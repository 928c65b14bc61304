/* choice.c — what the agent is told about every implementation of a call
 * (exact-key history, the fitted model over its other keys, availability,
 * recent failures) and its choice, with the estimates a report shows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Failed implementations are skipped for their key for this many runs of
 * the method, then tried once more. */
#define RETRY_AFTER 20


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
  double *times = works ? works + n : NULL; /* no arithmetic on NULL */
  /* m->all is newest key first; the fit keeps the newest when it must cut */
  size_t j = n;
  r->fit_once = 0;
  r->fit_once_n = 0;
  for (hist *k = m->all; k; k = k->sibling) {
    if (k->impl != i || !k->n || k->mismatch) continue;
    if (k->once > 0 && (r->fit_once <= 0 || k->once < r->fit_once))
      r->fit_once = k->once;
    r->fit_once_n += k->once_n;
    j--;
    works[j] = k->work;
    times[j] = hist_stats(k)->fast_mean;
  }
  r->fit_n = n && !agent_fit(works, times, n, &r->fit_a, &r->fit_b) ? n : 0;
  /* one size (one point, or all at one work): its work, for the bound */
  r->fit_w1 = 0;
  r->fit_wmax = 0;
  for (size_t k = 0; k < r->fit_n; k++) {
    r->fit_w1 = k == 0 || works[k] == r->fit_w1 ? works[k] : -1;
    if (works[k] > r->fit_wmax) r->fit_wmax = works[k];
  }
  if (r->fit_w1 < 0) r->fit_w1 = 0;
  r->fit_gen = r->gen;
  free(works);
}

double cand_stopped(const mstate *m, size_t i, double work) {
  double b = 0;
  for (const hist *h = m->all; h; h = h->sibling) {
    if (h->impl != i || !(h->stopped > 0) || !(h->work > 0)) continue;
    agent_cand one = {.kind = m->impls[i].def->kind, .n_points = 1,
                      .fitted = 1, .fit_b = h->stopped / h->work,
                      .point_work = h->work};
    double x = agent_lower(&one, work);
    if (x > b) b = x;
  }
  return b;
}

static void cand_fill(mstate *m, size_t i, const prep *pr,
                      const qs_method_call *c, int forced, agent_cand *a,
                      cand_buf *b, char *why, size_t why_len) {
  rimpl *r = &m->impls[i];
  *a = (agent_cand){.kind = r->def->kind};
  if (!registry_usable(r, c, why, why_len)) a->excluded = "unavailable";
  hist *h = hist_get(m, i, devcall_key(pr, r), pr->work, 0);
  if (h) {
    a->n_walls = hist_walls(h, b->walls);
    a->walls = b->walls;
    const qs_stats *st = hist_stats(h);
    a->fast = st ? st->fast_mean : 0;
    a->delayed = h->delayed;
    a->factor = h->factor;
    a->p = h->p;
    a->once = h->here ? 0 : h->once;
    a->once_known = h->here || h->once_n != 1;
    a->no_slice = h->no_slice;
    if (!a->excluded && !forced && h->mismatch) a->excluded = "mismatch";
    if (!a->excluded && !forced && h->failed &&
        m->runs - h->failed_at <= RETRY_AFTER)
      a->excluded = "failed";
  }
  if (!a->excluded && !forced && pr->work >= r->oom_work)
    a->excluded = "device_memory";
  if (a->n_walls) return; /* the exact key decides; no model needed */
  a->stopped = cand_stopped(m, i, pr->work);
  impl_fit(m, i);
  a->n_points = r->fit_n;
  a->fitted = r->fit_n > 0;
  a->fit_a = r->fit_a;
  a->fit_b = r->fit_b;
  a->max_work = r->fit_wmax;
  if (r->fit_w1 > 0) a->n_points = 1, a->point_work = r->fit_w1;
  /* a process that has not run the key pays its one-time costs (a new
   * size's first launch at least): the least its other keys paid */
  a->once = h && h->here ? 0 : r->fit_once;
  a->once_known = r->fit_once_n > 1;
}

static const char *const source_names[] = {"none", "history", "model"};


/* Refreshes candidate i from the history (after calibration added some). */
void cand_refresh(qs_engine *e, prep *pr, cands *cs, size_t i) {
  qs_method_call probe;
  call_init(e, &pr->m->impls[i], &probe, pr->in, pr->n_in, NULL, 0, pr->p,
            NULL, 0);
  cand_fill(pr->m, i, pr, &probe, cs->exact, &cs->c[i], &cs->buf[i],
            cs->why[i], sizeof cs->why[i]);
  cs->c[i].transfer = devcall_transfer(e, pr, &pr->m->impls[i]);
}

/* One code under two schedules: the same function, both on the host's
 * threads (QS_CPU_IMPLS: serial and the threaded schedules). */
int cand_siblings(const mstate *m, size_t i, size_t j) {
  const qs_impl_def *a = m->impls[i].def, *b = m->impls[j].def;
  int cpu_a = a->kind == QS_IMPL_SERIAL || a->kind == QS_IMPL_THREADED;
  int cpu_b = b->kind == QS_IMPL_SERIAL || b->kind == QS_IMPL_THREADED;
  return i != j && cpu_a && cpu_b && a->run && a->run == b->run;
}

/* The prior a sibling's bound gives (cands_prior): a schedule of the
 * engine's T threads is at most T times faster than another, less a CPU
 * kind's fixed cost. */
static double sibling_prior(const qs_engine *e, double bound) {
  double threads = e->threads > 1 ? (double)e->threads : 1;
  return (bound - AGENT_CPU_FIXED) / threads;
}

void cands_prior(const qs_engine *e, const mstate *m, cands *cs) {
  double u = agent_run_noise(cs->c, m->n_impls);
  for (size_t i = 0; i < m->n_impls; i++) cs->c[i].run_u = u;
  for (size_t i = 0; i < m->n_impls; i++) {
    agent_cand *c = &cs->c[i];
    c->prior = 0;
    if (!agent_cold(c)) {
      /* known by one size only: what its siblings' stopped slice runs
       * allow (a one-size bound under AGENT_CPU_FIXED is near 0: rgc's
       * threaded_guided, 0.9 ms on a slice beside siblings stopped at 7 ms,
       * asked for a second slice size on every call, and each call made
       * slices that no budget let it run: 0.4 ms of a 2.7 ms call) */
      if (c->n_points == 1 && !c->n_walls)
        c->prior = cand_stop_prior(e, m, i, cs->work);
      continue;
    }
    for (size_t j = 0; j < m->n_impls; j++) {
      const agent_cand *s = &cs->c[j];
      /* a cold sibling's own bound, from its stopped slice runs, only: a
       * prior from a prior would depend on the order */
      double lo = agent_cold(s) ? s->stopped : agent_lower(s, cs->work);
      /* nor from a sibling run once on the key: one run cannot tell an
       * outlier (shift_magnify's serial, 4.3 ms a call, once took 15.1 ms,
       * and the prior it gave kept three schedules within 5 % of the best
       * untried past call 10) */
      if (!agent_cold(s) && s->n_walls == 1) lo = 0;
      if (!cand_siblings(m, i, j) || !(lo > 0) ||
          (s->excluded && strcmp(s->excluded, "not_selected")))
        continue;
      double p = sibling_prior(e, lo - s->transfer);
      if (p > c->prior) c->prior = p;
    }
  }
}

/* Selection, history and availability of every implementation for the
 * call; QS_EUNAVAIL (message set) when none can run. */
int cands_build(qs_engine *e, prep *pr, const qs_run_request *rq, cands *cs) {
  mstate *m = pr->m;
  unsigned char mask[QS_MAX_ESTIMATES];
  cs->exact = 0;
  if (rq->impl && *rq->impl) {
    int rc = impl_select(e, m, rq->impl, mask, &cs->exact);
    if (rc) return rc;
  } else {
    memset(mask, 1, m->n_impls);
  }
  hist_load(e, m); /* without history the agent still chooses */
  cs->work = pr->work;
  cs->usable = -1;
  for (size_t i = 0; i < m->n_impls; i++) {
    cand_refresh(e, pr, cs, i);
    if (!mask[i] && !cs->c[i].excluded) cs->c[i].excluded = "not_selected";
    if (!cs->c[i].excluded && cs->usable < 0) cs->usable = (long)i;
  }
  cands_prior(e, m, cs);
  if (cs->usable >= 0) return QS_OK;
  size_t i = 0;
  while (i < m->n_impls && !mask[i]) i++;
  return engine_fail(e, QS_EUNAVAIL, "method %s: %s%s is not available here: "
                     "%s", m->desc->name, rq->impl ? "implementation " : "",
                     rq->impl ? rq->impl : "no implementation",
                     i < m->n_impls && cs->why[i][0] ? cs->why[i]
                                                     : "every candidate "
                                                       "was excluded");
}

void cands_stoppable(const prep *pr, cands *cs) {
  const mstate *m = pr->m;
  int other = 0;
  for (size_t i = 0; i < m->n_impls; i++)
    other |= !cs->c[i].excluded && m->impls[i].def->kind != QS_IMPL_OPENCL;
  for (size_t i = 0; other && !cs->exact && i < m->n_impls; i++)
    if (!cs->c[i].excluded && m->impls[i].def->kind == QS_IMPL_OPENCL)
      cs->c[i].excluded = "not_selected";
}

int cand_has_sibling(const mstate *m, size_t i) {
  for (size_t j = 0; j < m->n_impls; j++)
    if (cand_siblings(m, i, j)) return 1;
  return 0;
}

double cand_stop_prior(const qs_engine *e, const mstate *m, size_t i,
                       double work) {
  double p = cand_stopped(m, i, work);
  for (size_t j = 0; j < m->n_impls; j++) {
    if (!cand_siblings(m, i, j)) continue;
    double q = sibling_prior(e, cand_stopped(m, j, work));
    if (q > p) p = q;
  }
  return p;
}

/* Candidates that calibration would run; returns how many. cold[i] is
 * CALIB_COLD for one with no timing at all, CALIB_SECOND for one timed at
 * a single work size (a fixed cost and a per-work one not yet told apart)
 * whose optimistic bound could still beat the best known (agent_lower):
 * it needs a second size (only against a best timed on the key or
 * modelled through two sizes: among one-size models alone the call
 * itself is the next timing). A hopeless one, a cold one outclassed by
 * its prior (cands_prior), or one whose probe refused the key's slice
 * (tried on the call instead, agent_choose), is not calibrated. */
size_t cands_cold(const qs_engine *e, const mstate *m, const cands *cs,
                  unsigned char *cold) {
  size_t n = 0;
  double best = INFINITY;
  for (size_t i = 0; i < m->n_impls; i++) {
    const agent_cand *c = &cs->c[i];
    int src;
    if (c->excluded || agent_cold(c) || c->point_work > 0) continue;
    double t = agent_estimate(c, cs->work, &src) + c->once + c->transfer;
    if (t < best) best = t;
  }
  for (size_t i = 0; i < m->n_impls; i++) {
    const agent_cand *c = &cs->c[i];
    cold[i] = 0;
    if (cs->exact || e->no_calibration || c->excluded || c->no_slice)
      continue;
    if (agent_cold(c))
      cold[i] = agent_outclassed(c, best) ? 0 : CALIB_COLD;
    else if (!c->n_walls && c->point_work > 0 && best < INFINITY &&
             agent_lower(c, cs->work) < best * (1 - AGENT_TIE))
      cold[i] = CALIB_SECOND;
    n += cold[i] != 0;
  }
  return n;
}

/* The estimates part of a report, with each candidate's optimistic bound
 * and the rule's verdict on it (agent_explain; pick: the choice). */
void report_estimates(qs_run_report *report, const mstate *m, const cands *cs,
                      const double *est, const int *src) {
  report->n_estimates = m->n_impls;
  double lower[QS_MAX_ESTIMATES];
  const char *state[QS_MAX_ESTIMATES];
  long pick = -1;
  for (size_t i = 0; i < m->n_impls; i++)
    if (!strcmp(m->impls[i].name, report->impl)) pick = (long)i;
  agent_explain(cs->c, m->n_impls, cs->work, pick, lower, state);
  for (size_t i = 0; i < m->n_impls; i++) {
    qs_run_estimate *x = &report->estimates[i];
    const agent_cand *c = &cs->c[i];
    snprintf(x->impl, sizeof x->impl, "%s", m->impls[i].name);
    x->seconds = est[i];
    x->transfer_seconds = c->transfer;
    x->runs = (int)(c->n_walls ? c->n_walls : c->n_points);
    const char *s = source_names[src[i]];
    if (src[i] == SRC_MODEL && c->n_points == 1) s = "scaled";
    if (c->excluded && strcmp(c->excluded, "not_selected")) s = c->excluded;
    snprintf(x->source, sizeof x->source, "%s", s);
    x->optimistic = lower[i];
    snprintf(x->state, sizeof x->state, "%s",
             cs->exact && (long)i == pick ? "forced" : state[i]);
  }
}

/* Cold candidates hidden from the agent (excluded, their exclusions kept
 * in was) and shown again: where a choice must not try one on the call.
 * Only while a usable candidate is known: with none, the agent's own rule
 * for cold ones (the static order) decides. */
static void cold_hide(cands *cs, size_t n, const char **was) {
  int known = 0;
  for (size_t i = 0; i < n; i++) {
    was[i] = cs->c[i].excluded;
    known |= !was[i] && !agent_cold(&cs->c[i]);
  }
  for (size_t i = 0; known && i < n; i++)
    if (!was[i] && agent_cold(&cs->c[i])) cs->c[i].excluded = "cold";
}

static void cold_show(cands *cs, size_t n, const char *const *was) {
  for (size_t i = 0; i < n; i++) cs->c[i].excluded = was[i];
}

/* Marks the candidates known by a model of one work size that
 * calibration will time at a second one (agent_cand.second): with
 * calibration on, one whose probe takes slices. */
static void cands_second(const qs_engine *e, cands *cs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    agent_cand *c = &cs->c[i];
    c->second = !e->no_calibration && !c->n_walls && c->point_work > 0 &&
                !c->no_slice;
  }
}

/* The agent's pick among the candidates (forced: the usable one); *reason
 * says why. est/src receive every candidate's estimate. */
long cands_choose(qs_engine *e, const prep *pr, cands *cs, uint64_t *rng,
                  const char **reason, double *est, int *src) {
  mstate *m = pr->m;
  if (cs->exact) {
    const char *unused;
    agent_choose(cs->c, m->n_impls, pr->work, 0, rng, &unused, est, src);
    *reason = "forced";
    return cs->usable;
  }
  /* Only a call of its own tries a cold candidate on itself (the
   * small-call rule, agent.h; engine_own_call says why). */
  const char *was[QS_MAX_ESTIMATES];
  int own = e->no_calibration || engine_own_call(e);
  cands_second(e, cs, m->n_impls);
  if (!own) cold_hide(cs, m->n_impls, was);
  long pick = agent_choose(cs->c, m->n_impls, pr->work, e->no_calibration,
                           rng, reason, est, src);
  if (!own) cold_show(cs, m->n_impls, was);
  /* the graded evidence: a model of one other key is a proportional
   * scaling of it */
  if (pick >= 0 && !strcmp(*reason, "model") && cs->c[pick].n_points == 1)
    *reason = "scaled";
  return pick;
}

int choose_for_key(qs_engine *e, mstate *m, const char *key, double work,
                   const double *p, qs_run_report *report) {
  prep *pr = calloc(1, sizeof *pr);
  cands *cs = calloc(1, sizeof *cs);
  if (!pr || !cs) {
    free(pr), free(cs);
    return engine_fail(e, QS_ENOMEM, "out of memory");
  }
  pr->m = m;
  memcpy(pr->p, p, m->desc->n_params * sizeof *p);
  snprintf(pr->key, sizeof pr->key, "%s", key);
  pr->work = work;
  cs->work = work;
  memset(report, 0, sizeof *report);
  for (size_t i = 0; i < m->n_impls; i++) cand_refresh(e, pr, cs, i);
  cands_prior(e, m, cs);
  unsigned char cold[QS_MAX_ESTIMATES];
  cands_cold(e, m, cs, cold);
  cands_waiting(e, pr, cs, cold);
  double est[QS_MAX_ESTIMATES];
  int src[QS_MAX_ESTIMATES];
  const char *reason = "none";
  uint64_t rng = e->rng;
  /* the best known: a cold one a small call would try next is no choice */
  const char *was[QS_MAX_ESTIMATES];
  cands_second(e, cs, m->n_impls);
  cold_hide(cs, m->n_impls, was);
  long pick = agent_choose(cs->c, m->n_impls, work, 0, &rng, &reason, est,
                           src);
  cold_show(cs, m->n_impls, was);
  if (pick >= 0)
    snprintf(report->impl, sizeof report->impl, "%s", m->impls[pick].name);
  snprintf(report->reason, sizeof report->reason, "%s", reason);
  report_estimates(report, m, cs, est, src);
  free(pr), free(cs);
  return QS_OK;
}

void cands_waiting(const qs_engine *e, const prep *pr, cands *cs,
                   const unsigned char *cold) {
  double budget = -1; /* the account is read once, and only if needed */
  for (size_t i = 0; i < pr->m->n_impls; i++) {
    cs->c[i].waits_once = 0;
    if (!cold[i] || !agent_cold(&cs->c[i])) continue;
    double due = calibrate_once_due(pr->m, i);
    if (due <= 0) continue;
    if (budget < 0)
      budget = calibrate_budget_once(e, pr, cands_known(pr, cs, cold));
    cs->c[i].waits_once = budget < due;
  }
}

double cands_known(const prep *pr, const cands *cs,
                   const unsigned char *cold) {
  double best = -1;
  for (size_t i = 0; i < pr->m->n_impls; i++) {
    if (cold[i] || cs->c[i].excluded) continue;
    int src;
    double t = agent_estimate(&cs->c[i], pr->work, &src);
    if (src != SRC_NONE && t >= 0 && (best < 0 || t < best)) best = t;
  }
  return best;
}
