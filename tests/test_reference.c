/* test_reference.c — quicksilver against NanoPyx's own outputs.
 *
 * tests/data/reference/ holds cases made by bench/nanopyx/make_fixtures.py
 * with NanoPyx's deterministic `unthreaded` run type: inputs, outputs, the
 * parameters under quicksilver's names and the accepted error relative to
 * max |reference|. For every case `serial` must match within that
 * tolerance; every other available implementation must match within it
 * plus the method's own cross-implementation tolerance (what it may differ
 * from serial by). The worst pixel of every case goes to stderr, so the
 * measured agreement is visible in the log, not only pass/fail.
 *
 * A method that is not registered fails its tests with a message naming
 * the fixtures left unchecked: never a silent pass. */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixtures.h"
#include "qs_test.h"
#include "quicksilver.h"

TestSuite(reference, .fini = qs_leak_check);

#define MAX_SLOTS 4
#define MAX_PARAMS 16

/* One case, loaded: images owned here, params point into the JSON. */
typedef struct ref_case {
  char name[QS_NAME_MAX];
  const char *method;
  double tol;
  size_t n_in, n_out, n_p;
  qs_image in[MAX_SLOTS], out[MAX_SLOTS];
  char out_slot[MAX_SLOTS][QS_NAME_MAX];
  qs_param p[MAX_PARAMS];
  cJSON *json;
} ref_case;

static void case_load(const char *name, ref_case *c) {
  memset(c, 0, sizeof *c);
  snprintf(c->name, sizeof c->name, "%s", name);
  char path[1024];
  snprintf(path, sizeof path, REF_DIR "%s.json", name);
  c->json = json_load(path);
  c->method = cJSON_GetObjectItem(c->json, "method")->valuestring;
  c->tol = cJSON_GetObjectItem(c->json, "tolerance")->valuedouble;
  const cJSON *it;
  cJSON_ArrayForEach(it, cJSON_GetObjectItem(c->json, "inputs")) {
    cr_assert_lt(c->n_in, MAX_SLOTS);
    array_load(it, &c->in[c->n_in++]);
  }
  cJSON_ArrayForEach(it, cJSON_GetObjectItem(c->json, "outputs")) {
    cr_assert_lt(c->n_out, MAX_SLOTS);
    snprintf(c->out_slot[c->n_out], QS_NAME_MAX, "%s",
             cJSON_GetObjectItem(it, "slot")->valuestring);
    array_load(it, &c->out[c->n_out++]);
  }
  /* Numbers by value, booleans as 0/1, enums by name. */
  cJSON_ArrayForEach(it, cJSON_GetObjectItem(c->json, "params")) {
    cr_assert_lt(c->n_p, MAX_PARAMS);
    qs_param *p = &c->p[c->n_p++];
    p->name = it->string;
    if (cJSON_IsString(it))
      p->text = it->valuestring;
    else if (cJSON_IsBool(it))
      p->value = cJSON_IsTrue(it) ? 1 : 0;
    else
      p->value = it->valuedouble;
  }
}

static void case_free(ref_case *c) {
  for (size_t k = 0; k < c->n_in; k++)
    qs_image_free(&c->in[k]);
  for (size_t k = 0; k < c->n_out; k++)
    qs_image_free(&c->out[k]);
  cJSON_Delete(c->json);
}

/* The worst pixel of got against ref: error relative to max |ref|. */
typedef struct worst {
  double rel, abs;
  size_t at;
  float got, ref;
} worst;

static worst compare(const qs_image *got, const qs_image *ref) {
  size_t n = ref->frames * ref->rows * ref->cols;
  double peak = 0;
  for (size_t i = 0; i < n; i++)
    if (fabs(ref->data[i]) > peak) peak = fabs(ref->data[i]);
  worst w = {0, 0, 0, got->data[0], ref->data[0]};
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)got->data[i] - (double)ref->data[i]);
    /* NaN (TAC2 of a one-frame timepoint) must be NaN in both */
    if (!isnan(got->data[i]) != !isnan(ref->data[i]))
      d = INFINITY;
    else if (isnan(ref->data[i]))
      d = 0;
    if (d > w.abs) {
      w.abs = d;
      w.at = i;
      w.got = got->data[i];
      w.ref = ref->data[i];
    }
  }
  w.rel = peak > 0 ? w.abs / peak : w.abs;
  return w;
}

/* Runs the case with `impl` and checks every output within tol; prints the
 * worst pixel. Returns the worst relative error over the outputs. */
static double case_check(qs_engine *e, const ref_case *c, const char *impl,
                         double tol) {
  qs_run_request rq = {.inputs = c->in,
                       .n_inputs = c->n_in,
                       .params = c->p,
                       .n_params = c->n_p,
                       .impl = impl};
  qs_image got[MAX_SLOTS];
  memset(got, 0, sizeof got);
  qs_run_report rep;
  int rc = qs_method_run(e, c->method, &rq, got, c->n_out, &rep);
  cr_assert_eq(rc, QS_OK, "%s with %s: %s: %s", c->name, impl,
               qs_status_name(rc), qs_engine_error(e));
  double worst_rel = 0;
  for (size_t k = 0; k < c->n_out; k++) {
    const qs_image *r = &c->out[k];
    cr_expect(got[k].frames == r->frames && got[k].rows == r->rows &&
                  got[k].cols == r->cols,
              "%s %s with %s: shape %zux%zux%zu, NanoPyx %zux%zux%zu", c->name,
              c->out_slot[k], rep.impl, got[k].frames, got[k].rows,
              got[k].cols, r->frames, r->rows, r->cols);
    if (got[k].frames != r->frames || got[k].rows != r->rows ||
        got[k].cols != r->cols)
      continue;
    worst w = compare(&got[k], r);
    size_t plane = r->rows * r->cols;
    fprintf(stderr,
            "reference %-26s %-14s %-24s worst %.3g rel (abs %.3g at "
            "[%zu,%zu,%zu]: %.9g vs NanoPyx %.9g), tolerance %.3g\n",
            c->name, c->out_slot[k], rep.impl, w.rel, w.abs, w.at / plane,
            w.at % plane / r->cols, w.at % r->cols, (double)w.got,
            (double)w.ref, tol);
    cr_expect_leq(w.rel, tol,
                  "%s %s with %s: worst %.3g relative to max|NanoPyx| at "
                  "pixel %zu (%.9g vs %.9g) exceeds %.3g",
                  c->name, c->out_slot[k], rep.impl, w.rel, w.at,
                  (double)w.got, (double)w.ref, tol);
    if (w.rel > worst_rel) worst_rel = w.rel;
  }
  for (size_t k = 0; k < c->n_out; k++)
    qs_image_free(&got[k]);
  return worst_rel;
}

/* The names of the cases of `method`, from index.json; *n receives the
 * count. The caller frees the returned array with cJSON_Delete(*index). */
static const char **cases_of(const char *method, size_t *n, cJSON **index) {
  *index = json_load(REF_DIR "index.json");
  const cJSON *list = cJSON_GetObjectItem(*index, "cases");
  size_t total = (size_t)cJSON_GetArraySize(list);
  const char **names = calloc(total + 1, sizeof *names);
  cr_assert_not_null(names);
  *n = 0;
  const cJSON *it;
  cJSON_ArrayForEach(it, list) {
    char path[1024];
    snprintf(path, sizeof path, REF_DIR "%s.json", it->valuestring);
    cJSON *j = json_load(path);
    const cJSON *m = cJSON_GetObjectItem(j, "method");
    cr_assert(cJSON_IsString(m), "%s has no method", path);
    if (!strcmp(m->valuestring, method)) names[(*n)++] = it->valuestring;
    cJSON_Delete(j);
  }
  return names;
}

/* Checks every case of `method` with serial (all_impls 0) or with every
 * other available implementation (all_impls 1). */
static void method_check(const char *method, int all_impls) {
  cJSON *index;
  size_t n;
  const char **names = cases_of(method, &n, &index);
  cr_assert_gt(n, 0, "no reference fixtures for %s", method);
  qs_engine *e = fixture_engine();
  const qs_method_desc *d = qs_method_find(e, method);
  if (!d) {
    qs_engine_close(e);
    free(names);
    cJSON_Delete(index);
    cr_assert_fail(
        "method %s is not registered: %zu NanoPyx fixtures unchecked", method,
        n);
    return;
  }
  qs_impl_info impls[QS_MAX_ESTIMATES];
  size_t n_impls = 0;
  cr_assert_eq(qs_method_impls(e, method, impls, QS_MAX_ESTIMATES, &n_impls),
               QS_OK, "%s", qs_engine_error(e));
  if (n_impls > QS_MAX_ESTIMATES) n_impls = QS_MAX_ESTIMATES;
  size_t checked = 0;
  for (size_t i = 0; i < n; i++) {
    ref_case c;
    case_load(names[i], &c);
    if (!all_impls) {
      case_check(e, &c, "serial", c.tol);
      checked++;
    } else {
      for (size_t k = 0; k < n_impls; k++) {
        if (!strcmp(impls[k].name, "serial")) continue;
        if (!impls[k].available) {
          if (i == 0)
            fprintf(stderr, "reference %s: %s unavailable here: %s\n", method,
                    impls[k].name, impls[k].why);
          continue;
        }
        case_check(e, &c, impls[k].name, c.tol + d->tolerance);
        checked++;
      }
    }
    case_free(&c);
  }
  qs_engine_close(e);
  free(names);
  cJSON_Delete(index);
  if (all_impls && checked == 0)
    cr_skip_test("%s has no implementation other than serial available "
                 "here",
                 method);
}

/* Every built-in method (as registered, not a list kept here) has NanoPyx
 * fixtures. */
Test(reference, index_covers_every_method) {
  qs_engine_options o = {.db_path = ":memory:", .no_opencl = 1, .threads = 1};
  qs_engine *e = NULL;
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  cr_assert_geq(qs_method_count(e), 4);
  for (size_t m = 0; m < qs_method_count(e); m++) {
    const char *method = qs_method_at(e, m)->name;
    cJSON *index;
    size_t n;
    const char **names = cases_of(method, &n, &index);
    cr_expect_geq(n, 2, "only %zu reference fixtures for %s", n, method);
    free(names);
    cJSON_Delete(index);
  }
  qs_engine_close(e);
}

Test(reference, shift_magnify_serial) { method_check("shift_magnify", 0); }
Test(reference, shift_magnify_all) { method_check("shift_magnify", 1); }
Test(reference, roberts_cross_serial) { method_check("roberts_cross", 0); }
Test(reference, roberts_cross_all) { method_check("roberts_cross", 1); }
Test(reference, rgc_serial) { method_check("rgc", 0); }
Test(reference, rgc_all) { method_check("rgc", 1); }
Test(reference, esrrf_serial) { method_check("esrrf", 0); }
Test(reference, esrrf_all) { method_check("esrrf", 1); }
