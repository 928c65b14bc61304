/* calibrate.c — timings for implementations that have none on this
 * device yet, taken on slices of the caller's own input before the choice. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cl/clrt.h"
#include "internal.h"

/* Calibration. The cold candidates (cands_cold: CALIB_COLD) run, in the
 * order below, on a small slice of the caller's input (twice when the
 * first run had one-time costs, so a steady time is recorded), while the
 * budget lasts; then, on a second, larger slice, fastest first (OpenCL on
 * the host's cores last), those whose one-size bound (agent_lower) could
 * still beat the best predicted, with those timed at one size by an
 * earlier call (CALIB_SECOND). Two sizes give the fit a fixed cost and a
 * slope; a hopeless one left at one size is scaled proportionally (which
 * only overestimates it). Candidates the budget leaves out stay cold:
 * later calls calibrate them.
 *
 * Budget: share (engine_options.calibration_share, default CALIB_SHARE) of
 * the predicted full call, at least CALIB_FLOOR, plus the account carried
 * across calls (calib_carry: what the calls so far allowed less what
 * calibration spent), at most engine_options.calibration_budget when set.
 * The floor lets a call of a few ms calibrate something; at 2 ms it was
 * 20-40 % of calls of 5-10 ms (shift_magnify 10 x 256 x 256 spent 1.5 ms
 * before a 5.3 ms call). The account makes an overshoot (the first run on
 * a slice, a program build) cost later calls their calibration instead of
 * recurring on each: eSRRF 20 x 256 x 256 spent 30-40 % of calls 3-8 each
 * starting a scalar variant. The account counts the slices' one-time
 * seconds too (an OpenCL program loaded by each fresh process), and a
 * candidate with one-time costs due in this process (calibrate_once_due)
 * starts only when the budget covers them. The prediction comes from the
 * candidates already known, else from the first candidate's runs on the
 * small slice and on one twice as large per side (a fit through two
 * sizes; later candidates are assumed to scale alike). A candidate starts
 * only while the budget left covers CALIB_NEXT times the slowest
 * small-slice run so far times the spread seen (slowest / fastest):
 * eSRRF's variants on a slice, in calibration order, take about 1,
 * 0.5-1.5, 7-14 and 50-100 times the first (fused_avx2, fused_vec,
 * fused, the unfused scalar ones).
 *
 * Tiny calls (nothing known, and the first slices would hold half the
 * call or more: tiny_call) calibrate nothing: the static order's first
 * candidate runs on the call, and later calls try the others as below.
 *
 * Small calls (best predicted under AGENT_SMALL_CALL): a slice run costs
 * a run's fixed costs (outputs, key, record, the pool's wake-up), about
 * as much as such a call, so calibration makes only the first candidate's
 * prediction (and nothing for a key predicted small from what is known);
 * the other cold CPU candidates run on the caller's later calls, one a
 * call (cands_choose), where their timing is of the exact key.
 *
 * Order: the static preference by kind and work (small work: serial,
 * threaded, composite; large: threaded, composite, serial) with OpenCL on
 * a GPU first for large work, and OpenCL devices that share the host's
 * cores last in a cold call (no CPU implementation is timed right after
 * them: their runtime's threads run on the same cores) but first in a
 * warm call of large work, the CPU ones then waiting for the next call
 * (warm_rank). A cold OpenCL implementation (program builds and first
 * launches ahead) starts only for a call predicted at CALIB_CL_CALL
 * seconds or more.
 *
 * Slices: the small one is 1/32 of the rows and columns, at least
 * CALIB_MIN_SIDE pixels per side, then halved per side (down to
 * CALIB_LEAST_SIDE) while it holds more than share / (2 n) of the call's
 * work for n candidates, so that all of them fit the budget once (an
 * eSRRF slice of 4 frames of 32 x 32 pixels is 1/20 of a 20 x 64 x 64
 * call), and down to CALIB_LEAST_SIDE when a best is known (the small run
 * then only tells the hopeless from the rest); the second is as large as
 * the budget left allows for all of them, from 2x to 8x per side: on the
 * small slice fixed costs dominate, the second separates them from the
 * per-pixel cost. */
#define CALIB_SHARE 0.10
#define CALIB_FLOOR 0.0005
#define CALIB_CL_CALL 0.02
/* A warm call predicted at this many seconds or more calibrates a device
 * on the host's cores before the CPU candidates (warm_rank). */
#define CALIB_CL_FIRST 0.1
/* What an OpenCL implementation's first run in a process is taken to cost
 * in one-time seconds until one has been seen: PoCL here loads a program
 * from the binary cache and compiles a new size in 20-30 ms. */
#define CALIB_CL_ONCE 0.02
#define CALIB_MIN_SIDE 32
#define CALIB_LEAST_SIDE 8
#define CALIB_NEXT 4.0
/* The budget a stoppable run on the second slice needs, in multiples of
 * its optimistic bound (second_need). */
#define CALIB_ROOM 2.0
#define CALIB_THIN 0.5
/* A key's first CALIB_EARLY calls budget calibration_share of their time,
 * later ones CALIB_LATE of that (goals: at most 10 % of calls 1-10, 2 %
 * of calls 11-30; with the full share for good, the real eSRRF stack
 * spent 10 % of calls 11-30 starting scalar variants 25-130x the
 * incumbent). */
#define CALIB_EARLY 10
#define CALIB_LATE 0.2
/* A candidate with one-time costs due in this process may borrow the
 * shares of up to this many of the key's next early calls (calib_ahead). */
#define CALIB_AHEAD 4
static size_t slice_side(size_t full) {
  size_t s = (full + 31) / 32;
  if (s < CALIB_MIN_SIDE) s = CALIB_MIN_SIDE;
  return s < full ? s : full;
}

/* The generic slice: first frame of every input, top-left crop of the same
 * fraction of each input's size. */
static int slice_generic(const qs_method_desc *d, const qs_image *in,
                         size_t rows, size_t cols, qs_image *out) {
  for (size_t k = 0; k < d->n_inputs; k++) {
    size_t r = in[k].rows * rows / in[0].rows;
    size_t c = in[k].cols * cols / in[0].cols;
    r = r ? r : 1;
    c = c ? c : 1;
    int rc = qs_image_alloc(&out[k], 1, r, c);
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

/* The call's own host outputs, lent to the slices' outputs: the call
 * provided them before calibration (their pages touched), where fresh
 * outputs for each slice paid the host's page faults at every cut, in
 * every process (rgc 4 x 64 x 64: 0.3 ms to make a slice with a 625 x 625
 * output, against runs of 0.2-0.5 ms on it, and calls of 2.7 ms). What a
 * slice's runs leave there is never read; every run zeroes its outputs
 * first (run_once), and calibrate zeroes what was lent before the call
 * itself runs. */
typedef struct lender {
  qs_image *out; /* NULL: nothing to lend */
  size_t n;
  size_t px[QS_MAX_OUTPUTS]; /* the most pixels of each lent */
} lender;

/* Outputs of the given shapes, in the lender's memory where it holds them
 * (else allocated as the call's are). */
static int slice_outputs(qs_engine *e, lender *ln, const qs_image *shape,
                         size_t n, qs_image *out) {
  for (size_t k = 0; k < n; k++) {
    size_t px = shape[k].frames * shape[k].rows * shape[k].cols;
    const qs_image *o = ln->out && k < ln->n ? &ln->out[k] : NULL;
    if (o && o->data && px <= o->frames * o->rows * o->cols) {
      out[k] = qs_image_wrap(o->data, shape[k].frames, shape[k].rows,
                             shape[k].cols);
      if (px > ln->px[k]) ln->px[k] = px;
      continue;
    }
    int rc = outputs_alloc(e, &shape[k], 1, &out[k]);
    if (rc) {
      outputs_free(out, k);
      return rc;
    }
  }
  return QS_OK;
}

/* A slice of the call's input at `rows` x `cols` with its output shapes,
 * outputs (lent or allocated), key and work. slice_done releases it. */
typedef struct slice {
  qs_image in[QS_MAX_INPUTS], out[QS_MAX_OUTPUTS];
  char key[QS_KEY_MAX];
  double work;
} slice;

static void slice_done(const qs_method_desc *d, slice *sl) {
  outputs_free(sl->out, d->n_outputs);
  outputs_free(sl->in, d->n_inputs);
}

static int slice_make(qs_engine *e, const prep *pr, lender *ln, size_t rows,
                      size_t cols, slice *sl) {
  const qs_method_desc *d = pr->m->desc;
  qs_image shape[QS_MAX_OUTPUTS];
  char msg[512];
  memset(sl, 0, offsetof(slice, key));
  if (d->n_inputs > QS_MAX_INPUTS) return QS_EINVAL;
  int rc = d->slice ? d->slice(pr->in, pr->p, rows, cols, sl->in)
                    : slice_generic(d, pr->in, rows, cols, sl->in);
  if (rc) return rc;
  for (size_t k = 0; !rc && k < d->n_inputs; k++)
    rc = !sl->in[k].data || !sl->in[k].frames || !sl->in[k].rows ||
         !sl->in[k].cols;
  if (!rc && d->shape) rc = d->shape(sl->in, pr->p, shape, msg, sizeof msg);
  if (!rc && !d->shape)
    for (size_t i = 0; i < d->n_outputs; i++)
      shape[i] = (qs_image){NULL, sl->in[0].frames, sl->in[0].rows,
                            sl->in[0].cols, NULL};
  if (!rc) rc = key_slice_text(d, sl->in, pr->p, sl->key, sizeof sl->key);
  if (!rc) rc = slice_outputs(e, ln, shape, d->n_outputs, sl->out);
  if (rc) {
    outputs_free(sl->in, d->n_inputs);
    return rc ? rc : QS_ESHAPE;
  }
  sl->work = key_work(d, sl->in, pr->p, shape);
  return QS_OK;
}

/* slice_make, and the seconds it took in *took (copying the inputs,
 * the outputs' first pages): a cost of calibration that grows with the
 * slice's area as its runs do. */
static int slice_make_timed(qs_engine *e, const prep *pr, lender *ln,
                            size_t rows, size_t cols, slice *sl,
                            double *took) {
  int64_t t = engine_now(e);
  int rc = slice_make(e, pr, ln, rows, cols, sl);
  *took = (double)(engine_now(e) - t) * 1e-9;
  return rc;
}

/* Runs implementation i on the slice, recorded under the slice's key;
 * returns the steady seconds, or -1 if it failed (then it is also skipped
 * for the caller's key), its probe refuses the slice or it was stopped.
 * limit > 0: the run stops once it has taken that many seconds (its polls
 * say stop, progress.c); the wall it reached is recorded as a lower bound
 * of its time on the slice (run_stopped). */
static double slice_run(qs_engine *e, prep *pr, size_t i, slice *sl,
                        double *spent, double *once, double limit) {
  mstate *m = pr->m;
  const qs_method_desc *d = m->desc;
  qs_method_call probe;
  char why[128];
  call_init(e, &m->impls[i], &probe, sl->in, d->n_inputs, NULL, 0, pr->p,
            NULL, 0);
  if (!registry_usable(&m->impls[i], &probe, why, sizeof why)) {
    hist *h = hist_get(m, i, pr->key, pr->work, 1);
    if (h) h->no_slice = 1; /* the call itself will time it */
    return -1;
  }
  run_result res;
  double best = -1;
  int64_t outer = e->stop_ns; /* a composite's slice run around this one */
  int limited = limit > 0 || outer;
  for (int k = 0; k < 2; k++) {
    /* the limit counts from the implementation's start (run_once): from
     * before the zeroing of a slice's outputs (10 MB for rgc on a 640 x
     * 640 slice, about 1 ms), vec was stopped short of the limit that
     * settles it, recorded under it, and tried again at the next call */
    e->stop_in_ns = limit > 0 ? (int64_t)(limit * 1e9) : 0;
    run_once(e, m, i, sl->in, d->n_inputs, sl->out, d->n_outputs, pr->p, 1,
             &res);
    e->stop_in_ns = 0;
    e->stop_ns = outer;
    *spent += res.wall;
    *once += res.once_s;
    if (res.status && prog_cancelled(e)) return -1; /* the caller's stop */
    if (res.status == QS_ECANCELLED && limited) {
      /* at its limit: what it took is the least it takes there (not when
       * the outer run's limit stopped it) */
      if (!(outer && engine_now(e) > outer))
        run_stopped(e, pr, i, sl->key, sl->work, res.wall - res.once_s);
      return -1;
    }
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

/* What the method's calibration has left unspent of the budgets of the
 * calls timed so far (each the share of its time, at least CALIB_FLOOR);
 * negative: what it overspent (a slice run longer than expected, a
 * program build), paid back by the next calls. Both sides come from the
 * history (the newest AGENT_WINDOW runs per key), so the account holds
 * across processes. */
static double calib_carry(const qs_engine *e, const mstate *m) {
  double share = e->calib_share > 0 ? e->calib_share : CALIB_SHARE;
  double credit = 0, spent = 0, w[AGENT_WINDOW];
  int full = 0;
  for (const hist *h = m->all; h; h = h->sibling) {
    size_t n = hist_walls(h, w);
    int sliced = strstr(h->key, KEY_SLICE_MARK) != NULL;
    full |= !sliced && n == AGENT_WINDOW;
    /* a slice's one-time costs (an OpenCL program loaded in a fresh
     * process, a new size's first launch) were spent by calibration too:
     * 20-30 ms a process on PoCL, against calls of 25 ms on the real
     * eSRRF stack, where the walls alone let it start one a call */
    if (sliced) spent += h->once_sum + h->stopped_sum;
    for (size_t k = 0; k < n; k++) {
      /* a key's first CALIB_EARLY runs (all still in its window) credit
       * the share, later ones CALIB_LATE of it */
      double f = n < AGENT_WINDOW && k < CALIB_EARLY ? 1 : CALIB_LATE;
      if (sliced)
        spent += w[k];
      else
        credit += f * (share * w[k] > CALIB_FLOOR ? share * w[k]
                                                  : CALIB_FLOOR);
    }
  }
  /* A slice key keeps its few runs while a caller's key window rolls:
   * once one is full, what is still owed is forgiven, so that no
   * overshoot blocks a method for more than AGENT_WINDOW calls of a key. */
  return full && credit < spent ? 0 : credit - spent;
}

/* How many runs the caller's key has had, every implementation's. */
static size_t key_runs(const prep *pr) {
  size_t n = 0;
  for (size_t i = 0; i < pr->m->n_impls; i++) {
    hist *h = hist_get(pr->m, i, pr->key, pr->work, 0);
    n += h ? h->n : 0;
  }
  return n;
}

/* Whether the caller's key has had CALIB_EARLY runs or more (its share
 * is then CALIB_LATE of calibration_share). */
static int key_late(const prep *pr) { return key_runs(pr) >= CALIB_EARLY; }

/* What a candidate with one-time costs due in this process (an OpenCL
 * device: PoCL loads its program and compiles a new size, 20-30 ms in each
 * fresh process) may borrow beyond the budget: the shares of up to
 * CALIB_AHEAD of the key's next early calls, which the account then
 * repays, so that calls 1-10 still spend their share together. Owed
 * nothing, it waited for the account to cover its one-time costs a call
 * at a time: on eSRRF 100 x 64 x 64 (calls of 35-40 ms, 3.5-4 ms of
 * share each) the device was first timed at call 8-10. The CPU
 * candidates borrow nothing (their passes of about a millisecond fit a
 * call's share), nor does any with a calibration_budget set. */
static double calib_ahead(const qs_engine *e, const prep *pr,
                          double predicted) {
  if (!(predicted > 0) || e->calib_budget > 0) return 0;
  size_t n = key_runs(pr);
  if (n + 1 >= CALIB_EARLY) return 0;
  size_t k = CALIB_EARLY - 1 - n;
  double share = e->calib_share > 0 ? e->calib_share : CALIB_SHARE;
  return share * predicted * (double)(k < CALIB_AHEAD ? k : CALIB_AHEAD);
}

/* The budget left for implementation i: `left`, and what it may borrow
 * (calib_ahead) when it has one-time costs due here. */
static double left_for(const mstate *m, size_t i, double left, double ahead) {
  return calibrate_once_due(m, i) > 0 ? left + ahead : left;
}

/* The same for its run on the second slice, when its first run in this
 * call paid `paid` one-time seconds: it may borrow those too, which the
 * second size run by a later call in another process would pay again.
 * eSRRF 100 x 64 x 64 with OpenCL (calls of 31 ms) paid PoCL's program
 * loading, 12 ms, at call 1 and again at call 6 for the second size:
 * 10.2 % of calls 1-10 calibrating. */
static double left_second(const mstate *m, size_t i, double left,
                          double ahead, double paid) {
  return paid > 0 ? left + ahead + paid : left_for(m, i, left, ahead);
}

/* Budget: the share of the predicted call (at least CALIB_FLOOR; after
 * the key's first CALIB_EARLY runs, CALIB_LATE of that) plus the carry
 * (calib_carry), at most engine_options.calibration_budget. */
static double budget_for(const qs_engine *e, const prep *pr, double predicted,
                         double carry) {
  double share = e->calib_share > 0 ? e->calib_share : CALIB_SHARE;
  double b = predicted > 0 ? share * predicted : 0;
  if (b < CALIB_FLOOR) b = CALIB_FLOOR;
  if (key_late(pr)) b *= CALIB_LATE;
  b += carry;
  if (b < 0) b = 0;
  if (e->calib_budget > 0 && b > e->calib_budget) b = e->calib_budget;
  return b;
}

/* Work per input pixel (of the first input). */
static double work_density(const qs_image *in, double work) {
  double px = (double)in->frames * (double)in->rows * (double)in->cols;
  return px > 0 ? work / px : 0;
}

/* Whether a slice is thin: under CALIB_THIN times the call's work per
 * input pixel. A method whose work counts only what it computes (rgc: the
 * pixels inside its zero margin) says so for a slice that is mostly
 * border; its runs there time fixed costs, which scaled to the call
 * misled the model both ways (a 16 x 16 rgc image at M = 5 computes 2 x 2
 * pixels; a schedule 100x slower than the best was chosen). */
static int slice_thin(const prep *pr, const slice *sl) {
  return work_density(sl->in, sl->work) <
         CALIB_THIN * work_density(pr->in, pr->work);
}

/* What a run of implementation i on a slice of `w` work is taken to
 * need, from its time t1 on the small slice (of w1): the least its bound
 * allows there (agent_lower: as much fixed cost as its kind may carry,
 * which does not grow), twice over for one the budget would stop (a CPU
 * kind), plus the one-time costs due. Twice: the bound is optimistic, and
 * a run stopped at the budget short of its end tells nothing (rgc 4 x 64
 * x 64: vec, 0.25 ms on the small slice, started on 0.57 ms of budget
 * and was stopped there 0.03 ms short: 1.2 ms of a 3 ms call for
 * nothing). An OpenCL run is never stopped: what it overshoots, the
 * account pays back. */
static double second_need(const mstate *m, size_t i, double t1, double w1,
                          double w) {
  int stoppable = m->impls[i].def->kind != QS_IMPL_OPENCL;
  agent_cand one = {.kind = m->impls[i].def->kind, .n_points = 1,
                    .fitted = 1, .fit_b = t1 / w1, .point_work = w1};
  return (stoppable ? CALIB_ROOM : 1) * agent_lower(&one, w) /
             (1 - AGENT_NOISE) +
         calibrate_once_due(m, i);
}

/* Rank in the calibration order (lower first). */
enum { RANK_HOST_CL = 6 };
static int calib_rank(const rimpl *r, double work) {
  int large = work >= AGENT_SMALL_WORK;
  switch (r->def->kind) {
  case QS_IMPL_SERIAL:
    return large ? 3 : 0;
  case QS_IMPL_THREADED:
    return large ? 1 : 1;
  case QS_IMPL_COMPOSITE:
    return 2;
  case QS_IMPL_OPENCL:
    if (r->device && cldev_about(r->device)->shares_host_cores)
      return RANK_HOST_CL;
    return large ? 0 : 5;
  default:
    return 7;
  }
}

/* The rank in a call's order: with a best known at CALIB_CL_FIRST or more
 * and large work, an OpenCL device on the host's cores goes first (it is
 * the candidate a fixed cost per call hides longest, and its slice runs
 * are cheap once its programs are cached); the CPU candidates then wait
 * for the next call (host_cl_ran), as their timings right after it would
 * share the cores with its runtime's threads. Below that, its first run
 * in a process (20-30 ms of program loading on PoCL) is a call's worth
 * or more, which the account then repays from the next calls: the CPU
 * candidates, a millisecond each on a slice, go first (the real eSRRF
 * stack, 25 ms calls, left fused_avx2 untried for six calls). */
static int warm_rank(const rimpl *r, double work, int warm) {
  int k = calib_rank(r, work);
  return warm && k == RANK_HOST_CL && work >= AGENT_SMALL_WORK ? -1 : k;
}

static int host_cl(const rimpl *r) { return calib_rank(r, 0) == RANK_HOST_CL; }

/* A serial implementation takes the place of the first of its siblings
 * (the same code under the threaded schedules) in the order: the family
 * is most often settled by a stop at its limit (stop_limit), and the
 * serial kind's, which carries less fixed cost (AGENT_SERIAL_FIXED),
 * comes far sooner. rgc 4 x 64 x 64: the family, 15-60x the best, was
 * settled by threaded_guided's stop at 1.1-1.9 ms (its limit 1.04 ms) of
 * a 2.7 ms call; serial's stops at 0.35-0.38 ms (its limit 0.29 ms). */
static void serial_first(const mstate *m, size_t *order, size_t n) {
  for (size_t k = 0; k < n; k++) {
    if (m->impls[order[k]].def->kind != QS_IMPL_SERIAL) continue;
    size_t at = k;
    for (size_t j = 0; j < k; j++)
      if (cand_siblings(m, order[k], order[j])) {
        at = j;
        break;
      }
    size_t s = order[k];
    for (size_t j = k; j > at; j--) order[j] = order[j - 1];
    order[at] = s;
  }
}

/* The time limit of implementation i's run on a slice of w_slice work,
 * for a call of `work` whose best is predicted at `ref` seconds: the
 * budget left, or sooner the slice time past which its one-size bound
 * (agent_lower) shows it cannot beat ref, nor, for serial and threaded
 * kinds, give a sibling schedule a prior that can (cands_prior: up to T
 * times faster on T threads, less AGENT_CPU_FIXED). A run stopped there
 * settles the candidate: a scalar schedule of the real eSRRF stack, 50x
 * the best, took 11 ms on a slice of a 14 ms call before. OpenCL runs
 * carry program builds and launches their polls cannot stop: none. */
static double stop_limit(const qs_engine *e, const mstate *m, size_t i,
                         double w_slice, double work, double ref,
                         double left) {
  const rimpl *r = &m->impls[i];
  if (r->def->kind == QS_IMPL_OPENCL) return 0;
  if (!(ref > 0) || !(w_slice > 0) || !(work > 0)) return left;
  double threads = e->threads > 1 ? (double)e->threads : 1;
  double target =
      cand_has_sibling(m, i) ? threads * ref + AGENT_CPU_FIXED : ref;
  agent_cand one = {.kind = r->def->kind, .n_points = 1, .fitted = 1,
                    .point_work = w_slice};
  double lo = 0, hi = 2 * target;
  one.fit_b = hi / w_slice;
  if (agent_lower(&one, work) < target) return left; /* never settles */
  for (int k = 0; k < 48; k++) { /* the bound rises with the slice time */
    double mid = 0.5 * (lo + hi);
    one.fit_b = mid / w_slice;
    if (agent_lower(&one, work) < target)
      lo = mid;
    else
      hi = mid;
  }
  return hi < left ? hi : left;
}

/* The least work of any calibration slice of the method; 0: none. */
static double slice_least_work(const mstate *m) {
  double least = 0;
  for (const hist *h = m->all; h; h = h->sibling)
    if (strstr(h->key, KEY_SLICE_MARK) && h->work > 0 &&
        (least <= 0 || h->work < least))
      least = h->work;
  return least;
}

/* Whether implementation i may start on this slice (NULL: on the slice
 * where it, or a sibling, reached the most before, as calibrate_startable
 * asks before cutting one) with `left` seconds
 * when it, or a sibling (the same code under another schedule), was
 * stopped at a limit before, on any slice: only when that covers the
 * limit that settles it (stop_limit). A run stopped there costs no more
 * than one stopped short, and a stop short of it tells nothing new: on
 * rgc 4 x 64 x 64 each threaded schedule in turn was stopped at the
 * budget, 1 ms each, none of them settled. When no limit settles it, the
 * next try doubles the wall reached on this slice.
 *
 * A schedule (an implementation with siblings) never stopped starts, in a
 * call with a best known or predicted (ref > 0), only when the budget
 * covers the limit that settles it, too: the scalar schedules are the
 * slow family of most methods, and one stopped short of settling costs
 * its run and settles neither it nor its siblings (rgc 4 x 64 x 64:
 * threaded_guided, 15x the best, was stopped at 0.87 ms, 0.17 ms short,
 * then run to its limit two calls later). On a slice not cut yet (NULL)
 * the settling limit is read on the method's smallest slice, the least
 * it can be. */
static int stopped_may_start(const qs_engine *e, const mstate *m, size_t i,
                             const slice *sl, double work, double ref,
                             double left) {
  double reached = 0, w_slice = sl ? sl->work : 0; /* on this slice */
  int stopped = 0;
  for (const hist *h = m->all; h; h = h->sibling) {
    if (!(h->stopped > 0) || (h->impl != i && !cand_siblings(m, i, h->impl)))
      continue;
    stopped = 1;
    if ((!sl || !strcmp(h->key, sl->key)) && h->stopped > reached) {
      reached = h->stopped;
      if (!sl) w_slice = h->work;
    }
  }
  if (!stopped) {
    if (!(ref > 0) || !cand_has_sibling(m, i)) return 1;
    if (!sl) w_slice = slice_least_work(m);
    if (!(w_slice > 0)) return 1;
    double settle = stop_limit(e, m, i, w_slice, work, ref, INFINITY);
    return !(settle > 0 && isfinite(settle)) || left >= settle;
  }
  double settle = stop_limit(e, m, i, w_slice, work, ref, INFINITY);
  if (settle > 0 && isfinite(settle)) return left >= settle;
  return left >= 2 * reached;
}

double calibrate_once_due(const mstate *m, size_t i) {
  double least = 0;
  int runs = 0;
  for (const hist *h = m->all; h; h = h->sibling) {
    if (h->impl != i) continue;
    if (h->here) return 0;
    runs += h->n > 0;
    if (h->once > 0 && (least <= 0 || h->once < least)) least = h->once;
  }
  if (least <= 0 && !runs && m->impls[i].def->kind == QS_IMPL_OPENCL)
    return CALIB_CL_ONCE;
  return least;
}

/* Whether implementation i may start now with `left` seconds of budget
 * for a call predicted at `predicted` seconds: a cold OpenCL one has its
 * program builds and first launches ahead, which a call under
 * CALIB_CL_CALL would take many calls to pay back; one whose one-time
 * costs are known waits until the budget covers them. */
static int may_start(const mstate *m, size_t i, double left,
                     double predicted) {
  if (left <= 0 || left < calibrate_once_due(m, i)) return 0;
  return m->impls[i].def->kind != QS_IMPL_OPENCL || predicted >= CALIB_CL_CALL;
}

double calibrate_budget(const qs_engine *e, const prep *pr, double known) {
  return e->no_calibration ? 0
                           : budget_for(e, pr, known, calib_carry(e, pr->m));
}

double calibrate_budget_once(const qs_engine *e, const prep *pr,
                             double known) {
  return e->no_calibration ? 0
                           : calibrate_budget(e, pr, known) +
                                 calib_ahead(e, pr, known);
}

/* Whether a prediction makes the call small (AGENT_SMALL_CALL): its cold
 * CPU candidates are tried on later calls of the key itself. Only a call
 * of its own (engine_own_call): the others calibrate as any call. */
static int small_call(const qs_engine *e, double predicted) {
  return engine_own_call(e) && predicted >= 0 &&
         predicted < AGENT_SMALL_CALL;
}

/* Whether a call with nothing known is too small to slice: the slices
 * calibration would run first (the small one, then the probe twice as
 * large per side) hold half the call's pixels or more, so calibrating
 * costs more than the call (a 1 x 64 x 64 call of 10 us spent 66 us).
 * Such a call runs the static order's first candidate on the call itself,
 * which times the exact key; its later calls try the other cold CPU
 * candidates one a call, as a small call's do (cands_choose). Only a
 * call of its own, as small_call. */
static int tiny_call(const qs_engine *e, const prep *pr) {
  if (!engine_own_call(e) || pr->n_in == 0) return 0;
  const qs_image *in = &pr->in[0];
  size_t r = slice_side(in->rows) * 2, c = slice_side(in->cols) * 2;
  double probe = (double)(r < in->rows ? r : in->rows) *
                 (double)(c < in->cols ? c : in->cols);
  double call = (double)in->frames * (double)in->rows * (double)in->cols;
  return call > 0 && 2 * probe >= call;
}

/* The cheapest steady run (fast-half mean) any CPU implementation of the
 * method has on any calibration slice; -1: none. */
static double slice_cheapest(const mstate *m) {
  double least = -1;
  for (hist *h = m->all; h; h = h->sibling) {
    if (!h->n || m->impls[h->impl].def->kind == QS_IMPL_OPENCL ||
        !strstr(h->key, KEY_SLICE_MARK))
      continue;
    const qs_stats *st = hist_stats(h);
    if (st && st->fast_mean > 0 && (least < 0 || st->fast_mean < least))
      least = st->fast_mean;
  }
  return least;
}

size_t calibrate_startable(const qs_engine *e, const prep *pr,
                           const unsigned char *cold, double known) {
  if (small_call(e, known)) return 0;
  if (known < 0 && tiny_call(e, pr)) return 0;
  double carry = calib_carry(e, pr->m);
  double budget = budget_for(e, pr, known, carry);
  double ahead = calib_ahead(e, pr, known);
  size_t n = 0;
  int cpu_cold = 1; /* every one a cold CPU candidate */
  for (size_t i = 0; i < pr->m->n_impls; i++) {
    double left = left_for(pr->m, i, budget, ahead);
    /* a candidate stopped before starts only where calibrate would let
     * it: on rgc 4 x 64 x 64, avx2 and vec, stopped on their second
     * slice at a budget just short of their run, made every later call
     * cut both slices (0.6 ms of a 2.5 ms call) and run nothing */
    int go = cold[i] &&
             (known < 0 ||
              (may_start(pr->m, i, left, known) &&
               stopped_may_start(e, pr->m, i, NULL, pr->work, known, left)));
    n += go;
    if (go && (cold[i] != CALIB_COLD ||
               pr->m->impls[i].def->kind == QS_IMPL_OPENCL))
      cpu_cold = 0;
  }
  /* A warm call's cold CPU candidate starts only while the budget covers
   * CALIB_NEXT times the cheapest run on its slice (calibrate), which is
   * at least the cheapest on any slice of the method: under that, no
   * slice is cut. Cutting one that nothing then ran on (rgc's, grown
   * from 32 to 128 pixels a side while thin) cost 0.15-0.2 ms, 2-4 % of
   * every 5-8 ms call of rgc 4 x 64 x 64 at M = 5, for calls on end. At
   * worst this waits a call or two longer for a slice of a new size. */
  if (n && known >= 0 && cpu_cold) {
    double least = slice_cheapest(pr->m);
    if (least > 0 && budget < CALIB_NEXT * least) return 0;
  }
  return n;
}

static double calibrate_slices(qs_engine *e, prep *pr, lender *ln,
                               const unsigned char *cold, double known,
                               double *once) {
  mstate *m = pr->m;
  const qs_method_desc *d = m->desc;
  int64_t t0 = engine_now(e);
  double spent = 0, small[QS_MAX_ESTIMATES], paid[QS_MAX_ESTIMATES];
  size_t order[QS_MAX_ESTIMATES], n = 0;
  for (size_t i = 0; i < m->n_impls; i++) small[i] = -1, paid[i] = 0;
  /* Within a rank the implementations declared last go first: a method
   * lists each kind from its reference to its most refined variant (see
   * impl_def in quicksilver.h), and a budget that cannot reach them all
   * should reach the variant most likely to win. */
  int warm = known >= CALIB_CL_FIRST;
  for (size_t i = m->n_impls; i-- > 0;) {
    if (cold[i] != CALIB_COLD) continue;
    size_t k = n++; /* insertion by rank, stable */
    while (k > 0 && warm_rank(&m->impls[order[k - 1]], pr->work, warm) >
                        warm_rank(&m->impls[i], pr->work, warm)) {
      order[k] = order[k - 1];
      k--;
    }
    order[k] = i;
  }
  /* the first candidate of a call with nothing known stays: it predicts
   * the call, and may be the only one timed when the call runs */
  if (known >= 0)
    serial_first(m, order, n);
  else if (n > 1)
    serial_first(m, order + 1, n - 1);
  if (!calibrate_startable(e, pr, cold, known)) return 0; /* no slice made */
  double carry = calib_carry(e, m);
  /* every run waits for the account, a cold candidate's first one too:
   * owed no debt, each warm call of the real eSRRF stack (0.05 s) started
   * one more scalar variant on a slice that took it 0.03-0.3 s, 30-50 %
   * of calls 1-10 calibrating (the account holds the newest AGENT_WINDOW
   * runs a key, so no overshoot blocks a method for longer) */
  double budget = budget_for(e, pr, known, carry);
  size_t rows = slice_side(pr->in[0].rows), cols = slice_side(pr->in[0].cols);
  slice sl;
  double cut_small; /* what making the small slice took */
  if (slice_make_timed(e, pr, ln, rows, cols, &sl, &cut_small)) return 0;
  /* a thin slice (slice_thin) grows, 2x per side, up to the input's size */
  while (slice_thin(pr, &sl) &&
         (rows < pr->in[0].rows || cols < pr->in[0].cols)) {
    slice larger;
    size_t r2 = rows * 2 < pr->in[0].rows ? rows * 2 : pr->in[0].rows;
    size_t c2 = cols * 2 < pr->in[0].cols ? cols * 2 : pr->in[0].cols;
    if (slice_make_timed(e, pr, ln, r2, c2, &larger, &cut_small)) break;
    slice_done(d, &sl);
    sl = larger;
    rows = r2, cols = c2;
  }
  /* every candidate's small run should fit half the share: a slice over
   * share / (2 n) of the call's work is halved per side (not below
   * CALIB_LEAST_SIDE, nor to a size the method refuses). With a best
   * known, the small slice only has to tell the hopeless from the rest
   * (agent_lower): the least side, so that a candidate tens of times
   * slower than the best costs a fraction of the call. */
  double share = e->calib_share > 0 ? e->calib_share : CALIB_SHARE;
  double target = share / (2.0 * (double)(n ? n : 1));
  while (pr->work > 0 && (known >= 0 || sl.work / pr->work > target) &&
         rows / 2 >= CALIB_LEAST_SIDE && cols / 2 >= CALIB_LEAST_SIDE) {
    slice smaller;
    double took;
    if (slice_make_timed(e, pr, ln, rows / 2, cols / 2, &smaller, &took))
      break;
    if (slice_thin(pr, &smaller)) {
      slice_done(d, &smaller);
      break;
    }
    slice_done(d, &sl);
    sl = smaller;
    cut_small = took;
    rows /= 2, cols /= 2;
  }
  double w_small = sl.work, best = -1;
  long first = -1;
  unsigned char twice[QS_MAX_ESTIMATES] = {0};
  double scale = -1; /* predicted full call / small-slice time */
  double slowest = 0; /* the longest small-slice run so far */
  int small_stop = 0, cl_ran = 0;
  /* A warm call's CPU candidate starts only while the budget left covers
   * CALIB_NEXT times the cheapest run earlier calls made on this same
   * slice (its key), not on a sliver of budget a fraction of any run
   * there. (Their spread is not carried over: a slow variant timed once
   * would then keep a fast one declared after it from ever starting.) */
  double seen_fast = -1;
  for (size_t i = 0; known >= 0 && i < m->n_impls; i++) {
    hist *h = m->impls[i].def->kind == QS_IMPL_OPENCL
                  ? NULL
                  : hist_get(m, i, sl.key, sl.work, 0);
    const qs_stats *st = h && h->n ? hist_stats(h) : NULL;
    if (st && st->fast_mean > 0 && (seen_fast < 0 || st->fast_mean < seen_fast))
      seen_fast = st->fast_mean;
  }
  /* the time spent cutting the slice (and reading what earlier calls ran
   * on it) is not held against the candidates calibrate_startable let it
   * be cut for: weighed before the cut, their limit stays what it was
   * then (else a schedule that the budget just let settle was refused
   * once the slice was cut, and the call ran nothing on it; rgc 4 x 64 x
   * 64 cut a slice for a candidate 30 us short of its start) */
  double cut = (double)(engine_now(e) - t0) * 1e-9;
  for (size_t k = 0; k < n; k++) {
    size_t i = order[k];
    double used = (double)(engine_now(e) - t0) * 1e-9;
    /* the first run sets the prediction when nothing else did; later ones
     * start while the budget left covers CALIB_NEXT times the slowest run
     * so far, times the spread seen (slowest / best): the order puts a
     * method's most refined variants first, so the next is rarely faster
     * and, where the variants already differ several times over, often
     * as many times slower again */
    double pred = known >= 0 ? known : best * scale;
    if (cl_ran && !host_cl(&m->impls[i])) continue;
    double left =
        left_for(m, i, budget - (used - cut), calib_ahead(e, pr, pred));
    if (first >= 0 || known >= 0) {
      int cpu = m->impls[i].def->kind != QS_IMPL_OPENCL;
      double least = cpu && seen_fast > slowest ? seen_fast : slowest;
      if (!may_start(m, i, left, pred) ||
          left < CALIB_NEXT * least * (best > 0 ? slowest / best : 1) ||
          !stopped_may_start(e, m, i, &sl, pr->work, pred, left) ||
          (pred > 0 &&
           !(cand_stop_prior(e, m, i, pr->work) < pred * (1 - AGENT_TIE))))
        continue;
    }
    double limit = first >= 0 || known >= 0
                       ? stop_limit(e, m, i, w_small, pr->work, pred, left)
                       : 0;
    double once_before = *once;
    small[i] = slice_run(e, pr, i, &sl, &spent, once, limit);
    paid[i] = *once - once_before;
    cl_ran |= host_cl(&m->impls[i]);
    if (small[i] < 0) continue;
    if (small[i] > slowest) slowest = small[i];
    if (best < 0 || small[i] < best) best = small[i], first = (long)i;
    if (known >= 0 || !(w_small > 0)) continue;
    if (scale < 0) {
      /* nothing known: the first candidate also runs on a slice twice as
       * large per side, and the two sizes predict the call (a fixed cost
       * scaled in proportion from one small slice would inflate the
       * budget many times over) */
      scale = pr->work / w_small;
      slice probe;
      size_t r2 = rows * 2 < pr->in[0].rows ? rows * 2 : pr->in[0].rows;
      size_t c2 = cols * 2 < pr->in[0].cols ? cols * 2 : pr->in[0].cols;
      if ((r2 != rows || c2 != cols) &&
          !slice_make(e, pr, ln, r2, c2, &probe)) {
        double t2 = slice_run(e, pr, i, &probe, &spent, once, 0);
        /* more than proportionally slower (a fixed cost cannot make it
         * so): a hiccup, such as a burst of page faults or another
         * process, which as the call's prediction raised the budget and
         * let a variant 4x slower look faster on one small point (rgc
         * 4 x 64 x 64: a probe of 1.95 ms against 0.23 ms in other
         * processes chose vec for four calls). Timed once more; the
         * faster run stands. */
        if (t2 > 0 && small[i] > 0 && probe.work > w_small &&
            t2 / small[i] > probe.work / w_small) {
          double t3 = slice_run(e, pr, i, &probe, &spent, once, 0);
          if (t3 >= 0 && t3 < t2) t2 = t3;
        }
        if (t2 >= 0 && probe.work > w_small) {
          double b = (t2 - small[i]) / (probe.work - w_small);
          double a = small[i] - b * w_small;
          /* no line through the two (the larger slice came out faster,
           * or more than proportionally slower): the larger scaled in
           * proportion, whose fixed cost is diluted four times more */
          scale = b > 0 && a >= 0
                      ? (a + b * pr->work) / small[i]
                      : t2 * (pr->work / probe.work) / small[i];
          twice[i] = 1;
        }
        slice_done(d, &probe);
      }
      small_stop = small_call(e, small[i] * scale);
    }
    budget = budget_for(e, pr, best * scale, carry);
    if (small_stop) break; /* the first prediction: a small call */
  }
  slice_done(d, &sl);
  double used = (double)(engine_now(e) - t0) * 1e-9;
  budget = budget_for(e, pr, known >= 0 ? known : first >= 0 ? best * scale : -1,
                      carry);
  int paid_here = 0; /* a run that may borrow what it paid (left_second) */
  for (size_t i = 0; i < m->n_impls; i++) paid_here |= paid[i] > 0;
  if (small_stop || !(w_small > 0) || (used >= budget && !paid_here))
    return used;
  /* Hopeless on the small slice: even with as much fixed cost as its kind
   * may carry, its optimistic bound does not beat the best predicted
   * (agent_lower): no second size. The others, and those timed at one
   * size by an earlier call (CALIB_SECOND, at the time their one-point
   * model predicts for the small slice), go on. */
  double ref = known >= 0 ? known : first >= 0 ? best * scale : -1;
  for (size_t i = 0; i < m->n_impls; i++) {
    if (cold[i] == CALIB_SECOND && m->impls[i].fit_w1 > 0)
      small[i] = m->impls[i].fit_b * w_small;
    if (cl_ran && !host_cl(&m->impls[i])) small[i] = -1;
    if (twice[i] || !(small[i] >= 0) || !(ref > 0)) {
      if (twice[i]) small[i] = -1; /* has its two sizes */
      continue;
    }
    agent_cand one = {.kind = m->impls[i].def->kind, .n_points = 1,
                      .fitted = 1, .fit_b = small[i] / w_small,
                      .point_work = w_small};
    if (cold[i] == CALIB_SECOND) one.point_work = m->impls[i].fit_w1,
                                 one.fit_b = m->impls[i].fit_b;
    one.stopped = cand_stopped(m, i, pr->work);
    if (!(agent_lower(&one, pr->work) < ref * (1 - AGENT_TIE)))
      small[i] = -1;
  }
  /* the second size: as large as the budget left allows for all of them
   * (their small-slice times summed), 2x to 8x per side. All, not only
   * the fastest on the small slice: there a fixed cost (a pool's wake-up,
   * a kernel launch) dominates, and only a second size tells it from the
   * per-pixel cost that decides the full call. It is never the size of a
   * CALIB_SECOND one's point. */
  double small_sum = 0;
  for (size_t i = 0; i < m->n_impls; i++)
    if (small[i] >= 0) small_sum += small[i];
  if (!(small_sum > 0)) return used;
  /* making the second slice grows with its area as the runs do: rgc's
   * 640 x 640 slice (a 10 MB output) took 1.8 ms to make for a run of
   * 1.1 ms, on a budget sized by the runs alone */
  double grow_max = (budget - used) / (small_sum + cut_small);
  size_t f = 2;
  while (f < 8 && (double)(4 * f * f) <= grow_max) f *= 2;
  /* none of them could run there in the budget left once it is made
   * (making it grows with its area, as cutting the small one took): no
   * second slice. rgc 4 x 64 x 64 made one (0.3 ms, a tenth of the call)
   * for nothing in one call of two. Its work is taken in proportion to
   * its area, which a thin slice's outgrows: the check lets through what
   * the one after the cut may refuse, never the other way round. */
  {
    size_t r2 = rows * f < pr->in[0].rows ? rows * f : pr->in[0].rows;
    size_t c2 = cols * f < pr->in[0].cols ? cols * f : pr->in[0].cols;
    double area = (double)r2 * (double)c2 / ((double)rows * (double)cols);
    double room = budget - used - cut_small * area;
    double ahead = calib_ahead(e, pr, ref);
    int fits = 0;
    for (size_t i = 0; !fits && i < m->n_impls; i++)
      fits = small[i] >= 0 &&
             second_need(m, i, small[i], w_small, w_small * area) <=
                 left_second(m, i, room, ahead, paid[i]);
    if (!fits) return used;
  }
  for (;;) {
    size_t rows2 = rows * f < pr->in[0].rows ? rows * f : pr->in[0].rows;
    size_t cols2 = cols * f < pr->in[0].cols ? cols * f : pr->in[0].cols;
    if ((rows2 == rows && cols2 == cols) ||
        slice_make(e, pr, ln, rows2, cols2, &sl))
      return (double)(engine_now(e) - t0) * 1e-9;
    int clash = 0, whole = rows2 == pr->in[0].rows && cols2 == pr->in[0].cols;
    for (size_t i = 0; i < m->n_impls; i++)
      if (small[i] >= 0 && cold[i] == CALIB_SECOND &&
          m->impls[i].fit_w1 == sl.work) {
        clash = 1;
        if (whole) small[i] = -1; /* no other size to give it */
      }
    if (!clash || whole) break;
    slice_done(d, &sl);
    f *= 2;
  }
  for (;;) { /* fastest on the small slice first, while the budget lasts */
    long next = -1;
    for (size_t i = 0; i < m->n_impls; i++) {
      if (small[i] < 0) continue;
      int last_i = calib_rank(&m->impls[i], 0) == RANK_HOST_CL;
      int last_n = next >= 0 &&
                   calib_rank(&m->impls[next], 0) == RANK_HOST_CL;
      if (next < 0 || last_i < last_n ||
          (last_i == last_n && small[i] < small[next]))
        next = (long)i;
    }
    if (next < 0) break;
    double t = second_need(m, (size_t)next, small[next], w_small, sl.work);
    small[next] = -1;
    used = (double)(engine_now(e) - t0) * 1e-9;
    double left = left_second(m, (size_t)next, budget - used,
                              calib_ahead(e, pr, ref), paid[next]);
    if (t > left ||
        !stopped_may_start(e, m, (size_t)next, &sl, pr->work, ref, left))
      continue;
    slice_run(e, pr, (size_t)next, &sl, &spent, once,
              stop_limit(e, m, (size_t)next, sl.work, pr->work, ref, left));
  }
  slice_done(d, &sl);
  return (double)(engine_now(e) - t0) * 1e-9;
}

double calibrate(qs_engine *e, prep *pr, const unsigned char *cold,
                 double known, qs_image *outputs, double *once) {
  int64_t t0 = engine_now(e);
  const qs_method_desc *d = pr->m->desc;
  /* a stateful plan's pushes may leave their outputs untouched
   * (outputs_alloc): slices there get pages of their own */
  int lend = outputs && !(e->plan && plan_stateful(e->plan));
  lender ln = {.out = lend ? outputs : NULL, .n = lend ? d->n_outputs : 0};
  double spent = calibrate_slices(e, pr, &ln, cold, known, once);
  int lent = 0;
  for (size_t k = 0; k < ln.n; k++) {
    if (!ln.px[k]) continue;
    qs_image part = qs_image_wrap(outputs[k].data, 1, 1, ln.px[k]);
    outputs_zero(e, &part, 1);
    lent = 1;
  }
  return lent ? (double)(engine_now(e) - t0) * 1e-9 : spent;
}
