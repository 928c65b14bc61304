/* rgc.c — speed of the standalone rgc method, implementations side by side
 * in one run.
 *
 *   bench_rgc IMPL[,IMPL...] FRAMES ROWS COLS [REPEATS [MAG [RADIUS
 *             [INPUT]]]]
 *
 * Makes rgc's inputs the way eSRRF does from INPUT (bench/input.h: `sim`,
 * the default, quicksilver simulate's camera background with shot and
 * read noise; `spots`; or a TIFF path, ROWS COLS 0 for its size): the
 * Roberts-cross gradients magnified 2·MAG and the stack magnified MAG
 * (intensity weighting on, sensitivity 1). Then one untimed round and
 * REPEATS timed rounds (default 5), each running every IMPL once in turn
 * (a, b, a, b, ...) so that drift of a shared machine hits all alike.
 * Prints per implementation: min and median wall seconds of qs_method_run,
 * output megapixels per second at the median, and the median of the first
 * IMPL over this one's. "auto" is the engine's choice (a fresh in-memory
 * store: it calibrates over its first calls). Measured, never asserted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/input.h"
#include "quicksilver.h"

/* One method call with impl forced (NULL: the engine's choice). */
static int call(qs_engine *e, const char *method, const char *impl,
                const qs_image *in, size_t n_in, const qs_param *p, size_t n_p,
                qs_image *out, size_t n_out, qs_run_report *rep) {
  qs_run_request rq = {.inputs = in,
                       .n_inputs = n_in,
                       .params = p,
                       .n_params = n_p,
                       .impl = impl};
  int rc = qs_method_run(e, method, &rq, out, n_out, rep);
  if (rc)
    fprintf(stderr, "%s %s: %s\n", method, impl ? impl : "auto",
            qs_engine_error(e));
  return rc;
}

/* rgc's three inputs from the stack st at magnification mag. */
static int make_inputs(qs_engine *e, const qs_image *st, double mag,
                       qs_image in[3]) {
  qs_image rc[2] = {{0}, {0}};
  qs_run_report rep;
  memset(in, 0, 3 * sizeof *in);
  int err = call(e, "roberts_cross", NULL, st, 1, NULL, 0, rc, 2, &rep);
  for (int k = 0; !err && k < 3; k++) {
    double m = k < 2 ? 2 * mag : mag;
    qs_param p[] = {{"magnification_row", m, NULL},
                    {"magnification_col", m, NULL}};
    err = call(e, "shift_magnify", NULL, k < 2 ? &rc[k] : st, 1, p, 2, &in[k],
               1, &rep);
  }
  qs_image_free(&rc[0]);
  qs_image_free(&rc[1]);
  return err;
}

int main(int argc, char **argv) {
  bench_args a;
  if (bench_args_parse(argc, argv, NULL, NULL, &a)) return 2;
  size_t frames = a.frames, rows = a.rows, cols = a.cols;
  int repeats = a.repeats, n = a.n_impls;
  double mag = a.mag, radius = a.radius;
  const char *kind = a.input;
  char(*impls)[64] = a.impls;
  qs_engine *e = bench_engine();
  if (!e) return 1;
  int rc;
  qs_image st, in[3];
  char err[512];
  if ((rc = bench_input(kind, frames, rows, cols, &st, err, sizeof err))) {
    fprintf(stderr, "input %s: %s\n", kind, err);
    qs_engine_close(e);
    return 1;
  }
  rc = make_inputs(e, &st, mag, in);
  qs_param p[] = {{"magnification", mag, NULL}, {"radius", radius, NULL}};
  double *t = calloc((size_t)repeats * BENCH_MAX_IMPLS, sizeof *t);
  qs_run_report rep[BENCH_MAX_IMPLS];
  memset(rep, 0, sizeof rep);
  if (!t) rc = QS_ENOMEM;
  for (int k = -1; !rc && k < repeats; k++)
    for (int i = 0; !rc && i < n; i++) {
      qs_image out;
      double t0 = bench_now();
      rc = call(e, "rgc", strcmp(impls[i], "auto") ? impls[i] : NULL, in, 3,
                p, 2, &out, 1, &rep[i]);
      if (rc) break;
      if (k >= 0) t[i * repeats + k] = bench_now() - t0;
      qs_image_free(&out);
    }
  const char *label = a.label;
  double first = 0;
  for (int i = 0; !rc && i < n; i++) {
    double *ti = t + i * repeats;
    char name[80];
    snprintf(name, sizeof name, "%s%.63s", strcmp(impls[i], "auto") ? ""
                                                                      : "auto:",
             rep[i].impl);
    double med = bench_median(ti, repeats);
    if (i == 0) first = med;
    printf("rgc %-22s %4zu x %4zu x %4zu  M %g r %g %-12.12s min %8.4f s  "
           "median %8.4f s  %7.2f Mpx/s  x%.2f of %s\n",
           name, st.frames, st.rows, st.cols, mag, radius, label, ti[0], med,
           (double)in[2].frames * (double)in[2].rows * (double)in[2].cols /
               med * 1e-6,
           first / med, impls[0]);
  }
  free(t);
  for (int k = 0; k < 3; k++)
    qs_image_free(&in[k]);
  qs_image_free(&st);
  qs_engine_close(e);
  return rc ? 1 : 0;
}
