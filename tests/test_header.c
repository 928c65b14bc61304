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
  qs_image img = qs_image_wrap(NULL, 0, 0, 0);
  cr_assert_null(img.owner_);
  cr_assert_str_eq(QS_VERSION, "0.1.0");
}

#ifdef QS_WITH_CXX
Test(header, cxx) { cr_assert_eq(qs_header_cxx_probe(), QS_STATUS_COUNT); }
#endif
