/* sweep.c — eSRRF's parameter sweep (quicksilver_sweep.h): a client of
 * the public API. Every step runs through qs_method_run (shift_magnify,
 * esrrf, squirrel, frc), so the engine chooses, times and records it; what
 * the points share is computed once per batch of frames (the ×M
 * intensity) or once per radius (the convergence before the sensitivity's
 * power and the intensity: eSRRF's per-frame maps at sensitivity 1 without
 * the intensity, so that its fused paths, which make the gradients on the
 * fly, serve the sweep too), and
 * the maps fold through the partials' own fold (temporal_add, the batch
 * call's): with one implementation forced for every step, a point's
 * reconstruction has the bits of eSRRF run with it (with the engine's
 * choices, within the vector paths' 1e-6: quicksilver_sweep.h). The
 * powers and the folds, the sweep's own work,
 * run in bands of pixels on the engine's number of threads, in the CPU's
 * widest vectors (sweep_fold.h, the same bits). */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/fail.h"
#include "methods/esrrf/sweep_fold.h"
#include "methods/esrrf/temporal.h"
#include "quicksilver_esrrf.h"
#include "quicksilver_sweep.h"

/* Frames through the steps at once, and their memory bound. */
#define SW_MAX_BATCH 64
#define SW_BATCH_BYTES ((size_t)256 << 20)

typedef struct sweep {
  qs_engine *e;
  const qs_image *stack;
  const qs_esrrf_sweep_options *o;
  size_t rows, cols, frames, rm, cm, plane;
  int mag, frc, rsp, iw;
  int threads;            /* the engine's, for the powers and folds */
  const sweep_kernels *kf; /* the CPU's widest maps and folds */
  size_t nt, ns, nr;
  int temporal[3];
  char *err;
  size_t err_len;
  uint64_t done, total;   /* progress: frames × radii (each radius's step
                             counts its frames) */
  uint64_t step_frames;   /* the frames of the radius step under way (0:
                             another step, which counts nothing) */
  char impl[QS_SWEEP_IMPL_MAX]; /* the eSRRF steps' implementations */
} sweep;

static int sw_fail(sweep *s, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fail_msgv(s->err, s->err ? s->err_len : 0, rc, fmt, ap);
  va_end(ap);
  return rc;
}

/* A step's progress hook: the caller's, at the count so far plus the
 * radius step's own share of its frames, so that the count moves within a
 * step and a cancellation stops the step that runs. */
static int sw_hook(void *ctx, uint64_t done, uint64_t total) {
  const sweep *s = ctx;
  uint64_t in = 0;
  if (total && s->step_frames)
    in = (uint64_t)((long double)(done < total ? done : total) *
                    s->step_frames / total);
  return s->o->progress(s->o->progress_ctx, s->done + in, s->total);
}

/* QS_ECANCELLED with the count reached. */
static int sw_cancelled(sweep *s) {
  return sw_fail(s, QS_ECANCELLED,
                 "sweep: cancelled after %llu of %llu frames x radii",
                 (unsigned long long)s->done, (unsigned long long)s->total);
}

/* Adds name to the distinct implementations the eSRRF steps ran (in the
 * order first met, comma-separated; a name that does not fit is left
 * out). */
static void sw_impl_add(sweep *s, const char *name) {
  size_t k = strlen(name), used = strlen(s->impl);
  for (const char *q = s->impl; *q;) {
    size_t m = strcspn(q, ",");
    if (m == k && !strncmp(q, name, k)) return;
    q += m + (q[m] == ',');
  }
  if (k && used + k + 1 < sizeof s->impl)
    snprintf(s->impl + used, sizeof s->impl - used, "%s%s", used ? "," : "",
             name);
}

/* A step's request: the sweep's implementation and progress hook. */
static qs_run_request sw_request(sweep *s, const qs_image *in, size_t n_in,
                                 const qs_param *p, size_t n_p) {
  return (qs_run_request){.inputs = in,
                          .n_inputs = n_in,
                          .params = p,
                          .n_params = n_p,
                          .impl = s->o->impl,
                          .progress = s->o->progress ? sw_hook : NULL,
                          .progress_ctx = s};
}

/* A step's status: its message on failure, the count reached when the
 * caller cancelled. */
static int sw_status(sweep *s, int rc) {
  if (rc == QS_ECANCELLED) return sw_cancelled(s);
  if (rc) return sw_fail(s, rc, "%s", qs_engine_error(s->e));
  return QS_OK;
}

/* One step through the engine; its message on failure. given: out holds
 * the sweep's own buffers, written in place (run_request.outputs_given),
 * else the engine allocates out. */
static int sw_step(sweep *s, const char *method, const qs_image *in,
                   size_t n_in, const qs_param *p, size_t n_p, qs_image *out,
                   size_t n_out, int given) {
  qs_run_request rq = sw_request(s, in, n_in, p, n_p);
  rq.outputs_given = given;
  qs_run_report rep;
  int rc = sw_status(s, qs_method_run(s->e, method, &rq, out, n_out, &rep));
  if (!rc && !strcmp(method, "esrrf")) sw_impl_add(s, rep.impl);
  return rc;
}

static int sw_check(sweep *s, const qs_image *st,
                    const qs_esrrf_sweep_options *o) {
  if (!st || !st->data || !st->frames || !st->rows || !st->cols)
    return sw_fail(s, QS_EINVAL, "stack: empty image");
  if (!o) return sw_fail(s, QS_EINVAL, "options: NULL");
  if (!o->n_radii || !o->radii)
    return sw_fail(s, QS_EPARAM, "radius: no values to sweep");
  if (!o->n_sensitivities || !o->sensitivities)
    return sw_fail(s, QS_EPARAM, "sensitivity: no values to sweep");
  for (size_t i = 0; i < o->n_radii; i++)
    if (!(o->radii[i] > 0 && o->radii[i] <= 50))
      return sw_fail(s, QS_EPARAM,
                     "radius: %g is not in (0, 50] (value %zu of the sweep)",
                     o->radii[i], i + 1);
  for (size_t i = 0; i < o->n_sensitivities; i++)
    if (!(o->sensitivities[i] >= 0 && o->sensitivities[i] <= 100))
      return sw_fail(s, QS_EPARAM,
                     "sensitivity: %g is not in [0, 100] (value %zu of the "
                     "sweep)",
                     o->sensitivities[i], i + 1);
  if (o->temporal && o->n_temporal > 3)
    return sw_fail(s, QS_EPARAM, "temporal: at most 3 statistics (avg, var, "
                                 "tac2)");
  if (o->temporal && !o->n_temporal)
    return sw_fail(s, QS_EPARAM, "temporal: no values to sweep");
  for (size_t i = 0; o->temporal && i < o->n_temporal; i++)
    if (o->temporal[i] < 0 || o->temporal[i] > 2)
      return sw_fail(s, QS_EPARAM,
                     "temporal: %d is not one of 0 (avg), 1 (var), 2 (tac2)",
                     o->temporal[i]);
  if (o->magnification < 0 || o->magnification > 64)
    return sw_fail(s, QS_EPARAM, "magnification: %d is not in [1, 64]",
                   o->magnification);
  size_t n;
  if (qs_image_pixels(st->frames, st->rows, st->cols, &n))
    return sw_fail(s, QS_EOVERFLOW, "stack: %zu x %zu x %zu is too large",
                   st->frames, st->rows, st->cols);
  for (size_t i = 0; i < n; i++)
    if (!isfinite(st->data[i]))
      return sw_fail(s, QS_EINVAL,
                     "stack: pixel %zu of frame %zu is not finite",
                     i % (st->rows * st->cols), i / (st->rows * st->cols));
  if (!o->no_frc && st->frames < 2)
    return sw_fail(s, QS_ESHAPE,
                   "frames: FRC compares the odd and the even frames; the "
                   "stack has %zu (use no_frc, --no-frc)",
                   st->frames);
  for (size_t i = 0; o->temporal && i < o->n_temporal; i++)
    if (o->temporal[i] == 2 && st->frames < (o->no_frc ? 2u : 4u))
      return sw_fail(s, QS_ESHAPE,
                     "frames: tac2 needs 2 frames per reconstruction (%s); "
                     "the stack has %zu",
                     o->no_frc ? "all frames" : "odd and even frames",
                     st->frames);
  return QS_OK;
}

/* The statistics of one radius: [t][s][k] with k 0 all, 1 odd, 2 even. */
static qs_esrrf_partial *sw_at(qs_esrrf_partial *p, const sweep *s, size_t r,
                               size_t t, size_t si, int k) {
  return &p[((r * s->nt + t) * s->ns + si) * 3 + (size_t)k];
}

/* Runs body(ctx, b, e) over bands of the plane's pixels [b, e), whole
 * rows each, one band per thread up to the engine's count; band 0 on the
 * calling thread, and any whose thread cannot start there too. */
typedef void (*sw_body)(void *ctx, size_t b, size_t e);

typedef struct sw_band {
  sw_body body;
  void *ctx;
  size_t b, e;
} sw_band;

static void *sw_band_main(void *arg) {
  const sw_band *j = arg;
  j->body(j->ctx, j->b, j->e);
  return NULL;
}

static void sw_bands(const sweep *s, sw_body body, void *ctx) {
  sw_band j[QS_MAX_THREADS];
  pthread_t th[QS_MAX_THREADS];
  int made[QS_MAX_THREADS] = {0}, bands = 0;
  size_t rows = s->rm, per = (rows + (size_t)s->threads - 1) /
                             (size_t)s->threads;
  for (int w = 0; w < s->threads; w++) {
    size_t r0 = (size_t)w * per, r1 = r0 + per < rows ? r0 + per : rows;
    if (r0 >= r1) break;
    j[w] = (sw_band){body, ctx, r0 * s->cm, r1 * s->cm};
    bands++;
    if (w > 0) made[w] = !pthread_create(&th[w], NULL, sw_band_main, &j[w]);
  }
  for (int w = 0; w < bands; w++)
    if (!made[w]) sw_band_main(&j[w]);
  for (int w = 1; w < bands; w++)
    if (made[w]) pthread_join(th[w], NULL);
}

/* One batch of one radius folded into its points' statistics. */
typedef struct sw_fold {
  const sweep *s;
  qs_esrrf_partial *p;    /* the radius's statistics */
  const float *raw, *mag; /* n planes each */
  size_t n, f0;
  float *map;             /* one plane of scratch (bands are disjoint) */
} sw_fold;

/* Pixels per tile of a band: the tile's statistics of every point stay in
 * cache while the batch's frames fold into them. */
#define SW_TILE 1024

static void sw_fold_band(void *ctx, size_t band_b, size_t band_e) {
  const sw_fold *j = ctx;
  const sweep *s = j->s;
  const sweep_kernels *kf = s->kf;
  for (size_t b = band_b; b < band_e; b += SW_TILE) {
    size_t e = b + SW_TILE < band_e ? b + SW_TILE : band_e;
    for (size_t si = 0; si < s->ns; si++) {
      size_t seen[3] = {0, 0, 0};
      for (size_t k = 0; k < j->n; k++) {
        float sens = (float)s->o->sensitivities[si];
        const float *raw = j->raw + k * s->plane,
                    *mag = s->iw ? j->mag + k * s->plane : NULL;
        int half = (j->f0 + k) % 2 ? 1 : 2; /* odd frames 1, 3, ... */
        qs_esrrf_partial *a = &j->p[si * 3];
        if (s->nt == 1 && a[0].temporal == TEMPORAL_AVG &&
            a[0].n + seen[0] && (!s->frc || a[half].n + seen[half])) {
          /* one AVG statistic past its first frame: the map folded
           * straight from the vector lanes */
          kf->map_add(raw, mag, sens, &a[0], s->frc ? &a[half] : NULL, b, e);
          seen[0]++;
          seen[half]++;
          continue;
        }
        /* the map of this sensitivity: rgc_sens with the float
         * sensitivity, as eSRRF's pass takes it, and the intensity */
        kf->map(raw + b, mag ? mag + b : NULL, sens, e - b, j->map + b);
        for (size_t t = 0; t < s->nt; t++) {
          a = &j->p[(t * s->ns + si) * 3];
          uint64_t n0 = a[0].n + seen[0], nh = a[half].n + seen[half];
          if (a[0].temporal == TEMPORAL_AVG && n0 && (!s->frc || nh)) {
            kf->add(&a[0], s->frc ? &a[half] : NULL, j->map, b, e);
            continue;
          }
          temporal_add(&a[0], j->map, n0, b, e);
          if (s->frc) temporal_add(&a[half], j->map, nh, b, e);
        }
        seen[0]++;
        seen[half]++;
      }
    }
  }
}

/* Folds the batch's maps of one radius on the sweep's threads, then
 * counts the frames. */
static void sw_fold_batch(const sweep *s, qs_esrrf_partial *p,
                          const float *raw, const float *mag, size_t n,
                          size_t f0, float *map) {
  sw_fold j = {s, p, raw, mag, n, f0, map};
  sw_bands(s, sw_fold_band, &j);
  /* every band done: the frames' counts */
  size_t odd = 0;
  for (size_t k = 0; k < n; k++) odd += (f0 + k) % 2;
  for (size_t i = 0; i < s->nt * s->ns; i++) {
    p[3 * i].n += n;
    if (s->frc) {
      p[3 * i + 1].n += odd;
      p[3 * i + 2].n += n - odd;
    }
  }
}

/* A point's statistic finished into out (one plane): the result by bands
 * on the sweep's threads, then the macro-pixel correction (whole-image)
 * where asked; qs_esrrf_partial_finish's bits. */
typedef struct sw_fin {
  const qs_esrrf_partial *p;
  float *out;
} sw_fin;

static void sw_finish_band(void *ctx, size_t b, size_t e) {
  const sw_fin *j = ctx;
  temporal_result(j->p, j->out, b, e);
}

static int sw_finish(const sweep *s, const qs_esrrf_partial *p, float *out) {
  int mpc = s->o->macro_pixel_correction != 0;
  if (temporal_finishable(p, s->mag, mpc)) return QS_EINVAL;
  sw_fin j = {p, out};
  sw_bands(s, sw_finish_band, &j);
  if (mpc) temporal_mpc(out, s->rm, s->cm, s->mag);
  return QS_OK;
}

/* One pass over the frames for radii [r0, r1): their statistics. The
 * steps run `batch` frames at a time and write into the sweep's own two
 * buffers of a batch (run_request.outputs_given: no fresh pages, no copy):
 * the ×M images once a batch, then each radius's convergence, folded into
 * that radius's statistics at once, while it is still in cache. */
static int sw_pass(sweep *s, size_t r0, size_t r1, qs_esrrf_partial *p,
                   size_t batch) {
  const qs_image *st = s->stack;
  size_t rc_px = s->rows * s->cols;
  float *map = malloc(s->plane * sizeof *map);
  float *raw = malloc(batch * s->plane * sizeof *raw);
  float *mags = s->iw ? malloc(batch * s->plane * sizeof *mags) : NULL;
  int rc = QS_OK;
  if (!map || !raw || (s->iw && !mags))
    rc = sw_fail(s, QS_ENOMEM, "sweep: no memory for %zu frames' maps",
                 batch);
  for (size_t f0 = 0; !rc && f0 < s->frames; f0 += batch) {
    size_t n = s->frames - f0 < batch ? s->frames - f0 : batch;
    qs_image frames = qs_image_wrap(st->data + f0 * rc_px, n, s->rows, s->cols);
    if (s->iw) {
      qs_image mag = qs_image_wrap(mags, n, s->rm, s->cm);
      qs_param sm[] = {{"magnification_row", s->mag, NULL},
                       {"magnification_col", s->mag, NULL}};
      rc = sw_step(s, "shift_magnify", &frames, 1, sm, 2, &mag, 1, 1);
    }
    /* each radius's convergence: eSRRF's per-frame maps before the
     * sensitivity's power and the intensity (the power of 1 leaves them
     * as they are) */
    for (size_t r = r0; !rc && r < r1; r++) {
      qs_image out = qs_image_wrap(raw, n, s->rm, s->cm);
      qs_param ep[] = {{"magnification", s->mag, NULL},
                       {"radius", s->o->radii[r], NULL},
                       {"sensitivity", 1, NULL},
                       {"intensity_weighting", 0, NULL},
                       {"temporal", 0, "none"}};
      s->step_frames = n;
      rc = sw_step(s, "esrrf", &frames, 1, ep, 5, &out, 1, 1);
      s->step_frames = 0;
      if (rc) break;
      sw_fold_batch(s, sw_at(p, s, r - r0, 0, 0, 0), raw, mags, n, f0, map);
      s->done += n;
      if (s->o->progress &&
          s->o->progress(s->o->progress_ctx, s->done, s->total))
        rc = sw_cancelled(s);
    }
  }
  free(map);
  free(raw);
  free(mags);
  return rc;
}

/* The points of radii [r0, r1) from their statistics p: the
 * reconstructions, SQUIRREL of them all in one call (the reference made
 * once), FRC of each point's odd and even halves; tmp: two planes. */
static int sw_score(sweep *s, qs_esrrf_partial *p, size_t r0, size_t r1,
                    qs_esrrf_sweep_point *pts, float *tmp) {
  size_t per_r = s->nt * s->ns, np = (r1 - r0) * per_r;
  qs_image rec = {0};
  int rc = qs_image_alloc(&rec, np, s->rm, s->cm);
  if (rc) return sw_fail(s, rc, "sweep: no memory for %zu reconstructions",
                         np);
  for (size_t g = 0; !rc && g < np; g++) {
    size_t r = r0 + g / per_r, t = g % per_r / s->ns, si = g % s->ns;
    qs_esrrf_sweep_point *pt = &pts[(t * s->ns + si) * s->nr + r];
    *pt = (qs_esrrf_sweep_point){.radius = s->o->radii[r],
                                 .sensitivity = s->o->sensitivities[si],
                                 .temporal = s->temporal[t],
                                 .rsp = NAN,
                                 .rse = NAN,
                                 .sigma = NAN,
                                 .frc = NAN};
    if (sw_finish(s, sw_at(p, s, r - r0, t, si, 0), rec.data + g * s->plane))
      rc = sw_fail(s, QS_EINVAL,
                   "sweep: the reconstruction could not be finished");
  }
  if (!rc && s->rsp) {
    qs_image in[2] = {*s->stack, rec}, out[2] = {{0}};
    qs_param mp = {"error_map", 0, NULL}; /* the metrics, not the map */
    rc = sw_step(s, "squirrel", in, 2, &mp, 1, out, 2, 0);
    for (size_t g = 0; !rc && g < np; g++) {
      size_t r = r0 + g / per_r, t = g % per_r / s->ns, si = g % s->ns;
      qs_esrrf_sweep_point *pt = &pts[(t * s->ns + si) * s->nr + r];
      pt->rse = out[1].data[g * 5];
      pt->rsp = out[1].data[g * 5 + 1];
      pt->sigma = out[1].data[g * 5 + 2];
    }
    qs_image_free(&out[0]);
    qs_image_free(&out[1]);
  }
  /* every point's FRC on one plan of frc: its transforms and ring samples
   * made once for the reconstructions' size */
  qs_plan *frc = NULL;
  qs_image half[2];
  for (int k = 0; k < 2; k++)
    half[k] = qs_image_wrap(tmp + (size_t)k * s->plane, 1, s->rm, s->cm);
  if (!rc && s->frc) {
    qs_run_request rq = sw_request(s, half, 2, NULL, 0);
    rc = sw_status(s, qs_method_open(s->e, "frc", &rq, &frc));
  }
  for (size_t g = 0; !rc && g < np; g++) {
    size_t r = r0 + g / per_r, t = g % per_r / s->ns, si = g % s->ns;
    qs_esrrf_sweep_point *pt = &pts[(t * s->ns + si) * s->nr + r];
    if (s->frc) {
      rc = sw_finish(s, sw_at(p, s, r - r0, t, si, 1), half[0].data);
      if (!rc) rc = sw_finish(s, sw_at(p, s, r - r0, t, si, 2), half[1].data);
      if (rc)
        rc = sw_fail(s, rc, "sweep: the odd/even halves could not be "
                            "finished");
      qs_image out[2] = {{0}};
      if (!rc) rc = sw_status(s, qs_plan_run(frc, half, 2, out, 2, NULL));
      if (!rc) pt->frc = out[1].data[0];
      qs_image_free(&out[0]);
      qs_image_free(&out[1]);
    }
    if (!rc && s->o->keep_images) {
      rc = qs_image_alloc(&pt->recon, 1, s->rm, s->cm);
      if (rc)
        rc = sw_fail(s, rc, "sweep: no memory for a reconstruction");
      else
        memcpy(pt->recon.data, rec.data + g * s->plane,
               s->plane * sizeof(float));
    }
  }
  qs_plan_close(frc);
  qs_image_free(&rec);
  return rc;
}

static double sw_logistic_k(double lo, double hi, double *x0) {
  const double m1 = 0.075, m2 = 0.925;
  double a1 = log((1 - m1) / m1), a2 = log((1 - m2) / m2);
  /* NanoPyx computes these in float (its map is float32) */
  float flo = (float)lo, fhi = (float)hi;
  float fx0 = (float)((a2 * fhi - a1 * flo) / (a2 - a1));
  *x0 = fx0;
  return (float)(1 / (double)(fx0 - fhi) * a1);
}

void qs_esrrf_sweep_qnr(const double *rsp, const double *frc, size_t n,
                        double *qnr) {
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < n; i++)
    if (isfinite((float)frc[i])) {
      lo = fmin(lo, (float)frc[i]);
      hi = fmax(hi, (float)frc[i]);
    }
  double x0 = 0, k = 0;
  if (lo < hi) k = sw_logistic_k(lo, hi, &x0);
  for (size_t i = 0; i < n; i++) {
    float f = (float)frc[i];
    double nf;
    if (!(lo <= hi) || !isfinite(f))
      nf = 0;
    else if (lo == hi)
      nf = 0.5;
    else
      nf = (float)(1 / ((double)expf((float)(-k * (double)(f - (float)x0))) + 1));
    double den = rsp[i] + nf, q = den != 0 ? 2 * rsp[i] * nf / den : 0;
    qnr[i] = isfinite(q) ? (float)q : 0;
  }
}

int qs_esrrf_sweep(qs_engine *e, const qs_image *stack,
                   const qs_esrrf_sweep_options *o, qs_esrrf_sweep_result *out,
                   char *err, size_t err_len) {
  sweep s = {.e = e, .stack = stack, .o = o, .err = err, .err_len = err_len};
  if (err && err_len) err[0] = '\0';
  if (!e || !out) return sw_fail(&s, QS_EINVAL, "sweep: NULL engine or result");
  int rc = sw_check(&s, stack, o);
  if (rc) return rc;
  s.frames = stack->frames;
  s.rows = stack->rows;
  s.cols = stack->cols;
  s.mag = o->magnification ? o->magnification : 5;
  s.rm = s.rows * (size_t)s.mag;
  s.cm = s.cols * (size_t)s.mag;
  s.plane = s.rm * s.cm;
  s.frc = !o->no_frc;
  s.rsp = !o->no_rsp;
  s.iw = !o->no_intensity_weighting;
  s.kf = sweep_kernels_best();
  s.threads = qs_engine_threads(e);
  if (s.threads < 1) s.threads = 1;
  if (s.threads > QS_MAX_THREADS) s.threads = QS_MAX_THREADS;
  s.nr = o->n_radii;
  s.ns = o->n_sensitivities;
  s.nt = o->temporal ? o->n_temporal : 1;
  for (size_t t = 0; t < s.nt; t++) s.temporal[t] = o->temporal ? o->temporal[t] : 0;
  /* statistics per radius, in bytes; radii per pass within the bound */
  size_t slots = 0;
  for (size_t t = 0; t < s.nt; t++)
    slots += qs_esrrf_partial_slots(s.temporal[t]);
  size_t per_r = s.ns * slots * (s.frc ? 3 : 1) * s.plane * sizeof(double);
  size_t bound = (size_t)(o->memory_mb > 0 ? o->memory_mb : 1024) << 20;
  size_t group = per_r ? bound / per_r : s.nr;
  if (group < 1) group = 1;
  if (group > s.nr) group = s.nr;
  size_t per_frame = (s.plane * 2 + s.rows * s.cols) * sizeof(float);
  size_t batch = SW_BATCH_BYTES / (per_frame ? per_frame : 1);
  if (batch < 1) batch = 1;
  if (batch > SW_MAX_BATCH) batch = SW_MAX_BATCH;
  size_t np = s.nt * s.ns * s.nr, passes = (s.nr + group - 1) / group;
  qs_esrrf_sweep_point *pts = calloc(np, sizeof *pts);
  qs_esrrf_partial *p = calloc(group * s.nt * s.ns * 3, sizeof *p);
  float *tmp = malloc(2 * s.plane * sizeof *tmp);
  double *rsp = malloc(3 * np * sizeof *rsp), *frc = rsp + np, *qnr = frc + np;
  if (!pts || !p || !tmp || !rsp) {
    rc = sw_fail(&s, QS_ENOMEM, "sweep: no memory for %zu points", np);
    goto fail;
  }
  s.total = (uint64_t)s.frames * s.nr;
  for (size_t r0 = 0; !rc && r0 < s.nr; r0 += group) {
    size_t r1 = r0 + group < s.nr ? r0 + group : s.nr;
    for (size_t r = r0; !rc && r < r1; r++)
      for (size_t t = 0; !rc && t < s.nt; t++)
        for (size_t si = 0; !rc && si < s.ns; si++)
          for (int k = 0; !rc && k < (s.frc ? 3 : 1); k++)
            if (qs_esrrf_partial_init(sw_at(p, &s, r - r0, t, si, k),
                                      s.temporal[t], s.rm, s.cm))
              rc = sw_fail(&s, QS_ENOMEM,
                           "sweep: no memory for the statistics of %zu "
                           "points (memory_mb %ld)",
                           group * s.ns * s.nt, o->memory_mb);
    if (!rc) rc = sw_pass(&s, r0, r1, p, batch);
    if (!rc) rc = sw_score(&s, p, r0, r1, pts, tmp);
    for (size_t i = 0; i < group * s.nt * s.ns * 3; i++)
      qs_esrrf_partial_free(&p[i]);
  }
  if (rc) goto fail;
  for (size_t t = 0; t < s.nt; t++) {
    size_t n = s.ns * s.nr, b = t * n;
    for (size_t i = 0; i < n; i++) {
      rsp[i] = pts[b + i].rsp;
      frc[i] = pts[b + i].frc;
    }
    qs_esrrf_sweep_qnr(rsp, frc, n, qnr);
    for (size_t i = 0; i < n; i++)
      pts[b + i].qnr = s.rsp && s.frc ? qnr[i] : NAN;
  }
  free(p);
  free(tmp);
  free(rsp);
  *out = (qs_esrrf_sweep_result){.n_points = np,
                                 .n_radii = s.nr,
                                 .n_sensitivities = s.ns,
                                 .n_temporal = s.nt,
                                 .points = pts,
                                 .passes = passes};
  memcpy(out->impl, s.impl, sizeof out->impl);
  return QS_OK;
fail:
  if (p)
    for (size_t i = 0; i < group * s.nt * s.ns * 3; i++)
      qs_esrrf_partial_free(&p[i]);
  for (size_t i = 0; pts && i < np; i++)
    qs_image_free(&pts[i].recon);
  free(pts);
  free(p);
  free(tmp);
  free(rsp);
  return rc;
}

void qs_esrrf_sweep_free(qs_esrrf_sweep_result *r) {
  if (!r) return;
  for (size_t i = 0; r->points && i < r->n_points; i++)
    qs_image_free(&r->points[i].recon);
  free(r->points);
  memset(r, 0, sizeof *r);
}
