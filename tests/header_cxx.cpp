// header_cxx.cpp — proves the public headers (quicksilver.h for host
// programs, quicksilver_method.h for method authors, and the eSRRF
// headers) compile and link as C++.
#include "quicksilver_esrrf.h"
#include "quicksilver_method.h"
#include "quicksilver_sweep.h"

static int cxx_impl(const qs_method_call *c) {
  return c->n_out ? QS_OK : QS_EINVAL;
}

extern "C" int qs_header_cxx_probe(void) {
  qs_image img = qs_image_wrap(nullptr, 1, 2, 3);
  qs_run_request rq = {};
  rq.inputs = &img;
  rq.n_inputs = 1;
  (void)rq;
  // An implementation table entry and a call, as a C++ method author writes
  // them: the one-output call succeeds, the zero-output one does not.
  static const qs_impl_def impls[] = {{"serial", QS_IMPL_SERIAL, cxx_impl,
                                       nullptr, 1, QS_SCHED_STATIC, 0, nullptr,
                                       nullptr}};
  qs_method_call c = {};
  if (impls[0].run(&c) != QS_EINVAL) return -1;
  c.n_out = 1;
  if (impls[0].run(&c) != QS_OK) return -1;
  int n = 0;
  for (int s = QS_OK; s < QS_STATUS_COUNT; s++) n += qs_status_name(s) ? 1 : 0;
  return n;
}
