/* input.h — the inputs of the eSRRF benchmarks (bench/esrrf, bench/roofline),
 * named on their command lines:
 *   sim    quicksilver simulate's defaults (blinking emitters, camera
 *          offset 100, background, Poisson shot noise, gain, read noise),
 *          emitters scaled to the field's area: realistic input, on which
 *          data-dependent branches cost what they cost on real data;
 *   spots  noiseless Gaussian spots on a flat background (the former
 *          bench/esrrf input; it flatters branchy code);
 *   PATH   a TIFF stack (e.g. tests/data/real/...): its first FRAMES
 *          frames, cropped to ROWS x COLS (0: its size).
 * Header-only; include once per program. */
#ifndef QS_BENCH_INPUT_H
#define QS_BENCH_INPUT_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quicksilver.h"
#include "simulate.h"
#include "tiff.h"

/* Monotonic wall-clock seconds. */
static inline double bench_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* CPU seconds of the whole process (all its threads): on a loaded machine
 * the work itself, where wall time also counts the waits for a core. */
static inline double bench_cpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static inline int bench_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Sorts t[0 .. n) ascending and returns its median. */
static inline double bench_median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, bench_cmp);
  return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
}

/* The names of a comma list (IMPL[,IMPL...]) into impls, at most max, each
 * cut to 63 characters; returns how many. */
static inline int bench_impl_list(const char *list, char (*impls)[64],
                                  int max) {
  int n = 0;
  for (const char *s = list; *s && n < max;) {
    size_t l = strcspn(s, ",");
    snprintf(impls[n++], 64, "%.*s", (int)(l < 63 ? l : 63), s);
    s += l + (s[l] == ',');
  }
  return n;
}

/* Whether name is one of the comma list's names. */
static inline int bench_in_list(const char *list, const char *name) {
  size_t l = strlen(name);
  for (const char *s = list; *s;) {
    size_t k = strcspn(s, ",");
    if (k == l && !strncmp(s, name, l)) return 1;
    s += k + (s[k] == ',');
  }
  return 0;
}

#define BENCH_MAX_IMPLS 16

/* The command line of bench/esrrf and bench/rgc:
 *   PROG IMPL[,IMPL...] FRAMES ROWS COLS [REPEATS [MAG [RADIUS [EXTRA
 *        [INPUT]]]]]
 * REPEATS 5, MAG 5, RADIUS 1.5 and INPUT `sim` by default; EXTRA is the
 * program's own word (named in usage, default `extra`; NULL: none, INPUT
 * follows RADIUS). */
typedef struct bench_args {
  char impls[BENCH_MAX_IMPLS][64];
  int n_impls, repeats;
  size_t frames, rows, cols;
  double mag, radius;
  const char *extra, *input;
  const char *label; /* INPUT without its directory, for the report */
} bench_args;

/* Fills *a from argv; 0, or 2 after printing the usage on stderr. */
static inline int bench_args_parse(int argc, char **argv, const char *extra,
                                   const char *extra_default, bench_args *a) {
  if (argc < 5) {
    fprintf(stderr, "usage: %s IMPL[,IMPL...] FRAMES ROWS COLS [REPEATS [MAG "
                    "[RADIUS [%s%sINPUT]%s]]]\n",
            argv[0], extra ? extra : "", extra ? " [" : "",
            extra ? "]" : "");
    return 2;
  }
  int at = extra ? 9 : 8; /* where INPUT is */
  a->n_impls = bench_impl_list(argv[1], a->impls, BENCH_MAX_IMPLS);
  a->frames = strtoul(argv[2], NULL, 10);
  a->rows = strtoul(argv[3], NULL, 10);
  a->cols = strtoul(argv[4], NULL, 10);
  a->repeats = argc > 5 ? atoi(argv[5]) : 5;
  if (a->repeats < 1 || a->repeats > 1000) a->repeats = 5;
  a->mag = argc > 6 ? atof(argv[6]) : 5;
  a->radius = argc > 7 ? atof(argv[7]) : 1.5;
  a->extra = extra && argc > 8 ? argv[8] : extra_default;
  a->input = argc > at ? argv[at] : "sim";
  a->label = strrchr(a->input, '/') ? strrchr(a->input, '/') + 1 : a->input;
  return 0;
}

/* An engine on a fresh in-memory store (it calibrates over its first
 * calls); NULL after saying why on stderr. */
static inline qs_engine *bench_engine(void) {
  qs_engine_options o = {.db_path = ":memory:", .seed = 1};
  qs_engine *e = NULL;
  int rc = qs_engine_open(&e, &o);
  if (!rc) return e;
  fprintf(stderr, "qs_engine_open: %s\n",
          e ? qs_engine_error(e) : qs_status_message(rc));
  qs_engine_close(e);
  return NULL;
}

/* Noiseless spots (bench/esrrf's former input): sigma 1.3 px on a 12-px
 * lattice, each on with probability 1/2, background 100. */
static inline void bench_spots(qs_image *m) {
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

/* The input named by `kind` (see the head comment); 0 or a message. */
static inline int bench_input(const char *kind, size_t frames, size_t rows,
                              size_t cols, qs_image *out, char *err,
                              size_t len) {
  if (!strcmp(kind, "spots")) {
    int rc = qs_image_alloc(out, frames, rows, cols);
    if (!rc) bench_spots(out);
    return rc;
  }
  if (!strcmp(kind, "sim")) {
    double v[SIM_N];
    for (int k = 0; k < SIM_N; k++) v[k] = sim_params[k].def;
    v[SIM_FRAMES] = (double)frames;
    v[SIM_ROWS] = (double)rows;
    v[SIM_COLS] = (double)cols;
    /* emitter density of the simulator's default 64 x 64 field */
    v[SIM_EMITTERS] = v[SIM_EMITTERS] * (double)(rows * cols) / 4096.0;
    return simulate(v, out, NULL, err, len);
  }
  qs_image full;
  int rc = tiff_read(kind, &full, err, len);
  if (rc) return rc;
  if (frames > full.frames) frames = full.frames;
  rows = rows && rows < full.rows ? rows : full.rows;
  cols = cols && cols < full.cols ? cols : full.cols;
  rc = qs_image_alloc(out, frames, rows, cols);
  for (size_t f = 0; !rc && f < frames; f++)
    for (size_t r = 0; r < rows; r++)
      memcpy(out->data + (f * rows + r) * cols,
             full.data + (f * full.rows + r) * full.cols,
             cols * sizeof(float));
  qs_image_free(&full);
  return rc;
}

#endif
