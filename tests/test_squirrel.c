/* test_squirrel.c — the squirrel method: NanoPyx's ErrorMap on its own
 * fixtures (RSE, RSP, σ, α, β and the error map), closed forms (the
 * reference against itself has RSP 1 and RSE 0; a known blur and gain are
 * recovered), serial = threaded bit for bit, a batch of reconstructions
 * scored as each alone, and bad inputs refused with the field named; the
 * cosine transform the fit runs on (methods/shared/fft.h) against its
 * definition, and the Gaussian blur (methods/shared/gauss.h) against
 * scipy's, pixel by pixel. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "methods/shared/fft.h"
#include "methods/shared/gauss.h"
#include "metric_fixtures.h"
#include "qs_test.h"
#include "quicksilver.h"

TestSuite(squirrel, .fini = qs_leak_check);

static const char *const names[] = {"RSE", "RSP", "sigma", "alpha", "beta"};

static void sq_case(const char *name, const char *impl) {
  metric_case c;
  mc_load(name, &c);
  qs_engine *e = mc_engine();
  qs_image out[2];
  mc_run(e, "squirrel", impl, c.in, 2, NULL, 0, out, 2);
  const float *m = out[1].data, *r = c.out[1].data;
  fprintf(stderr, "squirrel %-11s %-8s", name, impl);
  for (int k = 0; k < 5; k++)
    fprintf(stderr, " %s %.7g (NanoPyx %.7g)", names[k], m[k], r[k]);
  fputc('\n', stderr);
  /* RSE and RSP within 1e-4 relative; σ, α, β as fitted (a flat error
   * near the minimum lets σ move more than the metrics: 1e-3) */
  cr_expect(mc_close(m[0], r[0], 1e-4, 0), "%s RSE %.9g vs %.9g", name, m[0],
            r[0]);
  cr_expect(mc_close(m[1], r[1], 1e-4, 0), "%s RSP %.9g vs %.9g", name, m[1],
            r[1]);
  for (int k = 2; k < 5; k++)
    cr_expect(mc_close(m[k], r[k], 1e-3, 1e-3), "%s %s %.9g vs %.9g", name,
              names[k], m[k], r[k]);
  /* the error map within 1e-4 of its largest value */
  size_t n = c.out[0].rows * c.out[0].cols;
  cr_assert_eq(out[0].rows * out[0].cols, n);
  double peak = 0, worst = 0;
  for (size_t i = 0; i < n; i++) peak = fmax(peak, fabs(c.out[0].data[i]));
  for (size_t i = 0; i < n; i++)
    worst = fmax(worst, fabs(out[0].data[i] - c.out[0].data[i]));
  cr_expect_leq(worst, 1e-4 * peak, "%s error map: worst %.3g of %.3g", name,
                worst, peak);
  qs_image_free(&out[0]);
  qs_image_free(&out[1]);
  qs_engine_close(e);
  mc_free(&c);
}

Test(squirrel, nanopyx_real_m5) { sq_case("sq_real_m5", "serial"); }
Test(squirrel, nanopyx_sim_m2) { sq_case("sq_sim_m2", "serial"); }
Test(squirrel, nanopyx_real_m1) { sq_case("sq_real_m1", "serial"); }
Test(squirrel, nanopyx_threaded) { sq_case("sq_real_m5", "threaded"); }

static void pattern(qs_image *img, double scale) {
  for (size_t y = 0; y < img->rows; y++)
    for (size_t x = 0; x < img->cols; x++)
      img->data[y * img->cols + x] =
          (float)(100 + 60 * sin(0.9 * (double)x / scale) *
                            cos(0.7 * (double)y / scale) +
                  40 * ((x / (size_t)(3 * scale) + y / (size_t)(2 * scale)) %
                        2));
}

Test(squirrel, reference_against_itself) {
  qs_engine *e = mc_engine();
  qs_image ref;
  cr_assert_eq(qs_image_alloc(&ref, 1, 24, 20), QS_OK);
  pattern(&ref, 1);
  qs_image in[2] = {ref, ref}, out[2];
  qs_param p = {"sigma", 1e-20, NULL}; /* no blur */
  mc_run(e, "squirrel", "serial", in, 2, &p, 1, out, 2);
  cr_expect_float_eq(out[1].data[1], 1.0f, 1e-6, "RSP %.9g", out[1].data[1]);
  cr_expect_leq(out[1].data[0], 1e-3, "RSE %.9g", out[1].data[0]);
  cr_expect_float_eq(out[1].data[3], 1.0f, 1e-5, "alpha %.9g", out[1].data[3]);
  qs_image_free(&out[0]);
  qs_image_free(&out[1]);
  qs_image_free(&ref);
  qs_engine_close(e);
}

/* A reference that is the reconstruction blurred by σ = 1.5, times 2 plus
 * 10: the fit finds σ, α = 1/2 and β = −5 (in the reconstruction's
 * units: α·rec + β matches the reference). */
Test(squirrel, known_blur_is_recovered) {
  qs_engine *e = mc_engine();
  qs_image rec, ref;
  cr_assert_eq(qs_image_alloc(&rec, 1, 48, 40), QS_OK);
  cr_assert_eq(qs_image_alloc(&ref, 1, 48, 40), QS_OK);
  pattern(&rec, 1);
  /* blur with the engine's own Gaussian (the fit must then be exact) */
  qs_image in[2] = {rec, rec}, out[2];
  qs_param p = {"sigma", 1.5, NULL};
  mc_run(e, "squirrel", "serial", in, 2, &p, 1, out, 2);
  /* out[0] = |blur(rec) − rec|, not the blur itself: build the blur as
   * the method's fixed-σ map cannot give it; use a direct separable blur */
  qs_image_free(&out[0]);
  qs_image_free(&out[1]);
  double w[13], s = 0;
  for (int k = -6; k <= 6; k++) s += w[k + 6] = exp(-0.5 * k * k / 2.25);
  for (size_t y = 0; y < 48; y++)
    for (size_t x = 0; x < 40; x++) {
      double v = 0;
      for (int a = -6; a <= 6; a++)
        for (int b = -6; b <= 6; b++) {
          long yy = (long)y + a, xx = (long)x + b;
          yy = yy < 0 ? -yy - 1 : yy >= 48 ? 95 - yy : yy;
          xx = xx < 0 ? -xx - 1 : xx >= 40 ? 79 - xx : xx;
          v += w[a + 6] * w[b + 6] * rec.data[yy * 40 + xx];
        }
      ref.data[y * 40 + x] = (float)(2 * v / (s * s) + 10);
    }
  qs_image in2[2] = {ref, rec};
  mc_run(e, "squirrel", "serial", in2, 2, NULL, 0, out, 2);
  const float *m = out[1].data;
  fprintf(stderr, "known blur: sigma %.6g alpha %.6g beta %.6g RSP %.8g\n",
          m[2], m[3], m[4], m[1]);
  cr_expect_float_eq(m[2], 1.5f, 2e-3, "sigma %.9g", m[2]);
  cr_expect_float_eq(m[3], 2.0f, 1e-3, "alpha %.9g", m[3]);
  cr_expect_float_eq(m[4], 10.0f, 0.1, "beta %.9g", m[4]);
  cr_expect_gt(m[1], 0.99999f, "RSP %.9g", m[1]);
  qs_image_free(&out[0]);
  qs_image_free(&out[1]);
  qs_image_free(&rec);
  qs_image_free(&ref);
  qs_engine_close(e);
  (void)in;
}

Test(squirrel, serial_equals_threaded) {
  metric_case c;
  mc_load("sq_sim_m2", &c);
  qs_engine *e = mc_engine();
  qs_image s[2], t[2];
  mc_run(e, "squirrel", "serial", c.in, 2, NULL, 0, s, 2);
  mc_run(e, "squirrel", "threaded", c.in, 2, NULL, 0, t, 2);
  size_t n = s[0].rows * s[0].cols;
  cr_expect_eq(memcmp(s[0].data, t[0].data, n * sizeof(float)), 0);
  cr_expect_eq(memcmp(s[1].data, t[1].data, 5 * sizeof(float)), 0);
  for (int k = 0; k < 2; k++) {
    qs_image_free(&s[k]);
    qs_image_free(&t[k]);
  }
  qs_engine_close(e);
  mc_free(&c);
}

/* A batch of reconstructions: each frame's map and metrics are those of a
 * call with it alone (the reference made once serves them all). */
static void batch_case(const char *impl) {
  metric_case c;
  mc_load("sq_real_m5", &c);
  qs_engine *e = mc_engine();
  const qs_image *rec = &c.in[1];
  size_t n = rec->rows * rec->cols;
  qs_image batch;
  cr_assert_eq(qs_image_alloc(&batch, 3, rec->rows, rec->cols), QS_OK);
  for (size_t i = 0; i < n; i++) {
    batch.data[i] = rec->data[i];
    batch.data[n + i] = rec->data[n - 1 - i];           /* unrelated */
    batch.data[2 * n + i] = 3 * rec->data[i] + 7;       /* a gain */
  }
  qs_image in[2] = {c.in[0], batch}, all[2];
  mc_run(e, "squirrel", impl, in, 2, NULL, 0, all, 2);
  cr_assert_eq(all[0].frames, 3);
  cr_assert_eq(all[1].frames, 3);
  for (size_t k = 0; k < 3; k++) {
    qs_image one = qs_image_wrap(batch.data + k * n, 1, rec->rows, rec->cols);
    qs_image in1[2] = {c.in[0], one}, o[2];
    mc_run(e, "squirrel", impl, in1, 2, NULL, 0, o, 2);
    cr_expect_eq(memcmp(all[0].data + k * n, o[0].data, n * sizeof(float)),
                 0, "%s: map of reconstruction %zu", impl, k);
    cr_expect_eq(memcmp(all[1].data + k * 5, o[1].data, 5 * sizeof(float)),
                 0, "%s: metrics of reconstruction %zu: RSP %.9g vs %.9g",
                 impl, k, (double)all[1].data[k * 5 + 1],
                 (double)o[1].data[1]);
    qs_image_free(&o[0]);
    qs_image_free(&o[1]);
  }
  /* and they are different reconstructions' numbers */
  cr_expect_neq(all[1].data[1], all[1].data[6]);
  qs_image_free(&all[0]);
  qs_image_free(&all[1]);
  qs_image_free(&batch);
  qs_engine_close(e);
  mc_free(&c);
}

Test(squirrel, batch_scores_each_alone) {
  batch_case("serial");
  batch_case("threaded");
}

Test(squirrel, bad_inputs_name_the_field) {
  qs_engine *e = mc_engine();
  qs_image ref, rec, two;
  cr_assert_eq(qs_image_alloc(&ref, 3, 10, 12), QS_OK);
  cr_assert_eq(qs_image_alloc(&rec, 1, 30, 35), QS_OK);
  cr_assert_eq(qs_image_alloc(&two, 2, 30, 37), QS_OK);
  qs_image out[2], in[2] = {ref, rec};
  qs_run_request rq = {.inputs = in, .n_inputs = 2};
  cr_expect_eq(qs_method_run(e, "squirrel", &rq, out, 2, NULL), QS_ESHAPE);
  cr_expect(strstr(qs_engine_error(e), "reconstruction is 30 x 35") != NULL,
            "%s", qs_engine_error(e));
  in[1] = two; /* a batch, but not the reference's size times M */
  cr_expect_eq(qs_method_run(e, "squirrel", &rq, out, 2, NULL), QS_ESHAPE);
  cr_expect(strstr(qs_engine_error(e), "reconstruction is 30 x 37") != NULL,
            "%s", qs_engine_error(e));
  qs_param p = {"sigma", -2, NULL};
  rq.params = &p;
  rq.n_params = 1;
  cr_expect_eq(qs_method_run(e, "squirrel", &rq, out, 2, NULL), QS_EPARAM);
  cr_expect(strstr(qs_engine_error(e), "sigma") != NULL, "%s",
            qs_engine_error(e));
  qs_image_free(&ref);
  qs_image_free(&rec);
  qs_image_free(&two);
  qs_engine_close(e);
}

Test(squirrel, metrics_without_the_map_are_the_same) {
  metric_case c;
  mc_load("sq_real_m5", &c);
  qs_engine *e = mc_engine();
  qs_image a[2], b[2];
  qs_param p = {"error_map", 0, "false"};
  mc_run(e, "squirrel", "serial", c.in, 2, NULL, 0, a, 2);
  mc_run(e, "squirrel", "serial", c.in, 2, &p, 1, b, 2);
  cr_expect_eq(memcmp(a[1].data, b[1].data, 5 * sizeof(float)), 0);
  float peak = 0;
  for (size_t i = 0; i < b[0].rows * b[0].cols; i++)
    peak = fmaxf(peak, fabsf(b[0].data[i]));
  cr_expect_eq(peak, 0.0f, "no map: zeros");
  for (int k = 0; k < 2; k++) {
    qs_image_free(&a[k]);
    qs_image_free(&b[k]);
  }
  qs_engine_close(e);
  mc_free(&c);
}

/* ------------------------------------- the cosine transform (fft.h) */

static int dct_for(const qs_method_call *c, size_t b, size_t e,
                   qs_range_fn body, void *ctx) {
  (void)c;
  /* two workers over uneven pieces, as a pool would hand them */
  for (size_t i = b; i < e; i += 3) {
    int rc = body(ctx, i, i + 3 < e ? i + 3 : e, (int)(i / 3 % 2));
    if (rc) return rc;
  }
  return 0;
}

/* The transform against its definition (scipy's dctn, norm "ortho"),
 * summed in double, on even and odd sides (Makhoul's reordering and the
 * two lines per FFT both have an odd case): within 1e-6 of the input's
 * energy per coefficient, the float FFT's rounding. */
static void dct_case(size_t rows, size_t cols) {
  size_t n = rows * cols;
  float *in = malloc(n * sizeof *in);
  double *out = malloc(n * sizeof *out), energy = 0;
  cr_assert(in && out);
  uint32_t s = 12345u + (uint32_t)(rows * 31 + cols);
  for (size_t i = 0; i < n; i++) {
    s = s * 1664525u + 1013904223u;
    in[i] = 100.0f + (float)(s >> 8) / (float)(1u << 24) * 50.0f;
    energy += (double)in[i] * in[i];
  }
  dct2 d;
  cr_assert_eq(dct2_plan(&d, rows, cols, 2), QS_OK);
  qs_method_call c = {.threads = 2, .parallel_for = dct_for};
  cr_assert_eq(dct2_run(&c, &d, in, out), QS_OK);
  double worst = 0, pi = 3.14159265358979323846;
  for (size_t ky = 0; ky < rows; ky++)
    for (size_t kx = 0; kx < cols; kx++) {
      double sum = 0;
      for (size_t y = 0; y < rows; y++) {
        double cy = cos(pi * (double)ky * (2.0 * y + 1) / (2.0 * rows));
        for (size_t x = 0; x < cols; x++)
          sum += in[y * cols + x] * cy *
                 cos(pi * (double)kx * (2.0 * x + 1) / (2.0 * cols));
      }
      sum *= sqrt((ky ? 2.0 : 1.0) / rows) * sqrt((kx ? 2.0 : 1.0) / cols);
      worst = fmax(worst, fabs(sum - out[ky * cols + kx]));
    }
  cr_expect_leq(worst, 1e-6 * sqrt(energy), "%zu x %zu: worst %.3g of %.3g",
                rows, cols, worst, sqrt(energy));
  /* and not a transform that is merely small: the DC is the mean times
   * √(rows·cols) */
  double mean = 0;
  for (size_t i = 0; i < n; i++) mean += in[i];
  mean /= (double)n;
  cr_expect(fabs(out[0] - mean * sqrt((double)n)) <= 1e-6 * out[0],
            "DC %.9g vs %.9g", out[0], mean * sqrt((double)n));
  dct2_free(&d);
  free(in);
  free(out);
}

Test(squirrel, dct_matches_its_definition) {
  dct_case(8, 8);
  dct_case(15, 22);
  dct_case(31, 45); /* the real stack's 150 × 225 at M5, a fifth */
  dct_case(1, 7);
  dct_case(7, 1);
}

Test(squirrel, dct_of_a_cosine_is_one_coefficient) {
  size_t rows = 12, cols = 9, ky = 3, kx = 5;
  float in[12 * 9];
  double out[12 * 9], pi = 3.14159265358979323846;
  for (size_t y = 0; y < rows; y++)
    for (size_t x = 0; x < cols; x++)
      in[y * cols + x] =
          (float)(cos(pi * ky * (2.0 * y + 1) / (2.0 * rows)) *
                  cos(pi * kx * (2.0 * x + 1) / (2.0 * cols)));
  dct2 d;
  cr_assert_eq(dct2_plan(&d, rows, cols, 2), QS_OK);
  qs_method_call c = {.threads = 2, .parallel_for = dct_for};
  cr_assert_eq(dct2_run(&c, &d, in, out), QS_OK);
  for (size_t i = 0; i < rows * cols; i++) {
    /* the basis function's norm: √(rows/2)·√(cols/2) */
    double want = i == ky * cols + kx ? sqrt(rows / 2.0) * sqrt(cols / 2.0)
                                      : 0;
    cr_expect(fabs(out[i] - want) < 1e-5, "coefficient %zu: %.9g vs %.9g", i,
              out[i], want);
  }
  dct2_free(&d);
}

/* scipy.ndimage.gaussian_filter as gauss.h states it, one pixel at a time:
 * the centre, then the pairs k = 1 .. radius, summed in double. */
static void blur_ref(const float *in, float *out, size_t rows, size_t cols,
                     double sigma) {
  long r = (long)(4.0 * sigma + 0.5);
  double w[512], sum = 0;
  cr_assert_lt(r, 256);
  for (long k = -r; k <= r; k++)
    sum += w[k + r] = exp(-0.5 / (sigma * sigma) * (double)(k * k));
  for (long k = -r; k <= r; k++) w[k + r] /= sum;
  float *tmp = malloc(rows * cols * sizeof *tmp);
  cr_assert(tmp);
  for (size_t y = 0; y < rows; y++)
    for (size_t x = 0; x < cols; x++) {
      double s = (double)in[y * cols + x] * w[r];
      for (long k = 1; k <= r; k++)
        s += ((double)in[gauss_reflect((long)y - k, rows) * cols + x] +
              (double)in[gauss_reflect((long)y + k, rows) * cols + x]) *
             w[r + k];
      tmp[y * cols + x] = (float)s;
    }
  for (size_t y = 0; y < rows; y++)
    for (size_t x = 0; x < cols; x++) {
      double s = (double)tmp[y * cols + x] * w[r];
      for (long k = 1; k <= r; k++)
        s += ((double)tmp[y * cols + gauss_reflect((long)x - k, cols)] +
              (double)tmp[y * cols + gauss_reflect((long)x + k, cols)]) *
             w[r + k];
      out[y * cols + x] = (float)s;
    }
  free(tmp);
}

/* The blur's row-at-a-time loops give the per-pixel definition's bits:
 * shapes odd and even, one row or column, kernels wider than the image
 * (taps reflected more than once), on two workers. */
Test(squirrel, blur_is_scipys_bit_for_bit) {
  const struct {
    size_t rows, cols;
    double sigma;
  } cases[] = {{16, 16, 1.0}, {15, 22, 2.3},  {7, 5, 10.0}, {1, 9, 1.5},
               {9, 1, 1.5},   {33, 40, 0.4}, {12, 30, 6.2}};
  qs_method_call c = {.threads = 2, .parallel_for = dct_for};
  for (size_t t = 0; t < sizeof cases / sizeof *cases; t++) {
    size_t rows = cases[t].rows, cols = cases[t].cols, n = rows * cols;
    float *in = malloc(n * sizeof *in), *tmp = malloc(n * sizeof *tmp),
          *got = malloc(n * sizeof *got), *want = malloc(n * sizeof *want);
    cr_assert(in && tmp && got && want);
    uint32_t s = 11 + (uint32_t)t;
    for (size_t i = 0; i < n; i++) {
      s = s * 1664525u + 1013904223u;
      in[i] = (float)(s >> 8) * 0x1p-16f - 100.0f;
    }
    cr_assert_eq(gauss_blur(&c, in, got, tmp, rows, cols, cases[t].sigma),
                 QS_OK);
    blur_ref(in, want, rows, cols, cases[t].sigma);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
      bad += memcmp(&got[i], &want[i], sizeof *got) != 0;
    cr_expect_eq(bad, 0, "%zu x %zu, sigma %g: %zu of %zu pixels differ",
                 rows, cols, cases[t].sigma, bad, n);
    free(in);
    free(tmp);
    free(got);
    free(want);
  }
}
