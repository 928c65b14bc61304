/* vec_harness.h — what the tests of the vectorised implementations
 * (test_esrrf_vec.c, test_rgc_vec.c) share: an engine on an in-memory
 * store, the NanoPyx fixtures of tests/data/reference (JSON and raw f32),
 * and a noisy input with gradients everywhere. Header-only; include once
 * per test, after criterion and method_harness.h. */
#ifndef QS_VEC_HARNESS_H
#define QS_VEC_HARNESS_H

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "method_harness.h"

#define REF_DIR QS_SOURCE_ROOT "/tests/data/reference/"

/* An engine on an in-memory store, no calibration, `threads` workers. */
static engine *open_engine(int threads) {
  engine_options o = {.db_path = ":memory:", .no_calibration = 1, .seed = 1,
                      .threads = threads};
  engine *e = NULL;
  int rc = engine_open(&e, &o);
  cr_assert_eq(rc, QS_OK, "engine_open: %s",
               e ? engine_error(e) : status_message(rc));
  return e;
}

/* Whether the engine lists `impl` of `method` as available; why receives
 * the reason (fails the test if it is not listed at all). */
static int vec_listed(engine *e, const char *method, const char *impl,
                      char *why, size_t len) {
  impl_info info[QS_MAX_ESTIMATES];
  size_t n = 0;
  cr_assert_eq(method_impls(e, method, info, QS_MAX_ESTIMATES, &n), QS_OK);
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
  engine *e = open_engine(1);
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
  engine_close(e);
}

/* The parsed JSON file at path (fails the test if it cannot). */
static cJSON *json_file(const char *path) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = calloc((size_t)n + 1, 1);
  cr_assert_not_null(text);
  cr_assert_eq(fread(text, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  cJSON *j = cJSON_Parse(text);
  free(text);
  cr_assert_not_null(j, "%s is not JSON", path);
  return j;
}

/* The image of a fixture entry {file, shape} (raw little-endian f32). */
static void f32_load(const cJSON *entry, image *img) {
  const cJSON *shape = cJSON_GetObjectItem(entry, "shape");
  size_t d[3];
  for (int k = 0; k < 3; k++)
    d[k] = (size_t)cJSON_GetArrayItem(shape, k)->valuedouble;
  cr_assert_eq(image_alloc(img, d[0], d[1], d[2]), QS_OK);
  char path[1024];
  snprintf(path, sizeof path, REF_DIR "%s",
           cJSON_GetObjectItem(entry, "file")->valuestring);
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  size_t n = d[0] * d[1] * d[2];
  cr_assert_eq(fread(img->data, sizeof(float), n, f), n, "short %s", path);
  fclose(f);
}

/* Spots on a background with noise: an input with gradients everywhere. */
static image noisy(size_t f, size_t r, size_t c, unsigned seed) {
  image m;
  cr_assert_eq(image_alloc(&m, f, r, c), QS_OK);
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
