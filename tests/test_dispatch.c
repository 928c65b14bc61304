/* test_dispatch.c — qs_method_run's flow with a fake method registered through
 * qs_method_register, whose run time the test sets through the injected clock:
 * validation errors with nothing recorded, forced implementations and kinds,
 * calibration once per cold implementation, fallback and retry, the key,
 * history across qs_engine_close/qs_engine_open, qs_method_benchmark. */
#define _DEFAULT_SOURCE /* mincore */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "db/store.h"
#include "fake_clock.h"
#include "internal.h"
#include "qs_test.h"

TestSuite(dispatch, .fini = qs_leak_check);

/* ------------------------------------------------------------ fake method */

enum { F_SERIAL, F_THREADED, F_DYNAMIC, F_FLAKY, F_OPENCL, F_LOCKED, F_N };

/* Per implementation: fixed and per-pixel nanoseconds, failure and wrong
 * output switches, calls seen. */
static struct {
  int64_t fixed, per_px;
  int fail, wrong;
  int calls, small_calls;
} fake[F_N];

static int fake_body(const qs_method_call *c, int which) {
  const qs_image *in = &c->in[0];
  size_t px = in->frames * in->rows * in->cols;
  fake[which].calls++;
  if (in->frames == 1 && in->rows <= 64) fake[which].small_calls++;
  fake_now += fake[which].fixed + fake[which].per_px * (int64_t)px;
  if (fake[which].fail) {
    snprintf(c->err, c->err_len, "fake %d failed on purpose", which);
    return fake[which].fail;
  }
  double scale = c->p[0] + c->p[1] + (c->p[2] - 1) + c->p[3];
  for (size_t i = 0; i < px; i++)
    c->out[0].data[i] = (float)(in->data[i] * scale) + (float)fake[which].wrong;
  return QS_OK;
}

#define FAKE_RUN(name, which)                                                 \
  static int name(const qs_method_call *c) { return fake_body(c, which); }
FAKE_RUN(run_serial, F_SERIAL)
FAKE_RUN(run_threaded, F_THREADED)
FAKE_RUN(run_dynamic, F_DYNAMIC)
FAKE_RUN(run_flaky, F_FLAKY)
FAKE_RUN(run_opencl, F_OPENCL)
FAKE_RUN(run_locked, F_LOCKED)

static int probe_locked(const qs_method_call *c, char *why, size_t len) {
  (void)c;
  snprintf(why, len, "locked by the test");
  return 1;
}

static int fake_shape(const qs_image *in, const double *p, qs_image *out,
                      char *err, size_t len) {
  (void)p;
  if (in[0].rows < 4) {
    snprintf(err, len, "input stack has %zu rows, needs at least 4",
             in[0].rows);
    return QS_ESHAPE;
  }
  out[0].frames = in[0].frames;
  out[0].rows = in[0].rows;
  out[0].cols = in[0].cols;
  return QS_OK;
}

static const qs_param_def fake_params[] = {
    {"scale", QS_PARAM_FLOAT, 2, 0, 100, QS_PARAM_MIN_OPEN, NULL, "factor"},
    {"mode", QS_PARAM_ENUM, 0, 0, 0, 0, "copy|add", "mode"},
    {"iters", QS_PARAM_INT, 1, 1, 10, 0, NULL, "iterations"},
    {"flag", QS_PARAM_BOOL, 0, 0, 0, 0, NULL, "a switch"},
};
static const qs_impl_def fake_impls[] = {
    {"serial", QS_IMPL_SERIAL, run_serial, NULL, 1, QS_SCHED_STATIC, 0},
    {"threaded", QS_IMPL_THREADED, run_threaded, NULL, 1, QS_SCHED_STATIC, 0},
    {"threaded_dynamic", QS_IMPL_THREADED, run_dynamic, NULL, 1,
     QS_SCHED_DYNAMIC, 4},
    {"flaky", QS_IMPL_COMPOSITE, run_flaky, NULL, 1, QS_SCHED_STATIC, 0},
    {"opencl", QS_IMPL_OPENCL, run_opencl, NULL, 1, QS_SCHED_STATIC, 0},
    {"locked", QS_IMPL_SERIAL, run_locked, probe_locked, 1, QS_SCHED_STATIC,
     0},
};
static const qs_slot_def fake_in[] = {{"stack", "input"}};
static const qs_slot_def fake_out[] = {{"out", "output"}};
static const qs_method_desc fake_desc = {
    .name = "fake",
    .doc = "scales its input",
    .inputs = fake_in,
    .n_inputs = 1,
    .outputs = fake_out,
    .n_outputs = 1,
    .params = fake_params,
    .n_params = 4,
    .impls = fake_impls,
    .n_impls = 6,
    .shape = fake_shape,
    .tolerance = 1e-6,
};

static void fake_reset(void) {
  memset(fake, 0, sizeof fake);
  fake_now = 1000000000;
  /* serial: 1 ms + 10 ns/px; threaded: 2 ms + 3 ns/px; dynamic: 3 ms +
   * 4 ns/px; flaky: 0.5 ms + 1 ns/px (the fastest) */
  int64_t fixed[F_N] = {1000000, 2000000, 3000000, 500000, 1, 1};
  int64_t per_px[F_N] = {10, 3, 4, 1, 1, 1};
  for (int i = 0; i < F_N; i++) fake[i].fixed = fixed[i], fake[i].per_px = per_px[i];
}

/* The fake's fixed costs (0.5 to 3 ms) dwarf its small calls, so the
 * tests of the choice give calibration a budget of 1000 times the
 * predicted call; the default budget has tests of its own. */
static qs_engine *open_fake_share(const char *db, int no_calibration,
                                  double share) {
  qs_engine_options o = {.db_path = db ? db : ":memory:",
                         .threads = 2,
                         .no_opencl = 1,
                         .no_calibration = no_calibration,
                         .seed = 42,
                         .clock_ns = fake_clock,
                         .calibration_share = share};
  qs_engine *e = NULL;
  int rc = qs_engine_open(&e, &o);
  cr_assert_eq(rc, QS_OK, "qs_engine_open: %s", qs_engine_error(e));
  cr_assert_eq(qs_method_register(e, &fake_desc), QS_OK, "%s",
               qs_engine_error(e));
  return e;
}

static qs_engine *open_fake(const char *db, int no_calibration) {
  return open_fake_share(db, no_calibration, 1000.0);
}

static int count_row(void *ctx, const run_row *r) {
  (void)r;
  (*(size_t *)ctx)++;
  return 0;
}

static size_t rows_of(qs_engine *e, const char *impl) {
  cr_assert_eq(engine_flush(e), QS_OK, "%s", qs_engine_error(e));
  size_t n = 0;
  store_filter f = {.method = "fake", .impl = impl};
  cr_assert_eq(store_query(e->store, &f, count_row, &n, NULL, 0), QS_OK);
  return n;
}

typedef struct status_count {
  size_t n;
  int status;
  char error[256];
} status_count;

static int count_status(void *ctx, const run_row *r) {
  status_count *s = ctx;
  if (r->status == s->status) {
    s->n++;
    snprintf(s->error, sizeof s->error, "%s", r->error);
  }
  return 0;
}

static size_t rows_with(qs_engine *e, const char *impl, int status,
                        char *error) {
  cr_assert_eq(engine_flush(e), QS_OK, "%s", qs_engine_error(e));
  status_count s = {.status = status};
  store_filter f = {.method = "fake", .impl = impl};
  cr_assert_eq(store_query(e->store, &f, count_status, &s, NULL, 0), QS_OK);
  if (error) strcpy(error, s.error);
  return s.n;
}

static int run(qs_engine *e, const input *x, const qs_param *p, size_t n_p,
               const char *impl, qs_run_report *rep) {
  qs_run_request rq = {.inputs = &x->im,
                       .n_inputs = 1,
                       .params = p,
                       .n_params = n_p,
                       .impl = impl};
  qs_image out[1];
  int rc = qs_method_run(e, "fake", &rq, out, 1, rep);
  if (rc == QS_OK) {
    cr_assert_not_null(out[0].data);
    cr_assert_eq(out[0].rows, x->im.rows);
    cr_assert_float_eq(out[0].data[1], x->px[1] * 2, 1e-6);
  } else {
    cr_assert_null(out[0].data);
  }
  qs_image_free(&out[0]);
  return rc;
}

/* ------------------------------------------------------------ validation */

Test(dispatch, validation_errors_record_nothing) {
  fake_reset();
  qs_engine *e = open_fake(NULL, 0);
  input x = make_input(2, 16, 16);
  qs_run_report rep;
  qs_run_request rq = {.inputs = &x.im, .n_inputs = 1};
  qs_image out[1];

  cr_assert_eq(qs_method_run(e, "fkae", &rq, out, 1, &rep), QS_ENOMETHOD);
  cr_assert_not_null(strstr(qs_engine_error(e), "fkae"));
  cr_assert_not_null(strstr(qs_engine_error(e), "did you mean fake"));

  qs_param unknown[] = {{"scael", 3, NULL}};
  cr_assert_eq(run(e, &x, unknown, 1, NULL, &rep), QS_EPARAM);
  cr_assert_not_null(strstr(qs_engine_error(e), "scael"));
  cr_assert_not_null(strstr(qs_engine_error(e), "did you mean scale"));

  qs_param bad_type[] = {{"iters", 0, "three"}};
  cr_assert_eq(run(e, &x, bad_type, 1, NULL, &rep), QS_EPARAM);
  cr_assert_not_null(strstr(qs_engine_error(e), "iters"));

  qs_param zero[] = {{"scale", 0, NULL}};
  cr_assert_eq(run(e, &x, zero, 1, NULL, &rep), QS_EPARAM);
  cr_assert_not_null(strstr(qs_engine_error(e), "scale"));
  qs_param nan_p[] = {{"scale", NAN, NULL}};
  cr_assert_eq(run(e, &x, nan_p, 1, NULL, &rep), QS_EPARAM);
  qs_param big[] = {{"iters", 11, NULL}};
  cr_assert_eq(run(e, &x, big, 1, NULL, &rep), QS_EPARAM);
  qs_param bad_enum[] = {{"mode", 0, "mul"}};
  cr_assert_eq(run(e, &x, bad_enum, 1, NULL, &rep), QS_EPARAM);
  cr_assert_not_null(strstr(qs_engine_error(e), "copy|add"));

  rq.n_inputs = 2;
  cr_assert_eq(qs_method_run(e, "fake", &rq, out, 1, &rep), QS_ESHAPE);
  cr_assert_not_null(strstr(qs_engine_error(e), "stack"));
  rq.n_inputs = 1;
  qs_image two[2];
  cr_assert_eq(qs_method_run(e, "fake", &rq, two, 2, &rep), QS_EINVAL);
  cr_assert_not_null(strstr(qs_engine_error(e), "1 output"));

  input thin = make_input(1, 3, 16);
  cr_assert_eq(run(e, &thin, NULL, 0, NULL, &rep), QS_ESHAPE);
  cr_assert_not_null(strstr(qs_engine_error(e), "3 rows"));

  cr_assert_eq(run(e, &x, NULL, 0, "nope", &rep), QS_ENOIMPL);
  cr_assert_not_null(strstr(qs_engine_error(e), "nope"));

  for (int i = 0; i < F_N; i++) cr_assert_eq(fake[i].calls, 0);
  cr_assert_eq(rows_of(e, NULL), 0);
  free(thin.px);
  free(x.px);
  qs_engine_close(e);
}

/* ----------------------------------------------------------------- forced */

Test(dispatch, forced_name_and_kind) {
  fake_reset();
  qs_engine *e = open_fake(NULL, 0);
  input x = make_input(1, 32, 32);
  qs_run_report rep;
  cr_assert_eq(run(e, &x, NULL, 0, "threaded_dynamic", &rep), QS_OK);
  cr_assert_str_eq(rep.impl, "threaded_dynamic");
  cr_assert_str_eq(rep.reason, "forced");
  cr_assert_float_eq(rep.seconds, 3e-3 + 4e-9 * 1024, 1e-12);
  cr_assert_eq(rep.calibration_seconds, 0);

  /* "threaded" names an implementation as well as a kind: the name wins */
  cr_assert_eq(run(e, &x, NULL, 0, "threaded", &rep), QS_OK);
  cr_assert_str_eq(rep.impl, "threaded");
  cr_assert_str_eq(rep.reason, "forced");
  cr_assert_eq(run(e, &x, NULL, 0, "serial", &rep), QS_OK);
  cr_assert_str_eq(rep.impl, "serial");
  cr_assert_eq(run(e, &x, NULL, 0, "cpu", &rep), QS_OK);
  cr_assert_str_neq(rep.impl, "opencl");

  /* unavailable: by name (probe refuses), by kind (no device) */
  cr_assert_eq(run(e, &x, NULL, 0, "locked", &rep), QS_EUNAVAIL);
  cr_assert_not_null(strstr(qs_engine_error(e), "locked by the test"));
  cr_assert_eq(run(e, &x, NULL, 0, "opencl", &rep), QS_EUNAVAIL);
  cr_assert_not_null(strstr(qs_engine_error(e), "OpenCL"));
  cr_assert_eq(fake[F_LOCKED].calls + fake[F_OPENCL].calls, 0);
  free(x.px);
  qs_engine_close(e);
}

/* ------------------------------------------------------------ calibration */

Test(dispatch, calibration_once_per_cold_impl) {
  fake_reset();
  qs_engine *e = open_fake(NULL, 0);
  input x = make_input(4, 512, 512);
  qs_run_report rep;
  cr_assert_eq(run(e, &x, NULL, 0, NULL, &rep), QS_OK, "%s",
               qs_engine_error(e));
  cr_assert_str_eq(rep.reason, "calibration");
  cr_assert_gt(rep.calibration_seconds, 0);
  /* large work: threaded kinds first, the one declared last
   * (threaded_dynamic) leading, on the 32x32 slice and (nothing being
   * known) on 64x64 to predict the call; then the three others on 32x32,
   * and on a second slice as large as the budget allows: 8x per side */
  for (int i = 0; i <= F_FLAKY; i++)
    cr_assert_eq(fake[i].small_calls, i == F_DYNAMIC ? 2 : 1, "impl %d: %d",
                 i, fake[i].small_calls);
  /* flaky is fastest at every size: chosen on the full input */
  cr_assert_str_eq(rep.impl, "flaky");
  cr_assert_eq(fake[F_FLAKY].calls, 3);
  /* calibration: the four on 32x32, threaded_dynamic on 64x64, flaky on
   * 256x256; serial and threaded (1 and 2 ms on 32x32) are hopeless: with
   * as much fixed cost as a CPU kind may carry (1 ms), the rest scaled,
   * their bounds are over the best predicted (flaky's 0.5 ms scaled as
   * dynamic's two sizes scale: 1.2 ms), so they get no second size */
  cr_assert_float_eq(rep.calibration_seconds,
                     6.5e-3 + 18e-9 * 1024 + 3e-3 + 4e-9 * 4096 + 0.5e-3 +
                         1e-9 * 65536,
                     1e-12, "%.12f", rep.calibration_seconds);
  cr_assert_eq(rep.calibration_once_seconds, 0);

  /* warm: no calibration again, for this size or another */
  cr_assert_eq(run(e, &x, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_str_eq(rep.reason, "history");
  cr_assert_eq(rep.calibration_seconds, 0);
  input y = make_input(2, 256, 300);
  cr_assert_eq(run(e, &y, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_str_eq(rep.reason, "model");
  for (int i = 0; i <= F_FLAKY; i++)
    cr_assert_eq(fake[i].small_calls, i == F_DYNAMIC ? 2 : 1);
  cr_assert_eq(rep.n_estimates, F_N);
  cr_assert_str_eq(rep.estimates[F_OPENCL].source, "unavailable");
  /* serial was timed on one slice: scaled; flaky on three keys */
  cr_assert_str_eq(rep.estimates[F_SERIAL].source, "scaled");
  cr_assert_eq(rep.estimates[F_SERIAL].runs, 1);
  cr_assert_str_eq(rep.estimates[F_FLAKY].source, "model");
  free(x.px);
  free(y.px);
  qs_engine_close(e);
}

Test(dispatch, no_calibration_uses_static_order) {
  fake_reset();
  qs_engine *e = open_fake(NULL, 1);
  input small = make_input(1, 16, 16), large = make_input(2, 512, 512);
  qs_run_report rep;
  cr_assert_eq(run(e, &small, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_str_eq(rep.reason, "static");
  cr_assert_str_eq(rep.impl, "serial");
  cr_assert_eq(run(e, &large, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_str_eq(rep.reason, "static");
  cr_assert_str_eq(rep.impl, "threaded");
  cr_assert_eq(rep.calibration_seconds, 0);
  for (int i = 0; i < F_N; i++) cr_assert_eq(fake[i].small_calls, i == 0);
  free(small.px);
  free(large.px);
  qs_engine_close(e);
}

/* --------------------------------------------------------------- failures */

Test(dispatch, failing_impl_falls_back_and_is_retried) {
  fake_reset();
  qs_engine *e = open_fake(NULL, 0);
  input x = make_input(1, 128, 128);
  qs_run_report rep;
  cr_assert_eq(run(e, &x, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_str_eq(rep.impl, "flaky");
  fake[F_FLAKY].fail = QS_EFAIL;
  cr_assert_eq(run(e, &x, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_str_eq(rep.reason, "fallback");
  cr_assert_eq(rep.fallbacks, 1);
  cr_assert_str_eq(rep.impl, "serial"); /* next best at 16384 px */
  char error[256];
  cr_assert_eq(rows_with(e, "flaky", QS_EFAIL, error), 1);
  cr_assert_not_null(strstr(error, "failed on purpose"));

  /* skipped for the next 20 runs of the method, then tried once more */
  int calls = fake[F_FLAKY].calls;
  for (int i = 0; i < 20; i++) {
    cr_assert_eq(run(e, &x, NULL, 0, NULL, &rep), QS_OK);
    cr_assert_str_eq(rep.impl, "serial");
    cr_assert_str_eq(rep.estimates[F_FLAKY].source, "failed");
  }
  cr_assert_eq(fake[F_FLAKY].calls, calls);
  fake[F_FLAKY].fail = 0;
  cr_assert_eq(run(e, &x, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_str_eq(rep.impl, "flaky");
  cr_assert_eq(fake[F_FLAKY].calls, calls + 1);

  /* a forced implementation that fails is an error, recorded */
  fake[F_SERIAL].fail = QS_EFAIL;
  cr_assert_eq(run(e, &x, NULL, 0, "serial", &rep), QS_EFAIL);
  cr_assert_not_null(strstr(qs_engine_error(e), "failed on purpose"));
  cr_assert_eq(rows_with(e, "serial", QS_EFAIL, NULL), 1);

  /* every implementation failing: the call fails, each recorded */
  for (int i = 0; i < F_N; i++) fake[i].fail = QS_EFAIL;
  input y = make_input(1, 64, 64);
  cr_assert_eq(run(e, &y, NULL, 0, NULL, &rep), QS_EFAIL);
  free(x.px);
  free(y.px);
  qs_engine_close(e);
}

Test(dispatch, device_memory_skips_larger_work) {
  fake_reset();
  qs_engine *e = open_fake(NULL, 0);
  input x = make_input(1, 128, 128), big = make_input(1, 256, 256),
        small = make_input(1, 64, 64);
  qs_run_report rep;
  cr_assert_eq(run(e, &x, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_str_eq(rep.impl, "flaky");
  fake[F_FLAKY].fail = QS_EDEVMEM;
  cr_assert_eq(run(e, &x, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_str_eq(rep.reason, "fallback");
  fake[F_FLAKY].fail = 0;
  cr_assert_eq(run(e, &big, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_str_neq(rep.impl, "flaky");
  cr_assert_str_eq(rep.estimates[F_FLAKY].source, "device_memory");
  cr_assert_eq(run(e, &small, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_str_eq(rep.impl, "flaky");
  free(x.px);
  free(big.px);
  free(small.px);
  qs_engine_close(e);
}

/* -------------------------------------------------------------------- key */

Test(dispatch, key_changes_with_every_parameter) {
  double base[4] = {2, 0, 1, 0};
  qs_image im = qs_image_wrap(NULL, 2, 16, 16);
  char k0[QS_KEY_MAX], k1[QS_KEY_MAX];
  cr_assert_eq(key_text(&fake_desc, &im, base, k0, sizeof k0), QS_OK);
  cr_assert_str_eq(k0, "fake(2x16x16;scale=2;mode=copy;iters=1;flag=false)");
  const double other[4] = {2.5, 1, 2, 1};
  for (int i = 0; i < 4; i++) {
    double p[4];
    memcpy(p, base, sizeof p);
    p[i] = other[i];
    cr_assert_eq(key_text(&fake_desc, &im, p, k1, sizeof k1), QS_OK);
    cr_assert_str_neq(k0, k1, "parameter %s", fake_params[i].name);
  }
  qs_image im2 = qs_image_wrap(NULL, 2, 16, 17);
  cr_assert_eq(key_text(&fake_desc, &im2, base, k1, sizeof k1), QS_OK);
  cr_assert_str_neq(k0, k1);
  cr_assert_eq(key_text(&fake_desc, &im, base, k1, 10), QS_EOVERFLOW);

  char *json = key_json(&fake_desc, base);
  cr_assert_str_eq(json, "{\"scale\":2,\"mode\":\"copy\",\"iters\":1,"
                         "\"flag\":false}");
  free(json);
}

/* ---------------------------------------------------------------- persist */

Test(dispatch, history_persists_across_close_open) {
  fake_reset();
  char path[] = "/tmp/qs_dispatch_XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  unlink(path);
  input x = make_input(2, 128, 128); /* slices: other keys */
  qs_run_report rep;
  qs_engine *e = open_fake(path, 0);
  cr_assert_eq(run(e, &x, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_str_eq(rep.reason, "calibration");
  cr_assert_str_eq(rep.impl, "flaky");
  qs_engine_close(e);

  memset(fake, 0, sizeof fake);
  fake_reset();
  e = open_fake(path, 0);
  cr_assert_eq(run(e, &x, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_str_eq(rep.reason, "history");
  cr_assert_str_eq(rep.impl, "flaky");
  for (int i = 0; i < F_N; i++) cr_assert_eq(fake[i].small_calls, 0);
  cr_assert_eq(rep.estimates[F_FLAKY].runs, 1);
  qs_engine_close(e);

  char side[sizeof path + 8];
  unlink(path);
  snprintf(side, sizeof side, "%s-wal", path);
  unlink(side);
  snprintf(side, sizeof side, "%s-shm", path);
  unlink(side);
  free(x.px);
}

/* -------------------------------------------------------------- benchmark */

Test(dispatch, benchmark_ranks_and_records_mismatch) {
  fake_reset();
  qs_engine *e = open_fake(NULL, 0);
  fake[F_DYNAMIC].wrong = 1;
  input x = make_input(1, 64, 64);
  qs_run_request rq = {.inputs = &x.im, .n_inputs = 1};
  qs_bench_result br;
  cr_assert_eq(qs_method_benchmark(e, "fake", &rq, NULL, 1, 5, &br), QS_OK,
               "%s", qs_engine_error(e));
  cr_assert_eq(br.n, 4); /* locked and opencl are not available */
  cr_assert_str_eq(br.entries[0].impl, "flaky");
  cr_assert_str_eq(br.entries[1].impl, "serial");
  cr_assert_str_eq(br.entries[2].impl, "threaded");
  cr_assert_str_eq(br.entries[3].impl, "threaded_dynamic");
  cr_assert_eq(br.entries[3].status, QS_EMISMATCH);
  cr_assert_gt(br.entries[3].max_rel_diff, 1e-3);
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(br.entries[i].status, QS_OK);
    cr_assert_eq(br.entries[i].runs, 5);
    cr_assert_leq(br.entries[i].max_rel_diff, 1e-6);
  }
  cr_assert_float_eq(br.entries[1].median, 1e-3 + 10e-9 * 4096, 1e-12);
  cr_assert_eq(rows_with(e, "threaded_dynamic", QS_EMISMATCH, NULL), 5);
  cr_assert_eq(rows_with(e, "serial", QS_OK, NULL), 5);

  /* never chosen for that key, even when made fastest */
  fake[F_DYNAMIC].fixed = 0;
  fake[F_DYNAMIC].per_px = 0;
  qs_run_report rep;
  fake[F_DYNAMIC].wrong = 0;
  cr_assert_eq(run(e, &x, NULL, 0, "cpu", &rep), QS_OK);
  cr_assert_str_eq(rep.impl, "flaky"); /* the agent, among the CPU ones */
  cr_assert_str_eq(rep.reason, "history");
  cr_assert_str_eq(rep.estimates[F_DYNAMIC].source, "mismatch");

  /* selection by names */
  cr_assert_eq(qs_method_benchmark(e, "fake", &rq, "serial,flaky", 0, 2, &br),
               QS_OK);
  cr_assert_eq(br.n, 2);
  cr_assert_eq(qs_method_benchmark(e, "fake", &rq, "bogus", 0, 2, &br),
               QS_ENOIMPL);
  free(x.px);
  qs_engine_close(e);
}

Test(dispatch, listing) {
  fake_reset();
  qs_engine *e = open_fake(NULL, 0);
  cr_assert_geq(qs_method_count(e), 1);
  cr_assert_eq(qs_method_find(e, "fake"), &fake_desc);
  cr_assert_eq(qs_method_at(e, qs_method_count(e) - 1), &fake_desc);
  cr_assert_null(qs_method_find(e, "nope"));
  cr_assert_eq(qs_method_register(e, &fake_desc), QS_EEXISTS);
  qs_impl_info info[QS_MAX_ESTIMATES];
  size_t n = 0;
  cr_assert_eq(qs_method_impls(e, "fake", info, QS_MAX_ESTIMATES, &n), QS_OK);
  cr_assert_eq(n, F_N);
  cr_assert_str_eq(info[F_LOCKED].why, "locked by the test");
  cr_assert_eq(info[F_LOCKED].available, 0);
  cr_assert_eq(info[F_OPENCL].available, 0);
  cr_assert_eq(info[F_SERIAL].available, 1);
  cr_assert_eq(strncmp(info[F_SERIAL].device, "cpu-", 4), 0);
  cr_assert_eq(qs_method_impls(e, "nope", info, 1, &n), QS_ENOMETHOD);
  qs_engine_close(e);
}

/* ------------------------------------------------------------------ delay */

Test(dispatch, threaded_delay_flags_every_schedule) {
  fake_reset();
  qs_engine *e = open_fake(NULL, 0);
  input x = make_input(1, 64, 64);
  qs_run_report rep;
  for (int i = 0; i < 25; i++)
    cr_assert_eq(run(e, &x, NULL, 0, "threaded", &rep), QS_OK);
  mstate *m = registry_find(e, "fake");
  char key[QS_KEY_MAX];
  const double defaults[4] = {2, 0, 1, 0};
  cr_assert_eq(key_text(&fake_desc, &x.im, defaults, key, sizeof key), QS_OK);
  hist *th = hist_get(m, F_THREADED, key, 0, 0);
  cr_assert_not_null(th);
  cr_assert_eq(th->delayed, 0);

  fake[F_THREADED].fixed *= 3; /* 6 ms against a steady 2.012 ms */
  cr_assert_eq(run(e, &x, NULL, 0, "threaded", &rep), QS_OK);
  cr_assert_eq(th->delayed, 1);
  cr_assert_float_eq(th->factor, (6e-3 + 3e-9 * 4096) / (2e-3 + 3e-9 * 4096),
                     1e-9);
  hist *dyn = hist_get(m, F_DYNAMIC, key, 0, 0);
  cr_assert_not_null(dyn);
  cr_assert_eq(dyn->delayed, 1, "a threaded delay flags every schedule");
  cr_assert_eq(dyn->factor, th->factor);
  hist *ser = hist_get(m, F_SERIAL, key, 0, 0);
  cr_assert(!ser || !ser->delayed);

  fake[F_THREADED].fixed /= 3;
  cr_assert_eq(run(e, &x, NULL, 0, "threaded", &rep), QS_OK);
  cr_assert_eq(th->delayed, 0);
  cr_assert_eq(dyn->delayed, 0);
  free(x.px);
  qs_engine_close(e);
}

/* ---------------------------------------------------------- corrupt store */

Test(dispatch, corrupt_store_gives_usable_handle) {
  fake_reset();
  char path[] = "/tmp/qs_corrupt_XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  char junk[4096];
  memset(junk, 'x', sizeof junk);
  cr_assert_eq(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
  close(fd);
  qs_engine_options o = {
      .db_path = path, .no_opencl = 1, .clock_ns = fake_clock};
  qs_engine *e = NULL;
  cr_assert_eq(qs_engine_open(&e, &o), QS_ECORRUPT);
  cr_assert_not_null(e);
  cr_assert_not_null(strstr(qs_engine_error(e), path), "%s",
                     qs_engine_error(e));
  /* still usable: runs are served, just not recorded */
  cr_assert_eq(qs_method_register(e, &fake_desc), QS_OK);
  input x = make_input(1, 32, 32);
  qs_run_report rep;
  cr_assert_eq(run(e, &x, NULL, 0, "serial", &rep), QS_OK);
  qs_engine_close(e);
  /* the file is left as it was, for the caller to move aside */
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f);
  cr_assert_eq(fread(junk, 1, sizeof junk, f), sizeof junk);
  fclose(f);
  cr_assert_eq(junk[0], 'x');
  unlink(path);
  free(x.px);
}

/* ------------------------------------------------------------- the rows */

typedef struct row_copy {
  size_t n;
  char impl[64], device[64], key[256], params[256], error[256];
  int version, status;
  double work, wall, stamp;
} row_copy;

static int copy_row(void *ctx, const run_row *r) {
  row_copy *c = ctx;
  if (c->n++) return 0;
  snprintf(c->impl, sizeof c->impl, "%s", r->impl);
  snprintf(c->device, sizeof c->device, "%s", r->device);
  snprintf(c->key, sizeof c->key, "%s", r->key);
  snprintf(c->params, sizeof c->params, "%s", r->params);
  snprintf(c->error, sizeof c->error, "%s", r->error);
  c->version = r->impl_version;
  c->status = r->status;
  c->work = r->work;
  c->wall = r->wall;
  c->stamp = r->stamp;
  return 0;
}

Test(dispatch, run_rows_carry_the_call) {
  fake_reset();
  qs_engine *e = open_fake(NULL, 0);
  input x = make_input(2, 16, 32);
  qs_param p[] = {{"mode", 0, "add"}, {"flag", 1, NULL}};
  qs_run_report rep;
  qs_run_request rq = {.inputs = &x.im,
                       .n_inputs = 1,
                       .params = p,
                       .n_params = 2,
                       .impl = "threaded"};
  qs_image out[1];
  cr_assert_eq(qs_method_run(e, "fake", &rq, out, 1, &rep), QS_OK);
  /* scale 2 + add 1 + flag 1 */
  cr_assert_float_eq(out[0].data[3], x.px[3] * 4, 1e-6);
  qs_image_free(&out[0]);
  cr_assert_eq(engine_flush(e), QS_OK, "%s", qs_engine_error(e));
  row_copy c = {0};
  store_filter f = {.method = "fake"};
  cr_assert_eq(store_query(e->store, &f, copy_row, &c, NULL, 0), QS_OK);
  cr_assert_eq(c.n, 1);
  cr_assert_str_eq(c.impl, "threaded");
  cr_assert_eq(strncmp(c.device, "cpu-", 4), 0);
  cr_assert_eq(strlen(c.device), 20);
  cr_assert_str_eq(c.key, "fake(2x16x32;scale=2;mode=add;iters=1;flag=true)");
  cr_assert_str_eq(c.params,
                   "{\"scale\":2,\"mode\":\"add\",\"iters\":1,\"flag\":true}");
  cr_assert_eq(c.version, 1);
  cr_assert_eq(c.status, QS_OK);
  cr_assert_str_eq(c.error, "");
  cr_assert_eq(c.work, 1024); /* output pixels */
  cr_assert_float_eq(c.wall, 2e-3 + 3e-9 * 1024, 1e-12);
  cr_assert_gt(c.stamp, 1.6e9); /* unix seconds */
  free(x.px);
  qs_engine_close(e);
}

Test(dispatch, delay_explores_then_clears) {
  fake_reset();
  qs_engine *e = open_fake(NULL, 0);
  input x = make_input(1, 64, 64);
  qs_run_report rep;
  /* serial 1.041 ms against threaded 2.012 ms (both timed on this key):
   * serial wins */
  for (int i = 0; i < 3; i++) {
    cr_assert_eq(run(e, &x, NULL, 0, "threaded", &rep), QS_OK);
    cr_assert_eq(run(e, &x, NULL, 0, "serial", &rep), QS_OK);
  }
  for (int i = 0; i < 25; i++) {
    cr_assert_eq(run(e, &x, NULL, 0, "serial,threaded", &rep), QS_OK);
    cr_assert_str_eq(rep.impl, "serial");
  }
  cr_assert_str_eq(rep.reason, "history");
  /* one 4 ms run of serial: a delay of factor 3.84 with p = 1/2, so serial
   * is expected at 2.52 ms, above threaded: the engine explores */
  int64_t fixed = fake[F_SERIAL].fixed;
  fake[F_SERIAL].fixed = 4000000 - 10 * 4096;
  cr_assert_eq(run(e, &x, NULL, 0, "serial,threaded", &rep), QS_OK);
  fake[F_SERIAL].fixed = fixed;
  int explored = 0, serial_again = 0;
  for (int i = 0; i < 50 && !serial_again; i++) {
    cr_assert_eq(run(e, &x, NULL, 0, "serial,threaded", &rep), QS_OK);
    cr_assert_str_eq(rep.reason, "exploration");
    explored++;
    serial_again = !strcmp(rep.impl, "serial");
  }
  cr_assert(serial_again, "serial never explored again in 50 calls");
  /* that normal serial run cleared the flag: back to plain history */
  cr_assert_eq(run(e, &x, NULL, 0, "serial,threaded", &rep), QS_OK);
  cr_assert_str_eq(rep.reason, "history");
  cr_assert_str_eq(rep.impl, "serial");
  cr_assert_geq(explored, 1);
  free(x.px);
  qs_engine_close(e);
}

/* The default budget: 10 % of the predicted call, at least 0.5 ms (a fifth
 * of that after the key's first 10 calls); only the first run and a run
 * already started overshoot it. Implementations left out are passed over,
 * and later calls calibrate them as the account allows. */
Test(dispatch, calibration_budget_bounds_each_call) {
  fake_reset();
  qs_engine *e = open_fake_share(NULL, 0, 0);
  input x = make_input(1, 128, 128);
  qs_run_report rep;
  /* four candidates, 10 %: a slice holds at most 1/80 of the call, so
   * 32x32 (1/16) is halved twice: 8x8. Small work: serial first, on 8x8
   * and 16x16 (nothing known: two sizes predict the call at 1.16 ms, so
   * the budget is the 0.5 ms floor), which they use up */
  const double serial_8 = 1e-3 + 10e-9 * 64, serial_16 = 1e-3 + 10e-9 * 256;
  cr_assert_eq(run(e, &x, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_float_eq(rep.calibration_seconds, serial_8 + serial_16, 1e-12);
  cr_assert_eq(fake[F_THREADED].calls + fake[F_DYNAMIC].calls +
                   fake[F_FLAKY].calls,
               0);
  cr_assert_str_eq(rep.impl, "serial");
  cr_assert_str_eq(rep.estimates[F_SERIAL].source, "model");
  cr_assert_float_eq(rep.estimates[F_SERIAL].seconds, 1e-3 + 10e-9 * 16384,
                     1e-12);
  cr_assert_str_eq(rep.estimates[F_FLAKY].source, "none");
  /* Later calls start a cold candidate on the least slice (8x8) only
   * while the account (each call's 0.5 ms less what calibration spent,
   * the first call's runs included) is not in debt and covers 4x the
   * cheapest run there (serial's 1 ms): dynamic (the threaded kind
   * declared last), overshooting (this fake's fixed costs exceed the
   * call), and, once the debt is paid back, threaded. dynamic is then
   * hopeless (with at most 1 ms of a CPU kind's time fixed, its bound
   * scales past serial's 1.16 ms). After the key's first 10 calls each
   * adds a fifth of that (CALIB_LATE): 0.1 ms never covers 4 ms, so the
   * rest wait (the goals: at most 10 % of calls 1-10 calibrating, 2 % of
   * calls 11-30), and calibration over calls 1..k never exceeds their
   * budgets by more than the first call's runs and one slice run. */
  const double overshoot = 3e-3 + 4e-9 * 64; /* dynamic's slice run */
  double calib = rep.calibration_seconds, late = 0;
  int idle = 0;
  for (int k = 2; k <= 60; k++) {
    cr_assert_eq(run(e, &x, NULL, 0, NULL, &rep), QS_OK);
    calib += rep.calibration_seconds;
    if (k > 10) late += rep.calibration_seconds;
    idle += rep.calibration_seconds == 0;
    cr_assert_leq(calib, 0.5e-3 * k + serial_8 + serial_16 + overshoot + 1e-12,
                  "calls 1-%d calibrated %.9f s", k, calib);
    cr_assert_str_eq(rep.impl, "serial", "call %d", k);
  }
  /* the debt of the first call's runs: call 2 calibrates nothing */
  cr_assert_geq(idle, 1);
  cr_assert_eq(fake[F_DYNAMIC].calls, 1);
  cr_assert_leq(fake[F_THREADED].calls, 1);
  cr_assert_leq(late, 0.1e-3 * 50 + overshoot, "calls 11-60: %.9f s", late);
  qs_engine_close(e);

  /* an absolute cap below the floor: the first candidate's two runs, the
   * ones needed for any prediction, and nothing after them */
  fake_reset();
  qs_engine_options o = {.db_path = ":memory:",
                         .threads = 2,
                         .no_opencl = 1,
                         .seed = 1,
                         .clock_ns = fake_clock,
                         .calibration_budget = 1e-4};
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  cr_assert_eq(qs_method_register(e, &fake_desc), QS_OK);
  cr_assert_eq(run(e, &x, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_float_eq(rep.calibration_seconds, serial_8 + serial_16, 1e-12);
  cr_assert_str_eq(rep.impl, "serial");
  free(x.px);
  qs_engine_close(e);
}

/* A candidate starts only while the budget left covers CALIB_NEXT (4)
 * times the slowest small-slice run so far: with 8 ms, threaded_dynamic's
 * two runs (32x32 and 64x64, about 3 ms each) leave 2 ms, and nothing else
 * starts (threaded, 2 ms, would have overshot the budget). */
Test(dispatch, calibration_starts_nothing_the_budget_left_cannot_cover) {
  fake_reset();
  qs_engine_options o = {.db_path = ":memory:",
                         .threads = 2,
                         .no_opencl = 1,
                         .seed = 1,
                         .clock_ns = fake_clock,
                         .calibration_share = 1000,
                         .calibration_budget = 8e-3};
  qs_engine *e = NULL;
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  cr_assert_eq(qs_method_register(e, &fake_desc), QS_OK);
  input x = make_input(4, 512, 512);
  qs_run_report rep;
  cr_assert_eq(run(e, &x, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_float_eq(rep.calibration_seconds,
                     3e-3 + 4e-9 * 1024 + 3e-3 + 4e-9 * 4096, 1e-12, "%.9f",
                     rep.calibration_seconds);
  cr_assert_str_eq(rep.impl, "threaded_dynamic");
  cr_assert_eq(fake[F_THREADED].calls + fake[F_FLAKY].calls +
                   fake[F_SERIAL].calls,
               0);
  qs_engine_close(e);
  /* with 20 ms, 14 ms left cover 4 x 3 ms: threaded runs (2 ms); then 12
   * ms left fall short of 4 x 3.004 ms and flaky and serial wait.
   * threaded gets no second size: a CPU kind is taken to carry at most
   * AGENT_CPU_FIXED (1 ms) of fixed cost, so its 2 ms on 32x32 scale to
   * 0.87 s at best, hopeless against dynamic's 7.2 ms (this fake's 2 ms
   * fixed cost is beyond that prior: threaded's true 5.1 ms is missed,
   * flaky, the fastest, is what the later calls find) */
  fake_reset();
  o.calibration_budget = 20e-3;
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  cr_assert_eq(qs_method_register(e, &fake_desc), QS_OK);
  cr_assert_eq(run(e, &x, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_eq(fake[F_THREADED].small_calls, 1);
  cr_assert_eq(fake[F_FLAKY].calls + fake[F_SERIAL].calls, 0);
  cr_assert_float_eq(rep.calibration_seconds,
                     3e-3 + 4e-9 * 1024 + 3e-3 + 4e-9 * 4096 + 2e-3 +
                         3e-9 * 1024,
                     1e-12, "%.9f", rep.calibration_seconds);
  free(x.px);
  qs_engine_close(e);
}

/* -------------------------------------------- serial runs on one thread */

static int workers_seen;

/* Notes its worker. With ctx set (a loop on two threads), the calling
 * thread's part (worker 0) waits, up to 10 s, for the other worker to
 * take its part: a worker that wakes after the caller has done its own
 * part leaves the loop to the caller (pool.c), and under valgrind, which
 * runs one thread at a time, a sleeping worker woke too late for 50 loops
 * in a row. */
static int note_worker(void *ctx, size_t b, size_t e, int w) {
  (void)b, (void)e;
  __atomic_or_fetch(&workers_seen, 1 << w, __ATOMIC_RELAXED);
  if (!ctx || w != 0) return 0;
  int64_t until = qs_timer_ns() + 10000000000LL;
  while (!(__atomic_load_n(&workers_seen, __ATOMIC_RELAXED) & 2) &&
         qs_timer_ns() < until)
    sched_yield();
  return 0;
}

static int run_workers(const qs_method_call *c) {
  c->out[0].data[0] = (float)c->threads;
  return c->parallel_for(c, 0, 1000, note_worker,
                         c->threads > 1 ? (void *)c : NULL);
}

static const qs_impl_def workers_impls[] = {
    {"serial", QS_IMPL_SERIAL, run_workers, NULL, 1, QS_SCHED_STATIC, 0},
    {"threaded", QS_IMPL_THREADED, run_workers, NULL, 1, QS_SCHED_STATIC, 0},
};
/* A one-input, one-output method of the fake's shape around `impls`, and
 * an engine (2 threads, no OpenCL, store in memory) that has it. */
#define PROBE_DESC(var, nm, text, list)                                       \
  static const qs_method_desc var = {.name = nm,                              \
                                     .doc = text,                             \
                                     .inputs = fake_in,                       \
                                     .n_inputs = 1,                           \
                                     .outputs = fake_out,                     \
                                     .n_outputs = 1,                          \
                                     .impls = list,                           \
                                     .n_impls = sizeof list / sizeof list[0], \
                                     .shape = fake_shape,                     \
                                     .tolerance = 1e-6}

static qs_engine *open_probe(const qs_method_desc *d) {
  qs_engine_options o = {
      .db_path = ":memory:", .threads = 2, .no_opencl = 1, .seed = 1};
  qs_engine *e = NULL;
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK, "%s", qs_engine_error(e));
  cr_assert_eq(qs_method_register(e, d), QS_OK, "%s", qs_engine_error(e));
  return e;
}

PROBE_DESC(workers_desc, "workers", "notes which pool workers its loop ran on",
           workers_impls);

Test(dispatch, serial_loops_stay_on_the_calling_thread) {
  qs_engine *e = open_probe(&workers_desc);
  float px[4 * 4] = {0};
  qs_image in = qs_image_wrap(px, 1, 4, 4), out;
  const char *impls[] = {"serial", "threaded"};
  const int want_threads[] = {1, 2}, want_seen[] = {1, 3};
  for (int i = 0; i < 2; i++) {
    qs_run_request rq = {.inputs = &in, .n_inputs = 1, .impl = impls[i]};
    for (int k = 0; k < 5; k++) {
      workers_seen = 0;
      cr_assert_eq(qs_method_run(e, "workers", &rq, &out, 1, NULL), QS_OK,
                   "%s", qs_engine_error(e));
      cr_assert_eq((int)out.data[0], want_threads[i], "%s sees %g threads",
                   impls[i], out.data[0]);
      qs_image_free(&out);
      cr_assert_eq(workers_seen, want_seen[i], "%s ran on workers %#x",
                   impls[i], workers_seen);
    }
  }
  qs_engine_close(e);
}

/* The resident share of an output's pages and whether they read zero, as
 * its implementation finds them at the start of its run. */
static double resident_seen = -1;
static int zero_seen;

static int run_resident(const qs_method_call *c) {
  const qs_image *o = &c->out[0];
  size_t bytes = o->frames * o->rows * o->cols * sizeof(float);
  long page = sysconf(_SC_PAGESIZE);
  uintptr_t lo = (uintptr_t)o->data & ~(uintptr_t)(page - 1);
  size_t len = (uintptr_t)o->data + bytes - lo;
  size_t pages = (len + (size_t)page - 1) / (size_t)page;
  unsigned char *vec = malloc(pages);
  if (!vec || mincore((void *)lo, len, vec)) {
    free(vec);
    return QS_EFAIL;
  }
  size_t in = 0;
  for (size_t i = 0; i < pages; i++) in += vec[i] & 1;
  free(vec);
  resident_seen = (double)in / (double)pages;
  zero_seen = 1;
  for (size_t i = 0; i < bytes / sizeof(float); i += 1024)
    zero_seen &= o->data[i] == 0.0f;
  for (size_t i = 0; i < bytes / sizeof(float); i++) o->data[i] = 1.0f;
  return QS_OK;
}

static const qs_impl_def resident_impls[] = {
    {"serial", QS_IMPL_SERIAL, run_resident, NULL, 1, QS_SCHED_STATIC, 0},
};
PROBE_DESC(resident_desc, "resident",
           "reports how much of its output is resident when it starts",
           resident_impls);

/* A large fresh output has its pages provided before the timed run (one
 * write per page over the pool), so that the kernel's and the host's cost
 * of fresh memory is not timed as the implementation's; it still reads as
 * zeros. */
Test(dispatch, large_outputs_are_resident_before_the_run) {
  qs_engine *e = open_probe(&resident_desc);
  input x = make_input(4, 1024, 1024); /* 16 MiB output */
  qs_run_request rq = {.inputs = &x.im, .n_inputs = 1, .impl = "serial"};
  qs_image out;
  cr_assert_eq(qs_method_run(e, "resident", &rq, &out, 1, NULL), QS_OK, "%s",
               qs_engine_error(e));
  cr_assert_eq(resident_seen, 1.0, "%.3f of the output was resident",
               resident_seen);
  cr_assert(zero_seen, "the output did not start as zeros");
  cr_assert_eq(out.data[4 * 1024 * 1024 - 1], 1.0f);
  qs_image_free(&out);
  free(x.px);
  qs_engine_close(e);
}

/* ------------------------------------------------------- public API calls */

Test(dispatch, kind_names_and_nearest_names) {
  cr_assert_str_eq(qs_impl_kind_name(QS_IMPL_SERIAL), "serial");
  cr_assert_str_eq(qs_impl_kind_name(QS_IMPL_THREADED), "threaded");
  cr_assert_str_eq(qs_impl_kind_name(QS_IMPL_OPENCL), "opencl");
  cr_assert_str_eq(qs_impl_kind_name(QS_IMPL_COMPOSITE), "composite");
  cr_assert_str_eq(qs_impl_kind_name(QS_IMPL_KIND_COUNT), "unknown");
  cr_assert_str_eq(qs_impl_kind_name((qs_impl_kind)-1), "unknown");
  qs_engine *e = open_fake(NULL, 0);
  cr_assert_str_eq(qs_method_nearest_name(e, "fkae"), "fake");
  cr_assert_str_eq(qs_method_nearest_name(e, "roberts_cros"), "roberts_cross");
  cr_assert_null(qs_method_nearest_name(e, "zzzzzzzzzzzz"));
  cr_assert_null(qs_method_nearest_name(NULL, "fake"));
  qs_engine_close(e);
}

Test(dispatch, estimate_predicts_the_next_run_and_runs_nothing) {
  fake_reset();
  qs_engine *e = open_fake(NULL, 0);
  input x = make_input(2, 128, 128); /* not tiny: calibrates (calibrate.c) */
  qs_run_request rq = {.inputs = &x.im, .n_inputs = 1};
  qs_run_report est, rep;
  /* cold: qs_method_run would calibrate first */
  cr_assert_eq(qs_method_estimate(e, "fake", &rq, &est), QS_OK, "%s",
               qs_engine_error(e));
  cr_assert_str_eq(est.reason, "calibration");
  cr_assert_eq(est.n_estimates, 6);
  for (size_t i = 0; i < est.n_estimates; i++)
    if (strcmp(est.estimates[i].impl, "locked") &&
        strcmp(est.estimates[i].impl, "opencl"))
      cr_assert_str_eq(est.estimates[i].source, "none", "%s",
                       est.estimates[i].impl);
  for (int i = 0; i < F_N; i++) cr_assert_eq(fake[i].calls, 0);
  cr_assert_eq(rows_of(e, NULL), 0);
  /* warm: the estimate names what qs_method_run then runs, for the same
   * reason, with the same numbers */
  cr_assert_eq(run(e, &x, NULL, 0, NULL, &rep), QS_OK);
  for (int k = 0; k < 3; k++) {
    cr_assert_eq(qs_method_estimate(e, "fake", &rq, &est), QS_OK);
    cr_assert_eq(est.seconds, 0);
    cr_assert_eq(run(e, &x, NULL, 0, NULL, &rep), QS_OK);
    cr_assert_str_eq(est.impl, rep.impl);
    cr_assert_str_eq(est.reason, rep.reason);
    for (size_t i = 0; i < est.n_estimates; i++)
      cr_assert_str_eq(est.estimates[i].source, rep.estimates[i].source);
  }
  /* forced, and shapes without data */
  qs_image shape_only = {NULL, 2, 64, 64, NULL};
  qs_run_request rs = {.inputs = &shape_only, .n_inputs = 1, .impl = "serial"};
  cr_assert_eq(qs_method_estimate(e, "fake", &rs, &est), QS_OK, "%s",
               qs_engine_error(e));
  cr_assert_str_eq(est.impl, "serial");
  cr_assert_str_eq(est.reason, "forced");
  /* the same checks as qs_method_run */
  cr_assert_eq(qs_method_estimate(e, "fkae", &rq, &est), QS_ENOMETHOD);
  qs_image thin = {NULL, 1, 2, 64, NULL};
  rs.inputs = &thin;
  cr_assert_eq(qs_method_estimate(e, "fake", &rs, &est), QS_ESHAPE);
  rs.inputs = &shape_only;
  rs.impl = "locked";
  cr_assert_eq(qs_method_estimate(e, "fake", &rs, &est), QS_EUNAVAIL);
  cr_assert_eq(qs_method_estimate(e, "fake", &rq, NULL), QS_EINVAL);
  free(x.px);
  qs_engine_close(e);
}

Test(dispatch, devices_list_the_cpu_first) {
  qs_engine *e = open_fake(NULL, 0);
  qs_device_info d[4];
  size_t n = 0;
  cr_assert_eq(qs_engine_devices(e, d, 4, &n), QS_OK);
  cr_assert_eq(n, 1); /* no_opencl */
  cr_assert_str_eq(d[0].name, "cpu");
  cr_assert_eq(d[0].opencl, 0);
  cr_assert_eq(d[0].shares_host_cores, 1);
  cr_assert_eq(d[0].threads, 2);
  cr_assert_geq(d[0].cores, 1);
  /* the fingerprint is the one CPU implementations record */
  qs_impl_info info[8];
  size_t ni;
  cr_assert_eq(qs_method_impls(e, "fake", info, 8, &ni), QS_OK);
  cr_assert_str_eq(info[0].device, d[0].fingerprint);
  cr_assert_neq(qs_engine_opencl_why(e)[0], '\0');
  cr_assert_eq(qs_engine_devices(e, NULL, 0, &n), QS_OK);
  cr_assert_eq(n, 1);
  qs_engine_close(e);
}

typedef struct api_rows {
  size_t n, ok;
  char impl[QS_NAME_MAX];
  int stop_after;
} api_rows;

static int api_row(void *ctx, const qs_db_row *r) {
  api_rows *a = ctx;
  a->n++;
  a->ok += r->status == QS_OK;
  snprintf(a->impl, sizeof a->impl, "%s", r->impl);
  cr_assert_str_eq(r->method, "fake");
  cr_assert(r->wall >= 0);
  return a->stop_after && (int)a->n >= a->stop_after ? 7 : 0;
}

static int api_stat(void *ctx, const qs_db_stat *s) {
  api_rows *a = ctx;
  a->n++;
  a->ok += s->count;
  if (s->count) cr_assert(s->min <= s->median && s->min <= s->fast_mean);
  return 0;
}

typedef struct api_best {
  size_t n;
  char key[QS_KEY_MAX];
  qs_run_report rep;
} api_best;

static int api_best_fn(void *ctx, const char *method, const char *key,
                       const qs_run_report *r) {
  api_best *b = ctx;
  cr_assert_str_eq(method, "fake");
  if (!strstr(key, "(2x128x128")) return 0; /* not a calibration slice */
  b->n++;
  snprintf(b->key, sizeof b->key, "%s", key);
  b->rep = *r;
  return 0;
}

Test(dispatch, store_calls_through_the_engine) {
  fake_reset();
  char dir[] = "/tmp/qs_api_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char db[256], dump[256], db2[256];
  snprintf(db, sizeof db, "%s/t.db", dir);
  snprintf(dump, sizeof dump, "%s/dump.json", dir);
  snprintf(db2, sizeof db2, "%s/u.db", dir);
  qs_engine *e = open_fake(db, 0);
  input x = make_input(2, 128, 128); /* not tiny: calibrates (calibrate.c) */
  qs_run_report rep;
  for (int i = 0; i < 4; i++) cr_assert_eq(run(e, &x, NULL, 0, NULL, &rep), 0);
  cr_assert_eq(run(e, &x, NULL, 0, "serial", &rep), 0);

  api_rows a = {0};
  qs_db_filter f = {.method = "fake"};
  cr_assert_eq(qs_engine_db_query(e, &f, api_row, &a), QS_OK, "%s",
               qs_engine_error(e));
  size_t all = a.n;
  cr_assert_eq(all, rows_of(e, NULL));
  a = (api_rows){.stop_after = 2};
  cr_assert_eq(qs_engine_db_query(e, &f, api_row, &a), 7);
  cr_assert_eq(a.n, 2);
  a = (api_rows){0};
  f.impl = "serial";
  f.limit = 1;
  cr_assert_eq(qs_engine_db_query(e, &f, api_row, &a), QS_OK);
  cr_assert_eq(a.n, 1);
  cr_assert_str_eq(a.impl, "serial");

  a = (api_rows){0};
  cr_assert_eq(qs_engine_db_stats(e, NULL, api_stat, &a), QS_OK);
  cr_assert_gt(a.n, 1);
  cr_assert_eq(a.ok, rows_with(e, NULL, QS_OK, NULL));

  /* best: the choice qs_method_run makes for the full key */
  api_best b = {0};
  qs_db_filter fb = {.method = "fake"};
  cr_assert_eq(qs_engine_db_best(e, &fb, api_best_fn, &b), QS_OK, "%s",
               qs_engine_error(e));
  cr_assert_eq(b.n, 1);
  qs_run_report next;
  qs_run_request rq = {.inputs = &x.im, .n_inputs = 1};
  cr_assert_eq(qs_method_estimate(e, "fake", &rq, &next), QS_OK);
  cr_assert_str_eq(b.rep.impl, next.impl);
  cr_assert_str_eq(b.rep.reason, "history");
  qs_db_filter bad = {.method = "fkae"};
  cr_assert_eq(qs_engine_db_best(e, &bad, api_best_fn, &b), QS_ENOMETHOD);

  /* export, import into another store */
  cr_assert_eq(qs_engine_db_export(e, dump), QS_OK, "%s", qs_engine_error(e));
  qs_engine *e2 = open_fake(db2, 0);
  size_t added = 0, skipped = 0, rejected = 0;
  cr_assert_eq(qs_engine_db_import(e2, dump, &added, &skipped, &rejected),
               QS_OK, "%s", qs_engine_error(e2));
  cr_assert_eq(added, all);
  cr_assert_eq(skipped + rejected, 0);
  /* the imported history is used: the same key is warm in e2 */
  cr_assert_eq(qs_method_estimate(e2, "fake", &rq, &next), QS_OK);
  cr_assert_str_eq(next.reason, "history");
  cr_assert_eq(qs_engine_db_import(e2, dump, &added, &skipped, NULL), QS_OK);
  cr_assert_eq(added, 0);
  cr_assert_eq(skipped, all);
  cr_assert_eq(
      qs_engine_db_import(e2, "/nonexistent/x.json", NULL, NULL, NULL),
      QS_EIO);

  /* forget: the engine re-reads its history, the key turns cold */
  size_t removed = 0;
  qs_db_filter every = {.method = "fake"};
  cr_assert_eq(qs_engine_db_forget(e2, &every, &removed), QS_OK);
  cr_assert_eq(removed, all);
  cr_assert_eq(qs_method_estimate(e2, "fake", &rq, &next), QS_OK);
  cr_assert_str_eq(next.reason, "calibration");
  qs_engine_close(e2);

  cr_assert_eq(qs_engine_db_prune(e, 1, 0, &removed), QS_OK);
  cr_assert_gt(removed, 0);
  cr_assert_eq(qs_engine_db_check(e), QS_OK, "%s", qs_engine_error(e));
  qs_engine_close(e);

  /* a damaged file: the engine opens without it; check says so; it can be
   * moved aside and removed */
  FILE *fp = fopen(db, "w");
  cr_assert_not_null(fp);
  for (int i = 0; i < 512; i++) fputs("not an SQLite file at all. ", fp);
  fclose(fp);
  qs_engine_options o = {.db_path = db, .no_opencl = 1, .threads = 1};
  cr_assert_eq(qs_engine_open(&e, &o), QS_ECORRUPT);
  cr_assert_eq(qs_engine_db_check(e), QS_ECORRUPT);
  cr_assert_eq(qs_engine_db_query(e, NULL, api_row, &a), QS_ECORRUPT);
  qs_engine_close(e);
  char moved[512], err[512];
  cr_assert_eq(
      qs_engine_db_move_aside(db, moved, sizeof moved, err, sizeof err), QS_OK,
      "%s", err);
  cr_assert_not_null(strstr(moved, ".corrupt-"));
  cr_assert_neq(access(moved, F_OK), -1);
  cr_assert_eq(access(db, F_OK), -1);
  cr_assert_eq(qs_engine_db_remove(moved, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(access(moved, F_OK), -1);
  cr_assert_eq(qs_engine_db_remove(db2, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(access(db2, F_OK), -1);
  unlink(dump);
  rmdir(dir);
  free(x.px);
}

/* The descriptor limits are enforced when a method registers, not at its
 * first run. */
Test(dispatch, limits_checked_at_registration) {
  qs_engine *e = open_fake(NULL, 0);
  static qs_slot_def many[QS_MAX_OUTPUTS + 1];
  for (size_t i = 0; i <= QS_MAX_OUTPUTS; i++)
    many[i] = (qs_slot_def){"o", "o"};
  qs_method_desc d = fake_desc;
  d.name = "too_many_outputs";
  d.outputs = many;
  d.n_outputs = QS_MAX_OUTPUTS + 1;
  cr_assert_eq(qs_method_register(e, &d), QS_EINVAL);
  cr_assert_not_null(strstr(qs_engine_error(e), "at most"), "%s",
                     qs_engine_error(e));
  d = fake_desc;
  d.name = "too_many_inputs";
  d.inputs = many;
  d.n_inputs = QS_MAX_INPUTS + 1;
  cr_assert_eq(qs_method_register(e, &d), QS_EINVAL);
  d = fake_desc;
  d.name = "too_many_params";
  d.n_params = QS_MAX_PARAMS + 1;
  cr_assert_eq(qs_method_register(e, &d), QS_EINVAL);
  static qs_impl_def impls[QS_MAX_IMPLS + 1];
  static char names[QS_MAX_IMPLS + 1][8];
  for (size_t i = 0; i <= QS_MAX_IMPLS; i++) {
    snprintf(names[i], sizeof names[i], "i%zu", i);
    impls[i] = (qs_impl_def){names[i], QS_IMPL_SERIAL,  run_serial, NULL,
                             1,        QS_SCHED_STATIC, 0};
  }
  d = fake_desc;
  d.name = "too_many_impls";
  d.impls = impls;
  d.n_impls = QS_MAX_IMPLS + 1;
  cr_assert_eq(qs_method_register(e, &d), QS_EINVAL);
  d.n_impls = QS_MAX_IMPLS; /* at the limit: accepted */
  cr_assert_eq(qs_method_register(e, &d), QS_OK, "%s", qs_engine_error(e));
  cr_assert_not_null(qs_method_find(e, "too_many_impls"));
  cr_assert_null(qs_method_find(e, "too_many_outputs"));
  qs_engine_close(e);
}

/* Built-in implementations record their declared version mixed with the
 * build-time hash of their method's code, every built-in has such a hash,
 * and a host program's method records its declared version. */
Test(dispatch, versions_follow_the_code) {
  qs_engine *e = open_fake(NULL, 0);
  qs_impl_info info[QS_MAX_IMPLS];
  size_t n;
  size_t builtins = 0;
  for (size_t i = 0; i < qs_method_count(e); i++) {
    const qs_method_desc *d = qs_method_at(e, i);
    if (!strcmp(d->name, "fake")) continue;
    builtins++;
    cr_assert_eq(qs_method_impls(e, d->name, info, QS_MAX_IMPLS, &n), QS_OK);
    for (size_t k = 0; k < n; k++) {
      cr_assert_geq(info[k].version, 0);
      for (size_t j = 0; j < d->n_impls; j++)
        cr_assert_neq(info[k].version, d->impls[j].version,
                      "%s/%s records a bare declared version", d->name,
                      info[k].name);
    }
  }
  cr_assert_geq(builtins, 4);
  cr_assert_eq(qs_method_impls(e, "fake", info, QS_MAX_IMPLS, &n), QS_OK);
  for (size_t k = 0; k < n; k++) cr_assert_eq(info[k].version, 1);
  qs_engine_close(e);
}

/* A run during which another thread of the process burns CPU (as an OpenCL
 * CPU device's threads may) is disturbed: its output stands, its time is
 * not recorded. Watching starts after an OpenCL run on the host's cores;
 * here the test starts it. */
static int spin_other;

/* Burns 20 ms of its own CPU time (not wall time: on a loaded machine it
 * gets a fraction of a core, and still burns the same). */
static void *spin_thread(void *arg) {
  (void)arg;
  struct timespec t0, t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) <
         20000000L);
  return NULL;
}

static int run_spin(const qs_method_call *c) {
  if (spin_other) {
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, spin_thread, NULL), 0);
    pthread_join(th, NULL); /* the caller sleeps meanwhile */
  }
  c->out[0].data[0] = 1;
  return QS_OK;
}

Test(dispatch, disturbed_runs_are_not_recorded) {
  static const qs_impl_def impls[] = {
      {"serial", QS_IMPL_SERIAL, run_spin, NULL, 1, QS_SCHED_STATIC, 0}};
  qs_method_desc d = fake_desc;
  d.name = "spin";
  d.impls = impls;
  d.n_impls = 1;
  d.n_params = 0;
  qs_engine_options o = {.db_path = ":memory:", .threads = 2, .no_opencl = 1};
  qs_engine *e;
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  cr_assert_eq(qs_method_register(e, &d), QS_OK, "%s", qs_engine_error(e));
  input x = make_input(1, 8, 8);
  qs_run_request rq = {.inputs = &x.im, .n_inputs = 1, .impl = "serial"};
  qs_image out[1];
  qs_run_report rep;
  /* quiet, watched: recorded */
  e->watch_runs = 8;
  spin_other = 0;
  cr_assert_eq(qs_method_run(e, "spin", &rq, out, 1, &rep), QS_OK);
  qs_image_free(&out[0]);
  cr_assert_eq(e->disturbed_runs, 0);
  cr_assert_eq(e->watch_runs, 7);
  /* disturbed: the output is there, the time is not */
  spin_other = 1;
  cr_assert_eq(qs_method_run(e, "spin", &rq, out, 1, &rep), QS_OK);
  cr_assert_float_eq(out[0].data[0], 1, 0);
  qs_image_free(&out[0]);
  cr_assert_eq(e->disturbed_runs, 1);
  cr_assert_eq(e->watch_runs, 8);
  cr_assert_eq(engine_flush(e), QS_OK);
  size_t n = 0;
  store_filter f = {.method = "spin"};
  cr_assert_eq(store_query(e->store, &f, count_row, &n, NULL, 0), QS_OK);
  cr_assert_eq(n, 1, "only the quiet run is recorded");
  /* unwatched (no OpenCL on the host's cores ran): not checked */
  e->watch_runs = 0;
  cr_assert_eq(qs_method_run(e, "spin", &rq, out, 1, &rep), QS_OK);
  qs_image_free(&out[0]);
  cr_assert_eq(e->disturbed_runs, 1);
  free(x.px);
  qs_engine_close(e);
}

/* The report names the evidence of the choice for an unseen key, from the
 * strongest: the exact key, a model of several other keys, one other key
 * scaled, calibration, the static order. */
Test(dispatch, graded_evidence_is_reported) {
  fake_reset();
  qs_engine *e = open_fake(NULL, 0);
  qs_run_report rep;
  const char *cpu[] = {"serial", "threaded", "threaded_dynamic", "flaky"};
  input a = make_input(1, 64, 64), b = make_input(1, 128, 128),
        c = make_input(1, 96, 96), d = make_input(2, 80, 80);
  for (int i = 0; i < 4; i++)
    cr_assert_eq(run(e, &a, NULL, 0, cpu[i], &rep), QS_OK);
  cr_assert_str_eq(rep.reason, "forced");
  /* one other key each: scaled, nothing calibrated */
  cr_assert_eq(run(e, &b, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_str_eq(rep.reason, "scaled");
  cr_assert_eq(rep.calibration_seconds, 0);
  cr_assert_str_eq(rep.impl, "flaky");
  for (int i = 0; i < 4; i++) {
    cr_assert_str_eq(rep.estimates[i].source, "scaled");
    cr_assert_eq(rep.estimates[i].runs, 1);
  }
  /* two keys for flaky (a and b): the model; others still scaled */
  cr_assert_eq(run(e, &c, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_str_eq(rep.impl, "flaky");
  cr_assert_str_eq(rep.reason, "model");
  cr_assert_str_eq(rep.estimates[F_FLAKY].source, "model");
  cr_assert_eq(rep.estimates[F_FLAKY].runs, 2);
  cr_assert_str_eq(rep.estimates[F_SERIAL].source, "scaled");
  /* the exact key */
  cr_assert_eq(run(e, &c, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_str_eq(rep.reason, "history");
  qs_engine_close(e);
  /* cold: calibration, or the static order without it */
  fake_reset();
  e = open_fake(NULL, 0);
  cr_assert_eq(run(e, &d, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_str_eq(rep.reason, "calibration");
  qs_engine_close(e);
  e = open_fake(NULL, 1);
  cr_assert_eq(run(e, &d, NULL, 0, NULL, &rep), QS_OK);
  cr_assert_str_eq(rep.reason, "static");
  cr_assert_str_eq(rep.estimates[F_SERIAL].source, "none");
  qs_engine_close(e);
  free(a.px), free(b.px), free(c.px), free(d.px);
}

/* The built-in methods' shape rules take shapes only: qs_method_estimate on
 * images without data answers, qs_method_run refuses them. */
Test(dispatch, builtin_estimate_takes_shapes_only) {
  qs_engine *e;
  qs_engine_options o = {.db_path = ":memory:", .no_opencl = 1};
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  const char *methods[] = {"esrrf", "shift_magnify", "roberts_cross"};
  for (size_t k = 0; k < 3; k++) {
    qs_image in = qs_image_wrap(NULL, 4, 32, 32);
    qs_run_request rq = {.inputs = &in, .n_inputs = 1};
    qs_run_report est;
    cr_assert_eq(qs_method_estimate(e, methods[k], &rq, &est), QS_OK, "%s: %s",
                 methods[k], qs_engine_error(e));
    cr_assert_gt(est.n_estimates, 1, "%s", methods[k]);
    qs_image out[2] = {{0}, {0}};
    cr_assert_eq(qs_method_run(e, methods[k], &rq, out,
                               qs_method_find(e, methods[k])->n_outputs, NULL),
                 QS_EINVAL, "%s", methods[k]);
    cr_assert_not_null(strstr(qs_engine_error(e), "has no data"));
  }
  qs_engine_close(e);
}
