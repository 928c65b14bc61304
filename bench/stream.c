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
 * stays the timepoint call). After untimed warm-ups (program builds,
 * first launches, calibration; two more rounds of both sides so the heap
 * holds its working size), REPEATS (default 5) rounds of the batch call
 * on all FRAMES frames and the same frames pushed one at a time,
 * interleaved, the side going first alternating; the stream's caller
 * pops each result and hands its image back for the next
 * (qs_esrrf_stream_give), as a live display loop would. Freed memory stays in
 * the process (mallopt): on a VM with free page reporting, pages handed
 * back to the kernel are slow to touch again and would charge whichever
 * side comes next. Prints the min and median over the rounds of each
 * side's wall and process CPU seconds (all threads, PoCL's included) and
 * the median of the per-round stream/batch ratios (the robust overhead:
 * each pair runs seconds apart); the push time (a push and its pops:
 * what the caller waits for each frame) median and p99, and for the
 * pushes that complete a result, push to result ready, each against the
 * batch's seconds per frame; with OpenCL, the bytes each side brought
 * down. SIDE (default "both") "batch" or "stream" times only that side
 * after the warm-ups (which still run both), for profiling one side
 * against the other: `valgrind --tool=callgrind` or `perf stat` of a
 * "batch" run against a "stream" run counts the stream's own cost.
 * PACE (0 < PACE <= 1, with SIDE both) adds one stream run whose frames
 * arrive at PACE times the batch's frame rate, as from a camera the
 * stream keeps up with: its push time and push to result ready.
 * Measured, never asserted. */
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quicksilver.h"
#include "quicksilver_esrrf.h"

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
static void fill(qs_image *m) {
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

static void params(qs_param p[6], size_t window) {
  const qs_param all[6] = {{"magnification", 5, NULL},
                           {"radius", 1.5, NULL},
                           {"temporal", 0, NULL},
                           {"macro_pixel_correction", 1, NULL},
                           {"intensity_weighting", 1, NULL},
                           {"frames_per_timepoint", (double)window, NULL}};
  memcpy(p, all, sizeof all);
}

static int batch(qs_engine *e, const qs_image *st, size_t window,
                 const char *impl, char *chosen, side *sd) {
  qs_param p[6];
  params(p, window);
  qs_run_request rq = {
      .inputs = st, .n_inputs = 1, .params = p, .n_params = 6, .impl = impl};
  qs_image out[1];
  qs_run_report rep;
  double t0 = now(), c0 = cpu();
  int rc = qs_method_run(e, "esrrf", &rq, out, 1, &rep);
  sd->sec = now() - t0;
  sd->cpu = cpu() - c0;
  sd->down = rep.bytes_down;
  if (rc) {
    fprintf(stderr, "bench_stream: batch: %s\n", qs_engine_error(e));
    return rc;
  }
  snprintf(chosen, QS_NAME_MAX, "%s", rep.impl);
  qs_image_free(out);
  return QS_OK;
}

/* Pushes every frame alone; lat receives each push's seconds (the push
 * and the pops after it), done[f] whether that push gave a result. */
static int stream(qs_engine *e, const qs_image *st, size_t window,
                  size_t every, const char *impl, double interval, side *sd,
                  double *lat, unsigned char *done) {
  qs_param p[6];
  params(p, window);
  qs_esrrf_stream_options o = {.rows = st->rows,
                               .cols = st->cols,
                               .params = p,
                               .n_params = 6,
                               .sliding = every > 0,
                               .window = window,
                               .every = every,
                               .impl = impl,
                               .max_pending = 1 << 20};
  qs_esrrf_stream *s;
  char err[512];
  int rc = qs_esrrf_stream_open(e, &o, &s, err, sizeof err);
  if (rc) {
    fprintf(stderr, "bench_stream: %s\n", err);
    return rc;
  }
  size_t px = st->rows * st->cols;
  double t0 = now(), c0 = cpu();
  for (size_t f = 0; !rc && f < st->frames; f++) {
    qs_image one = qs_image_wrap(st->data + f * px, 1, st->rows, st->cols);
    /* paced: frame f arrives at t0 + f · interval */
    for (double due = t0 + (double)f * interval; now() < due;) {
      double w = due - now();
      struct timespec ts = {(time_t)w, (long)((w - (double)(time_t)w) * 1e9)};
      nanosleep(&ts, NULL);
    }
    double a = now();
    rc = qs_esrrf_stream_push(s, &one);
    int got = 1;
    done[f] = 0;
    while (!rc && got) {
      qs_image out;
      qs_esrrf_stream_pop(s, &out, NULL, &got);
      done[f] |= (unsigned char)got;
      if (got && qs_esrrf_stream_give(s, &out)) qs_image_free(&out);
    }
    lat[f] = now() - a;
  }
  if (!rc) rc = qs_esrrf_stream_end(s);
  sd->sec = now() - t0;
  sd->cpu = cpu() - c0;
  uint64_t up;
  qs_esrrf_stream_transfers(s, &up, &sd->down);
  if (rc) fprintf(stderr, "bench_stream: %s\n", qs_esrrf_stream_error(s));
  qs_esrrf_stream_close(s);
  return rc;
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double vmin(const double *v, size_t n) {
  double m = INFINITY;
  for (size_t i = 0; i < n; i++)
    m = v[i] < m ? v[i] : m;
  return m;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: bench_stream IMPL SIZE FRAMES [WINDOW [EVERY "
                    "[REPEATS [both|batch|stream [PACE]]]]]\n");
    return 2;
  }
  /* Freed memory stays in the process (no trimming, no mmap for blocks
   * glibc may keep): a block freed by one side and taken by the next is
   * not handed back to the kernel, whose free page reporting makes such
   * pages slow to touch again on this VM, a cost that would land on
   * whichever side comes next. */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  mallopt(M_TOP_PAD, 64 << 20);
  const char *want = strcmp(argv[1], "auto") ? argv[1] : NULL;
  size_t size = strtoul(argv[2], NULL, 10),
         frames = strtoul(argv[3], NULL, 10);
  size_t window = argc > 4 ? strtoul(argv[4], NULL, 10) : 100;
  size_t every = argc > 5 ? strtoul(argv[5], NULL, 10) : 0;
  int repeats = argc > 6 ? atoi(argv[6]) : 5;
  const char *only = argc > 7 ? argv[7] : "both";
  double pace = argc > 8 ? atof(argv[8]) : 0;
  int do_b = strcmp(only, "stream") != 0, do_s = strcmp(only, "batch") != 0;
  if (!size || !frames || !window || repeats < 1 || repeats > 1000 ||
      pace < 0 || pace > 1 ||
      (strcmp(only, "both") && do_b && do_s))
    return 2;
  qs_engine *e;
  qs_engine_options eo = {.db_path = ":memory:"};
  if (qs_engine_open(&e, &eo)) {
    fprintf(stderr, "bench_stream: %s\n",
            e ? qs_engine_error(e) : "no engine");
    qs_engine_close(e);
    return 1;
  }
  qs_image st;
  size_t r_n = (size_t)repeats;
  double *lat = malloc(frames * sizeof *lat);
  double *all = malloc(r_n * frames * sizeof *all);  /* every push */
  double *fin = malloc(r_n * frames * sizeof *fin);  /* completing ones */
  double *t[6]; /* per round: batch, stream wall; batch, stream cpu;
                   ratios wall, cpu */
  unsigned char *done = malloc(frames);
  for (int k = 0; k < 6; k++)
    t[k] = malloc(r_n * sizeof *t[k]);
  if (!lat || !all || !fin || !done || !t[5] ||
      qs_image_alloc(&st, frames, size, size))
    return 1;
  fill(&st);
  char impl[QS_NAME_MAX];
  side tb = {0}, ts = {0};
  size_t n_all = 0, n_fin = 0;
  /* warm-up: the batch call settles the implementation; a second round
   * of both leaves the process's heap at its working size */
  /* progress on stderr (the results go to stdout): a step of a long
   * sweep can take minutes */
  double t_start = now();
  fprintf(stderr, "bench_stream: warm-up (batch call, calibration)...\n");
  int rc = batch(e, &st, window, want, impl, &tb);
  for (int w = 0; !rc && w < 2; w++) {
    fprintf(stderr, "bench_stream: warm-up round %d/2 with %s (%.1f s)\n",
            w + 1, impl, now() - t_start);
    rc = stream(e, &st, window, every, impl, 0, &ts, lat, done);
    if (!rc) rc = batch(e, &st, window, impl, impl, &tb);
  }
  /* rounds interleaved, the side that goes first alternating, so that a
   * drift of the machine falls on both sides and each pair's ratio
   * compares runs a few seconds apart */
  for (size_t r = 0; !rc && r < r_n; r++) {
    fprintf(stderr, "bench_stream: round %zu/%zu (%.1f s)\n", r + 1, r_n,
            now() - t_start);
    for (int k = 0; !rc && k < 2; k++) {
      int b_side = (k == 0) == (r % 2 == 0);
      if (b_side && do_b) rc = batch(e, &st, window, impl, impl, &tb);
      if (!b_side && do_s)
        rc = stream(e, &st, window, every, impl, 0, &ts, lat, done);
      if (!b_side && do_s && !rc)
        for (size_t f = 0; f < frames; f++) {
          all[n_all++] = lat[f];
          if (done[f]) fin[n_fin++] = lat[f];
        }
    }
    t[0][r] = tb.sec;
    t[1][r] = ts.sec;
    t[2][r] = tb.cpu;
    t[3][r] = ts.cpu;
    t[4][r] = ts.sec / tb.sec;
    t[5][r] = ts.cpu / tb.cpu;
  }
  if (!rc && (!do_b || !do_s))
    printf("%s %zux%zux%zu M5 r1.5 avg window %zu%s, %s only, %d rounds: "
           "%.4f s wall min, %.4f median; %.4f s cpu min\n",
           impl, frames, size, size, window, every ? " sliding" : "", only,
           repeats, vmin(t[do_b ? 0 : 1], r_n), median(t[do_b ? 0 : 1], r_n),
           vmin(t[do_b ? 2 : 3], r_n));
  if (!rc && do_b && do_s) {
    double bmin = vmin(t[0], r_n), smin = vmin(t[1], r_n);
    double cbmin = vmin(t[2], r_n), csmin = vmin(t[3], r_n);
    double bmed = median(t[0], r_n), smed = median(t[1], r_n);
    double cbmed = median(t[2], r_n), csmed = median(t[3], r_n);
    double ratio = median(t[4], r_n), cratio = median(t[5], r_n);
    double per = bmed / (double)frames;
    double pmed = median(all, n_all), p99;
    p99 = all[(size_t)ceil(0.99 * (double)n_all) - 1]; /* sorted */
    double fmed = n_fin ? median(fin, n_fin) : 0;
    printf("%s %zux%zux%zu M5 r1.5 avg window %zu%s%s, %d rounds "
           "interleaved:\n",
           impl, frames, size, size, window, every ? " sliding every " : "",
           every ? argv[5] : "", repeats);
    printf("  wall: batch min %.4f median %.4f s (%.5f s/frame); stream min "
           "%.4f median %.4f s (%.2f frames/s); stream/batch: median of "
           "pairs %+.1f %%, of mins %+.1f %%\n",
           bmin, bmed, per, smin, smed, (double)frames / smed,
           100 * (ratio - 1), 100 * (smin / bmin - 1));
    printf("  cpu:  batch min %.4f median %.4f s; stream min %.4f median "
           "%.4f s; stream/batch: median of pairs %+.1f %%\n",
           cbmin, cbmed, csmin, csmed, 100 * (cratio - 1));
    printf("  push (return, with its pops): median %.5f p99 %.5f s, median "
           "%.2f x the batch's s/frame; a push that completes a result "
           "(push to result ready): median %.5f s = %.2f x, %zu of them\n",
           pmed, p99, pmed / per, fmed, fmed / per, n_fin);
    printf("  bytes down: batch %llu, stream %llu\n",
           (unsigned long long)tb.down, (unsigned long long)ts.down);
    /* a live acquisition at PACE times the batch's frame rate: the
     * latency a camera sees when the stream keeps up */
    if (pace > 0) {
      fprintf(stderr, "bench_stream: paced run at %.2f x (%.1f s)\n", pace,
              now() - t_start);
      rc = stream(e, &st, window, every, impl, per / pace, &ts, lat, done);
    }
    n_fin = 0;
    for (size_t f = 0; !rc && pace > 0 && f < frames; f++)
      if (done[f]) fin[n_fin++] = lat[f];
    if (!rc && pace > 0)
      printf("  paced at %.2f x the batch's frame rate (a frame every %.5f "
             "s): push median %.5f s = %.2f x the batch's s/frame; push to "
             "result ready median %.5f s = %.2f x, %zu of them; stream %.4f "
             "s\n",
             pace, per / pace, median(lat, frames), median(lat, frames) / per,
             n_fin ? median(fin, n_fin) : 0,
             n_fin ? median(fin, n_fin) / per : 0, n_fin, ts.sec);
  }
  qs_image_free(&st);
  free(lat);
  free(all);
  free(fin);
  free(done);
  for (int k = 0; k < 6; k++)
    free(t[k]);
  qs_engine_close(e);
  return rc ? 1 : 0;
}
