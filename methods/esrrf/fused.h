/* fused.h — the plan of eSRRF's `fused` implementation (fused.c), shared
 * with its vectorised variants (fused_vec*.c) so that the window taps, the
 * per-phase candidate lists, their weights and the half-pixel gradient grid
 * are built in one place. A variant replaces only the per-frame RGC pass
 * over the output rows; the pixels it does not take (borders, phases
 * without a candidate list) go through fused_pixel, the scalar code.
 * Internal to methods/esrrf. */
#ifndef QS_ESRRF_FUSED_H
#define QS_ESRRF_FUSED_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "methods/esrrf/esrrf.h"
#include "methods/shift_magnify/catmull_rom.h"
#include "methods/rgc/rgc_fused.h"

/* Nodes of the weight table over [0, tSO]. */
#define FZ_NODES 1024

/* One sample position along an axis: offset from the pixel centre (float,
 * as the reference computes it) and index into the compact grid. */
typedef struct fz_tap {
  float delta;
  int idx;
} fz_tap;

/* One sample of an interior pixel of a phase pair: window offsets j, i,
 * and the weight w0 at distance d0 with its slope w1. */
typedef struct fz_cand {
  unsigned short j, i;
  float d0, w0, w1;
} fz_cand;

/* One half-pixel gradient sample and its inverse norm. */
typedef struct fz_cell {
  float gx, gy, inv, pad;
} fz_cell;

typedef struct fused fused;

/* A variant of the RGC pass. plan: once per call after the shared tables
 * (s->cand may be NULL: no candidate lists); frame: once per frame, makes
 * the grid rows it reads from s->samples (fused_grid_rows: the cells) and
 * writes the RGC map (times the intensity) into s->dst inside the margins;
 * done: frees what plan made (also after a failed plan).
 *
 * Optionally, whole frames on one worker each (fused.c's frames mode, for
 * frames too small to share): clone makes w, a copy of s taken after
 * plan, a worker's own per-frame buffers (QS_EUNAVAIL: not for this plan;
 * uncloned then all the same); frame_on maps the clone's frame on the
 * calling worker alone, with that worker's scratch, and the same bits as
 * frame; unclone frees what clone made. */
typedef struct fused_variant {
  int (*plan)(fused *s);
  int (*frame)(fused *s);
  void (*done)(fused *s);
  int intensity; /* 1: frame makes the ×M intensity itself from s->frame
                  * (s->mag is not made); 0: s->mag holds it (shift_magnify,
                  * the reference's bits) */
  int (*clone)(const fused *s, fused *w);
  int (*frame_on)(fused *w, int worker);
  void (*unclone)(fused *w);
  /* Band mode (fused.c): output rows [y0, y1) of clone w's frame, with
   * the grid rows they read, on the calling worker; NULL: none. */
  int (*band_on)(fused *w, int worker, size_t y0, size_t y1);
} fused_variant;

struct fused {
  const qs_method_call *c;
  esrrf_geom g;
  int win;                /* window length end - start */
  fz_tap *ty, *tx;        /* per output row / column: win taps */
  int *ny, *nx;           /* valid taps per output row / column */
  float wt[FZ_NODES + 1][4]; /* node d, weight, slope, half curvature */
  float inv_h;
  fz_cand *cand;          /* per phase pair, NULL: general loop only */
  int *cand_at;           /* M² + 1 offsets into cand */
  int rep_y[TEMPORAL_MAX_MAG], rep_x[TEMPORAL_MAX_MAG]; /* the row / column
                           * of each phase the candidates were made from */
  float slack;            /* largest centre rounding a distance can see */
  cr_taps *hr, *hc;       /* grid row / column taps: 2R + 1, 2C + 1 */
  QS_ACC *sums;           /* 2·C column sums per worker */
  float *grad, *mag;      /* 2·R·C; R·M·C·M (intensity weighting by
                           * shift_magnify only) */
  const float *frame;     /* the frame being mapped (R·C) */
  fz_cell *grid;          /* (2R + 1)(2C + 1) */
  /* The frame's gradient samples of grid row a (2C + 1 each of gx, gy),
   * from worker `worker`: set before frame by its caller (fused.c from the
   * Roberts gradients, rgc_vec.c from the ×2M images). */
  void (*samples)(const fused *s, size_t a, int worker, float *gx, float *gy);
  const void *samples_ctx;
  int roberts;            /* samples are fused.c's: the Catmull-Rom
                           * half-pixel samples of s->grad through s->hr,
                           * s->hc and s->sums (a variant may make the
                           * same floats its own way) */
  float *gtmp;            /* per worker: 2·(2C + 1) floats, one grid row's
                           * samples */
  float *dst;
  const fused_variant *var;
  void *vs;               /* the variant's state */
  fused *clones;          /* frames mode: one per worker (c->threads), each
                           * with its own grad and variant buffers; NULL:
                           * a frame's rows are shared by the workers */
  size_t n_clones;
  int band;               /* band mode: the clones take bands of rows of
                           * every frame of a batch, not whole frames */
  size_t batch;           /* frames per call of the maps (fz_maps) */
  qs_esrrf_partial *fold; /* not NULL: each range of output rows, once
                           * made, is folded into it as frame fold_n
                           * (fused_fold_rows), while still in the
                           * worker's cache */
  uint64_t fold_n;
};

/* The end of a variant's rows function: rows [b, e) of s->dst folded into
 * s->fold when set (the rows outside the margins are its zeros, as a
 * whole map's fold adds them). */
static inline void fused_fold_rows(const fused *s, size_t b, size_t e) {
  if (s->fold)
    temporal_add(s->fold, s->dst, s->fold_n, b * (size_t)s->g.cols_m,
                 e * (size_t)s->g.cols_m);
}

/* Window tap j (0 .. win − 1) of output index i along an axis of n_m
 * magnified pixels (n original): the reference's float offset and compact
 * grid index into *t; returns 0 (t untouched) when the reference skips it
 * (0 < v <= n_m − 1 fails). */
int fused_tap(int i, int j, int n, int n_m, const rgc_consts *k, fz_tap *t);

/* Bytes per worker of a per-worker buffer of n items of `size` bytes:
 * whole cache lines, so that two workers never write one line (allocate
 * threads times this with aligned_alloc(64, ·)). */
static inline size_t fused_stride(size_t n, size_t size) {
  return (n * size + 63) & ~(size_t)63;
}

/* Grid rows [b, e) of the frame as cells (ctx: the fused), from
 * s->samples (through s->gtmp). */
int fused_grid_rows(void *ctx, size_t b, size_t e, int worker);

/* RGC of output pixel (y, x) inside the margins, before the intensity:
 * from its phase pair's candidates when it has them and all its taps are
 * in bounds, else from the general loop over its valid taps. */
float fused_pixel(const fused *s, int y, int x);

/* A grid cell from its gradient samples, 1/|G| in double rounded to float
 * (inf for G = 0; the passes test G·R < 0 first). */
static inline void fused_cell(fz_cell *cell, float gx, float gy) {
  cell->gx = gx;
  cell->gy = gy;
  cell->inv = (float)(1 / sqrt((double)(gx * gx + gy * gy)));
  cell->pad = 0;
}

/* The tables every pass shares, from s->g alone: the window taps of every
 * output row and column (ty, ny, tx, nx, win), the weight table and the
 * candidate lists, and s->gtmp. The caller provides s->grid ((2R + 1)(2C
 * + 1) cells) for the passes to read. */
int fused_tables(fused *s);

/* Frames mode for s after its variant's plan, where the variant has it
 * (clone), the pool has workers to share frames and a frame's map has at
 * most 2^16 pixels: s->clones, one per worker (with its own Roberts
 * gradients when s->roberts), and s->batch, the frames to map at once
 * (fused.c says why and how many). Larger frames, where the variant has
 * band_on, take band mode: the same clones and batches, each worker a
 * band of rows of every frame (s->band). Else, or short of memory,
 * s->clones stays NULL and s->batch 1: the rows of one frame at a time
 * shared. */
void fused_frames_mode(fused *s);

/* Worker `worker`'s clone in frames mode; NULL, with c->err naming method,
 * for a worker outside the pool the clones were made for. */
fused *fused_clone_at(fused *s, int worker, const qs_method_call *c,
                      const char *method);

/* Frees the tables of s, its buffers (fields left NULL are skipped) and s;
 * the variant's done comes first. */
void fused_free(fused *s);

/* Runs eSRRF with the fused plan; var NULL: the scalar pass. */
int fused_run(const qs_method_call *c, const fused_variant *var);

/* The passes: scalar (fused.c), vectorised portable (fused_vec.c),
 * AVX2 + FMA (fused_avx2.c) and AVX-512F (fused_avx512.c); the last two
 * NULL where they are not built, and never to be run before their probe
 * succeeds. bench/roofline times them alone. */
extern const fused_variant fused_scalar_pass;
const fused_variant *fused_vec_pass(void);
const fused_variant *fused_avx2_pass(void);
const fused_variant *fused_avx512_pass(void);

/* The implementations of the vectorised variants, and the probe that lists
 * fused_avx2 only where the CPU has AVX2 and FMA. */
int esrrf_run_fused_vec(const qs_method_call *c);
int esrrf_run_fused_avx2(const qs_method_call *c);
int esrrf_avx2_probe(const qs_method_call *c, char *why, size_t why_len);

/* The CPU test behind the AVX2 probes of eSRRF and rgc: QS_OK when the CPU
 * reports AVX2 and FMA, else QS_EUNAVAIL and why, naming the `portable`
 * implementation to use instead. Baseline code. */
int fused_avx2_probe(const char *portable, char *why, size_t why_len);

/* fused_avx512, and its probe: available where the build has the AVX-512
 * pass (x86, a compiler with AVX-512) and the CPU reports AVX-512F, AVX2
 * and FMA with the OS keeping the 512-bit state. */
int esrrf_run_fused_avx512(const qs_method_call *c);
int esrrf_avx512_probe(const qs_method_call *c, char *why, size_t why_len);

/* The test behind the AVX-512 probes of eSRRF and rgc, as
 * fused_avx2_probe: QS_OK, or QS_EUNAVAIL and why (the build or the CPU),
 * naming the best variant that remains (`avx2` where the CPU has AVX2 and
 * FMA, else `portable`). Baseline code. */
int fused_avx512_probe(const char *avx2, const char *portable, char *why,
                       size_t why_len);

#endif
