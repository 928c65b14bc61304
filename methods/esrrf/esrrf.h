/* esrrf.h — what the files of the radial gradient convergence (rgc) and
 * eSRRF methods share: their common parameter rows, one frame of RGC, the
 * bounded-memory temporal statistics, and the eSRRF implementations that
 * live in their own files. Internal to methods/. */
#ifndef QS_ESRRF_H
#define QS_ESRRF_H

#include <stddef.h>

#include "qs_config.h"

#include "methods/math/rgc.h"
#include "quicksilver_method.h"
#include "temporal.h"

/* The parameter rows rgc and esrrf share, first in both tables, in this
 * order (P_MAG ... P_IW index method_call.p). */
#define RGC_PARAM_ROWS                                                       \
  {"magnification", PARAM_INT, 5, 1, 64, 0, NULL,                           \
   "output pixels per input pixel along each axis"},                         \
      {"radius", PARAM_FLOAT, 1.5, 0, 50, PARAM_MIN_OPEN, NULL,              \
       "ring radius in input pixels (the gradient disk is 0.85 r + 1)"},     \
      {"sensitivity", PARAM_FLOAT, 1, 0, 100, 0, NULL,                       \
       "power applied to the convergence when > 1 (<= 1: none)"},            \
      {"intensity_weighting", PARAM_BOOL, 1, 0, 1, 0, NULL,                  \
       "multiply the convergence by the magnified intensity"}

enum { P_MAG, P_RADIUS, P_SENS, P_IW, P_FPT, P_TEMPORAL, P_MPC };

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

/* What every eSRRF implementation needs to know about a call. */
typedef struct esrrf_geom {
  size_t frames;             /* F */
  int rows, cols;            /* R, C */
  int mag;                   /* M */
  int rows_m, cols_m;        /* R·M, C·M */
  int margin;                /* int(radius·M) */
  size_t plane;              /* R·M·C·M */
  rgc_consts k;
  int weight;                /* intensity weighting */
  temporal_kind kind;
  size_t fpt;                /* resolved frames per timepoint */
  int mpc;                   /* macro-pixel correction */
} esrrf_geom;

void esrrf_geom_of(const method_call *c, esrrf_geom *g);

/* Computes the RGC maps of frames [f0, f0 + n) into dst (n planes of
 * rows_m × cols_m whose margins are zero and must stay so). */
typedef int (*esrrf_maps_fn)(void *state, size_t f0, size_t n, float *dst);

/* Runs a whole eSRRF call: maps of at most `batch` frames at a time (never
 * across timepoints), accumulated frame by frame into the timepoint's
 * statistic, then the macro-pixel correction; with temporal=none the maps
 * go straight to the output. Memory: the accumulators and `batch` maps. */
int esrrf_drive(const method_call *c, const esrrf_geom *g, size_t batch,
                esrrf_maps_fn maps, void *state);

/* Folds n maps (planes of the call's map size) into the partial t after
 * its frames, rows split over c's pool; advances t->n. */
int esrrf_fold(const method_call *c, const esrrf_geom *g, esrrf_partial *t,
               const float *maps, size_t n);

/* The timepoint's image from t: the statistic (on c's pool), then the
 * macro-pixel correction if the call asks for it. The same numbers as
 * esrrf_partial_finish. */
int esrrf_finish(const method_call *c, const esrrf_geom *g,
                 const esrrf_partial *t, float *out);

/* Frames of the batch esrrf_drive asks for at frame f (0 past the end), so
 * that an implementation can prepare the next batch ahead. */
size_t esrrf_batch_at(const esrrf_geom *g, size_t batch, size_t f);

/* Runs the CPU implementation of method d (every CPU row of a table shares
 * one run function) on in → out with parameter values p, on c's pool and
 * schedule: the reference steps without the dispatcher. */
int esrrf_sub(const method_call *c, const method_desc *d, const image *in,
              image *out, const double *p);

/* The implementations in their own files. */
int esrrf_run_fused(const method_call *c);
int esrrf_run_composed(const method_call *c);
/* rgc through the vectorised fused pass (rgc_vec.c): portable, and AVX2 +
 * FMA behind its probe. */
int rgc_run_vec(const method_call *c);
int rgc_run_avx2(const method_call *c);
int rgc_avx2_probe(const method_call *c, char *why, size_t why_len);
#if QS_HAVE_OPENCL
int esrrf_run_opencl(const method_call *c);
int esrrf_cl_probe(const method_call *c, char *why, size_t why_len);
int rgc_run_opencl(const method_call *c);
#endif

#endif
