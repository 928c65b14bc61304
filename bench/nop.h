/* nop.h — a method whose implementations do nothing, registered by the
 * benchmarks that time the engine's own costs (dispatch, store) through
 * the public API. Header-only: each bench is one program. */
#ifndef QS_BENCH_NOP_H
#define QS_BENCH_NOP_H

#include <stdlib.h>

#include "quicksilver_method.h"

static int nop(const method_call *c) {
  (void)c;
  return QS_OK;
}

static const param_def nop_params[] = {
    {"radius", PARAM_FLOAT, 1.5, 0, 10, PARAM_MIN_OPEN, NULL, "unused"},
    {"magnification", PARAM_INT, 5, 1, 64, 0, NULL, "unused"},
};
static const impl_def nop_impls[] = {
    {"serial", IMPL_SERIAL, nop, NULL, 1, SCHED_STATIC, 0, NULL, NULL},
    {"threaded", IMPL_THREADED, nop, NULL, 1, SCHED_STATIC, 0, NULL, NULL},
    {"threaded_dynamic", IMPL_THREADED, nop, NULL, 1, SCHED_DYNAMIC, 0, NULL,
     NULL},
};
static const slot_def nop_in[] = {{"image", "input"}};
static const slot_def nop_out[] = {{"out", "output"}};
static const method_desc nop_desc = {
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
