/* dispatch.c — the dispatcher's own cost: qs_method_run() of a registered
 * method whose implementations do nothing, on a warm key, with a
 * file-backed store. What is measured is validation, key, selection from
 * the in-memory history, the call, and recording the row.
 *
 * Usage: dispatch [runs (default 20000)] [store path (default: a temporary
 * file, removed afterwards)]
 * Prints min, median and 99th percentile microseconds per call. Goal:
 * median <= 20 us.
 *
 * Then the first calls of a fresh engine, automatic against forced
 * (early_cost), and the cost of calibration on built-in methods with a cold in-memory
 * store: the first call's calibration seconds against the run it chose
 * (goal: under 10 % when that run takes more than 100 ms), and what the
 * second call picks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nop.h" /* a method of its own, that does nothing */

/* One cold and one warm call of a built-in method on a ramp stack. */
static void calibration_cost(const char *method, size_t frames, size_t rows,
                             size_t cols, const qs_param *p, size_t n_p) {
  qs_engine_options o = {.db_path = ":memory:"};
  qs_engine *e;
  if (qs_engine_open(&e, &o) || !qs_method_find(e, method)) {
    fprintf(stderr, "dispatch: %s: %s\n", method, qs_engine_error(e));
    qs_engine_close(e);
    return;
  }
  size_t n = frames * rows * cols;
  float *px = malloc(n * sizeof *px);
  if (!px) return;
  for (size_t i = 0; i < n; i++) px[i] = (float)((i * 7919) % 1000) * 0.01f;
  qs_image in = qs_image_wrap(px, frames, rows, cols), out[1];
  qs_run_request rq = {
      .inputs = &in, .n_inputs = 1, .params = p, .n_params = n_p};
  qs_run_report r1, r2;
  if (qs_method_run(e, method, &rq, out, 1, &r1) == QS_OK) {
    qs_image_free(&out[0]);
    if (qs_method_run(e, method, &rq, out, 1, &r2) == QS_OK) {
      qs_image_free(&out[0]);
      double steady = r1.calibration_seconds - r1.calibration_once_seconds;
      printf("calibration: %s %zux%zux%zu\n"
             "  cold: calibration %.1f ms (%.1f ms of it one-time builds and "
             "first launches), then %s (%s) %.1f ms: %.1f %% of it, %.1f %% "
             "without the one-time costs\n"
             "  warm: %s (%s) %.1f ms\n",
             method, frames, rows, cols, r1.calibration_seconds * 1e3,
             r1.calibration_once_seconds * 1e3, r1.impl, r1.reason,
             r1.seconds * 1e3, 100 * r1.calibration_seconds / r1.seconds,
             100 * steady / r1.seconds, r2.impl, r2.reason,
             r2.seconds * 1e3);
    }
  }
  free(px);
  qs_engine_close(e);
}

/* The first EARLY calls of a fresh engine on a fresh file store, with the
 * implementation left to the engine or forced: the engine's own cost while
 * it learns (calibration of the cold implementations, evidence runs,
 * the store's first writes), per call in microseconds. */
enum { EARLY = 64, EARLY_ROUNDS = 5 };

static int early_calls(const char *impl, double *t) {
  char path[] = "/tmp/qs_bench_early_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  close(fd);
  unlink(path);
  qs_engine_options o = {.db_path = path, .no_opencl = 1};
  qs_engine *e;
  if (qs_engine_open(&e, &o) || qs_method_register(e, &nop_desc)) {
    qs_engine_close(e);
    return -1;
  }
  static float px[16 * 16];
  qs_image in = qs_image_wrap(px, 1, 16, 16), out[1];
  qs_run_request rq = {.inputs = &in, .n_inputs = 1, .impl = impl};
  int rc = 0;
  for (int i = 0; i < EARLY && !rc; i++) {
    int64_t t0 = qs_timer_ns();
    rc = qs_method_run(e, "nop", &rq, out, 1, NULL);
    t[i] = (double)(qs_timer_ns() - t0) * 1e-3;
    if (!rc) qs_image_free(&out[0]);
  }
  qs_engine_close(e);
  qs_engine_db_remove(path, NULL, 0);
  return rc;
}

static double median_of(double *x, size_t n) {
  qsort(x, n, sizeof *x, cmp);
  return x[n / 2];
}

/* Auto against forced, interleaved: call 1, and the medians over the
 * rounds of calls 2-8, 9-32 and 33-64. */
static void early_cost(void) {
  static double t[2][EARLY_ROUNDS][EARLY];
  const char *impl[2] = {NULL, "threaded"};
  for (int r = 0; r < EARLY_ROUNDS; r++)
    for (int m = 0; m < 2; m++)
      if (early_calls(impl[m], t[m][r])) {
        fprintf(stderr, "dispatch: early calls failed\n");
        return;
      }
  static const int lo[] = {0, 1, 8, 32}, hi[] = {1, 8, 32, 64};
  printf("early calls of a fresh engine and store (median us over %d "
         "rounds):\n  calls     auto   forced\n", EARLY_ROUNDS);
  for (int g = 0; g < 4; g++) {
    double v[2];
    for (int m = 0; m < 2; m++) {
      double x[EARLY_ROUNDS * EARLY];
      size_t n = 0;
      for (int r = 0; r < EARLY_ROUNDS; r++)
        for (int i = lo[g]; i < hi[g]; i++) x[n++] = t[m][r][i];
      v[m] = median_of(x, n);
    }
    printf("  %2d-%-2d %8.1f %8.1f\n", lo[g] + 1, hi[g], v[0], v[1]);
  }
}

int main(int argc, char **argv) {
  long runs = argc > 1 ? atol(argv[1]) : 20000;
  if (runs < 10) runs = 10;
  char tmp[] = "/tmp/qs_bench_dispatch_XXXXXX";
  const char *path = argc > 2 ? argv[2] : NULL;
  if (!path) {
    int fd = mkstemp(tmp);
    if (fd < 0) return perror("mkstemp"), 1;
    close(fd);
    unlink(tmp);
    path = tmp;
  }
  qs_engine_options o = {.db_path = path, .no_opencl = 1};
  qs_engine *e;
  if (qs_engine_open(&e, &o) || qs_method_register(e, &nop_desc)) {
    fprintf(stderr, "dispatch: %s\n", qs_engine_error(e));
    qs_engine_close(e);
    return 1;
  }
  static float px[16 * 16];
  qs_image in = qs_image_wrap(px, 1, 16, 16);
  qs_param p[] = {{"radius", 2.0, NULL}};
  qs_run_request rq = {
      .inputs = &in, .n_inputs = 1, .params = p, .n_params = 1};
  double *t = malloc((size_t)runs * sizeof *t);
  if (!t) return 1;
  qs_run_report rep;
  qs_image out[1];
  /* warm-up: calibration, history, caches */
  for (int i = 0; i < 200; i++) {
    if (qs_method_run(e, "nop", &rq, out, 1, &rep)) {
      fprintf(stderr, "dispatch: %s\n", qs_engine_error(e));
      return 1;
    }
    qs_image_free(&out[0]);
  }
  int64_t all0 = qs_timer_ns();
  for (long i = 0; i < runs; i++) {
    int64_t t0 = qs_timer_ns();
    int rc = qs_method_run(e, "nop", &rq, out, 1, &rep);
    t[i] = (double)(qs_timer_ns() - t0) * 1e-3;
    if (rc) return fprintf(stderr, "dispatch: %s\n", qs_engine_error(e)), 1;
    qs_image_free(&out[0]);
  }
  double total = (double)(qs_timer_ns() - all0) * 1e-3;
  int64_t c0 = qs_timer_ns();
  qs_engine_close(e);
  double close_us = (double)(qs_timer_ns() - c0) * 1e-3;
  qsort(t, (size_t)runs, sizeof *t, cmp);
  printf("dispatch: %ld warm qs_method_run calls, file store %s\n", runs,
         path);
  printf("  min %.2f us  median %.2f us  p99 %.2f us  mean %.2f us  "
         "(qs_engine_close %.0f us)\n",
         t[0], t[runs / 2], t[runs * 99 / 100], total / (double)runs,
         close_us);
  free(t);
  early_cost();
  qs_param sm[] = {{"magnification_row", 4, NULL},
                   {"magnification_col", 4, NULL}};
  calibration_cost("shift_magnify", 16, 512, 512, sm, 2);
  calibration_cost("esrrf", 100, 128, 128, NULL, 0);
  if (path == tmp) qs_engine_db_remove(tmp, NULL, 0);
  return 0;
}
