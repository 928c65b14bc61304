/* roberts_cross.c — Roberts-cross gradients (NanoPyx's
 * GradientRobertsCross, methods.md §2): for every frame, gradient_col and
 * gradient_row from the clamped 2×2 stencil of math/roberts.h, same shape
 * as the input.
 *
 * The work is split over the rows of all frames (the reference splits over
 * frames only, which leaves a single frame on one core). */
#include <stdio.h>

#include "methods/shared/cl_frames.h"
#include "methods/roberts_cross/roberts.h"
#include "methods/methods.h"

static const qs_slot_def rc_inputs[] = {{"image", "stack to differentiate"}};
static const qs_slot_def rc_outputs[] = {
    {"gradient_col", "gradient along columns (x), at pixel top-left corners"},
    {"gradient_row", "gradient along rows (y), at pixel top-left corners"},
};

/* Both outputs take the input's shape. */
static int rc_shape(const qs_image *in, const double *p, qs_image *out,
                    char *err, size_t err_len) {
  (void)p;
  int rc = method_check_input("roberts_cross", in, err, err_len);
  if (rc) return rc;
  for (int k = 0; k < 2; k++) {
    out[k].frames = in->frames;
    out[k].rows = in->rows;
    out[k].cols = in->cols;
  }
  return QS_OK;
}

typedef struct rc_plan {
  const qs_method_call *c;
  size_t total; /* rows of all frames */
  const float *in;
  float *gcol, *grow;
  size_t rows, cols;
} rc_plan;

/* Rows [b, e) of all frames flattened (frame-major). */
static int rc_rows(void *ctx, size_t b, size_t e, int worker) {
  (void)worker;
  const rc_plan *s = ctx;
  size_t cols = s->cols;
  for (size_t k = b; k < e; k++) {
    const float *row = s->in + k * cols;
    const float *up = k % s->rows ? row - cols : row; /* clamped r0 */
    float *gc = s->gcol + k * cols, *gr = s->grow + k * cols;
    /* column 0: c0 = c */
    gc[0] = rc_col(up[0], row[0], row[0], up[0]);
    gr[0] = rc_row(up[0], row[0], row[0], up[0]);
    for (size_t c = 1; c < cols; c++) {
      gc[c] = rc_col(up[c], row[c - 1], row[c], up[c - 1]);
      gr[c] = rc_row(up[c], row[c - 1], row[c], up[c - 1]);
    }
  }
  return method_advance(s->c, e - b, s->total) ? QS_ECANCELLED : QS_OK;
}

static int rc_run(const qs_method_call *c) {
  const qs_image *in = &c->in[0];
  rc_plan s = {c, in->frames * in->rows, in->data, c->out[0].data,
               c->out[1].data, in->rows, in->cols};
  return c->parallel_for(c, 0, in->frames * in->rows, rc_rows, &s);
}

#if QS_HAVE_OPENCL
static const cl_frames_job rc_cl = {
    .file = "roberts_cross.cl",
    .kernel = "roberts_cross",
};

static int rc_run_cl(const qs_method_call *c) {
  return cl_frames_run(c, &rc_cl);
}
#endif

static const qs_impl_def rc_impls[] = {
    QS_CPU_IMPLS(rc_run, 1, 64),
    QS_OPENCL_IMPL(rc_run_cl, 1),
};

const qs_method_desc method_roberts_cross = {
    .name = "roberts_cross",
    .doc = "Roberts-cross gradients along columns and rows of every frame",
    .inputs = rc_inputs,
    .n_inputs = 1,
    .outputs = rc_outputs,
    .n_outputs = sizeof rc_outputs / sizeof rc_outputs[0],
    .params = NULL,
    .n_params = 0,
    .impls = rc_impls,
    .n_impls = sizeof rc_impls / sizeof rc_impls[0],
    .shape = rc_shape,
    .work = NULL,
    .tolerance = 1e-5,
};
