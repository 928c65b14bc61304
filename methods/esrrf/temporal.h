/* temporal.h — eSRRF's temporal statistics over the frames of a timepoint,
 * accumulated frame by frame in double so that memory does not grow with
 * the number of frames (NanoPyx holds the whole RGC stack of a timepoint),
 * merged exactly across adjacent runs of frames, and the macro-pixel
 * correction applied to each resulting map.
 *
 * The state is the public esrrf_partial (quicksilver.h, "live eSRRF"),
 * whose comment gives the slots. These are its range forms: every function
 * works on a pixel range [begin, end) so that threads can share one
 * partial on disjoint ranges; the public esrrf_partial_* calls are these
 * over the whole map. One formula, one place: the batch driver
 * (esrrf_drive), the live stream and the public calls all fold here.
 *
 * Statistics (x_t the frames of one timepoint, n of them):
 *   AVG  the mean;
 *   VAR  the population variance (ddof 0), by Welford's recurrence, merged
 *        by Chan's formula;
 *   TAC2 the lag-1 autocovariance about the mean,
 *        Σ_{t<n-1} (x_t − μ)(x_{t+1} − μ) / (n − 1), from running sums of
 *        y_t = x_t − x_0 (shift invariance keeps the sums small) and of
 *        y_t·y_{t+1}; it needs n >= 2. */
#ifndef QS_TEMPORAL_H
#define QS_TEMPORAL_H

#include <stddef.h>

#include "quicksilver.h"
#include "methods/esrrf/quicksilver_esrrf.h"
#include "quicksilver_method.h"

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

/* Adds map x (indexed from 0 over the partial's pixels) as frame number
 * `n` (0-based) of the partial, for pixels [begin, end); n == 0 starts the
 * partial over. The caller advances p->n once every range is done. */
void temporal_add(qs_esrrf_partial *p, const float *x, uint64_t n,
                  size_t begin, size_t end);

/* Merges the statistics of `next` (the frames right after into's) into
 * `into` for pixels [begin, end); into->n and next->n are the counts
 * before the merge, and the caller sets into->n after every range. Both
 * non-empty, and their data distinct (never the same partial). */
void temporal_merge(qs_esrrf_partial *into, const qs_esrrf_partial *next,
                    size_t begin, size_t end);

/* Writes the statistic of the p->n frames added (>= 1, >= 2 for TAC2) into
 * out for pixels [begin, end). */
void temporal_result(const qs_esrrf_partial *p, float *out, size_t begin,
                     size_t end);

/* QS_OK when qs_esrrf_partial_finish can finish p with mag and mpc (data,
 * frames enough for its statistic, a magnification the correction
 * takes), else QS_EINVAL: its check, for callers that finish by parts. */
int temporal_finishable(const qs_esrrf_partial *p, int mag, int mpc);

/* The statistic of the frames of parts[0], parts[1], ..., parts[n-1]
 * (n >= 1 non-empty partials of one kind and size holding adjacent runs of
 * frames in that order; >= 2 frames in all for TAC2) into out for pixels
 * [begin, end): the bits of merging them one after another into an empty
 * partial (qs_esrrf_partial_merge) and temporal_result, in one pass that
 * reads each part once and writes only out (the merge runs in a tile of
 * the stack). The parts are not changed. */
void temporal_window(const qs_esrrf_partial *const *parts, size_t n,
                     float *out, size_t begin, size_t end);

/* The sliding window's other aggregation: for pixels [begin, end), every
 * parts[j] with 1 <= j < n becomes in place the merge of parts[j .. n)
 * (its suffix: merged from the newest back, parts[j] then the suffix
 * j + 1, by temporal_merge's formula), and out receives the statistic of
 * all n (parts[0] then the suffix 1), which is within rounding of
 * temporal_window's. parts[0] is not changed. Same conditions as
 * temporal_window, the parts distinct; the counts are read as the parts'
 * own: the caller sets parts[j]->n to its suffix's frames once every
 * range is done. */
void temporal_suffixes(qs_esrrf_partial *const *parts, size_t n, float *out,
                       size_t begin, size_t end);

/* NanoPyx's macro-pixel correction of one rows_m × cols_m map magnified by
 * mag: the mean of every sub-pixel phase (y mod mag, x mod mag) over the
 * map (margins included; each term divided by the number of macro-pixels,
 * then summed in float as the reference does), then every pixel divided by
 * its phase's mean unless that mean is 0. After it every phase whose mean
 * was non-zero has mean 1. 1 <= mag <= TEMPORAL_MAX_MAG. */
void temporal_mpc(float *map, size_t rows_m, size_t cols_m, int mag);

/* temporal_mpc on c's pool, bit-identical to it: the phase means by phase
 * rows (each phase still sums its terms in the serial order), then the
 * division by rows of the map. Returns the pool's status. */
int temporal_mpc_on(const qs_method_call *c, float *map, size_t rows_m,
                    size_t cols_m, int mag);

/* A parallel loop of body over [b, e) (a pool's, or a call's
 * parallel_for) with its environment. */
typedef int (*temporal_for_fn)(const void *env, size_t b, size_t e,
                               qs_range_fn body, void *ctx);

/* temporal_mpc_on with the loops run by run(env, ...): the same bits. */
int temporal_mpc_with(temporal_for_fn run, const void *env, float *map,
                      size_t rows_m, size_t cols_m, int mag);

/* temporal_mpc_with from src into dst (may be src): the same bits in dst,
 * src unchanged when it is not dst; with mag 0 a copy (no correction), the
 * rows on run. One pass over the map less than a copy, then the
 * correction in place (a device's mapped result corrected on its way to
 * the caller's image). */
int temporal_mpc_into(temporal_for_fn run, const void *env, const float *src,
                      float *dst, size_t rows_m, size_t cols_m, int mag);

/* temporal_mpc_into on c's pool, or serially when c is NULL (outside a
 * call). */
int temporal_mpc_from(const qs_method_call *c, const float *src, float *dst,
                      size_t rows_m, size_t cols_m, int mag);

/* The two passes of both, on ranges: the means of the phase rows [y0, y1)
 * into corr[y·mag + x] (mag × mag floats), then rows [r0, r1) of src
 * divided by their phases' means into dst (may be src). */
void temporal_mpc_sums(const float *map, size_t rows_m, size_t cols_m,
                       int mag, size_t y0, size_t y1, float *corr);
void temporal_mpc_divide(const float *src, float *dst, size_t cols_m, int mag,
                         const float *corr, size_t r0, size_t r1);

#endif
