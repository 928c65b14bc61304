/* calibrate.c — timings for implementations that have none on this
 * device yet, taken on slices of the caller's own input before the choice. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"

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
  image in[QS_MAX_INPUTS], out[QS_MAX_OUTPUTS];
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
double calibrate(engine *e, prep *pr, const unsigned char *cold,
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

