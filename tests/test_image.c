/* test_image.c — wrapping, aligned allocation, ownership, overflow. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "qs_test.h"
#include "quicksilver.h"

TestSuite(image, .fini = qs_leak_check);

Test(image, wrap_keeps_caller_memory) {
  float px[6] = {1, 2, 3, 4, 5, 6};
  qs_image img = qs_image_wrap(px, 1, 2, 3);
  cr_assert_eq(img.data, px);
  cr_assert_eq(img.frames, 1);
  cr_assert_eq(img.rows, 2);
  cr_assert_eq(img.cols, 3);
  qs_image_free(&img); /* must not free px */
  cr_assert_null(img.data);
  cr_assert_eq(img.rows, 0);
  cr_assert_float_eq(px[5], 6.0f, 0); /* still ours and intact */
}

Test(image, alloc_zeroed_and_aligned) {
  qs_image img;
  cr_assert_eq(qs_image_alloc(&img, 3, 5, 7), QS_OK);
  cr_assert_eq((uintptr_t)img.data % 64, 0);
  for (size_t i = 0; i < 3 * 5 * 7; i++) cr_assert_eq(img.data[i], 0.0f);
  img.data[3 * 5 * 7 - 1] = 1.0f; /* last pixel writable */
  qs_image_free(&img);
  cr_assert_null(img.data);
}

Test(image, large_alloc_zeroed_aligned_and_freed) {
  /* 10 x 1024 x 1024 floats (40 MiB): the mapped path. */
  for (int round = 0; round < 3; round++) {
    qs_image img;
    cr_assert_eq(qs_image_alloc(&img, 10, 1024, 1024), QS_OK);
    cr_assert_eq((uintptr_t)img.data % 64, 0);
    size_t n = (size_t)10 * 1024 * 1024;
    for (size_t i = 0; i < n; i += 4093) cr_assert_eq(img.data[i], 0.0f);
    cr_assert_eq(img.data[n - 1], 0.0f);
    for (size_t i = 0; i < n; i++) img.data[i] = 1.0f; /* all writable */
    qs_image_free(&img);
    cr_assert_null(img.data);
  }
}

Test(image, pixels_overflow_checked) {
  size_t n = 1;
  cr_assert_eq(qs_image_pixels(2, 3, 4, &n), QS_OK);
  cr_assert_eq(n, 24);
  cr_assert_eq(qs_image_pixels(0, 3, 4, &n), QS_OK);
  cr_assert_eq(n, 0);
  /* 2^40 pixels: representable in size_t, but beyond the limit. */
  cr_assert_eq(qs_image_pixels(1 << 10, 1 << 15, 1 << 15, &n), QS_EOVERFLOW);
  cr_assert_eq(n, 0);
  /* Would wrap size_t. */
  cr_assert_eq(qs_image_pixels(SIZE_MAX / 2, 4, 4, &n), QS_EOVERFLOW);
  cr_assert_eq(qs_image_pixels(1, SIZE_MAX, SIZE_MAX, &n), QS_EOVERFLOW);
  /* The limit itself is accepted. */
  cr_assert_eq(qs_image_pixels(1, 1, QS_MAX_PIXELS, &n), QS_OK);
  cr_assert_eq(n, QS_MAX_PIXELS);
}

Test(image, alloc_rejects_bad_sizes) {
  qs_image img;
  cr_assert_eq(qs_image_alloc(&img, 1 << 10, 1 << 15, 1 << 15), QS_EOVERFLOW);
  cr_assert_null(img.data);
  cr_assert_eq(qs_image_alloc(&img, 0, 4, 4), QS_EINVAL);
  cr_assert_null(img.data);
  cr_assert_eq(qs_image_alloc(&img, SIZE_MAX, SIZE_MAX, 2), QS_EOVERFLOW);
}

Test(image, free_null_and_empty_is_safe) {
  qs_image_free(NULL);
  qs_image img = {0};
  qs_image_free(&img);
  cr_assert_null(img.data);
}
