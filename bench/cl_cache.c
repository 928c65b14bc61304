/* cl_cache.c — what the on-disk program cache saves a host program: the
 * one-time cost (run_report.once_seconds: program builds and first
 * launches) of a new engine's first OpenCL call with an empty cache
 * folder (engine_options.cache_dir; PoCL's own kernel cache off), against
 * the same call of a new engine over the folder the first one filled.
 * Through the public API alone: neither the engine's in-memory programs
 * nor a warm context helps.
 *
 * Usage: cl_cache [repeats (default 5)] [method (default esrrf, the
 * largest kernels)]
 * Prints min and median milliseconds of each and their ratio. Goal: the
 * cached call's one-time cost at least 10x below the cold build's. */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quicksilver.h"

static int rm_one(const char *p, const struct stat *sb, int flag,
                  struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  remove(p);
  return 0;
}

/* A new engine over cache folder dir runs `method` once on its first
 * OpenCL implementation; returns the call's one-time seconds, < 0 on
 * failure. */
static double first_call(const char *dir, const char *method,
                         char impl[QS_NAME_MAX]) {
  qs_engine_options o = {.db_path = ":memory:", .cache_dir = dir};
  qs_engine *e = NULL;
  double s = -1;
  if (qs_engine_open(&e, &o)) {
    fprintf(stderr, "cl_cache: %s\n",
            e ? qs_engine_error(e) : "qs_engine_open");
    qs_engine_close(e);
    return -1;
  }
  qs_impl_info im[QS_MAX_IMPLS];
  size_t n = 0;
  qs_method_impls(e, method, im, QS_MAX_IMPLS, &n);
  impl[0] = 0;
  for (size_t i = 0; i < n && i < QS_MAX_IMPLS && !impl[0]; i++)
    if (im[i].kind == QS_IMPL_OPENCL && im[i].available)
      memcpy(impl, im[i].name, QS_NAME_MAX);
  if (!impl[0]) {
    fprintf(stderr, "cl_cache: no OpenCL implementation of %s here: %s\n",
            method, qs_engine_opencl_why(e));
    qs_engine_close(e);
    return -1;
  }
  static float px[2 * 32 * 32];
  for (size_t i = 0; i < sizeof px / sizeof *px; i++)
    px[i] = 100.0f + (float)((i * 7919) % 100);
  qs_image in = qs_image_wrap(px, 2, 32, 32), out[QS_MAX_OUTPUTS];
  qs_run_request rq = {.inputs = &in, .n_inputs = 1, .impl = impl};
  qs_run_report r;
  const qs_method_desc *d = qs_method_find(e, method);
  if (qs_method_run(e, method, &rq, out, d->n_outputs, &r) == QS_OK) {
    s = r.once_seconds;
    for (size_t k = 0; k < d->n_outputs; k++)
      qs_image_free(&out[k]);
  } else {
    fprintf(stderr, "cl_cache: %s\n", qs_engine_error(e));
  }
  qs_engine_close(e);
  return s;
}

static void report(const char *what, const double *x, int n, qs_stats *s) {
  qs_stats_of(x, (size_t)n, s);
  printf("%-12s min %8.2f ms  median %8.2f ms  (%d runs)\n", what,
         s->min * 1e3, s->median * 1e3, n);
}

int main(int argc, char **argv) {
  int repeats = argc > 1 ? atoi(argv[1]) : 5;
  const char *method = argc > 2 ? argv[2] : "esrrf";
  if (repeats < 1 || repeats > 1000) {
    fprintf(stderr, "cl_cache: repeats must be in [1, 1000]\n");
    return 2;
  }
  /* every cold build compiles from scratch; PoCL reads this when the
   * platform starts, at the first qs_engine_open */
  setenv("POCL_KERNEL_CACHE", "0", 1);
  double *cold = calloc((size_t)repeats, sizeof *cold);
  double *warm = calloc((size_t)repeats, sizeof *warm);
  int rc = cold && warm ? 0 : 1;
  char impl[QS_NAME_MAX] = "";
  for (int i = 0; i < repeats && !rc; i++) {
    char dir[] = "/tmp/qs-cl-cache-bench-XXXXXX";
    if (!mkdtemp(dir)) {
      perror("cl_cache: mkdtemp");
      rc = 1;
      break;
    }
    cold[i] = first_call(dir, method, impl);
    warm[i] = cold[i] < 0 ? -1 : first_call(dir, method, impl);
    if (cold[i] < 0 || warm[i] < 0) rc = 1;
    nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
  }
  if (!rc) {
    printf("%s on %s: a new engine's first call, one-time seconds "
           "(PoCL's cache off)\n",
           method, impl);
    qs_stats c, w;
    report("cold build", cold, repeats, &c);
    report("cached load", warm, repeats, &w);
    printf("ratio        min %.1fx  median %.1fx  (goal >= 10x)\n",
           c.min / w.min, c.median / w.median);
  }
  free(cold);
  free(warm);
  return rc;
}
