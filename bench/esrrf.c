/* esrrf.c — eSRRF speed and memory, one configuration per process so that
 * peak resident memory belongs to that configuration alone.
 *
 *   bench_esrrf IMPL FRAMES ROWS COLS [REPEATS [MAG [RADIUS [TEMPORAL]]]]
 *
 * Runs esrrf with IMPL forced ("serial", "threaded", "fused", "opencl", a
 * full name such as "opencl:<device>", or "auto" for the engine's choice)
 * on a deterministic stack of blinking Gaussian spots: one warm-up run
 * (program builds and first launches happen there), then REPEATS timed
 * runs (default 5). Prints one line: implementation, shape, min and median
 * seconds, the last run's device seconds (OpenCL), and memory in MiB: the peak resident set, what the process held
 * before the first run (input included), and the peak beyond that and the
 * output (the working memory the runs needed). Measured, never asserted. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "quicksilver.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

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

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Spots of sigma 1.3 px on a 12-px lattice, each on in a frame with
 * probability 1/2 (a fixed LCG), on a background of 100. */
static void fill(image *m) {
  unsigned s = 12345u;
  for (size_t f = 0; f < m->frames; f++) {
    float *p = m->data + f * m->rows * m->cols;
    for (size_t i = 0; i < m->rows * m->cols; i++) p[i] = 100.0f;
    for (size_t y0 = 6; y0 < m->rows; y0 += 12)
      for (size_t x0 = 6; x0 < m->cols; x0 += 12) {
        s = s * 1664525u + 1013904223u;
        if (s >> 31) continue;
        for (size_t y = y0 - 4; y < y0 + 5 && y < m->rows; y++)
          for (size_t x = x0 - 4; x < x0 + 5 && x < m->cols; x++) {
            double dy = (double)y - (double)y0, dx = (double)x - (double)x0;
            p[y * m->cols + x] +=
                (float)(500 * exp(-(dx * dx + dy * dy) / (2 * 1.69)));
          }
      }
  }
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s IMPL FRAMES ROWS COLS [REPEATS [MAG [RADIUS "
                    "[TEMPORAL]]]]\n",
            argv[0]);
    return 2;
  }
  const char *impl = argv[1];
  size_t frames = strtoul(argv[2], NULL, 10), rows = strtoul(argv[3], NULL, 10);
  size_t cols = strtoul(argv[4], NULL, 10);
  int repeats = argc > 5 ? atoi(argv[5]) : 5;
  double mag = argc > 6 ? atof(argv[6]) : 5, radius = argc > 7 ? atof(argv[7])
                                                             : 1.5;
  const char *temporal = argc > 8 ? argv[8] : "avg";
  if (repeats < 1 || repeats > 1000) repeats = 5;

  engine_options o = {.db_path = ":memory:", .seed = 1};
  engine *e = NULL;
  int rc = engine_open(&e, &o);
  if (rc) {
    fprintf(stderr, "engine_open: %s\n", e ? engine_error(e)
                                           : status_message(rc));
    engine_close(e);
    return 1;
  }
  image st;
  if ((rc = image_alloc(&st, frames, rows, cols))) {
    fprintf(stderr, "input: %s\n", status_message(rc));
    engine_close(e);
    return 1;
  }
  fill(&st);
  param p[] = {{"magnification", mag, NULL},
               {"radius", radius, NULL},
               {"temporal", 0, temporal}};
  run_request rq = {.inputs = &st, .n_inputs = 1, .params = p, .n_params = 3,
                    .impl = strcmp(impl, "auto") ? impl : NULL};
  double base = rss_now(), out_mib = 0, *t = calloc((size_t)repeats,
                                                     sizeof *t);
  run_report rep;
  memset(&rep, 0, sizeof rep);
  for (int k = -1; !rc && k < repeats; k++) {
    image out;
    double t0 = now();
    rc = method_run(e, "esrrf", &rq, &out, 1, &rep);
    if (rc) break;
    if (k >= 0) t[k] = now() - t0;
    out_mib = (double)(out.frames * out.rows * out.cols * 4) / (1 << 20);
    image_free(&out);
  }
  if (rc) {
    fprintf(stderr, "esrrf %s: %s\n", impl, engine_error(e));
  } else {
    qsort(t, (size_t)repeats, sizeof *t, cmp);
    double med = repeats % 2 ? t[repeats / 2]
                             : (t[repeats / 2 - 1] + t[repeats / 2]) / 2;
    double peak = rss_peak();
    printf("esrrf %-34s %5zu x %4zu x %4zu  M %g r %g %-4s  min %8.4f s  "
           "median %8.4f s  device %8.4f s  peak %7.1f MiB  before %7.1f "
           "MiB  working %7.1f MiB\n",
           rep.impl, frames, rows, cols, mag, radius, temporal, t[0], med,
           rep.device_seconds, peak, base, peak - base - out_mib);
  }
  free(t);
  image_free(&st);
  engine_close(e);
  return rc ? 1 : 0;
}
