/* shift_magnify.c — Catmull-Rom shift and magnify (NanoPyx's
 * ShiftAndMagnify, methods.md §1): out[f,i,j] samples frame f at input
 * coordinates (i / magnification_row − shift_row, j / magnification_col −
 * shift_col), edge convention, no +0.5, 0 outside the image.
 *
 * The CPU implementations exploit separability without changing a bit: the
 * row taps depend only on the output row and the column taps only on the
 * output column, so both are computed once per call; each output row then
 * takes the column sums of its four input rows once (cr_vsums) and every
 * pixel combines four of them (cr_hsum), in the reference's accumulation
 * order. Work is split over output rows of all frames. */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/shared/cl_frames.h"
#include "methods/shift_magnify/catmull_rom.h"
#include "methods/methods.h"

/* One list gives the parameter indices (SM_*, how the code reads p[]) and
 * the table rows, so the two cannot drift apart. */
#define SM_PARAMS(X)                                                          \
  X(SM_SHIFT_ROW, "shift_row", QS_PARAM_FLOAT, 0, -FLT_MAX, FLT_MAX, 0,       \
    "shift along rows in input pixels (positive moves content down)")         \
  X(SM_SHIFT_COL, "shift_col", QS_PARAM_FLOAT, 0, -FLT_MAX, FLT_MAX, 0,       \
    "shift along columns in input pixels (positive moves content right)")     \
  X(SM_MAG_ROW, "magnification_row", QS_PARAM_FLOAT, 2, 0, FLT_MAX,           \
    QS_PARAM_MIN_OPEN,                                                        \
    "output rows per input row (> 0, need not be an "                         \
    "integer)")                                                               \
  X(SM_MAG_COL, "magnification_col", QS_PARAM_FLOAT, 2, 0, FLT_MAX,           \
    QS_PARAM_MIN_OPEN,                                                        \
    "output columns per input column (> 0, need not be an "                   \
    "integer)")

enum {
#define SM_PARAM_INDEX_(id, name, type, def, min, max, flags, doc) id,
  SM_PARAMS(SM_PARAM_INDEX_)
#undef SM_PARAM_INDEX_
  SM_N_PARAMS
};

static const qs_param_def sm_params[] = {
#define SM_PARAM_ROW_(id, name, type, def, min, max, flags, doc)             \
  {name, type, def, min, max, flags, NULL, doc},
    SM_PARAMS(SM_PARAM_ROW_)
#undef SM_PARAM_ROW_
};

static const qs_slot_def sm_inputs[] = {{"image", "stack to resample"}};
static const qs_slot_def sm_outputs[] = {
    {"image", "resampled stack (frames, int(rows*mr), int(cols*mc))"}};

/* Output length along one axis: the reference's (int)(n * (float)mag),
 * computed in float32 (so 90 × 1.3 gives 116, where double gives 117). */
static int sm_extent(size_t n, double mag, const char *what, size_t *out,
                     char *err, size_t err_len) {
  float m = (float)mag;
  if (!(m > 0) || !isfinite(m)) {
    snprintf(err, err_len,
             "shift_magnify: magnification_%s must be a finite number > 0 "
             "(got %g)",
             what, mag);
    return QS_EPARAM;
  }
  float e = (float)n * m;
  if (!(e < (float)INT_MAX)) {
    snprintf(err, err_len,
             "shift_magnify: image has %zu %ss; magnification_%s %g gives "
             "more output %ss than an int holds",
             n, what, what, mag, what);
    return QS_EOVERFLOW;
  }
  *out = (size_t)(int)e;
  if (*out == 0) {
    snprintf(err, err_len,
             "shift_magnify: image has %zu %ss; magnification_%s %g gives "
             "no output %s",
             n, what, what, mag, what);
    return QS_ESHAPE;
  }
  return QS_OK;
}

/* Checks input and parameters; sets out[0]'s shape only on success. */
static int sm_shape(const qs_image *in, const double *p, qs_image *out,
                    char *err, size_t err_len) {
  int rc = method_check_input("shift_magnify", in, err, err_len);
  if (rc) return rc;
  for (int k = SM_SHIFT_ROW; k <= SM_SHIFT_COL; k++)
    if (!isfinite((float)p[k])) {
      snprintf(err, err_len,
               "shift_magnify: %s must be a finite float (got %g)",
               sm_params[k].name, p[k]);
      return QS_EPARAM;
    }
  size_t rows, cols, n;
  rc = sm_extent(in->rows, p[SM_MAG_ROW], "row", &rows, err, err_len);
  if (!rc) rc = sm_extent(in->cols, p[SM_MAG_COL], "col", &cols, err, err_len);
  if (rc) return rc;
  if (qs_image_pixels(in->frames, rows, cols, &n)) {
    snprintf(err, err_len,
             "shift_magnify: output %zu x %zu x %zu exceeds %zu pixels",
             in->frames, rows, cols, (size_t)QS_MAX_PIXELS);
    return QS_EOVERFLOW;
  }
  out->frames = in->frames;
  out->rows = rows;
  out->cols = cols;
  return QS_OK;
}

/* ------------------------------------------------------------------ CPU */

typedef struct sm_plan {
  const float *in;
  float *out;
  int rows, cols, orows, ocols;
  cr_taps *rt, *ct; /* per output row, per output column */
  int c_lo, c_hi;   /* input columns that some output column reads */
  QS_ACC *sums;     /* cols column sums per worker */
  const qs_method_call *c;
  size_t total;     /* output rows of all frames */
} sm_plan;

/* Output rows [b, e) of all frames flattened (frame-major). */
static int sm_rows(void *ctx, size_t b, size_t e, int worker) {
  const sm_plan *s = ctx;
  QS_ACC *p = s->sums + (size_t)worker * (size_t)s->cols;
  size_t frame = (size_t)s->rows * (size_t)s->cols;
  for (size_t k = b; k < e; k++) {
    const cr_taps *rt = &s->rt[k % (size_t)s->orows];
    float *o = s->out + k * (size_t)s->ocols;
    if (rt->n == 0) {
      memset(o, 0, (size_t)s->ocols * sizeof *o);
      continue;
    }
    const float *img = s->in + (k / (size_t)s->orows) * frame;
    cr_vsums(img, s->cols, rt, p, s->c_lo, s->c_hi);
    for (int j = 0; j < s->ocols; j++) o[j] = cr_hsum(p, &s->ct[j]);
  }
  return method_advance(s->c, e - b, s->total) ? QS_ECANCELLED : QS_OK;
}

/* The tap tables of a frame size and the parameters: built by a plan's
 * open (sm_open) or by a one-shot run for itself. Outputs rows x cols of
 * frames rows_in x cols_in; `threads` column-sum rows. */
typedef struct sm_tables {
  cr_taps *rt, *ct;
  int c_lo, c_hi;
  QS_ACC *sums;
  int threads;
} sm_tables;

static void sm_tables_free(void *p) {
  sm_tables *t = p;
  if (!t) return;
  free(t->rt);
  free(t->sums);
  free(t);
}

static int sm_tables_of(const qs_method_call *c, sm_tables **out) {
  const qs_image *in = &c->in[0];
  qs_image o;
  char err[8];
  *out = NULL;
  int rc = sm_shape(c->in, c->p, &o, err, sizeof err);
  if (rc) return rc;
  int rows = (int)in->rows, cols = (int)in->cols;
  int orows = (int)o.rows, ocols = (int)o.cols;
  int threads = c->threads > 0 ? c->threads : 1;
  sm_tables *t = calloc(1, sizeof *t);
  if (t) {
    t->rt = malloc(((size_t)orows + (size_t)ocols) * sizeof *t->rt);
    t->sums = malloc((size_t)threads * (size_t)cols * sizeof *t->sums);
  }
  if (!t || !t->rt || !t->sums) {
    sm_tables_free(t);
    snprintf(c->err, c->err_len,
             "shift_magnify: no memory for the tap tables (%d + %d entries)",
             orows, ocols);
    return QS_ENOMEM;
  }
  t->threads = threads;
  t->ct = t->rt + orows;
  float mr = (float)c->p[SM_MAG_ROW], mc = (float)c->p[SM_MAG_COL];
  float sr = (float)c->p[SM_SHIFT_ROW], sc = (float)c->p[SM_SHIFT_COL];
  for (int i = 0; i < orows; i++)
    cr_taps_at(cr_source(i, mr, sr), rows, &t->rt[i]);
  t->c_lo = cols;
  t->c_hi = 0;
  for (int j = 0; j < ocols; j++) {
    cr_taps *tp = &t->ct[j];
    if (!cr_taps_at(cr_source(j, mc, sc), cols, tp)) continue;
    t->c_lo = QS_MIN(t->c_lo, tp->first);
    t->c_hi = QS_MAX(t->c_hi, tp->first + tp->n);
  }
  *out = t;
  return QS_OK;
}

static int sm_open(const qs_method_call *c, void **state) {
  return sm_tables_of(c, (sm_tables **)state);
}

static int sm_run(const qs_method_call *c) {
  const qs_image *in = &c->in[0];
  qs_image *out = &c->out[0];
  sm_tables *t = c->state, *own = NULL;
  if (!t) {
    int rc = sm_tables_of(c, &own);
    if (rc) return rc;
    t = own;
  }
  sm_plan s = {.in = in->data,
               .out = out->data,
               .rows = (int)in->rows,
               .cols = (int)in->cols,
               .orows = (int)out->rows,
               .ocols = (int)out->cols,
               .rt = t->rt,
               .ct = t->ct,
               .c_lo = t->c_lo,
               .c_hi = t->c_hi,
               .sums = t->sums,
               .c = c,
               .total = in->frames * out->rows};
  int rc = c->parallel_for(c, 0, in->frames * out->rows, sm_rows, &s);
  sm_tables_free(own);
  return rc;
}

/* --------------------------------------------------------------- OpenCL */

#if QS_HAVE_OPENCL
/* After the buffers and the frame count: rows, cols (int), then the four
 * parameters as float in table order. */
static int sm_cl_args(cl_kernel k, cl_uint first, const qs_method_call *c) {
  cl_int dims[2] = {(cl_int)c->in[0].rows, (cl_int)c->in[0].cols};
  cl_int e = CL_SUCCESS;
  for (cl_uint i = 0; i < 2 && !e; i++)
    e = clSetKernelArg(k, first + i, sizeof dims[i], &dims[i]);
  for (cl_uint i = 0; i < SM_N_PARAMS && !e; i++) {
    cl_float v = (cl_float)c->p[i];
    e = clSetKernelArg(k, first + 2 + i, sizeof v, &v);
  }
  return cl_status(e, "shift_magnify: setting the kernel arguments", c->err,
                   c->err_len);
}

static const cl_frames_job sm_cl = {
    .file = "shift_magnify.cl",
    .kernel = "shift_magnify",
    /* coordinates i / mag must be the C division's, not a 2.5-ulp one */
    .options = "-cl-fp32-correctly-rounded-divide-sqrt",
    .args = sm_cl_args,
};

static int sm_run_cl(const qs_method_call *c) {
  return cl_frames_run(c, &sm_cl);
}
#endif

/* The CPU rows plan their tap tables at a plan's open. */
#define SM_CPU(name, kind, sched, chunk)                                     \
  {name, kind, sm_run, NULL, 1, sched, chunk, sm_open, sm_tables_free}

static const qs_impl_def sm_impls[] = {
    SM_CPU("serial", QS_IMPL_SERIAL, QS_SCHED_STATIC, 0),
    SM_CPU("threaded", QS_IMPL_THREADED, QS_SCHED_STATIC, 0),
    SM_CPU("threaded_static", QS_IMPL_THREADED, QS_SCHED_STATIC, 16),
    SM_CPU("threaded_dynamic", QS_IMPL_THREADED, QS_SCHED_DYNAMIC, 4),
    SM_CPU("threaded_guided", QS_IMPL_THREADED, QS_SCHED_GUIDED, 1),
    QS_OPENCL_IMPL(sm_run_cl, 1),
};

const qs_method_desc method_shift_magnify = {
    .name = "shift_magnify",
    .doc = "Catmull-Rom shift and magnification of every frame",
    .inputs = sm_inputs,
    .n_inputs = 1,
    .outputs = sm_outputs,
    .n_outputs = 1,
    .params = sm_params,
    .n_params = SM_N_PARAMS,
    .impls = sm_impls,
    .n_impls = sizeof sm_impls / sizeof sm_impls[0],
    .shape = sm_shape,
    .work = NULL,
    .tolerance = 1e-5,
};
