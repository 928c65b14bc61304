/* temporal.h — eSRRF's temporal statistics over the frames of a timepoint,
 * accumulated frame by frame in double so that memory does not grow with
 * the number of frames (NanoPyx holds the whole RGC stack of a timepoint),
 * and the macro-pixel correction applied to each resulting map.
 *
 * Statistics (x_t the frames of one timepoint, n of them):
 *   AVG  the mean;
 *   VAR  the population variance (ddof 0), by Welford's recurrence;
 *   TAC2 the lag-1 autocovariance about the mean,
 *        Σ_{t<n-1} (x_t − μ)(x_{t+1} − μ) / (n − 1), from running sums of
 *        y_t = x_t − x_0 (shift invariance keeps the sums small) and of
 *        y_t·y_{t+1}; it needs n >= 2.
 * Every function works on a pixel range [begin, end) so that threads can
 * share one accumulator on disjoint ranges. */
#ifndef QS_TEMPORAL_H
#define QS_TEMPORAL_H

#include <stddef.h>

/* In the order of eSRRF's `temporal` choices. */
typedef enum temporal_kind {
  TEMPORAL_AVG,
  TEMPORAL_VAR,
  TEMPORAL_TAC2,
  TEMPORAL_NONE
} temporal_kind;

#define TEMPORAL_CHOICES "avg|var|tac2|none"

/* Largest magnification temporal_mpc accepts (its phase map is on the
 * stack). */
#define TEMPORAL_MAX_MAG 64

/* Accumulators for one map of `pixels` pixels. */
typedef struct temporal {
  temporal_kind kind;
  size_t pixels;
  double *acc; /* per pixel: temporal_slots(kind) doubles */
} temporal;

/* Doubles per pixel the statistic keeps (0 for TEMPORAL_NONE). */
size_t temporal_slots(temporal_kind kind);

/* Allocates the accumulators; QS_ENOMEM on failure. */
int temporal_init(temporal *t, temporal_kind kind, size_t pixels);
void temporal_free(temporal *t);

/* Adds frame x (the map's pixels, indexed from 0) as frame number n
 * (0-based) of the current timepoint, for pixels [begin, end); n == 0
 * starts a new timepoint. */
void temporal_add(temporal *t, const float *x, size_t n, size_t begin,
                  size_t end);

/* Writes the statistic of the n frames added (n >= 1, n >= 2 for TAC2)
 * into out for pixels [begin, end). */
void temporal_result(const temporal *t, size_t n, float *out, size_t begin,
                     size_t end);

/* NanoPyx's macro-pixel correction of one rows_m × cols_m map magnified by
 * mag: the mean of every sub-pixel phase (y mod mag, x mod mag) over the
 * map (margins included; each term divided by the number of macro-pixels,
 * then summed in float as the reference does), then every pixel divided by
 * its phase's mean unless that mean is 0. After it every phase whose mean
 * was non-zero has mean 1. 1 <= mag <= TEMPORAL_MAX_MAG. */
void temporal_mpc(float *map, size_t rows_m, size_t cols_m, int mag);

#endif
