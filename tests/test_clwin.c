/* test_clwin.c — a sliding window's temporal statistic on the device as
 * block states merged by two stacks (methods/esrrf/cl_stat.h, cl_window):
 * every update of a window over a camera-like stack, its frames folded in
 * uneven units and its ring of blocks wrapping, within 1e-5 of the peak of
 * the double host fold of exactly the window's frames (esrrf_partial_*),
 * for avg, var and tac2, short and long windows, over several flips of the
 * stacks, prepared or not, one and two blocks, a window lost and
 * restarted; the states an update reads (a constant, beyond the flips);
 * each statistic's first launch booked as one-time cost;
 * the combination against a fresh cl_stat of the same frames; transfer
 * counts and device seconds; bad calls. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "method_harness.h"
#include "methods/esrrf/cl_stat.h"
#include "methods/esrrf/quicksilver_esrrf.h"
#include "qs_test.h"

TestSuite(window, .fini = qs_leak_check);

enum { AVG, VAR, TAC2 };

/* Uniform in [0, 1) from a xorshift state. */
static double uni(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return (double)(*s >> 11) / 9007199254740992.0;
}

/* f camera-like maps of px pixels: background ~100 with a gentle slope,
 * noise of about 10 (a sum of four uniforms), and every 7th pixel a spot
 * that blinks (on in about a third of the frames, at 500 to 3000 over the
 * background), so that blocks often start on a bright frame (a large
 * shift between blocks). */
static float *camera(size_t f, size_t px, uint64_t seed) {
  float *m = malloc(f * px * sizeof *m);
  cr_assert(m);
  uint64_t s = seed * 2654435761u + 1;
  for (size_t t = 0; t < f; t++)
    for (size_t i = 0; i < px; i++) {
      double g = 0;
      for (int u = 0; u < 4; u++)
        g += uni(&s);
      double v = 100 + 0.01 * (double)i + 10 * 1.7320508 * (g - 2);
      if (i % 7 == 3 && uni(&s) < 0.35) v += 500 + 2500 * uni(&s);
      m[t * px + i] = (float)v;
    }
  return m;
}

/* The first device, its queue and a buffer holding the f maps; skips the
 * test without a device. */
typedef struct bench {
  clrt *rt;
  cldev *dev;
  cl_command_queue q;
  cl_mem maps;
} bench;

static void bench_open(bench *b, const float *maps, size_t f, size_t px) {
  char err[512] = "";
  cl_context ctx;
  harness_cl_open(&b->rt, err, sizeof err);
  if (!b->rt) cr_skip_test("%s", err);
  b->dev = clrt_device(b->rt, 0);
  cr_assert_eq(cldev_queue(b->dev, &ctx, &b->q, err, sizeof err), QS_OK, "%s",
               err);
  cr_assert_eq(cldev_buffer(b->dev, CL_MEM_READ_ONLY, f * px * sizeof(float),
                            NULL, "maps", &b->maps, err, sizeof err),
               QS_OK, "%s", err);
  if (maps)
    cr_assert_eq(clEnqueueWriteBuffer(b->q, b->maps, CL_TRUE, 0,
                                      f * px * sizeof(float), maps, 0, NULL,
                                      NULL),
                 CL_SUCCESS);
}

static void bench_close(bench *b) {
  clReleaseMemObject(b->maps);
  clrt_close(b->rt);
}

/* The worst |got − ref| over px pixels relative to max |ref| (> 0). */
static double worst_rel(const float *got, const float *ref, size_t px) {
  double worst = 0, pk = 0;
  for (size_t i = 0; i < px; i++) {
    double d = fabs((double)got[i] - (double)ref[i]);
    if (!(d <= worst)) worst = d; /* NaN propagates as a failure */
    if (fabs(ref[i]) > pk) pk = fabs(ref[i]);
  }
  cr_assert_gt(pk, 0);
  return worst / pk;
}

/* The double host fold of maps [t0, t0 + n) into ref (rows × cols). */
static void host_stat(int kind, const float *maps, size_t rows, size_t cols,
                      size_t t0, size_t n, float *ref) {
  qs_esrrf_partial p;
  cr_assert_eq(qs_esrrf_partial_init(&p, kind, rows, cols), QS_OK);
  cr_assert_eq(qs_esrrf_partial_add(&p, maps + t0 * rows * cols, n), QS_OK);
  cr_assert_eq(qs_esrrf_partial_finish(&p, 1, 0, ref), QS_OK);
  qs_esrrf_partial_free(&p);
}

/* What a streamed window did: its worst relative error over the updates,
 * the updates, the window's flips and the states its kernels read. */
typedef struct wrun {
  double worst;
  size_t updates, flips, reads, prepares;
  size_t lost_at, start; /* the frame folded when the window was lost, and
                            the first frame after it (0, 0: not lost) */
} wrun;

/* When cl_window_prepare runs: never; before every update (once the
 * update before it finished); before every other update; before every
 * update, but ahead of the finish of the update before it (its blocks
 * but the oldest are the next update's older blocks). */
enum { PREP_NONE, PREP_EVERY, PREP_OTHER, PREP_AHEAD };

/* Streams f maps of rows × cols through a window of `blocks` blocks of
 * `every` frames as the live stream would: frames arrive in units of
 * 1, 2, 3, 1, 2, 3, ... maps, each unit split where it would cross a block
 * (frame t goes to block (t / every) mod blocks, after t mod every
 * frames), every other fold through an event the caller waits for; after
 * every `every` frames from the window's first filling on, an update
 * from the oldest block, compared with the host fold of exactly the
 * window's frames; the updates prepared as `prep` says. With `lose` > 0,
 * when frame `lose` (not a block's first) has been folded, the window is
 * lost as opencl.c loses it (every block's count 0), the frames up to the
 * next block dropped, and the updates start again once N frames after
 * them are folded. */
static wrun stream_window(bench *b, const float *maps, int kind, size_t rows,
                          size_t cols, size_t f, size_t blocks, size_t every,
                          int prep, size_t lose) {
  size_t px = rows * cols, win = blocks * every;
  char err[512] = "";
  cl_window w;
  cr_assert_eq(
      cl_window_open(&w, b->dev, kind, px, blocks, every, err, sizeof err),
      QS_OK, "%s", err);
  float *got = malloc(px * sizeof *got), *ref = malloc(px * sizeof *ref);
  wrun run = {0};
  size_t t = 0, unit = 0, folds = 0, start = 0, prepared = 0;
  while (t < f) {
    size_t left = 1 + unit++ % 3;
    while (left && t < f) {
      size_t first = t % every, blk = (t / every) % blocks;
      size_t n = every - first < left ? every - first : left;
      if (n > f - t) n = f - t;
      cl_event ev = NULL;
      int keep = folds++ % 2;
      cr_assert_eq(cl_window_fold_at(&w, b->q, b->maps, t, n, blk, first, NULL,
                                     keep ? &ev : NULL, err, sizeof err),
                   QS_OK, "%s", err);
      if (ev) {
        cr_assert_eq(clWaitForEvents(1, &ev), CL_SUCCESS);
        w.dev_s += cl_event_seconds(ev);
        clReleaseEvent(ev);
      }
      t += n;
      left -= n;
      if (lose && t >= lose && t % every) {
        for (size_t j = 0; j < blocks; j++)
          w.count[j] = 0;
        run.lost_at = t;
        t = start = run.start = (t / every + 1) * every;
        lose = 0;
        break;
      }
      size_t next = (t / every + 1) * every; /* the next update's end */
      int due = t % every == 0 && t >= start + win;
      if (prep == PREP_AHEAD && due && next <= f && next != prepared) {
        cr_assert_eq(cl_window_prepare(&w, b->q, next / every % blocks, err,
                                       sizeof err),
                     QS_OK, "%s", err);
        prepared = next;
        run.prepares++;
      }
      if (due) {
        size_t oldest = (t / every) % blocks;
        cr_assert_eq(cl_window_finish(&w, b->q, oldest, got, err, sizeof err),
                     QS_OK, "%s", err);
        host_stat(kind, maps, rows, cols, t - win, win, ref);
        double r = worst_rel(got, ref, px);
        cr_expect_leq(r, 1e-5,
                      "statistic %d, %zu blocks of %zu, prepared %d, window "
                      "ending at frame %zu: %.3g of the peak",
                      kind, blocks, every, prep, t, r);
        if (!(r <= run.worst)) run.worst = r;
        run.updates++;
      }
      if ((prep == PREP_EVERY || (prep == PREP_OTHER && next / every % 2)) &&
          next >= start + win && next <= f && next != prepared) {
        cr_assert_eq(cl_window_prepare(&w, b->q, next / every % blocks, err,
                                       sizeof err),
                     QS_OK, "%s", err);
        prepared = next;
        run.prepares++;
      }
    }
  }
  cr_expect_gt(w.dev_s, 0);
  run.flips = w.flips;
  run.reads = w.reads;
  cl_window_close(&w);
  free(got);
  free(ref);
  return run;
}

/* Every statistic, windows of 2, 3 and 5 blocks of 1, 2 and 3 frames
 * (tac2 over blocks of one frame: all its pairs cross blocks), over
 * enough frames that the ring of blocks wraps at least four times. */
Test(window, every_update_matches_the_host_fold_of_its_frames) {
  enum { R = 9, C = 11, F = 5 * 5 * 3 + 2 };
  float *maps = camera(F, R * C, 1);
  bench b;
  bench_open(&b, maps, F, R * C);
  static const size_t K[] = {1, 2, 3}, BL[] = {2, 3, 5};
  for (int kind = AVG; kind <= TAC2; kind++)
    for (size_t k = 0; k < 3; k++)
      for (size_t j = 0; j < 3; j++) {
        size_t f = BL[j] * K[k] * 5 + 2;
        wrun r = stream_window(&b, maps, kind, R, C, f, BL[j], K[k],
                               PREP_OTHER, 0);
        cr_expect_eq(r.updates, f / K[k] - BL[j] + 1,
                     "statistic %d: %zu updates", kind, r.updates);
        fprintf(stderr,
                "window statistic %d, %zu blocks of %zu frames: %zu "
                "updates, worst %.3g of the peak\n",
                kind, BL[j], K[k], r.updates, r.worst);
      }
  free(maps);
  bench_close(&b);
}

/* A long window, 2000 frames as 20 blocks of 100, over 2300 frames (four
 * updates, the ring turned past its start): within 1e-5 of the peak. */
Test(window, two_thousand_frames_in_twenty_blocks) {
  enum { R = 8, C = 8, F = 2300 };
  float *maps = camera(F, R * C, 2);
  bench b;
  bench_open(&b, maps, F, R * C);
  for (int kind = AVG; kind <= TAC2; kind++) {
    wrun r = stream_window(&b, maps, kind, R, C, F, 20, 100, PREP_OTHER, 0);
    cr_expect_eq(r.updates, 4);
    fprintf(stderr,
            "window statistic %d, 20 blocks of 100 frames: worst %.3g of "
            "the peak\n",
            kind, r.worst);
  }
  free(maps);
  bench_close(&b);
}

/* The two stacks over several flips: windows of 5 and 6 blocks of 3 and
 * 4 frames over 3·N + K + 1 frames (3·N/K + 2 updates: at least 4 flips
 * when the updates flip, more when the prepares do), frames in uneven
 * units, every statistic, the updates never prepared, prepared each,
 * every other one, and each ahead of the finish of the update before it:
 * every update within 1e-5 of the peak of the host fold of exactly its
 * frames. A flip that did not turn the blocks into their suffixes, or a
 * back that did not take its blocks, leaves later updates without some of
 * their frames: far off. */
Test(window, the_stacks_over_several_flips_match_the_host_fold) {
  enum { R = 7, C = 9, F = 3 * 6 * 4 + 4 + 1 };
  float *maps = camera(F, R * C, 6);
  bench b;
  bench_open(&b, maps, F, R * C);
  static const size_t BL[] = {5, 6}, K[] = {3, 4};
  for (int kind = AVG; kind <= TAC2; kind++)
    for (size_t j = 0; j < 2; j++)
      for (size_t k = 0; k < 2; k++)
        for (int prep = PREP_NONE; prep <= PREP_AHEAD; prep++) {
          size_t win = BL[j] * K[k], f = 3 * win + K[k] + 1;
          wrun r = stream_window(&b, maps, kind, R, C, f, BL[j], K[k], prep,
                                 0);
          cr_expect_eq(r.updates, (f - win) / K[k] + 1);
          cr_expect_geq(r.flips, 3, "statistic %d, %zu of %zu, prepared %d: "
                        "%zu flips", kind, BL[j], K[k], prep, r.flips);
          cr_expect_eq(r.prepares > 0, prep != PREP_NONE);
          fprintf(stderr,
                  "stacks: statistic %d, %zu blocks of %zu, prepared %d: %zu "
                  "updates, %zu flips, worst %.3g of the peak\n",
                  kind, BL[j], K[k], prep, r.updates, r.flips, r.worst);
        }
  free(maps);
  bench_close(&b);
}

/* O(1) states per update: 12 blocks of 2 frames over 31 updates, every
 * statistic and every way of preparing: beyond the flips (N/K states
 * each), at most 4 states read per update or prepare, where combining the
 * blocks reads 12 per update (and 11 per prepare). */
Test(window, an_update_reads_a_constant_number_of_states) {
  enum { R = 5, C = 6, BL = 12, K = 2, F = BL * K + 30 * K };
  float *maps = camera(F, R * C, 7);
  bench b;
  bench_open(&b, maps, F, R * C);
  for (int kind = AVG; kind <= TAC2; kind++)
    for (int prep = PREP_NONE; prep <= PREP_AHEAD; prep++) {
      wrun r = stream_window(&b, maps, kind, R, C, F, BL, K, prep, 0);
      cr_expect_eq(r.updates, 31);
      cr_expect_geq(r.flips, 2);
      cr_expect_leq(r.reads, r.flips * BL + 4 * (r.updates + r.prepares),
                    "statistic %d, prepared %d: %zu states read, %zu flips, "
                    "%zu updates, %zu prepares",
                    kind, prep, r.reads, r.flips, r.updates, r.prepares);
      fprintf(stderr,
              "reads: statistic %d, prepared %d: %zu states over %zu "
              "updates and %zu prepares (%zu flips)\n",
              kind, prep, r.reads, r.updates, r.prepares, r.flips);
    }
  free(maps);
  bench_close(&b);
}

/* The edge cases: a window of one block (of 2 and 3 frames: the update is
 * the block) and of two (of 1 and 3 frames: no back, every prepare or
 * update a flip of at most two), every statistic, every way of preparing:
 * every update within 1e-5 of the peak. */
Test(window, one_and_two_blocks) {
  enum { R = 6, C = 5, F = 40 };
  float *maps = camera(F, R * C, 8);
  bench b;
  bench_open(&b, maps, F, R * C);
  static const size_t BL[] = {1, 1, 2, 2}, K[] = {2, 3, 1, 3};
  for (int kind = AVG; kind <= TAC2; kind++)
    for (size_t j = 0; j < 4; j++)
      for (int prep = PREP_NONE; prep <= PREP_AHEAD; prep++) {
        size_t f = 5 * BL[j] * K[j] + 1;
        wrun r = stream_window(&b, maps, kind, R, C, f, BL[j], K[j], prep, 0);
        cr_expect_eq(r.updates, (f - BL[j] * K[j]) / K[j] + 1);
        fprintf(stderr,
                "edge: statistic %d, %zu blocks of %zu, prepared %d: worst "
                "%.3g of the peak\n",
                kind, BL[j], K[j], prep, r.worst);
      }
  free(maps);
  bench_close(&b);
}

/* The window lost mid-stream as opencl.c loses it (every block's count
 * 0, after a flip, with back holding blocks, or with an update prepared):
 * 5 blocks of 3, lost inside a block at frames 25 to 30 (after updates
 * whose stacks are in every state), the frames to the next block dropped;
 * once N frames after them are folded, every update again equals the host
 * fold of exactly its frames (the stacks restart with the new blocks),
 * and the updates are the ones before the loss and after the refill. */
Test(window, a_lost_window_restarts_its_stacks) {
  enum { R = 6, C = 6, BL = 5, K = 3, N = BL * K, F = 30 + 3 * N + 2 };
  float *maps = camera(F, R * C, 9);
  bench b;
  bench_open(&b, maps, F, R * C);
  for (int kind = AVG; kind <= TAC2; kind++)
    for (int prep = PREP_NONE; prep <= PREP_AHEAD; prep++)
      for (size_t lose = 25; lose <= 30; lose++) {
        wrun r = stream_window(&b, maps, kind, R, C, F, BL, K, prep, lose);
        cr_assert_gt(r.start, r.lost_at);
        size_t before = (r.lost_at / K * K - N) / K + 1,
               after = (F - r.start - N) / K + 1;
        cr_expect_eq(r.updates, before + after,
                     "statistic %d, prepared %d, lost at %zu: %zu updates",
                     kind, prep, r.lost_at, r.updates);
        cr_expect_geq(r.flips, 3);
      }
  free(maps);
  bench_close(&b);
}

/* The window's combination against a fresh cl_stat fold of the same
 * frames (what an update cost before blocks): within 1e-5 of the peak;
 * one image downloaded per update, nothing uploaded. Both updates' device
 * times go to stderr, at 24 × 24 pixels, or at QS_CLWIN_BENCH_PLANE pixels
 * (e.g. 1638400, 256² at M = 5) for a measurement. */
Test(window, combination_matches_a_refold_and_downloads_one_image) {
  const char *env = getenv("QS_CLWIN_BENCH_PLANE");
  size_t px = env ? (size_t)strtoull(env, NULL, 10) : 24 * 24;
  enum { BL = 10, K = 10, N = BL * K, REPS = 3 };
  cr_assert_gt(px, 0);
  float *maps = camera(N, px, 3);
  bench b;
  bench_open(&b, maps, N, px);
  float *got = malloc(px * sizeof *got), *ref = malloc(px * sizeof *ref);
  char err[512] = "";
  for (int kind = AVG; kind <= TAC2; kind++) {
    cl_window w;
    cl_stat st;
    cr_assert_eq(cl_window_open(&w, b.dev, kind, px, BL, K, err, sizeof err),
                 QS_OK, "%s", err);
    cr_assert_eq(cl_stat_open(&st, b.dev, kind, px, err, sizeof err), QS_OK,
                 "%s", err);
    /* block b holds frames 10·((b + 7) mod 10) on: oldest is block 3 */
    for (size_t blk = 0; blk < BL; blk++)
      cr_assert_eq(cl_window_fold_at(&w, b.q, b.maps, K * ((blk + 7) % BL), K,
                                     blk, 0, NULL, NULL, err, sizeof err),
                   QS_OK, "%s", err);
    double win_s = INFINITY, fold_s = INFINITY;
    for (int rep = 0; rep < REPS; rep++) {
      uint64_t up0, down0, up1, down1;
      cldev_transfers(b.dev, &up0, &down0);
      double d0 = w.dev_s;
      cr_assert_eq(cl_window_finish(&w, b.q, 3, got, err, sizeof err), QS_OK,
                   "%s", err);
      cldev_transfers(b.dev, &up1, &down1);
      cr_expect_eq(up1, up0);
      cr_expect_eq(down1 - down0, px * sizeof(float));
      if (w.dev_s - d0 < win_s) win_s = w.dev_s - d0;
      d0 = st.dev_s;
      cr_assert_eq(cl_stat_fold(&st, b.q, b.maps, N, NULL, err, sizeof err),
                   QS_OK, "%s", err);
      if (st.dev_s - d0 < fold_s) fold_s = st.dev_s - d0;
      cr_assert_eq(cl_stat_finish(&st, b.q, ref, err, sizeof err), QS_OK, "%s",
                   err);
    }
    double r = worst_rel(got, ref, px);
    cr_expect_leq(r, 1e-5, "statistic %d: %.3g of the peak", kind, r);
    fprintf(stderr,
            "statistic %d, %zu pixels: window update (combine %d blocks + "
            "download) %.3f ms device, refold of %d maps %.3f ms device; "
            "window vs refold %.3g of the peak\n",
            kind, px, BL, win_s * 1e3, N, fold_s * 1e3, r);
    cl_stat_close(&st);
    cl_window_close(&w);
  }
  free(got);
  free(ref);
  free(maps);
  bench_close(&b);
}

/* The device bytes: (blocks·slots + 1 + back) planes of floats (back, one
 * more state, only with three blocks or more), 0 for no statistic or an
 * overflowing size. */
Test(window, bytes_are_the_block_states_and_one_image) {
  cr_expect_eq(cl_window_bytes(AVG, 100, 10), (10 * 2 + 1 + 2) * 100 * 4);
  cr_expect_eq(cl_window_bytes(VAR, 100, 10), (10 * 5 + 1 + 5) * 100 * 4);
  cr_expect_eq(cl_window_bytes(TAC2, 1000, 3), (3 * 6 + 1 + 6) * 1000 * 4);
  cr_expect_eq(cl_window_bytes(TAC2, 1000, 2), (2 * 6 + 1) * 1000 * 4);
  cr_expect_eq(cl_window_bytes(TAC2, 1000, 1), (6 + 1) * 1000 * 4);
  cr_expect_eq(cl_window_bytes(3, 100, 10), 0);
  cr_expect_eq(cl_window_bytes(VAR, SIZE_MAX / 8, 10), 0);
}

/* A fold into one of the older blocks after they were prepared drops the
 * preparation: 3 blocks of 2, the update at frame 8 prepared (blocks 1
 * and 2: frames 2..5), then block 1 refilled with frames 10 and 11 and
 * block 0 with 6 and 7: the update is the statistic of frames 10, 11, 4,
 * 5, 6, 7 in that order, not of the prepared ones. */
Test(window, a_fold_after_prepare_drops_it) {
  enum { R = 5, C = 6, PX = R * C, F = 12 };
  float *maps = camera(F, PX, 5);
  bench b;
  bench_open(&b, maps, F, PX);
  char err[512] = "";
  for (int kind = AVG; kind <= TAC2; kind++) {
    cl_window w;
    cr_assert_eq(cl_window_open(&w, b.dev, kind, PX, 3, 2, err, sizeof err),
                 QS_OK, "%s", err);
    for (size_t t = 0; t < 6; t += 2)
      cr_assert_eq(cl_window_fold_at(&w, b.q, b.maps, t, 2, t / 2, 0, NULL,
                                     NULL, err, sizeof err),
                   QS_OK, "%s", err);
    cr_assert_eq(cl_window_prepare(&w, b.q, 1, err, sizeof err), QS_OK, "%s",
                 err);
    cr_assert_eq(cl_window_fold_at(&w, b.q, b.maps, 10, 2, 1, 0, NULL, NULL,
                                   err, sizeof err),
                 QS_OK, "%s", err);
    cr_assert_eq(cl_window_fold_at(&w, b.q, b.maps, 6, 2, 0, 0, NULL, NULL,
                                   err, sizeof err),
                 QS_OK, "%s", err);
    float got[PX], ref[PX], order[6 * PX];
    static const size_t frames[6] = {10, 11, 4, 5, 6, 7};
    for (size_t j = 0; j < 6; j++)
      memcpy(order + j * PX, maps + frames[j] * PX, sizeof(float) * PX);
    cr_assert_eq(cl_window_finish(&w, b.q, 1, got, err, sizeof err), QS_OK,
                 "%s", err);
    host_stat(kind, order, R, C, 0, 6, ref);
    double r = worst_rel(got, ref, PX);
    cr_expect_leq(r, 1e-5, "statistic %d: %.3g of the peak", kind, r);
    cl_window_close(&w);
  }
  free(maps);
  bench_close(&b);
}

/* Bad calls: a clear QS_EINVAL with a message, nothing enqueued, and the
 * window still usable; a failed open is safe to close. */
Test(window, bad_calls_are_refused_with_a_message) {
  enum { R = 4, C = 4, PX = R * C };
  float *maps = camera(8, PX, 4);
  bench b;
  bench_open(&b, maps, 8, PX);
  char err[512] = "";
  cl_window w;
  float out[PX], ref[PX];
  cr_expect_eq(cl_window_open(&w, b.dev, 3, PX, 2, 2, err, sizeof err),
               QS_EINVAL);
  cr_expect(strstr(err, "statistic 3"), "%s", err);
  cl_window_close(&w);
  cr_expect_eq(cl_window_open(&w, b.dev, TAC2, PX, 1, 1, err, sizeof err),
               QS_EINVAL);
  cl_window_close(&w);
  cr_expect_eq(cl_window_open(&w, b.dev, AVG, PX, 0, 2, err, sizeof err),
               QS_EINVAL);
  cl_window_close(&w);
  cl_window_close(&w); /* twice: safe */

  cr_assert_eq(cl_window_open(&w, b.dev, TAC2, PX, 2, 2, err, sizeof err),
               QS_OK, "%s", err);
  err[0] = '\0';
  cr_expect_eq(cl_window_finish(&w, b.q, 0, out, err, sizeof err), QS_EINVAL);
  cr_expect(strstr(err, "too few"), "%s", err);
  /* crossing a block, a wrong `first`, a block or oldest out of range */
  cr_expect_eq(cl_window_fold_at(&w, b.q, b.maps, 0, 3, 0, 0, NULL, NULL, err,
                                 sizeof err),
               QS_EINVAL);
  cr_expect(strstr(err, "block 0"), "%s", err);
  cr_expect_eq(cl_window_fold_at(&w, b.q, b.maps, 0, 1, 0, 1, NULL, NULL, err,
                                 sizeof err),
               QS_EINVAL);
  cr_expect_eq(cl_window_fold_at(&w, b.q, b.maps, 0, 1, 2, 0, NULL, NULL, err,
                                 sizeof err),
               QS_EINVAL);
  cl_event ev = (cl_event)1;
  cr_expect_eq(cl_window_fold_at(&w, b.q, b.maps, 0, 0, 0, 0, NULL, &ev, err,
                                 sizeof err),
               QS_OK);
  cr_expect_null(ev);
  /* block 0 full, block 1 half: not yet */
  cr_assert_eq(cl_window_fold_at(&w, b.q, b.maps, 0, 2, 0, 0, NULL, NULL, err,
                                 sizeof err),
               QS_OK, "%s", err);
  cr_assert_eq(cl_window_fold_at(&w, b.q, b.maps, 2, 1, 1, 0, NULL, NULL, err,
                                 sizeof err),
               QS_OK, "%s", err);
  err[0] = '\0';
  cr_expect_eq(cl_window_finish(&w, b.q, 0, out, err, sizeof err), QS_EINVAL);
  cr_expect(strstr(err, "block 1 holds 1 of its 2"), "%s", err);
  cr_expect_eq(cl_window_fold_at(&w, b.q, b.maps, 3, 2, 1, 1, NULL, NULL, err,
                                 sizeof err),
               QS_EINVAL);
  /* still usable: the rest of block 1, then frames 0..3 */
  cr_assert_eq(cl_window_fold_at(&w, b.q, b.maps, 3, 1, 1, 1, NULL, NULL, err,
                                 sizeof err),
               QS_OK, "%s", err);
  cr_expect_eq(cl_window_finish(&w, b.q, 2, out, err, sizeof err), QS_EINVAL);
  cr_assert_eq(cl_window_finish(&w, b.q, 0, out, err, sizeof err), QS_OK, "%s",
               err);
  host_stat(TAC2, maps, R, C, 0, 4, ref);
  cr_expect_leq(worst_rel(out, ref, PX), 1e-5);
  /* block 0 refolded with frames 4, 5: the window is 2..5, oldest block 1 */
  cr_assert_eq(cl_window_fold_at(&w, b.q, b.maps, 4, 2, 0, 0, NULL, NULL, err,
                                 sizeof err),
               QS_OK, "%s", err);
  cr_assert_eq(cl_window_finish(&w, b.q, 1, out, err, sizeof err), QS_OK, "%s",
               err);
  host_stat(TAC2, maps, R, C, 2, 4, ref);
  cr_expect_leq(worst_rel(out, ref, PX), 1e-5);
  cl_window_close(&w);
  free(maps);
  bench_close(&b);
}

/* Each statistic's kernels are their own program (esrrf_stat.cl built
 * for that statistic): its first fold at a size is a first launch, booked
 * as one-time cost, even after another statistic's fold at that size in
 * the same process; its second is not. */
Test(window, each_statistic_books_its_own_first_launch) {
  enum { R = 6, C = 7, PX = R * C };
  float *maps = camera(2, PX, 6);
  bench b;
  bench_open(&b, maps, 2, PX);
  char err[512] = "";
  for (int kind = AVG; kind <= TAC2; kind++) {
    cl_stat st;
    cr_assert_eq(cl_stat_open(&st, b.dev, kind, PX, err, sizeof err), QS_OK,
                 "%s", err);
    for (int fold = 0; fold < 2; fold++) {
      double once = st.once_s;
      cr_assert_eq(cl_stat_fold(&st, b.q, b.maps, 2, NULL, err, sizeof err),
                   QS_OK, "%s", err);
      if (fold == 0)
        cr_expect_gt(st.once_s, once, "statistic %d: first fold not booked",
                     kind);
      else
        cr_expect_eq(st.once_s, once, "statistic %d: second fold booked",
                     kind);
    }
    cl_stat_close(&st);
  }
  free(maps);
  bench_close(&b);
}
