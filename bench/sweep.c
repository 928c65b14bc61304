/* sweep.c — the parameter sweep's speed against one eSRRF call on the
 * same stack, side by side in one process and one engine:
 *
 *   bench/sweep INPUT FRAMES ROWS COLS [REPEATS [MAG [RADII [SENS
 *               [WARMUP]]]]]
 *
 * INPUT as bench/input.h (sim, spots or a TIFF path; ROWS/COLS 0: the
 * file's size); RADII and SENS comma lists (default the 5 x 5 grid
 * 0.5,1,1.5,2,2.5 x 1,2,3,4,5). Both are warmed up WARMUP times (default
 * 3: the engine calibrates and explores the implementations of every
 * step's keys there, on a fresh in-memory store), then timed REPEATS
 * times (default 5),
 * alternating; min and median of each and the ratio of the medians, as
 * JSON on stdout. The sweep computes RSP/RSE (squirrel) and FRC (odd/even
 * frames) at every point, AVG without macro-pixel correction; the eSRRF
 * call is the default AVG with correction, both at MAG (5). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/input.h"
#include "quicksilver_sweep.h"

static size_t list(const char *s, double *v, size_t max) {
  size_t n = 0;
  while (s && *s && n < max) {
    char *end;
    v[n++] = strtod(s, &end);
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') break;
  }
  return n;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s INPUT FRAMES ROWS COLS [REPEATS [MAG [RADII "
                    "[SENS]]]]\n",
            argv[0]);
    return 2;
  }
  size_t frames = strtoul(argv[2], NULL, 10), rows = strtoul(argv[3], NULL, 10),
         cols = strtoul(argv[4], NULL, 10);
  int repeats = argc > 5 ? atoi(argv[5]) : 5, mag = argc > 6 ? atoi(argv[6]) : 5;
  if (repeats < 1) repeats = 5;
  double radii[64], sens[64];
  size_t nr = list(argc > 7 ? argv[7] : "0.5,1,1.5,2,2.5", radii, 64);
  size_t ns = list(argc > 8 ? argv[8] : "1,2,3,4,5", sens, 64);
  int warmup = argc > 9 ? atoi(argv[9]) : 3;
  if (warmup < 0) warmup = 3;
  qs_image in;
  char err[1024];
  if (bench_input(argv[1], frames, rows, cols, &in, err, sizeof err)) {
    fprintf(stderr, "%s\n", err);
    return 1;
  }
  qs_engine *e = bench_engine();
  if (!e) return 1;
  qs_param p[] = {{"magnification", mag, NULL}};
  qs_run_request rq = {
      .inputs = &in, .n_inputs = 1, .params = p, .n_params = 1};
  qs_esrrf_sweep_options o = {.radii = radii,
                              .n_radii = nr,
                              .sensitivities = sens,
                              .n_sensitivities = ns,
                              .magnification = mag};
  double *te = calloc((size_t)repeats, sizeof *te);
  double *ts = calloc((size_t)repeats, sizeof *ts);
  double *tr = calloc((size_t)repeats, sizeof *tr);
  char impl[QS_NAME_MAX] = "";
  int rc = 0;
  for (int k = -warmup; k < repeats && !rc; k++) { /* k < 0: warm-up */
    qs_image out;
    qs_run_report rep;
    double t0 = bench_now();
    rc = qs_method_run(e, "esrrf", &rq, &out, 1, &rep);
    double t1 = bench_now();
    if (rc) {
      fprintf(stderr, "esrrf: %s\n", qs_engine_error(e));
      break;
    }
    qs_image_free(&out);
    snprintf(impl, sizeof impl, "%s", rep.impl);
    qs_esrrf_sweep_result r;
    rc = qs_esrrf_sweep(e, &in, &o, &r, err, sizeof err);
    double t2 = bench_now();
    if (rc) {
      fprintf(stderr, "sweep: %s\n", err);
      break;
    }
    qs_esrrf_sweep_free(&r);
    double radii_s = 0;
    for (size_t i = 0; i < nr && !rc; i++) {
      qs_param pr[] = {{"magnification", mag, NULL}, {"radius", radii[i], NULL}};
      qs_run_request rr = rq;
      rr.params = pr;
      rr.n_params = 2;
      double r0 = bench_now();
      rc = qs_method_run(e, "esrrf", &rr, &out, 1, NULL);
      radii_s += bench_now() - r0;
      if (rc)
        fprintf(stderr, "esrrf radius %g: %s\n", radii[i], qs_engine_error(e));
      else
        qs_image_free(&out);
    }
    fprintf(stderr, "%s %d: esrrf %.4f s (%s), sweep %.4f s, one call a "
            "radius %.4f s\n",
            k < 0 ? "warm-up" : "repeat", k < 0 ? k + warmup : k, t1 - t0,
            rep.impl, t2 - t1, radii_s);
    if (k >= 0) {
      te[k] = t1 - t0;
      ts[k] = t2 - t1;
      tr[k] = radii_s;
    }
  }
  if (!rc) {
    double me = bench_median(te, repeats), ms = bench_median(ts, repeats),
           mr = bench_median(tr, repeats);
    printf("{\"input\": \"%s\", \"frames\": %zu, \"rows\": %zu, \"cols\": "
           "%zu, \"magnification\": %d, \"points\": %zu, \"warmup\": %d, "
           "\"repeats\": %d, "
           "\"threads\": %d,\n \"esrrf\": {\"impl\": \"%s\", \"min\": %.6f, "
           "\"median\": %.6f},\n \"sweep\": {\"min\": %.6f, \"median\": "
           "%.6f},\n \"ratio_of_medians\": %.3f,\n \"radii_calls\": "
           "{\"min\": %.6f, \"median\": %.6f, \"ratio_of_medians\": "
           "%.3f}}\n",
           argv[1], in.frames, in.rows, in.cols, mag, nr * ns, warmup, repeats,
           qs_engine_threads(e), impl, te[0], me, ts[0], ms, ms / me, tr[0],
           mr, mr / me);
  }
  free(te);
  free(ts);
  free(tr);
  qs_image_free(&in);
  qs_engine_close(e);
  return rc ? 1 : 0;
}
