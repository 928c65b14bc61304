/* test_roberts_cross.c — the roberts_cross method: the borders and a ramp
 * in closed form (methods.md §2), the row-walking implementation against
 * the per-pixel stencil bit for bit, every threaded implementation against
 * serial bit for bit, OpenCL within the descriptor's tolerance, and bad
 * input. */
#include <criterion/criterion.h>
#include <string.h>

#include "method_harness.h"
#include "methods/shared/cl_frames.h"
#include "methods/roberts_cross/roberts.h"
#include "methods/methods.h"
#include "qs_test.h"

TestSuite(roberts_cross, .fini = qs_leak_check);

static const qs_method_desc *const RC = &method_roberts_cross;
static const char *const CPU_IMPLS[] = {"threaded", "threaded_static",
                                        "threaded_dynamic",
                                        "threaded_guided"};

static float px(const qs_image *m, size_t f, size_t r, size_t c) {
  return m->data[(f * m->rows + r) * m->cols + c];
}

static int run(const char *impl, const qs_image *in, qs_image out[2]) {
  char err[256] = "";
  int rc = harness_run(RC, impl, in, NULL, 0, out, NULL, err, sizeof err);
  if (rc) fprintf(stderr, "%s: %s\n", impl, err);
  return rc;
}

/* Integer-valued data: the border zeros are exact. */
Test(roberts_cross, borders) {
  qs_image m;
  cr_assert_eq(qs_image_alloc(&m, 2, 5, 6), QS_OK);
  harness_fill(&m, 1, 1000.0f);
  for (size_t i = 0; i < 60; i++) m.data[i] = (float)(int)m.data[i];
  qs_image g[2];
  cr_assert_eq(run("serial", &m, g), QS_OK);
  for (size_t f = 0; f < 2; f++) {
    for (size_t c = 0; c < 6; c++) {
      float want = c ? 2 * (px(&m, f, 0, c) - px(&m, f, 0, c - 1)) : 0.0f;
      cr_expect_eq(px(&g[0], f, 0, c), want, "row 0 col %zu", c);
      cr_expect_eq(px(&g[1], f, 0, c), 0.0f, "row 0 col %zu", c);
    }
    for (size_t r = 0; r < 5; r++) {
      float want = r ? 2 * (px(&m, f, r, 0) - px(&m, f, r - 1, 0)) : 0.0f;
      cr_expect_eq(px(&g[0], f, r, 0), 0.0f, "col 0 row %zu", r);
      cr_expect_eq(px(&g[1], f, r, 0), want, "col 0 row %zu", r);
    }
  }
  qs_image_free(&g[0]);
  qs_image_free(&g[1]);
  qs_image_free(&m);
}

Test(roberts_cross, ramp) {
  qs_image m;
  cr_assert_eq(qs_image_alloc(&m, 1, 9, 12), QS_OK);
  for (size_t r = 0; r < 9; r++)
    for (size_t c = 0; c < 12; c++) m.data[r * 12 + c] = 3.0f * r - 5.0f * c;
  qs_image g[2];
  cr_assert_eq(run("serial", &m, g), QS_OK);
  for (size_t r = 1; r < 9; r++)
    for (size_t c = 1; c < 12; c++) {
      cr_expect_eq(px(&g[0], 0, r, c), -10.0f, "(%zu, %zu)", r, c);
      cr_expect_eq(px(&g[1], 0, r, c), 6.0f, "(%zu, %zu)", r, c);
    }
  qs_image_free(&g[0]);
  qs_image_free(&g[1]);
  qs_image_free(&m);
}

Test(roberts_cross, rows_equal_stencil) {
  qs_image m;
  cr_assert_eq(qs_image_alloc(&m, 3, 7, 5), QS_OK);
  harness_fill(&m, 2, 3.7f);
  qs_image g[2];
  cr_assert_eq(run("serial", &m, g), QS_OK);
  for (size_t f = 0; f < 3; f++)
    for (int r = 0; r < 7; r++)
      for (int c = 0; c < 5; c++) {
        float gc, gr;
        rc_at(m.data + f * 35, 5, r, c, &gc, &gr);
        float a = px(&g[0], f, (size_t)r, (size_t)c);
        float b = px(&g[1], f, (size_t)r, (size_t)c);
        cr_expect_eq(memcmp(&a, &gc, sizeof a), 0, "col (%zu %d %d)", f, r, c);
        cr_expect_eq(memcmp(&b, &gr, sizeof b), 0, "row (%zu %d %d)", f, r, c);
      }
  qs_image_free(&g[0]);
  qs_image_free(&g[1]);
  qs_image_free(&m);
}

Test(roberts_cross, threaded_bit_identical_to_serial) {
  size_t shapes[][3] = {{1, 1, 1}, {1, 300, 7}, {4, 33, 65}, {9, 2, 128}};
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    qs_image m, ref[2];
    cr_assert_eq(qs_image_alloc(&m, shapes[k][0], shapes[k][1], shapes[k][2]),
                 QS_OK);
    harness_fill(&m, 10 + (unsigned)k, 50.0f);
    size_t bytes = shapes[k][0] * shapes[k][1] * shapes[k][2] * sizeof(float);
    cr_assert_eq(run("serial", &m, ref), QS_OK);
    for (size_t i = 0; i < sizeof CPU_IMPLS / sizeof CPU_IMPLS[0]; i++) {
      qs_image g[2];
      cr_assert_eq(run(CPU_IMPLS[i], &m, g), QS_OK);
      for (int o = 0; o < 2; o++) {
        cr_expect_eq(memcmp(g[o].data, ref[o].data, bytes), 0,
                     "%s output %d differs in case %zu", CPU_IMPLS[i], o, k);
        qs_image_free(&g[o]);
      }
    }
    qs_image_free(&ref[0]);
    qs_image_free(&ref[1]);
    qs_image_free(&m);
  }
}

Test(roberts_cross, bad_input) {
  float px1[4] = {0};
  qs_image cases[] = {qs_image_wrap(px1, 0, 2, 2), qs_image_wrap(px1, 1, 0, 2),
                      qs_image_wrap(px1, 1, 2, 0),
                      qs_image_wrap(px1, 1, (size_t)1 << 32, 1),
                      qs_image_wrap(px1, (size_t)1 << 30, 1 << 10, 1 << 10)};
  int want[] = {QS_EINVAL, QS_EINVAL, QS_EINVAL, QS_EOVERFLOW, QS_EOVERFLOW};
  for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
    qs_image out[2] = {{(float *)1, 7, 7, 7, NULL},
                       {(float *)1, 7, 7, 7, NULL}};
    char err[256] = "";
    int rc = RC->shape(&cases[k], NULL, out, err, sizeof err);
    cr_expect_eq(rc, want[k], "case %zu: %s (%s)", k, qs_status_name(rc), err);
    cr_expect(strstr(err, "roberts_cross: input"), "case %zu: \"%s\"", k,
              err);
    cr_expect(out[0].rows == 7 && out[1].rows == 7,
              "case %zu: output shape written on failure", k);
  }
  char err[256] = "";
  cr_expect_eq(RC->shape(NULL, NULL, NULL, err, sizeof err), QS_EINVAL);
  /* shapes only (qs_method_estimate): no data is the engine's check */
  qs_image shape_only = qs_image_wrap(NULL, 1, 2, 2);
  qs_image out[2] = {{NULL, 0, 0, 0, NULL}, {NULL, 0, 0, 0, NULL}};
  cr_expect_eq(RC->shape(&shape_only, NULL, out, err, sizeof err), QS_OK);
  cr_expect(out[0].rows == 2 && out[1].cols == 2);
}

Test(roberts_cross, opencl_within_tolerance_of_serial) {
  clrt *rt;
  char why[512] = "";
  harness_cl_open(&rt, why, sizeof why);
  if (!rt) cr_skip_test("%s", why);
  size_t shapes[][3] = {{1, 1, 1}, {1, 300, 7}, {4, 33, 65}, {9, 2, 128}};
  for (size_t dv = 0; dv < clrt_count(rt); dv++) {
    cldev *d = clrt_device(rt, dv);
    double worst = 0;
    for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
      qs_image m, ref[2], g[2];
      cr_assert_eq(
          qs_image_alloc(&m, shapes[k][0], shapes[k][1], shapes[k][2]), QS_OK);
      harness_fill(&m, 30 + (unsigned)k, 50.0f);
      cr_assert_eq(run("serial", &m, ref), QS_OK);
      char err[512] = "";
      int rc = harness_run(RC, "opencl", &m, NULL, 0, g, d, err, sizeof err);
      cr_assert_eq(rc, QS_OK, "%s: %s", cldev_about(d)->slug, err);
      for (int o = 0; o < 2; o++) {
        double diff, peak;
        harness_diff(&g[o], &ref[o], &diff, &peak);
        double rel = peak > 0 ? diff / peak : diff;
        if (rel > worst) worst = rel;
        cr_expect(rel <= RC->tolerance, "%s case %zu output %d: %.3g",
                  cldev_about(d)->slug, k, o, rel);
        qs_image_free(&g[o]);
        qs_image_free(&ref[o]);
      }
      qs_image_free(&m);
    }
    fprintf(stderr,
            "roberts_cross opencl:%s worst |opencl - serial| = %.3g of "
            "max |serial|\n",
            cldev_about(d)->slug, worst);
  }
  clrt_close(rt);
}

#if QS_HAVE_OPENCL
/* The OpenCL implementation with batches of two frames. */
static int run_in_pairs(const qs_method_call *c) {
  static const cl_frames_job job = {.file = "roberts_cross.cl",
                                    .kernel = "roberts_cross"};
  return cl_frames_stream(c, &job, 2);
}
#endif

/* A stack streamed through the device in several batches, the last one
 * short, gives what one batch gives. */
Test(roberts_cross, opencl_streams_batches) {
#if QS_HAVE_OPENCL
  clrt *rt;
  char why[512] = "";
  harness_cl_open(&rt, why, sizeof why);
  if (!rt) cr_skip_test("%s", why);
  qs_impl_def pairs = {"opencl",
                       QS_IMPL_OPENCL,
                       run_in_pairs,
                       cl_frames_probe,
                       1,
                       QS_SCHED_STATIC,
                       0};
  qs_method_desc d = *RC;
  d.impls = &pairs;
  d.n_impls = 1;
  qs_image m, ref[2], g[2];
  cr_assert_eq(qs_image_alloc(&m, 5, 19, 23), QS_OK);
  harness_fill(&m, 99, 10.0f);
  cr_assert_eq(run("serial", &m, ref), QS_OK);
  char err[512] = "";
  int rc = harness_run(&d, "opencl", &m, NULL, 0, g, clrt_device(rt, 0), err,
                       sizeof err);
  cr_assert_eq(rc, QS_OK, "%s", err);
  for (int o = 0; o < 2; o++) {
    cr_expect_eq(memcmp(g[o].data, ref[o].data, 5 * 19 * 23 * sizeof(float)),
                 0, "output %d differs from serial", o);
    qs_image_free(&g[o]);
    qs_image_free(&ref[o]);
  }
  qs_image_free(&m);
  clrt_close(rt);
#else
  cr_skip_test("no OpenCL device: OpenCL is not built in");
#endif
}

Test(roberts_cross, engine_runs_every_implementation) {
  qs_image m;
  cr_assert_eq(qs_image_alloc(&m, 3, 41, 37), QS_OK);
  harness_fill(&m, 5, 20.0f);
  char msg[512] = "";
  int ran = harness_engine_agree(RC, &m, NULL, 0, msg, sizeof msg);
  cr_expect_geq(ran, 5, "%d implementations ran: %s", ran, msg);
  qs_image_free(&m);
}

/* An engine whose devices came from the list an earlier one cached loads
 * the OpenCL runtimes at its first call on a device: that call reports
 * the loading in load_seconds, apart from its run, and the next call
 * loads nothing. */
Test(roberts_cross, listed_device_loads_at_first_use) {
  char dir[] = "/tmp/qs-rc-list-XXXXXX", cmd[64];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  qs_engine_options o = {.db_path = ":memory:", .cache_dir = dir,
                         .threads = 2};
  qs_engine *e = NULL;
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK, "%s", qs_engine_error(e));
  qs_impl_info info[QS_MAX_ESTIMATES];
  size_t n = 0;
  cr_assert_eq(qs_method_impls(e, "roberts_cross", info, QS_MAX_ESTIMATES,
                               &n), QS_OK);
  const char *cl = NULL;
  for (size_t i = 0; i < n && i < QS_MAX_ESTIMATES && !cl; i++)
    if (info[i].kind == QS_IMPL_OPENCL && info[i].available)
      cl = info[i].name;
  qs_engine_close(e);
  if (!cl) {
    cr_assert_eq(system(cmd), 0);
    cr_skip_test("no OpenCL device");
  }
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK, "%s", qs_engine_error(e));
  qs_image m;
  cr_assert_eq(qs_image_alloc(&m, 2, 33, 35), QS_OK);
  harness_fill(&m, 3, 10.0f);
  qs_run_request rq = {.inputs = &m, .n_inputs = 1, .impl = cl};
  double load[2];
  for (int k = 0; k < 2; k++) {
    qs_image out[2];
    qs_run_report rep;
    cr_assert_eq(qs_method_run(e, "roberts_cross", &rq, out, 2, &rep), QS_OK,
                 "%s", qs_engine_error(e));
    cr_assert_str_eq(rep.impl, cl);
    load[k] = rep.load_seconds;
    qs_image_free(&out[0]);
    qs_image_free(&out[1]);
  }
  cr_expect_gt(load[0], 0, "the first call on the device loads");
  cr_expect_eq(load[1], 0, "the second loads nothing");
  qs_image_free(&m);
  qs_engine_close(e);
  cr_assert_eq(system(cmd), 0);
}
