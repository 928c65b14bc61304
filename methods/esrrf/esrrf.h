/* esrrf.h — what the files of the eSRRF method share: its parameter
 * indices after rgc's (methods/rgc.h), the geometry of a call, the driver
 * and bounded-memory temporal statistics, and the implementations that
 * live in their own files. Internal to methods/. */
#ifndef QS_ESRRF_H
#define QS_ESRRF_H

#include <stddef.h>

#include "qs_config.h"

#include "methods/rgc/rgc.h"
#include "quicksilver_method.h"
#include "temporal.h"

/* eSRRF's parameters after rgc's rows (methods/rgc.h), in its table's
 * order. */
enum { P_FPT = RGC_N_PARAMS, P_TEMPORAL, P_MPC };

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

void esrrf_geom_of(const qs_method_call *c, esrrf_geom *g);

/* The NaN policy of eSRRF, one for the batch call and the live stream (so
 * also MPI and Python): a NaN or infinite pixel is refused, naming its
 * frame, row and column, before anything is computed. The index of the
 * first such value of p[0 .. n) (n if none), fast enough to run on every
 * input. */
size_t esrrf_first_nonfinite(const float *p, size_t n);

/* QS_EINVAL with that message when in (with data) holds one. */
int esrrf_check_finite(const qs_image *in, char *err, size_t err_len);

/* Computes the RGC maps of frames [f0, f0 + n) into dst (n planes of
 * rows_m × cols_m whose margins are zero and must stay so). */
typedef int (*esrrf_maps_fn)(void *state, size_t f0, size_t n, float *dst);

/* Runs a whole eSRRF call: maps of at most `batch` frames at a time (never
 * across timepoints), accumulated frame by frame into the timepoint's
 * statistic, then the macro-pixel correction; with temporal=none the maps
 * go straight to the output. Memory: the accumulators and `batch` maps. */
int esrrf_drive(const qs_method_call *c, const esrrf_geom *g, size_t batch,
                esrrf_maps_fn maps, void *state);

/* A maps function that may fold as it maps: the maps of frames [f0, f0 +
 * n) into dst as esrrf_maps_fn, and, when t is not NULL, also folded into
 * t after its t->n frames with t->n advanced by n: the numbers of the
 * maps then esrrf_fold, so that a map's rows can be folded while they are
 * still in the worker's cache. */
typedef int (*esrrf_fold_fn)(void *state, size_t f0, size_t n, float *dst,
                             qs_esrrf_partial *t);

/* esrrf_drive with a maps function that folds (esrrf_fold_fn). A call
 * with the live stream's sink maps and folds as esrrf_drive does. */
int esrrf_drive_fold(const qs_method_call *c, const esrrf_geom *g,
                     size_t batch, esrrf_fold_fn maps, void *state);

/* Folds n maps (planes of the call's map size) into the partial t after
 * its frames, rows split over c's pool; advances t->n. */
int esrrf_fold(const qs_method_call *c, const esrrf_geom *g,
               qs_esrrf_partial *t, const float *maps, size_t n);

/* The timepoint's image from t: the statistic (on c's pool), then the
 * macro-pixel correction if the call asks for it. The same numbers as
 * qs_esrrf_partial_finish. */
int esrrf_finish(const qs_method_call *c, const esrrf_geom *g,
                 const qs_esrrf_partial *t, float *out);

/* Frames of the batch esrrf_drive asks for at frame f (0 past the end), so
 * that an implementation can prepare the next batch ahead. */
size_t esrrf_batch_at(const esrrf_geom *g, size_t batch, size_t f);

/* Runs the CPU implementation of method d (every CPU row of a table shares
 * one run function) on in → out with parameter values p, on c's pool and
 * schedule: the reference steps without the dispatcher. */
int esrrf_sub(const qs_method_call *c, const qs_method_desc *d,
              const qs_image *in, qs_image *out, const double *p);

/* The implementations in their own files. */
int esrrf_run_fused(const qs_method_call *c);
int esrrf_run_composed(const qs_method_call *c);
#if QS_HAVE_OPENCL
int esrrf_run_opencl(const qs_method_call *c);
int esrrf_cl_probe(const qs_method_call *c, char *why, size_t why_len);
#endif

#endif
