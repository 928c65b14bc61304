// header_cxx.cpp — proves quicksilver.h compiles and links as C++.
#include "quicksilver.h"

extern "C" int qs_header_cxx_probe(void) {
  image img = image_wrap(nullptr, 1, 2, 3);
  run_request rq = {};
  rq.inputs = &img;
  rq.n_inputs = 1;
  (void)rq;
  int n = 0;
  for (int s = QS_OK; s < QS_STATUS_COUNT; s++) n += status_name(s) ? 1 : 0;
  return n;
}
