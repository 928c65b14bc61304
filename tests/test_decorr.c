/* test_decorr.c — the decorr method: NanoPyx's DecorrAnalysis on its own
 * fixtures (resolution, cut-off and every curve), serial = threaded bit
 * for bit, a closed form (a finer structure gives a finer resolution),
 * and bad inputs refused with the field named. */
#include <criterion/criterion.h>
#include <math.h>

#include "metric_fixtures.h"
#include "qs_test.h"
#include "quicksilver.h"

TestSuite(decorr, .fini = qs_leak_check);

static void dc_case(const char *name, const char *impl) {
  metric_case c;
  mc_load(name, &c);
  qs_engine *e = mc_engine();
  qs_image out[2];
  mc_run(e, "decorr", impl, c.in, 1, NULL, 0, out, 2);
  const float *r = out[0].data, *n = c.out[0].data;
  fprintf(stderr,
          "decorr %-12s %-8s resolution %.7g (NanoPyx %.7g) kc_max %.7g "
          "(%.7g) amplitude %.7g (%.7g) kc0 %.7g (%.7g)\n",
          name, impl, r[0], n[0], r[1], n[1], r[2], n[2], r[3], n[3]);
  /* resolution, cut-offs and amplitude to float rounding: 1e-6 relative */
  for (int k = 0; k < 4; k++)
    cr_expect(mc_close(r[k], n[k], 1e-6, 1e-6), "%s value %d: %.9g vs %.9g",
              name, k, r[k], n[k]);
  /* Every curve, every radius within 1e-6: the decorr method follows
   * NanoPyx's arithmetic (its whole-pixel halves, its float sums on the
   * two threads the fixtures were made with, the high-pass images' DC bin
   * as their sum); what remains is the two FFTs' rounding (numpy's
   * pocketfft and kissfft, both in float), measured at 2e-7. */
  size_t total = c.out[1].rows * c.out[1].cols, nr = c.out[1].cols;
  cr_assert_eq(out[1].rows * out[1].cols, total);
  double worst = 0;
  size_t at = 0, nan_differ = 0;
  for (size_t i = 0; i < total; i++) {
    int na = isnan(out[1].data[i]), nb = isnan(c.out[1].data[i]);
    nan_differ += na != nb;
    double d = na && nb ? 0 : fabs(out[1].data[i] - c.out[1].data[i]);
    if (d > worst) at = i;
    worst = fmax(worst, d);
  }
  fprintf(stderr, "decorr %-12s curves: worst %.3g (curve %zu, radius %zu: "
          "%.7g vs %.7g)\n", name, worst, at / nr, at % nr, out[1].data[at],
          c.out[1].data[at]);
  cr_expect_eq(nan_differ, 0, "%s: %zu values NaN on one side only", name,
               nan_differ);
  cr_expect_leq(worst, 1e-6, "%s curves differ by %.3g", name, worst);
  qs_image_free(&out[0]);
  qs_image_free(&out[1]);
  qs_engine_close(e);
  mc_free(&c);
}

Test(decorr, nanopyx_real_m5) { dc_case("dc_real_m5", "serial"); }
Test(decorr, nanopyx_full_m5) { dc_case("dc_full_m5", "serial"); }
Test(decorr, nanopyx_sim_rect) { dc_case("dc_sim_rect", "serial"); }

Test(decorr, serial_equals_threaded) {
  metric_case c;
  mc_load("dc_real_m5", &c);
  qs_engine *e = mc_engine();
  qs_image s[2], t[2];
  mc_run(e, "decorr", "serial", c.in, 1, NULL, 0, s, 2);
  mc_run(e, "decorr", "threaded", c.in, 1, NULL, 0, t, 2);
  cr_expect_eq(memcmp(s[0].data, t[0].data, 4 * sizeof(float)), 0);
  cr_expect_eq(memcmp(s[1].data, t[1].data,
                      s[1].rows * s[1].cols * sizeof(float)),
               0);
  for (int k = 0; k < 2; k++) {
    qs_image_free(&s[k]);
    qs_image_free(&t[k]);
  }
  qs_engine_close(e);
  mc_free(&c);
}

/* Gaussian spots of width w on a grid: the finer the spots, the finer the
 * resolution decorrelation finds. */
static double spots_resolution(qs_engine *e, double width) {
  qs_image img;
  cr_assert_eq(qs_image_alloc(&img, 1, 96, 96), QS_OK);
  unsigned seed = 3;
  for (size_t y = 0; y < 96; y++)
    for (size_t x = 0; x < 96; x++) {
      double v = 10;
      for (int k = 0; k < 40; k++) {
        double cy = 8 + (k * 37) % 80, cx = 8 + (k * 53) % 80;
        double d2 = (y - cy) * (y - cy) + (x - cx) * (x - cx);
        v += 100 * exp(-d2 / (2 * width * width));
      }
      seed = seed * 1103515245u + 12345u;
      img.data[y * 96 + x] = (float)(v + 2 * ((seed >> 8) / 16777216.0));
    }
  qs_image out[2];
  mc_run(e, "decorr", "serial", &img, 1, NULL, 0, out, 2);
  double r = out[0].data[0];
  qs_image_free(&img);
  qs_image_free(&out[0]);
  qs_image_free(&out[1]);
  return r;
}

Test(decorr, finer_structure_finer_resolution) {
  qs_engine *e = mc_engine();
  double fine = spots_resolution(e, 1.0), coarse = spots_resolution(e, 3.0);
  fprintf(stderr, "decorr spots: width 1 -> %.4g px, width 3 -> %.4g px\n",
          fine, coarse);
  cr_expect_gt(fine, 0);
  cr_expect_lt(fine, coarse, "width 1: %g, width 3: %g", fine, coarse);
  qs_engine_close(e);
}

Test(decorr, bad_inputs_name_the_field) {
  qs_engine *e = mc_engine();
  qs_image two;
  cr_assert_eq(qs_image_alloc(&two, 2, 16, 16), QS_OK);
  qs_image out[2];
  qs_run_request rq = {.inputs = &two, .n_inputs = 1};
  cr_expect_eq(qs_method_run(e, "decorr", &rq, out, 2, NULL), QS_ESHAPE);
  cr_expect(strstr(qs_engine_error(e), "image has 2 frames") != NULL, "%s",
            qs_engine_error(e));
  two.frames = 1;
  qs_param p[] = {{"rmin", 0.6, NULL}, {"rmax", 0.5, NULL}};
  rq.params = p;
  rq.n_params = 2;
  cr_expect_eq(qs_method_run(e, "decorr", &rq, out, 2, NULL), QS_EPARAM);
  cr_expect(strstr(qs_engine_error(e), "rmin") != NULL, "%s",
            qs_engine_error(e));
  two.frames = 2;
  qs_image_free(&two);
  qs_engine_close(e);
}
