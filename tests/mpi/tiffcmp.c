/* tiffcmp.c — compares two TIFF stacks for the MPI tests: same shape and
 * max |a - b| <= tol * max |a|, or with TOL "bits" the same pixel bits (the
 * files' descriptions may differ: the provenance names how they were
 * made). Prints the relative difference; exit 0 when within tolerance, 1
 * when not, 2 on a read error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tiff.h"

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: tiffcmp A.tif B.tif TOL\n");
    return 2;
  }
  qs_image a, b;
  char err[512];
  if (tiff_read(argv[1], &a, err, sizeof err) ||
      tiff_read(argv[2], &b, err, sizeof err)) {
    fprintf(stderr, "tiffcmp: %s\n", err);
    return 2;
  }
  int rc = 1;
  if (a.frames != b.frames || a.rows != b.rows || a.cols != b.cols) {
    printf("shape %zux%zux%zu vs %zux%zux%zu\n", a.frames, a.rows, a.cols,
           b.frames, b.rows, b.cols);
  } else {
    size_t n = a.frames * a.rows * a.cols;
    double max = 0, diff = 0;
    for (size_t i = 0; i < n; i++) {
      double d = fabs((double)a.data[i] - b.data[i]);
      if (fabs(a.data[i]) > max) max = fabs(a.data[i]);
      if (d > diff || d != d) diff = d;
    }
    double rel = max > 0 ? diff / max : diff;
    printf("%.3g\n", rel);
    if (!strcmp(argv[3], "bits"))
      rc = memcmp(a.data, b.data, n * sizeof *a.data) ? 1 : 0;
    else
      rc = rel <= atof(argv[3]) ? 0 : 1;
  }
  qs_image_free(&a);
  qs_image_free(&b);
  return rc;
}
