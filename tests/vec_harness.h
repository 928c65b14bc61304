/* vec_harness.h — what the tests of the vectorised implementations
 * (test_esrrf_vec.c, test_rgc_vec.c) share: an engine on an in-memory
 * store, the NanoPyx fixtures (fixtures.h), a bit-for-bit comparison,
 * the parameter grid, and a noisy input with gradients everywhere.
 * Header-only; include once per test, after criterion and
 * method_harness.h. */
#ifndef QS_VEC_HARNESS_H
#define QS_VEC_HARNESS_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "method_harness.h"

/* An engine on an in-memory store, no calibration, `threads` workers. */
static qs_engine *open_engine(int threads) {
  qs_engine_options o = {.db_path = ":memory:",
                         .no_calibration = 1,
                         .seed = 1,
                         .threads = threads};
  qs_engine *e = NULL;
  int rc = qs_engine_open(&e, &o);
  cr_assert_eq(rc, QS_OK, "qs_engine_open: %s",
               e ? qs_engine_error(e) : qs_status_message(rc));
  return e;
}

/* Whether the engine lists `impl` of `method` as available; why receives
 * the reason (fails the test if it is not listed at all). */
static int vec_listed(qs_engine *e, const char *method, const char *impl,
                      char *why, size_t len) {
  qs_impl_info info[QS_MAX_ESTIMATES];
  size_t n = 0;
  cr_assert_eq(qs_method_impls(e, method, info, QS_MAX_ESTIMATES, &n), QS_OK);
  for (size_t i = 0; i < n && i < QS_MAX_ESTIMATES; i++)
    if (!strcmp(info[i].name, impl)) {
      snprintf(why, len, "%s", info[i].why);
      return info[i].available;
    }
  cr_assert_fail("%s does not list %s", method, impl);
  return 0;
}

/* The listing contract of a method's vectorised pair: `avx2` available
 * exactly where the CPU reports AVX2 and FMA (else its probe says why and
 * names `portable`), `portable` everywhere. */
static void vec_expect_listing(const char *method, const char *avx2,
                               const char *portable) {
  qs_engine *e = open_engine(1);
  char why[256] = "";
  int has = 0;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  has = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif
  cr_expect_eq(vec_listed(e, method, avx2, why, sizeof why), has,
               "%s %s available %d, CPU has AVX2+FMA %d (%s)", method, avx2,
               !has, has, why);
  if (!has)
    cr_expect(strstr(why, "AVX2") && strstr(why, portable),
              "the probe says why and names %s: %s", portable, why);
  cr_expect(vec_listed(e, method, portable, why, sizeof why), "%s %s: %s",
            method, portable, why);
  qs_engine_close(e);
}

/* Whether this CPU reports what the AVX-512 variants use (AVX-512F, AVX2,
 * FMA; GCC's test includes the OS's support for the 512-bit state). */
static int vec_cpu_avx512(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx2") &&
         __builtin_cpu_supports("fma");
#else
  return 0;
#endif
}

/* The listing contract of a method's AVX-512 variant: available exactly
 * where the CPU reports AVX-512F (and the build has the code: a build
 * with QS_NO_AVX512 or an old compiler says so), else its probe says why
 * and names the best variant that remains (`avx2` or `portable`). */
static void vec_expect_avx512_listing(const char *method, const char *avx512,
                                      const char *avx2,
                                      const char *portable) {
  qs_engine *e = open_engine(1);
  char why[256] = "", why2[256] = "";
  int has = vec_cpu_avx512();
  int listed = vec_listed(e, method, avx512, why, sizeof why);
  int has2 = vec_listed(e, method, avx2, why2, sizeof why2);
  if (has && !listed)
    cr_expect(strstr(why, "this build has no AVX-512 code"),
              "%s %s not listed on a CPU with AVX-512F: %s", method, avx512,
              why);
  if (!has)
    cr_expect(!listed, "%s %s listed on a CPU without AVX-512F", method,
              avx512);
  if (!listed)
    cr_expect(strstr(why, "AVX-512") && strstr(why, has2 ? avx2 : portable),
              "the probe says why and names %s: %s", has2 ? avx2 : portable,
              why);
  qs_engine_close(e);
}

/* Skips the running test, visibly and saying why, where `method` does not
 * list `impl` on this machine (closing e first). */
static void vec_require(qs_engine *e, const char *method, const char *impl) {
  char why[256];
  if (vec_listed(e, method, impl, why, sizeof why)) return;
  qs_engine_close(e);
  cr_skip_test("%s %s not checked here: %s", method, impl, why);
}

/* Same shape and the same bits. */
static int same_bits(const qs_image *a, const qs_image *b) {
  return a->frames == b->frames && a->rows == b->rows && a->cols == b->cols &&
         !memcmp(a->data, b->data,
                 a->frames * a->rows * a->cols * sizeof(float));
}

/* The parameter grid both vectorised methods are checked on against
 * serial: magnifications (odd, even, 1, 8), radii (small, and the disk edge
 * cases of large ones), sensitivities, intensity weighting, widths that
 * leave partial lane groups and clamped taps, and one call (M 32, radius 8)
 * whose M²·window² is beyond the candidate lists, which takes the scalar
 * path. */
static const struct vec_case {
  int mag;
  double radius, sens;
  int iw;
  size_t rows, cols;
} VEC_GRID[] = {
    {5, 1.5, 1, 1, 24, 37}, {2, 1.5, 1, 1, 31, 20}, {8, 1.5, 1, 1, 17, 26},
    {1, 1.5, 1, 1, 40, 33}, {3, 1, 2, 0, 23, 29},   {5, 2.5, 0.5, 1, 25, 19},
    {4, 6, 1, 1, 30, 41},   {2, 0.4, 1, 1, 21, 28}, {7, 2, 3, 1, 16, 23},
    {32, 8, 1, 1, 18, 18},
};
#define N_VEC_GRID (sizeof VEC_GRID / sizeof *VEC_GRID)

/* Spots on a background with noise: an input with gradients everywhere. */
static qs_image noisy(size_t f, size_t r, size_t c, unsigned seed) {
  qs_image m;
  cr_assert_eq(qs_image_alloc(&m, f, r, c), QS_OK);
  harness_fill(&m, seed, 20.0f);
  for (size_t k = 0; k < f; k++)
    for (size_t y = 0; y < r; y++)
      for (size_t x = 0; x < c; x++) {
        double dy = (double)y - 0.4 * (double)r - (double)k;
        double dx = (double)x - 0.6 * (double)c;
        m.data[(k * r + y) * c + x] +=
            (float)(300 + 800 * exp(-(dx * dx + dy * dy) / 6.0));
      }
  return m;
}

#endif
