/* test_sweep.c — eSRRF's parameter sweep (quicksilver_sweep.h): every
 * point's reconstruction is the bits of eSRRF run with the same
 * implementation, its RSP/RSE are squirrel's and its FRC frc's on those
 * outputs (odd and even frames), the memory bound's radius groups change
 * nothing, QnR follows NanoPyx's formula, and bad input is refused naming
 * the parameter with nothing written. The sweep's vector maps and folds
 * (sweep_fold.h) give pow's and temporal_add's bits in every variant the
 * CPU runs. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "methods/esrrf/sweep_fold.h"
#include "methods/esrrf/temporal.h"
#include "metric_fixtures.h"
#include "qs_test.h"
#include "quicksilver.h"
#include "quicksilver_sweep.h"

TestSuite(sweep, .fini = qs_leak_check);

static const double radii[] = {1.0, 1.5};
static const double sens[] = {1.0, 2.5, 4.0};

/* eSRRF (AVG, no correction) of frames [first, F) by `step` with impl. */
static qs_image esrrf_of(qs_engine *e, const qs_image *st, size_t first,
                         size_t step, double r, double s, const char *impl) {
  size_t px = st->rows * st->cols, n = (st->frames - first + step - 1) / step;
  qs_image sub;
  cr_assert_eq(qs_image_alloc(&sub, n, st->rows, st->cols), QS_OK);
  for (size_t k = 0; k < n; k++)
    memcpy(sub.data + k * px, st->data + (first + k * step) * px,
           px * sizeof(float));
  qs_param p[] = {{"magnification", 3, NULL},
                  {"radius", r, NULL},
                  {"sensitivity", s, NULL},
                  {"temporal", 0, "avg"},
                  {"macro_pixel_correction", 0, NULL}};
  qs_image out;
  mc_run(e, "esrrf", impl, &sub, 1, p, 5, &out, 1);
  qs_image_free(&sub);
  return out;
}

static void check_against_separate_calls(const char *impl, long memory_mb) {
  metric_case c;
  mc_load("sq_real_m5", &c); /* reference: the real crop, 20 x 16 x 16 */
  qs_image big; /* with 1 MiB, 2 x 2 tiles of it: one radius per pass */
  const qs_image *st = &c.in[0];
  if (memory_mb == 1) {
    cr_assert_eq(qs_image_alloc(&big, 20, 32, 32), QS_OK);
    for (size_t f = 0; f < 20; f++)
      for (size_t y = 0; y < 32; y++)
        for (size_t x = 0; x < 32; x++)
          big.data[(f * 32 + y) * 32 + x] =
              st->data[(f * 16 + y % 16) * 16 + x % 16] + (float)(x / 16);
    st = &big;
  }
  qs_engine *e = mc_engine();
  qs_esrrf_sweep_options o = {.radii = radii,
                              .n_radii = 2,
                              .sensitivities = sens,
                              .n_sensitivities = 3,
                              .magnification = 3,
                              .keep_images = 1,
                              .impl = impl,
                              .memory_mb = memory_mb};
  qs_esrrf_sweep_result res;
  char err[256];
  int rc = qs_esrrf_sweep(e, st, &o, &res, err, sizeof err);
  cr_assert_eq(rc, QS_OK, "%s: %s", qs_status_name(rc), err);
  cr_assert_eq(res.n_points, 6);
  cr_expect_str_eq(res.impl, impl, "the steps ran %s", res.impl);
  if (memory_mb == 1) cr_expect_eq(res.passes, 2, "one radius per pass");
  for (size_t si = 0; si < 3; si++)
    for (size_t r = 0; r < 2; r++) {
      const qs_esrrf_sweep_point *pt = &res.points[si * 2 + r];
      cr_assert_eq(pt->radius, radii[r]);
      cr_assert_eq(pt->sensitivity, sens[si]);
      qs_image ref = esrrf_of(e, st, 0, 1, radii[r], sens[si], impl);
      size_t n = ref.rows * ref.cols;
      cr_assert_eq(pt->recon.rows * pt->recon.cols, n);
      cr_expect_eq(memcmp(pt->recon.data, ref.data, n * sizeof(float)), 0,
                   "%s r %g s %g: the sweep's reconstruction differs from "
                   "eSRRF's", impl, radii[r], sens[si]);
      /* its metrics are squirrel's and frc's on those outputs */
      qs_image in[2] = {*st, ref}, m[2];
      qs_param nomap = {"error_map", 0, NULL};
      mc_run(e, "squirrel", impl, in, 2, &nomap, 1, m, 2);
      cr_expect_eq(pt->rsp, m[1].data[1], "RSP %.9g vs %.9g", pt->rsp,
                   m[1].data[1]);
      cr_expect_eq(pt->rse, m[1].data[0], "RSE %.9g vs %.9g", pt->rse,
                   m[1].data[0]);
      qs_image_free(&m[0]);
      qs_image_free(&m[1]);
      qs_image odd = esrrf_of(e, st, 1, 2, radii[r], sens[si], impl);
      qs_image even = esrrf_of(e, st, 0, 2, radii[r], sens[si], impl);
      qs_image h[2] = {odd, even};
      mc_run(e, "frc", impl, h, 2, NULL, 0, m, 2);
      cr_expect_eq(pt->frc, m[1].data[0], "FRC %.9g vs %.9g", pt->frc,
                   m[1].data[0]);
      qs_image_free(&m[0]);
      qs_image_free(&m[1]);
      qs_image_free(&odd);
      qs_image_free(&even);
      qs_image_free(&ref);
      cr_expect(pt->rsp > 0 && pt->rsp <= 1, "RSP %g", pt->rsp);
      cr_expect(isfinite(pt->qnr), "QnR %g", pt->qnr);
    }
  qs_esrrf_sweep_free(&res);
  cr_expect_null(res.points);
  qs_engine_close(e);
  if (memory_mb == 1) qs_image_free(&big);
  mc_free(&c);
}

Test(sweep, serial_equals_separate_calls) {
  check_against_separate_calls("serial", 0);
}
Test(sweep, threaded_equals_separate_calls) {
  check_against_separate_calls("threaded", 0);
}
Test(sweep, radius_groups_change_nothing) {
  check_against_separate_calls("serial", 1);
}

Test(sweep, qnr_is_nanopyx_formula) {
  double rsp[] = {0.5, 0.9, 0.7, 0.0}, frc[] = {2, 4, 3, 0}, q[4];
  qs_esrrf_sweep_qnr(rsp, frc, 4, q);
  /* logistic over [0, 4], decreasing (a finer resolution scores higher):
   * 0 -> 0.925, 4 -> 0.075 (NanoPyx's M2, M1) */
  double a1 = log(0.925 / 0.075), a2 = log(0.075 / 0.925);
  double x0 = (a2 * 4 - a1 * 0) / (a2 - a1), k = 1 / (x0 - 4) * a1;
  for (int i = 0; i < 4; i++) {
    double nf = 1 / (exp(-k * (frc[i] - x0)) + 1);
    double want = rsp[i] + nf != 0 ? 2 * rsp[i] * nf / (rsp[i] + nf) : 0;
    cr_expect_float_eq(q[i], want, 1e-6, "point %d: %.9g vs %.9g", i, q[i],
                       want);
  }
  cr_expect_float_eq(1 / (exp(-k * (4 - x0)) + 1), 0.075, 1e-9);
  cr_expect_float_eq(1 / (exp(-k * (0 - x0)) + 1), 0.925, 1e-9);
}

/* With the engine's choice for every step (a vector eSRRF path makes the
 * convergences, shift_magnify the intensity), a point's reconstruction is
 * eSRRF's own choice within the vector paths' 1e-6 of the peak. */
Test(sweep, engine_choice_within_the_vector_tolerance) {
  metric_case c;
  mc_load("sq_real_m5", &c);
  const qs_image *st = &c.in[0];
  qs_engine *e = mc_engine();
  qs_esrrf_sweep_options o = {.radii = radii,
                              .n_radii = 2,
                              .sensitivities = sens,
                              .n_sensitivities = 3,
                              .magnification = 3,
                              .keep_images = 1};
  qs_esrrf_sweep_result res;
  char err[256];
  int rc = qs_esrrf_sweep(e, st, &o, &res, err, sizeof err);
  cr_assert_eq(rc, QS_OK, "%s: %s", qs_status_name(rc), err);
  /* what made the points: eSRRF implementations of this engine */
  qs_impl_info info[QS_MAX_ESTIMATES];
  size_t n_impls;
  cr_assert_eq(qs_method_impls(e, "esrrf", info, QS_MAX_ESTIMATES, &n_impls),
               QS_OK);
  cr_assert(res.impl[0], "no implementation recorded");
  for (const char *q = res.impl; *q;) {
    size_t k = strcspn(q, ","), known = 0;
    for (size_t i = 0; i < n_impls; i++)
      known |= strlen(info[i].name) == k && !strncmp(info[i].name, q, k);
    cr_expect(known, "'%.*s' of '%s' is no eSRRF implementation", (int)k, q,
              res.impl);
    q += k + (q[k] == ',');
  }
  for (size_t si = 0; si < 3; si++)
    for (size_t r = 0; r < 2; r++) {
      const qs_esrrf_sweep_point *pt = &res.points[si * 2 + r];
      qs_image ref = esrrf_of(e, st, 0, 1, radii[r], sens[si], NULL);
      size_t n = ref.rows * ref.cols;
      float peak = 0, worst = 0;
      for (size_t i = 0; i < n; i++) peak = fmaxf(peak, fabsf(ref.data[i]));
      for (size_t i = 0; i < n; i++)
        worst = fmaxf(worst, fabsf(pt->recon.data[i] - ref.data[i]));
      cr_expect(peak > 0, "r %g s %g: an empty reconstruction", radii[r],
                sens[si]);
      cr_expect_leq(worst, 1e-6f * peak, "r %g s %g: %g of a peak of %g",
                    radii[r], sens[si], worst, peak);
      qs_image_free(&ref);
    }
  qs_esrrf_sweep_free(&res);
  qs_engine_close(e);
  mc_free(&c);
}

static void refused(const qs_esrrf_sweep_options *o, const qs_image *st,
                    int want, const char *field) {
  qs_engine *e = mc_engine();
  qs_esrrf_sweep_result res;
  memset(&res, 0xab, sizeof res);
  qs_esrrf_sweep_result untouched = res;
  char err[256];
  int rc = qs_esrrf_sweep(e, st, o, &res, err, sizeof err);
  cr_expect_eq(rc, want, "%s: got %s (%s)", field, qs_status_name(rc), err);
  cr_expect(strstr(err, field) == err, "message '%s' names '%s' first", err,
            field);
  cr_expect_eq(memcmp(&res, &untouched, sizeof res), 0, "result written");
  qs_engine_close(e);
}

Test(sweep, bad_input_names_the_parameter) {
  qs_image st;
  cr_assert_eq(qs_image_alloc(&st, 4, 12, 12), QS_OK);
  for (size_t i = 0; i < 4 * 144; i++) st.data[i] = (float)(i % 13);
  double neg[] = {1, -0.5}, nan_s[] = {NAN};
  qs_esrrf_sweep_options o = {.radii = radii,
                              .n_radii = 0,
                              .sensitivities = sens,
                              .n_sensitivities = 1};
  refused(&o, &st, QS_EPARAM, "radius");
  o.n_radii = 2;
  o.radii = neg;
  refused(&o, &st, QS_EPARAM, "radius");
  o.radii = radii;
  o.n_sensitivities = 0;
  refused(&o, &st, QS_EPARAM, "sensitivity");
  o.sensitivities = nan_s;
  o.n_sensitivities = 1;
  refused(&o, &st, QS_EPARAM, "sensitivity");
  o.sensitivities = sens;
  int bad_t[] = {5};
  o.temporal = bad_t;
  o.n_temporal = 1;
  refused(&o, &st, QS_EPARAM, "temporal");
  o.temporal = NULL;
  o.magnification = 100;
  refused(&o, &st, QS_EPARAM, "magnification");
  o.magnification = 2;
  st.frames = 1;
  refused(&o, &st, QS_ESHAPE, "frames");
  st.frames = 4;
  st.data[17] = NAN;
  refused(&o, &st, QS_EINVAL, "stack");
  qs_image_free(&st);
}

/* Records its calls and cancels at the first: seen[0] calls, seen[1] the
 * frames done then, seen[2] the total. */
static int cancel_at_first(void *ctx, uint64_t done, uint64_t total) {
  uint64_t *seen = ctx;
  seen[0]++;
  seen[1] = done;
  seen[2] = total;
  return 1;
}

Test(sweep, progress_can_cancel) {
  metric_case c;
  mc_load("sq_real_m5", &c);
  qs_engine *e = mc_engine();
  uint64_t seen[3] = {0};
  qs_esrrf_sweep_options o = {.radii = radii,
                              .n_radii = 2,
                              .sensitivities = sens,
                              .n_sensitivities = 1,
                              .magnification = 2,
                              .progress = cancel_at_first,
                              .progress_ctx = seen};
  qs_esrrf_sweep_result res = {0};
  char err[256];
  cr_expect_eq(qs_esrrf_sweep(e, &c.in[0], &o, &res, err, sizeof err),
               QS_ECANCELLED);
  cr_expect(strstr(err, "cancelled") != NULL, "%s", err);
  /* the first radius's step (all 20 frames) may end after the first
   * nonzero return (a step that was done reports once more); the sweep
   * stops before the second radius */
  cr_expect_geq(seen[0], 1);
  cr_expect_eq(seen[2], 40, "total: the stack's 20 frames × 2 radii");
  cr_expect_leq(seen[1], 20, "stopped after %llu of 40",
                (unsigned long long)seen[1]);
  cr_expect_null(res.points);
  qs_engine_close(e);
  mc_free(&c);
}

static uint32_t lcg(uint32_t *s) { return *s = *s * 1664525u + 1013904223u; }

static float bits_f(uint32_t b) {
  float x;
  memcpy(&x, &b, sizeof x);
  return x;
}

/* Whether the double products of x^n (n >= 3) lie within w double ulps
 * of a float rounding boundary (the variants recompute those within 32). */
static int near_boundary(float x, int n, int64_t w) {
  double xd = x, y = xd;
  for (int k = 1; k < n; k++) y *= xd;
  uint64_t b;
  memcpy(&b, &y, sizeof b);
  int64_t low = (int64_t)(b & ((UINT64_C(1) << 29) - 1)) - (INT64_C(1) << 28);
  return n > 2 && low > -w && low < w;
}

/* Inputs for the powers: random floats over every non-negative finite bit
 * pattern (subnormal inputs included), log-uniform tiny ones (results
 * subnormal or 0) and huge ones (results past FLT_MAX), exact powers of
 * (1 + a·2^-j)·2^m (ties and exact results: for n in 3..7 some fall in
 * the variants' window and take their scalar fix-up), floats found within
 * 2^12 double ulps of a rounding boundary for power n, ±0, negatives, inf
 * and NaN. An odd count, so the variants' scalar tails run. (No float
 * input has products that round otherwise than glibc's pow: a search over
 * every normal float for n = 3..8 found none, so the window is a bound
 * the outputs cannot show broken; the fix-up lanes are still checked.) */
static size_t power_inputs(float *x, size_t max, int n) {
  uint32_t s = 12345u + (uint32_t)n;
  size_t k = 0;
  for (int i = 0; i < 200000; i++) x[k++] = bits_f(lcg(&s) % 0x7f800000u);
  for (int i = 0; i < 20000; i++) /* negatives: the ratio's other half */
    x[k++] = bits_f(lcg(&s) % 0x7f800000u | 0x80000000u);
  for (int i = 0; i < 50000; i++) /* 2^-149 .. 2^-8, 2^8 .. 2^128 */
    x[k++] = ldexpf(1 + (float)(lcg(&s) >> 9) * 0x1p-23f,
                    (int)(lcg(&s) % 141) - 149);
  for (int i = 0; i < 50000; i++)
    x[k++] = ldexpf(1 + (float)(lcg(&s) >> 9) * 0x1p-23f,
                    8 + (int)(lcg(&s) % 120));
  for (int a = 1; a <= 7; a += 2)
    for (int j = 1; j <= 23; j++)
      for (int m = -30; m <= 30; m += 3)
        x[k++] = ldexpf(1 + (float)a * ldexpf(1, -j), m);
  size_t near = 0;
  for (uint32_t b = 0x3f000000u; near < 4000 && b < 0x3f800000u; b++)
    if (near_boundary(bits_f(b), n, 4096)) x[k++] = bits_f(b), near++;
  for (uint32_t b = 0x3a000000u; near < 8000 && b < 0x3b000000u; b++)
    if (near_boundary(bits_f(b), n, 4096)) x[k++] = bits_f(b), near++;
  cr_assert(n == 2 || near >= 100, "power %d: %zu inputs near a boundary", n,
            near);
  size_t fixed = 0;
  for (size_t i = 0; i < k; i++) fixed += near_boundary(x[i], n, 32);
  cr_assert(n == 2 || n == 8 || fixed > 0,
            "power %d: no input in the variants' window", n);
  const float special[] = {0.0f, -0.0f, -1.0f, -FLT_MIN, -FLT_MAX, FLT_MIN,
                           FLT_MAX, FLT_TRUE_MIN, INFINITY, -INFINITY, NAN,
                           1.0f};
  for (size_t i = 0; i < sizeof special / sizeof *special; i++)
    x[k++] = special[i];
  if (k % 2 == 0) x[k++] = 0.75f;
  cr_assert_leq(k, max);
  return k;
}

/* Whether a and b have the same bits, or are both NaN. */
static int same(float a, float b) {
  return (isnan(a) && isnan(b)) || !memcmp(&a, &b, sizeof a);
}

/* Every variant's map of every whole sensitivity 2..8 is (float)pow(x, n)
 * bit for bit (0 for a negative x, −0 for −0 to an odd power), and times
 * the intensity in float with an image; every other sensitivity (none,
 * not whole, beyond 8) gives the portable map's bits. */
Test(sweep, vector_powers_are_pows_bits) {
  size_t max = 440000;
  float *x = malloc(max * sizeof *x), *img = malloc(max * sizeof *img),
        *got = malloc(max * sizeof *got), *ref = malloc(max * sizeof *ref);
  cr_assert(x && img && got && ref);
  int variants = 0;
  for (int w = 0; w < SWEEP_VARIANTS; w++) {
    const sweep_kernels *kf = sweep_kernels_get(w);
    if (!kf) continue;
    variants++;
    for (int n = 2; n <= 8; n++) {
      size_t len = power_inputs(x, max, n), bad = 0;
      uint32_t s = 99;
      for (size_t i = 0; i < len; i++)
        img[i] = (float)(lcg(&s) >> 8) * 0x1p-20f;
      kf->map(x, NULL, (float)n, len, got);
      for (size_t i = 0; i < len; i++) {
        float want = x[i] < 0 ? 0.0f : (float)pow((double)x[i], (double)n);
        if (!same(got[i], want) && bad++ < 5)
          cr_log_error("%s: %a^%d: %a, pow %a", kf->name, (double)x[i], n,
                       (double)got[i], (double)want);
      }
      kf->map(x, img, (float)n, len, got);
      for (size_t i = 0; i < len; i++) {
        float p = x[i] < 0 ? 0.0f : (float)pow((double)x[i], (double)n);
        float want = p * img[i];
        if (!same(got[i], want) && bad++ < 5)
          cr_log_error("%s: %a^%d * %a: %a, want %a", kf->name, (double)x[i],
                       n, (double)img[i], (double)got[i], (double)want);
      }
      cr_expect_eq(bad, 0, "%s, power %d: %zu of %zu differ from pow's",
                   kf->name, n, bad, 2 * len);
    }
    const float other[] = {0, 0.5f, 1, 1.5f, 2.5f, 9, 12.25f};
    size_t len = power_inputs(x, max, 3);
    for (size_t o = 0; o < sizeof other / sizeof *other; o++) {
      sweep_kernels_get(SWEEP_PORTABLE)->map(x, img, other[o], len, ref);
      kf->map(x, img, other[o], len, got);
      size_t bad = 0;
      for (size_t i = 0; i < len; i++) bad += !same(got[i], ref[i]);
      cr_expect_eq(bad, 0, "%s, sensitivity %g: %zu differ", kf->name,
                   (double)other[o], bad);
    }
  }
  cr_expect_geq(variants, 1);
  free(x);
  free(img);
  free(got);
  free(ref);
}

/* Every variant's fold is temporal_add's, with and without a half, on
 * ranges that start and end off the vector width. */
Test(sweep, vector_folds_are_temporal_adds) {
  size_t px = 1031;
  float *map = malloc(px * sizeof *map);
  cr_assert(map);
  uint32_t s = 5;
  for (int w = 0; w < SWEEP_VARIANTS; w++) {
    const sweep_kernels *kf = sweep_kernels_get(w);
    if (!kf) continue;
    qs_esrrf_partial p[4];
    for (int i = 0; i < 4; i++)
      cr_assert_eq(qs_esrrf_partial_init(&p[i], 0, 1, px), QS_OK);
    for (int f = 0; f < 6; f++) {
      for (size_t i = 0; i < px; i++)
        map[i] = bits_f(lcg(&s) % 0x4f000000u) * (f % 2 ? 1 : -1);
      size_t b = f ? (size_t)f * 3 : 0, e = px - (size_t)f;
      if (!f) { /* the first frame starts the statistics */
        for (int i = 0; i < 4; i++) temporal_add(&p[i], map, 0, 0, px);
        continue;
      }
      temporal_add(&p[0], map, (uint64_t)f, b, e);
      temporal_add(&p[1], map, (uint64_t)f, b, e);
      kf->add(&p[2], f % 2 ? &p[3] : NULL, map, b, e);
      if (f % 2 == 0) kf->add(&p[3], NULL, map, b, e); /* alone */
    }
    cr_expect_eq(memcmp(p[0].data, p[2].data, px * sizeof(double)), 0,
                 "%s: the sum differs", kf->name);
    cr_expect_eq(memcmp(p[1].data, p[3].data, px * sizeof(double)), 0,
                 "%s: the half differs", kf->name);
    for (int i = 0; i < 4; i++) qs_esrrf_partial_free(&p[i]);
  }
  free(map);
}

/* Every variant's map_add is its map then its add, bit for bit: every
 * whole power 2..8 on the inputs near the variants' rounding window, the
 * special values, sensitivities taken by pow or by none; with and without
 * the intensity and a half, on ranges off the vector width. */
Test(sweep, vector_map_adds_are_maps_then_adds) {
  size_t max = 440000;
  float *x = malloc(max * sizeof *x), *img = malloc(max * sizeof *img),
        *map = malloc(max * sizeof *map);
  cr_assert(x && img && map);
  const float pw[] = {2, 3, 4, 5, 6, 7, 8, 0, 0.5f, 1, 1.5f, 9, 12.25f};
  int variants = 0;
  for (int w = 0; w < SWEEP_VARIANTS; w++) {
    const sweep_kernels *kf = sweep_kernels_get(w);
    if (!kf) continue;
    variants++;
    for (size_t q = 0; q < sizeof pw / sizeof *pw; q++) {
      int n = pw[q] >= 2 && pw[q] <= 8 ? (int)pw[q] : 3;
      size_t len = power_inputs(x, max, n);
      uint32_t s = 7 + (uint32_t)q;
      for (size_t i = 0; i < len; i++)
        img[i] = (float)(lcg(&s) >> 8) * 0x1p-20f;
      for (int with_img = 0; with_img < 2; with_img++) {
        const float *im = with_img ? img : NULL;
        size_t b = 3 + (size_t)with_img, e = len - 5 - (size_t)with_img;
        /* want: 0 sum and 1 half through map and add, 2 a sum alone;
         * got: the same through map_add */
        qs_esrrf_partial want[3], got[3];
        for (int i = 0; i < 3; i++) {
          cr_assert_eq(qs_esrrf_partial_init(&want[i], 0, 1, len), QS_OK);
          cr_assert_eq(qs_esrrf_partial_init(&got[i], 0, 1, len), QS_OK);
          for (size_t k = 0; k < len; k++)
            want[i].data[k] = got[i].data[k] = (double)k * 0.25 - 7;
        }
        kf->map(x + b, im ? im + b : NULL, pw[q], e - b, map + b);
        kf->add(&want[0], &want[1], map, b, e);
        kf->add(&want[2], NULL, map, b, e);
        kf->map_add(x, im, pw[q], &got[0], &got[1], b, e);
        kf->map_add(x, im, pw[q], &got[2], NULL, b, e);
        for (int i = 0; i < 3; i++) {
          size_t bad = 0;
          for (size_t k = 0; k < len; k++)
            bad += memcmp(&want[i].data[k], &got[i].data[k],
                          sizeof(double)) != 0;
          cr_expect_eq(bad, 0,
                       "%s, sensitivity %g, %s intensity, %s: %zu of %zu "
                       "differ",
                       kf->name, (double)pw[q], with_img ? "with" : "no",
                       i == 0 ? "sum" : i == 1 ? "half" : "sum alone", bad,
                       len);
          qs_esrrf_partial_free(&want[i]);
          qs_esrrf_partial_free(&got[i]);
        }
      }
    }
  }
  cr_expect_geq(variants, 1);
  free(x);
  free(img);
  free(map);
}

/* The best variant is one the CPU runs, and the portable one always is. */
Test(sweep, best_fold_runs_here) {
  const sweep_kernels *best = sweep_kernels_best();
  cr_assert_not_null(sweep_kernels_get(SWEEP_PORTABLE));
  int found = 0;
  for (int w = 0; w < SWEEP_VARIANTS; w++)
    found += sweep_kernels_get(w) == best;
  cr_expect_eq(found, 1, "best: %s", best->name);
  cr_expect_null(sweep_kernels_get(SWEEP_VARIANTS));
  cr_log_info("sweep folds: %s", best->name);
}
