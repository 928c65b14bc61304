/* test_timer.c — monotonic clock and summary statistics. */
#include <criterion/criterion.h>
#include <math.h>

#include "qs_test.h"
#include "timer.h"
#include "quicksilver.h"

TestSuite(timer, .fini = qs_leak_check);

Test(timer, monotonic) {
  int64_t a = qs_timer_ns(), b = qs_timer_ns();
  cr_assert_geq(b, a);
  cr_assert_gt(a, 0);
}

Test(timer, stats_known_values) {
  double x[] = {5, 1, 4, 2, 3, 10};
  qs_stats s;
  cr_assert_eq(qs_stats_of(x, 6, &s), QS_OK);
  cr_assert_eq(s.n, 6);
  cr_assert_float_eq(s.min, 1, 0);
  cr_assert_float_eq(s.max, 10, 0);
  cr_assert_float_eq(s.median, 3.5, 1e-12);
  cr_assert_float_eq(s.mean, 25.0 / 6, 1e-12);
  /* fast half {1,2,3}: mean 2, population std sqrt(2/3) */
  cr_assert_float_eq(s.fast_mean, 2, 1e-12);
  cr_assert_float_eq(s.fast_std, sqrt(2.0 / 3), 1e-12);
  /* slow half {4,5,10}: mean 19/3 */
  cr_assert_float_eq(s.slow_mean, 19.0 / 3, 1e-12);
  cr_assert_float_eq(x[0], 5, 0); /* input untouched */
}

Test(timer, stats_odd_and_single) {
  double x[] = {3, 1, 2};
  qs_stats s;
  cr_assert_eq(qs_stats_of(x, 3, &s), QS_OK);
  cr_assert_float_eq(s.median, 2, 0);
  cr_assert_float_eq(s.fast_mean, 1, 0); /* fast half: 3/2 = 1 value */
  cr_assert_float_eq(s.slow_mean, 2.5, 0);
  double y = 7;
  cr_assert_eq(qs_stats_of(&y, 1, &s), QS_OK);
  cr_assert_float_eq(s.fast_mean, 7, 0);
  cr_assert_float_eq(s.fast_std, 0, 0);
  cr_assert_float_eq(s.median, 7, 0);
}

Test(timer, stats_large_and_empty) {
  enum { N = 1001 };
  static double x[N];
  for (int i = 0; i < N; i++) x[i] = (double)((i * 7919) % N);
  qs_stats s;
  cr_assert_eq(qs_stats_of(x, N, &s), QS_OK);
  cr_assert_float_eq(s.median, 500, 0);
  cr_assert_float_eq(s.fast_mean, 249.5, 1e-9); /* 0..499 */
  cr_assert_eq(qs_stats_of(x, 0, &s), QS_EINVAL);
}
