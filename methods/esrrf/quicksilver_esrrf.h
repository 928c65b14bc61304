/*
 * quicksilver_esrrf.h — eSRRF's own API beside the engine's: the partial
 * temporal statistic (esrrf_partial: what the batch call, the live stream
 * and a distributed run all fold through) and the live stream
 * (esrrf_stream). A client of the engine's public API (quicksilver.h),
 * which it includes; the engine knows nothing of it.
 *
 * Compiles as C11 and as C++.
 */
#ifndef QUICKSILVER_ESRRF_H
#define QUICKSILVER_ESRRF_H

#include "quicksilver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ live eSRRF */

/* eSRRF's temporal statistic of one timepoint as a partial that can be
 * built from any run of consecutive RGC maps, merged exactly with the
 * partial of the run that follows it, and finished into the timepoint's
 * image. The batch call (qs_method_run "esrrf" with a temporal statistic), the
 * live stream and a distributed run all fold through these functions, so a
 * timepoint's frames added one after another and finished give the very
 * bits qs_method_run gives for those maps.
 *
 * temporal is eSRRF's choice index: 0 avg, 1 var, 2 tac2 (none has no
 * statistic). Every pixel keeps qs_esrrf_partial_slots(temporal) doubles in
 * `data`, pixel-major (slot s of pixel i at data[i * slots + s]), so that a
 * partial can be sent as n and its data; with y_t = x_t − x_0 (x_0 the
 * partial's first map):
 *   avg   [Σ x_t]
 *   var   [mean, M2] — Welford's recurrence frame by frame (M2 the sum of
 *         squared deviations from the mean), Chan's formula to merge;
 *   tac2  [x_0, Σ y_t, Σ_{t<n−1} y_t·y_{t+1}, y_{n−1}] — the first map
 *         and the last shifted value are the boundary state a merge needs
 *         for the product across the boundary and the change of shift.
 * All in double: the error of a fold over 10^4 frames stays near double
 * rounding, far below the float output's ulp. A merge is exact up to
 * double rounding (not bit-identical to adding the same maps one by one:
 * a different order of the same sums). */
typedef struct qs_esrrf_partial {
  int temporal;       /* 0 avg, 1 var, 2 tac2 */
  size_t rows, cols;  /* the maps: R·M × C·M */
  uint64_t n;         /* maps folded in (0: empty) */
  double *data;       /* rows · cols · slots doubles, owned */
} qs_esrrf_partial;

/* Doubles per pixel of a statistic (1, 2, 4); 0 for anything else. */
QS_API size_t qs_esrrf_partial_slots(int temporal);

/* An empty partial for maps of rows × cols. QS_EINVAL for a temporal
 * index that has no statistic or a zero side, QS_EOVERFLOW / QS_ENOMEM.
 * On failure *p is emptied (data NULL). */
QS_API int qs_esrrf_partial_init(qs_esrrf_partial *p, int temporal,
                                 size_t rows, size_t cols);

/* Releases data and empties *p (safe on an emptied partial). */
QS_API void qs_esrrf_partial_free(qs_esrrf_partial *p);

/* Empties the partial for a new timepoint, keeping its memory. */
QS_API void qs_esrrf_partial_reset(qs_esrrf_partial *p);

/* Folds `count` consecutive maps (count planes of rows × cols floats, in
 * time order) into the partial after the maps it holds. */
QS_API int qs_esrrf_partial_add(qs_esrrf_partial *p, const float *maps,
                                size_t count);

/* Merges `next`, the partial of the maps that immediately follow those of
 * `into` in time, into `into` (either may be empty). Both must have the
 * same statistic and size (QS_EINVAL otherwise, into untouched). */
QS_API int qs_esrrf_partial_merge(qs_esrrf_partial *into,
                                  const qs_esrrf_partial *next);

/* The timepoint's image into out (rows × cols floats): the statistic over
 * the n maps (avg: mean; var: population variance; tac2: lag-1
 * autocovariance about the mean over n − 1), then, if mpc, the macro-pixel
 * correction for magnification mag (rows and cols multiples of it, 1 <=
 * mag <= 64). QS_EINVAL when n is 0, n < 2 for tac2, or mag does not fit. */
QS_API int qs_esrrf_partial_finish(const qs_esrrf_partial *p, int mag, int mpc,
                                   float *out);

/* The live stream: eSRRF over frames pushed as they are acquired, results
 * as they complete.
 *
 * Modes (window N, every K):
 *   timepoints  every N frames give one image: the batch call's
 *               timepoints (frames_per_timepoint N), the same numbers as
 *               qs_method_run on the same frames with the same
 *               implementation; qs_esrrf_stream_end gives the short last
 *               timepoint as the batch call does.
 *   sliding     once N frames have arrived, and then every K frames, the
 *               statistic of the last N frames (N a multiple of K); equal
 *               to a batch call on exactly those frames up to rounding
 *               (the window is merged from statistics of K frames, in
 *               another order than the batch call's fold).
 * How: the stream opens a plan of "esrrf" with temporal=none on its frame
 * size (qs_method_open), and each push runs it on the pushed frames (at most
 * QS_ESRRF_STREAM_CHUNK at a time and QS_ESRRF_STREAM_MAP_BYTES of maps, at
 * least one frame) with the stream's statistic as the run's argument:
 * the implementation folds the frames' maps into the stream's statistic
 * instead of writing them out, and keeps its state (tables, buffers, an
 * OpenCL chain) in the plan across pushes until qs_esrrf_stream_close. The first push
 * lets the engine choose the implementation (history, model or
 * calibration as usual, or the options' impl); later pushes force that
 * one, so a stream's numbers come from one implementation. Every push is
 * recorded in the store like any call, under the temporal=none key of
 * its frames (the output the engine hands it stays zeros). A CPU
 * implementation folds into a host partial with the batch call's own fold
 * on the engine's threads; an OpenCL implementation keeps a timepoint on
 * the device as its batch call does (bit-identical to it): only frames go
 * up (and its tables once, at the first push), only finished timepoints
 * come down. A sliding window on the CPU folds host partials of K frames;
 * an update merges two of them, the oldest block (which holds the merge
 * of the window's older blocks) and the merge of the blocks since, and
 * every N/K updates the blocks are turned into such merges in place
 * (about three partials read per update instead of N/K), run as the
 * implementation runs its loops (a serial one's on the calling thread
 * alone, a threaded one's on the engine's threads); on an OpenCL device it stays on the device in whichever form
 * takes less of its memory: the statistics of its N/K blocks of K frames
 * (when (N/K)·s + q <= N + s, s and q as below), merged by two stacks as
 * on the CPU (about three block states per update, the flip's N/K once
 * every N/K − 1 updates), most of it ahead of the update, which itself
 * reads three states (within rounding of the batch call on the window's
 * frames),
 * or the last N maps in a ring, which an update folds in time order (the
 * batch call's fold: its bits on exactly the window's frames); only the
 * window's image comes down (a device without room for either: maps come
 * down into host partials as on the CPU).
 * OpenCL pushes do not wait for the device: a push returns once its
 * frames are copied into a host staging area (the caller may reuse its
 * buffer at once). While the device still works on earlier frames, a
 * push that does not fill a batch only stages its frames; the frames
 * staged are enqueued together (one pass of the chain and of the fold
 * over all of them, as in the batch call) when a push finds the device
 * idle, fills a batch or completes a result, and at qs_esrrf_stream_end;
 * enqueueing collects the work enqueued before (at most two batches of
 * frames in flight). So in a stream pushed faster than the device
 * computes, frames gather into batches: the stream costs about what the
 * batch call does. A push after which a push of as many frames would
 * complete a result enqueues its frames and waits for all the work before
 * it returns, so that the frames completing a result find the device
 * idle: a result's latency is the work of its last push, not that work
 * queued behind earlier frames (in a stream pushed faster than the device
 * computes, that push is where the caller waits for the device to catch
 * up). A push that completes a result waits for all its work, so a
 * result is complete when qs_esrrf_stream_pop gives it. A failure the device reports
 * for earlier frames is returned by the next push (or qs_esrrf_stream_end)
 * that collects them; the timepoint (or, sliding, the window) they belong
 * to is lost, with the frames staged: timepoints start over with the next
 * frame, a window once N frames arrived after the failure. A push's wall
 * time is not its frames' work (it may only copy them, or wait for the
 * frames before it), so the engine records for it its frames at the
 * device seconds per frame measured over the stream so far (the first
 * push waits for its frames and records its wall time); its device
 * seconds are those of the work it collected. qs_esrrf_stream_close discards
 * frames still staged.
 * Memory, with P = R·M·C·M pixels and s = qs_esrrf_partial_slots: timepoints
 * 8·s·P bytes (on an OpenCL device instead: its accumulators, 4·P·(2, 5
 * or 6) bytes, and one batch of its chain's buffers); sliding on the CPU
 * 8·s·P·(N/K + 2) (one partial per K frames of the window, the block
 * being filled, and the merge of the newer blocks); sliding on OpenCL, on
 * the device, 4·P·((N/K)·s + 1 + q) for the blocks (s = 2, 5 or 6; q = s
 * for the merge of the newer blocks with three blocks or more, else 0) or
 * 4·P·(N + s + 1) for the ring and its accumulators,
 * plus one batch of the chain; plus the maps of one batch
 * of the implementation, kept across pushes (4·P for the fused paths; for
 * the vector ones on several threads with P <= 2^16, room for 8 MiB of
 * which a push touches 4·P per frame it brings, and per thread one frame's
 * gradients, grid and intensity rows: 8·R·C + 4·R·C·M + 16·(2R + 1)·(C +
 * L + 2W + 12) bytes at most, L the lanes, W the window's width), on
 * OpenCL a host copy of two batches of input frames (8·R·C per frame of a
 * batch), the output the engine allocates for a push's chunk and never
 * writes (at most max(QS_ESRRF_STREAM_MAP_BYTES, 4·P), virtual memory
 * mostly), 4·P per result waiting to be taken (at most max_pending,
 * one more after qs_esrrf_stream_end) and 4·P for the next result's image:
 * one the caller gave back (qs_esrrf_stream_give), else the push before the
 * one that completes a result allocates it and touches its pages, so
 * that faulting them in (8 to 46 ms for 26 MB on the machine measured) is
 * not part of the result's latency. A closed stream's device buffers stay
 * with the device for the next call or stream of the same sizes, within
 * the engine's bound (engine_options.device_cache_mb). */
#define QS_ESRRF_STREAM_CHUNK 16
#define QS_ESRRF_STREAM_MAP_BYTES ((size_t)256 << 20)
#define QS_ESRRF_STREAM_MAX_PENDING ((size_t)1 << 20)

typedef struct qs_esrrf_stream qs_esrrf_stream;

typedef struct qs_esrrf_stream_options {
  size_t rows, cols;        /* frame size R × C */
  const qs_param *params;   /* eSRRF's parameters by name, as qs_method_run
                               takes them (frames_per_timepoint is
                               ignored: window says it; temporal must
                               have a statistic) */
  size_t n_params;
  int sliding;              /* 0: timepoints, 1: sliding window */
  size_t window;            /* N >= 1 (>= 2 for tac2) */
  size_t every;             /* K (sliding; 0 means 1); N % K == 0 */
  const char *impl;         /* as run_request.impl; NULL: the engine's
                               choice */
  size_t max_pending;       /* results held before a push is refused
                               (0: 4; at most QS_ESRRF_STREAM_MAX_PENDING) */
} qs_esrrf_stream_options;

/* One result: the image is R·M × C·M floats, owned by the caller
 * (qs_image_free, or qs_esrrf_stream_give for the next result). */
typedef struct qs_esrrf_stream_result {
  uint64_t index;            /* 0, 1, ... in order of completion */
  uint64_t first, frames;    /* the frames it covers: [first, first +
                                frames) of the pushed sequence */
  double latency;            /* seconds from the push of its last frame to
                                its completion */
} qs_esrrf_stream_result;

/* Opens a stream on e (which must outlive it and is used by the stream's
 * calls: one thread at a time, as always). QS_EPARAM / QS_EINVAL /
 * QS_ESHAPE / QS_ENOMEM with a message in err (may be NULL). *s is NULL
 * on failure. */
QS_API int qs_esrrf_stream_open(qs_engine *e, const qs_esrrf_stream_options *o,
                                qs_esrrf_stream **s, char *err,
                                size_t err_len);

/* Pushes frames->frames frames of frames->rows × frames->cols. The whole
 * push is checked first and refused with nothing consumed: QS_ESHAPE for
 * another frame size, QS_EINVAL for a NaN or infinite pixel (the message
 * names the frame and pixel) or after qs_esrrf_stream_end, QS_EOVERFLOW when
 * the results it would complete exceed max_pending (take them with
 * qs_esrrf_stream_pop first). A failure of the computation itself
 * (QS_ENOMEM, an implementation error) keeps the frames folded before
 * it: those of the earlier chunks and the failing chunk's frames that the
 * implementation had folded (qs_esrrf_stream_frames says how many), except
 * that a failure of the device's timepoint or window loses it (above).
 * The stream stays usable after any of these. */
QS_API int qs_esrrf_stream_push(qs_esrrf_stream *s, const qs_image *frames);

/* The next completed result, oldest first: *got 1 and out/info filled, or
 * *got 0 when none is waiting. info may be NULL. */
QS_API int qs_esrrf_stream_pop(qs_esrrf_stream *s, qs_image *out,
                               qs_esrrf_stream_result *info, int *got);

/* Hands a result's image back once the caller is done with it (a live
 * display loop: pop, show, give): the stream writes a next result into it
 * instead of allocating one, whose pages the system would zero and fault
 * in again (26 MB a result for 512 x 512 frames at M 5). *img, of the
 * result's size (1 × R·M × C·M, from qs_esrrf_stream_pop or qs_image_alloc), is
 * taken: emptied, and freed at once when the stream holds one already.
 * QS_EINVAL without an image or for one the library did not allocate
 * (qs_image_wrap), QS_ESHAPE for another size; nothing taken then. */
QS_API int qs_esrrf_stream_give(qs_esrrf_stream *s, qs_image *img);

/* End of input. Timepoints: the frames of an unfinished timepoint become
 * its result, as the batch call's short last timepoint (none with 0
 * frames; discarded, with QS_EINVAL and a message, when tac2 has 1).
 * Sliding: frames since the last update are discarded (no window ends
 * there). Later pushes give QS_EINVAL. */
QS_API int qs_esrrf_stream_end(qs_esrrf_stream *s);

/* Frames pushed so far, and the implementation chosen ("" before the
 * first push). The string lives as long as the stream. */
QS_API uint64_t qs_esrrf_stream_frames(const qs_esrrf_stream *s);
QS_API const char *qs_esrrf_stream_impl(const qs_esrrf_stream *s);

/* Bytes the stream's calls moved to (*up) and from (*down) an OpenCL
 * device so far: their run_report counters, and the download of a short
 * last timepoint finished on the device by qs_esrrf_stream_end (0 and 0 on
 * the CPU). Either pointer may be NULL. */
QS_API void qs_esrrf_stream_transfers(const qs_esrrf_stream *s, uint64_t *up,
                                      uint64_t *down);

/* Message of the last failure on this stream ("" if none). */
QS_API const char *qs_esrrf_stream_error(const qs_esrrf_stream *s);

/* Frees the stream, including results not taken (discarded) and an
 * OpenCL push's work still in flight (waited for; a failure it had is not
 * reported: qs_esrrf_stream_end reports it). */
QS_API void qs_esrrf_stream_close(qs_esrrf_stream *s);

#ifdef __cplusplus
}
#endif

#endif /* QUICKSILVER_ESRRF_H */
