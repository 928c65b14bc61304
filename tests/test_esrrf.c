/* test_esrrf.c — the eSRRF method: temporal=none against the chain of its
 * steps run one by one, AVG/VAR/TAC2 against a direct double computation,
 * short last timepoints, the macro-pixel correction, agreement of every
 * implementation with serial (test_reference checks them all against
 * NanoPyx's outputs), finite output on the real stacks, two-emitter
 * resolution, and bad input. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "method_harness.h"
#include "methods/esrrf/esrrf.h"
#include "methods/methods.h"
#include "qs_test.h"
#include "tiff.h"

TestSuite(esrrf, .fini = qs_leak_check);

static const qs_method_desc *const ES = &method_esrrf;
static const char *const CPU_IMPLS[] = {"serial", "threaded",
                                        "threaded_static",
                                        "threaded_dynamic",
                                        "threaded_guided"};

enum { AVG, VAR, TAC2, NONE };

typedef struct opts {
  int mag;
  double radius, sens;
  int iw, fpt, temporal, mpc;
} opts;

static const opts DEFAULTS = {5, 1.5, 1, 1, 0, AVG, 1};

/* The parameters of o, by name. */
static void params_of(opts o, qs_param p[7]) {
  const qs_param all[7] = {{"magnification", o.mag, NULL},
                           {"radius", o.radius, NULL},
                           {"sensitivity", o.sens, NULL},
                           {"intensity_weighting", o.iw, NULL},
                           {"frames_per_timepoint", o.fpt, NULL},
                           {"temporal", o.temporal, NULL},
                           {"macro_pixel_correction", o.mpc, NULL}};
  memcpy(p, all, sizeof all);
}

/* Runs impl (on device, for OpenCL) with the options o. */
static int run_on(const char *impl, void *device, const qs_image *in, opts o,
                  qs_image *out) {
  qs_param p[7];
  params_of(o, p);
  char err[512] = "";
  int rc = harness_run(ES, impl, in, p, 7, out, device, err, sizeof err);
  if (rc) fprintf(stderr, "esrrf %s: %s\n", impl, err);
  return rc;
}

static int run(const char *impl, const qs_image *in, opts o, qs_image *out) {
  return run_on(impl, NULL, in, o, out);
}

/* Three cases that differ in every parameter the kernels see: defaults;
 * temporal none, M 3, radius 2.5, sensitivity 2; tac2 over timepoints of
 * 3, M 2, radius 1, no intensity weighting. */
static void agreement_cases(opts cases[3]) {
  cases[0] = cases[1] = cases[2] = DEFAULTS;
  cases[1].temporal = NONE;
  cases[1].mag = 3;
  cases[1].radius = 2.5;
  cases[1].sens = 2;
  cases[2].temporal = TAC2;
  cases[2].iw = 0;
  cases[2].fpt = 3;
  cases[2].mag = 2;
  cases[2].radius = 1;
}

/* A blinking-emitter stack: Gaussian spots (sigma in pixels) at the given
 * positions, each on with probability `p_on` per frame, on a background,
 * with shot-like noise (sqrt of the expected value times a uniform-sum
 * normal deviate) from a fixed-seed generator. */
typedef struct emitter {
  double y, x;
} emitter;

static uint64_t rng_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static double rng_unit(uint64_t *s) {
  return (double)(rng_next(s) >> 11) / 9007199254740992.0;
}

static qs_image blinking(size_t f, size_t r, size_t c, const emitter *e,
                         size_t n, double sigma, double p_on, double noise,
                         uint64_t seed) {
  qs_image m;
  cr_assert_eq(qs_image_alloc(&m, f, r, c), QS_OK);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t k = 0; k < f; k++) {
    int on[8];
    for (size_t i = 0; i < n; i++) on[i] = rng_unit(&s) < p_on;
    for (size_t y = 0; y < r; y++)
      for (size_t x = 0; x < c; x++) {
        double v = 100;
        for (size_t i = 0; i < n; i++) {
          if (!on[i]) continue;
          double dy = (double)y + 0.5 - e[i].y, dx = (double)x + 0.5 - e[i].x;
          v += 1000 * exp(-(dx * dx + dy * dy) / (2 * sigma * sigma));
        }
        double g = 0;
        for (int u = 0; u < 12; u++) g += rng_unit(&s);
        v += noise * sqrt(v) * (g - 6);
        m.data[(k * r + y) * c + x] = (float)v;
      }
  }
  return m;
}

static qs_image random_stack(size_t f, size_t r, size_t c, uint64_t seed) {
  emitter e[3] = {{(double)r * 0.3, (double)c * 0.4},
                  {(double)r * 0.6, (double)c * 0.7},
                  {(double)r * 0.75, (double)c * 0.25}};
  return blinking(f, r, c, e, 3, 1.3, 0.5, 1, seed);
}

static double peak(const qs_image *m) {
  double p = 0;
  for (size_t i = 0; i < m->frames * m->rows * m->cols; i++)
    if (fabs(m->data[i]) > p) p = fabs(m->data[i]);
  return p;
}

/* -------------------------------------------- the chain, step by step */

static qs_image step1(const qs_method_desc *d, const qs_image *in,
                      const qs_param *p, size_t np, qs_image *second) {
  qs_image out[2];
  char err[256];
  cr_assert_eq(harness_run(d, "serial", in, p, np, out, NULL, err, sizeof err),
               QS_OK, "%s: %s", d->name, err);
  if (second) *second = out[1];
  return out[0];
}

Test(esrrf, none_equals_the_chain_of_steps) {
  qs_image st = random_stack(3, 14, 11, 1);
  opts o = DEFAULTS;
  o.temporal = NONE;
  o.sens = 2;
  qs_image es[1];
  cr_assert_eq(run("serial", &st, o, es), QS_OK);
  cr_assert_eq(es[0].frames, 3);
  cr_assert_eq(es[0].rows, 70);
  cr_assert_eq(es[0].cols, 55);

  qs_param m1[] = {{"magnification_row", 5, NULL},
                   {"magnification_col", 5, NULL}};
  qs_param m2[] = {{"magnification_row", 10, NULL},
                   {"magnification_col", 10, NULL}};
  qs_image mag = step1(&method_shift_magnify, &st, m1, 2, NULL);
  qs_image gr, gc = step1(&method_roberts_cross, &st, NULL, 0, &gr);
  qs_image in[3] = {step1(&method_shift_magnify, &gc, m2, 2, NULL),
                    step1(&method_shift_magnify, &gr, m2, 2, NULL), mag};
  qs_param pr[] = {{"magnification", 5, NULL},
                   {"radius", 1.5, NULL},
                   {"sensitivity", 2, NULL}};
  qs_image ref = step1(&method_rgc, in, pr, 3, NULL);
  size_t n = 3 * 70 * 55;
  cr_expect_eq(memcmp(es[0].data, ref.data, n * sizeof(float)), 0);
  cr_expect_gt(peak(&ref), 0);
  qs_image_free(&ref);
  for (int i = 0; i < 3; i++)
    qs_image_free(&in[i]);
  qs_image_free(&gc);
  qs_image_free(&gr);
  qs_image_free(es);
  qs_image_free(&st);
}

/* ------------------------------------------------- temporal statistics */

/* Direct double statistic of maps[t0 .. t0 + n) at pixel i. */
static double direct(const qs_image *maps, size_t t0, size_t n, size_t i,
                     int kind) {
  size_t plane = maps->rows * maps->cols;
  double mu = 0;
  for (size_t t = 0; t < n; t++) mu += maps->data[(t0 + t) * plane + i];
  mu /= (double)n;
  if (kind == AVG) return mu;
  double s = 0;
  if (kind == VAR) {
    for (size_t t = 0; t < n; t++) {
      double d = maps->data[(t0 + t) * plane + i] - mu;
      s += d * d;
    }
    return s / (double)n;
  }
  for (size_t t = 0; t + 1 < n; t++)
    s += (maps->data[(t0 + t) * plane + i] - mu) *
         (maps->data[(t0 + t + 1) * plane + i] - mu);
  return s / (double)(n - 1);
}

/* Checks every timepoint of `out` against the direct statistic of the
 * per-frame maps, within 1e-6 of that timepoint's peak. */
static void check_stat(const qs_image *maps, const qs_image *out, size_t fpt,
                       int kind) {
  size_t plane = maps->rows * maps->cols, frames = maps->frames;
  size_t tps = (frames + fpt - 1) / fpt;
  cr_assert_eq(out->frames, tps);
  for (size_t tp = 0; tp < tps; tp++) {
    size_t t0 = tp * fpt, n = frames - t0 < fpt ? frames - t0 : fpt;
    double pk = 0, worst = 0;
    for (size_t i = 0; i < plane; i++) {
      double d = direct(maps, t0, n, i, kind);
      if (fabs(d) > pk) pk = fabs(d);
    }
    if (n > 1 || kind == AVG) /* the variance of one frame is 0 */
      cr_assert_gt(pk, 0, "statistic %d, timepoint %zu: all zero", kind, tp);
    for (size_t i = 0; i < plane; i++) {
      double e = fabs(out->data[tp * plane + i] - direct(maps, t0, n, i, kind));
      if (e > worst) worst = e;
    }
    cr_expect_leq(worst, 1e-6 * pk,
                  "statistic %d, timepoint %zu of %zu frames: worst %.3g of "
                  "peak %.3g",
                  kind, tp, n, worst, pk);
  }
}

Test(esrrf, statistics_equal_a_direct_double_computation) {
  qs_image st = random_stack(11, 12, 10, 2);
  opts o = DEFAULTS;
  o.mag = 3;
  o.temporal = NONE;
  qs_image maps[1];
  cr_assert_eq(run("serial", &st, o, maps), QS_OK);
  o.mpc = 0;
  size_t fpts[] = {0, 4, 5, 11}; /* 11 = all; 4 leaves 3, 5 leaves 1 */
  for (int kind = AVG; kind <= TAC2; kind++)
    for (size_t k = 0; k < 4; k++) {
      if (kind == TAC2 && fpts[k] == 5) continue; /* 1-frame timepoint */
      o.temporal = kind;
      o.fpt = (int)fpts[k];
      qs_image out[1];
      cr_assert_eq(run("serial", &st, o, out), QS_OK);
      check_stat(maps, out, fpts[k] ? fpts[k] : 11, kind);
      qs_image_free(out);
    }
  qs_image_free(maps);
  qs_image_free(&st);
}

Test(esrrf, short_last_timepoint) {
  qs_image st = random_stack(7, 10, 10, 3);
  opts o = DEFAULTS;
  o.mag = 2;
  o.mpc = 0;
  o.temporal = NONE;
  qs_image maps[1], out[1];
  cr_assert_eq(run("serial", &st, o, maps), QS_OK);
  o.temporal = AVG;
  o.fpt = 3; /* 3 + 3 + 1 */
  cr_assert_eq(run("serial", &st, o, out), QS_OK);
  cr_assert_eq(out[0].frames, 3);
  size_t plane = out[0].rows * out[0].cols;
  /* the mean of one frame is that frame */
  cr_expect_eq(memcmp(out[0].data + 2 * plane, maps[0].data + 6 * plane,
                      plane * sizeof(float)),
               0);
  qs_image_free(out);
  o.temporal = VAR;
  cr_assert_eq(run("serial", &st, o, out), QS_OK);
  for (size_t i = 0; i < plane; i++)
    cr_assert_eq(out[0].data[2 * plane + i], 0.0f);
  qs_image_free(out);
  o.temporal = TAC2; /* 7 by 3 leaves 1 frame: refused before any work */
  char err[512];
  qs_param p[] = {{"frames_per_timepoint", 3, NULL}, {"temporal", TAC2, NULL}};
  cr_expect_eq(harness_run(ES, "serial", &st, p, 2, out, NULL, err,
                           sizeof err),
               QS_EPARAM);
  cr_expect(strstr(err, "frames_per_timepoint") && strstr(err, "tac2"),
            "%s", err);
  cr_expect_null(out[0].data);
  qs_image_free(maps);
  qs_image_free(&st);
}

Test(esrrf, macro_pixel_correction_gives_phase_means_of_one) {
  qs_image st = random_stack(6, 12, 13, 4);
  opts o = DEFAULTS;
  o.mag = 4;
  o.fpt = 3;
  qs_image raw[1], cor[1];
  o.mpc = 0;
  cr_assert_eq(run("serial", &st, o, raw), QS_OK);
  o.mpc = 1;
  cr_assert_eq(run("serial", &st, o, cor), QS_OK);
  size_t rows = cor[0].rows, cols = cor[0].cols, m = 4;
  for (size_t t = 0; t < 2; t++)
    for (size_t py = 0; py < m; py++)
      for (size_t px = 0; px < m; px++) {
        double before = 0, after = 0;
        size_t n = 0;
        for (size_t y = py; y < rows; y += m)
          for (size_t x = px; x < cols; x += m, n++) {
            before += raw[0].data[(t * rows + y) * cols + x];
            after += cor[0].data[(t * rows + y) * cols + x];
          }
        if (before == 0) {
          cr_expect_eq(after, 0);
          continue;
        }
        cr_expect(fabs(after / (double)n - 1) < 1e-5,
                  "timepoint %zu phase (%zu, %zu): mean %.9g", t, py, px,
                  after / (double)n);
      }
  qs_image_free(raw);
  qs_image_free(cor);
  qs_image_free(&st);
}

/* -------------------------------------------------------- agreement */

Test(esrrf, implementations_agree_with_serial) {
  qs_image st = random_stack(5, 17, 15, 5);
  opts cases[3];
  agreement_cases(cases);
  for (int k = 0; k < 3; k++) {
    qs_image ref[1], out[1];
    cr_assert_eq(run("serial", &st, cases[k], ref), QS_OK);
    size_t n = ref[0].frames * ref[0].rows * ref[0].cols;
    double pk = peak(ref), diff;
    cr_assert_gt(pk, 0);
    for (int i = 1; i < 5; i++) {
      cr_assert_eq(run(CPU_IMPLS[i], &st, cases[k], out), QS_OK);
      cr_expect_eq(memcmp(out[0].data, ref[0].data, n * sizeof(float)), 0,
                   "case %d: %s differs from serial", k, CPU_IMPLS[i]);
      qs_image_free(out);
    }
    cr_assert_eq(run("fused", &st, cases[k], out), QS_OK);
    harness_diff(out, ref, &diff, &pk);
    fprintf(stderr, "esrrf case %d: fused worst |fused - serial| = %.3g of "
                    "peak %.3g (%.3g relative)\n",
            k, diff, pk, diff / pk);
    cr_expect_leq(diff, 1e-6 * pk, "case %d: fused off by %.3g of %.3g", k,
                  diff, pk);
    qs_image_free(out);
    qs_image_free(ref);
  }
  qs_image_free(&st);
}

Test(esrrf, opencl_within_1e6_of_serial) {
  char why[512];
  clrt *rt;
  harness_cl_open(&rt, why, sizeof why);
  if (!rt) cr_skip_test("%s", why);
  qs_image stacks[2] = {random_stack(8, 17, 15, 8),
                        random_stack(3, 19, 41, 9)};
  opts cases[4];
  agreement_cases(cases);
  cases[3] = DEFAULTS; /* one batch per frame: uploads overlap every one */
  cases[3].fpt = 1;
  cases[3].mpc = 0;
  /* the second stack is wide enough for lane groups away from the borders
   * (the kernel's vector intensity) */
  for (int sk = 0; sk < 2; sk++)
    for (size_t dv = 0; dv < clrt_count(rt); dv++)
      for (int k = 0; k < 4; k++) {
        const qs_image st = stacks[sk];
        qs_image ref[1], out[1];
        cr_assert_eq(run("serial", &st, cases[k], ref), QS_OK);
        cr_assert_eq(run_on("opencl", clrt_device(rt, dv), &st, cases[k], out),
                     QS_OK);
        cr_assert_eq(out[0].frames, ref[0].frames);
        double diff, pk;
        harness_diff(out, ref, &diff, &pk);
        fprintf(stderr,
                "esrrf opencl on %s, stack %d case %d: worst %.3g of "
                "peak %.3g (%.3g relative)\n",
                cldev_about(clrt_device(rt, dv))->slug, sk, k, diff, pk,
                diff / pk);
        cr_expect_leq(diff, 1e-6 * pk, "stack %d case %d", sk, k);
        qs_image_free(out);
        qs_image_free(ref);
      }
  qs_image_free(&stacks[0]);
  qs_image_free(&stacks[1]);
  clrt_close(rt);
}

/* Runs esrrf through the engine with impl forced; the report's impl must
 * be the one asked for. */
static void engine_run(qs_engine *e, const char *impl, const qs_image *st,
                       opts o, qs_image *out) {
  qs_param p[7];
  params_of(o, p);
  qs_run_request rq = {
      .inputs = st, .n_inputs = 1, .params = p, .n_params = 7, .impl = impl};
  qs_run_report rep;
  int rc = qs_method_run(e, "esrrf", &rq, out, 1, &rep);
  cr_assert_eq(rc, QS_OK, "%s: %s", impl, qs_engine_error(e));
  cr_assert_str_eq(rep.impl, impl);
}

Test(esrrf, composed_equals_what_its_steps_chose) {
  qs_image st = random_stack(8, 15, 13, 9);
  opts cases[3];
  agreement_cases(cases);
  /* without OpenCL every step picks a CPU implementation, each bit for bit
   * the reference: composed must be serial exactly; with OpenCL steps may
   * run on a device, within the steps' tolerances */
  for (int cl = 0; cl < 2; cl++) {
    qs_engine_options eo = {.db_path = ":memory:",
                            .no_opencl = !cl,
                            .no_calibration = 1,
                            .seed = 1};
    qs_engine *e = NULL;
    cr_assert_eq(qs_engine_open(&e, &eo), QS_OK);
    for (int k = 0; k < 3; k++) {
      qs_image ref[1], out[1];
      engine_run(e, "serial", &st, cases[k], ref);
      engine_run(e, "composed", &st, cases[k], out);
      size_t n = ref[0].frames * ref[0].rows * ref[0].cols;
      double diff, pk;
      harness_diff(out, ref, &diff, &pk);
      fprintf(stderr, "esrrf composed (%s), case %d: worst %.3g of peak "
                      "%.3g\n",
              cl ? "OpenCL allowed" : "CPU only", k, diff, pk);
      if (!cl)
        cr_expect_eq(memcmp(out[0].data, ref[0].data, n * sizeof(float)), 0,
                     "case %d: composed of CPU steps differs from serial", k);
      else
        cr_expect_leq(diff, 1e-4 * pk, "case %d", k);
      qs_image_free(out);
      qs_image_free(ref);
    }
    qs_engine_close(e);
  }
  qs_image_free(&st);
}

Test(esrrf, odd_geometries_agree) {
  /* single pixels, magnification 1, a window of one tap, odd sizes and a
   * radius whose margin covers the whole output */
  struct {
    size_t f, r, c;
    int mag;
    double radius;
  } g[] = {{3, 1, 1, 1, 0.1}, {3, 5, 3, 1, 1.5}, {2, 6, 7, 7, 0.3},
           {2, 4, 4, 2, 10}, {4, 2, 9, 3, 2.5}};
  clrt *rt;
  char why[512];
  harness_cl_open(&rt, why, sizeof why);
  for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
    qs_image st = random_stack(g[k].f, g[k].r, g[k].c, 20 + k);
    opts o = DEFAULTS;
    o.mag = g[k].mag;
    o.radius = g[k].radius;
    o.temporal = VAR;
    qs_image ref[1], out[1];
    cr_assert_eq(run("serial", &st, o, ref), QS_OK, "geometry %zu", k);
    size_t n = ref[0].frames * ref[0].rows * ref[0].cols;
    for (size_t i = 0; i < n; i++)
      cr_assert(isfinite(ref[0].data[i]), "geometry %zu pixel %zu", k, i);
    const char *impls[] = {"threaded_guided", "fused", "opencl"};
    for (int i = 0; i < 3; i++) {
      if (i == 2 && !rt) continue;
      cr_assert_eq(run_on(impls[i], rt && i == 2 ? clrt_device(rt, 0) : NULL,
                          &st, o, out),
                   QS_OK, "geometry %zu %s", k, impls[i]);
      double diff, pk;
      harness_diff(out, ref, &diff, &pk);
      double tol = i == 0 ? 0 : 1e-6;
      cr_expect_leq(diff, tol * pk, "geometry %zu %s: %.3g of %.3g", k,
                    impls[i], diff, pk);
      qs_image_free(out);
    }
    qs_image_free(ref);
    qs_image_free(&st);
  }
  if (rt) clrt_close(rt);
}

/* -------------------------------------------------------- real data */

Test(esrrf, real_stacks_give_finite_output_everywhere) {
  const char *files[] = {"mssr_donuts_100f.tif",
                         "musical_cardiomyoblast_mito_100f.tif"};
  qs_engine_options eo = {
      .db_path = ":memory:", .no_calibration = 1, .seed = 1};
  qs_engine *e = NULL;
  cr_assert_eq(qs_engine_open(&e, &eo), QS_OK);
  qs_impl_info impls[QS_MAX_ESTIMATES];
  size_t n_impls = 0;
  cr_assert_eq(qs_method_impls(e, "esrrf", impls, QS_MAX_ESTIMATES, &n_impls),
               QS_OK);
  cr_assert_geq(n_impls, 7, "esrrf lists %zu implementations", n_impls);
  for (int k = 0; k < 2; k++) {
    char path[1024], err[512];
    snprintf(path, sizeof path, "%s/tests/data/real/%s", QS_SOURCE_ROOT,
             files[k]);
    qs_image full;
    cr_assert_eq(tiff_read(path, &full, err, sizeof err), QS_OK, "%s", err);
    /* the first 10 frames keep the test short; every path sees them */
    qs_image st = qs_image_wrap(full.data, 10, full.rows, full.cols);
    opts o = DEFAULTS;
    o.fpt = 5;
    for (size_t i = 0; i < n_impls && i < QS_MAX_ESTIMATES; i++) {
      if (!impls[i].available) {
        fprintf(stderr, "esrrf %s unavailable here: %s\n", impls[i].name,
                impls[i].why);
        continue;
      }
      qs_image out[1];
      engine_run(e, impls[i].name, &st, o, out);
      cr_expect_eq(out[0].frames, 2);
      cr_expect_eq(out[0].rows, 5 * full.rows);
      cr_expect_eq(out[0].cols, 5 * full.cols);
      size_t n = 2 * out[0].rows * out[0].cols, nonzero = 0;
      for (size_t p = 0; p < n; p++) {
        cr_assert(isfinite(out[0].data[p]), "%s %s: pixel %zu is %g",
                  files[k], impls[i].name, p, (double)out[0].data[p]);
        nonzero += out[0].data[p] != 0;
      }
      cr_expect_gt(nonzero, n / 2, "%s %s", files[k], impls[i].name);
      qs_image_free(out);
    }
    qs_image_free(&full);
  }
  qs_engine_close(e);
}

/* -------------------------------------------------------- resolution */

/* Local maxima of a profile strictly above 5 % of its peak. */
static int maxima(const double *v, size_t n, size_t *where) {
  double pk = 0;
  for (size_t i = 0; i < n; i++) pk = v[i] > pk ? v[i] : pk;
  int k = 0;
  for (size_t i = 1; i + 1 < n; i++)
    if (v[i] > v[i - 1] && v[i] >= v[i + 1] && v[i] > 0.05 * pk) {
      if (where) where[k] = i;
      k++;
    }
  return k;
}

Test(esrrf, resolves_two_emitters_the_mean_cannot) {
  /* PSF sigma 1.2 px: FWHM 2.83 px; emitters 0.6 FWHM = 1.70 px apart,
   * each on in 20 % of the frames, independently */
  double sigma = 1.2, fwhm = 2.3548 * sigma, sep = 0.6 * fwhm, ey = 12.0;
  emitter e[2] = {{ey, 12.0 - sep / 2}, {ey, 12.0 + sep / 2}};
  size_t frames = 100;
  qs_image st = blinking(frames, 24, 24, e, 2, sigma, 0.2, 1, 6);
  int mag = 5;
  opts o = DEFAULTS;
  o.sens = 2;
  qs_image out[1], mean[1];
  cr_assert_eq(run("fused", &st, o, out), QS_OK);
  /* the mean image, magnified the same way for a like-for-like profile */
  qs_image avg;
  cr_assert_eq(qs_image_alloc(&avg, 1, 24, 24), QS_OK);
  for (size_t f = 0; f < frames; f++)
    for (size_t i = 0; i < 24 * 24; i++)
      avg.data[i] += st.data[f * 24 * 24 + i] / (float)frames;
  qs_param m1[] = {{"magnification_row", mag, NULL},
                   {"magnification_col", mag, NULL}};
  char err[256];
  cr_assert_eq(harness_run(&method_shift_magnify, "serial", &avg, m1, 2, mean,
                           NULL, err, sizeof err),
               QS_OK);
  /* profiles along the joining line, one FWHM beyond each emitter: per
   * output column the largest value within 1.5 px of the line (the
   * reference's sampling puts content a fraction of a pixel off its input
   * coordinates, so the band tolerates it) */
  size_t cols = out[0].cols;
  size_t x0 = (size_t)((12.0 - sep / 2 - fwhm) * mag);
  size_t x1 = (size_t)((12.0 + sep / 2 + fwhm) * mag);
  size_t y0 = (size_t)((ey - 1.5) * mag), y1 = (size_t)((ey + 1.5) * mag);
  double pe[200] = {0}, pm[200] = {0};
  size_t n = x1 - x0;
  for (size_t x = 0; x < n; x++)
    for (size_t y = y0; y < y1; y++) {
      double v = out[0].data[y * cols + x0 + x];
      double w = mean[0].data[y * cols + x0 + x];
      pe[x] = v > pe[x] ? v : pe[x];
      pm[x] = w > pm[x] ? w : pm[x];
    }
  size_t at[64];
  int km = maxima(pm, n, NULL), ke = maxima(pe, n, at);
  cr_expect_eq(km, 1, "the mean has %d peaks along the line", km);
  cr_assert_eq(ke, 2, "eSRRF AVG has %d peaks along the line", ke);
  double dip = pe[at[0]];
  for (size_t x = at[0]; x <= at[1]; x++) dip = pe[x] < dip ? pe[x] : dip;
  double lower = pe[at[0]] < pe[at[1]] ? pe[at[0]] : pe[at[1]];
  fprintf(stderr,
          "two emitters %.2f px apart: eSRRF peaks at %.2f and %.2f px, "
          "dip %.1f %% below the lower peak\n",
          sep, (double)(x0 + at[0]) / mag, (double)(x0 + at[1]) / mag,
          100 * (1 - dip / lower));
  cr_expect_leq(dip, 0.9 * lower, "dip %.4g vs peaks %.4g", dip, lower);
  qs_image_free(out);
  qs_image_free(mean);
  qs_image_free(&avg);
  qs_image_free(&st);
}

/* -------------------------------------------------------- bad input */

Test(esrrf, bad_input) {
  qs_image st = random_stack(3, 8, 8, 7);
  char err[512];
  qs_image out[1];
  struct {
    const char *name;
    double value;
    int status;
    const char *says;
  } cases[] = {
      {"magnification", 0, QS_EPARAM, "magnification"},
      {"radius", 0, QS_EPARAM, "radius"},
      {"radius", -2, QS_EPARAM, "radius"},
      {"radius", NAN, QS_EPARAM, "radius"},
      {"temporal", 7, QS_EPARAM, "temporal"},
      {"frames_per_timepoint", -1, QS_EPARAM, "frames_per_timepoint"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    qs_param p[] = {{cases[k].name, cases[k].value, NULL}};
    err[0] = 0;
    cr_expect_eq(harness_run(ES, "serial", &st, p, 1, out, NULL, err,
                             sizeof err),
                 cases[k].status, "%s = %g", cases[k].name, cases[k].value);
    cr_expect(strstr(err, cases[k].says) != NULL, "%s", err);
    cr_expect_null(out[0].data, "nothing written");
  }
  /* an output that would overflow: 2^17 x 2^17 magnified 64 times */
  qs_image huge = qs_image_wrap(st.data, 1, (size_t)1 << 17, (size_t)1 << 17);
  qs_param p[] = {{"magnification", 64, NULL}};
  cr_expect_eq(harness_run(ES, "serial", &huge, p, 1, out, NULL, err,
                           sizeof err),
               QS_EOVERFLOW);
  cr_expect(strstr(err, "magnification") != NULL, "%s", err);
  cr_expect_null(out[0].data);
  qs_image_free(&st);
}
