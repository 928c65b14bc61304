/* methods.h — what the built-in methods' implementation tables share, and
 * their descriptors (methods/builtin_methods.h, generated from the list in
 * methods/meson.build). Methods include only the engine's contract headers
 * and cl/. */
#ifndef QS_METHODS_H
#define QS_METHODS_H

#include <limits.h>
#include <stdio.h>

#include "qs_config.h"
#include "quicksilver_method.h"

#include "methods/builtin_methods.h"

/* The CPU rows of an implementation table: one run function serves them
 * all through c->parallel_for, the schedule (and chunk) telling them apart:
 * threaded splits the work into one even block per thread, threaded_static
 * deals chunks of `chunk` items round robin, threaded_dynamic hands out
 * chunks of chunk/4 from a shared counter (work stealing), threaded_guided
 * shrinking chunks. */
#define QS_CPU_IMPLS(run, version, chunk)                                     \
  {"serial", QS_IMPL_SERIAL, run, NULL, version, QS_SCHED_STATIC,             \
   0,        NULL,           NULL},                                           \
      {"threaded", QS_IMPL_THREADED, run, NULL,                               \
       version,    QS_SCHED_STATIC,  0,   NULL,                               \
       NULL},                                                                 \
      {"threaded_static",                                                     \
       QS_IMPL_THREADED,                                                      \
       run,                                                                   \
       NULL,                                                                  \
       version,                                                               \
       QS_SCHED_STATIC,                                                       \
       chunk,                                                                 \
       NULL,                                                                  \
       NULL},                                                                 \
      {"threaded_dynamic",                                                    \
       QS_IMPL_THREADED,                                                      \
       run,                                                                   \
       NULL,                                                                  \
       version,                                                               \
       QS_SCHED_DYNAMIC,                                                      \
       (chunk) / 4 ? (chunk) / 4 : 1,                                         \
       NULL,                                                                  \
       NULL},                                                                 \
  {                                                                           \
    "threaded_guided", QS_IMPL_THREADED, run, NULL, version, QS_SCHED_GUIDED, \
        1, NULL, NULL                                                         \
  }

/* Checks that `in` is a non-empty image whose sides fit an int
 * (the kernels index with int) and whose size fits QS_MAX_PIXELS; else a
 * message naming `method` and the shape, and QS_EINVAL / QS_EOVERFLOW. */
static inline int method_check_input(const char *method, const qs_image *in,
                                     char *err, size_t err_len) {
  size_t n;
  /* Shapes only: qs_method_estimate passes images without data, and
   * qs_method_run has checked every input's data before any shape rule. */
  if (!in || !in->frames || !in->rows || !in->cols) {
    snprintf(err, err_len, "%s: input image is empty (%zu x %zu x %zu)",
             method, in ? in->frames : 0, in ? in->rows : 0,
             in ? in->cols : 0);
    return QS_EINVAL;
  }
  if (in->rows > INT_MAX || in->cols > INT_MAX ||
      qs_image_pixels(in->frames, in->rows, in->cols, &n)) {
    snprintf(err, err_len, "%s: input image %zu x %zu x %zu is too large",
             method, in->frames, in->rows, in->cols);
    return QS_EOVERFLOW;
  }
  return QS_OK;
}

/* The OpenCL row of an implementation table (the engine expands it per
 * device): `run` streams the frames through a kernel (cl_frames.h, whose
 * probe checks that a frame fits the device), binding device images of
 * its device as they are (device_images). In a build without OpenCL
 * the row stays, unavailable, with the reason. */
#if QS_HAVE_OPENCL
#define QS_OPENCL_IMPL(run, version)                                          \
  {                                                                           \
    "opencl", QS_IMPL_OPENCL, run, cl_frames_probe, version, QS_SCHED_STATIC, \
        0, NULL, NULL, 1                                                      \
  }
#else
#define QS_OPENCL_IMPL(run, version)                                          \
  {                                                                           \
    "opencl", QS_IMPL_OPENCL, method_no_opencl_run, method_no_opencl,         \
        version, QS_SCHED_STATIC, 0, NULL, NULL                               \
  }
#endif

static inline int method_no_opencl(const qs_method_call *c, char *why,
                                   size_t why_len) {
  (void)c;
  snprintf(why, why_len, "OpenCL is not built in (configure with "
                         "-Dopencl=enabled and an OpenCL ICD)");
  return QS_EUNAVAIL;
}

static inline int method_no_opencl_run(const qs_method_call *c) {
  return method_no_opencl(c, c->err, c->err_len);
}

#endif
