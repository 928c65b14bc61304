/* test_header.c — the host header compiles as C11 on its own (this file)
 * and both public headers as C++ (header_cxx.cpp, linked in when a C++
 * compiler is present). */
#include <criterion/criterion.h>

#include "qs_test.h"
#include "quicksilver.h"

/* The host header brings in nothing of the method-authoring one. */
#ifdef QUICKSILVER_METHOD_H
#error "quicksilver.h includes quicksilver_method.h"
#endif

TestSuite(header, .fini = qs_leak_check);

#ifdef QS_WITH_CXX
int qs_header_cxx_probe(void);
#endif

Test(header, c11) {
  image img = image_wrap(NULL, 0, 0, 0);
  cr_assert_null(img.owner_);
  cr_assert_str_eq(QS_VERSION, "0.1.0");
}

#ifdef QS_WITH_CXX
Test(header, cxx) { cr_assert_eq(qs_header_cxx_probe(), QS_STATUS_COUNT); }
#endif

/* The prefixed names (quicksilver_prefixed.h, generated): a whole call
 * written with qs_ names only, through the library. */
#include "quicksilver_prefixed.h"

Test(header, prefixed_names_reach_the_library) {
  qs_engine_options o = {.db_path = ":memory:", .no_opencl = 1};
  qs_engine *e = NULL;
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  qs_image in, out;
  cr_assert_eq(qs_image_alloc(&in, 1, 4, 6), QS_OK);
  for (size_t i = 0; i < 24; i++) in.data[i] = (float)i;
  qs_param p[] = {{"magnification_row", 2, NULL},
                  {"magnification_col", 3, NULL}};
  qs_run_request rq = {.inputs = &in, .n_inputs = 1, .params = p,
                       .n_params = 2, .impl = "serial"};
  qs_run_report rep;
  cr_assert_eq(qs_method_run(e, "shift_magnify", &rq, &out, 1, &rep), QS_OK,
               "%s", qs_engine_error(e));
  cr_assert_eq(out.rows, 8);
  cr_assert_eq(out.cols, 18);
  cr_assert_str_eq(rep.impl, "serial");
  cr_assert_str_eq(qs_impl_kind_name(QS_IMPL_OPENCL), "opencl");
  cr_assert_str_eq(qs_status_name(QS_EPARAM), "param");
  cr_assert_eq(QS_SCHED_GUIDED, SCHED_GUIDED);
  cr_assert_eq(QS_PARAM_MAX_OPEN, PARAM_MAX_OPEN);
  const qs_method_desc *d = qs_method_find(e, "shift_magnify");
  cr_assert_not_null(d);
  cr_assert_eq(d->n_params, 4);
  qs_image_free(&out);
  qs_image_free(&in);
  qs_engine_close(e);
}
