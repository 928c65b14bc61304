/* stream.c — the live eSRRF stream against the batch call on the same
 * frames: per-frame latency and sustained frames/s.
 *
 *   bench_stream IMPL SIZE FRAMES [WINDOW [EVERY [REPEATS [SIDE]]]]
 *
 * SIZE × SIZE frames of a camera-like stack (background 100 with shot-like
 * and read noise, blinking Gaussian spots; deterministic), eSRRF at
 * magnification 5, radius 1.5, AVG. IMPL is forced on both sides ("fused",
 * "threaded", "opencl", a full name, or "auto": the batch call's choice,
 * which the stream then forces too). WINDOW (default 100) is the
 * timepoint length; with EVERY > 0 the stream runs a sliding window of
 * WINDOW frames updated every EVERY frames instead (the batch reference
 * stays the timepoint call). After one untimed warm-up of each (program
 * builds, first launches, calibration), REPEATS (default 3) rounds of: the
 * batch call on all FRAMES frames, then the same frames pushed one at a
 * time. Prints per round-min: batch seconds and seconds per frame; stream
 * seconds, frames/s, overhead over the batch call, and the push latency's
 * min / median / p99 with the median's ratio to the batch time per frame;
 * then the process CPU seconds of each side (all threads, PoCL's
 * included; round-min) and their ratio, which a loaded machine disturbs
 * far less than the wall times; with OpenCL, the bytes each side brought
 * down. SIDE (default "both") "batch" or "stream" times only that side
 * after the warm-ups (which still run both), for profiling one side
 * against the other: `valgrind --tool=callgrind` or `perf stat` of a
 * "batch" run against a "stream" run counts the stream's own cost.
 * Measured, never asserted. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quicksilver.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double cpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* One side's round: wall and CPU seconds, bytes down. */
typedef struct side {
  double sec, cpu;
  uint64_t down;
} side;

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static uint64_t rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static double unit(uint64_t *s) {
  return (double)(rng(s) >> 11) / 9007199254740992.0;
}

/* Background 100, spots of 800 photons (sigma 1.3 px) on a 10-px lattice
 * each on with probability 0.3, shot-like noise sqrt(v) and read noise 2. */
static void fill(image *m) {
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (size_t f = 0; f < m->frames; f++) {
    float *p = m->data + f * m->rows * m->cols;
    for (size_t i = 0; i < m->rows * m->cols; i++)
      p[i] = 100.0f;
    for (size_t y0 = 5; y0 < m->rows; y0 += 10)
      for (size_t x0 = 5; x0 < m->cols; x0 += 10) {
        if (unit(&s) > 0.3) continue;
        for (size_t y = y0 >= 4 ? y0 - 4 : 0; y < y0 + 5 && y < m->rows; y++)
          for (size_t x = x0 >= 4 ? x0 - 4 : 0; x < x0 + 5 && x < m->cols;
               x++) {
            double dy = (double)y - (double)y0, dx = (double)x - (double)x0;
            p[y * m->cols + x] +=
                (float)(800 / (2 * 3.14159265358979 * 1.69) *
                        exp(-(dx * dx + dy * dy) / (2 * 1.69)));
          }
      }
    for (size_t i = 0; i < m->rows * m->cols; i++) {
      double g = 0;
      for (int k = 0; k < 12; k++)
        g += unit(&s);
      double v = p[i];
      p[i] = (float)fmax(0, v + (sqrt(v) + 2) * (g - 6));
    }
  }
}

static void params(param p[6], size_t window) {
  const param all[6] = {{"magnification", 5, NULL},
                        {"radius", 1.5, NULL},
                        {"temporal", 0, NULL},
                        {"macro_pixel_correction", 1, NULL},
                        {"intensity_weighting", 1, NULL},
                        {"frames_per_timepoint", (double)window, NULL}};
  memcpy(p, all, sizeof all);
}

static int batch(engine *e, const image *st, size_t window, const char *impl,
                 char *chosen, side *sd) {
  param p[6];
  params(p, window);
  run_request rq = {
      .inputs = st, .n_inputs = 1, .params = p, .n_params = 6, .impl = impl};
  image out[1];
  run_report rep;
  double t0 = now(), c0 = cpu();
  int rc = method_run(e, "esrrf", &rq, out, 1, &rep);
  sd->sec = now() - t0;
  sd->cpu = cpu() - c0;
  sd->down = rep.bytes_down;
  if (rc) {
    fprintf(stderr, "bench_stream: batch: %s\n", engine_error(e));
    return rc;
  }
  snprintf(chosen, QS_NAME_MAX, "%s", rep.impl);
  image_free(out);
  return QS_OK;
}

/* Pushes every frame alone; lat receives each push's seconds. */
static int stream(engine *e, const image *st, size_t window, size_t every,
                  const char *impl, side *sd, double *lat) {
  param p[6];
  params(p, window);
  esrrf_stream_options o = {.rows = st->rows,
                            .cols = st->cols,
                            .params = p,
                            .n_params = 6,
                            .sliding = every > 0,
                            .window = window,
                            .every = every,
                            .impl = impl,
                            .max_pending = 1 << 20};
  esrrf_stream *s;
  char err[512];
  int rc = esrrf_stream_open(e, &o, &s, err, sizeof err);
  if (rc) {
    fprintf(stderr, "bench_stream: %s\n", err);
    return rc;
  }
  size_t px = st->rows * st->cols;
  double t0 = now(), c0 = cpu();
  for (size_t f = 0; !rc && f < st->frames; f++) {
    image one = image_wrap(st->data + f * px, 1, st->rows, st->cols);
    double a = now();
    rc = esrrf_stream_push(s, &one);
    int got = 1;
    while (!rc && got) {
      image out;
      esrrf_stream_pop(s, &out, NULL, &got);
      image_free(&out);
    }
    lat[f] = now() - a;
  }
  if (!rc) rc = esrrf_stream_end(s);
  sd->sec = now() - t0;
  sd->cpu = cpu() - c0;
  uint64_t up;
  esrrf_stream_transfers(s, &up, &sd->down);
  if (rc) fprintf(stderr, "bench_stream: %s\n", esrrf_stream_error(s));
  esrrf_stream_close(s);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: bench_stream IMPL SIZE FRAMES [WINDOW [EVERY "
                    "[REPEATS [both|batch|stream]]]]\n");
    return 2;
  }
  const char *want = strcmp(argv[1], "auto") ? argv[1] : NULL;
  size_t size = strtoul(argv[2], NULL, 10),
         frames = strtoul(argv[3], NULL, 10);
  size_t window = argc > 4 ? strtoul(argv[4], NULL, 10) : 100;
  size_t every = argc > 5 ? strtoul(argv[5], NULL, 10) : 0;
  int repeats = argc > 6 ? atoi(argv[6]) : 3;
  const char *only = argc > 7 ? argv[7] : "both";
  int do_b = strcmp(only, "stream") != 0, do_s = strcmp(only, "batch") != 0;
  if (!size || !frames || !window || repeats < 1 ||
      (strcmp(only, "both") && do_b && do_s))
    return 2;
  engine *e;
  engine_options eo = {.db_path = ":memory:"};
  if (engine_open(&e, &eo)) {
    fprintf(stderr, "bench_stream: %s\n", e ? engine_error(e) : "no engine");
    engine_close(e);
    return 1;
  }
  image st;
  double *lat = malloc(frames * sizeof *lat);
  if (!lat || image_alloc(&st, frames, size, size)) return 1;
  fill(&st);
  char impl[QS_NAME_MAX];
  side tb, ts;
  double best_b = INFINITY, best_s = INFINITY, cpu_b = INFINITY,
         cpu_s = INFINITY;
  double lmin = 0, lmed = 0, l99 = 0;
  /* warm-up: the batch call settles the implementation */
  int rc = batch(e, &st, window, want, impl, &tb);
  if (!rc) rc = stream(e, &st, window, every, impl, &ts, lat);
  for (int r = 0; !rc && r < repeats; r++) {
    if (do_b) rc = batch(e, &st, window, impl, impl, &tb);
    if (!rc && do_s) rc = stream(e, &st, window, every, impl, &ts, lat);
    if (rc) break;
    if (do_b && tb.sec < best_b) best_b = tb.sec;
    if (do_b && tb.cpu < cpu_b) cpu_b = tb.cpu;
    if (do_s && ts.cpu < cpu_s) cpu_s = ts.cpu;
    if (do_s && ts.sec < best_s) {
      best_s = ts.sec;
      qsort(lat, frames, sizeof *lat, cmp);
      lmin = lat[0];
      lmed = lat[frames / 2];
      l99 = lat[(size_t)ceil(0.99 * (double)frames) - 1];
    }
  }
  if (!rc && (!do_b || !do_s))
    printf("%s %zux%zux%zu M5 r1.5 avg window %zu%s, %s only: %.4f s wall, "
           "%.4f s cpu (round-min)\n",
           impl, frames, size, size, window, every ? " sliding" : "", only,
           do_b ? best_b : best_s, do_b ? cpu_b : cpu_s);
  if (!rc && do_b && do_s && every) printf("(sliding: every %zu) ", every);
  if (!rc && do_b && do_s)
    printf("%s %zux%zux%zu M5 r1.5 avg window %zu%s: batch %.4f s "
           "(%.5f s/frame); stream %.4f s, %.2f frames/s, overhead %+.1f %%; "
           "push latency min %.5f median %.5f p99 %.5f s, median/batch "
           "per frame %.2f\n",
           impl, frames, size, size, window, every ? " sliding" : "", best_b,
           best_b / (double)frames, best_s, (double)frames / best_s,
           100 * (best_s / best_b - 1), lmin, lmed, l99,
           lmed / (best_b / (double)frames));
  if (!rc && do_b && do_s)
    printf("  cpu: batch %.4f s, stream %.4f s, overhead %+.1f %%; bytes "
           "down: batch %llu, stream %llu\n",
           cpu_b, cpu_s, 100 * (cpu_s / cpu_b - 1),
           (unsigned long long)tb.down, (unsigned long long)ts.down);
  image_free(&st);
  free(lat);
  engine_close(e);
  return rc ? 1 : 0;
}
