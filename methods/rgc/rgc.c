/* rgc.c — the radial gradient convergence method: per-pixel convergence of
 * the ×2M Catmull-Rom gradients towards each ×M output pixel centre
 * (methods.md §3), weighted by the ×M intensity. Its inputs are what eSRRF
 * computes on the way; NanoPyx exposes the step on its own and so do we.
 *
 * Unlike NanoPyx, shapes are checked (the gradients must be exactly twice
 * the image along each axis) and every output pixel is written: the
 * margins of int(radius·M) are zero on every implementation. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "methods/shared/cl_frames.h"
#include "methods/rgc/rgc.h"
#include "methods/methods.h"

int rgc_check(const double *p, size_t frames, size_t rows, size_t cols,
              size_t factor, char *err, size_t err_len) {
  double mag = p[P_MAG], radius = p[P_RADIUS], sens = p[P_SENS];
  if (!(mag >= 1 && mag <= 64) || mag != floor(mag)) {
    snprintf(err, err_len, "magnification: %g is not an integer in [1, 64]",
             mag);
    return QS_EPARAM;
  }
  if (!(radius > 0 && radius <= 50)) {
    snprintf(err, err_len, "radius: %g is not in (0, 50]", radius);
    return QS_EPARAM;
  }
  if (!(sens >= 0 && sens <= 100)) {
    snprintf(err, err_len, "sensitivity: %g is not in [0, 100]", sens);
    return QS_EPARAM;
  }
  size_t m = factor, n;
  if (rows > RGC_MAX_SIDE / m || cols > RGC_MAX_SIDE / m ||
      qs_image_pixels(frames, rows * m, cols * m, &n)) {
    snprintf(err, err_len,
             "magnification: %zu frames of %zu x %zu pixels magnified %zu "
             "times is too large an output (at most %zu pixels a side)",
             frames, rows, cols, m, RGC_MAX_SIDE);
    return QS_EOVERFLOW;
  }
  return QS_OK;
}

rgc_consts rgc_consts_of(const double *p) {
  return rgc_consts_make(p[P_RADIUS], (int)p[P_MAG], p[P_SENS]);
}

void rgc_frame_rows(const rgc_frame *f, size_t r0, size_t r1) {
  size_t lo = (size_t)f->margin, hi = (size_t)(f->rows_m - f->margin);
  if (f->rows_m <= 2 * f->margin) return;
  if (r0 < lo) r0 = lo;
  if (r1 > hi) r1 = hi;
  for (size_t r = r0; r < r1; r++) {
    size_t at = r * (size_t)f->cols_m;
    for (int c = f->margin; c < f->cols_m - f->margin; c++) {
      float v = rgc_pixel(c, (int)r, f->gx, f->gy, f->grid, f->cols_m,
                          f->rows_m, f->k);
      f->out[at + c] = f->img ? v * f->img[at + c] : v;
    }
  }
}

/* -------------------------------------------------------------- shapes */

static int rgc_shape(const qs_image *in, const double *p, qs_image *out,
                     char *err, size_t err_len) {
  const qs_image *img = &in[2];
  static const char *names[2] = {"gradient_col", "gradient_row"};
  for (int i = 0; i < 2; i++) {
    const qs_image *g = &in[i];
    if (g->frames != img->frames || g->rows != 2 * img->rows ||
        g->cols != 2 * img->cols) {
      snprintf(err, err_len,
               "%s: shape (%zu, %zu, %zu) does not fit image (%zu, %zu, "
               "%zu); it must be (%zu, %zu, %zu), the gradients magnified "
               "twice as much as the image",
               names[i], g->frames, g->rows, g->cols, img->frames, img->rows,
               img->cols, img->frames, 2 * img->rows, 2 * img->cols);
      return QS_ESHAPE;
    }
  }
  int rc = rgc_check(p, img->frames, img->rows, img->cols, 1, err, err_len);
  if (rc) return rc;
  out[0].frames = img->frames;
  out[0].rows = img->rows;
  out[0].cols = img->cols;
  return QS_OK;
}

/* ----------------------------------------------------------------- CPU */

typedef struct rgc_job {
  const qs_method_call *c;
  rgc_frame f;
  size_t rows; /* computed rows per frame */
} rgc_job;

/* Items are (frame, computed row) pairs so that the pool balances across
 * frames too. */
static int rgc_body(void *ctx, size_t begin, size_t end, int worker) {
  const rgc_job *j = ctx;
  (void)worker;
  const qs_image *in = j->c->in;
  size_t plane2 = in[0].rows * in[0].cols, plane = in[2].rows * in[2].cols;
  for (size_t it = begin; it < end;) {
    size_t fr = it / j->rows, r = it % j->rows;
    size_t stop = end - it < j->rows - r ? end - it : j->rows - r;
    rgc_frame f = j->f;
    f.gx = in[0].data + fr * plane2;
    f.gy = in[1].data + fr * plane2;
    f.img = f.img ? in[2].data + fr * plane : NULL;
    f.out = j->c->out[0].data + fr * plane;
    size_t r0 = (size_t)f.margin + r;
    rgc_frame_rows(&f, r0, r0 + stop);
    it += stop;
  }
  size_t total = j->c->in[2].frames * j->rows;
  return method_advance(j->c, end - begin, total) ? QS_ECANCELLED : QS_OK;
}

static int rgc_run(const qs_method_call *c) {
  const qs_image *img = &c->in[2];
  rgc_job j = {.c = c};
  j.f.k = rgc_consts_of(c->p);
  j.f.rows_m = (int)img->rows;
  j.f.cols_m = (int)img->cols;
  j.f.margin = rgc_margin(j.f.k.fwhm, j.f.k.mag);
  j.f.grid = rgc_grid_full(j.f.rows_m, j.f.cols_m, j.f.k.mag);
  j.f.img = c->p[P_IW] != 0 ? img->data : NULL;
  if (j.f.rows_m <= 2 * j.f.margin || j.f.cols_m <= 2 * j.f.margin)
    return QS_OK; /* all margin: the zeroed output is the answer */
  j.rows = (size_t)(j.f.rows_m - 2 * j.f.margin);
  return c->parallel_for(c, 0, img->frames * j.rows, rgc_body, &j);
}

/* -------------------------------------------------------------- OpenCL */

#if QS_HAVE_OPENCL
/* rgc.cl, one work-item per output pixel, its three inputs streamed
 * through the device with cl_frames. Build options: pixel centres
 * (i + 0.5) / M must be the correctly rounded quotient: where it is
 * exactly k + 1/2 (M odd, i = k·M + (M − 1)/2), a quotient one ulp low
 * moves the whole search window by half a pixel. So no relaxed math (the
 * reference's chained path uses it, and inherits that flaw); contractions
 * to mad are harmless. */
#define RGC_CL_OPTIONS "-cl-fp32-correctly-rounded-divide-sqrt -cl-mad-enable"

/* Sets rgc.cl's arguments from `first` on: the constants, the margin,
 * weighting, and the ×2M gradient layout with its floats per frame. */
static int rgc_cl_args(cl_kernel k, cl_uint first, const qs_method_call *c) {
  rgc_consts rc = rgc_consts_of(c->p);
  int rows_m = (int)c->in[2].rows, cols_m = (int)c->in[2].cols;
  rgc_grid g = rgc_grid_full(rows_m, cols_m, rc.mag);
  cl_int mag = rc.mag, mg = rgc_margin(rc.fwhm, rc.mag);
  cl_int w = c->p[P_IW] != 0, step = g.step;
  cl_long width = g.width, g_plane = (cl_long)4 * rows_m * cols_m;
  /* The kernel's parameters from `first` on, in its order. */
  const struct {
    size_t size;
    const void *value;
  } arg[] = {{sizeof mag, &mag},           {sizeof(float), &rc.fwhm},
             {sizeof(float), &rc.tss},     {sizeof(float), &rc.tso},
             {sizeof(float), &rc.sens},    {sizeof mg, &mg},
             {sizeof w, &w},               {sizeof step, &step},
             {sizeof(float), &g.limit_r},  {sizeof(float), &g.limit_c},
             {sizeof(float), &g.clamp_r},  {sizeof(float), &g.clamp_c},
             {sizeof width, &width},       {sizeof g_plane, &g_plane}};
  cl_int e = CL_SUCCESS;
  for (size_t i = 0; i < sizeof arg / sizeof *arg; i++)
    e |= clSetKernelArg(k, first + (cl_uint)i, arg[i].size, arg[i].value);
  return cl_status(e, "setting the rgc kernel's arguments", c->err,
                   c->err_len);
}

static int rgc_run_opencl(const qs_method_call *c) {
  static const cl_frames_job job = {"rgc.cl", "rgc", RGC_CL_OPTIONS,
                                    rgc_cl_args};
  return cl_frames_run(c, &job);
}
#endif

/* ---------------------------------------------------------- descriptor */

static const qs_slot_def rgc_inputs[] = {
    {"gradient_col", "column (x) gradient magnified 2M, (F, 2RM, 2CM)"},
    {"gradient_row", "row (y) gradient magnified 2M, (F, 2RM, 2CM)"},
    {"image", "intensity magnified M, (F, RM, CM)"},
};
static const qs_slot_def rgc_outputs[] = {
    {"output", "radial gradient convergence, (F, RM, CM)"},
};
static const qs_param_def rgc_params[] = {RGC_PARAM_ROWS};
_Static_assert(sizeof rgc_params / sizeof rgc_params[0] == RGC_N_PARAMS,
               "rgc's table is its RGC_PARAMS rows");

static const qs_impl_def rgc_impls[] = {
    QS_CPU_IMPLS(rgc_run, 1, 8),
    QS_OPENCL_IMPL(rgc_run_opencl, 1),
    {"vec", QS_IMPL_THREADED, rgc_run_vec, NULL, 2, QS_SCHED_DYNAMIC, 4, NULL,
     NULL},
    {"avx2", QS_IMPL_THREADED, rgc_run_avx2, rgc_avx2_probe, 2,
     QS_SCHED_DYNAMIC, 4, NULL, NULL},
    {"avx512", QS_IMPL_THREADED, rgc_run_avx512, rgc_avx512_probe, 1,
     QS_SCHED_DYNAMIC, 4, NULL, NULL},
};

/* Work: the output pixels computed (those inside the zero margin, at
 * least one row and column) times the window. A calibration slice is
 * mostly margin (a 16 x 16 image at M = 5, radius 1.5: 2 x 2 computed
 * pixels of 256), so counting every pixel made slices look 60 times
 * cheaper per pixel than the call and chose a schedule 100 times slower
 * than the best. */
static double rgc_work(const qs_image *in, const double *p) {
  double m = p[P_RADIUS] * 2 + 1;
  rgc_consts k = rgc_consts_of(p);
  double edge = 2.0 * rgc_margin(k.fwhm, k.mag);
  double rows = (double)in[2].rows - edge, cols = (double)in[2].cols - edge;
  return (double)in[2].frames * (rows > 1 ? rows : 1) *
         (cols > 1 ? cols : 1) * m * m;
}

/* Calibration: the first frame, cropped top-left to an image of
 * rows / 2 x cols / 2 (rows and cols count the gradients' pixels) rounded
 * down to multiples of the magnification, and the gradients twice that.
 * The vector paths take the reference loop, 10-100x slower, for an image
 * whose sides are not multiples of it: the generic slice (64 x 64 of a
 * 320 x 320 image at M = 5) timed that loop and made the fastest path look
 * 300x slower per pixel than on the call. */
static int rgc_slice(const qs_image *in, const double *p, size_t rows,
                     size_t cols, qs_image *out) {
  size_t mag = (size_t)p[P_MAG];
  size_t r = rows / 2 / mag * mag, c = cols / 2 / mag * mag;
  r = r < mag ? mag : r;
  c = c < mag ? mag : c;
  r = r < in[2].rows ? r : in[2].rows;
  c = c < in[2].cols ? c : in[2].cols;
  for (size_t k = 0; k < 3; k++) {
    size_t f = k < 2 ? 2 : 1, rk = r * f, ck = c * f;
    rk = rk < in[k].rows ? rk : in[k].rows;
    ck = ck < in[k].cols ? ck : in[k].cols;
    int rc = qs_image_alloc(&out[k], 1, rk, ck);
    if (rc) {
      while (k-- > 0)
        qs_image_free(&out[k]);
      return rc;
    }
    for (size_t y = 0; y < rk; y++)
      memcpy(out[k].data + y * ck, in[k].data + y * in[k].cols,
             ck * sizeof(float));
  }
  return QS_OK;
}

const qs_method_desc method_rgc = {
    .name = "rgc",
    .doc = "radial gradient convergence of magnified gradients (the core of "
           "eSRRF)",
    .inputs = rgc_inputs,
    .n_inputs = 3,
    .outputs = rgc_outputs,
    .n_outputs = 1,
    .params = rgc_params,
    .n_params = sizeof rgc_params / sizeof rgc_params[0],
    .impls = rgc_impls,
    .n_impls = sizeof rgc_impls / sizeof rgc_impls[0],
    .shape = rgc_shape,
    .slice = rgc_slice,
    .work = rgc_work,
    .tolerance = 1e-4,
};
