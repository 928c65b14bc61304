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

/* An engine on a fresh in-memory store (it calibrates over its first
 * calls); NULL after saying why on stderr. */
static inline engine *bench_engine(void) {
  engine_options o = {.db_path = ":memory:", .seed = 1};
  engine *e = NULL;
  int rc = engine_open(&e, &o);
  if (!rc) return e;
  fprintf(stderr, "engine_open: %s\n", e ? engine_error(e)
                                          : status_message(rc));
  engine_close(e);
  return NULL;
}

/* Noiseless spots (bench/esrrf's former input): sigma 1.3 px on a 12-px
 * lattice, each on with probability 1/2, background 100. */
static inline void bench_spots(image *m) {
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
                      size_t cols, image *out, char *err, size_t len) {
  if (!strcmp(kind, "spots")) {
    int rc = image_alloc(out, frames, rows, cols);
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
  image full;
  int rc = tiff_read(kind, &full, err, len);
  if (rc) return rc;
  if (frames > full.frames) frames = full.frames;
  rows = rows && rows < full.rows ? rows : full.rows;
  cols = cols && cols < full.cols ? cols : full.cols;
  rc = image_alloc(out, frames, rows, cols);
  for (size_t f = 0; !rc && f < frames; f++)
    for (size_t r = 0; r < rows; r++)
      memcpy(out->data + (f * rows + r) * cols,
             full.data + (f * full.rows + r) * full.cols,
             cols * sizeof(float));
  image_free(&full);
  return rc;
}

#endif
