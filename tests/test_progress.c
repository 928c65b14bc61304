/* test_progress.c — progress and cancellation (run_request.progress): for
 * every kind of built-in implementation, a call's reports never go back and
 * end at the total; a hook that cancels stops a long call early with
 * QS_ECANCELLED, empty outputs and no timing in the store; a call without
 * a hook gives the same numbers as one with it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quicksilver.h"
#include "qs_test.h"

TestSuite(progress, .fini = qs_leak_check);

/* The engines' pool threads in these tests. */
#define QS_TEST_THREADS 2

typedef struct watch {
  int calls;
  uint64_t done, total;  /* the last report */
  int monotonic;         /* no report went back */
  int cancel_at;         /* cancel at this call (0: never) */
  double cancelled_frac; /* done / total when it cancelled */
  double cancelled_cpu;  /* the process's CPU seconds then */
  double first_frac;     /* done / total at the first report */
} watch;

/* CPU seconds of the whole process (every thread): the work done, which
 * other processes on the machine do not inflate as they do wall time. */
static double cpu_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int hook(void *ctx, uint64_t done, uint64_t total) {
  watch *w = ctx;
  if (w->calls && total && w->total &&
      (long double)done * w->total < (long double)w->done * total)
    w->monotonic = 0;
  if (total && done > total) w->monotonic = 0;
  if (!w->calls) w->first_frac = total ? (double)done / (double)total : 0;
  w->calls++;
  w->done = done;
  w->total = total;
  if (w->cancel_at && w->calls >= w->cancel_at) {
    w->cancelled_frac = total ? (double)done / (double)total : 0;
    w->cancelled_cpu = cpu_s();
    return 1;
  }
  return 0;
}

/* A noisy stack of f frames, r x c: camera-like background and signal. */
static float *stack(size_t f, size_t r, size_t c) {
  float *px = malloc(f * r * c * sizeof *px);
  cr_assert(px);
  uint64_t s = 88172645463325252ull;
  for (size_t i = 0; i < f * r * c; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    size_t y = (i / c) % r, x = i % c;
    px[i] = 100.0f + 50.0f * (float)((x * 7 + y * 3) % 11) +
            (float)(s % 1000) * 0.01f;
  }
  return px;
}

typedef struct job {
  const char *method, *impl;
  size_t f, r, c;
  qs_param p[4];
  size_t n_p, n_out;
  size_t mag2; /* > 0: a second input of f frames magnified mag2 times
                  (squirrel's reconstructions; the first then has 4) */
} job;

static qs_engine *open_engine(void) {
  qs_engine *e;
  qs_engine_options o = {
      .db_path = ":memory:", .no_calibration = 1, .threads = QS_TEST_THREADS};
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  return e;
}

/* Rows of the store for the method (timings or failures). */
static int count_row(void *ctx, const qs_db_row *r) {
  (void)r;
  ++*(int *)ctx;
  return 0;
}

static int rows_of(qs_engine *e, const char *method) {
  int n = 0;
  qs_db_filter f = {.method = method};
  cr_assert_eq(qs_engine_db_query(e, &f, count_row, &n), QS_OK, "%s",
               qs_engine_error(e));
  return n;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Runs j with a watching hook; returns the status. */
static int run_watched(qs_engine *e, const job *j, watch *w, qs_image *out,
                       double *seconds) {
  size_t m = j->mag2, f0 = m ? 4 : j->f;
  float *px = stack(f0, j->r, j->c);
  float *px2 = m ? stack(j->f, j->r * m, j->c * m) : NULL;
  qs_image in[2] = {qs_image_wrap(px, f0, j->r, j->c)};
  if (m) in[1] = qs_image_wrap(px2, j->f, j->r * m, j->c * m);
  qs_run_request rq = {.inputs = in,
                       .n_inputs = m ? 2 : 1,
                       .params = j->p,
                       .n_params = j->n_p,
                       .impl = j->impl,
                       .progress = hook,
                       .progress_ctx = w};
  double t0 = now_s();
  int rc = qs_method_run(e, j->method, &rq, out, j->n_out, NULL);
  *seconds = now_s() - t0;
  free(px);
  free(px2);
  return rc;
}

/* The whole call reports monotonically up to its total; then a call that
 * cancels at its first report returns early, cancelled, with nothing. The
 * stack grows (frames doubled, up to 16 times the job's and 512 MiB of
 * outputs) until the whole call takes 0.4 s, so that a report comes long before its end on a fast
 * machine too. */
static void check(const job *j0) {
  qs_engine *e = open_engine();
  job grown = *j0, *j = &grown;
  watch w;
  qs_image out[2];
  double full;
  int rc;
  for (;;) {
    w = (watch){.monotonic = 1};
    rc = run_watched(e, j, &w, out, &full);
    cr_assert_eq(rc, QS_OK, "%s %s: %s", j->method, j->impl,
                 qs_engine_error(e));
    size_t bytes = 0; /* the next doubling's outputs at most 512 MiB */
    for (size_t i = 0; i < j->n_out; i++)
      bytes += out[i].frames * out[i].rows * out[i].cols * sizeof(float);
    if (full >= 0.4 || j->f >= 16 * j0->f || 2 * bytes > ((size_t)512 << 20))
      break;
    for (size_t i = 0; i < j->n_out; i++)
      qs_image_free(&out[i]);
    j->f *= 2;
  }
  cr_expect(w.calls >= 2, "%s %s: %d reports", j->method, j->impl, w.calls);
  cr_expect(w.monotonic, "%s %s: a report went back", j->method, j->impl);
  cr_expect(w.total > 0 && w.done == w.total,
            "%s %s: last report %llu of %llu", j->method, j->impl,
            (unsigned long long)w.done, (unsigned long long)w.total);
  for (size_t i = 0; i < j->n_out; i++)
    qs_image_free(&out[i]);
  /* once more, its outputs' memory now the process's own as the cancelled
   * call's will be: where its first report comes */
  watch warm = {.monotonic = 1};
  double again, warm_cpu = cpu_s();
  cr_assert_eq(run_watched(e, j, &warm, out, &again), QS_OK);
  warm_cpu = cpu_s() - warm_cpu;
  for (size_t i = 0; i < j->n_out; i++)
    qs_image_free(&out[i]);
  int before = rows_of(e, j->method);
  cr_expect(before >= 1, "%s %s: %d rows after the calls", j->method,
            j->impl, before);

  watch c = {.monotonic = 1, .cancel_at = 1};
  double cut;
  rc = run_watched(e, j, &c, out, &cut);
  double after = cpu_s() - c.cancelled_cpu;
  cr_assert_eq(rc, QS_ECANCELLED, "%s %s: %s", j->method, j->impl,
               qs_status_name(rc));
  cr_expect(strstr(qs_engine_error(e), "cancel") != NULL, "%s",
            qs_engine_error(e));
  for (size_t i = 0; i < j->n_out; i++)
    cr_expect(out[i].data == NULL, "%s %s: output %zu kept", j->method,
              j->impl, i);
  cr_expect_eq(rows_of(e, j->method), before, "%s %s: the cancelled run was "
               "recorded", j->method, j->impl);
  /* at the first report, which comes QS_PROGRESS_INTERVAL_MS of wall time
   * into the call: before the end of the work. Where that first report
   * lands as a fraction depends on the machine and its load (under meson's
   * parallel tests the whole call's first report and the cancelled call's
   * came at 0.38 and 0.62 of roberts_cross on one machine), so the check
   * is that work was left (a report of 0 of 0 comes before the run has
   * counted any), and below that the work done after the cancel */
  cr_expect(c.cancelled_frac < 1.0 && (!c.total || c.done < c.total),
            "%s %s: cancelled at %.2f of the work, %llu of %llu (the whole "
            "call's first report at %.2f)",
            j->method, j->impl, c.cancelled_frac,
            (unsigned long long)c.done, (unsigned long long)c.total,
            warm.first_frac);
  /* the call returned within 100 ms of work (on each of the pool's
   * threads) after the hook asked: CPU seconds, not wall; and where the
   * work left at the cancel was worth 50 ms or more, after less than half
   * of it (a call that polled the hook but went on to its end fails) */
  double left = (1.0 - c.cancelled_frac) * warm_cpu;
  cr_expect(after < 0.1 * QS_TEST_THREADS, "%s %s: %.3f CPU s of work "
            "after the cancel (the whole call: %.3f s wall)", j->method,
            j->impl, after, full);
  cr_expect(left < 0.05 || after < 0.5 * left, "%s %s: %.3f CPU s of work "
            "after the cancel, of %.3f s left", j->method, j->impl, after,
            left);
  (void)cut;
  qs_engine_close(e);
}

#define SM_P                                                              \
  {{"magnification_row", 8, NULL}, {"magnification_col", 8, NULL}}
#define ES_P                                                              \
  {{"magnification", 5, NULL}, {"radius", 1.5, NULL}}

Test(progress, shift_magnify_serial) {
  job j = {"shift_magnify", "serial", 60, 128, 128, SM_P, 2, 1};
  check(&j);
}

Test(progress, shift_magnify_threaded) {
  job j = {"shift_magnify", "threaded_dynamic", 60, 128, 128, SM_P, 2, 1};
  check(&j);
}

Test(progress, roberts_cross_serial) {
  job j = {"roberts_cross", "serial", 100, 256, 256, {{0}}, 0, 2};
  check(&j);
}

/* A unit per reconstruction, however many came before it. */
Test(progress, squirrel_serial) {
  job j = {"squirrel", "serial", 40, 64, 64, {{"error_map", 0, NULL}}, 1, 2,
           2};
  check(&j);
}

Test(progress, esrrf_serial) {
  job j = {"esrrf", "serial", 20, 48, 48, ES_P, 2, 1};
  check(&j);
}

Test(progress, esrrf_fused) {
  job j = {"esrrf", "fused", 40, 64, 64, ES_P, 2, 1};
  check(&j);
}

Test(progress, esrrf_composed) {
  job j = {"esrrf", "composed", 30, 48, 48, ES_P, 2, 1};
  check(&j);
}

Test(progress, esrrf_opencl) {
  qs_engine *e = open_engine();
  qs_impl_info im[QS_MAX_ESTIMATES];
  size_t n = 0;
  cr_assert_eq(qs_method_impls(e, "esrrf", im, QS_MAX_ESTIMATES, &n), QS_OK);
  char name[QS_NAME_MAX] = "";
  for (size_t i = 0; i < n && i < QS_MAX_ESTIMATES; i++)
    if (im[i].kind == QS_IMPL_OPENCL && im[i].available &&
        !strncmp(im[i].name, "opencl:", 7))
      snprintf(name, sizeof name, "%.63s", im[i].name);
  qs_engine_close(e);
  if (!name[0]) cr_skip_test("no OpenCL device");
  /* a batch at a time: a long stack in small frames */
  job j = {"esrrf", name, 3000, 32, 32, ES_P, 2, 1};
  check(&j);
}

/* The hook changes nothing in the numbers. */
Test(progress, same_numbers) {
  qs_engine *e = open_engine();
  float *px = stack(6, 40, 40);
  qs_image in = qs_image_wrap(px, 6, 40, 40);
  qs_param p[] = ES_P;
  watch w = {.monotonic = 1};
  const char *impls[] = {"serial", "threaded_guided", "fused", "composed"};
  for (size_t k = 0; k < 4; k++) {
    qs_image a, b;
    qs_run_request rq = {.inputs = &in,
                         .n_inputs = 1,
                         .params = p,
                         .n_params = 2,
                         .impl = impls[k]};
    cr_assert_eq(qs_method_run(e, "esrrf", &rq, &a, 1, NULL), QS_OK);
    rq.progress = hook;
    rq.progress_ctx = &w;
    cr_assert_eq(qs_method_run(e, "esrrf", &rq, &b, 1, NULL), QS_OK);
    size_t n = a.frames * a.rows * a.cols;
    cr_expect(!memcmp(a.data, b.data, n * sizeof(float)), "%s", impls[k]);
    qs_image_free(&a);
    qs_image_free(&b);
  }
  free(px);
  qs_engine_close(e);
}

/* qs_method_benchmark with a hook: counted in runs (warm-up and timed, of
 * every implementation), reports monotonic and ending at the total; a
 * hook that cancels stops it with QS_ECANCELLED, and the implementation
 * it stopped records nothing. */
Test(progress, benchmark) {
  qs_engine *e = open_engine();
  qs_param p[] = {{"magnification_row", 2, NULL},
                  {"magnification_col", 2, NULL}};
  size_t f = 4;
  for (;;) { /* a benchmark of at least 0.3 s, so a report comes */
    float *px = stack(f, 128, 128);
    qs_image in = qs_image_wrap(px, f, 128, 128);
    watch w = {.monotonic = 1};
    qs_run_request rq = {.inputs = &in,
                         .n_inputs = 1,
                         .params = p,
                         .n_params = 2,
                         .progress = hook,
                         .progress_ctx = &w};
    qs_bench_result br;
    double t0 = now_s();
    cr_assert_eq(qs_method_benchmark(e, "shift_magnify", &rq,
                                     "serial,threaded", 1, 3, &br),
                 QS_OK, "%s", qs_engine_error(e));
    double took = now_s() - t0;
    cr_expect(w.monotonic);
    cr_expect_eq(w.total, br.n * 4, "%llu runs planned, %zu impls",
                 (unsigned long long)w.total, br.n);
    cr_expect_eq(w.done, w.total);
    int before = rows_of(e, "shift_magnify");
    watch c = {.monotonic = 1, .cancel_at = 1};
    rq.progress_ctx = &c;
    int rc = qs_method_benchmark(e, "shift_magnify", &rq, "serial,threaded", 1,
                                 3, &br);
    free(px);
    if (took < 0.3 && f < 4096) {
      f *= 2;
      continue;
    }
    cr_expect_eq(rc, QS_ECANCELLED, "%s", qs_status_name(rc));
    cr_expect_not_null(strstr(qs_engine_error(e), "cancelled"));
    /* at most the implementations finished before the first report */
    int added = rows_of(e, "shift_magnify") - before;
    cr_expect(added < (int)(3 * w.total / 4), "%d rows after a cancel", added);
    cr_expect(c.cancelled_frac < 1.0);
    break;
  }
  qs_engine_close(e);
}
