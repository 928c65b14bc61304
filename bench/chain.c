/* chain.c — eSRRF's steps chained by a host program, on host images and on
 * device images (quicksilver_image.h): shift_magnify of the image,
 * roberts_cross, shift_magnify of each gradient, rgc. On host images every
 * step uploads its inputs and reads its outputs back; on device images the
 * input goes up once (qs_image_push), the steps run on the device's buffers
 * and the maps come down once (qs_image_pull). Prints, for each, the wall
 * time (min and median of REPEATS after a warm-up, the two alternating)
 * and the bytes moved between host and device (the engine's counters),
 * and checks that both give the same bits (IMPL opencl) or agree within
 * 1e-4 (auto, where each step's choice may differ).
 *
 *   chain IMPL FRAMES ROWS COLS [REPEATS [MAG [INPUT]]]
 *
 * IMPL: "opencl" (every step forced on the first OpenCL device's
 * implementation), or "auto" (the agent chooses each step, transfers
 * priced). INPUT as bench/input.h (default sim). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/input.h"

typedef struct chain_cfg {
  const char *impl; /* NULL: the agent */
  double mag;
} chain_cfg;

/* The chain on x (host or device image) into *maps (of x's place). */
static int chain_run(qs_engine *e, const chain_cfg *k, const qs_image *x,
                     qs_image *maps) {
  qs_param m1[] = {{"magnification_row", k->mag, NULL},
                   {"magnification_col", k->mag, NULL}};
  qs_param m2[] = {{"magnification_row", 2 * k->mag, NULL},
                   {"magnification_col", 2 * k->mag, NULL}};
  qs_param pr[] = {{"magnification", k->mag, NULL}};
  qs_image grad[2] = {{0}}, in[3] = {{0}};
  qs_run_request rq = {.inputs = x,
                       .n_inputs = 1,
                       .params = m1,
                       .n_params = 2,
                       .impl = k->impl};
  int rc = qs_method_run(e, "shift_magnify", &rq, &in[2], 1, NULL);
  rq = (qs_run_request){.inputs = x, .n_inputs = 1, .impl = k->impl};
  if (!rc) rc = qs_method_run(e, "roberts_cross", &rq, grad, 2, NULL);
  for (int i = 0; !rc && i < 2; i++) {
    rq = (qs_run_request){.inputs = &grad[i],
                          .n_inputs = 1,
                          .params = m2,
                          .n_params = 2,
                          .impl = k->impl};
    rc = qs_method_run(e, "shift_magnify", &rq, &in[i], 1, NULL);
  }
  rq = (qs_run_request){.inputs = in,
                        .n_inputs = 3,
                        .params = pr,
                        .n_params = 1,
                        .impl = k->impl};
  if (!rc) rc = qs_method_run(e, "rgc", &rq, maps, 1, NULL);
  for (int i = 0; i < 2; i++)
    qs_image_free(&grad[i]);
  for (int i = 0; i < 3; i++)
    qs_image_free(&in[i]);
  return rc;
}

/* One timed pass: host (device NULL) or device images; the maps in host
 * memory into *out, the seconds returned (< 0 on failure). */
static double pass(qs_engine *e, const chain_cfg *k, const qs_image *x,
                   const char *device, qs_image *out) {
  double t0 = bench_now();
  qs_image dx = {0}, dm = {0};
  int rc = QS_OK;
  if (device) {
    rc = qs_image_push(e, x, device, &dx);
    if (!rc) rc = chain_run(e, k, &dx, &dm);
    if (!rc) rc = qs_image_pull(e, &dm, out);
    qs_image_free(&dm);
    qs_image_free(&dx);
  } else {
    rc = chain_run(e, k, x, out);
  }
  double t = bench_now() - t0;
  if (rc) {
    fprintf(stderr, "chain: %s\n", qs_engine_error(e));
    return -1;
  }
  return t;
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr,
            "usage: %s opencl|auto FRAMES ROWS COLS [REPEATS [MAG "
            "[INPUT]]]\n",
            argv[0]);
    return 2;
  }
  size_t frames = strtoul(argv[2], NULL, 10),
         rows = strtoul(argv[3], NULL, 10), cols = strtoul(argv[4], NULL, 10);
  int repeats = argc > 5 ? atoi(argv[5]) : 5;
  if (repeats < 1 || repeats > 1000) repeats = 5;
  double mag = argc > 6 ? atof(argv[6]) : 2;
  const char *input = argc > 7 ? argv[7] : "sim";
  qs_engine *e = bench_engine();
  if (!e) return 1;
  qs_device_info dv[4];
  size_t nd = 0;
  qs_engine_devices(e, dv, 4, &nd);
  if (nd < 2) {
    fprintf(stderr, "chain: no OpenCL device (%s)\n", qs_engine_opencl_why(e));
    qs_engine_close(e);
    return 1;
  }
  const char *dev = dv[1].name;
  char impl[QS_NAME_MAX + 8];
  snprintf(impl, sizeof impl, "opencl:%s", dev);
  chain_cfg k = {strcmp(argv[1], "auto") ? impl : NULL, mag};
  qs_image x;
  char err[256];
  if (bench_input(input, frames, rows, cols, &x, err, sizeof err)) {
    fprintf(stderr, "chain: input %s: %s\n", input, err);
    qs_engine_close(e);
    return 1;
  }
  printf("chain %s on %s: %zu x %zu x %zu, M %g, input %s, %d repeats\n",
         k.impl ? k.impl : "auto", dev, x.frames, x.rows, x.cols, mag, input,
         repeats);
  double *t[2] = {malloc((size_t)repeats * sizeof(double)),
                  malloc((size_t)repeats * sizeof(double))};
  qs_image ref[2] = {{0}};
  uint64_t moved[2][2] = {{0}};
  int bad = !t[0] || !t[1];
  for (int v = 0; v < 2 && !bad; v++) {
    qs_image warm = {0};
    /* warm-up: builds, sizes */
    bad = pass(e, &k, &x, v ? dev : NULL, &warm) < 0;
    qs_image_free(&warm);
  }
  /* the repeats alternate host and device images, so that a change of
   * the machine's load falls on both alike */
  for (int r = 0; r < repeats && !bad; r++)
    for (int v = 0; v < 2 && !bad; v++) {
      const char *where = v ? dev : NULL;
      uint64_t u0, d0, u1, d1;
      qs_image out = {0};
      qs_engine_device_bytes(e, dev, &u0, &d0);
      t[v][r] = pass(e, &k, &x, where, &out);
      qs_engine_device_bytes(e, dev, &u1, &d1);
      bad = t[v][r] < 0;
      moved[v][0] = u1 - u0;
      moved[v][1] = d1 - d0;
      if (!ref[v].data)
        ref[v] = out;
      else
        qs_image_free(&out);
    }
  /* forced: the same implementations, the same bits; auto: each step's
   * choice may differ between the two (a CPU variant on device images
   * when the moves cost less than the device's launches), within the
   * methods' tolerance */
  size_t n = ref[0].frames * ref[0].rows * ref[0].cols;
  double top = 0, diff = 0;
  for (size_t i = 0; !bad && ref[0].data && ref[1].data && i < n; i++) {
    double a = ref[0].data[i], b = ref[1].data[i];
    top = fabs(a) > top ? fabs(a) : top;
    diff = fabs(a - b) > diff ? fabs(a - b) : diff;
  }
  int same = !bad && ref[0].data && ref[1].data &&
             (k.impl ? !memcmp(ref[0].data, ref[1].data, n * sizeof(float))
                     : diff <= 1e-4 * top);
  for (int v = 0; v < 2 && !bad; v++) {
    double mn = t[v][0];
    for (int r = 1; r < repeats; r++)
      mn = t[v][r] < mn ? t[v][r] : mn;
    printf("%-14s min %.4f s  median %.4f s  up %.2f MB  down %.2f MB\n",
           v ? "device images" : "host images", mn,
           bench_median(t[v], repeats), (double)moved[v][0] * 1e-6,
           (double)moved[v][1] * 1e-6);
  }
  if (!bad) {
    printf("input %.2f MB, maps %.2f MB; max |diff| %g of max %g: %s\n",
           (double)(x.frames * x.rows * x.cols * 4) * 1e-6,
           (double)(n * 4) * 1e-6, diff, top,
           same ? (k.impl ? "same bits" : "within 1e-4") : "DIFFERENT");
  }
  for (int v = 0; v < 2; v++) {
    qs_image_free(&ref[v]);
    free(t[v]);
  }
  qs_image_free(&x);
  qs_engine_close(e);
  return bad || !same;
}
