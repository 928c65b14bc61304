/* sink.h — what an eSRRF run feeds when it is a run of the live stream's
 * plan (engine/plan.h): the stream's statistic instead of per-frame maps.
 * The stream opens a plan of "esrrf" with temporal=none on its frame size
 * and runs it on the frames it was pushed (so that each run's key, choice
 * and recorded timing are those of any call on them), handing this sink as
 * the run's argument (method_call.arg); the implementation, instead of
 * writing the maps to the output (which it leaves as zeros), folds them
 * into the timepoint:
 *   - the host partial (every CPU path, through esrrf_drive; an OpenCL
 *     chain when device_ok is 0), the same esrrf_fold the batch call uses,
 *     so the stream's bits are the batch call's;
 *   - or, when device_ok, an implementation with device statistics keeps
 *     the timepoint in state it keeps in the plan (method_call.keep: the
 *     OpenCL chain's cl_stat, as its batch call does) and leaves the
 *     partial alone.
 * With a sliding window (ring N) an implementation may keep the window
 * itself (the OpenCL chain, on the device: its last N maps or the
 * statistics of its blocks of K frames; sets ringed) and, when `out` is
 * set, give the statistic of the N frames ending with this call's; the
 * others fold into the partial (a block of K frames) and ignore out.
 * When `out` is set the call completes the timepoint: its image (the
 * statistic, then the macro-pixel correction if the call's parameters ask
 * for it) goes to out and the accumulation starts over (the host partial
 * is left for the stream to reset). Internal to methods/esrrf. */
#ifndef QS_ESRRF_SINK_H
#define QS_ESRRF_SINK_H

#include <stdint.h>

#include "methods/esrrf/esrrf.h"

typedef struct esrrf_sink {
  int kind;               /* the statistic: 0 avg, 1 var, 2 tac2 */
  qs_esrrf_partial *partial; /* the host timepoint (or sliding block) */
  int device_ok;          /* the timepoint may live on a device */
  uint64_t n0;            /* frames of the timepoint before this call */
  size_t chunk;           /* the most frames any call of the stream has
                             (state sized at the first call serves all) */
  float *out;             /* set: this call completes the timepoint (or,
                             sliding, a window update) */
  size_t ring;            /* sliding: the window N, for an implementation
                             that keeps the window itself (0:
                             timepoints) */
  size_t every;           /* sliding: K, the frames between updates (a
                             divisor of N) */
  uint64_t at;            /* sliding: the stream's index of the call's
                             first frame */
  uint64_t due;           /* frames after this call's until the next
                             result completes (an implementation that
                             queues work may drain when the next call
                             completes it) */
  /* Set by the implementation: frames of this call folded (also on
   * failure: those before it), and for a timepoint kept on a device how
   * to finish it outside a call (the stream's short last timepoint), with
   * the bytes that brings down added to *down. */
  uint64_t folded;
  int ringed;             /* sliding: the implementation keeps the window
                             (then out receives the window's image); 0:
                             the frames went into the host partial */
  int lost;               /* a failure lost the timepoint (or the ring's
                             window) the implementation kept: the stream
                             starts it over */
  int (*finish)(void *state, float *out, uint64_t *down, char *err,
                size_t err_len);
  /* Set by an implementation whose work may still run after the call
   * returns: enqueues what it held back and waits for everything, adding
   * the bytes that uploads to *up; a failure (with a message) means the
   * kept timepoint or window is lost. */
  int (*settle)(void *state, uint64_t *up, char *err, size_t err_len);
  void *finish_state;
} esrrf_sink;

/* c's sink when c is a run of the stream's plan, else NULL. */
static inline esrrf_sink *esrrf_sink_of(const qs_method_call *c) {
  return c->arg;
}

/* (esrrf.c) The frames of c through maps() a batch at a time into a
 * buffer the plan keeps (batch maps, allocated once), folded into
 * sk->partial on c's pool, then finished into sk->out if set:
 * esrrf_drive's body for a call with a sink. QS_EINVAL when the partial
 * does not hold sk->n0 frames (a failed run of the same call folded some
 * already). */
int esrrf_drive_sink(const qs_method_call *c, const esrrf_geom *g,
                     size_t batch, esrrf_maps_fn maps, void *state,
                     esrrf_sink *sk);

#endif
