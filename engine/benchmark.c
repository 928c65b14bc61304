/* benchmark.c — qs_method_benchmark(): warm-up and repeats of every selected
 * implementation on the caller's input, every timed run recorded, outputs
 * compared with serial's, a ranking fastest first. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "timer.h"

/* max |a - ref| / max |ref| over every output; INFINITY where NaN or
 * infinity differ; the absolute difference when ref is all zero. */
static double rel_diff(const qs_image *a, const qs_image *ref, size_t n) {
  double top = 0, diff = 0;
  for (size_t k = 0; k < n; k++) {
    size_t px = ref[k].frames * ref[k].rows * ref[k].cols;
    for (size_t i = 0; i < px; i++) {
      double r = ref[k].data[i], x = a[k].data[i];
      if (isnan(r) || isnan(x) || isinf(r) || isinf(x)) {
        if (!(isnan(r) && isnan(x)) && r != x) return INFINITY;
        continue;
      }
      if (fabs(r) > top) top = fabs(r);
      if (fabs(x - r) > diff) diff = fabs(x - r);
    }
  }
  return top > 0 ? diff / top : diff;
}

static int by_status_then_median(const void *pa, const void *pb) {
  const qs_bench_entry *a = pa, *b = pb;
  if ((a->status != 0) != (b->status != 0)) return a->status ? 1 : -1;
  return (a->median > b->median) - (a->median < b->median);
}

/* The benchmark's progress: runs done of all it plans (rq->progress). */
typedef struct bench_prog {
  uint64_t done, total;
} bench_prog;

/* Runs one implementation warmup + repeats times; the outputs of the last
 * run stay in out. Fills everything of *b but the comparison. Each run
 * done counts one in *bp. */
static void bench_one(qs_engine *e, prep *pr, size_t impl, int warmup,
                      int repeats, qs_image *out, double *walls,
                      run_result *res, qs_bench_entry *b, bench_prog *bp) {
  const mstate *m = pr->m;
  size_t n_out = m->desc->n_outputs;
  snprintf(b->impl, sizeof b->impl, "%s", m->impls[impl].name);
  for (int w = 0; w < warmup; w++) {
    if (run_once(e, m, impl, pr->in, pr->n_in, out, n_out, pr->p, 1, res))
      break;
    b->once_seconds += res->once_s;
    prog_set(e, ++bp->done, bp->total);
  }
  for (int r = 0; !res->status && r < repeats; r++) {
    run_once(e, m, impl, pr->in, pr->n_in, out, n_out, pr->p, 1, res);
    if (res->status) break;
    prog_set(e, ++bp->done, bp->total);
    double steady = res->wall - res->once_s;
    walls[b->runs++] = steady < 0 ? 0 : steady;
    b->once_seconds += res->once_s;
  }
  b->status = res->status;
  qs_stats s;
  if (b->runs && !qs_stats_of(walls, (size_t)b->runs, &s)) {
    b->min = s.min;
    b->median = s.median;
    b->fast_mean = s.fast_mean;
  }
}

int qs_method_benchmark(qs_engine *e, const char *method,
                        const qs_run_request *rq, const char *impls,
                        int warmup, int repeats, qs_bench_result *result) {
  if (!e) return QS_EINVAL;
  if (!result) return engine_fail(e, QS_EINVAL, "no result");
  memset(result, 0, sizeof *result);
  if (warmup < 0 || repeats < 1 || repeats > 100000)
    return engine_fail(e, QS_EINVAL, "benchmark: warmup %d must be >= 0 and "
                       "repeats %d in 1..100000", warmup, repeats);
  if (rq && rq->impl && *rq->impl && !(impls && *impls)) impls = rq->impl;
  prep pr;
  size_t n_out = 0;
  const qs_method_desc *md = qs_method_find(e, method);
  if (md) n_out = md->n_outputs;
  int rc = prep_call(e, method, rq, n_out, 0, &pr);
  if (rc) return rc;
  if (pr.dev) { /* device inputs: pulled once, then a host benchmark */
    rc = devcall_pull(e, &pr);
    if (rc) {
      prep_done(&pr);
      return rc;
    }
    pr.in = pr.host_in;
    pr.dev = NULL;
  }
  mstate *m = pr.m;
  unsigned char mask[QS_MAX_ESTIMATES];
  int exact = 0;
  if (impls && *impls) {
    rc = impl_select(e, m, impls, mask, &exact);
    if (rc) return rc;
  } else {
    memset(mask, 1, m->n_impls);
  }
  hist_load(e, m);
  m->runs++;
  /* rq->progress: counted in runs, each implementation's own units not */
  if ((rc = prog_open(e, rq))) {
    prep_done(&pr);
    return rc;
  }
  prog_counting(e, 0);

  qs_image out[QS_MAX_OUTPUTS], ref[QS_MAX_OUTPUTS];
  double *walls = malloc((size_t)repeats * sizeof *walls);
  rc = walls ? outputs_alloc(e, pr.shape, n_out, out)
             : engine_fail(e, QS_ENOMEM, "out of memory");
  if (rc) {
    free(walls);
    prog_close(e);
    prep_done(&pr);
    return rc;
  }
  int have_ref = 0;
  /* serial first: it is the reference every other output is held to */
  long serial = -1;
  for (size_t i = 0; i < m->n_impls && serial < 0; i++)
    if (m->impls[i].def->kind == QS_IMPL_SERIAL) serial = (long)i;
  size_t order[QS_MAX_ESTIMATES], n_order = 0;
  if (serial >= 0) order[n_order++] = (size_t)serial;
  for (size_t i = 0; i < m->n_impls; i++)
    if ((long)i != serial) order[n_order++] = i;
  bench_prog bp = {0};
  for (size_t o = 0; o < n_order; o++)
    if (mask[order[o]] || (long)order[o] == serial)
      bp.total += (uint64_t)warmup + (mask[order[o]] ? (uint64_t)repeats : 1);

  for (size_t o = 0; o < n_order && !rc; o++) {
    size_t i = order[o];
    int is_ref = (long)i == serial;
    if (!mask[i] && !is_ref) continue;
    /* the runs this implementation is planned for, done however it ends */
    uint64_t after = bp.done + (uint64_t)warmup + (mask[i] ? repeats : 1);
    qs_method_call c;
    char why[128];
    call_init(e, &m->impls[i], &c, pr.in, pr.n_in, NULL, 0, pr.p, NULL, 0);
    if (!registry_usable(&m->impls[i], &c, why, sizeof why)) {
      if (prog_set(e, bp.done = after, bp.total)) rc = QS_ECANCELLED;
      continue;
    }
    qs_bench_entry b = {.max_rel_diff = -1};
    run_result res = {0};
    bench_one(e, &pr, i, warmup, mask[i] ? repeats : 1, out, walls, &res, &b,
              &bp);
    /* cancelled (rq->progress): this implementation's runs are not
     * recorded, the ones before it stay */
    if (prog_cancelled(e) || prog_set(e, bp.done = after, bp.total)) {
      rc = QS_ECANCELLED;
      break;
    }
    if (b.status == QS_OK && have_ref) {
      b.max_rel_diff = rel_diff(out, ref, n_out);
      if (!(b.max_rel_diff <= m->desc->tolerance)) {
        b.status = QS_EMISMATCH;
        snprintf(res.err, sizeof res.err,
                 "max |%s - serial| / max |serial| = %g > tolerance %g",
                 m->impls[i].name, b.max_rel_diff, m->desc->tolerance);
      }
    }
    if (b.status == QS_OK && is_ref) {
      b.max_rel_diff = 0;
      rc = outputs_alloc(e, pr.shape, n_out, ref);
      for (size_t k = 0; !rc && k < n_out; k++)
        memcpy(ref[k].data, out[k].data,
               out[k].frames * out[k].rows * out[k].cols * sizeof(float));
      have_ref = !rc;
    }
    /* every timed run is recorded, with the comparison's verdict */
    for (int r = 0; r < b.runs; r++) {
      run_result one = res;
      one.wall = walls[r];
      one.once_s = 0;
      run_account(e, &pr, i, pr.key, pr.work, &one, b.status);
    }
    if (b.status && b.status != QS_EMISMATCH)
      run_account(e, &pr, i, pr.key, pr.work, &res, b.status);
    if (mask[i] && result->n < QS_MAX_ESTIMATES)
      result->entries[result->n++] = b;
  }
  if (have_ref) outputs_free(ref, n_out);
  outputs_free(out, n_out);
  free(walls);
  prep_done(&pr);
  if (rc == QS_OK && result->n) prog_finish(e);
  prog_close(e);
  if (rc == QS_ECANCELLED)
    return engine_fail(e, rc,
                       "benchmark of %s cancelled by the caller "
                       "after %zu implementation%s",
                       m->desc->name, result->n, result->n == 1 ? "" : "s");
  if (rc) return rc;
  qsort(result->entries, result->n, sizeof *result->entries,
        by_status_then_median);
  if (!result->n)
    return engine_fail(e, QS_EUNAVAIL, "method %s: no selected "
                       "implementation is available here", m->desc->name);
  return QS_OK;
}
