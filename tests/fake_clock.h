/* fake_clock.h — for engine tests (Criterion) whose implementations charge
 * known costs: an injected engine clock (engine_options.clock_ns) that
 * only the implementations advance, and a synthetic input stack. */
#ifndef QS_FAKE_CLOCK_H
#define QS_FAKE_CLOCK_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>

#include "quicksilver.h"

static int64_t fake_now;

static int64_t fake_clock(void *ctx) {
  (void)ctx;
  return fake_now;
}

/* A frames x rows x cols stack of small varied values; free x.px. */
typedef struct input {
  float *px;
  qs_image im;
} input;

static input make_input(size_t frames, size_t rows, size_t cols) {
  input x;
  size_t n = frames * rows * cols;
  x.px = malloc(n * sizeof *x.px);
  cr_assert_not_null(x.px);
  for (size_t i = 0; i < n; i++) x.px[i] = (float)(i % 97) * 0.5f;
  x.im = qs_image_wrap(x.px, frames, rows, cols);
  return x;
}

#endif
