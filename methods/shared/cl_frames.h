/* cl_frames.h — runs a per-frame OpenCL kernel over whole stacks: the
 * frames of every input and output stream through device buffers in
 * batches sized up front from the device's memory (cl_budget_frames), with
 * device time and one-time costs reported into the method_call. Shared by
 * the methods whose OpenCL implementation is one kernel over (cols, rows,
 * frames).
 *
 * Kernel contract: arguments are the input buffers (in c->in order), the
 * output buffers (in c->out order), an int with the frames in this batch,
 * then whatever job->args sets. The global size is (out[0].cols,
 * out[0].rows, batch) with the local size left to the driver; the batch
 * size is the same for every batch of a call (so the device compiles one
 * work-group function), and work-items with a frame index past the int
 * argument must return at once. */
#ifndef QS_METHODS_CL_FRAMES_H
#define QS_METHODS_CL_FRAMES_H

#include "qs_config.h"
#include "quicksilver_method.h"

#if QS_HAVE_OPENCL
#include "cl/clrt.h"

typedef struct cl_frames_job {
  const char *file;    /* embedded kernel source ("shift_magnify.cl") */
  const char *kernel;  /* kernel function name */
  const char *options; /* build options; NULL for none */
  /* Sets the kernel's own arguments from index `first` on; NULL if none.
   * Returns a status with a message in c->err. */
  int (*args)(cl_kernel k, cl_uint first, const qs_method_call *c);
} cl_frames_job;

/* Runs job on c->device over all frames of c->in into c->out (shaped and
 * allocated by the caller). Adds device seconds (transfers and kernels) to
 * *c->device_seconds and program build plus first-launch compilation to
 * *c->once_seconds (either pointer may be NULL). Errors map through
 * cl_status: QS_EDEVMEM, QS_EBUILD, QS_ECL. */
int cl_frames_run(const qs_method_call *c, const cl_frames_job *job);

/* cl_frames_run with batches of at most max_frames frames (0: as many
 * as the device's memory and the batch cap allow). Lets tests stream a
 * small stack in several batches. */
int cl_frames_stream(const qs_method_call *c, const cl_frames_job *job,
                     size_t max_frames);

/* Probe: QS_EUNAVAIL with a reason when there is no device or when one
 * frame of every buffer cannot fit it. */
int cl_frames_probe(const qs_method_call *c, char *why, size_t why_len);
#endif

#endif
