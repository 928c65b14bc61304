/* test_budget.c — cl_budget_frames on invented device limits: the sum over
 * buffers against global memory less headroom, each buffer against the
 * largest allocation, and the "nothing fits" error. No device needed. */
#include <criterion/criterion.h>
#include <string.h>

#include "cl/clrt.h"
#include "qs_test.h"

TestSuite(budget, .fini = qs_leak_check);

#define MIB ((size_t)1 << 20)

/* 1000 MiB of global memory (900 usable after 10% headroom), 256 MiB per
 * buffer at most. */
static cldev_info device(void) {
  cldev_info d;
  memset(&d, 0, sizeof d);
  strcpy(d.slug, "invented-gpu");
  d.global_mem = 1000 * MIB;
  d.max_alloc = 256 * MIB;
  return d;
}

Test(budget, global_memory_limits_the_batch) {
  cldev_info d = device();
  /* Three buffers of 2 MiB per frame: max_alloc allows 128 frames in each,
   * the sum 900 / 6 = 150, so max_alloc decides. */
  size_t per[3] = {2 * MIB, 2 * MIB, 2 * MIB};
  size_t frames = 0;
  cr_expect_eq(cl_budget_frames(&d, per, NULL, 3, 1000, &frames, NULL, 0),
               QS_OK);
  cr_expect_eq(frames, 128, "max_alloc / 2 MiB");
  /* Nine buffers of 1 MiB: 256 per buffer, 900 / 9 = 100 by the sum. */
  size_t nine[9];
  for (int i = 0; i < 9; i++)
    nine[i] = MIB;
  cr_expect_eq(cl_budget_frames(&d, nine, NULL, 9, 1000, &frames, NULL, 0),
               QS_OK);
  cr_expect_eq(frames, 100, "global memory less 10%% headroom");
}

Test(budget, fixed_bytes_count_against_both_limits) {
  cldev_info d = device();
  /* Buffer 0: 56 MiB fixed + 10 MiB per frame -> (256 - 56) / 10 = 20. */
  size_t per[2] = {10 * MIB, MIB};
  size_t fixed[2] = {56 * MIB, 0};
  size_t frames = 0;
  cr_expect_eq(cl_budget_frames(&d, per, fixed, 2, 1000, &frames, NULL, 0),
               QS_OK);
  cr_expect_eq(frames, 20);
  /* A fixed 800 MiB spread over four buffers leaves 100 MiB: 100 / 11. */
  size_t per4[4] = {10 * MIB, MIB, 0, 0};
  size_t fixed4[4] = {0, 0, 200 * MIB, 600 * MIB};
  d.max_alloc = 1000 * MIB;
  cr_expect_eq(cl_budget_frames(&d, per4, fixed4, 4, 1000, &frames, NULL, 0),
               QS_OK);
  cr_expect_eq(frames, 9);
}

Test(budget, wanted_caps_the_batch) {
  cldev_info d = device();
  size_t per[1] = {MIB};
  size_t frames = 0;
  cr_expect_eq(cl_budget_frames(&d, per, NULL, 1, 7, &frames, NULL, 0), QS_OK);
  cr_expect_eq(frames, 7);
  /* Buffers that do not grow with frames never limit the count. */
  size_t none[1] = {0}, fixed[1] = {100 * MIB};
  cr_expect_eq(cl_budget_frames(&d, none, fixed, 1, 5000, &frames, NULL, 0),
               QS_OK);
  cr_expect_eq(frames, 5000);
}

Test(budget, nothing_fits_in_one_buffer) {
  cldev_info d = device();
  /* 300 MiB in one buffer for one frame: under global memory, over
   * max_alloc. */
  size_t per[2] = {MIB, 300 * MIB};
  size_t frames = 99;
  char err[512] = "";
  cr_expect_eq(
      cl_budget_frames(&d, per, NULL, 2, 10, &frames, err, sizeof err),
      QS_EDEVMEM);
  cr_expect_eq(frames, 0);
  cr_expect_not_null(strstr(err, "one frame needs 301.0 MiB"), "%s", err);
  cr_expect_not_null(strstr(err, "buffer 1, 300.0 MiB"), "%s", err);
  cr_expect_not_null(strstr(err, "invented-gpu"), "%s", err);
  cr_expect_not_null(strstr(err, "at most 256.0 MiB per buffer"), "%s", err);
}

Test(budget, nothing_fits_in_global_memory) {
  cldev_info d = device();
  /* Four 250 MiB buffers: each under max_alloc, 1000 MiB in sum over the
   * 900 usable. */
  size_t per[4] = {250 * MIB, 250 * MIB, 250 * MIB, 250 * MIB};
  size_t frames = 99;
  char err[512] = "";
  cr_expect_eq(cl_budget_frames(&d, per, NULL, 4, 1, &frames, err, sizeof err),
               QS_EDEVMEM);
  cr_expect_eq(frames, 0);
  cr_expect_not_null(strstr(err, "one frame needs 1000.0 MiB in 4 buffers"),
                     "%s", err);
  cr_expect_not_null(strstr(err, "1000.0 MiB of global memory (900.0 MiB "
                                 "usable after 10% headroom)"),
                     "%s", err);
}

Test(budget, huge_sizes_do_not_wrap) {
  cldev_info d = device();
  size_t per[2] = {SIZE_MAX, SIZE_MAX};
  size_t frames = 1;
  cr_expect_eq(cl_budget_frames(&d, per, NULL, 2, 1, &frames, NULL, 0),
               QS_EDEVMEM);
  size_t fixed[2] = {SIZE_MAX, 0}, small[2] = {1, 1};
  cr_expect_eq(cl_budget_frames(&d, small, fixed, 2, 1, &frames, NULL, 0),
               QS_EDEVMEM);
}

Test(budget, bad_arguments) {
  cldev_info d = device();
  size_t per[1] = {MIB}, frames = 3;
  char err[128] = "";
  cr_expect_eq(cl_budget_frames(&d, per, NULL, 1, 0, &frames, err, sizeof err),
               QS_EINVAL);
  cr_expect_not_null(strstr(err, "wanted"));
  cr_expect_eq(cl_budget_frames(NULL, per, NULL, 1, 1, &frames, NULL, 0),
               QS_EINVAL);
  cr_expect_eq(cl_budget_frames(&d, NULL, NULL, 1, 1, &frames, NULL, 0),
               QS_EINVAL);
  /* No buffers: everything wanted fits. */
  cr_expect_eq(cl_budget_frames(&d, NULL, NULL, 0, 12, &frames, NULL, 0),
               QS_OK);
  cr_expect_eq(frames, 12);
}
