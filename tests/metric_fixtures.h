/* metric_fixtures.h — what the tests of the quality metrics (test_frc.c,
 * test_squirrel.c, test_decorr.c, test_sweep.c) share: an engine for
 * tests, a NanoPyx metric case loaded by name (fixtures.h), and a method
 * run with a forced implementation. Header-only; include after criterion. */
#ifndef QS_TEST_METRIC_FIXTURES_H
#define QS_TEST_METRIC_FIXTURES_H

#include "fixtures.h"

#define MC_SLOTS 4

/* One case: its inputs and NanoPyx's outputs, in file order. */
typedef struct metric_case {
  qs_image in[MC_SLOTS], out[MC_SLOTS];
  size_t n_in, n_out;
} metric_case;

static inline void mc_load(const char *name, metric_case *c) {
  memset(c, 0, sizeof *c);
  char path[1024];
  snprintf(path, sizeof path, REF_DIR "%s.json", name);
  cJSON *j = json_load(path);
  const cJSON *it;
  cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "inputs")) {
    cr_assert_lt(c->n_in, MC_SLOTS);
    array_load(it, &c->in[c->n_in++]);
  }
  cJSON_ArrayForEach(it, cJSON_GetObjectItem(j, "outputs")) {
    cr_assert_lt(c->n_out, MC_SLOTS);
    array_load(it, &c->out[c->n_out++]);
  }
  cJSON_Delete(j);
}

static inline void mc_free(metric_case *c) {
  for (size_t k = 0; k < c->n_in; k++)
    qs_image_free(&c->in[k]);
  for (size_t k = 0; k < c->n_out; k++)
    qs_image_free(&c->out[k]);
}

static inline qs_engine *mc_engine(void) { return fixture_engine(); }

/* Runs method on in[0..n_in) with impl (NULL: the engine's choice) and
 * parameters p; asserts success. */
static inline void mc_run(qs_engine *e, const char *method, const char *impl,
                          const qs_image *in, size_t n_in, const qs_param *p,
                          size_t n_p, qs_image *out, size_t n_out) {
  qs_run_request rq = {.inputs = in,
                       .n_inputs = n_in,
                       .params = p,
                       .n_params = n_p,
                       .impl = impl};
  memset(out, 0, n_out * sizeof *out);
  int rc = qs_method_run(e, method, &rq, out, n_out, NULL);
  cr_assert_eq(rc, QS_OK, "%s with %s: %s: %s", method, impl ? impl : "auto",
               qs_status_name(rc), qs_engine_error(e));
}

/* |got − ref| <= tol·max(|ref|, floor). */
static inline int mc_close(double got, double ref, double tol, double floor) {
  double s = fabs(ref) > floor ? fabs(ref) : floor;
  return fabs(got - ref) <= tol * s;
}

#endif
