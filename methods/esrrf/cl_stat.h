/* cl_stat.h — eSRRF's temporal statistic of one timepoint accumulated in
 * device buffers (cl/kernels/esrrf_stat.cl gives the scheme: shifted,
 * compensated float sums), so that a chained OpenCL eSRRF downloads only
 * the T images. Used by the batch OpenCL implementation and the live
 * stream; tests drive it directly. Internal to methods/. */
#ifndef QS_CL_STAT_H
#define QS_CL_STAT_H

#include "qs_config.h"

#if QS_HAVE_OPENCL
#include "cl/clrt.h"

typedef struct cl_stat {
  cldev *dev;
  int kind;     /* 0 avg, 1 var, 2 tac2 */
  size_t plane; /* pixels of a map */
  cl_kernel fold, finish;
  cl_mem acc, res;      /* slots · plane floats; plane floats */
  size_t global;        /* plane rounded up to a multiple of 64 */
  uint64_t n;           /* frames folded into the current timepoint */
  double dev_s, once_s; /* device seconds; builds and first launches */
} cl_stat;

/* Device floats per pixel of a statistic (2, 5, 6), and the bytes
 * cl_stat_open allocates for maps of `plane` pixels. */
size_t cl_stat_slots(int kind);
size_t cl_stat_bytes(int kind, size_t plane);

/* Program, kernels and buffers for maps of `plane` pixels on d.
 * QS_EDEVMEM / QS_EBUILD / QS_ECL with a message. On failure *st holds
 * nothing to release beyond cl_stat_close (safe). */
int cl_stat_open(cl_stat *st, cldev *d, int kind, size_t plane, char *err,
                 size_t err_len);
void cl_stat_close(cl_stat *st);

/* Enqueues the fold of n maps (planes of st->plane floats at the start of
 * `maps`) on q after `wait` (may be NULL) and waits for it. */
int cl_stat_fold(cl_stat *st, cl_command_queue q, cl_mem maps, size_t n,
                 cl_event wait, char *err, size_t err_len);

/* The same for n maps starting at map `at` of `maps`; with `keep` it
 * does not wait: the fold's event goes to *keep (the caller waits, books
 * its device time and releases it), but for a first launch (waited for,
 * its compilation booked in once_s). */
int cl_stat_fold_at(cl_stat *st, cl_command_queue q, cl_mem maps, size_t at,
                    size_t n, cl_event wait, cl_event *keep, char *err,
                    size_t err_len);

/* The timepoint's image (st->plane floats) into out: the finishing kernel
 * and one download (counted by cldev_transfer); starts a new timepoint.
 * QS_EINVAL when no frame (or one, for tac2) was folded. */
int cl_stat_finish(cl_stat *st, cl_command_queue q, float *out, char *err,
                   size_t err_len);
#endif

#endif
