/* cl_cache.c — what the on-disk binary cache saves: a cold build of the
 * largest embedded kernel (empty quicksilver cache, PoCL's own kernel cache
 * off) against loading it from the quicksilver cache, each in a new
 * runtime, so neither the in-memory cache nor a warm context helps.
 *
 * Usage: cl_cache [repeats (default 5)] [kernel file (default: largest)]
 * Prints min and median seconds of each and their ratio. Goal: the cached
 * load at least 10x faster than the cold build. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cl/clrt.h"
#include "timer.h"

#if QS_HAVE_OPENCL

/* The embedded .cl file with the longest source. */
static const char *largest_kernel(void) {
  const char *best = NULL;
  size_t best_len = 0, len;
  for (size_t i = 0; i < cl_source_count(); i++) {
    const char *name = cl_source_name(i);
    size_t k = strlen(name);
    if (k < 3 || strcmp(name + k - 3, ".cl")) continue;
    if (cl_source(name, &len) && len > best_len) {
      best = name;
      best_len = len;
    }
  }
  return best;
}

/* Builds `file` in a new runtime over dir; returns the seconds the build
 * or load took, or < 0 on failure. *from_disk tells which it was. */
static double build_once(const char *dir, const char *file, int *from_disk) {
  clrt *rt = NULL;
  char err[4096] = "";
  double s = -1;
  if (clrt_open(&rt, 0, dir, err, sizeof err) || clrt_count(rt) == 0) {
    fprintf(stderr, "cl_cache: no OpenCL device: %s\n",
            rt ? clrt_why(rt) : err);
    clrt_close(rt);
    return -1;
  }
  cl_program p;
  if (cldev_program(clrt_device(rt, 0), file, "", &p, &s, err, sizeof err)) {
    fprintf(stderr, "cl_cache: %s\n", err);
    s = -1;
  }
  *from_disk = clrt_stats(rt).disk_hits == 1;
  clrt_close(rt);
  return s;
}

static void report(const char *what, const double *x, int n, stats *s) {
  stats_of(x, (size_t)n, s);
  printf("%-12s min %8.2f ms  median %8.2f ms  (%d runs)\n", what,
         s->min * 1e3, s->median * 1e3, n);
}

int main(int argc, char **argv) {
  int repeats = argc > 1 ? atoi(argv[1]) : 5;
  if (repeats < 1 || repeats > 1000) {
    fprintf(stderr, "cl_cache: repeats must be in [1, 1000]\n");
    return 2;
  }
  const char *file = argc > 2 ? argv[2] : largest_kernel();
  size_t len = 0;
  if (!file || !cl_source(file, &len)) {
    fprintf(stderr, "cl_cache: no embedded kernel %s\n", file ? file : "");
    return 2;
  }
  /* Every cold build compiles from scratch; PoCL reads this when the
   * platform starts, i.e. at the first clrt_open below. */
  setenv("POCL_KERNEL_CACHE", "0", 1);
  char dir[] = "/tmp/qs-cl-cache-bench-XXXXXX";
  if (!mkdtemp(dir)) {
    perror("cl_cache: mkdtemp");
    return 1;
  }
  double *cold = calloc((size_t)repeats, sizeof *cold);
  double *warm = calloc((size_t)repeats, sizeof *warm);
  int rc = cold && warm ? 0 : 1, disk;
  printf("kernel %s (%zu bytes of source), device build with PoCL's cache "
         "off\n",
         file, len);
  for (int i = 0; i < repeats && !rc; i++) {
    cl_cache_clear(dir, NULL);
    cold[i] = build_once(dir, file, &disk);
    if (cold[i] < 0 || disk) rc = 1;
  }
  for (int i = 0; i < repeats && !rc; i++) {
    warm[i] = build_once(dir, file, &disk);
    if (warm[i] < 0 || !disk) {
      fprintf(stderr, "cl_cache: the cached load did not come from disk\n");
      rc = 1;
    }
  }
  if (!rc) {
    stats c, w;
    report("cold build", cold, repeats, &c);
    report("cached load", warm, repeats, &w);
    printf("ratio        min %.1fx  median %.1fx  (goal >= 10x)\n",
           c.min / w.min, c.median / w.median);
  }
  cl_cache_clear(dir, NULL);
  rmdir(dir);
  free(cold);
  free(warm);
  return rc;
}

#else

int main(void) {
  fprintf(stderr, "cl_cache: built without OpenCL\n");
  return 1;
}

#endif
