/* method_harness.h — runs one implementation of a method descriptor
 * directly, without the dispatcher: the method_call is built here, with a
 * parallel_for over a pool of the test's own (inline for serial), outputs
 * shaped by the descriptor and allocated with qs_image_alloc, and for OpenCL a
 * device from a clrt the harness opens. Lets the method tests pin down
 * each implementation by itself. Header-only; include once per test. */
#ifndef QS_METHOD_HARNESS_H
#define QS_METHOD_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cl/clrt.h"
#include "engine/pool.h"
#include "quicksilver_method.h"

#define HARNESS_THREADS 2

typedef struct harness {
  pool *pool; /* NULL for inline (serial) */
} harness;

static inline int harness_for(const qs_method_call *c, size_t begin,
                              size_t end, qs_range_fn body, void *ctx) {
  const harness *h = c->engine_;
  if (!h->pool) /* serial: inline on the caller */
    return begin < end ? body(ctx, begin, end, 0) : QS_OK;
  return pool_for(h->pool, begin, end, c->sched, c->chunk, body, ctx);
}

static inline const qs_impl_def *harness_impl(const qs_method_desc *d,
                                              const char *name) {
  for (size_t i = 0; i < d->n_impls; i++)
    if (!strcmp(d->impls[i].name, name)) return &d->impls[i];
  return NULL;
}

/* Parameter values in table order: defaults, then `given` (n_given pairs
 * of name and value) over them. Unknown names give QS_EPARAM. */
static inline int harness_params(const qs_method_desc *d,
                                 const qs_param *given, size_t n_given,
                                 double *p) {
  for (size_t i = 0; i < d->n_params; i++) p[i] = d->params[i].def;
  for (size_t g = 0; g < n_given; g++) {
    size_t i = 0;
    while (i < d->n_params && strcmp(d->params[i].name, given[g].name)) i++;
    if (i == d->n_params) return QS_EPARAM;
    p[i] = given[g].value;
  }
  return QS_OK;
}

/* Runs implementation `impl` of d on `in` with parameters `given`; out
 * receives d->n_outputs images (freed by the caller with qs_image_free, empty
 * on failure). device: the cldev for QS_IMPL_OPENCL, else NULL. The message of
 * a failure goes into err. */
static inline int harness_run(const qs_method_desc *d, const char *impl,
                              const qs_image *in, const qs_param *given,
                              size_t n_given, qs_image *out, void *device,
                              char *err, size_t err_len) {
  double p[64];
  const qs_impl_def *def = harness_impl(d, impl);
  for (size_t k = 0; k < d->n_outputs; k++) memset(&out[k], 0, sizeof *out);
  if (!def) {
    snprintf(err, err_len, "no implementation %s", impl);
    return QS_ENOIMPL;
  }
  if (harness_params(d, given, n_given, p)) {
    snprintf(err, err_len, "unknown parameter");
    return QS_EPARAM;
  }
  qs_image shaped[8] = {{0}};
  int rc = d->shape(in, p, shaped, err, err_len);
  for (size_t k = 0; !rc && k < d->n_outputs; k++)
    rc = qs_image_alloc(&out[k], shaped[k].frames, shaped[k].rows,
                        shaped[k].cols);
  harness h = {NULL};
  double dev_s = 0, once_s = 0;
  qs_method_call c = {.in = in,
                      .n_in = d->n_inputs,
                      .out = out,
                      .n_out = d->n_outputs,
                      .p = p,
                      .threads =
                          def->kind == QS_IMPL_THREADED ? HARNESS_THREADS : 1,
                      .sched = def->sched,
                      .chunk = def->chunk,
                      .parallel_for = harness_for,
                      .device = device,
                      .device_seconds = &dev_s,
                      .once_seconds = &once_s,
                      .err = err,
                      .err_len = err_len,
                      .engine_ = &h};
  if (!rc && def->kind == QS_IMPL_THREADED)
    rc = pool_create(&h.pool, HARNESS_THREADS);
  if (!rc && def->probe) rc = def->probe(&c, err, err_len);
  if (!rc) rc = def->run(&c);
  if (h.pool) pool_destroy(h.pool);
  if (rc)
    for (size_t k = 0; k < d->n_outputs; k++)
      qs_image_free(&out[k]);
  return rc;
}

/* Fills img with a deterministic pseudo-random pattern in [-1, 1) scaled by
 * `scale`, seeded by `seed`. */
static inline void harness_fill(qs_image *img, unsigned seed, float scale) {
  size_t n = img->frames * img->rows * img->cols;
  unsigned s = seed * 2654435761u + 1u;
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    img->data[i] = scale * ((float)(s >> 8) / 8388608.0f - 1.0f);
  }
}

/* Max |a - b| and max |b| over all pixels of two same-shaped images. */
static inline void harness_diff(const qs_image *a, const qs_image *b,
                                double *diff, double *peak) {
  size_t n = a->frames * a->rows * a->cols;
  *diff = 0;
  *peak = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a->data[i] - (double)b->data[i]);
    if (!(d <= *diff)) *diff = d;
    if (fabs((double)b->data[i]) > *peak) *peak = fabs((double)b->data[i]);
  }
}

/* Through the dispatcher: runs every implementation the engine lists for
 * method d on this machine, forced by name, on `in` with parameters p, and
 * compares each output with the harness's serial one: bit for bit for CPU
 * implementations, within d->tolerance of max |serial| for OpenCL ones.
 * Returns how many implementations ran; failures go into msg (first one)
 * and make the return negative. Unavailable ones are reported on stderr. */
static inline int harness_engine_agree(const qs_method_desc *d,
                                       const qs_image *in, const qs_param *p,
                                       size_t n_p, char *msg, size_t msg_len) {
  qs_engine *e;
  qs_engine_options opt = {.db_path = ":memory:", .threads = HARNESS_THREADS};
  qs_image ref[8], out[8];
  qs_impl_info info[QS_MAX_ESTIMATES];
  size_t n = 0;
  int ran = 0, bad = 0;
  if (qs_engine_open(&e, &opt)) {
    snprintf(msg, msg_len, "qs_engine_open: %.256s",
             e ? qs_engine_error(e) : "");
    qs_engine_close(e);
    return -1;
  }
  int rc = harness_run(d, "serial", in, p, n_p, ref, NULL, msg, msg_len);
  if (!rc) rc = qs_method_impls(e, d->name, info, QS_MAX_ESTIMATES, &n);
  for (size_t i = 0; !rc && i < n && i < QS_MAX_ESTIMATES; i++) {
    if (!info[i].available) {
      fprintf(stderr, "%s %s unavailable: %s\n", d->name, info[i].name,
              info[i].why);
      continue;
    }
    qs_run_request rq = {.inputs = in,
                         .n_inputs = d->n_inputs,
                         .params = p,
                         .n_params = n_p,
                         .impl = info[i].name};
    qs_run_report rep;
    if (qs_method_run(e, d->name, &rq, out, d->n_outputs, &rep)) {
      if (!bad++)
        snprintf(msg, msg_len, "%.64s: %.256s", info[i].name,
                 qs_engine_error(e));
      continue;
    }
    ran++;
    for (size_t k = 0; k < d->n_outputs; k++) {
      double diff, peak;
      size_t bytes = ref[k].frames * ref[k].rows * ref[k].cols * 4;
      int same_shape = out[k].frames == ref[k].frames &&
                       out[k].rows == ref[k].rows && out[k].cols == ref[k].cols;
      if (same_shape) harness_diff(&out[k], &ref[k], &diff, &peak);
      int ok = same_shape && strcmp(rep.impl, info[i].name) == 0 &&
               (info[i].kind == QS_IMPL_OPENCL
                    ? diff <= d->tolerance * peak
                    : memcmp(out[k].data, ref[k].data, bytes) == 0);
      if (!ok && !bad++)
        snprintf(msg, msg_len,
                 "%.64s (report: %.64s) output %.64s disagrees with serial",
                 info[i].name, rep.impl, d->outputs[k].name);
      qs_image_free(&out[k]);
    }
  }
  if (!rc)
    for (size_t k = 0; k < d->n_outputs; k++)
      qs_image_free(&ref[k]);
  qs_engine_close(e);
  fprintf(stderr, "%s: %d implementations agree through the engine\n",
          d->name, ran);
  return rc || bad ? -1 : ran;
}

/* Opens a runtime for OpenCL tests (no disk cache); *rt is NULL and
 * `why` says why when there is no device (the test then skips). */
static inline void harness_cl_open(clrt **rt, char *why, size_t why_len) {
  char err[256] = "";
  *rt = NULL;
  if (clrt_open(rt, 0, NULL, err, sizeof err)) {
    snprintf(why, why_len, "clrt_open failed: %s", err);
    return;
  }
  if (clrt_count(*rt) == 0) {
    snprintf(why, why_len, "no OpenCL device: %s", clrt_why(*rt));
    clrt_close(*rt);
    *rt = NULL;
  }
}

#endif
