/* plan.h — what the live eSRRF stream (methods/esrrf/stream.c) uses of a
 * plan beyond the public API: a run that hands the implementation a
 * method-specific argument (method_call.arg: eSRRF's fold, sink.h) with an
 * implementation named for it, and the stream's own loops between runs on
 * the engine's pool as the plan's last run ran them. Internal to the
 * library. */
#ifndef QS_PLAN_H
#define QS_PLAN_H

#include "quicksilver_method.h"

/* qs_plan_run with arg (made a stateful plan: its runs try no cold candidate
 * on themselves, engine_own_call) and impl (NULL: the plan's). */
int plan_run_arg(qs_plan *p, const qs_image *inputs, size_t n_inputs,
                 void *arg, const char *impl, qs_image *outputs,
                 size_t n_outputs, qs_run_report *report);

/* Runs body over [begin, end) as the plan's last run ran its loops: on the
 * pool with that implementation's schedule (the calling thread as worker
 * 0), after a serial one on the calling thread alone in one range (before
 * any run: the pool, static). Not inside a run. */
int plan_for(qs_plan *p, size_t begin, size_t end, qs_range_fn body,
             void *ctx);

/* The pages of img written once (zero over zero) by plan_for, as the
 * engine provides a call's fresh outputs: for an image the caller fills
 * later, off its timed path. */
void plan_touch(qs_plan *p, const qs_image *img);

#endif
