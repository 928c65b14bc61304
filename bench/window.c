/* window.c — the device sliding window's work per update, kernel by
 * kernel (methods/esrrf/cl_stat.h, cl_window): what the live OpenCL stream
 * adds to its frames for each result of a sliding window.
 *
 *   window [SIDE [BLOCKS [EVERY [UPDATES]]]]
 *
 * Maps of SIDE × SIDE pixels (default 1280: a 256² frame at M 5),
 * BLOCKS blocks (default 10) of EVERY frames (default 10), so a window of
 * BLOCKS·EVERY frames updated every EVERY. Camera-like maps (background
 * 100 with noise, blinking spots: a block often starts on a bright frame).
 * For avg, var and tac2: the blocks are folded one map at a time as the
 * stream folds them; before the last frame of each block the step ahead of
 * the update (cl_window_prepare: back grows, or the blocks flip), after it
 * the update (cl_window_finish: the image and its mapped download). After
 * BLOCKS + 2 untimed blocks (builds, first launches, the first flip),
 * UPDATES (default 30) updates; device seconds (profiling) min and median
 * of the fold of one map, the step ahead when it grows back, the flip, and
 * the update, and the mean per update of the step ahead (flips included)
 * and the update together. Then the host's share of an update at M 5:
 * the macro-pixel correction of one SIDE² image into another, on one
 * thread (the stream runs it on the implementation's threads). Measured,
 * never asserted. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/esrrf/cl_stat.h"
#include "methods/esrrf/temporal.h"
#include "timer.h"

#if QS_HAVE_OPENCL

enum { MAPS = 16 };

static double uni(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return (double)(*s >> 11) / 9007199254740992.0;
}

/* MAPS camera-like maps of px pixels. */
static float *camera(size_t px) {
  float *m = malloc(MAPS * px * sizeof *m);
  if (!m) return NULL;
  uint64_t s = 88172645463325252u;
  for (size_t t = 0; t < MAPS; t++)
    for (size_t i = 0; i < px; i++) {
      double g = uni(&s) + uni(&s) + uni(&s) + uni(&s) - 2;
      double v = 100 + 17.3 * g;
      if (i % 7 == 3 && uni(&s) < 0.35) v += 500 + 2500 * uni(&s);
      m[t * px + i] = (float)v;
    }
  return m;
}

/* Seconds samples: min and median in ms, or "-" without any. */
static void show(const char *what, double *x, size_t n) {
  if (!n) {
    printf("  %-22s -\n", what);
    return;
  }
  qs_stats s;
  qs_stats_of(x, n, &s);
  printf("  %-22s min %7.2f  median %7.2f ms  (%zu)\n", what, s.min * 1e3,
         s.median * 1e3, n);
}

/* One statistic's run; 0 or a failure's status (message printed). */
static int run(cldev *d, cl_command_queue q, cl_mem maps, int kind, size_t px,
               size_t nb, size_t k, size_t updates) {
  static const char *names[] = {"avg", "var", "tac2"};
  char err[512] = "";
  cl_window w;
  size_t warm = nb + 2, total = warm + updates;
  double *fold = malloc(updates * k * sizeof *fold);
  double *grow = malloc(updates * sizeof *grow);
  double *flip = malloc(updates * sizeof *flip);
  double *upd = malloc(updates * sizeof *upd);
  float *out = malloc(px * sizeof *out);
  size_t n_fold = 0, n_grow = 0, n_flip = 0, n_upd = 0;
  double ahead = 0;
  int rc = !fold || !grow || !flip || !upd || !out ? QS_ENOMEM : QS_OK;
  if (!rc) rc = cl_window_open(&w, d, kind, px, nb, k, err, sizeof err);
  for (size_t u = 0; !rc && u < total; u++) {
    int timed = u >= warm;
    for (size_t j = 0; !rc && j < k; j++) {
      if (j == k - 1 && u >= nb) { /* the drain before the last frame */
        double d0 = w.dev_s;
        size_t f0 = w.flips;
        rc = cl_window_prepare(&w, q, (u + 1) % nb, err, sizeof err);
        double s = w.dev_s - d0;
        if (timed) {
          ahead += s;
          if (w.flips > f0)
            flip[n_flip++] = s;
          else if (s > 0)
            grow[n_grow++] = s;
        }
      }
      double d0 = w.dev_s;
      if (!rc)
        rc = cl_window_fold_at(&w, q, maps, (u * k + j) % MAPS, 1, u % nb, j,
                               NULL, NULL, err, sizeof err);
      if (timed) fold[n_fold++] = w.dev_s - d0;
    }
    if (!rc && u >= nb - 1) {
      double d0 = w.dev_s;
      rc = cl_window_finish(&w, q, (u + 1) % nb, out, err, sizeof err);
      if (timed) upd[n_upd++] = w.dev_s - d0;
    }
  }
  if (rc) {
    fprintf(stderr, "window: %s: %s\n", names[kind], err);
  } else {
    double sum = ahead;
    for (size_t i = 0; i < n_upd; i++)
      sum += upd[i];
    printf("%s, %zu blocks of %zu maps of %zu pixels, %zu updates "
           "(device seconds):\n",
           names[kind], nb, k, px, n_upd);
    show("fold of one map", fold, n_fold);
    show("step ahead, back grows", grow, n_grow);
    show("step ahead, flip", flip, n_flip);
    show("update (image, map)", upd, n_upd);
    printf("  per update, mean      %7.2f ms (step ahead with its flips, "
           "and the update)\n",
           n_upd ? sum / (double)n_upd * 1e3 : NAN);
  }
  cl_window_close(&w);
  free(fold);
  free(grow);
  free(flip);
  free(upd);
  free(out);
  return rc;
}

int main(int argc, char **argv) {
  size_t side = argc > 1 ? strtoul(argv[1], NULL, 10) : 1280;
  size_t nb = argc > 2 ? strtoul(argv[2], NULL, 10) : 10;
  size_t k = argc > 3 ? strtoul(argv[3], NULL, 10) : 10;
  size_t updates = argc > 4 ? strtoul(argv[4], NULL, 10) : 30;
  if (!side || side > 16384 || !nb || nb > 1000 || !k || k > 1000 ||
      !updates || updates > 100000) {
    fprintf(stderr, "usage: window [SIDE [BLOCKS [EVERY [UPDATES]]]]\n");
    return 2;
  }
  size_t px = side * side;
  char err[512] = "";
  clrt *rt = NULL;
  if (clrt_open(&rt, 0, NULL, err, sizeof err) || clrt_count(rt) == 0) {
    fprintf(stderr, "window: no OpenCL device: %s\n", rt ? clrt_why(rt) : err);
    clrt_close(rt);
    return 1;
  }
  cldev *d = clrt_device(rt, 0);
  cl_context ctx;
  cl_command_queue q;
  cl_mem maps = NULL;
  float *host = camera(px);
  int rc = host ? QS_OK : QS_ENOMEM;
  if (!rc) rc = cldev_queue(d, &ctx, &q, err, sizeof err);
  if (!rc)
    rc = cldev_buffer(d, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                      MAPS * px * sizeof(float), host, "maps", &maps, err,
                      sizeof err);
  if (rc) fprintf(stderr, "window: %s\n", err[0] ? err : "no memory");
  for (int kind = 0; !rc && kind <= 2; kind++)
    rc = run(d, q, maps, kind, px, nb, k, updates);
  float *dst = rc || side % 5 ? NULL : malloc(px * sizeof *dst);
  double *mpc = dst ? malloc(updates * sizeof *mpc) : NULL;
  for (size_t i = 0; mpc && i < updates + 2; i++) {
    int64_t t0 = qs_timer_ns();
    temporal_mpc_from(NULL, host + i % MAPS * px, dst, side, side, 5);
    if (i >= 2) mpc[i - 2] = (double)(qs_timer_ns() - t0) * 1e-9;
  }
  if (mpc) {
    printf("host, M 5, one thread:\n");
    show("correction of an image", mpc, updates);
  }
  free(mpc);
  free(dst);
  if (maps) clReleaseMemObject(maps);
  free(host);
  clrt_close(rt);
  return rc ? 1 : 0;
}

#else
int main(void) {
  fprintf(stderr, "window: built without OpenCL\n");
  return 1;
}
#endif
