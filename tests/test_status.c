/* test_status.c — the status table: distinct names and messages. */
#include <criterion/criterion.h>
#include <string.h>

#include "qs_test.h"
#include "quicksilver.h"

TestSuite(status, .fini = qs_leak_check);

Test(status, ok_is_zero) {
  cr_assert_eq(QS_OK, 0);
  cr_assert_str_eq(qs_status_name(QS_OK), "ok");
}

Test(status, names_and_messages_distinct) {
  for (int a = 0; a < QS_STATUS_COUNT; a++) {
    cr_assert_gt(strlen(qs_status_name(a)), 0);
    cr_assert_gt(strlen(qs_status_message(a)), 0);
    cr_assert_str_neq(qs_status_name(a), "unknown");
    for (int b = a + 1; b < QS_STATUS_COUNT; b++) {
      cr_assert_str_neq(qs_status_name(a), qs_status_name(b),
                        "codes %d and %d", a, b);
      cr_assert_str_neq(qs_status_message(a), qs_status_message(b));
    }
  }
}

Test(status, out_of_range_is_unknown) {
  cr_assert_str_eq(qs_status_name(-1), "unknown");
  cr_assert_str_eq(qs_status_name(QS_STATUS_COUNT), "unknown");
  cr_assert_str_eq(qs_status_message(9999), "unknown status");
}
