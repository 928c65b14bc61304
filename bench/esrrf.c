/* esrrf.c — eSRRF speed and memory, one configuration per process so that
 * peak resident memory belongs to that configuration alone.
 *
 *   bench_esrrf IMPL FRAMES ROWS COLS [REPEATS [MAG [RADIUS [TEMPORAL
 *               [INPUT]]]]]
 *
 * Runs esrrf with IMPL forced ("serial", "threaded", "fused", "fused_avx2",
 * "opencl", a full name such as "opencl:<device>", or "auto" for the
 * engine's choice) on INPUT (bench/input.h: `sim`, the default, is
 * quicksilver simulate's camera background with shot and read noise;
 * `spots` the former noiseless spots; or a TIFF path such as
 * tests/data/real/mssr_donuts_100f.tif, ROWS COLS 0 for its size): one
 * warm-up run (program builds and first launches happen there), then
 * REPEATS timed runs (default 5). IMPL may be a comma list: the runs are
 * then interleaved across them (a, b, a, b, ...) so that drift of a shared
 * machine hits all alike, for ratios in one run; the memory columns are
 * then the process's, not one implementation's. Prints one line per
 * implementation: implementation, shape, min and median seconds, the last
 * run's device seconds (OpenCL), and memory in MiB: the peak resident set,
 * what the process held before the first run (input included), and the
 * peak beyond that and the output (the working memory the runs needed);
 * last, `cpu`: the least CPU seconds of a run over all the process's
 * threads (with QUICKSILVER_THREADS=1 the work of one core, steadier than
 * wall time on a shared machine, which also counts the waits for a core).
 * Measured, never asserted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench/input.h"
#include "quicksilver.h"

/* Resident set now, from /proc (MiB); 0 if unreadable. */
static double rss_now(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  long pages = 0, res = 0;
  if (!f) return 0;
  if (fscanf(f, "%ld %ld", &pages, &res) != 2) res = 0;
  fclose(f);
  return (double)res * 4096.0 / (1 << 20);
}

static double rss_peak(void) {
  struct rusage u;
  getrusage(RUSAGE_SELF, &u);
  return (double)u.ru_maxrss / 1024.0;
}

int main(int argc, char **argv) {
  bench_args a;
  if (bench_args_parse(argc, argv, "TEMPORAL", "avg", &a)) return 2;
  size_t frames = a.frames, rows = a.rows, cols = a.cols;
  int repeats = a.repeats, n = a.n_impls;
  double mag = a.mag, radius = a.radius;
  const char *temporal = a.extra, *kind = a.input;
  char(*impls)[64] = a.impls;

  qs_engine *e = bench_engine();
  if (!e) return 1;
  int rc;
  qs_image st;
  char err[512];
  if ((rc = bench_input(kind, frames, rows, cols, &st, err, sizeof err))) {
    fprintf(stderr, "input %s: %s\n", kind, err);
    qs_engine_close(e);
    return 1;
  }
  qs_param p[] = {{"magnification", mag, NULL},
                  {"radius", radius, NULL},
                  {"temporal", 0, temporal}};
  double base = rss_now(), out_mib = 0;
  double *t = calloc((size_t)repeats * BENCH_MAX_IMPLS, sizeof *t);
  double cpu[BENCH_MAX_IMPLS] = {0};
  qs_run_report rep[BENCH_MAX_IMPLS];
  memset(rep, 0, sizeof rep);
  for (int k = -1; !rc && t && k < repeats; k++)
    for (int i = 0; !rc && i < n; i++) {
      qs_run_request rq = {.inputs = &st,
                           .n_inputs = 1,
                           .params = p,
                           .n_params = 3,
                           .impl = strcmp(impls[i], "auto") ? impls[i] : NULL};
      qs_image out;
      double t0 = bench_now(), c0 = bench_cpu();
      rc = qs_method_run(e, "esrrf", &rq, &out, 1, &rep[i]);
      double c = bench_cpu() - c0;
      if (rc) {
        fprintf(stderr, "esrrf %s: %s\n", impls[i], qs_engine_error(e));
        break;
      }
      if (k >= 0) t[i * repeats + k] = bench_now() - t0;
      if (k >= 0 && (k == 0 || c < cpu[i])) cpu[i] = c;
      out_mib = (double)(out.frames * out.rows * out.cols * 4) / (1 << 20);
      qs_image_free(&out);
    }
  double peak = rss_peak();
  const char *label = a.label;
  for (int i = 0; !rc && t && i < n; i++) {
    double *ti = t + i * repeats;
    char name[80];
    if (strcmp(impls[i], "auto"))
      snprintf(name, sizeof name, "%.63s", rep[i].impl);
    else /* the engine's choice and why, in the last run, and the time it
          * spent calibrating other implementations before that run (an
          * engine with a fresh store calibrates over its first calls) */
      snprintf(name, sizeof name, "auto:%.40s (%.15s, cal %.2f s)",
               rep[i].impl, rep[i].reason, rep[i].calibration_seconds);
    double med = bench_median(ti, repeats);
    printf("esrrf %-44s %5zu x %4zu x %4zu  M %g r %g %-4s %-12.12s min %8.4f "
           "s  median %8.4f s  device %8.4f s  peak %7.1f MiB  before %7.1f "
           "MiB  working %7.1f MiB  cpu %8.4f s\n",
           name, st.frames, st.rows, st.cols, mag, radius, temporal,
           label, ti[0], med, rep[i].device_seconds, peak, base,
           peak - base - out_mib, cpu[i]);
  }
  free(t);
  qs_image_free(&st);
  qs_engine_close(e);
  return rc ? 1 : 0;
}
