/* cl_stat.h — eSRRF's temporal statistic of one timepoint accumulated in
 * device buffers (methods/esrrf/esrrf_stat.cl gives the scheme: shifted,
 * compensated float sums), so that a chained OpenCL eSRRF downloads only
 * the T images. Used by the batch OpenCL implementation and the live
 * stream; tests drive it directly. Internal to methods/. */
#ifndef QS_CL_STAT_H
#define QS_CL_STAT_H

#include "qs_config.h"

#if QS_HAVE_OPENCL
#include "cl/clrt.h"

/* Pixels per work-item of esrrf_stat.cl's kernels (its STAT_LANES), and
 * of its window kernels that take runs (RUN_GROUPS · FIN_LANES: the
 * update's image, the flip, back's growth). */
#define CL_STAT_LANES 8
#define CL_RUN_LANES 64

typedef struct cl_stat {
  cldev *dev;
  int kind;     /* 0 avg, 1 var, 2 tac2 */
  size_t plane; /* pixels of a map */
  cl_kernel fold, finish;
  cl_mem acc, res;      /* slots · plane floats; plane floats */
  size_t global;        /* work-items: plane / CL_STAT_LANES rounded up
                           to a multiple of 64 */
  uint64_t n;           /* frames folded into the current timepoint */
  double dev_s, once_s; /* device seconds; builds and first launches */
} cl_stat;

/* Device floats per pixel of a statistic (2, 5, 6), and the bytes
 * cl_stat_open allocates for maps of `plane` pixels. */
size_t cl_stat_slots(int kind);
size_t cl_stat_bytes(int kind, size_t plane);

/* Program, kernels and buffers for maps of `plane` pixels on d.
 * QS_EDEVMEM / QS_EBUILD / QS_ECL with a message. On failure *st holds
 * nothing to release beyond cl_stat_close (safe). Close once the queues
 * that used it finished: its buffers go back to the device
 * (cldev_release) for a next call. */
int cl_stat_open(cl_stat *st, cldev *d, int kind, size_t plane, char *err,
                 size_t err_len);
void cl_stat_close(cl_stat *st);

/* Enqueues the fold of n maps (planes of st->plane floats at the start of
 * `maps`) on q after `wait` (may be NULL) and waits for it. */
int cl_stat_fold(cl_stat *st, cl_command_queue q, cl_mem maps, size_t n,
                 cl_event wait, char *err, size_t err_len);

/* The same for n maps starting at map `at` of `maps`; with `keep` it
 * does not wait: the fold's event goes to *keep (the caller waits, books
 * its device time and releases it), but for a first launch (waited for,
 * its compilation booked in once_s). */
int cl_stat_fold_at(cl_stat *st, cl_command_queue q, cl_mem maps, size_t at,
                    size_t n, cl_event wait, cl_event *keep, char *err,
                    size_t err_len);

/* The timepoint's image (st->plane floats) into out: the finishing kernel
 * and one download (counted by cldev_transfer); starts a new timepoint.
 * QS_EINVAL when no frame (or one, for tac2) was folded. */
int cl_stat_finish(cl_stat *st, cl_command_queue q, float *out, char *err,
                   size_t err_len);

/* Makes out from a finished image img (plane floats, readable during the
 * call only): a copy, or a correction on the way. Returns a status. */
typedef int (*cl_image_fn)(void *ctx, const float *img, float *out);

/* cl_stat_finish with out made by take(ctx, img, out) from the mapped
 * image (a copy when take is NULL): the download and take's pass over the
 * image are one pass on a device in host memory. take's failure is
 * returned (the timepoint is over all the same). */
int cl_stat_finish_with(cl_stat *st, cl_command_queue q, cl_image_fn take,
                        void *ctx, float *out, char *err, size_t err_len);

/* A sliding window's statistic as `blocks` block states of `every`
 * frames each, in one device buffer (block b's slot s of pixel i at
 * acc[(b·slots + s)·plane + i]). Each block is folded like a timepoint
 * (esrrf_fold, shifted by the block's first map); an update merges the
 * blocks in time order into the window's statistic (esrrf_window_image,
 * in double where the device has fp64) by two stacks, the host's scheme
 * for its partials (methods/esrrf/stream.c): at a flip, when no block of
 * the update's is part of a merge yet, the blocks become in place their
 * suffix merges (block j := blocks j .. newest, in the blocks' own
 * layout, methods/esrrf/esrrf_stat.cl), so that the oldest block of each
 * later update holds the merge of the old blocks still in the window;
 * between flips `back` (one more state) merges the blocks completed
 * since, and an update is oldest ⊕ back ⊕ the newest blocks: a constant
 * number of states per update (about 3, plus the flip's N/K once every
 * N/K − 1 updates) instead of N/K. cl_window_prepare grows back, and
 * flips, ahead of the update, so the update itself reads three states
 * (the oldest's suffix, back, the newest) and writes only its image.
 * Which state holds what is the host's bookkeeping: blocks are numbered
 * as they start (id), a state holds blocks id .. hi; a merge is used only
 * where the update's blocks are numbered consecutively in time order (as
 * a stream's are); otherwise the update combines the blocks one by one,
 * and refuses (QS_EINVAL) when one of them was merged away. A block
 * started over (a fold with first 0, e.g. after the stream lost its
 * window and reset the counts) is a new number, so the stacks restart by
 * themselves: the next update that finds no merge to use flips.
 * Not bit-identical to a cl_stat of the same frames (a different
 * summation): within ~1e-6 of the peak of the double host fold on
 * camera-like data (tests/test_clwin.c). Memory: cl_window_bytes,
 * (blocks·slots + back + 1)·plane floats (back = slots with three blocks
 * or more, else 0), against the N + 1 maps of a ring of N = blocks·every
 * maps. */
typedef struct cl_window {
  cldev *dev;
  int kind;                    /* 0 avg, 1 var, 2 tac2 */
  size_t plane, blocks, every; /* pixels of a map; blocks; frames a block */
  cl_kernel fold, image;       /* esrrf_fold, esrrf_window_image (an
                                  update's merge, read only) */
  cl_kernel flip, grow;        /* esrrf_window_flip, esrrf_window_grow
                                  (back takes completed blocks) */
  cl_mem acc, res;             /* (blocks + back)·slots·plane floats (back
                                  the last state); plane floats */
  size_t global;               /* as cl_stat's */
  size_t run_global;           /* work-items of the kernels on runs */
  size_t *count;               /* frames folded into each block (host) */
  uint64_t *id, *hi;           /* each state holds blocks id[b] .. hi[b] */
  uint64_t started;            /* blocks started so far (the last id) */
  int stacks;                  /* a flip happened: s_hi and back_n hold */
  uint64_t s_hi, back_n;       /* the suffixes end at block s_hi; back
                                  holds blocks s_hi + 1 .. s_hi + back_n */
  size_t flips, reads, writes; /* flips; states read and written by the
                                  window's kernels (bookkeeping) */
  double dev_s, once_s;        /* device seconds; builds and first launches */
} cl_window;

/* The planes of `back` (slots with 3 blocks or more, else 0), and the
 * device bytes cl_window_open allocates (0 for an unknown kind). */
size_t cl_window_back_slots(int kind, size_t blocks);
size_t cl_window_bytes(int kind, size_t plane, size_t blocks);

/* Program, kernels and buffers for `blocks` >= 1 blocks of `every` >= 1
 * maps of `plane` pixels on d. QS_EINVAL (bad kind or size), QS_ENOMEM,
 * QS_EDEVMEM / QS_EBUILD / QS_ECL with a message. On failure *w holds
 * nothing to release beyond cl_window_close (safe, also twice). Close
 * once the queues that used it finished, as cl_stat_close. */
int cl_window_open(cl_window *w, cldev *d, int kind, size_t plane,
                   size_t blocks, size_t every, char *err, size_t err_len);
void cl_window_close(cl_window *w);

/* Enqueues the fold of n maps (map `at` on of `maps`, planes of w->plane
 * floats) into block b, which already holds `first` frames (0 starts the
 * block over as a new block, dropping what it held). `first` must be 0 or
 * the frames the block holds, and first + n <= every, else QS_EINVAL
 * (nothing enqueued). After `wait` (may be NULL). Without `keep` it waits
 * and books the device time in dev_s; with `keep` the event goes to *keep
 * (the caller waits, books and releases it), but a first launch is waited
 * for and its compilation booked in once_s. n == 0: nothing, *keep NULL. */
int cl_window_fold_at(cl_window *w, cl_command_queue q, cl_mem maps, size_t at,
                      size_t n, size_t b, size_t first, cl_event wait,
                      cl_event *keep, char *err, size_t err_len);

/* For the update whose oldest block is `oldest`: the stacks' step for
 * every block but the newest ((oldest + blocks − 1) mod blocks, which may
 * still be filling): back takes the blocks completed since it last grew,
 * or the blocks flip, so that its cl_window_finish reads three states and
 * writes nothing but its image: work moved off the update, for the call
 * before it. Those blocks must hold `every` frames
 * (else QS_EINVAL with a message, nothing enqueued). Waits, books in
 * dev_s. Nothing to do (QS_OK) with one or two blocks, when the oldest
 * state already holds them, or when the blocks are not numbered consecutively
 * (the update then combines them itself). A failed kernel leaves the
 * states it wrote unknown: their counts go to 0 (refold them). */
int cl_window_prepare(cl_window *w, cl_command_queue q, size_t oldest,
                      char *err, size_t err_len);

/* The window's image (w->plane floats) into out: the `blocks` blocks in
 * time order from block `oldest` (wrapping), each of which must hold
 * `every` frames (else QS_EINVAL with a message, nothing enqueued),
 * merged from the states that hold them (the stacks' step or a flip when
 * no cl_window_prepare did it; QS_EINVAL when a block the update needs was
 * merged away by an update of other blocks), then one download counted by
 * cldev_transfer. Waits (the queue is in order: the folds enqueued before
 * it are done); books both in dev_s. The states may be rewritten as
 * merges; the next update refolds only the block it replaces. */
int cl_window_finish(cl_window *w, cl_command_queue q, size_t oldest,
                     float *out, char *err, size_t err_len);

/* cl_window_finish with out made by take(ctx, img, out) from the mapped
 * image (as cl_stat_finish_with). */
int cl_window_finish_with(cl_window *w, cl_command_queue q, size_t oldest,
                          cl_image_fn take, void *ctx, float *out, char *err,
                          size_t err_len);
#endif

#endif
