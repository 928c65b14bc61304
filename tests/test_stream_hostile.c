/* test_stream_hostile.c — the public C API tried as a careless or hostile
 * host program would: NULL where a pointer is expected, counts with no
 * array, sizes at SIZE_MAX, pushes too large to count, NaN and infinity in
 * frames. Every case answers with a status and a message, never a crash
 * (run under ASan/UBSan in CI); the eSRRF NaN policy is the same for the
 * live stream and the batch call (README, "NaN and infinity"). Public
 * header only, so it holds whatever the stream's insides become. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qs_test.h"
#include "quicksilver.h"
#include "quicksilver_esrrf.h"

#define FUZZ_NO_MAIN
#include "fuzz/fuzz_stream.c"
#include "fuzz/replay.h"

TestSuite(stream_hostile, .fini = qs_leak_check);

static qs_engine *open_cpu(void) {
  qs_engine_options eo = {.db_path = ":memory:",
                          .no_opencl = 1,
                          .threads = 2,
                          .no_calibration = 1};
  qs_engine *e = NULL;
  cr_assert_eq(qs_engine_open(&e, &eo), QS_OK, "%s",
               e ? qs_engine_error(e) : "no engine");
  return e;
}

static const qs_param mag2[] = {{"magnification", 2, NULL}};

static qs_esrrf_stream_options options(size_t rows, size_t cols) {
  return (qs_esrrf_stream_options){.rows = rows,
                                   .cols = cols,
                                   .params = mag2,
                                   .n_params = 1,
                                   .window = 2,
                                   .impl = "serial"};
}

/* max_pending = SIZE_MAX made the queue's capacity wrap to 0 (a division
 * by zero at the first push). */
Test(stream_hostile, max_pending_at_size_max_is_refused) {
  qs_engine *e = open_cpu();
  qs_esrrf_stream_options o = options(8, 8);
  o.max_pending = SIZE_MAX;
  qs_esrrf_stream *s = (qs_esrrf_stream *)1;
  char err[512] = "";
  cr_assert_eq(qs_esrrf_stream_open(e, &o, &s, err, sizeof err), QS_EINVAL);
  cr_assert_null(s);
  cr_assert_not_null(strstr(err, "max_pending"), "%s", err);
  o.max_pending = QS_ESRRF_STREAM_MAX_PENDING; /* the largest allowed works */
  cr_assert_eq(qs_esrrf_stream_open(e, &o, &s, err, sizeof err), QS_OK, "%s",
               err);
  qs_esrrf_stream_close(s);
  qs_engine_close(e);
}

/* params = NULL with n_params = 1 was read (a segfault in params.c), in
 * the stream and in qs_method_run alike. */
Test(stream_hostile, count_of_params_without_params_is_refused) {
  qs_engine *e = open_cpu();
  qs_esrrf_stream_options o = options(8, 8);
  o.params = NULL;
  qs_esrrf_stream *s = NULL;
  char err[512] = "";
  cr_assert_eq(qs_esrrf_stream_open(e, &o, &s, err, sizeof err), QS_EINVAL);
  cr_assert_not_null(strstr(err, "params"), "%s", err);
  qs_image in;
  cr_assert_eq(qs_image_alloc(&in, 2, 8, 8), QS_OK);
  memset(in.data, 0, 2 * 8 * 8 * sizeof(float));
  qs_run_request rq = {
      .inputs = &in, .n_inputs = 1, .params = NULL, .n_params = 1};
  qs_image out[1];
  cr_assert_eq(qs_method_run(e, "esrrf", &rq, out, 1, NULL), QS_EINVAL);
  cr_assert_not_null(strstr(qs_engine_error(e), "param"), "%s",
                     qs_engine_error(e));
  cr_assert_eq(qs_method_estimate(e, "esrrf", &rq, &(qs_run_report){0}),
               QS_EINVAL);
  /* and the table functions themselves */
  double v[QS_MAX_PARAMS];
  const qs_method_desc *d = qs_method_find(e, "esrrf");
  cr_assert_not_null(d);
  cr_assert_eq(
      qs_params_resolve(d->params, d->n_params, NULL, 3, v, err, sizeof err),
      QS_EINVAL);
  cr_assert_eq(qs_params_resolve(NULL, 2, NULL, 0, v, err, sizeof err),
               QS_EINVAL);
  cr_assert_eq(qs_params_resolve(d->params, d->n_params, NULL, 0, NULL, err,
                                 sizeof err),
               QS_EINVAL);
  cr_assert_eq(qs_params_parse(NULL, "1", v, err, sizeof err), QS_EINVAL);
  cr_assert_eq(qs_params_parse(&d->params[0], "1", NULL, err, sizeof err),
               QS_EINVAL);
  cr_assert_eq(qs_params_check(NULL, 1, err, sizeof err), QS_EINVAL);
  qs_image_free(&in);
  qs_engine_close(e);
}

/* Every public stream function with NULL where it takes a pointer. */
Test(stream_hostile, null_pointers_are_answered) {
  qs_engine *e = open_cpu();
  qs_esrrf_stream_options o = options(8, 8);
  qs_esrrf_stream *s = NULL;
  char err[512] = "";
  cr_assert_eq(qs_esrrf_stream_open(NULL, &o, &s, err, sizeof err), QS_EINVAL);
  cr_assert_eq(qs_esrrf_stream_open(e, NULL, &s, err, sizeof err), QS_EINVAL);
  cr_assert_eq(qs_esrrf_stream_open(e, &o, NULL, err, sizeof err), QS_EINVAL);
  cr_assert_eq(qs_esrrf_stream_open(e, &o, &s, NULL, 0), QS_OK);
  uint64_t up = 7, down = 7;
  /* both counters optional: qs_esrrf_stream_transfers(s, NULL, NULL) was a
   * segfault */
  qs_esrrf_stream_transfers(s, NULL, NULL);
  qs_esrrf_stream_transfers(s, &up, NULL);
  qs_esrrf_stream_transfers(s, NULL, &down);
  cr_assert_eq(up, 0);
  cr_assert_eq(down, 0);
  qs_esrrf_stream_transfers(NULL, &up, &down);
  cr_assert_eq(qs_esrrf_stream_push(s, NULL), QS_EINVAL);
  cr_assert_eq(qs_esrrf_stream_push(NULL, NULL), QS_EINVAL);
  qs_image none = {0};
  cr_assert_eq(qs_esrrf_stream_push(s, &none), QS_EINVAL);
  int got = 1;
  qs_image img;
  cr_assert_eq(qs_esrrf_stream_pop(s, NULL, NULL, &got), QS_EINVAL);
  cr_assert_eq(got, 0);
  cr_assert_eq(qs_esrrf_stream_pop(s, &img, NULL, NULL), QS_EINVAL);
  cr_assert_eq(qs_esrrf_stream_pop(NULL, &img, NULL, &got), QS_EINVAL);
  cr_assert_eq(qs_esrrf_stream_give(s, NULL), QS_EINVAL);
  cr_assert_eq(qs_esrrf_stream_give(NULL, &none), QS_EINVAL);
  cr_assert_eq(qs_esrrf_stream_end(NULL), QS_EINVAL);
  cr_assert_eq(qs_esrrf_stream_frames(NULL), 0);
  cr_assert_str_eq(qs_esrrf_stream_impl(NULL), "");
  cr_assert_str_eq(qs_esrrf_stream_error(NULL), "");
  qs_esrrf_stream_close(NULL);
  qs_esrrf_stream_close(s);
  qs_engine_close(e);
}

/* A push whose pixel count does not fit size_t is refused before the
 * frames are read (the NaN scan multiplied frames by rows by cols). */
Test(stream_hostile, push_too_large_to_count_is_refused) {
  qs_engine *e = open_cpu();
  qs_esrrf_stream_options o = options(8, 8);
  qs_esrrf_stream *s = NULL;
  char err[512] = "";
  cr_assert_eq(qs_esrrf_stream_open(e, &o, &s, err, sizeof err), QS_OK, "%s",
               err);
  float px[64] = {0};
  qs_image huge = qs_image_wrap(px, SIZE_MAX / 16, 8, 8);
  cr_assert_eq(qs_esrrf_stream_push(s, &huge), QS_EOVERFLOW);
  cr_assert_not_null(strstr(qs_esrrf_stream_error(s), "too large"), "%s",
                     qs_esrrf_stream_error(s));
  cr_assert_eq(qs_esrrf_stream_frames(s), 0);
  qs_esrrf_stream_close(s);
  qs_engine_close(e);
}

/* Frame sizes past what the stream can hold: a message that says why, not
 * "statistics of 0 x 0 maps". */
Test(stream_hostile, oversized_frames_are_explained) {
  qs_engine *e = open_cpu();
  /* the first at magnification 5 (the default): past the output's bound,
   * refused before any allocation (one that only fails in malloc would
   * abort under AddressSanitizer instead of returning NULL) */
  const size_t sizes[][2] = {{100000, 100000}, {SIZE_MAX, 8}, {0, 8}};
  for (size_t i = 0; i < 3; i++) {
    qs_esrrf_stream_options o = options(sizes[i][0], sizes[i][1]);
    if (i == 0) o.params = NULL, o.n_params = 0;
    qs_esrrf_stream *s = NULL;
    char err[512] = "";
    int rc = qs_esrrf_stream_open(e, &o, &s, err, sizeof err);
    cr_assert_neq(rc, QS_OK, "%zu x %zu", sizes[i][0], sizes[i][1]);
    cr_assert_null(s);
    cr_assert_null(strstr(err, "0 x 0"), "%s", err);
    cr_assert_gt(strlen(err), 10, "no message: %s", err);
  }
  qs_engine_close(e);
}

/* The NaN policy, one for batch and stream: a NaN or infinite pixel is
 * refused with its frame, row and column named, nothing is computed. The
 * batch call used to spread one NaN over the whole output (the macro-pixel
 * correction divides by the image's mean) and return QS_OK. */
Test(stream_hostile, nan_pixel_is_refused_alike_by_batch_and_stream) {
  qs_engine *e = open_cpu();
  qs_image in;
  cr_assert_eq(qs_image_alloc(&in, 10, 24, 24), QS_OK);
  for (size_t i = 0; i < 10 * 24 * 24; i++)
    in.data[i] = 100.0f + (float)(i % 7);
  const float bad[] = {NAN, INFINITY, -INFINITY};
  for (size_t k = 0; k < 3; k++) {
    in.data[(6 * 24 + 5) * 24 + 17] = bad[k]; /* frame 6, row 5, col 17 */
    qs_run_request rq = {.inputs = &in,
                         .n_inputs = 1,
                         .params = mag2,
                         .n_params = 1,
                         .impl = "serial"};
    qs_image out[1];
    int rc = qs_method_run(e, "esrrf", &rq, out, 1, NULL);
    cr_assert_eq(rc, QS_EINVAL, "batch: %s (%s)", qs_status_name(rc),
                 qs_engine_error(e));
    const char *m = qs_engine_error(e);
    cr_assert_not_null(strstr(m, "frame 6"), "%s", m);
    cr_assert_not_null(strstr(m, "row 5"), "%s", m);
    cr_assert_not_null(strstr(m, "column 17"), "%s", m);
    cr_assert_null(out[0].data);
    /* the stream: the same frame refused, with the same pixel named */
    qs_esrrf_stream_options o = options(24, 24);
    qs_esrrf_stream *s = NULL;
    char err[512] = "";
    cr_assert_eq(qs_esrrf_stream_open(e, &o, &s, err, sizeof err), QS_OK, "%s",
                 err);
    qs_image f = qs_image_wrap(in.data + 6 * 24 * 24, 1, 24, 24);
    cr_assert_eq(qs_esrrf_stream_push(s, &f), QS_EINVAL);
    const char *sm = qs_esrrf_stream_error(s);
    cr_assert_not_null(strstr(sm, "row 5"), "%s", sm);
    cr_assert_not_null(strstr(sm, "column 17"), "%s", sm);
    qs_esrrf_stream_close(s);
  }
  /* every implementation refuses it, not only the serial one */
  qs_run_request rq = {
      .inputs = &in, .n_inputs = 1, .params = mag2, .n_params = 1};
  qs_image out[1];
  cr_assert_eq(qs_method_run(e, "esrrf", &rq, out, 1, NULL), QS_EINVAL);
  /* a finite stack again runs */
  in.data[(6 * 24 + 5) * 24 + 17] = 100;
  cr_assert_eq(qs_method_run(e, "esrrf", &rq, out, 1, NULL), QS_OK, "%s",
               qs_engine_error(e));
  for (size_t i = 0; i < out[0].rows * out[0].cols; i++)
    cr_assert(isfinite(out[0].data[i]), "pixel %zu", i);
  qs_image_free(&out[0]);
  qs_image_free(&in);
  qs_engine_close(e);
}

/* The stream harness's seeds and every input fuzzing found troublesome
 * (tests/fuzz/corpus/stream, tests/fuzz/regress/stream), replayed. */
Test(stream_hostile, fuzz_inputs_replayed) {
  cr_assert_geq(replay_kind("stream", stream_one), 7);
}

static int no_row(void *ctx, const qs_db_row *r) {
  (void)ctx;
  (void)r;
  return 0;
}

/* Every other public entry with NULL where it takes a pointer, and sizes
 * at SIZE_MAX: a status (or an empty answer), never a crash. */
Test(stream_hostile, every_public_function_answers_null) {
  qs_engine *e = open_cpu();
  size_t n = 7;
  cr_assert_neq(qs_image_alloc(NULL, 1, 1, 1), QS_OK);
  qs_image img;
  cr_assert_neq(qs_image_alloc(&img, SIZE_MAX, SIZE_MAX, 2), QS_OK);
  qs_image_free(NULL);
  cr_assert_neq(qs_image_pixels(SIZE_MAX, 2, 1, &n), QS_OK);
  cr_assert_neq(qs_image_pixels(1, 1, 1, NULL), QS_OK);
  cr_assert_neq(qs_engine_open(NULL, NULL), QS_OK);
  qs_engine_close(NULL);
  cr_assert_not_null(qs_engine_error(NULL));
  (void)qs_engine_threads(NULL);
  (void)qs_engine_db_path(NULL);
  (void)qs_engine_opencl_why(NULL);
  cr_assert_neq(qs_engine_devices(NULL, NULL, 0, &n), QS_OK);
  cr_assert_neq(qs_engine_devices(e, NULL, 4, &n), QS_OK);
  cr_assert_null(qs_name_nearest(NULL, NULL, NULL, 3));
  (void)qs_method_nearest_name(NULL, "esrf");
  (void)qs_method_nearest_name(e, NULL);
  char msg[64];
  (void)qs_engine_record_status(NULL, msg, sizeof msg);
  (void)qs_engine_record_status(e, NULL, 0);
  cr_assert_eq(qs_method_count(NULL), 0);
  cr_assert_null(qs_method_at(NULL, 0));
  cr_assert_null(qs_method_at(e, SIZE_MAX));
  cr_assert_null(qs_method_find(NULL, "esrrf"));
  cr_assert_null(qs_method_find(e, NULL));
  cr_assert_neq(qs_method_impls(e, NULL, NULL, 4, &n), QS_OK);
  cr_assert_neq(qs_method_impls(e, "esrrf", NULL, 4, &n), QS_OK);
  qs_image out[1];
  qs_run_report rep;
  cr_assert_neq(qs_method_run(NULL, "esrrf", NULL, out, 1, &rep), QS_OK);
  cr_assert_neq(qs_method_run(e, NULL, NULL, out, 1, &rep), QS_OK);
  cr_assert_neq(qs_method_run(e, "esrrf", NULL, out, 1, &rep), QS_OK);
  cr_assert_neq(qs_method_run(e, "esrrf", NULL, NULL, 1, &rep), QS_OK);
  qs_run_request rq = {.inputs = NULL, .n_inputs = 1};
  cr_assert_neq(qs_method_run(e, "esrrf", &rq, out, 1, NULL), QS_OK);
  cr_assert_neq(qs_method_estimate(e, "esrrf", &rq, NULL), QS_OK);
  cr_assert_neq(qs_method_estimate(e, "esrrf", NULL, &rep), QS_OK);
  cr_assert_neq(qs_method_benchmark(e, "esrrf", NULL, NULL, 0, 1, NULL),
                QS_OK);
  qs_bench_result br;
  cr_assert_neq(qs_method_benchmark(e, "esrrf", NULL, NULL, 0, 1, &br), QS_OK);
  cr_assert_neq(qs_engine_db_query(NULL, NULL, no_row, NULL), QS_OK);
  (void)qs_engine_db_query(e, NULL, NULL, NULL);
  (void)qs_engine_db_query(e, NULL, no_row, NULL);
  (void)qs_engine_db_stats(e, NULL, NULL, NULL);
  (void)qs_engine_db_best(e, NULL, NULL, NULL);
  cr_assert_eq(qs_db_key_is_slice(NULL), 0);
  cr_assert_neq(qs_engine_db_export(e, NULL), QS_OK);
  cr_assert_neq(qs_engine_db_import(e, NULL, NULL, NULL, NULL), QS_OK);
  (void)qs_engine_db_prune(e, 0, 0, NULL);
  (void)qs_engine_db_forget(e, NULL, NULL);
  (void)qs_engine_db_check(NULL);
  cr_assert_neq(qs_engine_db_move_aside(NULL, NULL, 0, NULL, 0), QS_OK);
  cr_assert_neq(qs_engine_db_remove(NULL, NULL, 0), QS_OK);
  cr_assert_neq(qs_stats_of(NULL, 3, NULL), QS_OK);
  (void)qs_esrrf_partial_slots(-1);
  qs_esrrf_partial p;
  cr_assert_neq(qs_esrrf_partial_init(NULL, 0, 4, 4), QS_OK);
  cr_assert_neq(qs_esrrf_partial_init(&p, 0, SIZE_MAX, SIZE_MAX), QS_OK);
  qs_esrrf_partial_free(NULL);
  qs_esrrf_partial_reset(NULL);
  cr_assert_neq(qs_esrrf_partial_add(NULL, NULL, 1), QS_OK);
  cr_assert_eq(qs_esrrf_partial_init(&p, 0, 4, 4), QS_OK);
  cr_assert_neq(qs_esrrf_partial_add(&p, NULL, 1), QS_OK);
  cr_assert_neq(qs_esrrf_partial_merge(&p, NULL), QS_OK);
  cr_assert_neq(qs_esrrf_partial_merge(NULL, &p), QS_OK);
  cr_assert_neq(qs_esrrf_partial_finish(&p, 2, 1, NULL), QS_OK);
  cr_assert_neq(qs_esrrf_partial_finish(NULL, 2, 1, NULL), QS_OK);
  qs_esrrf_partial_free(&p);
  qs_engine_close(e);
}
