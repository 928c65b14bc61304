/* cl_stat.c — eSRRF's temporal statistics in device buffers (cl_stat.h). */
#include "qs_config.h"

#if QS_HAVE_OPENCL
#include <stdio.h>
#include <string.h>

#include "engine/timer.h"
#include "methods/esrrf/cl_stat.h"

/* Exact division in the finish (the bits must not depend on the device's
 * division); no contractions (the kernel also says so). */
#define CL_STAT_OPTIONS "-cl-fp32-correctly-rounded-divide-sqrt"

size_t cl_stat_slots(int kind) {
  static const size_t slots[] = {2, 5, 6};
  return kind >= 0 && kind <= 2 ? slots[kind] : 0;
}

size_t cl_stat_bytes(int kind, size_t plane) {
  return (cl_stat_slots(kind) + 1) * plane * sizeof(float);
}

int cl_stat_open(cl_stat *st, cldev *d, int kind, size_t plane, char *err,
                 size_t err_len) {
  memset(st, 0, sizeof *st);
  st->dev = d;
  st->kind = kind;
  st->plane = plane;
  st->global = (plane + 63) / 64 * 64;
  if (!cl_stat_slots(kind) || !plane) {
    snprintf(err, err_len, "device statistic: no statistic %d", kind);
    return QS_EINVAL;
  }
  cl_program prog;
  cl_int e = CL_SUCCESS;
  int rc = cldev_program(d, "esrrf_stat.cl", CL_STAT_OPTIONS, &prog,
                         &st->once_s, err, err_len);
  if (!rc) {
    st->fold = clCreateKernel(prog, "esrrf_fold", &e);
    rc = cl_status(e, "esrrf_fold", err, err_len);
  }
  if (!rc) {
    st->finish = clCreateKernel(prog, "esrrf_stat_finish", &e);
    rc = cl_status(e, "esrrf_stat_finish", err, err_len);
  }
  if (!rc)
    rc = cldev_buffer(d, CL_MEM_READ_WRITE,
                      cl_stat_slots(kind) * plane * sizeof(float), NULL,
                      "temporal accumulators", &st->acc, err, err_len);
  if (!rc)
    rc = cldev_buffer(d, CL_MEM_WRITE_ONLY, plane * sizeof(float), NULL,
                      "timepoint image", &st->res, err, err_len);
  cl_int ck = kind;
  cl_long pl = (cl_long)plane;
  if (!rc) {
    e = clSetKernelArg(st->fold, 1, sizeof st->acc, &st->acc);
    e |= clSetKernelArg(st->fold, 4, sizeof ck, &ck);
    e |= clSetKernelArg(st->fold, 5, sizeof pl, &pl);
    e |= clSetKernelArg(st->finish, 0, sizeof st->acc, &st->acc);
    e |= clSetKernelArg(st->finish, 1, sizeof st->res, &st->res);
    e |= clSetKernelArg(st->finish, 3, sizeof ck, &ck);
    e |= clSetKernelArg(st->finish, 4, sizeof pl, &pl);
    rc = cl_status(e, "setting the statistic's arguments", err, err_len);
  }
  return rc;
}

void cl_stat_close(cl_stat *st) {
  if (st->fold) clReleaseKernel(st->fold);
  if (st->finish) clReleaseKernel(st->finish);
  if (st->acc) clReleaseMemObject(st->acc);
  if (st->res) clReleaseMemObject(st->res);
  st->fold = st->finish = NULL;
  st->acc = st->res = NULL;
}

/* Runs kernel k over the plane after `wait`. Without `keep` it waits for
 * it and books its device time; with `keep` the kernel's event goes to
 * *keep (the caller books and releases it: cl_event_seconds) and only a
 * first launch (compilation for its size, booked as one-time cost) is
 * waited for. */
static int stat_launch(cl_stat *st, cl_command_queue q, cl_kernel k,
                       const char *name, cl_event wait, cl_event *keep,
                       char *err, size_t err_len) {
  cl_event ev = NULL;
  int first = cldev_first_launch(st->dev, name, &st->global, 1);
  int64_t t0 = timer_ns();
  int rc =
      cl_status(clEnqueueNDRangeKernel(q, k, 1, NULL, &st->global, NULL,
                                       wait ? 1 : 0, wait ? &wait : NULL, &ev),
                name, err, err_len);
  if (!rc && (first || !keep))
    rc = cl_status(clWaitForEvents(1, &ev), name, err, err_len);
  if (!rc && keep) {
    double wall = (double)(timer_ns() - t0) * 1e-9;
    if (first && wall > cl_event_seconds(ev))
      st->once_s += wall - cl_event_seconds(ev);
    *keep = ev;
    return QS_OK;
  }
  if (ev) {
    double run = cl_event_seconds(ev), wall = (double)(timer_ns() - t0) * 1e-9;
    st->dev_s += run;
    if (first && wall > run) st->once_s += wall - run;
    clReleaseEvent(ev);
  }
  return rc;
}

/* The fold's arguments for n maps at `at` maps into `maps` (a ring of
 * `ring` maps: at + n <= ring). */
static int fold_args(cl_stat *st, cl_mem maps, size_t at, size_t n,
                     char *err, size_t err_len) {
  cl_int cn = (cl_int)n, first = st->n > 0;
  cl_long off = (cl_long)(at * st->plane);
  cl_int e = clSetKernelArg(st->fold, 0, sizeof maps, &maps);
  e |= clSetKernelArg(st->fold, 2, sizeof cn, &cn);
  e |= clSetKernelArg(st->fold, 3, sizeof first, &first);
  e |= clSetKernelArg(st->fold, 6, sizeof off, &off);
  return cl_status(e, "setting the fold's arguments", err, err_len);
}

int cl_stat_fold(cl_stat *st, cl_command_queue q, cl_mem maps, size_t n,
                 cl_event wait, char *err, size_t err_len) {
  return cl_stat_fold_at(st, q, maps, 0, n, wait, NULL, err, err_len);
}

int cl_stat_fold_at(cl_stat *st, cl_command_queue q, cl_mem maps, size_t at,
                    size_t n, cl_event wait, cl_event *keep, char *err,
                    size_t err_len) {
  if (keep) *keep = NULL;
  if (n == 0) return QS_OK;
  int rc = fold_args(st, maps, at, n, err, err_len);
  if (!rc)
    rc = stat_launch(st, q, st->fold, "esrrf_fold", wait, keep, err, err_len);
  if (!rc) st->n += n;
  return rc;
}

int cl_stat_finish(cl_stat *st, cl_command_queue q, float *out, char *err,
                   size_t err_len) {
  if (st->n == 0 || (st->kind == 2 && st->n < 2)) {
    snprintf(err, err_len,
             "device statistic: %llu frame(s) folded, too few to finish",
             (unsigned long long)st->n);
    return QS_EINVAL;
  }
  cl_int cn = (cl_int)st->n;
  int rc = cl_status(clSetKernelArg(st->finish, 2, sizeof cn, &cn),
                     "setting the finish's arguments", err, err_len);
  if (!rc)
    rc = stat_launch(st, q, st->finish, "esrrf_stat_finish", NULL, NULL, err,
                     err_len);
  cl_event ev = NULL;
  size_t bytes = st->plane * sizeof(float);
  if (!rc)
    rc = cl_status(
        clEnqueueReadBuffer(q, st->res, CL_TRUE, 0, bytes, out, 0, NULL, &ev),
        "reading the timepoint image", err, err_len);
  if (!rc) cldev_transfer(st->dev, 0, bytes);
  if (ev) {
    st->dev_s += cl_event_seconds(ev);
    clReleaseEvent(ev);
  }
  st->n = 0;
  return rc;
}
#endif
