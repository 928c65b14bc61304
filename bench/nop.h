/* nop.h — a method whose implementations do nothing, registered by the
 * benchmarks that time the engine's own costs (dispatch, store) through
 * the public API. Header-only: each bench is one program. */
#ifndef QS_BENCH_NOP_H
#define QS_BENCH_NOP_H

#include <stdlib.h>

#include "quicksilver_method.h"

static int nop(const qs_method_call *c) {
  (void)c;
  return QS_OK;
}

static const qs_param_def nop_params[] = {
    {"radius", QS_PARAM_FLOAT, 1.5, 0, 10, QS_PARAM_MIN_OPEN, NULL, "unused"},
    {"magnification", QS_PARAM_INT, 5, 1, 64, 0, NULL, "unused"},
};
static const qs_impl_def nop_impls[] = {
    {"serial", QS_IMPL_SERIAL, nop, NULL, 1, QS_SCHED_STATIC, 0, NULL, NULL},
    {"threaded", QS_IMPL_THREADED, nop, NULL, 1, QS_SCHED_STATIC, 0, NULL,
     NULL},
    {"threaded_dynamic", QS_IMPL_THREADED, nop, NULL, 1, QS_SCHED_DYNAMIC, 0,
     NULL, NULL},
};
static const qs_slot_def nop_in[] = {{"image", "input"}};
static const qs_slot_def nop_out[] = {{"out", "output"}};
static const qs_method_desc nop_desc = {
    .name = "nop",
    .doc = "does nothing, to time the dispatcher",
    .inputs = nop_in,
    .n_inputs = 1,
    .outputs = nop_out,
    .n_outputs = 1,
    .params = nop_params,
    .n_params = 2,
    .impls = nop_impls,
    .n_impls = 3,
};

/* qsort's order of doubles. */
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

#endif
