/* test_rgc.c — the radial gradient convergence method: closed forms of
 * methods.md §3 (zero gradients, a field converging exactly on one pixel
 * centre or diverging from it, zero margins, sensitivity, intensity
 * weighting), NanoPyx's outputs bit for bit on the reference fixtures,
 * every threaded implementation against serial bit for bit, OpenCL within
 * 1e-4 of the peak, the fused paths' model (math/rgc_fused.h) against the
 * exact values, the whole sensitivities' powers against pow, and bad
 * input. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "method_harness.h"
#include "methods/rgc/rgc_fused.h"
#include "methods/methods.h"
#include "methods/rgc/rgc.h"
#include "qs_test.h"

TestSuite(rgc, .fini = qs_leak_check);

static const qs_method_desc *const RGC = &method_rgc;
static const char *const CPU_IMPLS[] = {"serial", "threaded",
                                        "threaded_static",
                                        "threaded_dynamic",
                                        "threaded_guided"};

/* Inputs for an R × C original at magnification m: gradients (f, 2Rm,
 * 2Cm), image (f, Rm, Cm). */
static void make(qs_image in[3], size_t f, size_t r, size_t c, int m) {
  size_t rm = r * (size_t)m, cm = c * (size_t)m;
  cr_assert_eq(qs_image_alloc(&in[0], f, 2 * rm, 2 * cm), QS_OK);
  cr_assert_eq(qs_image_alloc(&in[1], f, 2 * rm, 2 * cm), QS_OK);
  cr_assert_eq(qs_image_alloc(&in[2], f, rm, cm), QS_OK);
}

static void drop(qs_image *in, size_t n) {
  for (size_t i = 0; i < n; i++)
    qs_image_free(&in[i]);
}

static int run(const char *impl, const qs_image *in, int mag, double radius,
               double sens, int iw, qs_image *out) {
  qs_param p[] = {{"magnification", mag, NULL},
                  {"radius", radius, NULL},
                  {"sensitivity", sens, NULL},
                  {"intensity_weighting", iw, NULL}};
  char err[512] = "";
  int rc = harness_run(RGC, impl, in, p, 4, out, NULL, err, sizeof err);
  if (rc) fprintf(stderr, "rgc %s: %s\n", impl, err);
  return rc;
}

static float at(const qs_image *m, size_t f, size_t r, size_t c) {
  return m->data[(f * m->rows + r) * m->cols + c];
}

Test(rgc, constants_as_the_reference_rounds_them) {
  rgc_consts k = rgc_consts_make(1.5, 5, 1);
  cr_expect_eq(k.tss, 0x1.9f6ec4p-1f); /* 0.81139195 */
  cr_expect_eq(k.tso, 0x1.230eacp+1f); /* 2.27388525 */
  cr_expect_eq(k.start, -3);
  cr_expect_eq(k.end, 4);
  cr_expect_eq(rgc_margin(k.fwhm, 5), 7);
  cr_expect_eq(rgc_margin(2.5f, 2), 5);
  /* float32(0.3)·10 is 3.0000001 in double: margin 3 */
  cr_expect_eq(rgc_margin(0.3f, 10), 3);
  cr_expect_eq(rgc_center(0, 5), 0.1f);
  cr_expect_eq(rgc_weight(0, k.tss), 0.0f);
}

/* rgc_sq_bound(t): x passes the reference's d = √x <= t exactly when
 * x <= the bound; checked on the floats around each bound (where the test
 * turns) and on random x, for every radius's tSO from 0.5 to 50 in
 * steps of 0.01 and for odd values (0, a denormal, huge, negative, NaN). */
Test(rgc, squared_distance_bound_is_the_square_roots_test) {
  uint64_t st = 0x2545f4914f6cdd1dull;
  float odd[] = {0.0f, 1e-40f, 1.0f, 3.0e19f, 3.4e38f, -1.0f, NAN};
  for (int k = 0; k < 5000 + 7; k++) {
    float t = k < 5000 ? rgc_consts_make(0.5 + 0.01 * k, 2, 1).tso
                       : odd[k - 5000];
    float b = rgc_sq_bound(t);
    if (!(t >= 0)) {
      cr_assert_eq(b, -1.0f);
      continue;
    }
    cr_assert(sqrtf(b) <= t, "t %a: bound %a fails", t, b);
    float x = b;
    for (int s = 0; s < 64; s++) x = nextafterf(x, 0.0f);
    for (int s = 0; s < 128 && x < FLT_MAX; s++, x = nextafterf(x, INFINITY))
      cr_assert_eq(sqrtf(x) <= t, x <= b, "t %a x %a bound %a", t, x, b);
    for (int s = 0; s < 64; s++) {
      st ^= st << 13, st ^= st >> 7, st ^= st << 17;
      float r = (float)(st % 1000000) * 1e-6f * 4 * (b > 1 ? b : 1);
      cr_assert_eq(sqrtf(r) <= t, r <= b, "t %a x %a bound %a", t, r, b);
    }
  }
}

/* rgc_pow4(b) is (float)pow(b, 4) bit for bit: the weights of every
 * distance a window can hold (d from 0 to 50 by every float step over a
 * spread of tSS) and ten million doubles over 2⁻⁴⁰..2⁴⁰, plus the edges of
 * float's range. */
Test(rgc, pow4_is_pows_bits) {
  uint64_t st = 0x9e3779b97f4a7c15ull;
  long n = 0;
  for (int k = 0; k < 10000000; k++) {
    st ^= st << 13, st ^= st >> 7, st ^= st << 17;
    double b = ldexp(1.0 + (double)(st >> 11) * 0x1p-53,
                     (int)(st % 81) - 40);
    float want = (float)pow(b, 4.0), got = rgc_pow4(b);
    if (memcmp(&want, &got, sizeof got)) n++;
  }
  /* b⁴ near float's least normal (2^-126), its subnormals and overflow */
  double edges[] = {0x1.6a09e667f3bcdp-32, 0x1p-32, 0x1.4p-38, 0x1p-38,
                    0x1.ae89f995ad3adp+31, 0x1p32, 1e-300, 0.0, 3.0, 0.5};
  for (size_t k = 0; k < sizeof edges / sizeof *edges; k++) {
    float want = (float)pow(edges[k], 4.0), got = rgc_pow4(edges[k]);
    cr_expect(!memcmp(&want, &got, sizeof got), "b %a: %a, pow %a",
              edges[k], got, want);
  }
  /* the hard inputs: b⁴ within a few double ulps of a float rounding
   * boundary (the midpoint of two floats), where (b²)² and pow could round
   * apart (without rgc_pow4's fallback some of these differ) */
  long hard = 0;
  for (int k = 0; k < 200000; k++) {
    st ^= st << 13, st ^= st >> 7, st ^= st << 17;
    float f = ldexpf(1.0f + (float)(st >> 41) * 0x1p-23f, (int)(st % 61) - 30);
    double m = 0.5 * ((double)f + (double)nextafterf(f, INFINITY));
    double b = pow(m, 0.25);
    for (int j = -3; j <= 3; j++, hard++) {
      double bj = b + j * ldexp(1.0, ilogb(b) - 52);
      float want = (float)pow(bj, 4.0), got = rgc_pow4(bj);
      if (memcmp(&want, &got, sizeof got)) n++;
    }
  }
  cr_assert_gt(hard, 0);
  for (float d = 1e-3f; d < 50; d = nextafterf(d, 100) + d * 1e-4f)
    for (int t = 1; t < 40; t += 3) {
      double x = d, b = x * exp((-x * x) / (double)(t * 0.37f));
      float want = (float)pow(b, 4.0), got = rgc_pow4(b);
      if (memcmp(&want, &got, sizeof got)) n++;
    }
  cr_expect_eq(n, 0, "%ld inputs differ from pow's bits", n);
}

Test(rgc, zero_gradients_give_zero) {
  qs_image in[3], out[1];
  make(in, 2, 9, 8, 3);
  harness_fill(&in[2], 3, 50.0f);
  cr_assert_eq(run("serial", in, 3, 1.5, 1, 1, out), QS_OK);
  size_t n = out[0].frames * out[0].rows * out[0].cols;
  for (size_t i = 0; i < n; i++) cr_assert_eq(out[0].data[i], 0.0f);
  qs_image_free(out);
  drop(in, 3);
}

/* Every gradient sample points at (sign -1) or away from (sign +1) the
 * centre of output pixel (ty, tx): G = sign·(v − centre), in the float
 * arithmetic RGC uses for its offsets, so G × R is exactly 0. */
static void converge(qs_image in[3], int mag, int ty, int tx, float sign) {
  float yc = rgc_center(ty, mag), xc = rgc_center(tx, mag);
  for (size_t f = 0; f < in[0].frames; f++)
    for (size_t p = 0; p < in[0].rows; p++)
      for (size_t q = 0; q < in[0].cols; q++) {
        float vy = (float)p / (float)(2 * mag);
        float vx = (float)q / (float)(2 * mag);
        size_t i = (f * in[0].rows + p) * in[0].cols + q;
        in[0].data[i] = sign * (vx - xc);
        in[1].data[i] = sign * (vy - yc);
      }
}

Test(rgc, converging_field_gives_one_diverging_zero) {
  int mag = 4, ty = 21, tx = 17;
  qs_image in[3], out[1];
  make(in, 1, 12, 11, mag);
  harness_fill(&in[2], 4, 10.0f);
  converge(in, mag, ty, tx, -1);
  for (int s = 0; s < 3; s++) {
    double sens[] = {1, 2, 3.5};
    cr_assert_eq(run("serial", in, mag, 1.5, sens[s], 0, out), QS_OK);
    cr_expect_eq(at(out, 0, (size_t)ty, (size_t)tx), 1.0f,
                 "sensitivity %g: RGC %.9g at the convergence point", sens[s],
                 (double)at(out, 0, (size_t)ty, (size_t)tx));
    qs_image_free(out);
  }
  /* with intensity weighting: the image value itself */
  cr_assert_eq(run("serial", in, mag, 1.5, 1, 1, out), QS_OK);
  cr_expect_eq(at(out, 0, (size_t)ty, (size_t)tx),
               at(&in[2], 0, (size_t)ty, (size_t)tx));
  qs_image_free(out);
  converge(in, mag, ty, tx, +1);
  cr_assert_eq(run("serial", in, mag, 1.5, 1, 0, out), QS_OK);
  cr_expect_eq(at(out, 0, (size_t)ty, (size_t)tx), 0.0f);
  qs_image_free(out);
  drop(in, 3);
}

Test(rgc, margins_stay_zero) {
  int mag = 3;
  qs_image in[3], out[1];
  make(in, 2, 10, 9, mag);
  for (int i = 0; i < 3; i++) harness_fill(&in[i], 10u + (unsigned)i, 5.0f);
  double radius = 2.0;
  int m = rgc_margin((float)radius, mag); /* 6 */
  cr_assert_eq(m, 6);
  cr_assert_eq(run("serial", in, mag, radius, 1, 1, out), QS_OK);
  size_t inner = 0;
  for (size_t f = 0; f < 2; f++)
    for (size_t r = 0; r < out[0].rows; r++)
      for (size_t c = 0; c < out[0].cols; c++) {
        int edge = (int)r < m || (int)r >= (int)out[0].rows - m ||
                   (int)c < m || (int)c >= (int)out[0].cols - m;
        if (edge)
          cr_assert_eq(at(out, f, r, c), 0.0f, "margin (%zu, %zu)", r, c);
        else
          inner += at(out, f, r, c) != 0.0f;
      }
  cr_expect_gt(inner, 100, "only %zu interior pixels are non-zero", inner);
  qs_image_free(out);
  drop(in, 3);
}

Test(rgc, sensitivity_below_one_is_ignored_two_squares) {
  qs_image in[3], a[1], b[1], sq[1];
  make(in, 1, 11, 10, 2);
  for (int i = 0; i < 3; i++) harness_fill(&in[i], 20u + (unsigned)i, 3.0f);
  cr_assert_eq(run("serial", in, 2, 1.5, 1, 0, a), QS_OK);
  cr_assert_eq(run("serial", in, 2, 1.5, 0.5, 0, b), QS_OK);
  cr_assert_eq(run("serial", in, 2, 1.5, 2, 0, sq), QS_OK);
  size_t n = a[0].rows * a[0].cols, nonzero = 0;
  cr_assert_eq(memcmp(a[0].data, b[0].data, n * sizeof(float)), 0);
  for (size_t i = 0; i < n; i++) {
    float v = a[0].data[i];
    cr_assert_eq(sq[0].data[i], (float)pow(v, 2), "pixel %zu: %.9g vs %.9g",
                 i, (double)sq[0].data[i], (double)v);
    nonzero += v != 0;
  }
  cr_expect_gt(nonzero, 10);
  qs_image_free(a);
  qs_image_free(b);
  qs_image_free(sq);
  drop(in, 3);
}

/* rgc_pow takes whole sensitivities without pow: its floats are pow's
 * bits, over random floats in [2⁻¹²⁶, 1] (the convergence's range), on
 * exact powers and beyond 1. */
Test(rgc, whole_powers_are_pows_bits) {
  uint32_t s = 7;
  size_t bad = 0, n = 0;
  for (int e = 2; e <= 8; e++)
    for (long i = 0; i < 400000; i++) {
      s = s * 1664525u + 1013904223u;
      uint32_t b = (s >> 1) % (0x3f800001u - 0x00800000u) + 0x00800000u;
      if (i % 3 == 1) b = 0x3a000000u + (s >> 1) % 0x05800001u; /* > 5e-4 */
      if (i % 3 == 2) b = 0x3f800000u + (s >> 1) % 0x01000000u; /* [1, 4) */
      if (i < 64) b = 0x3f800000u - ((uint32_t)i << 23); /* 2^-i */
      float x, got, want = 0;
      memcpy(&x, &b, sizeof x);
      got = rgc_pow(x, (float)e);
      want = (float)pow((double)x, (double)e);
      n++;
      if (memcmp(&got, &want, sizeof got)) {
        if (bad++ < 5)
          cr_log_error("%a^%d: %a, pow %a", (double)x, e, (double)got,
                       (double)want);
      }
    }
  cr_expect_eq(bad, 0, "%zu of %zu powers differ from pow's", bad, n);
  /* the general path: not whole, or above 8 */
  cr_expect_eq(rgc_pow(0.3f, 2.5f), (float)pow((double)0.3f, 2.5));
  cr_expect_eq(rgc_pow(0.3f, 9.0f), (float)pow((double)0.3f, 9.0));
}

/* rgc_pow of ±0 without pow: pow's bits, −0 kept for odd whole powers
 * (among them ones past int's range and float's odd integers' end), +0
 * otherwise; rgc_sens sends −0 there and negatives to +0. */
Test(rgc, zero_powers_are_pows_bits) {
  static const float s[] = {1.0000001f, 1.5f,        2,     2.5f,   3,
                            4,          5,           6,     7,      8,
                            9,          11,          101,   1e7f + 1,
                            16777215.0f, 16777216.0f, 3e9f, 1e30f, INFINITY};
  for (size_t i = 0; i < sizeof s / sizeof *s; i++)
    for (int neg = 0; neg < 2; neg++) {
      float x = neg ? -0.0f : 0.0f, got = rgc_pow(x, s[i]);
      float want = (float)pow((double)x, (double)s[i]);
      cr_expect_eq(memcmp(&got, &want, sizeof got), 0,
                   "%s0^%.9g: %a, pow %a", neg ? "-" : "+", (double)s[i],
                   (double)got, (double)want);
      got = rgc_sens(x, s[i]);
      cr_expect_eq(memcmp(&got, &want, sizeof got), 0, "rgc_sens");
    }
  float m0 = rgc_sens(-0.0f, 3), p0 = rgc_sens(-1e-30f, 3);
  cr_expect(m0 == 0 && signbit(m0), "-0^3 keeps its sign");
  cr_expect(p0 == 0 && !signbit(p0), "a negative ratio becomes +0");
}

Test(rgc, intensity_weighting_multiplies_by_the_image) {
  qs_image in[3], plain[1], iw[1];
  make(in, 2, 8, 9, 3);
  for (int i = 0; i < 3; i++) harness_fill(&in[i], 30u + (unsigned)i, 7.0f);
  cr_assert_eq(run("serial", in, 3, 1.0, 1.5, 0, plain), QS_OK);
  cr_assert_eq(run("serial", in, 3, 1.0, 1.5, 1, iw), QS_OK);
  size_t n = 2 * plain[0].rows * plain[0].cols;
  for (size_t i = 0; i < n; i++)
    cr_assert_eq(iw[0].data[i], plain[0].data[i] * in[2].data[i]);
  qs_image_free(plain);
  qs_image_free(iw);
  drop(in, 3);
}

Test(rgc, threaded_bit_identical_to_serial) {
  qs_image in[3], ref[1], out[1];
  make(in, 3, 13, 11, 4);
  for (int i = 0; i < 3; i++) harness_fill(&in[i], 40u + (unsigned)i, 9.0f);
  cr_assert_eq(run("serial", in, 4, 1.5, 2, 1, ref), QS_OK);
  size_t n = 3 * ref[0].rows * ref[0].cols;
  for (size_t k = 1; k < 5; k++) {
    cr_assert_eq(run(CPU_IMPLS[k], in, 4, 1.5, 2, 1, out), QS_OK);
    cr_expect_eq(memcmp(out[0].data, ref[0].data, n * sizeof(float)), 0,
                 "%s differs from serial", CPU_IMPLS[k]);
    qs_image_free(out);
  }
  qs_image_free(ref);
  drop(in, 3);
}

Test(rgc, opencl_within_1e4_of_serial_margins_zero) {
  char why[512];
  clrt *rt;
  harness_cl_open(&rt, why, sizeof why);
  if (!rt) cr_skip_test("%s", why);
  qs_image in[3], ref[1], out[1];
  make(in, 3, 13, 11, 4);
  for (int i = 0; i < 3; i++) harness_fill(&in[i], 50u + (unsigned)i, 9.0f);
  double sens[] = {1, 2}, radius[] = {1.5, 1.0};
  for (size_t dv = 0; dv < clrt_count(rt); dv++)
    for (int k = 0; k < 2; k++) {
      qs_param p[] = {{"magnification", 4, NULL},
                      {"radius", radius[k], NULL},
                      {"sensitivity", sens[k], NULL},
                      {"intensity_weighting", k, NULL}};
      char err[512] = "";
      cr_assert_eq(run("serial", in, 4, radius[k], sens[k], k, ref), QS_OK);
      int rc = harness_run(RGC, "opencl", in, p, 4, out, clrt_device(rt, dv),
                           err, sizeof err);
      cr_assert_eq(rc, QS_OK, "%s", err);
      double diff, pk;
      harness_diff(out, ref, &diff, &pk);
      fprintf(stderr, "rgc opencl on %s, radius %g: worst %.3g of peak %.3g "
                      "(%.3g relative)\n",
              cldev_about(clrt_device(rt, dv))->slug, radius[k], diff, pk,
              diff / pk);
      cr_expect_leq(diff, 1e-4 * pk);
      int m = rgc_margin((float)radius[k], 4);
      for (size_t f = 0; f < 3; f++)
        for (size_t r = 0; r < out[0].rows; r++)
          for (size_t c = 0; c < out[0].cols; c++)
            if ((int)r < m || (int)r >= (int)out[0].rows - m || (int)c < m ||
                (int)c >= (int)out[0].cols - m)
              cr_assert_eq(at(out, f, r, c), 0.0f);
      qs_image_free(out);
      qs_image_free(ref);
    }
  drop(in, 3);
  clrt_close(rt);
}

/* ----------------------------------------------- NanoPyx, bit for bit */

static float *load(const char *file, size_t n) {
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/data/reference/%s", QS_SOURCE_ROOT,
           file);
  FILE *fp = fopen(path, "rb");
  cr_assert(fp, "cannot open %s", path);
  float *b = malloc(n * sizeof *b);
  cr_assert(b);
  cr_assert_eq(fread(b, sizeof *b, n, fp), n, "%s is short", path);
  fclose(fp);
  return b;
}

/* The rgc fixtures: input prefix, frames, RM, CM, case, M, r, s, iw. */
static const struct {
  const char *inputs;
  size_t f, rm, cm;
  const char *name;
  int mag;
  double radius, sens;
  int iw;
} FIXTURES[] = {
    {"rgc_real_m2", 2, 24, 24, "rgc_real_m2_r1_s1_iw", 2, 1, 1, 1},
    {"rgc_real_m5", 2, 60, 60, "rgc_real_m5_r15_s2_iw", 5, 1.5, 2, 1},
    {"rgc_real_m5", 2, 60, 60, "rgc_real_m5_r25_s05_noiw", 5, 2.5, 0.5, 0},
    {"rgc_sim_m2", 2, 24, 24, "rgc_sim_m2_r25_s05_iw", 2, 2.5, 0.5, 1},
    {"rgc_sim_m2", 2, 24, 24, "rgc_sim_m2_r15_s2_noiw", 2, 1.5, 2, 0},
    {"rgc_sim_m5", 2, 60, 60, "rgc_sim_m5_r1_s1_noiw", 5, 1, 1, 0},
    {"rgc_sim_m5", 2, 60, 60, "rgc_sim_m5_r15_s1_iw", 5, 1.5, 1, 1},
};

Test(rgc, serial_matches_nanopyx_bit_for_bit) {
  for (size_t k = 0; k < sizeof FIXTURES / sizeof FIXTURES[0]; k++) {
    size_t f = FIXTURES[k].f, rm = FIXTURES[k].rm, cm = FIXTURES[k].cm;
    char name[256];
    qs_image in[3], out[1];
    const char *slot[3] = {"gc2", "gr2", "mag"};
    for (int i = 0; i < 3; i++) {
      size_t s = i < 2 ? 2 : 1;
      snprintf(name, sizeof name, "%s_%s.f32", FIXTURES[k].inputs, slot[i]);
      in[i] =
          qs_image_wrap(load(name, f * s * rm * s * cm), f, s * rm, s * cm);
    }
    snprintf(name, sizeof name, "%s_out.f32", FIXTURES[k].name);
    float *ref = load(name, f * rm * cm);
    cr_assert_eq(run("serial", in, FIXTURES[k].mag, FIXTURES[k].radius,
                     FIXTURES[k].sens, FIXTURES[k].iw, out),
                 QS_OK);
    size_t differ = 0;
    for (size_t i = 0; i < f * rm * cm; i++)
      differ += memcmp(&out[0].data[i], &ref[i], sizeof(float)) != 0;
    cr_expect_eq(differ, 0, "%s: %zu of %zu pixels differ", FIXTURES[k].name,
                 differ, f * rm * cm);
    qs_image_free(out);
    free(ref);
    for (int i = 0; i < 3; i++) free(in[i].data);
  }
}

/* -------------------------------------------------------- bad input */

static int bad(const qs_image *in, int mag, double radius, char *err,
               size_t len) {
  qs_param p[] = {{"magnification", mag, NULL}, {"radius", radius, NULL}};
  qs_image out[1];
  int rc = harness_run(RGC, "serial", in, p, 2, out, NULL, err, len);
  cr_expect_null(out[0].data, "nothing is written on failure");
  return rc;
}

/* What the fused paths (fused_vec.h, esrrf.cl) build on: a pixel x of
 * phase px, k macro-pixels from its representative, reads the grid 2k
 * half-pixels further, and the representative's offset plus rgc_shift is
 * x's own float offset (to the offsets' own rounding) at any size; the first-order weight and
 * 1/d agree with the exact ones within 1e-7 and 1e-6 relative while the
 * centre's rounding e stays small against the distance: (e/d)² with e up
 * to half an ulp of the centre, so up to about 2048 input pixels a side
 * (the error grows as the square of the side beyond). */
Test(rgc, fused_model_matches_each_pixel_exactly) {
  const int mags[] = {1, 2, 3, 5, 7, 8, 13};
  const int ks[] = {0, 1, 17, 1000, 2047, 65535, 200000};
  rgc_consts rc = rgc_consts_make(1.5, 5, 1);
  for (size_t a = 0; a < sizeof mags / sizeof mags[0]; a++)
    for (int px = 0; px < mags[a]; px++)
      for (size_t b = 0; b < sizeof ks / sizeof ks[0]; b++) {
        int m = mags[a], x = px + ks[b] * m;
        if ((size_t)x >= RGC_MAX_SIDE) continue;
        float xc = rgc_center(x, m), xr = rgc_center(px, m);
        int bx = (int)(RGC_GM * xc), br = (int)(RGC_GM * xr);
        cr_assert_eq(bx, br + 2 * ks[b], "M %d x %d", m, x);
        float e = rgc_shift(px, x, m);
        for (int i = -3; i < 4; i++) {
          float dx = (float)(bx + i) / RGC_GM - xc;
          float dx0 = (float)(br + i) / RGC_GM - xr;
          cr_assert_leq(fabsf(dx0 + e - dx), 2 * FLT_EPSILON * (1 + fabsf(dx)),
                        "M %d x %d tap %d", m, x, i);
          /* the model against the exact weight and 1/d, with a row
           * offset of half a pixel */
          float dy0 = 0.5f, dy = dy0;
          double d0 = sqrt((double)dx0 * dx0 + (double)dy0 * dy0);
          double d = sqrt((double)dx * dx + (double)dy * dy);
          if (d0 == 0 || d0 > rc.tso || ks[b] >= 2048) continue;
          float w0 = rgc_weight((float)d0, rc.tss);
          rgc_lin l =
              rgc_lin_at(dx0, dy0, d0, w0, rgc_weight_slope(w0, d0, rc.tss));
          double w = l.w0 + (double)l.wa * e, id = l.id0 + (double)l.qa * e;
          double we = pow(d * exp(-d * d / rc.tss), 4);
          cr_assert_leq(fabs(w - we), 1e-6 * we + 1e-9,
                        "M %d x %d tap %d: w %.9g of %.9g", m, x, i, w, we);
          cr_assert_leq(fabs(id * d - 1), 1e-6, "M %d x %d tap %d", m, x, i);
        }
      }
}

/* The grid taps: the half-pixel taps inside, all four in the image and
 * summing to one there (a pixel centre's are 0, 1, 0, 0) (Catmull-Rom reproduces constants); the last
 * index's taps inside the image. */
Test(rgc, grid_taps_reproduce_constants) {
  for (int n = 1; n < 9; n++)
    for (int m = 1; m < 6; m++)
      for (int h = 0; h <= 2 * n; h++) {
        cr_taps t;
        rgc_grid_taps(h, n, m, &t);
        cr_assert(t.n > 0 && t.first >= 0 && t.first + t.n <= n,
                  "n %d M %d h %d", n, m, h);
        if (h < 4 || h > 2 * n - 4) continue;
        cr_assert_eq(t.n, 4, "n %d h %d", n, h);
        double sum = 0;
        for (int k = 0; k < t.n; k++) sum += t.w[k];
        cr_assert_eq(sum, 1, "n %d M %d h %d: %g", n, m, h, sum);
      }
}

Test(rgc, bad_input) {
  qs_image in[3];
  char err[512];
  make(in, 1, 6, 5, 2);
  /* gradients not twice the image */
  qs_image wrong[3] = {in[0], in[1], in[2]};
  wrong[1].cols -= 1;
  cr_expect_eq(bad(wrong, 2, 1.5, err, sizeof err), QS_ESHAPE);
  cr_expect(strstr(err, "gradient_row") && strstr(err, "(1, 24, 19)") &&
                strstr(err, "(1, 12, 10)"),
            "message names the slot and both shapes: %s", err);
  wrong[1] = in[1];
  wrong[0].frames = 2;
  cr_expect_eq(bad(wrong, 2, 1.5, err, sizeof err), QS_ESHAPE);
  cr_expect(strstr(err, "gradient_col") != NULL, "%s", err);
  cr_expect_eq(bad(in, 0, 1.5, err, sizeof err), QS_EPARAM);
  cr_expect(strstr(err, "magnification") != NULL, "%s", err);
  cr_expect_eq(bad(in, 2, 0, err, sizeof err), QS_EPARAM);
  cr_expect(strstr(err, "radius") != NULL, "%s", err);
  cr_expect_eq(bad(in, 2, -1, err, sizeof err), QS_EPARAM);
  cr_expect_eq(bad(in, 2, NAN, err, sizeof err), QS_EPARAM);
  cr_expect(strstr(err, "radius") != NULL, "%s", err);
  /* sides beyond what the index arithmetic keeps exact */
  qs_image huge[3] = {qs_image_wrap(in[0].data, 1, 2, (size_t)1 << 24),
                      qs_image_wrap(in[1].data, 1, 2, (size_t)1 << 24),
                      qs_image_wrap(in[2].data, 1, 1, (size_t)1 << 23)};
  cr_expect_eq(bad(huge, 2, 1.5, err, sizeof err), QS_EOVERFLOW);
  drop(in, 3);
}

/* Calibration's view of rgc: the work counts the pixels computed (inside
 * the zero margin, int(1.5 x 5) = 7 a side here), and a slice's image has
 * sides that are multiples of the magnification (the vector paths take
 * the reference loop otherwise), the gradients twice as large, copied from
 * the top-left of the first frame. (Fails on the rules that counted every
 * pixel and sliced generically: 32 x 32 is no multiple of 5.) */
Test(rgc, calibration_work_and_slices) {
  double p[RGC_N_PARAMS];
  for (size_t i = 0; i < RGC_N_PARAMS; i++) p[i] = RGC->params[i].def;
  cr_assert_eq(p[P_MAG], 5);
  cr_assert_float_eq(p[P_RADIUS], 1.5, 0);
  qs_image in[3];
  make(in, 2, 64, 64, 5); /* image 2 x 320 x 320 */
  for (size_t k = 0; k < 3; k++)
    for (size_t i = 0; i < in[k].frames * in[k].rows * in[k].cols; i++)
      in[k].data[i] = (float)(k * 1000003 + i);
  cr_assert_float_eq(RGC->work(in, p), 2.0 * 306 * 306 * 16, 1e-6);
  cr_assert_not_null(RGC->slice);
  qs_image sl[3];
  cr_assert_eq(RGC->slice(in, p, 64, 64, sl), QS_OK);
  cr_assert_eq(sl[2].frames, 1);
  cr_assert_eq(sl[2].rows, 30);
  cr_assert_eq(sl[2].cols, 30);
  for (size_t k = 0; k < 2; k++) {
    cr_assert_eq(sl[k].rows, 60);
    cr_assert_eq(sl[k].cols, 60);
  }
  for (size_t k = 0; k < 3; k++)
    cr_assert_eq(sl[k].data[2 * sl[k].cols + 3],
                 in[k].data[2 * in[k].cols + 3]);
  /* 30 x 30 computes 16 x 16 pixels; an image all margin counts one */
  cr_assert_float_eq(RGC->work(sl, p), 16.0 * 16 * 16, 1e-9);
  drop(sl, 3);
  cr_assert_eq(RGC->slice(in, p, 8, 8, sl), QS_OK);
  cr_assert_eq(sl[2].rows, 5);
  cr_assert_float_eq(RGC->work(sl, p), 16.0, 1e-9);
  drop(sl, 3);
  drop(in, 3);
}
