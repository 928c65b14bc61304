/* fused.c — eSRRF's `fused` implementation: the reference chain without
 * the ×2M gradient images.
 *
 * RGC reads the ×2M gradients only on the half-pixel grid v = n / 2, where
 * the Catmull-Rom sample is the Roberts value itself or the fixed
 * (−1, 9, 9, −1)/16 combination (methods.md §3.3 Q3; cr_taps_half), plus
 * the last row/column the reference clamps to. So each frame gets a compact
 * (2R + 1) × (2C + 1) grid of those samples, bit-identical to what the
 * reference reads, each with 1/|G| precomputed, instead of 2 · 4·R·M·C·M
 * floats; the ×M intensity comes from the separable Catmull-Rom method.
 *
 * Per output row and column, the window offsets that pass the reference's
 * bounds are tabulated once per call with their float offsets (the same
 * float values the reference computes, centres rounded at their own
 * magnitude) and grid indices, so the pixel loop has no bounds tests.
 *
 * The distance weight (d·e^{−d²/tSS})⁴ is the costly part of the reference
 * (exp and pow per sample). Away from the borders, the samples of an output
 * pixel depend only on its phase (row mod M, column mod M) up to the
 * float rounding of its centre; so per phase pair the samples that can
 * fall inside the disk are listed once per call with their distance d0 and
 * weight (the reference's float) and slope there, and a pixel takes
 * w(d0) + w'(d0)·(d − d0) at its own d (|d − d0| is a few float ulps of the
 * centre). Border pixels take a table over d with a second-order expansion
 * at the nearest node. These weights (below 1e-7 relative from the
 * reference's) are why fused is not bit-identical to serial. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/esrrf/fused.h"
#include "methods/esrrf/sink.h"
#include "methods/methods.h"

/* Candidate lists are built when all phase pairs hold at most this many
 * entries; beyond (huge M and radius) every pixel takes the general loop. */
#define FZ_MAX_CANDS ((size_t)1 << 20)

/* The window taps of output index i along an axis of n_m magnified pixels
 * (n original), in the reference's order; returns how many are valid. */
int fused_tap(int i, int j, int n, int n_m, const rgc_consts *k,
              fz_tap *t) {
  float c = rgc_center(i, k->mag);
  float v = (float)((int)(RGC_GM * c) + k->start + j) / RGC_GM;
  if (!(0 < v && v <= n_m - 1)) return 0;
  float pos = v * 1.0f * RGC_GM; /* compact grid: step 1 */
  t->delta = v - c;
  t->idx = pos >= (float)(2 * n) ? 2 * n : (int)pos;
  return 1;
}

static int fz_axis(int i, int n, int n_m, const rgc_consts *k, fz_tap *t) {
  int valid = 0;
  for (int j = 0; j < k->end - k->start; j++)
    valid += fused_tap(i, j, n, n_m, k, &t[valid]);
  return valid;
}

/* w, w' and w'' of w(d) = d⁴·exp(−4d²/tSS) at d > 0, in double (0 at 0),
 * and, when w0 is not NULL, rgc_weight's float of the same d from the
 * same exp (rgc_weight's bits through rgc_pow4: one exp a candidate
 * instead of two, no pow). */
static void fz_derivs(double d, double tss, double *w, double *w1,
                      double *w2, float *w0) {
  *w = *w1 = *w2 = 0;
  if (w0) *w0 = 0.0f; /* rgc_weight at d = 0 */
  if (!(d > 0)) return;
  double e = exp(-d * d / tss), x = d * e;
  if (w0) *w0 = rgc_pow4(x);
  double l1 = 4 / d - 8 * d / tss, l2 = -4 / (d * d) - 8 / tss;
  *w = x * x * x * x;
  *w1 = *w * l1;
  *w2 = *w1 * l1 + *w * l2;
}

/* w, w' and w''/2 at the nodes of the table (float positions, so that
 * d − node is exact). */
static void fz_weights(fused *s) {
  double tss = s->g.k.tss, h = (double)s->g.k.tso / FZ_NODES;
  s->inv_h = (float)(1 / h);
  for (int n = 0; n <= FZ_NODES; n++) {
    float node = (float)(n * h);
    double w, w1, w2;
    fz_derivs(node, tss, &w, &w1, &w2, NULL);
    s->wt[n][0] = node;
    s->wt[n][1] = (float)w;
    s->wt[n][2] = (float)w1;
    s->wt[n][3] = (float)(w2 / 2);
  }
}

static inline float fz_weight(const fused *s, float d) {
  int n = (int)(d * s->inv_h + 0.5f);
  if (n > FZ_NODES) n = FZ_NODES;
  const float *a = s->wt[n];
  float e = d - a[0];
  return a[1] + e * (a[2] + e * a[3]);
}

/* The half-pixel samples of both Roberts gradients on grid row a. */
static void fz_samples(const fused *s, size_t a, int worker, float *gx,
                       float *gy) {
  int cols = s->g.cols, gw = 2 * cols + 1;
  size_t plane = (size_t)s->g.rows * (size_t)cols;
  QS_ACC *pc = (QS_ACC *)((char *)s->sums +
                          (size_t)worker * fused_stride(2 * (size_t)cols,
                                                        sizeof *pc)),
         *pr = pc + cols;
  if (!s->hr[a].n) {
    for (int x = 0; x < gw; x++) gx[x] = gy[x] = 0.0f;
    return;
  }
  cr_vsums(s->grad, cols, &s->hr[a], pc, 0, cols);
  cr_vsums(s->grad + plane, cols, &s->hr[a], pr, 0, cols);
  for (int x = 0; x < gw; x++) {
    gx[x] = cr_hsum(pc, &s->hc[x]);
    gy[x] = cr_hsum(pr, &s->hc[x]);
  }
}

int fused_grid_rows(void *ctx, size_t b, size_t e, int worker) {
  fused *s = ctx;
  size_t gw = 2 * (size_t)s->g.cols + 1;
  float *gx = (float *)((char *)s->gtmp +
                        (size_t)worker * fused_stride(2 * gw, sizeof *gx)),
        *gy = gx + gw;
  for (size_t a = b; a < e; a++) {
    fz_cell *row = s->grid + a * gw;
    s->samples(s, a, worker, gx, gy);
    for (size_t x = 0; x < gw; x++) fused_cell(&row[x], gx[x], gy[x]);
  }
  return QS_OK;
}

/* Accumulates one sample at offset (dx, dy) from grid cell cl with
 * weight w (already known to be inside the disk). */
static inline void fz_sample(const fz_cell *cl, float dx, float dy, float d,
                             float w, float *rgc, float *wsum) {
  *wsum += w;
  if (cl->gx * dx + cl->gy * dy < 0) {
    float dk = fabsf(cl->gy * dx - cl->gx * dy) * cl->inv;
    if (isnan(dk)) dk = d;
    *rgc += (1 - dk / d) * w;
  }
}

/* RGC of a pixel whose window taps are all in bounds, from its phase
 * pair's candidates. */
static float fz_interior(const fused *s, const fz_tap *ty, const fz_tap *tx,
                         const fz_cand *cand, const fz_cand *end) {
  size_t gw = 2 * (size_t)s->g.cols + 1;
  float tso = s->g.k.tso, rgc = 0, wsum = 0;
  for (const fz_cand *e = cand; e < end; e++) {
    float dy = ty[e->j].delta, dx = tx[e->i].delta;
    float d = sqrtf(dx * dx + dy * dy);
    if (d == 0 || d > tso) continue;
    const fz_cell *cl = s->grid + (size_t)ty[e->j].idx * gw + tx[e->i].idx;
    fz_sample(cl, dx, dy, d, e->w0 + e->w1 * (d - e->d0), &rgc, &wsum);
  }
  return rgc_finish(rgc, wsum, s->g.k.sens);
}

/* RGC of any pixel: its valid taps, weights from the table. */
static float fz_general(const fused *s, const fz_tap *ty, int nty,
                        const fz_tap *tx, int ntx) {
  size_t gw = 2 * (size_t)s->g.cols + 1;
  float tso = s->g.k.tso, rgc = 0, wsum = 0;
  for (int j = 0; j < nty; j++) {
    float dy = ty[j].delta;
    const fz_cell *grow = s->grid + (size_t)ty[j].idx * gw;
    for (int i = 0; i < ntx; i++) {
      float dx = tx[i].delta;
      float d = sqrtf(dx * dx + dy * dy);
      if (d == 0 || d > tso) continue;
      fz_sample(&grow[tx[i].idx], dx, dy, d, fz_weight(s, d), &rgc, &wsum);
    }
  }
  return rgc_finish(rgc, wsum, s->g.k.sens);
}

float fused_pixel(const fused *s, int y, int x) {
  const fz_tap *ty = s->ty + (size_t)y * (size_t)s->win;
  const fz_tap *tx = s->tx + (size_t)x * (size_t)s->win;
  int nty = s->ny[y], ntx = s->nx[x], mag = s->g.mag;
  if (s->cand && nty == s->win && ntx == s->win) {
    const int *at = s->cand_at + (y % mag) * mag + x % mag;
    return fz_interior(s, ty, tx, s->cand + at[0], s->cand + at[1]);
  }
  return fz_general(s, ty, nty, tx, ntx);
}

/* Output rows [b, e) of the frame's map. */
static int fz_rgc_rows(void *ctx, size_t b, size_t e, int worker) {
  (void)worker;
  const fused *s = ctx;
  const esrrf_geom *g = &s->g;
  for (size_t y = b; y < e; y++) {
    if ((int)y < g->margin || (int)y >= g->rows_m - g->margin) continue;
    float *o = s->dst + y * (size_t)g->cols_m;
    const float *im = s->mag ? s->mag + y * (size_t)g->cols_m : NULL;
    for (int x = g->margin; x < g->cols_m - g->margin; x++) {
      float v = fused_pixel(s, (int)y, x);
      o[x] = im ? v * im[x] : v;
    }
  }
  fused_fold_rows(s, b, e);
  return QS_OK;
}

/* The candidate lists: for each phase pair, from a row and a column of
 * that phase whose taps are all in bounds, the samples whose distance is
 * within tSO plus the largest centre rounding (any pixel of the pair can
 * only move its distances that much), with their weights. Returns QS_OK
 * without lists when some phase has no such row or column, or when they
 * would be too large. */
static int fz_candidates(fused *s) {
  const esrrf_geom *g = &s->g;
  size_t m = (size_t)g->mag, win = (size_t)s->win;
  if (m * m * win * win > FZ_MAX_CANDS) return QS_OK;
  int *rep_y = s->rep_y, *rep_x = s->rep_x;
  for (size_t p = 0; p < m; p++) {
    rep_y[p] = rep_x[p] = -1;
    for (size_t y = p; y < (size_t)g->rows_m && rep_y[p] < 0; y += m)
      if (s->ny[y] == s->win) rep_y[p] = (int)y;
    for (size_t x = p; x < (size_t)g->cols_m && rep_x[p] < 0; x += m)
      if (s->nx[x] == s->win) rep_x[p] = (int)x;
    if (rep_y[p] < 0 || rep_x[p] < 0) return QS_OK;
  }
  s->cand = malloc(m * m * win * win * sizeof *s->cand);
  s->cand_at = malloc((m * m + 1) * sizeof *s->cand_at);
  if (!s->cand || !s->cand_at) return QS_ENOMEM;
  /* a centre near coordinate n is off by at most half an ulp of n */
  double side = g->rows > g->cols ? g->rows : g->cols;
  float slack = s->slack = (float)(4 * side * FLT_EPSILON + 1e-6);
  double tss = g->k.tss;
  int n = 0;
  for (size_t py = 0; py < m; py++)
    for (size_t px = 0; px < m; px++) {
      const fz_tap *ty = s->ty + (size_t)rep_y[py] * win;
      const fz_tap *tx = s->tx + (size_t)rep_x[px] * win;
      s->cand_at[py * m + px] = n;
      for (size_t j = 0; j < win; j++)
        for (size_t i = 0; i < win; i++) {
          float dy = ty[j].delta, dx = tx[i].delta;
          float d = sqrtf(dx * dx + dy * dy);
          if (d > g->k.tso + slack) continue;
          double w, w1, w2;
          fz_derivs(d, tss, &w, &w1, &w2, &s->cand[n].w0);
          s->cand[n].j = (unsigned short)j;
          s->cand[n].i = (unsigned short)i;
          s->cand[n].d0 = d;
          s->cand[n].w1 = (float)w1;
          n++;
        }
    }
  s->cand_at[m * m] = n;
  return QS_OK;
}

/* A parallel loop run on the calling thread alone (worker 0). */
static int fz_inline_for(const qs_method_call *c, size_t b, size_t e,
                         qs_range_fn body, void *ctx) {
  (void)c;
  return b < e ? body(ctx, b, e, 0) : QS_OK;
}

/* Frames of at most this many pixels take their Roberts cross on the
 * calling thread: it costs about 1.5 ns a pixel, less than handing a
 * parallel loop to a sleeping pool and waiting for it (an empty loop takes
 * 11-36 us on the 2-core machine; bench/roofline prints it). */
#define FZ_INLINE_PX 8192

/* Frames mode (fused.h): a frame whose map has at most FZ_FRAME_PX
 * output pixels is mapped whole by one worker, batches of them at a time
 * (FZ_BATCH_BYTES of maps: 32 to FZ_BATCH frames), then folded in one
 * loop. Shared by the workers, a frame costs two parallel loops and a
 * fold, each 10-36 us of waking a sleeping pool (bench/roofline prints
 * it): a sixth of a 30 x 45 frame's work at M 5, two fifths at M 2. The
 * bits are the same: a pixel's map does not depend on the worker, and the
 * fold adds the frames in order per pixel. Larger frames gain nothing
 * (64 x 64 and 30 x 45 at M 8, about 90 000 pixels: within the noise) or
 * lose to a worker's whole frame leaving the cache (100 x 100 at M 5: 12 %
 * slower). */
#define FZ_FRAME_PX ((size_t)1 << 16)
#define FZ_BATCH_BYTES ((size_t)8 << 20)
#define FZ_BATCH 64

/* Band mode (fused.h): a frame whose map has more than FZ_FRAME_PX and at
 * most FZ_BAND_PX pixels is mapped by bands of its output rows, one per
 * worker (its clone making the grid rows its band reads, those near the
 * band's edge made by both), every frame of a batch in one parallel loop,
 * then one fold: two wake-ups of the pool a batch instead of three a
 * frame. Same bits (a pixel's map does not depend on the worker). On the
 * Zen 5 (fused_avx512 / fused_avx2, medians): 100 x 64² M 5 15 % / 8 %
 * faster, the real stack at M 8 14 % / 12 %, 40 x 100² M 5 9 % / 4 %,
 * 20 x 128² within 2 %; 10 x 192² (922 000 pixels) 13 % slower and 20 x
 * 256² 2-9 % slower: a worker's band of grid rows no longer stays in its
 * cache, and shared rows are made once. */
#define FZ_BAND_PX ((size_t)1 << 19)

/* The Roberts gradients of frame into grad (2·R·C), on call c's loops. */
static int fz_roberts(const qs_method_call *c, const fused *s,
                      qs_image *frame, float *grad) {
  size_t rows = (size_t)s->g.rows, cols = (size_t)s->g.cols;
  qs_image g2[2] = {qs_image_wrap(grad, 1, rows, cols),
                    qs_image_wrap(grad + rows * cols, 1, rows, cols)};
  return esrrf_sub(c, &method_roberts_cross, frame, g2, NULL);
}

typedef struct fz_batch {
  fused *s;
  size_t f0;
  float *dst;
  size_t n;            /* frames */
  qs_esrrf_partial *t; /* band mode: the bands fold into it, or NULL */
} fz_batch;

fused *fused_clone_at(fused *s, int worker, const qs_method_call *c,
                      const char *method) {
  if (worker >= 0 && (size_t)worker < s->n_clones) return &s->clones[worker];
  snprintf(c->err, c->err_len,
           "%s: worker %d of a pool of %zu made for the call", method, worker,
           s->n_clones);
  return NULL;
}

/* Clone w given frame k of the batch: its Roberts gradients (on the
 * calling worker alone) and where its map goes. */
static int fz_clone_frame(const fz_batch *j, fused *w, size_t k) {
  fused *s = j->s;
  size_t rc_px = (size_t)s->g.rows * (size_t)s->g.cols;
  qs_method_call alone = *s->c;
  alone.parallel_for = fz_inline_for; /* the Roberts cross ignores workers */
  qs_image frame = qs_image_wrap(s->c->in[0].data + (j->f0 + k) * rc_px, 1,
                                 (size_t)s->g.rows, (size_t)s->g.cols);
  w->c = s->c;
  w->frame = frame.data;
  w->dst = j->dst + k * s->g.plane;
  w->fold = j->t;
  w->fold_n = j->t ? j->t->n + k : 0;
  return fz_roberts(&alone, s, &frame, w->grad);
}

/* Frames [b, e) of a batch, each whole on this worker (its clone). */
static int fz_frames(void *ctx, size_t b, size_t e, int worker) {
  const fz_batch *j = ctx;
  fused *w = fused_clone_at(j->s, worker, j->s->c, "esrrf");
  int rc = w ? QS_OK : QS_EFAIL;
  for (size_t k = b; !rc && k < e; k++)
    if (!(rc = fz_clone_frame(j, w, k))) rc = j->s->var->frame_on(w, worker);
  return rc;
}

/* Band mode: bands [b, e) of the output rows (n_clones bands), each of
 * every frame of the batch, on this worker (its clone). */
static int fz_bands(void *ctx, size_t b, size_t e, int worker) {
  const fz_batch *j = ctx;
  fused *s = j->s, *w = fused_clone_at(s, worker, s->c, "esrrf");
  size_t rows = (size_t)s->g.rows_m;
  size_t per = (rows + s->n_clones - 1) / s->n_clones;
  size_t y0 = b * per, y1 = e * per < rows ? e * per : rows;
  int rc = w ? QS_OK : QS_EFAIL;
  for (size_t k = 0; !rc && y0 < y1 && k < j->n; k++)
    if (!(rc = fz_clone_frame(j, w, k)))
      rc = s->var->band_on(w, worker, y0, y1);
  return rc;
}

/* The maps of frames [f0, f0 + n) into dst, folded into t when set
 * (esrrf_fold_fn): in band mode and when a frame's rows are shared by the
 * workers, each range of rows is folded as soon as it is made (the fold
 * adds frames in order per pixel: a band's frames come in order on one
 * worker, and a shared frame's rows are all made before the next frame);
 * whole frames on different workers (frames mode) are folded after. */
static int fz_maps(void *state, size_t f0, size_t n, float *dst,
                   qs_esrrf_partial *t) {
  fused *s = state;
  const esrrf_geom *g = &s->g;
  int rc = QS_OK;
  if (s->clones && s->band) {
    /* one band a worker: the implementation's chunks (4 items) would
     * give one worker every band */
    fz_batch j = {s, f0, dst, n, t};
    qs_method_call bc = *s->c;
    bc.sched = QS_SCHED_STATIC;
    bc.chunk = 0;
    rc = bc.parallel_for(&bc, 0, s->n_clones, fz_bands, &j);
    for (size_t w = 0; w < s->n_clones; w++) s->clones[w].fold = NULL;
    if (!rc && t) t->n += n;
    return rc;
  }
  if (s->clones && n > 1) {
    fz_batch j = {s, f0, dst, n, NULL};
    rc = s->c->parallel_for(s->c, 0, n, fz_frames, &j);
    return !rc && t ? esrrf_fold(s->c, g, t, dst, n) : rc;
  }
  size_t rc_px = (size_t)g->rows * (size_t)g->cols;
  double sm1[4] = {0, 0, g->mag, g->mag};
  qs_method_call alone = *s->c;
  alone.parallel_for = fz_inline_for;
  const qs_method_call *rc_call = rc_px <= FZ_INLINE_PX ? &alone : s->c;
  for (size_t k = 0; !rc && k < n; k++) {
    qs_image frame = qs_image_wrap(s->c->in[0].data + (f0 + k) * rc_px, 1,
                                   (size_t)g->rows, (size_t)g->cols);
    rc = fz_roberts(rc_call, s, &frame, s->grad);
    s->frame = frame.data;
    if (!rc && s->mag) {
      qs_image mag =
          qs_image_wrap(s->mag, 1, (size_t)g->rows_m, (size_t)g->cols_m);
      rc = esrrf_sub(s->c, &method_shift_magnify, &frame, &mag, sm1);
    }
    s->dst = dst + k * g->plane;
    s->fold = t;
    s->fold_n = t ? t->n + k : 0;
    if (!rc) rc = s->var->frame(s);
    s->fold = NULL;
  }
  if (!rc && t) t->n += n;
  return rc;
}

/* Frees the clones of frames mode (those made: n). */
static void fz_clones_free(fused *s, size_t n) {
  for (size_t w = 0; s->clones && w < n; w++) {
    s->var->unclone(&s->clones[w]);
    free(s->clones[w].grad);
  }
  free(s->clones);
  s->clones = NULL;
  s->n_clones = 0;
  s->batch = 1;
}

void fused_frames_mode(fused *s) {
  const esrrf_geom *g = &s->g;
  size_t threads = s->c->threads > 0 ? (size_t)s->c->threads : 1;
  s->batch = 1;
  s->band = g->plane > FZ_FRAME_PX;
  if (threads < 2 || !s->var->clone || s->mag || g->plane > FZ_BAND_PX ||
      (s->band && !s->var->band_on)) {
    s->band = 0;
    return;
  }
  s->clones = calloc(threads, sizeof *s->clones);
  size_t made = 0;
  while (s->clones && made < threads) {
    fused *w = &s->clones[made];
    *w = *s;
    w->clones = NULL;
    w->grad = s->roberts ? malloc(2 * (size_t)g->rows * (size_t)g->cols *
                                  sizeof *w->grad)
                         : NULL;
    if ((s->roberts && !w->grad) || s->var->clone(s, w)) {
      free(w->grad);
      break;
    }
    made++;
  }
  if (made < threads) {
    fz_clones_free(s, made);
    s->band = 0;
    return;
  }
  s->n_clones = threads;
  size_t b = FZ_BATCH_BYTES / (g->plane * sizeof(float));
  s->batch = b < 2 ? 2 : b > FZ_BATCH ? FZ_BATCH : b;
}

int fused_tables(fused *s) {
  const esrrf_geom *g = &s->g;
  size_t rm = (size_t)g->rows_m, cm = (size_t)g->cols_m;
  size_t threads = s->c->threads > 0 ? (size_t)s->c->threads : 1;
  s->win = g->k.end - g->k.start;
  s->ty = malloc((rm + cm) * (size_t)s->win * sizeof *s->ty);
  s->ny = malloc((rm + cm) * sizeof *s->ny);
  s->gtmp = aligned_alloc(
      64, threads * fused_stride(2 * (2 * (size_t)g->cols + 1), sizeof(float)));
  if (!s->ty || !s->ny || !s->gtmp) return QS_ENOMEM;
  s->tx = s->ty + rm * (size_t)s->win;
  s->nx = s->ny + rm;
  for (size_t y = 0; y < rm; y++)
    s->ny[y] = fz_axis((int)y, g->rows, g->rows_m, &g->k,
                       s->ty + y * (size_t)s->win);
  for (size_t x = 0; x < cm; x++)
    s->nx[x] = fz_axis((int)x, g->cols, g->cols_m, &g->k,
                       s->tx + x * (size_t)s->win);
  fz_weights(s);
  return fz_candidates(s);
}

/* eSRRF's per-call tables: the shared ones, and the grid taps and buffers
 * of one frame's Roberts gradients, grid and ×M intensity. */
static int fz_plan(fused *s) {
  const esrrf_geom *g = &s->g;
  size_t gr = 2 * (size_t)g->rows + 1, gc = 2 * (size_t)g->cols + 1;
  size_t threads = s->c->threads > 0 ? (size_t)s->c->threads : 1;
  s->hr = malloc((gr + gc) * sizeof *s->hr);
  s->sums = aligned_alloc(
      64, threads * fused_stride(2 * (size_t)g->cols, sizeof *s->sums));
  s->grad = malloc(2 * (size_t)g->rows * (size_t)g->cols * sizeof(float));
  s->grid = malloc(gr * gc * sizeof *s->grid);
  int mag_plane = g->weight && !s->var->intensity;
  s->mag = mag_plane ? malloc(g->plane * sizeof(float)) : NULL;
  if (!s->hr || !s->sums || !s->grad || !s->grid || (mag_plane && !s->mag))
    return QS_ENOMEM;
  s->hc = s->hr + gr;
  for (size_t a = 0; a < gr; a++)
    rgc_grid_taps((int)a, g->rows, g->mag, &s->hr[a]);
  for (size_t b = 0; b < gc; b++)
    rgc_grid_taps((int)b, g->cols, g->mag, &s->hc[b]);
  return fused_tables(s);
}

static int fz_pass_plan(fused *s) {
  (void)s;
  return QS_OK;
}

static int fz_pass_frame(fused *s) {
  int rc = s->c->parallel_for(s->c, 0, 2 * (size_t)s->g.rows + 1,
                              fused_grid_rows, s);
  if (!rc)
    rc = s->c->parallel_for(s->c, 0, (size_t)s->g.rows_m, fz_rgc_rows, s);
  return rc;
}

static void fz_pass_done(fused *s) { (void)s; }

const fused_variant fused_scalar_pass = {.plan = fz_pass_plan,
                                         .frame = fz_pass_frame,
                                         .done = fz_pass_done};

/* A state for c with var's plan, or NULL with *rc (and c->err). */
static fused *fz_open(const qs_method_call *c, const fused_variant *var,
                      int *rc) {
  fused *s = calloc(1, sizeof *s);
  *rc = s ? QS_OK : QS_ENOMEM;
  if (!s) return NULL;
  s->c = c;
  s->var = var;
  s->samples = fz_samples;
  s->roberts = 1;
  esrrf_geom_of(c, &s->g);
  *rc = fz_plan(s);
  if (!*rc) *rc = var->plan(s);
  if (!*rc) {
    fused_frames_mode(s);
    return s;
  }
  snprintf(c->err, c->err_len,
           "esrrf: no memory for the fused tables and one frame's grids "
           "(%d x %d input, magnification %d)",
           s->g.rows, s->g.cols, s->g.mag);
  var->done(s);
  fused_free(s);
  return NULL;
}

/* --- the live stream's plan (stream.c, sink.h; helper "stream") --- */
/* The stream's calls share one geometry: the first call's tables, grids
 * and variant state are kept in the stream's plan for the later calls
 * and released when the stream closes. */
static void fz_session_free(void *p) {
  fused *s = p;
  s->var->done(s);
  fused_free(s);
}

static int fz_session_run(const qs_method_call *c, const fused_variant *var,
                          const qs_method_call *cs) {
  fused *s = cs->kept(cs, "esrrf.fused");
  int rc = QS_OK;
  if (!s || s->var != var) {
    s = fz_open(c, var, &rc);
    /* keep releases s itself when it fails */
    if (s) rc = cs->keep(cs, "esrrf.fused", s, fz_session_free);
    if (rc) return rc;
  }
  s->c = c;
  s->g.frames = c->in[0].frames;
  s->g.fpt = s->g.frames;
  return esrrf_drive_fold(c, &s->g, s->batch, fz_maps, s);
}
/* --- end of the live stream's plan --- */

int fused_run(const qs_method_call *c, const fused_variant *var) {
  if (!var) var = &fused_scalar_pass;
  if (esrrf_sink_of(c)) return fz_session_run(c, var, c);
  int rc;
  fused *s = fz_open(c, var, &rc);
  if (!s) return rc;
  rc = esrrf_drive_fold(c, &s->g, s->batch, fz_maps, s);
  var->done(s);
  fused_free(s);
  return rc;
}

void fused_free(fused *s) {
  fz_clones_free(s, s->n_clones);
  free(s->ty);
  free(s->ny);
  free(s->hr);
  free(s->sums);
  free(s->grad);
  free(s->grid);
  free(s->mag);
  free(s->cand);
  free(s->cand_at);
  free(s->gtmp);
  free(s);
}

int esrrf_run_fused(const qs_method_call *c) { return fused_run(c, NULL); }
