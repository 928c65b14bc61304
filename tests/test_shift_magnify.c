/* test_shift_magnify.c — Catmull-Rom sampling and the shift_magnify
 * method: closed forms of methods.md §1, the separable path against the
 * point sampler bit for bit, every threaded implementation against serial
 * bit for bit, OpenCL within the descriptor's tolerance, and bad input. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <string.h>

#include "method_harness.h"
#include "methods/shift_magnify/catmull_rom.h"
#include "methods/methods.h"
#include "qs_test.h"

TestSuite(shift_magnify, .fini = qs_leak_check);

static const qs_method_desc *const SM = &method_shift_magnify;
static const char *const CPU_IMPLS[] = {"threaded", "threaded_static",
                                        "threaded_dynamic",
                                        "threaded_guided"};

static float px(const qs_image *m, size_t f, size_t r, size_t c) {
  return m->data[(f * m->rows + r) * m->cols + c];
}

static qs_image make(size_t f, size_t r, size_t c, unsigned seed) {
  qs_image m;
  cr_assert_eq(qs_image_alloc(&m, f, r, c), QS_OK);
  harness_fill(&m, seed, 100.0f);
  return m;
}

static int run(const char *impl, const qs_image *in, float sr, float sc,
               float mr, float mc, qs_image *out) {
  qs_param p[] = {{"shift_row", sr, NULL},
                  {"shift_col", sc, NULL},
                  {"magnification_row", mr, NULL},
                  {"magnification_col", mc, NULL}};
  char err[256] = "";
  int rc = harness_run(SM, impl, in, p, 4, out, NULL, err, sizeof err);
  if (rc) fprintf(stderr, "%s: %s\n", impl, err);
  return rc;
}

Test(shift_magnify, cubic_values) {
  cr_expect_eq(cr_cubic(0.0), 1.0);
  cr_expect_eq(cr_cubic(0.5), 0.5625);
  cr_expect_eq(cr_cubic(-0.5), 0.5625);
  cr_expect_eq(cr_cubic(1.5), -0.0625);
  cr_expect_eq(cr_cubic(1.0), 0.0);
  cr_expect_eq(cr_cubic(2.0), 0.0);
  cr_expect_eq(cr_cubic(-3.0), 0.0);
  /* partition of unity for a fractional position */
  double s = cr_cubic(1.3) + cr_cubic(0.3) + cr_cubic(0.7) + cr_cubic(1.7);
  cr_expect(fabs(s - 1.0) < 1e-15, "weights sum to %.17g", s);
}

Test(shift_magnify, pixel_centre_gives_the_pixel) {
  qs_image m = make(1, 7, 9, 1);
  for (int r = 0; r < 7; r++)
    for (int c = 0; c < 9; c++)
      cr_expect_eq(cr_sample(m.data, r + 0.5f, c + 0.5f, 7, 9),
                   px(&m, 0, (size_t)r, (size_t)c), "(%d, %d)", r, c);
  qs_image_free(&m);
}

Test(shift_magnify, integer_position_taps) {
  qs_image m = make(1, 6, 10, 2);
  for (int r = 0; r < 6; r++)
    for (int c = 2; c < 9; c++) {
      /* row at a pixel centre, column at the edge between c-1 and c */
      double q = 0;
      q = q + (double)px(&m, 0, (size_t)r, (size_t)c - 2) * -0.0625;
      q = q + (double)px(&m, 0, (size_t)r, (size_t)c - 1) * 0.5625;
      q = q + (double)px(&m, 0, (size_t)r, (size_t)c) * 0.5625;
      q = q + (double)px(&m, 0, (size_t)r, (size_t)c + 1) * -0.0625;
      cr_expect_eq(cr_sample(m.data, r + 0.5f, (float)c, 6, 10), (float)q,
                   "(%d, %d)", r, c);
    }
  qs_image_free(&m);
}

Test(shift_magnify, outside_is_zero) {
  qs_image m = make(1, 5, 5, 3);
  for (size_t i = 0; i < 25; i++) m.data[i] += 1000.0f; /* no zeros */
  cr_expect_eq(cr_sample(m.data, -0.001f, 2.0f, 5, 5), 0.0f);
  cr_expect_eq(cr_sample(m.data, 2.0f, -0.001f, 5, 5), 0.0f);
  cr_expect_eq(cr_sample(m.data, 5.0f, 2.0f, 5, 5), 0.0f);
  cr_expect_eq(cr_sample(m.data, 2.0f, 5.0f, 5, 5), 0.0f);
  cr_expect_neq(cr_sample(m.data, 4.999f, 2.0f, 5, 5), 0.0f);
  cr_expect_neq(cr_sample(m.data, 0.0f, 0.0f, 5, 5), 0.0f);
  qs_image_free(&m);
}

Test(shift_magnify, half_pixel_taps_match_point_sampler) {
  for (int n = 1; n < 7; n++)
    for (int h = -1; h < 2 * n + 2; h++) {
      cr_taps a, b;
      cr_taps_half(h, n, &a);
      cr_taps_at((float)h / 2, n, &b);
      cr_assert_eq(a.n, b.n, "n %d h %d", n, h);
      if (a.n) cr_assert_eq(a.first, b.first, "n %d h %d", n, h);
      for (int k = 0; k < a.n; k++)
        cr_assert_eq(a.w[k], b.w[k], "n %d h %d tap %d", n, h, k);
    }
  qs_image m = make(1, 5, 6, 4);
  for (int hr = 0; hr < 10; hr++)
    for (int hc = 0; hc < 12; hc++) {
      float a = cr_sample_half(m.data, hr, hc, 5, 6);
      float b = cr_sample(m.data, hr / 2.0f, hc / 2.0f, 5, 6);
      cr_expect_eq(memcmp(&a, &b, sizeof a), 0, "(%d, %d) %g %g", hr, hc, a,
                   b);
    }
  qs_image_free(&m);
}

/* M = 1, shift 0 is a half-pixel shift: row i samples the edge between
 * input rows i-1 and i (out[0] = 9/16 I0 - 1/16 I1 inside the columns). */
Test(shift_magnify, unit_magnification_is_half_pixel_shift) {
  qs_image m = make(1, 8, 8, 5);
  for (size_t r = 0; r < 8; r++) /* constant along columns */
    for (size_t c = 1; c < 8; c++) m.data[r * 8 + c] = m.data[r * 8];
  qs_image o;
  cr_assert_eq(run("serial", &m, 0, 0, 1, 1, &o), QS_OK);
  cr_assert_eq(o.rows, 8);
  cr_assert_eq(o.cols, 8);
  double i0 = m.data[0], i1 = m.data[8];
  for (size_t c = 2; c < 7; c++)
    cr_expect_eq(px(&o, 0, 0, c), (float)(0.5625 * i0 - 0.0625 * i1),
                 "col %zu", c);
  for (size_t r = 2; r < 7; r++) {
    double q = 0;
    q = q + (double)px(&m, 0, r - 2, 0) * -0.0625;
    q = q + (double)px(&m, 0, r - 1, 0) * 0.5625;
    q = q + (double)px(&m, 0, r, 0) * 0.5625;
    q = q + (double)px(&m, 0, r + 1, 0) * -0.0625;
    cr_expect_eq(px(&o, 0, r, 4), (float)q, "row %zu", r);
  }
  qs_image_free(&o);
  qs_image_free(&m);
}

/* Shifting by -1/2 puts every output pixel on an input centre: identity;
 * by +1/2 the content moves one pixel toward higher indices. */
Test(shift_magnify, half_shifts_move_whole_pixels) {
  qs_image m = make(2, 6, 7, 6), o;
  cr_assert_eq(run("serial", &m, -0.5f, -0.5f, 1, 1, &o), QS_OK);
  cr_expect_eq(memcmp(o.data, m.data, 2 * 6 * 7 * sizeof(float)), 0);
  qs_image_free(&o);
  cr_assert_eq(run("serial", &m, 0.5f, 0.5f, 1, 1, &o), QS_OK);
  for (size_t f = 0; f < 2; f++)
    for (size_t r = 0; r < 6; r++)
      for (size_t c = 0; c < 7; c++)
        cr_expect_eq(px(&o, f, r, c),
                     r && c ? px(&m, f, r - 1, c - 1) : 0.0f,
                     "(%zu, %zu, %zu)", f, r, c);
  qs_image_free(&o);
  qs_image_free(&m);
}

Test(shift_magnify, output_shape_rule) {
  struct {
    size_t n;
    double mag;
    size_t want;
  } cases[] = {{90, 1.3, 116}, {45, 1.4, 63}, {64, 2, 128}, {7, 5, 35},
               {10, 0.5, 5},   {3, 0.34, 1}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    qs_image in = qs_image_wrap((float[1]){0}, 3, cases[k].n, 4);
    double p[4] = {0, 0, cases[k].mag, 1};
    qs_image out = {0};
    char err[256];
    cr_assert_eq(SM->shape(&in, p, &out, err, sizeof err), QS_OK, "%s", err);
    cr_expect_eq(out.rows, cases[k].want, "%zu x %g: %zu", cases[k].n,
                 cases[k].mag, out.rows);
    cr_expect_eq(out.frames, 3);
    cr_expect_eq(out.cols, 4);
  }
}

/* The separable implementation reproduces the point sampler bit for bit. */
Test(shift_magnify, separable_equals_point_sampler) {
  struct {
    size_t f, r, c;
    float sr, sc, mr, mc;
  } cases[] = {{2, 9, 11, 0, 0, 2, 2},        {1, 13, 7, 0.3f, -1.7f, 1.3f, 2.6f},
               {3, 5, 6, -2.25f, 4.5f, 5, 3}, {1, 17, 19, 0, 0, 0.7f, 1.4f},
               {1, 4, 4, 10, 10, 2, 2},       {1, 1, 1, 0, 0, 3, 3}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    qs_image m = make(cases[k].f, cases[k].r, cases[k].c, 7 + (unsigned)k), o;
    cr_assert_eq(run("serial", &m, cases[k].sr, cases[k].sc, cases[k].mr,
                     cases[k].mc, &o),
                 QS_OK);
    for (size_t f = 0; f < o.frames; f++)
      for (size_t i = 0; i < o.rows; i++)
        for (size_t j = 0; j < o.cols; j++) {
          float want = cr_sample(
              m.data + f * m.rows * m.cols,
              cr_source((int)i, cases[k].mr, cases[k].sr),
              cr_source((int)j, cases[k].mc, cases[k].sc), (int)m.rows,
              (int)m.cols);
          float got = px(&o, f, i, j);
          cr_assert_eq(memcmp(&got, &want, sizeof got), 0,
                       "case %zu (%zu, %zu, %zu): %.9g vs %.9g", k, f, i, j,
                       got, want);
        }
    qs_image_free(&o);
    qs_image_free(&m);
  }
}

/* Stacks and parameters on which implementations must agree: integer and
 * non-integer magnifications, shifts, minification, single pixels and
 * columns, several frames, the 90 x 1.3 / 45 x 1.4 shape rule. */
static const struct {
  size_t f, r, c;
  float sr, sc, mr, mc;
} cases[] = {{1, 1, 1, 0, 0, 2, 2},
             {3, 33, 17, 0, 0, 2, 2},
             {4, 20, 31, 0.4f, -0.6f, 1.3f, 2.7f},
             {2, 64, 48, -3, 2.5f, 5, 5},
             {5, 7, 3, 0, 0, 0.5f, 4},
             {1, 101, 1, 1.5f, 0, 1.7f, 1},
             {2, 90, 45, 0, 0, 1.3f, 1.4f}};

Test(shift_magnify, threaded_bit_identical_to_serial) {
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    qs_image m = make(cases[k].f, cases[k].r, cases[k].c, 20 + (unsigned)k);
    qs_image ref;
    cr_assert_eq(run("serial", &m, cases[k].sr, cases[k].sc, cases[k].mr,
                     cases[k].mc, &ref),
                 QS_OK);
    for (size_t i = 0; i < sizeof CPU_IMPLS / sizeof CPU_IMPLS[0]; i++) {
      qs_image o;
      cr_assert_eq(run(CPU_IMPLS[i], &m, cases[k].sr, cases[k].sc,
                       cases[k].mr, cases[k].mc, &o),
                   QS_OK);
      cr_assert_eq(o.rows, ref.rows);
      cr_assert_eq(o.cols, ref.cols);
      cr_expect_eq(memcmp(o.data, ref.data,
                          ref.frames * ref.rows * ref.cols * sizeof(float)),
                   0, "%s differs from serial in case %zu", CPU_IMPLS[i], k);
      qs_image_free(&o);
    }
    qs_image_free(&ref);
    qs_image_free(&m);
  }
}

static void expect_bad(const qs_image *in, const double *p, int status,
                       const char *needle) {
  qs_image out = {(float *)1, 11, 12, 13, NULL};
  char err[256] = "";
  int rc = SM->shape(in, p, &out, err, sizeof err);
  cr_expect_eq(rc, status, "status %s (%s), wanted %s", qs_status_name(rc),
               err, qs_status_name(status));
  cr_expect(strstr(err, needle), "message \"%s\" lacks \"%s\"", err, needle);
  cr_expect(out.frames == 11 && out.rows == 12 && out.cols == 13,
            "output shape written on failure");
}

Test(shift_magnify, bad_input) {
  float px1[4] = {0};
  qs_image ok = qs_image_wrap(px1, 1, 2, 2);
  double good[4] = {0, 0, 2, 2};
  double p[4];
  qs_image z = qs_image_wrap(px1, 1, 0, 2);
  expect_bad(&z, good, QS_EINVAL, "empty");
  z = qs_image_wrap(px1, 0, 2, 2);
  expect_bad(&z, good, QS_EINVAL, "empty");
  /* the shape rule takes shapes only (qs_method_estimate); data is the
   * engine's check */
  z = qs_image_wrap(NULL, 1, 2, 2);
  qs_image shaped = {NULL, 0, 0, 0, NULL};
  char err[256] = "";
  cr_expect_eq(SM->shape(&z, good, &shaped, err, sizeof err), QS_OK, "%s",
               err);
  cr_expect(shaped.frames == 1 && shaped.rows == 4 && shaped.cols == 4);
  expect_bad(NULL, good, QS_EINVAL, "empty");
  const double bad_mag[] = {0, -1, NAN, INFINITY, 1e300};
  for (size_t k = 0; k < sizeof bad_mag / sizeof bad_mag[0]; k++) {
    memcpy(p, good, sizeof p);
    p[2] = bad_mag[k];
    expect_bad(&ok, p, QS_EPARAM, "magnification_row");
    memcpy(p, good, sizeof p);
    p[3] = bad_mag[k];
    expect_bad(&ok, p, QS_EPARAM, "magnification_col");
  }
  memcpy(p, good, sizeof p);
  p[0] = NAN;
  expect_bad(&ok, p, QS_EPARAM, "shift_row");
  memcpy(p, good, sizeof p);
  p[1] = INFINITY;
  expect_bad(&ok, p, QS_EPARAM, "shift_col");
  memcpy(p, good, sizeof p);
  p[2] = 0.1; /* 2 rows x 0.1: no output row */
  expect_bad(&ok, p, QS_ESHAPE, "no output row");
  /* output larger than an int per side, and larger than QS_MAX_PIXELS */
  memcpy(p, good, sizeof p);
  p[3] = 3e9;
  expect_bad(&ok, p, QS_EOVERFLOW, "magnification_col");
  qs_image big = qs_image_wrap(px1, 4, 1 << 16, 1 << 16);
  p[3] = 3;
  p[2] = 3;
  expect_bad(&big, p, QS_EOVERFLOW, "exceeds");
  qs_image wide = qs_image_wrap(px1, 1, 1, (size_t)1 << 32);
  expect_bad(&wide, good, QS_EOVERFLOW, "too large");
}

/* Every OpenCL device within the descriptor's tolerance of serial (float
 * math on the device against double accumulation on the CPU). */
Test(shift_magnify, opencl_within_tolerance_of_serial) {
  clrt *rt;
  char why[512] = "";
  harness_cl_open(&rt, why, sizeof why);
  if (!rt) cr_skip_test("%s", why);
  for (size_t dv = 0; dv < clrt_count(rt); dv++) {
    cldev *d = clrt_device(rt, dv);
    double worst = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
      qs_image m = make(cases[k].f, cases[k].r, cases[k].c, 40 + (unsigned)k);
      qs_image ref, o;
      cr_assert_eq(run("serial", &m, cases[k].sr, cases[k].sc, cases[k].mr,
                       cases[k].mc, &ref),
                   QS_OK);
      qs_param p[] = {{"shift_row", cases[k].sr, NULL},
                      {"shift_col", cases[k].sc, NULL},
                      {"magnification_row", cases[k].mr, NULL},
                      {"magnification_col", cases[k].mc, NULL}};
      char err[512] = "";
      int rc = harness_run(SM, "opencl", &m, p, 4, &o, d, err, sizeof err);
      cr_assert_eq(rc, QS_OK, "%s: %s", cldev_about(d)->slug, err);
      double diff, peak;
      harness_diff(&o, &ref, &diff, &peak);
      double rel = peak > 0 ? diff / peak : diff;
      if (rel > worst) worst = rel;
      cr_expect(rel <= SM->tolerance, "%s case %zu: %.3g of max |serial|",
                cldev_about(d)->slug, k, rel);
      qs_image_free(&o);
      qs_image_free(&ref);
      qs_image_free(&m);
    }
    fprintf(stderr,
            "shift_magnify opencl:%s worst |opencl - serial| = %.3g of "
            "max |serial|\n",
            cldev_about(d)->slug, worst);
  }
  clrt_close(rt);
}

/* The dispatcher runs each implementation by name with serial's numbers,
 * and bad input through it gives a status, a message and no output. */
Test(shift_magnify, engine_runs_every_implementation) {
  qs_image m = make(3, 40, 29, 77);
  qs_param p[] = {{"shift_row", 0.3, NULL},
                  {"shift_col", -1.2, NULL},
                  {"magnification_row", 2.5, NULL},
                  {"magnification_col", 1.5, NULL}};
  char msg[512] = "";
  int ran = harness_engine_agree(SM, &m, p, 4, msg, sizeof msg);
  cr_expect_geq(ran, 5, "%d implementations ran: %s", ran, msg);

  qs_engine *e;
  qs_engine_options opt = {.db_path = ":memory:", .threads = 2};
  cr_assert_eq(qs_engine_open(&e, &opt), QS_OK);
  const qs_param bad[][1] = {{{"magnification_row", NAN, NULL}},
                             {{"magnification_col", 0, NULL}},
                             {{"shift_col", INFINITY, NULL}},
                             {{"magnification_row", 0.01, NULL}}};
  const int want[] = {QS_EPARAM, QS_EPARAM, QS_EPARAM, QS_ESHAPE};
  for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
    qs_run_request rq = {
        .inputs = &m, .n_inputs = 1, .params = bad[k], .n_params = 1};
    qs_image o = {(float *)1, 1, 1, 1, NULL};
    int rc = qs_method_run(e, "shift_magnify", &rq, &o, 1, NULL);
    cr_expect_eq(rc, want[k], "case %zu: %s (%s)", k, qs_status_name(rc),
                 qs_engine_error(e));
    cr_expect(strstr(qs_engine_error(e), bad[k][0].name), "case %zu: \"%s\"",
              k, qs_engine_error(e));
    cr_expect_null(o.data, "case %zu: output written", k);
  }
  qs_image empty = qs_image_wrap(m.data, 1, 0, 5);
  qs_run_request rq = {.inputs = &empty, .n_inputs = 1};
  qs_image o = {(float *)1, 1, 1, 1, NULL};
  cr_expect_neq(qs_method_run(e, "shift_magnify", &rq, &o, 1, NULL), QS_OK);
  cr_expect_null(o.data);
  qs_engine_close(e);
  qs_image_free(&m);
}
