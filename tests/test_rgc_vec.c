/* test_rgc_vec.c — the vectorised implementations of the rgc method (vec,
 * avx2 where the CPU has AVX2 + FMA, avx512 where it has AVX-512F; the
 * tests that need one say so and skip where it is absent): within 1e-6 of max |serial| on
 * every rgc fixture of tests/data/reference, on the ×2M gradients of both
 * real stacks and on a grid of magnifications, radii, sensitivities and
 * shapes; serial's bits exactly on shapes the compact grid does not fit
 * (they take the reference loop); bit-identical between one and several
 * threads; avx2 listed exactly where the CPU can run it. */
#include <criterion/criterion.h>
#include <cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "method_harness.h"
#include "vec_harness.h"
#include "qs_test.h"
#include "tiff.h"

TestSuite(rgc_vec, .fini = qs_leak_check);

static const char *const VEC[] = {"vec", "avx2", "avx512"};
#define N_VEC (sizeof VEC / sizeof *VEC)

/* The accuracy contract of the variants against serial. */
#define VEC_REL 1e-6

/* Runs `method` forced to impl on n_in inputs into out (one output). */
static void run_impl(qs_engine *e, const char *method, const char *impl,
                     const qs_image *in, size_t n_in, const qs_param *p,
                     size_t n_p, qs_image *out, size_t n_out) {
  qs_run_request rq = {.inputs = in,
                       .n_inputs = n_in,
                       .params = p,
                       .n_params = n_p,
                       .impl = impl};
  qs_run_report rep;
  int rc = qs_method_run(e, method, &rq, out, n_out, &rep);
  cr_assert_eq(rc, QS_OK, "%s %s: %s", method, impl, qs_engine_error(e));
  cr_assert_str_eq(rep.impl, impl);
}

/* Every available variant against serial on in (gradient_col,
 * gradient_row, image): within VEC_REL of max |serial|, or serial's bits
 * exactly when `exact`. Returns how many variants ran. */
static int vs_serial_as(qs_engine *e, const qs_image *in, const qs_param *p,
                        size_t n_p, const char *what, int exact) {
  qs_image ref[1];
  run_impl(e, "rgc", "serial", in, 3, p, n_p, ref, 1);
  double diff, peak;
  harness_diff(ref, ref, &diff, &peak);
  cr_expect_gt(peak, 0, "%s: serial's output is all zero", what);
  int ran = 0;
  for (size_t v = 0; v < N_VEC; v++) {
    char why[256];
    if (!vec_listed(e, "rgc", VEC[v], why, sizeof why)) continue;
    qs_image out[1];
    run_impl(e, "rgc", VEC[v], in, 3, p, n_p, out, 1);
    cr_assert(out->frames == ref->frames && out->rows == ref->rows &&
                  out->cols == ref->cols,
              "%s %s: shape differs from serial", what, VEC[v]);
    harness_diff(out, ref, &diff, &peak);
    fprintf(stderr, "%-30s %-5s worst %.3g of max |serial| %.6g\n", what,
            VEC[v], peak > 0 ? diff / peak : diff, peak);
    if (exact)
      cr_expect(same_bits(out, ref), "%s %s: not serial's bits (off by %g)",
                what, VEC[v], diff);
    else
      cr_expect_leq(diff, VEC_REL * peak,
                    "%s %s: off by %.3g of max %.6g (> %.1g)", what, VEC[v],
                    diff, peak, VEC_REL);
    qs_image_free(out);
    ran++;
  }
  qs_image_free(ref);
  return ran;
}

static int vs_serial(qs_engine *e, const qs_image *in, const qs_param *p,
                     size_t n_p, const char *what) {
  return vs_serial_as(e, in, p, n_p, what, 0);
}

/* rgc's inputs from a stack, as eSRRF makes them: the Roberts-cross
 * gradients magnified 2M, the stack magnified M. */
static void rgc_inputs(qs_engine *e, const qs_image *st, int mag,
                       qs_image in[3]) {
  qs_image rc[2];
  run_impl(e, "roberts_cross", "serial", st, 1, NULL, 0, rc, 2);
  for (int k = 0; k < 3; k++) {
    double m = k < 2 ? 2 * mag : mag;
    qs_param p[] = {{"magnification_row", m, NULL},
                    {"magnification_col", m, NULL}};
    run_impl(e, "shift_magnify", "serial", k < 2 ? &rc[k] : st, 1, p, 2,
             &in[k], 1);
  }
  qs_image_free(&rc[0]);
  qs_image_free(&rc[1]);
}

static void drop(qs_image *in) {
  for (int k = 0; k < 3; k++)
    qs_image_free(&in[k]);
}

/* -------------------------------------------------------- fixtures */

/* The comparison with NanoPyx's outputs is test_reference's (rgc_all runs
 * every listed implementation); here the contract with serial. */
Test(rgc_vec, every_rgc_fixture_within_1e6_of_serial) {
  cJSON *index = json_load(REF_DIR "index.json");
  qs_engine *e = open_engine(2);
  int cases = 0, ran = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, cJSON_GetObjectItem(index, "cases")) {
    char path[1024];
    snprintf(path, sizeof path, REF_DIR "%s.json", it->valuestring);
    cJSON *c = json_load(path);
    if (strcmp(cJSON_GetObjectItem(c, "method")->valuestring, "rgc")) {
      cJSON_Delete(c);
      continue;
    }
    qs_param p[8];
    size_t n_p = 0;
    const cJSON *q;
    cJSON_ArrayForEach(q, cJSON_GetObjectItem(c, "params")) {
      cr_assert_lt(n_p, 8);
      p[n_p++] = (qs_param){.name = q->string,
                            .value = cJSON_IsBool(q) ? cJSON_IsTrue(q)
                                                     : q->valuedouble};
    }
    qs_image in[3];
    const cJSON *inputs = cJSON_GetObjectItem(c, "inputs");
    cr_assert_eq(cJSON_GetArraySize(inputs), 3);
    for (int k = 0; k < 3; k++) array_load(cJSON_GetArrayItem(inputs, k), &in[k]);
    ran += vs_serial(e, in, p, n_p, it->valuestring);
    drop(in);
    cJSON_Delete(c);
    cases++;
  }
  qs_engine_close(e);
  cJSON_Delete(index);
  cr_expect_geq(cases, 6, "only %d rgc fixtures found", cases);
  cr_expect_geq(ran, cases, "vec must run on every CPU");
}

/* -------------------------------------------------------- real stacks */

Test(rgc_vec, real_stacks_within_1e6_of_serial) {
  const char *files[] = {"mssr_donuts_100f.tif",
                         "musical_cardiomyoblast_mito_100f.tif"};
  static const struct {
    int mag;
    double radius, sens;
    int iw;
  } calls[] = {{5, 1.5, 1, 1}, {2, 2, 2, 0}, {8, 1.5, 1, 1}};
  qs_engine *e = open_engine(2);
  for (int f = 0; f < 2; f++) {
    char path[1024], err[512], what[128];
    snprintf(path, sizeof path, "%s/tests/data/real/%s", QS_SOURCE_ROOT,
             files[f]);
    qs_image full;
    cr_assert_eq(tiff_read(path, &full, err, sizeof err), QS_OK, "%s", err);
    qs_image st = qs_image_wrap(full.data, 4, full.rows, full.cols);
    for (size_t k = 0; k < sizeof calls / sizeof *calls; k++) {
      qs_image in[3];
      rgc_inputs(e, &st, calls[k].mag, in);
      qs_param p[] = {{"magnification", calls[k].mag, NULL},
                      {"radius", calls[k].radius, NULL},
                      {"sensitivity", calls[k].sens, NULL},
                      {"intensity_weighting", calls[k].iw, NULL}};
      snprintf(what, sizeof what, "%.14s M%d r%g s%g iw%d", files[f],
               calls[k].mag, calls[k].radius, calls[k].sens, calls[k].iw);
      cr_expect_geq(vs_serial(e, in, p, 4, what), 1);
      drop(in);
    }
    qs_image_free(&full);
  }
  qs_engine_close(e);
}

/* -------------------------------------------------------- parameters */

/* Every variant within 1e-6 of serial across VEC_GRID (vec_harness.h). */
Test(rgc_vec, parameter_grid_within_1e6_of_serial) {
  qs_engine *e = open_engine(2);
  for (size_t k = 0; k < N_VEC_GRID; k++) {
    qs_image st =
                 noisy(2, VEC_GRID[k].rows, VEC_GRID[k].cols, (unsigned)k + 1),
             in[3];
    rgc_inputs(e, &st, VEC_GRID[k].mag, in);
    qs_param p[] = {{"magnification", VEC_GRID[k].mag, NULL},
                    {"radius", VEC_GRID[k].radius, NULL},
                    {"sensitivity", VEC_GRID[k].sens, NULL},
                    {"intensity_weighting", VEC_GRID[k].iw, NULL}};
    char what[128];
    snprintf(what, sizeof what, "M%d r%g s%g iw%d %zux%zu", VEC_GRID[k].mag,
             VEC_GRID[k].radius, VEC_GRID[k].sens, VEC_GRID[k].iw, VEC_GRID[k].rows,
             VEC_GRID[k].cols);
    cr_expect_geq(vs_serial(e, in, p, 4, what), 1);
    drop(in);
    qs_image_free(&st);
  }
  qs_engine_close(e);
}

/* An image that is not whole original pixels (RM not a multiple of M)
 * takes the reference loop: serial's bits. */
Test(rgc_vec, shapes_off_the_compact_grid_give_serials_bits) {
  qs_engine *e = open_engine(2);
  static const size_t shapes[][2] = {{43, 52}, {40, 47}, {37, 36}};
  for (size_t k = 0; k < 3; k++) {
    size_t r = shapes[k][0], c = shapes[k][1];
    qs_image in[3];
    cr_assert_eq(qs_image_alloc(&in[0], 2, 2 * r, 2 * c), QS_OK);
    cr_assert_eq(qs_image_alloc(&in[1], 2, 2 * r, 2 * c), QS_OK);
    cr_assert_eq(qs_image_alloc(&in[2], 2, r, c), QS_OK);
    harness_fill(&in[0], 11 + (unsigned)k, 30.0f);
    harness_fill(&in[1], 21 + (unsigned)k, 30.0f);
    harness_fill(&in[2], 31 + (unsigned)k, 100.0f);
    qs_param p[] = {{"magnification", 4, NULL}, {"radius", 1.5, NULL}};
    char what[64];
    snprintf(what, sizeof what, "M4 %zux%zu (off grid)", r, c);
    cr_expect_geq(vs_serial_as(e, in, p, 2, what, 1), 1);
    drop(in);
  }
  qs_engine_close(e);
}

/* All margin (the image is no wider than twice the margin): zeros. */
Test(rgc_vec, all_margin_gives_zeros) {
  qs_engine *e = open_engine(2);
  qs_image st = noisy(1, 3, 9, 5), in[3];
  rgc_inputs(e, &st, 5, in); /* 15 x 45, margin int(2.5·5) = 12 */
  qs_param p[] = {{"magnification", 5, NULL}, {"radius", 2.5, NULL}};
  for (size_t v = 0; v < N_VEC; v++) {
    char why[256];
    if (!vec_listed(e, "rgc", VEC[v], why, sizeof why)) continue;
    qs_image out[1];
    run_impl(e, "rgc", VEC[v], in, 3, p, 2, out, 1);
    cr_assert_eq(out->rows, 15);
    for (size_t i = 0; i < out->rows * out->cols; i++)
      cr_assert_eq(out->data[i], 0.0f, "%s: pixel %zu is %g", VEC[v], i,
                   out->data[i]);
    qs_image_free(out);
  }
  drop(in);
  qs_image_free(&st);
  qs_engine_close(e);
}

/* ------------------------------------------------------------ threads */

/* Several threads take small frames whole, one per worker (fused.c's
 * frames mode), and share the rows of larger ones (the last case: 300 x
 * 350 output pixels): both give one thread's bits. */
Test(rgc_vec, threaded_runs_equal_single_thread_bit_for_bit) {
  qs_engine *one = open_engine(1), *many = open_engine(3);
  static const int mags[] = {5, 2, 8, 5};
  static const size_t rows[] = {29, 29, 29, 60}, cols[] = {35, 35, 35, 70};
  for (size_t k = 0; k < 4; k++) {
    qs_image st = noisy(3, rows[k], cols[k], (unsigned)k + 7), in[3];
    rgc_inputs(one, &st, mags[k], in);
    qs_param p[] = {{"magnification", mags[k], NULL}};
    for (size_t v = 0; v < N_VEC; v++) {
      char why[256];
      if (!vec_listed(one, "rgc", VEC[v], why, sizeof why)) continue;
      qs_image a[1], b[1];
      run_impl(one, "rgc", VEC[v], in, 3, p, 1, a, 1);
      run_impl(many, "rgc", VEC[v], in, 3, p, 1, b, 1);
      cr_expect(same_bits(a, b), "%s %zux%zu M%d: 3 threads differ from 1",
                VEC[v], rows[k], cols[k], mags[k]);
      qs_image_free(a);
      qs_image_free(b);
    }
    drop(in);
    qs_image_free(&st);
  }
  qs_engine_close(one);
  qs_engine_close(many);
}

/* ----------------------------------------------------------- listing */

Test(rgc_vec, avx2_listed_exactly_where_the_cpu_has_it) {
  vec_expect_listing("rgc", "avx2", "vec");
}

Test(rgc_vec, avx512_listed_exactly_where_the_cpu_has_it) {
  vec_expect_avx512_listing("rgc", "avx512", "avx2", "vec");
}

/* avx512 on the real mito stack at M 2, 5, 8 within 1e-6 of serial (the
 * grid above runs it too where listed; this test says so where not). */
Test(rgc_vec, avx512_real_stack_within_1e6_of_serial) {
  qs_engine *e = open_engine(2);
  vec_require(e, "rgc", "avx512");
  char path[1024], err[512];
  snprintf(path, sizeof path, "%s/tests/data/real/%s", QS_SOURCE_ROOT,
           "musical_cardiomyoblast_mito_100f.tif");
  qs_image full;
  cr_assert_eq(tiff_read(path, &full, err, sizeof err), QS_OK, "%s", err);
  qs_image st = qs_image_wrap(full.data, 2, full.rows, full.cols);
  static const int mags[] = {2, 5, 8};
  for (size_t k = 0; k < 3; k++) {
    qs_image in[3], ref[1], out[1];
    rgc_inputs(e, &st, mags[k], in);
    qs_param p[] = {{"magnification", mags[k], NULL}};
    run_impl(e, "rgc", "serial", in, 3, p, 1, ref, 1);
    run_impl(e, "rgc", "avx512", in, 3, p, 1, out, 1);
    double diff, peak;
    harness_diff(out, ref, &diff, &peak);
    cr_assert_gt(peak, 0);
    fprintf(stderr, "mito M%d avx512 worst %.3g of max |serial| %.6g\n",
            mags[k], diff / peak, peak);
    cr_expect_leq(diff, VEC_REL * peak, "M%d: off by %.3g of max %.6g",
                  mags[k], diff, peak);
    qs_image_free(ref);
    qs_image_free(out);
    drop(in);
  }
  qs_image_free(&full);
  qs_engine_close(e);
}
