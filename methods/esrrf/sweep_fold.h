/* sweep_fold.h — the parameter sweep's per-pixel work on a run of pixels
 * (sweep.c): a radius's convergence mapped for one sensitivity, and the
 * AVG fold of a map into a point's statistics (all frames and one half),
 * in the widest vectors the CPU runs: AVX-512F, AVX2, or portable C,
 * chosen at run time. Every variant gives the portable one's bits, which
 * are rgc_sens's and temporal_add's. */
#ifndef QS_SWEEP_FOLD_H
#define QS_SWEEP_FOLD_H

#include <stddef.h>

#include "methods/esrrf/quicksilver_esrrf.h"

typedef struct sweep_kernels {
  const char *name;
  /* out[i] = rgc_sens(v[i], sens), times img[i] when img is not NULL (in
   * float), for i in [0, n). */
  void (*map)(const float *v, const float *img, float sens, size_t n,
              float *out);
  /* temporal_add of map x into AVG partials a and, unless NULL, h, for
   * pixels [b, e), both holding at least one frame (so a sum). */
  void (*add)(qs_esrrf_partial *a, qs_esrrf_partial *h, const float *x,
              size_t b, size_t e);
  /* add of map's pixels [b, e) (v, img and the partials indexed alike),
   * the map never stored: the bits of map into a buffer, then add. */
  void (*map_add)(const float *v, const float *img, float sens,
                  qs_esrrf_partial *a, qs_esrrf_partial *h, size_t b,
                  size_t e);
} sweep_kernels;

enum { SWEEP_PORTABLE, SWEEP_AVX2, SWEEP_AVX512, SWEEP_VARIANTS };

/* The variant `which` (SWEEP_*), or NULL where this build or this CPU
 * cannot run it (SWEEP_PORTABLE always runs). */
const sweep_kernels *sweep_kernels_get(int which);

/* The widest variant this CPU runs. */
const sweep_kernels *sweep_kernels_best(void);

#endif
