/* test_frc.c — the frc method: NanoPyx's FIRECalculator on its own
 * fixtures (smoothed curve and FIRE number), closed forms (an image with
 * itself correlates to 1 on every ring; a shared structure under
 * independent noise crosses the threshold), serial = threaded bit for bit,
 * and bad inputs refused with the field named. */
#include <criterion/criterion.h>
#include <math.h>

#include "metric_fixtures.h"
#include "qs_test.h"
#include "quicksilver.h"

TestSuite(frc, .fini = qs_leak_check);

static void frc_case(const char *name, const char *impl) {
  metric_case c;
  mc_load(name, &c);
  qs_engine *e = mc_engine();
  qs_image out[2];
  mc_run(e, "frc", impl, c.in, 2, NULL, 0, out, 2);
  const qs_image *ref = &c.out[0]; /* (1, 2, rings): frequency, smoothed */
  size_t rings = ref->cols;
  cr_assert_eq(out[0].cols, rings, "%s: %zu rings, NanoPyx %zu", name,
               out[0].cols, rings);
  double worst = 0;
  for (size_t r = 0; r < rings; r++) {
    double df = fabs(out[0].data[r] - ref->data[r]);
    double dv = fabs(out[0].data[2 * rings + r] - ref->data[rings + r]);
    worst = fmax(worst, fmax(df, dv));
    cr_expect(dv <= 1e-4 && df <= 1e-6 * fmax(1, ref->data[r]),
              "%s ring %zu: frequency %.9g vs %.9g, smoothed FRC %.9g vs "
              "NanoPyx %.9g",
              name, r, out[0].data[r], ref->data[r],
              out[0].data[2 * rings + r], ref->data[rings + r]);
  }
  float fire = out[1].data[0], nfire = c.out[1].data[0];
  fprintf(stderr, "frc %-14s %-8s worst curve diff %.3g, FIRE %.6g vs NanoPyx "
                  "%.6g\n",
          name, impl, worst, fire, nfire);
  /* the same crossing: FIRE equal within the ring step (relative 1e-4) */
  cr_expect(mc_close(fire, nfire, 1e-4, 1e-6),
            "%s: FIRE %.9g, NanoPyx %.9g", name, fire, nfire);
  qs_image_free(&out[0]);
  qs_image_free(&out[1]);
  qs_engine_close(e);
  mc_free(&c);
}

Test(frc, nanopyx_real_m5) { frc_case("frc_real_m5", "serial"); }
Test(frc, nanopyx_full_m5) { frc_case("frc_full_m5", "serial"); }
Test(frc, nanopyx_sim_rect) { frc_case("frc_sim_rect", "serial"); }
Test(frc, nanopyx_threaded) {
  frc_case("frc_full_m5", "threaded");
  frc_case("frc_sim_rect", "threaded");
}

/* A smooth random-ish image of n × m. */
static void fill(qs_image *img, unsigned seed, double noise) {
  for (size_t y = 0; y < img->rows; y++)
    for (size_t x = 0; x < img->cols; x++) {
      seed = seed * 1103515245u + 12345u;
      double s = sin(0.31 * (double)x) * cos(0.17 * (double)y) * 50 + 100;
      img->data[y * img->cols + x] =
          (float)(s + noise * ((double)(seed >> 8) / 16777216.0 - 0.5));
    }
}

Test(frc, itself_is_one_on_every_ring) {
  qs_engine *e = mc_engine();
  qs_image a;
  cr_assert_eq(qs_image_alloc(&a, 1, 70, 64), QS_OK);
  fill(&a, 7, 40);
  qs_image in[2] = {a, a}, out[2];
  mc_run(e, "frc", "serial", in, 2, NULL, 0, out, 2);
  size_t rings = out[0].cols;
  cr_assert_eq(rings, 31);
  for (size_t r = 0; r < rings; r++) {
    cr_expect_eq(out[0].data[rings + r], 1.0f, "ring %zu: %.9g", r,
                 out[0].data[rings + r]);
    cr_expect_float_eq(out[0].data[2 * rings + r], 1.0f, 1e-6);
  }
  cr_expect_eq(out[1].data[0], 0.0f, "no crossing: FIRE 0 (NanoPyx's)");
  qs_image_free(&out[0]);
  qs_image_free(&out[1]);
  qs_image_free(&a);
  qs_engine_close(e);
}

Test(frc, serial_equals_threaded_and_half_bit_is_stricter) {
  qs_engine *e = mc_engine();
  qs_image a, b;
  cr_assert_eq(qs_image_alloc(&a, 1, 96, 96), QS_OK);
  cr_assert_eq(qs_image_alloc(&b, 1, 96, 96), QS_OK);
  fill(&a, 1, 400);
  fill(&b, 2, 400);
  qs_image in[2] = {a, b}, s[2], t[2], h[2];
  mc_run(e, "frc", "serial", in, 2, NULL, 0, s, 2);
  mc_run(e, "frc", "threaded", in, 2, NULL, 0, t, 2);
  cr_assert_eq(memcmp(s[0].data, t[0].data, 3 * s[0].cols * sizeof(float)), 0);
  cr_assert_eq(memcmp(s[1].data, t[1].data, 3 * sizeof(float)), 0);
  cr_expect_gt(s[1].data[0], 0, "noisy copies of one structure cross 1/7");
  qs_param p = {"threshold", 0, "half_bit"};
  mc_run(e, "frc", "serial", in, 2, &p, 1, h, 2);
  /* the half-bit curve lies above 1/7 on these rings: an earlier crossing
   * (a lower frequency, a coarser resolution) */
  cr_expect_geq(h[1].data[0], s[1].data[0], "half-bit %g, 1/7 %g",
                h[1].data[0], s[1].data[0]);
  for (int k = 0; k < 2; k++) {
    qs_image_free(&s[k]);
    qs_image_free(&t[k]);
    qs_image_free(&h[k]);
  }
  qs_image_free(&a);
  qs_image_free(&b);
  qs_engine_close(e);
}

Test(frc, bad_inputs_name_the_field) {
  qs_engine *e = mc_engine();
  qs_image a, b, c;
  cr_assert_eq(qs_image_alloc(&a, 1, 32, 32), QS_OK);
  cr_assert_eq(qs_image_alloc(&b, 1, 32, 30), QS_OK);
  cr_assert_eq(qs_image_alloc(&c, 2, 32, 32), QS_OK);
  qs_image out[2];
  qs_image in1[2] = {a, b};
  qs_run_request rq = {.inputs = in1, .n_inputs = 2};
  cr_expect_eq(qs_method_run(e, "frc", &rq, out, 2, NULL), QS_ESHAPE);
  cr_expect(strstr(qs_engine_error(e), "image_b") != NULL, "%s",
            qs_engine_error(e));
  qs_image in2[2] = {c, a};
  rq.inputs = in2;
  cr_expect_eq(qs_method_run(e, "frc", &rq, out, 2, NULL), QS_ESHAPE);
  cr_expect(strstr(qs_engine_error(e), "image_a has 2 frames") != NULL, "%s",
            qs_engine_error(e));
  qs_image tiny;
  cr_assert_eq(qs_image_alloc(&tiny, 1, 8, 8), QS_OK);
  qs_image in3[2] = {tiny, tiny};
  rq.inputs = in3;
  cr_expect_eq(qs_method_run(e, "frc", &rq, out, 2, NULL), QS_ESHAPE);
  cr_expect(strstr(qs_engine_error(e), "too small") != NULL, "%s",
            qs_engine_error(e));
  qs_param p = {"pixel_size", -1, NULL};
  rq.inputs = in1;
  in1[1] = a;
  rq.params = &p;
  rq.n_params = 1;
  cr_expect_eq(qs_method_run(e, "frc", &rq, out, 2, NULL), QS_EPARAM);
  cr_expect(strstr(qs_engine_error(e), "pixel_size") != NULL, "%s",
            qs_engine_error(e));
  qs_image_free(&a);
  qs_image_free(&b);
  qs_image_free(&c);
  qs_image_free(&tiny);
  qs_engine_close(e);
}

/* A plan of frc samples its rings once (frc_open) and reuses them: each
 * of its runs, on pairs of images of one size, has the bits of a one-shot
 * call on the same pair, for both implementations. */
Test(frc, plan_runs_equal_one_shot_calls) {
  qs_engine *e = mc_engine();
  qs_image a, b;
  cr_assert_eq(qs_image_alloc(&a, 1, 70, 64), QS_OK);
  cr_assert_eq(qs_image_alloc(&b, 1, 70, 64), QS_OK);
  const char *impls[] = {"serial", "threaded"};
  for (int k = 0; k < 2; k++) {
    qs_image shape[2] = {{NULL, 1, 70, 64, NULL}, {NULL, 1, 70, 64, NULL}};
    qs_run_request rq = {.inputs = shape, .n_inputs = 2, .impl = impls[k]};
    qs_plan *p = NULL;
    cr_assert_eq(qs_method_open(e, "frc", &rq, &p), QS_OK, "%s",
                 qs_engine_error(e));
    for (unsigned round = 0; round < 3; round++) {
      fill(&a, 11 + round, 20 + 10 * round);
      fill(&b, 97 + round, 20 + 10 * round);
      qs_image in[2] = {a, b}, got[2], want[2];
      cr_assert_eq(qs_plan_run(p, in, 2, got, 2, NULL), QS_OK, "%s",
                   qs_engine_error(e));
      mc_run(e, "frc", impls[k], in, 2, NULL, 0, want, 2);
      for (int o = 0; o < 2; o++) {
        size_t n = want[o].frames * want[o].rows * want[o].cols;
        cr_assert_eq(got[o].frames * got[o].rows * got[o].cols, n);
        cr_expect_eq(memcmp(got[o].data, want[o].data, n * sizeof(float)), 0,
                     "%s round %u output %d: the plan's run differs",
                     impls[k], round, o);
        qs_image_free(&got[o]);
        qs_image_free(&want[o]);
      }
    }
    qs_plan_close(p);
  }
  qs_image_free(&a);
  qs_image_free(&b);
  qs_engine_close(e);
}
