/* esrrf.c — the eSRRF method (methods.md §4): per frame, Catmull-Rom ×M of
 * the image, Roberts-cross gradients, Catmull-Rom ×2M of both, radial
 * gradient convergence; then a temporal statistic per timepoint and the
 * macro-pixel correction. Its descriptor, shape rules, the driver that all
 * implementations share (timepoints, frame-by-frame statistics in double,
 * correction), and the reference chain (serial and threaded).
 *
 * Memory does not grow with the number of frames on any path: frames go
 * through the chain one at a time (or one batch at a time), and the
 * statistics keep a few doubles per output pixel. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "methods/esrrf/esrrf.h"
#include "methods/esrrf/fused.h"
#include "methods/esrrf/sink.h"
#include "methods/methods.h"

/* ------------------------------------------------------------- geometry */

/* Frames per timepoint as NanoPyx resolves it: 0 or more than F means F. */
static size_t esrrf_fpt(const double *p, size_t frames) {
  size_t fpt = (size_t)p[P_FPT];
  return fpt == 0 || fpt > frames ? frames : fpt;
}

void esrrf_geom_of(const qs_method_call *c, esrrf_geom *g) {
  const qs_image *in = &c->in[0];
  memset(g, 0, sizeof *g);
  g->frames = in->frames;
  g->rows = (int)in->rows;
  g->cols = (int)in->cols;
  g->k = rgc_consts_of(c->p);
  g->mag = g->k.mag;
  g->rows_m = g->rows * g->mag;
  g->cols_m = g->cols * g->mag;
  g->margin = rgc_margin(g->k.fwhm, g->mag);
  g->plane = (size_t)g->rows_m * (size_t)g->cols_m;
  g->weight = c->p[P_IW] != 0;
  g->kind = (temporal_kind)(int)c->p[P_TEMPORAL];
  g->fpt = esrrf_fpt(c->p, g->frames);
  g->mpc = c->p[P_MPC] != 0;
}

/* Index of the first NaN or infinity of p[0 .. n) (n if none): blocks
 * scanned for an all-ones exponent field four pixels at a time (the
 * exponent plus one carries into bit 31 only when it is all ones: and,
 * add, or; about one instruction a pixel, where the per-pixel isfinite
 * loop took 8: callgrind found it the stream's only cost over the batch
 * call), the block with one searched pixel by pixel. */
typedef uint32_t scan_u32x4 __attribute__((vector_size(16)));

size_t esrrf_first_nonfinite(const float *p, size_t n) {
  enum { BLOCK = 4096 };
  for (size_t b = 0; b < n; b += BLOCK) {
    size_t e = n - b < BLOCK ? n - b : BLOCK, i = 0;
    scan_u32x4 acc = {0, 0, 0, 0};
    for (; i + 4 <= e; i += 4) {
      scan_u32x4 v;
      memcpy(&v, p + b + i, sizeof v);
      acc |= (v & 0x7f800000u) + 0x00800000u;
    }
    uint32_t any = acc[0] | acc[1] | acc[2] | acc[3];
    for (; i < e; i++) {
      uint32_t u;
      memcpy(&u, p + b + i, sizeof u);
      any |= (u & 0x7f800000u) + 0x00800000u;
    }
    if (any & 0x80000000u)
      for (i = b; i < b + e; i++)
        if (!isfinite(p[i])) return i;
  }
  return n;
}

int esrrf_check_finite(const qs_image *in, char *err, size_t err_len) {
  size_t px = in->rows * in->cols, n = in->frames * px;
  size_t i = in->data ? esrrf_first_nonfinite(in->data, n) : n;
  if (i == n) return QS_OK;
  snprintf(err, err_len,
           "input frame %zu has %g at row %zu, column %zu: eSRRF refuses "
           "NaN and infinite pixels (one would spread over the whole image "
           "through the macro-pixel correction); nothing was computed",
           i / px, (double)in->data[i], i % px / in->cols, i % in->cols);
  return QS_EINVAL;
}

static int esrrf_shape(const qs_image *in, const double *p, qs_image *out,
                       char *err, size_t err_len) {
  int rc = method_check_input("esrrf", in, err, err_len);
  if (rc) return rc;
  double kind = p[P_TEMPORAL];
  if (!(kind >= 0 && kind <= TEMPORAL_NONE) || kind != floor(kind)) {
    snprintf(err, err_len, "temporal: %g is not one of " TEMPORAL_CHOICES,
             kind);
    return QS_EPARAM;
  }
  if (!(p[P_FPT] >= 0 && p[P_FPT] <= INT_MAX) || p[P_FPT] != floor(p[P_FPT])) {
    snprintf(err, err_len,
             "frames_per_timepoint: %g is not an integer >= 0 (0: all "
             "frames)",
             p[P_FPT]);
    return QS_EPARAM;
  }
  size_t fpt = esrrf_fpt(p, in->frames);
  size_t t = (in->frames + fpt - 1) / fpt;
  size_t last = in->frames - (t - 1) * fpt;
  if (kind == TEMPORAL_TAC2 && last < 2) {
    /* Refused rather than NanoPyx's NaN timepoint: a NaN image is easily
     * taken for a result. The message says how to drop the frame. */
    snprintf(err, err_len,
             "frames_per_timepoint: tac2 needs at least 2 frames in every "
             "timepoint; %zu frames by %zu leave %zu in the last one: leave "
             "that frame out (the first %zu frames; quicksilver's --frames "
             "0:%zu) or choose another frames_per_timepoint",
             in->frames, fpt, last, in->frames - last, in->frames - last);
    return QS_EPARAM;
  }
  if (kind == TEMPORAL_NONE) t = in->frames;
  rc = rgc_check(p, t, in->rows, in->cols, (size_t)p[P_MAG], err, err_len);
  /* the pixels last, once the shape is known to be sound */
  if (!rc) rc = esrrf_check_finite(in, err, err_len);
  if (rc) return rc;
  out[0].frames = t;
  out[0].rows = in->rows * (size_t)p[P_MAG];
  out[0].cols = in->cols * (size_t)p[P_MAG];
  return QS_OK;
}

/* Work: output pixels of every frame times the search window. */
static double esrrf_work(const qs_image *in, const double *p) {
  double w = 2 * floor(2 * p[P_RADIUS]) + 1;
  return (double)in->frames * (double)in->rows * (double)in->cols * p[P_MAG] *
         p[P_MAG] * w * w;
}

/* Calibration: the first four frames at most, cropped top-left, one fewer
 * when tac2 would otherwise be left a 1-frame timepoint. */
static int esrrf_slice(const qs_image *in, const double *p, size_t rows,
                       size_t cols, qs_image *out) {
  size_t frames = in->frames < 4 ? in->frames : 4;
  size_t fpt = esrrf_fpt(p, frames);
  if (p[P_TEMPORAL] == TEMPORAL_TAC2 && frames % fpt == 1) frames--;
  rows = rows < in->rows ? rows : in->rows;
  cols = cols < in->cols ? cols : in->cols;
  int rc = qs_image_alloc(out, frames, rows, cols);
  if (rc) return rc;
  for (size_t f = 0; f < frames; f++)
    for (size_t r = 0; r < rows; r++)
      memcpy(out->data + (f * rows + r) * cols,
             in->data + (f * in->rows + r) * in->cols, cols * sizeof(float));
  return QS_OK;
}

/* --------------------------------------------------------------- driver */

typedef struct drive_job {
  const esrrf_geom *g;
  qs_esrrf_partial *t; /* the timepoint's partial statistic */
  const float *maps; /* n maps */
  size_t n;
  float *out;        /* the timepoint's output map (results) */
} drive_job;

/* Rows [b, e) of the maps: fold the batch after the partial's frames. */
static int drive_add(void *ctx, size_t b, size_t e, int worker) {
  const drive_job *j = ctx;
  (void)worker;
  size_t cm = (size_t)j->g->cols_m;
  for (size_t k = 0; k < j->n; k++)
    temporal_add(j->t, j->maps + k * j->g->plane, j->t->n + k, b * cm,
                 e * cm);
  return QS_OK;
}

static int drive_result(void *ctx, size_t b, size_t e, int worker) {
  const drive_job *j = ctx;
  (void)worker;
  size_t cm = (size_t)j->g->cols_m;
  temporal_result(j->t, j->out, b * cm, e * cm);
  return QS_OK;
}

size_t esrrf_batch_at(const esrrf_geom *g, size_t batch, size_t f) {
  if (f >= g->frames) return 0;
  if (batch == 0) batch = 1;
  size_t end = g->frames;
  if (g->kind != TEMPORAL_NONE && (f / g->fpt + 1) * g->fpt < end)
    end = (f / g->fpt + 1) * g->fpt; /* the end of f's timepoint */
  return end - f < batch ? end - f : batch;
}

int esrrf_fold(const qs_method_call *c, const esrrf_geom *g,
               qs_esrrf_partial *t, const float *maps, size_t n) {
  drive_job j = {.g = g, .t = t, .maps = maps, .n = n};
  int rc = c->parallel_for(c, 0, (size_t)g->rows_m, drive_add, &j);
  if (!rc) t->n += n;
  return rc;
}

int esrrf_finish(const qs_method_call *c, const esrrf_geom *g,
                 const qs_esrrf_partial *t, float *out) {
  drive_job j = {.g = g, .t = (qs_esrrf_partial *)t, .out = out};
  int rc = c->parallel_for(c, 0, (size_t)g->rows_m, drive_result, &j);
  if (!rc && g->mpc)
    rc = temporal_mpc_on(c, out, (size_t)g->rows_m, (size_t)g->cols_m,
                         g->mag);
  return rc;
}

/* The maps buffer the live stream's plan keeps for esrrf_drive_sink. */
typedef struct sink_maps {
  float *data;
  size_t planes;
} sink_maps;

static void sink_maps_free(void *p) {
  sink_maps *m = p;
  free(m->data);
  free(m);
}

int esrrf_drive_sink(const qs_method_call *c, const esrrf_geom *g,
                     size_t batch, esrrf_maps_fn maps, void *state,
                     esrrf_sink *sk) {
  qs_esrrf_partial *t = sk->partial;
  sk->folded = 0;
  if (t->n != sk->n0) {
    snprintf(c->err, c->err_len,
             "esrrf: the stream's timepoint holds %llu frames, not %llu: a "
             "failed run of this call folded some already",
             (unsigned long long)t->n, (unsigned long long)sk->n0);
    return QS_EINVAL;
  }
  if (batch == 0) batch = 1;
  if (batch > g->frames) batch = g->frames;
  sink_maps *m = c->kept(c, "esrrf.maps");
  int rc = QS_OK;
  if (!m || m->planes < batch) {
    float *d = batch > SIZE_MAX / sizeof(float) / g->plane
                   ? NULL
                   : calloc(batch * g->plane, sizeof(float));
    sink_maps *k = m ? m : calloc(1, sizeof *k);
    if (!d || !k) {
      free(d);
      if (!m) free(k);
      snprintf(c->err, c->err_len,
               "esrrf: no memory for %zu maps of %d x %d pixels", batch,
               g->rows_m, g->cols_m);
      return QS_ENOMEM;
    }
    if (m) free(m->data);
    k->data = d;
    k->planes = batch;
    if (!m && (rc = c->keep(c, "esrrf.maps", k, sink_maps_free))) {
      snprintf(c->err, c->err_len, "esrrf: the stream's plan is full");
      return rc; /* k was released */
    }
    m = k;
  }
  for (size_t f = 0, n; !rc && f < g->frames; f += n) {
    n = g->frames - f < batch ? g->frames - f : batch;
    rc = maps(state, f, n, m->data);
    if (!rc) rc = esrrf_fold(c, g, t, m->data, n);
    if (!rc) sk->folded += n;
  }
  if (!rc && sk->out && !sk->ring) rc = esrrf_finish(c, g, t, sk->out);
  return rc;
}

/* esrrf_drive's maps function as one that folds: maps, then esrrf_fold. */
typedef struct plain_maps {
  const qs_method_call *c;
  const esrrf_geom *g;
  esrrf_maps_fn maps;
  void *state;
} plain_maps;

static int plain_fold(void *state, size_t f0, size_t n, float *dst,
                      qs_esrrf_partial *t) {
  const plain_maps *p = state;
  int rc = p->maps(p->state, f0, n, dst);
  if (!rc && t) rc = esrrf_fold(p->c, p->g, t, dst, n);
  return rc;
}

/* A folding maps function used as a plain one (t NULL). */
typedef struct folding_maps {
  esrrf_fold_fn maps;
  void *state;
} folding_maps;

static int maps_only(void *state, size_t f0, size_t n, float *dst) {
  const folding_maps *m = state;
  return m->maps(m->state, f0, n, dst, NULL);
}

int esrrf_drive_fold(const qs_method_call *c, const esrrf_geom *g,
                     size_t batch, esrrf_fold_fn maps, void *state) {
  float *out = c->out[0].data;
  if (batch == 0) batch = 1;
  esrrf_sink *sk = esrrf_sink_of(c); /* the live stream's: fold into it */
  if (sk) {
    /* maps, then the sink's fold: a stream's run that fails part way
     * leaves its partial's data as its count says (esrrf_drive_sink's
     * check) */
    folding_maps m = {.maps = maps, .state = state};
    return esrrf_drive_sink(c, g, batch, maps_only, &m, sk);
  }
  if (g->kind == TEMPORAL_NONE) {
    for (size_t f = 0, n; (n = esrrf_batch_at(g, batch, f)) > 0; f += n) {
      int rc = maps(state, f, n, out + f * g->plane, NULL);
      if (!rc && method_advance(c, n, g->frames)) rc = QS_ECANCELLED;
      if (rc) return rc;
    }
    return QS_OK;
  }
  qs_esrrf_partial t;
  size_t keep = batch < g->fpt ? batch : g->fpt;
  float *buf = NULL;
  int rc =
      qs_esrrf_partial_init(&t, g->kind, (size_t)g->rows_m, (size_t)g->cols_m);
  if (!rc && keep > SIZE_MAX / sizeof(float) / g->plane) rc = QS_ENOMEM;
  if (!rc) buf = calloc(keep * g->plane, sizeof(float));
  if (!rc && !buf) rc = QS_ENOMEM;
  if (rc) {
    qs_esrrf_partial_free(&t);
    snprintf(c->err, c->err_len,
             "esrrf: no memory for the temporal accumulators of %d x %d "
             "pixels",
             g->rows_m, g->cols_m);
    return rc;
  }
  for (size_t t0 = 0, tp = 0; !rc && t0 < g->frames; t0 += g->fpt, tp++) {
    size_t t1 = t0 + g->fpt < g->frames ? t0 + g->fpt : g->frames;
    qs_esrrf_partial_reset(&t);
    for (size_t f = t0, n; !rc && f < t1; f += n) {
      n = esrrf_batch_at(g, keep, f);
      rc = maps(state, f, n, buf, &t);
      if (!rc && method_advance(c, n, g->frames)) rc = QS_ECANCELLED;
    }
    if (!rc) rc = esrrf_finish(c, g, &t, out + tp * g->plane);
  }
  qs_esrrf_partial_free(&t);
  free(buf);
  return rc;
}

int esrrf_drive(const qs_method_call *c, const esrrf_geom *g, size_t batch,
                esrrf_maps_fn maps, void *state) {
  plain_maps p = {.c = c, .g = g, .maps = maps, .state = state};
  return esrrf_drive_fold(c, g, batch, plain_fold, &p);
}
/* ----------------------------------------------------- reference chain */

int esrrf_sub(const qs_method_call *c, const qs_method_desc *d,
              const qs_image *in, qs_image *out, const double *p) {
  qs_method_call s = *c;
  s.in = in;
  s.n_in = d->n_inputs;
  s.out = out;
  s.n_out = d->n_outputs;
  s.p = p;
  return d->impls[0].run(&s);
}

/* Per-frame buffers of the chain: everything of one frame, nothing more. */
typedef struct chain {
  const qs_method_call *c;
  esrrf_geom g;
  float *mag, *grad, *grad2; /* RM·CM; 2·R·C; 2·(2RM·2CM) */
  rgc_frame f;
} chain;

static int chain_rows(void *ctx, size_t b, size_t e, int worker) {
  (void)worker;
  rgc_frame_rows(ctx, b, e);
  return QS_OK;
}

/* One frame at a time through the reference steps; maps of n frames. */
static int chain_maps(void *state, size_t f0, size_t n, float *dst) {
  chain *s = state;
  const esrrf_geom *g = &s->g;
  size_t rc_px = (size_t)g->rows * (size_t)g->cols;
  size_t g2_px = 4 * g->plane;
  double sm1[4] = {0, 0, g->mag, g->mag}, sm2[4] = {0, 0, 2 * g->mag,
                                                     2 * g->mag};
  for (size_t k = 0; k < n; k++) {
    qs_image frame = qs_image_wrap(s->c->in[0].data + (f0 + k) * rc_px, 1,
                                   (size_t)g->rows, (size_t)g->cols);
    qs_image mag =
        qs_image_wrap(s->mag, 1, (size_t)g->rows_m, (size_t)g->cols_m);
    qs_image grad[2] = {
        qs_image_wrap(s->grad, 1, (size_t)g->rows, (size_t)g->cols),
        qs_image_wrap(s->grad + rc_px, 1, (size_t)g->rows, (size_t)g->cols)};
    int rc = QS_OK;
    if (g->weight) rc = esrrf_sub(s->c, &method_shift_magnify, &frame, &mag,
                                  sm1);
    if (!rc) rc = esrrf_sub(s->c, &method_roberts_cross, &frame, grad, NULL);
    for (int i = 0; !rc && i < 2; i++) {
      qs_image g2 =
          qs_image_wrap(s->grad2 + i * g2_px, 1, 2 * (size_t)g->rows_m,
                        2 * (size_t)g->cols_m);
      rc = esrrf_sub(s->c, &method_shift_magnify, &grad[i], &g2, sm2);
    }
    if (rc) return rc;
    s->f.out = dst + k * g->plane;
    rc = s->c->parallel_for(s->c, 0, (size_t)g->rows_m, chain_rows, &s->f);
    if (rc) return rc;
  }
  return QS_OK;
}

static int esrrf_run_chain(const qs_method_call *c) {
  chain s = {.c = c};
  esrrf_geom_of(c, &s.g);
  const esrrf_geom *g = &s.g;
  size_t rc_px = (size_t)g->rows * (size_t)g->cols;
  s.mag = malloc(g->plane * sizeof(float));
  s.grad = malloc(2 * rc_px * sizeof(float));
  s.grad2 = malloc(8 * g->plane * sizeof(float));
  int rc = QS_OK;
  if (!s.mag || !s.grad || !s.grad2) {
    snprintf(c->err, c->err_len,
             "esrrf: no memory for one frame's intermediates (%zu bytes)",
             (9 * g->plane + 2 * rc_px) * sizeof(float));
    rc = QS_ENOMEM;
  } else {
    s.f = (rgc_frame){.gx = s.grad2,
                      .gy = s.grad2 + 4 * g->plane,
                      .grid = rgc_grid_full(g->rows_m, g->cols_m, g->mag),
                      .img = g->weight ? s.mag : NULL,
                      .rows_m = g->rows_m,
                      .cols_m = g->cols_m,
                      .margin = g->margin,
                      .k = g->k};
    rc = esrrf_drive(c, g, 1, chain_maps, &s);
  }
  free(s.mag);
  free(s.grad);
  free(s.grad2);
  return rc;
}

/* ----------------------------------------------------------- descriptor */

static const qs_slot_def esrrf_inputs[] = {
    {"image", "raw stack (F, R, C)"},
};
static const qs_slot_def esrrf_outputs[] = {
    {"output", "(T, R·M, C·M), T = ceil(F / frames_per_timepoint); "
               "temporal=none: the per-frame maps (F, R·M, C·M)"},
};
/* Rows at the index the code reads them by (esrrf.h's P_ enum): rgc's
 * shared rows fill P_MAG..P_IW, the rest are placed by index. */
static const qs_param_def esrrf_params[] = {
    RGC_PARAM_ROWS[P_FPT] =
        {"frames_per_timepoint", QS_PARAM_INT, 0, 0, INT_MAX, 0, NULL,
         "frames per output timepoint (0: all frames; the last may be "
         "short)"},
    [P_TEMPORAL] = {"temporal", QS_PARAM_ENUM, TEMPORAL_AVG, 0, 0, 0,
                    TEMPORAL_CHOICES,
                    "statistic over each timepoint's frames (none: the "
                    "per-frame maps)"},
    [P_MPC] = {"macro_pixel_correction", QS_PARAM_BOOL, 1, 0, 1, 0, NULL,
               "divide each sub-pixel phase by its mean (not with "
               "temporal=none)"},
};
_Static_assert(P_MAG == 0 && P_RADIUS == 1 && P_SENS == 2 && P_IW == 3 &&
                   P_FPT == P_IW + 1,
               "RGC_PARAM_ROWS fills P_MAG..P_IW, right before P_FPT");
_Static_assert(sizeof esrrf_params / sizeof esrrf_params[0] == P_MPC + 1,
               "one esrrf_params row per P_ index, P_MPC the last");

static const qs_impl_def esrrf_impls[] = {
    QS_CPU_IMPLS(esrrf_run_chain, 1, 8),
    {"fused", QS_IMPL_THREADED, esrrf_run_fused, NULL, 1, QS_SCHED_DYNAMIC, 4,
     NULL, NULL},
    {"fused_vec", QS_IMPL_THREADED, esrrf_run_fused_vec, NULL, 3,
     QS_SCHED_DYNAMIC, 4, NULL, NULL},
    {"fused_avx2", QS_IMPL_THREADED, esrrf_run_fused_avx2, esrrf_avx2_probe, 3,
     QS_SCHED_DYNAMIC, 4, NULL, NULL},
    {"fused_avx512", QS_IMPL_THREADED, esrrf_run_fused_avx512,
     esrrf_avx512_probe, 1, QS_SCHED_DYNAMIC, 4, NULL, NULL},
    {"composed", QS_IMPL_COMPOSITE, esrrf_run_composed, NULL, 1,
     QS_SCHED_STATIC, 0, NULL, NULL},
#if QS_HAVE_OPENCL
    {"opencl", QS_IMPL_OPENCL, esrrf_run_opencl, esrrf_cl_probe, 2,
     QS_SCHED_STATIC, 0, NULL, NULL},
#else
    QS_OPENCL_IMPL(NULL, 1),
#endif
};

const qs_method_desc method_esrrf = {
    .name = "esrrf",
    .doc = "enhanced super-resolution radial fluctuations: RGC of every "
           "frame and a temporal statistic per timepoint",
    .inputs = esrrf_inputs,
    .n_inputs = 1,
    .outputs = esrrf_outputs,
    .n_outputs = 1,
    .params = esrrf_params,
    .n_params = sizeof esrrf_params / sizeof esrrf_params[0],
    .impls = esrrf_impls,
    .n_impls = sizeof esrrf_impls / sizeof esrrf_impls[0],
    .shape = esrrf_shape,
    .work = esrrf_work,
    .tolerance = 1e-4,
    .slice = esrrf_slice,
    .finite_inputs = 1,
};
