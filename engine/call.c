/* call.c — the context the engine hands an implementation (method_call):
 * the pool's parallel_for with the implementation's schedule (serial ones
 * on the calling thread alone), the device, the composite step (the
 * dispatcher's entry, set by qs_engine_open). */
#include <stdio.h>
#include <string.h>

#include "internal.h"

static int pool_run(const qs_method_call *c, size_t begin, size_t end,
                    qs_range_fn body, void *ctx) {
  const qs_engine *e = c->engine_;
  return pool_for(e->pool, begin, end, c->sched, c->chunk, body, ctx);
}

/* A serial implementation's loops run on the calling thread alone: serial
 * is the one-thread reference the threaded schedules are measured against. */
static int serial_run(const qs_method_call *c, size_t begin, size_t end,
                      qs_range_fn body, void *ctx) {
  (void)c;
  return end > begin ? body(ctx, begin, end, 0) : QS_OK;
}

/* Either, in pieces checked for cancellation when the call has a progress
 * hook (progress.c). */
static int call_parallel_for(const qs_method_call *c, size_t begin, size_t end,
                             qs_range_fn body, void *ctx) {
  return prog_for(c, begin, end, body, ctx, pool_run);
}

static int call_serial_for(const qs_method_call *c, size_t begin, size_t end,
                           qs_range_fn body, void *ctx) {
  return prog_for(c, begin, end, body, ctx, serial_run);
}

/* Composite steps re-enter the dispatcher; their outputs belong to the
 * composite (qs_image_free). */
void call_init(qs_engine *e, const rimpl *r, qs_method_call *c,
               const qs_image *in, size_t n_in, qs_image *out, size_t n_out,
               const double *p, char *err, size_t err_len) {
  *c = (qs_method_call){
      .in = in,
      .n_in = n_in,
      .out = out,
      .n_out = n_out,
      .p = p,
      .threads = r->def->kind == QS_IMPL_SERIAL ? 1 : e->threads,
      .sched = r->def->sched,
      .chunk = r->def->chunk,
      .parallel_for =
          r->def->kind == QS_IMPL_SERIAL ? call_serial_for : call_parallel_for,
      .device = r->device,
      .step = e->step,
      .advance = prog_advance,
      .err = err,
      .err_len = err_len,
      .kept = plan_kept,
      .keep = plan_keep,
      .engine_ = e,
      .plan_ = e->in_run && !e->in_step ? e->plan : NULL};
  c->arg = plan_arg_of(c);
}
