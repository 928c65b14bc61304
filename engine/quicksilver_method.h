/*
 * quicksilver_method.h — the interface for method authors.
 *
 * A method is a descriptor (method_desc, in quicksilver.h, where host
 * programs read it too, with the limits QS_MAX_PARAMS, QS_MAX_INPUTS,
 * QS_MAX_OUTPUTS and QS_MAX_IMPLS it must keep) whose implementation table
 * is made of the impl_def entries declared here. The engine calls an
 * implementation with a method_call: the inputs, the outputs it allocated,
 * the parameter values, its thread pool and, for OpenCL, the device. A
 * host program registers its own methods with qs_method_register.
 *
 * Programs that only run methods include quicksilver.h alone; this header
 * includes it. Compiles as C11 and as C++ (tests/header_cxx.cpp).
 */
#ifndef QUICKSILVER_METHOD_H
#define QUICKSILVER_METHOD_H

#include "quicksilver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a threaded implementation's range is split over the pool (as
 * OpenMP's schedules). */
typedef enum qs_schedule {
  QS_SCHED_STATIC,  /* chunk 0: one contiguous block per thread;
                    chunk > 0: chunks dealt round robin */
  QS_SCHED_DYNAMIC, /* chunks taken from a shared counter */
  QS_SCHED_GUIDED,  /* remaining / (2 * threads), never below chunk */
} qs_schedule;

typedef struct qs_method_call qs_method_call;

/* A body for method_call.parallel_for: handles [begin, end); `worker` is in
 * [0, threads), the thread running it (for its scratch): one worker may run
 * several ranges one after another, and one may run none (a static
 * schedule's part of a worker that arrived late is run by the caller, as
 * worker 0). A nonzero return stops further chunks and is returned. */
typedef int (*qs_range_fn)(void *ctx, size_t begin, size_t end, int worker);

/* What the engine hands an implementation. Outputs are allocated, zeroed and
 * shaped by the engine before the call (device outputs of a device_images
 * implementation are not zeroed: it writes every pixel). An implementation
 * writes a message into err on failure and returns a status. */
struct qs_method_call {
  const qs_image *in;
  size_t n_in;
  qs_image *out;
  size_t n_out;
  const double *p;   /* parameter values in table order (bool 0/1, enum
                        index) */
  int threads;       /* threads of the engine's pool */
  qs_schedule sched; /* the implementation's schedule */
  size_t chunk;      /* the implementation's chunk (0: schedule default) */
  /* Runs body over [begin, end) on the pool with this call's schedule. */
  int (*parallel_for)(const qs_method_call *c, size_t begin, size_t end,
                      qs_range_fn body, void *ctx);
  void *device; /* QS_IMPL_OPENCL: the device (cl/ runtime), else NULL */
  /* Runs another method through the dispatcher (composite
   * implementations): impl NULL lets the agent choose. out[0..n_out)
   * receive engine-allocated images the composite releases (qs_image_free);
   * on failure the message is in err. */
  int (*step)(const qs_method_call *c, const char *method, const char *impl,
              const qs_image *in, size_t n_in, const qs_param *p, size_t n_p,
              qs_image *out, size_t n_out);
  /* Written by OpenCL implementations: seconds spent on the device and in
   * one-time costs (program build, first launch of a new size). */
  double *device_seconds;
  double *once_seconds;
  /* Written (> 0) by an implementation whose call does not do its own
   * inputs' work between its start and its return: the live stream's
   * OpenCL pushes, one of which may only stage its frames for a later
   * push and another wait for all the frames before it. The seconds its
   * inputs' work takes (for the stream: its frames at the device seconds
   * per frame measured so far), which the engine records and learns
   * instead of the wall time. Left as it is (not > 0): the wall time. */
  double *work_seconds;
  /* Progress and cancellation (run_request.progress): an implementation
   * reports `n` more units of work done out of `total` (frames, or its
   * own unit, counted the same way by every thread) after each piece of
   * work of a few milliseconds: a frame, a block of rows, a device batch.
   * Safe from any pool thread. A nonzero return means the caller
   * cancelled: stop and return QS_ECANCELLED. When the call has no
   * progress hook it returns 0 at once. The engine also checks between
   * the pieces it hands a parallel_for body, so a body that cannot report
   * is still stopped within a piece. */
  int (*advance)(const qs_method_call *c, uint64_t n, uint64_t total);
  /* Plans (qs_method_open). `state` is what this implementation's open
   * returned for the plan (NULL in one-shot calls, calibration slices,
   * composite steps, or without an open: the run then plans for itself).
   * keep/kept hold further state across the plan's runs under a tag (a
   * string that lives as long as the plan, e.g. a literal), released by
   * `release` at qs_plan_close; keep replaces (and releases) a state kept
   * under the same tag. Outside a plan's own run kept returns NULL and
   * keep releases the state and returns QS_EUNAVAIL. `arg` is the plan
   * run's method-specific argument (eSRRF's live stream: its fold,
   * methods/esrrf/sink.h), else NULL. */
  void *state;
  void *(*kept)(const qs_method_call *c, const char *tag);
  int (*keep)(const qs_method_call *c, const char *tag, void *state,
              void (*release)(void *state));
  void *arg;
  char *err;
  size_t err_len;
  void *engine_; /* private */
  void *plan_;   /* private: the plan whose own run this is, else NULL */
};

/* c->advance when the caller set one (a harness that builds its own
 * method_call may leave it NULL), else 0: what implementations call. */
static inline int method_advance(const qs_method_call *c, uint64_t n,
                                 uint64_t total) {
  return c->advance ? c->advance(c, n, total) : 0;
}

typedef int (*qs_impl_fn)(const qs_method_call *c);

/* One implementation of a method. For QS_IMPL_OPENCL the engine registers one
 * implementation per OpenCL device, named "<name>:<device slug>" (without
 * devices: one unavailable implementation "<name>"). Names are short
 * (under 32 characters) and unique within the method. Order in the table:
 * within a kind, from the reference to the most refined variant; when the
 * calibration budget cannot time every cold implementation, the ones
 * declared last are timed first. */
typedef struct qs_impl_def {
  const char *name;
  qs_impl_kind kind;
  qs_impl_fn run;
  /* Availability on this machine for this call; NULL: always. A nonzero
   * return makes the implementation unavailable, with `why`. Listing calls
   * it with no inputs (n_in == 0) and the default parameters. */
  int (*probe)(const qs_method_call *c, char *why, size_t why_len);
  int version;   /* bump when the numbers or the speed change (built-in
                    methods also record a hash of their code, so a
                    forgotten bump cannot revive stale timings) */
  qs_schedule sched;
  size_t chunk;
  /* Optional, for plans: open plans the work for the call's shapes (its
   * inputs have no data) and returns the state every run of the plan with
   * this implementation receives in method_call.state; close releases it.
   * An implementation with an open still runs without one (state NULL). */
  int (*open)(const qs_method_call *c, void **state);
  void (*close)(void *state);
  /* QS_IMPL_OPENCL: nonzero when it runs on device images of its device as
   * they are (quicksilver_image.h): an input or output of c that is one
   * has data NULL and its buffer in qs_image_cl_buffer(img, c->device),
   * and it writes every pixel of such an output (the engine does not zero
   * a fresh one: that would be a second full write on the device).
   * 0: the engine hands it host memory, moving device images itself. */
  int device_images;
} qs_impl_def;

/* The OpenCL buffer (a cl_mem) of a device image on `device` (an OpenCL
 * implementation's c->device), else NULL: a host image, or one of another
 * device (which the engine never hands an implementation). */
QS_API void *qs_image_cl_buffer(const qs_image *img, const void *device);

/* Registers a host program's method on this engine, after checking the
 * descriptor against the limits above (QS_EINVAL naming the method and the
 * limit). The descriptor and everything it points to must outlive the
 * engine. QS_EEXISTS if the name is taken. */
QS_API int qs_method_register(qs_engine *e, const qs_method_desc *desc);

#ifdef __cplusplus
}
#endif

#endif /* QUICKSILVER_METHOD_H */
