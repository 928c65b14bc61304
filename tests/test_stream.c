/* test_stream.c — the public eSRRF partial statistic (quicksilver.h, "live
 * eSRRF"): adding a timepoint's maps one by one and finishing gives
 * method_run's bits; exact merges of adjacent runs at every split; closed
 * forms far from zero; bad input. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "method_harness.h"
#include "methods/esrrf/esrrf.h"
#include "methods/methods.h"
#include "qs_test.h"

TestSuite(partial, .fini = qs_leak_check);

enum { AVG, VAR, TAC2, NONE };

/* eSRRF parameters: M 3, radius 1.5, the given statistic, all frames one
 * timepoint, with or without the correction. */
static void es_params(param p[7], int temporal, int mpc) {
  const param all[7] = {{"magnification", 3, NULL},
                        {"radius", 1.5, NULL},
                        {"sensitivity", 1, NULL},
                        {"intensity_weighting", 1, NULL},
                        {"frames_per_timepoint", 0, NULL},
                        {"temporal", temporal, NULL},
                        {"macro_pixel_correction", mpc, NULL}};
  memcpy(p, all, sizeof all);
}

static image es_run(const char *impl, const image *in, int temporal,
                    int mpc) {
  param p[7];
  image out[1];
  char err[512] = "";
  es_params(p, temporal, mpc);
  int rc = harness_run(&method_esrrf, impl, in, p, 7, out, NULL, err,
                       sizeof err);
  cr_assert_eq(rc, QS_OK, "esrrf %s: %s", impl, err);
  return out[0];
}

static image noisy(size_t f, size_t r, size_t c, unsigned seed) {
  image m;
  cr_assert_eq(image_alloc(&m, f, r, c), QS_OK);
  harness_fill(&m, seed, 50);
  for (size_t i = 0; i < f * r * c; i++) m.data[i] += 200;
  return m;
}

/* The timepoint's maps (temporal none), added one at a time and finished,
 * give the very bits of the batch call with the statistic: the same
 * formula in the same order. */
Test(partial, add_and_finish_equal_method_run_bits) {
  image st = noisy(7, 9, 8, 3);
  static const char *const impls[] = {"serial", "threaded_dynamic",
                                      "fused"};
  for (int k = 0; k < 3; k++) {
    image maps = es_run(impls[k], &st, NONE, 0);
    for (int t = AVG; t <= TAC2; t++)
      for (int mpc = 0; mpc <= 1; mpc++) {
        image ref = es_run(impls[k], &st, t, mpc);
        esrrf_partial p;
        cr_assert_eq(esrrf_partial_init(&p, t, maps.rows, maps.cols), QS_OK);
        for (size_t f = 0; f < maps.frames; f++)
          cr_assert_eq(esrrf_partial_add(
                           &p, maps.data + f * maps.rows * maps.cols, 1),
                       QS_OK);
        cr_assert_eq(p.n, 7);
        float *out = malloc(maps.rows * maps.cols * sizeof *out);
        cr_assert_eq(esrrf_partial_finish(&p, 3, mpc, out), QS_OK);
        cr_assert_eq(memcmp(out, ref.data, maps.rows * maps.cols * 4), 0,
                     "%s temporal %d mpc %d: not bit-identical", impls[k], t,
                     mpc);
        free(out);
        esrrf_partial_free(&p);
        image_free(&ref);
      }
    image_free(&maps);
  }
  image_free(&st);
}

/* Partials of [0, s) and [s, n) merged equal the partial of [0, n) up to
 * double rounding, at every split and for a three-way split; merging into
 * or from an empty partial copies. */
Test(partial, merge_at_every_split_equals_the_whole) {
  enum { N = 9, R = 3, C = 4, PX = R * C };
  float x[N * PX];
  /* far from zero, small fluctuations: the shift must carry the merge */
  uint64_t s = 12345;
  for (int i = 0; i < N * PX; i++) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x[i] = 1.0e4f + (float)((s >> 40) % 1000) / 37.0f;
  }
  for (int t = AVG; t <= TAC2; t++) {
    size_t k = esrrf_partial_slots(t);
    esrrf_partial whole;
    cr_assert_eq(esrrf_partial_init(&whole, t, R, C), QS_OK);
    cr_assert_eq(esrrf_partial_add(&whole, x, N), QS_OK);
    float ref[PX], got[PX];
    cr_assert_eq(esrrf_partial_finish(&whole, 1, 0, ref), QS_OK);
    for (int a = 0; a <= N; a++)
      for (int b = a; b <= N; b++) {
        esrrf_partial p[3];
        int cut[4] = {0, a, b, N};
        for (int i = 0; i < 3; i++) {
          cr_assert_eq(esrrf_partial_init(&p[i], t, R, C), QS_OK);
          cr_assert_eq(esrrf_partial_add(&p[i], x + cut[i] * PX,
                                         (size_t)(cut[i + 1] - cut[i])),
                       QS_OK);
        }
        cr_assert_eq(esrrf_partial_merge(&p[0], &p[1]), QS_OK);
        cr_assert_eq(esrrf_partial_merge(&p[0], &p[2]), QS_OK);
        cr_assert_eq(p[0].n, N);
        for (size_t i = 0; i < PX * k; i++) {
          double w = whole.data[i], m = p[0].data[i];
          cr_assert(fabs(w - m) <= 1e-9 * (fabs(w) + 1e4),
                    "temporal %d split %d/%d slot %zu: %.17g vs %.17g", t, a,
                    b, i, m, w);
        }
        cr_assert_eq(esrrf_partial_finish(&p[0], 1, 0, got), QS_OK);
        for (int i = 0; i < PX; i++)
          cr_assert(fabsf(got[i] - ref[i]) <= 1e-6f * fabsf(ref[i]) + 1e-6f,
                    "temporal %d split %d/%d pixel %d: %g vs %g", t, a, b, i,
                    (double)got[i], (double)ref[i]);
        for (int i = 0; i < 3; i++) esrrf_partial_free(&p[i]);
      }
    esrrf_partial_free(&whole);
  }
}

/* Closed forms at an offset of 1e6: x_t = 1e6 + t for t < 6 gives mean
 * 1e6 + 2.5, variance 35/12, and lag-1 autocovariance
 * Σ_{t<5} (t − 2.5)(t − 1.5) / 5 = 1.75. Two halves merged give the same. */
Test(partial, closed_forms_far_from_zero) {
  float x[6];
  for (int t = 0; t < 6; t++) x[t] = 1.0e6f + (float)t;
  const double want[3] = {1e6 + 2.5, 35.0 / 12.0, 1.75};
  for (int t = AVG; t <= TAC2; t++) {
    esrrf_partial a, b;
    cr_assert_eq(esrrf_partial_init(&a, t, 1, 1), QS_OK);
    cr_assert_eq(esrrf_partial_init(&b, t, 1, 1), QS_OK);
    cr_assert_eq(esrrf_partial_add(&a, x, 2), QS_OK);
    cr_assert_eq(esrrf_partial_add(&b, x + 2, 4), QS_OK);
    cr_assert_eq(esrrf_partial_merge(&a, &b), QS_OK);
    float out;
    cr_assert_eq(esrrf_partial_finish(&a, 1, 0, &out), QS_OK);
    cr_assert_float_eq(out, want[t], 1e-6 * want[t], "temporal %d: %.9g", t,
                       (double)out);
    esrrf_partial_free(&a);
    esrrf_partial_free(&b);
  }
}

Test(partial, bad_input_is_refused) {
  esrrf_partial p, q;
  float x[6] = {1, 2, 3, 4, 5, 6}, out[6];
  cr_assert_eq(esrrf_partial_init(&p, NONE, 2, 3), QS_EINVAL);
  cr_assert_null(p.data);
  cr_assert_eq(esrrf_partial_init(&p, -1, 2, 3), QS_EINVAL);
  cr_assert_eq(esrrf_partial_init(&p, AVG, 0, 3), QS_EINVAL);
  cr_assert_eq(esrrf_partial_init(&p, AVG, (size_t)1 << 40, 1 << 20),
               QS_EOVERFLOW);
  cr_assert_eq(esrrf_partial_slots(NONE), 0);
  cr_assert_eq(esrrf_partial_init(&p, TAC2, 2, 3), QS_OK);
  cr_assert_eq(esrrf_partial_finish(&p, 1, 0, out), QS_EINVAL, "empty");
  cr_assert_eq(esrrf_partial_add(&p, x, 1), QS_OK);
  cr_assert_eq(esrrf_partial_finish(&p, 1, 0, out), QS_EINVAL,
               "tac2 of one frame");
  cr_assert_eq(esrrf_partial_add(&p, NULL, 1), QS_EINVAL);
  cr_assert_eq(esrrf_partial_add(&p, x, 1), QS_OK);
  cr_assert_eq(esrrf_partial_finish(&p, 2, 1, out), QS_EINVAL,
               "3 columns are not a multiple of magnification 2");
  cr_assert_eq(esrrf_partial_finish(&p, 1, 0, out), QS_OK);
  cr_assert_eq(esrrf_partial_init(&q, VAR, 2, 3), QS_OK);
  cr_assert_eq(esrrf_partial_merge(&p, &q), QS_EINVAL, "other statistic");
  esrrf_partial_free(&q);
  cr_assert_eq(esrrf_partial_init(&q, TAC2, 3, 2), QS_OK);
  cr_assert_eq(esrrf_partial_merge(&p, &q), QS_EINVAL, "other size");
  cr_assert_eq(p.n, 2);
  esrrf_partial_free(&q);
  esrrf_partial_free(&p);
  esrrf_partial_free(&p); /* emptied: safe */
  cr_assert_eq(esrrf_partial_add(&p, x, 1), QS_EINVAL);
}
