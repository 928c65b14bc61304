/* cl_frames.c — see cl_frames.h. One call: program (cached by the
 * runtime), kernel, one set of batch buffers, then per batch: upload the
 * inputs, launch, read the outputs back. Inputs and outputs that are
 * device images of the call's device (qs_image_cl_buffer) move nothing: when
 * every buffer is one the kernel runs once on them; otherwise their batches
 * are copied within the device. */
#include "methods/shared/cl_frames.h"

#if QS_HAVE_OPENCL
#include <stdio.h>
#include <string.h>

#include "engine/timer.h"

/* Most buffers of one job (inputs plus outputs). */
#define CLF_MAX_BUFFERS 8
/* A batch holds at most this many bytes in all its buffers (unless one
 * frame needs more): it bounds the host-side copy a CPU device makes and
 * lets large stacks stream. */
#define CLF_BATCH_BYTES ((size_t)256 << 20)

static size_t frame_bytes(const qs_image *m) { return m->rows * m->cols * 4; }

/* Bytes per frame of every buffer, inputs first; returns how many. */
static size_t frame_sizes(const qs_method_call *c, size_t *per_frame) {
  size_t n = 0;
  for (size_t k = 0; k < c->n_in; k++) per_frame[n++] = frame_bytes(&c->in[k]);
  for (size_t k = 0; k < c->n_out; k++)
    per_frame[n++] = frame_bytes(&c->out[k]);
  return n;
}

/* Frames per batch: what the device holds, at most CLF_BATCH_BYTES. */
static int batch_frames(const qs_method_call *c, size_t max_frames,
                        size_t *batch, char *err, size_t err_len) {
  size_t per_frame[CLF_MAX_BUFFERS], sum = 0;
  if (c->n_in + c->n_out > CLF_MAX_BUFFERS) {
    snprintf(err, err_len, "cl_frames: more than %d buffers",
             CLF_MAX_BUFFERS);
    return QS_EINVAL;
  }
  size_t n = frame_sizes(c, per_frame);
  for (size_t k = 0; k < n; k++) sum += per_frame[k];
  size_t wanted = c->in[0].frames;
  if (max_frames && max_frames < wanted) wanted = max_frames;
  if (sum && CLF_BATCH_BYTES / sum < wanted)
    wanted = CLF_BATCH_BYTES / sum ? CLF_BATCH_BYTES / sum : 1;
  return cl_budget_frames(cldev_about(c->device), per_frame, NULL, n, wanted,
                          batch, err, err_len);
}

int cl_frames_probe(const qs_method_call *c, char *why, size_t why_len) {
  size_t batch;
  if (!c || !c->device) {
    snprintf(why, why_len, "no OpenCL device given");
    return QS_EUNAVAIL;
  }
  if (!c->n_in || !c->n_out || !c->out) return QS_OK; /* shapes unknown */
  return batch_frames(c, 0, &batch, why, why_len) ? QS_EUNAVAIL : QS_OK;
}

/* Adds the profiled seconds of the events and releases them. */
static double events_take(cl_event *ev, size_t n) {
  double s = 0;
  for (size_t k = 0; k < n; k++)
    if (ev[k]) {
      s += cl_event_seconds(ev[k]);
      clReleaseEvent(ev[k]);
      ev[k] = NULL;
    }
  return s;
}

/* Host memory of buffer k (inputs first) at frame f0. */
static float *frames_at(const qs_method_call *c, size_t k, size_t f0) {
  const qs_image *m = k < c->n_in ? &c->in[k] : &c->out[k - c->n_in];
  return m->data + f0 * m->rows * m->cols;
}

/* The buffers of one batch, bound to the kernel. A device that computes in
 * host memory (a CPU device) gets buffers over the caller's frames
 * themselves (CL_MEM_USE_HOST_PTR: no copies, no fresh device pages per
 * call); any other gets device buffers of `batch` frames once, which the
 * caller fills and empties per batch. */
static int batch_bind(const qs_method_call *c, cl_kernel kern, int zero_copy,
                      size_t f0, size_t n, const size_t *per_frame,
                      cl_mem *const res, int direct, cl_mem *buf) {
  size_t nb = c->n_in + c->n_out;
  int rc = QS_OK;
  for (size_t k = 0; !rc && k < nb; k++) {
    int host_ptr = zero_copy && !res[k];
    if (buf[k] && !host_ptr) continue;
    if (buf[k]) clReleaseMemObject(buf[k]);
    buf[k] = NULL;
    if (res[k] && direct) { /* the device image itself */
      buf[k] = res[k];
      rc = cl_status(clSetKernelArg(kern, (cl_uint)k, sizeof buf[k], &buf[k]),
                     "setting a buffer argument", c->err, c->err_len);
      continue;
    }
    cl_mem_flags fl = k < c->n_in ? CL_MEM_READ_ONLY : CL_MEM_WRITE_ONLY;
    if (host_ptr) fl |= CL_MEM_USE_HOST_PTR;
    rc = cldev_buffer(c->device, fl, n * per_frame[k],
                      host_ptr ? frames_at(c, k, f0) : NULL,
                      k < c->n_in ? "input frames" : "output frames", &buf[k],
                      c->err, c->err_len);
    if (!rc)
      rc = cl_status(clSetKernelArg(kern, (cl_uint)k, sizeof buf[k], &buf[k]),
                     "setting a buffer argument", c->err, c->err_len);
  }
  return rc;
}

int cl_frames_stream(const qs_method_call *c, const cl_frames_job *job,
                     size_t max_frames) {
  cldev *d = c->device;
  char *err = c->err;
  size_t err_len = c->err_len;
  cl_context ctx;
  cl_command_queue q;
  cl_program prog;
  cl_kernel kern = NULL;
  cl_mem buf[CLF_MAX_BUFFERS] = {NULL};
  cl_event ev[CLF_MAX_BUFFERS + 1] = {NULL};
  size_t per_frame[CLF_MAX_BUFFERS], batch = 0;
  double build = 0, dev_s = 0, once = 0;
  cl_int e = CL_SUCCESS;
  size_t nb = c->n_in + c->n_out;

  int rc = d ? QS_OK : QS_EUNAVAIL;
  if (rc) snprintf(err, err_len, "%s: no OpenCL device given", job->kernel);
  if (!rc) rc = cldev_queue(d, &ctx, &q, err, err_len);
  /* the device images of this device among the buffers */
  cl_mem res[CLF_MAX_BUFFERS] = {NULL};
  size_t n_res = 0;
  for (size_t k = 0; k < nb && k < CLF_MAX_BUFFERS; k++) {
    res[k] =
        qs_image_cl_buffer(k < c->n_in ? &c->in[k] : &c->out[k - c->n_in], d);
    n_res += res[k] != NULL;
  }
  if (!rc && n_res == nb && !max_frames)
    batch = c->in[0].frames; /* all on the device already: one launch */
  else if (!rc)
    rc = batch_frames(c, max_frames, &batch, err, err_len);
  int direct = batch >= c->in[0].frames;
  if (!rc)
    rc = cldev_program(d, job->file, job->options, &prog, &build, err,
                       err_len);
  once += build;
  if (!rc) {
    kern = clCreateKernel(prog, job->kernel, &e);
    rc = cl_status(e, job->kernel, err, err_len);
  }
  if (!rc && job->args) rc = job->args(kern, (cl_uint)nb + 1, c);
  int zero_copy = !rc && !cldev_about(d)->is_gpu;
  frame_sizes(c, per_frame);

  size_t global[3] = {c->out[0].cols, c->out[0].rows, batch};
  size_t frames = c->in[0].frames;
  for (size_t f0 = 0; !rc && f0 < frames; f0 += batch) {
    cl_int nf = (cl_int)(frames - f0 < batch ? frames - f0 : batch);
    rc = batch_bind(c, kern, zero_copy, f0, (size_t)nf, per_frame, res,
                    direct, buf);
    for (size_t k = 0; !rc && k < c->n_in; k++) {
      if (res[k]) { /* a device image: its batch copied within the device */
        if (!direct)
          rc = cl_status(clEnqueueCopyBuffer(q, res[k], buf[k],
                                             f0 * per_frame[k], 0,
                                             (size_t)nf * per_frame[k], 0,
                                             NULL, &ev[k]),
                         "copying input frames", err, err_len);
        continue;
      }
      if (zero_copy) continue;
      rc = cl_status(clEnqueueWriteBuffer(q, buf[k], CL_FALSE, 0,
                                          (size_t)nf * per_frame[k],
                                          frames_at(c, k, f0), 0, NULL,
                                          &ev[k]),
                     "uploading input frames", err, err_len);
      if (!rc) cldev_transfer(d, (size_t)nf * per_frame[k], 0);
    }
    if (!rc)
      rc = cl_status(clSetKernelArg(kern, (cl_uint)nb, sizeof nf, &nf),
                     "setting the frame count", err, err_len);
    int first = !rc && cldev_first_launch(d, job->kernel, global, 3);
    int64_t t0 = qs_timer_ns();
    if (!rc)
      rc = cl_status(clEnqueueNDRangeKernel(q, kern, 3, NULL, global, NULL, 0,
                                            NULL, &ev[nb]),
                     job->kernel, err, err_len);
    if (!rc && first) {
      /* the device compiles a work-group function for a new size at this
       * launch: book the launch's wall time beyond its run as one-time */
      rc = cl_status(clFinish(q), job->kernel, err, err_len);
      double wall = (double)(qs_timer_ns() - t0) * 1e-9;
      double run = cl_event_seconds(ev[nb]);
      if (wall > run) once += wall - run;
    }
    for (size_t k = c->n_in; !rc && k < nb; k++) {
      size_t bytes = (size_t)nf * per_frame[k];
      if (res[k]) { /* a device image: written in place, or copied there */
        if (!direct)
          rc = cl_status(clEnqueueCopyBuffer(q, buf[k], res[k], 0,
                                             f0 * per_frame[k], bytes, 0,
                                             NULL, &ev[k]),
                         "copying output frames", err, err_len);
        continue;
      }
      cldev_transfer(d, 0, bytes);
      if (!zero_copy) {
        rc = cl_status(clEnqueueReadBuffer(q, buf[k], CL_TRUE, 0, bytes,
                                           frames_at(c, k, 0 + f0), 0, NULL,
                                           &ev[k]),
                       "reading output frames", err, err_len);
        continue;
      }
      /* mapping a host-pointer buffer makes the device's writes visible
       * in the caller's memory */
      void *at = clEnqueueMapBuffer(q, buf[k], CL_TRUE, CL_MAP_READ, 0, bytes,
                                    0, NULL, NULL, &e);
      rc = cl_status(e, "mapping output frames", err, err_len);
      if (!rc)
        rc = cl_status(clEnqueueUnmapMemObject(q, buf[k], at, 0, NULL, NULL),
                       "unmapping output frames", err, err_len);
    }
    if (!rc && (zero_copy || n_res))
      rc = cl_status(clFinish(q), job->kernel, err, err_len);
    if (rc) clFinish(q);
    dev_s += events_take(ev, nb + 1);
    if (!rc && method_advance(c, (uint64_t)nf, frames)) rc = QS_ECANCELLED;
  }
  /* every command finished (blocking reads, or clFinish) */
  for (size_t k = 0; k < nb; k++)
    if (!(direct && res[k])) cldev_release(d, buf[k]);
  if (kern) clReleaseKernel(kern);
  if (c->device_seconds) *c->device_seconds += dev_s;
  if (c->once_seconds) *c->once_seconds += once;
  return rc;
}
int cl_frames_run(const qs_method_call *c, const cl_frames_job *job) {
  return cl_frames_stream(c, job, 0);
}
#endif
