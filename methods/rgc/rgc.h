/* rgc.h — what the radial gradient convergence (rgc) method exports to the
 * files that build on it (eSRRF, the vectorised rgc passes, tests): its
 * parameter rows and their indices, the checks and constants of a call,
 * one frame of the reference RGC, and its implementations that live
 * outside methods/rgc/. The per-pixel math is methods/rgc/rgc_math.h, shared
 * with the OpenCL kernels. Internal to methods/. */
#ifndef QS_METHODS_RGC_H
#define QS_METHODS_RGC_H

#include <stddef.h>

#include "qs_config.h"

#include "methods/rgc/rgc_math.h"
#include "quicksilver_method.h"

/* The parameter rows rgc and esrrf share, first in both tables, in this
 * order: X(index, name, type, default, min, max, flags, choices, doc).
 * The index enum and the rows come from this one list, so an index cannot
 * name another row. */
#define RGC_PARAMS(X)                                                         \
  X(P_MAG, "magnification", QS_PARAM_INT, 5, 1, 64, 0, NULL,                  \
    "output pixels per input pixel along each axis")                          \
  X(P_RADIUS, "radius", QS_PARAM_FLOAT, 1.5, 0, 50, QS_PARAM_MIN_OPEN, NULL,  \
    "ring radius in input pixels (the gradient disk is 0.85 r + 1)")          \
  X(P_SENS, "sensitivity", QS_PARAM_FLOAT, 1, 0, 100, 0, NULL,                \
    "power applied to the convergence when > 1 (<= 1: none)")                 \
  X(P_IW, "intensity_weighting", QS_PARAM_BOOL, 1, 0, 1, 0, NULL,             \
    "multiply the convergence by the magnified intensity")

#define RGC_PARAM_INDEX(id, ...) id,
#define RGC_PARAM_DEF(id, name, type, def, lo, hi, flags, choices, doc)      \
  [id] = {name, type, def, lo, hi, flags, choices, doc},

/* P_MAG ... P_IW index method_call.p; RGC_N_PARAMS rows. */
enum { RGC_PARAMS(RGC_PARAM_INDEX) RGC_N_PARAMS };

/* The rows, for a param_def table initialiser, each at its index
 * (designated; trailing comma included). */
#define RGC_PARAM_ROWS RGC_PARAMS(RGC_PARAM_DEF)

/* Largest magnified side: indices and half-pixel coordinates stay exact in
 * float (2·side < 2^24) and in int. */
#define RGC_MAX_SIDE ((size_t)1 << 22)

/* Checks magnification, radius and sensitivity (finite, in range) and the
 * output sizes rows·factor × cols·factor (within RGC_MAX_SIDE a side and
 * QS_MAX_PIXELS for `frames` frames). Writes a message naming the field. */
int rgc_check(const double *p, size_t frames, size_t rows, size_t cols,
              size_t factor, char *err, size_t err_len);

/* The constants of a call from its parameters. */
rgc_consts rgc_consts_of(const double *p);

/* One frame of RGC: gradients gx, gy laid out as `grid` says, the ×M
 * intensity img (NULL: no intensity weighting), the output out
 * (rows_m × cols_m, whose margins the caller has zeroed). */
typedef struct rgc_frame {
  const float *gx, *gy;
  rgc_grid grid;
  const float *img;
  float *out;
  int rows_m, cols_m, margin;
  rgc_consts k;
} rgc_frame;

/* Computes output rows [r0, r1) of the frame (rows inside the margins
 * only; the others are left as they are). */
void rgc_frame_rows(const rgc_frame *f, size_t r0, size_t r1);

/* rgc through the vectorised fused pass (methods/rgc/rgc_vec.c):
 * portable, AVX2 + FMA and AVX-512F, each behind its probe. */
int rgc_run_vec(const qs_method_call *c);
int rgc_run_avx2(const qs_method_call *c);
int rgc_avx2_probe(const qs_method_call *c, char *why, size_t why_len);
int rgc_run_avx512(const qs_method_call *c);
int rgc_avx512_probe(const qs_method_call *c, char *why, size_t why_len);

#endif
