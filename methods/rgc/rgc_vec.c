/* rgc_vec.c — `vec`, `avx2` and `avx512` of the rgc method: the standalone
 * RGC step on its ×2M gradient images through the vectorised pass of
 * eSRRF's fused plan (fused_vec.h), the portable build of it
 * (fused_vec.c), the AVX2 + FMA one (fused_avx2.c, run only after
 * fused_avx2_probe) and the AVX-512F one (fused_avx512.c, only after
 * fused_avx512_probe).
 *
 * RGC reads the ×2M gradients only at index n·M of the half-pixel grid
 * (clamped to the last row/column; math/rgc.h), so each frame's samples
 * are gathered into the compact (2R + 1) × (2C + 1) grid fused.h
 * describes, the same floats the reference reads; the window taps, the
 * per-phase candidate lists and their weights are fused_tables', and the
 * pass writes the convergence inside the margins, which the intensity then
 * multiplies (one rounding, as rgc_frame_rows). The weights of the
 * candidate lists and the pass's first-order distances make the results
 * differ from serial's in the last bits (within 1e-6 of max |serial|,
 * tests/test_rgc_vec.c); threaded runs equal single-thread runs bit for
 * bit, since a pixel's sums do not depend on the split of rows, nor on
 * the worker that maps a small frame whole (fused.h's frames mode: the
 * frames of at most 2^16 output pixels go one per worker, in one loop).
 *
 * The compact grid needs an image of whole original pixels: R·M × C·M
 * with the gradients 2R·M × 2C·M. Other shapes (legal for rgc, never made
 * by eSRRF) take the reference loop, rgc_frame_rows, row by row. */
#include <stdio.h>
#include <stdlib.h>

#include "methods/esrrf/fused.h"
#include "methods/methods.h"

/* One call: the plan, and where the current frame's planes are. */
typedef struct rv_call {
  const float *gx, *gy; /* the frame's ×2M gradients */
  rgc_grid full;        /* their layout */
} rv_call;

/* The full-grid index of half-pixel index n along an axis: n·M, or the
 * reference's clamp past the image (math/rgc.h, rgc_pixel). */
static inline long rv_index(int n, int step, float limit, float clamp) {
  float pos = (float)n * (float)step;
  return (long)(pos >= limit ? clamp : pos);
}

/* Grid row a of the frame: its samples of the ×2M gradients. */
static void rv_samples(const fused *s, size_t a, int worker, float *gx,
                       float *gy) {
  (void)worker;
  const rv_call *v = s->samples_ctx;
  const rgc_grid *g = &v->full;
  int gw = 2 * s->g.cols + 1;
  long row = rv_index((int)a, g->step, g->limit_r, g->clamp_r) * g->width;
  for (int x = 0; x < gw; x++) {
    long at = row + rv_index(x, g->step, g->limit_c, g->clamp_c);
    gx[x] = v->gx[at];
    gy[x] = v->gy[at];
  }
}

/* Output rows [b, e) of the frame times the ×M intensity, inside the
 * margins (s->frame: the frame's intensity plane). */
static int rv_weight_rows(void *ctx, size_t b, size_t e, int worker) {
  (void)worker;
  const fused *s = ctx;
  const esrrf_geom *g = &s->g;
  for (size_t y = b; y < e; y++) {
    if ((int)y < g->margin || (int)y >= g->rows_m - g->margin) continue;
    size_t at = y * (size_t)g->cols_m;
    for (int x = g->margin; x < g->cols_m - g->margin; x++)
      s->dst[at + x] *= s->frame[at + x];
  }
  return QS_OK;
}

/* The reference loop for shapes the compact grid does not fit. */
static int rv_scalar_rows(void *ctx, size_t b, size_t e, int worker) {
  (void)worker;
  rgc_frame_rows(ctx, b, e);
  return QS_OK;
}

static int rv_scalar(const qs_method_call *c, const rgc_consts *k,
                     int margin) {
  const qs_image *img = &c->in[2];
  size_t plane = img->rows * img->cols, plane2 = 4 * plane;
  rgc_frame f = {.grid = rgc_grid_full((int)img->rows, (int)img->cols,
                                       k->mag),
                 .rows_m = (int)img->rows,
                 .cols_m = (int)img->cols,
                 .margin = margin,
                 .k = *k};
  int rc = QS_OK;
  for (size_t fr = 0; !rc && fr < img->frames; fr++) {
    f.gx = c->in[0].data + fr * plane2;
    f.gy = c->in[1].data + fr * plane2;
    f.img = c->p[P_IW] != 0 ? img->data + fr * plane : NULL;
    f.out = c->out[0].data + fr * plane;
    rc = c->parallel_for(c, 0, img->rows, rv_scalar_rows, &f);
    if (!rc && method_advance(c, 1, img->frames)) rc = QS_ECANCELLED;
  }
  return rc;
}

/* Frames mode (fused.h): frames [b, e) of the call, each whole on this
 * worker's clone with its own samples context. */
typedef struct rv_batch {
  const qs_method_call *c;
  fused *s;
  rv_call *calls; /* one per worker */
} rv_batch;

static int rv_whole_frames(void *ctx, size_t b, size_t e, int worker) {
  const rv_batch *j = ctx;
  const qs_method_call *c = j->c;
  fused *s = j->s, *w = fused_clone_at(s, worker, c, "rgc");
  if (!w) return QS_EFAIL;
  rv_call *v = &j->calls[worker];
  const esrrf_geom *g = &s->g;
  size_t plane2 = 4 * g->plane;
  for (size_t fr = b; fr < e; fr++) {
    v->gx = c->in[0].data + fr * plane2;
    v->gy = c->in[1].data + fr * plane2;
    w->dst = c->out[0].data + fr * g->plane;
    int rc = s->var->frame_on(w, worker);
    if (!rc && c->p[P_IW] != 0) {
      w->frame = c->in[2].data + fr * g->plane;
      rc = rv_weight_rows(w, 0, (size_t)g->rows_m, worker);
    }
    if (!rc && method_advance(c, 1, g->frames)) rc = QS_ECANCELLED;
    if (rc) return rc;
  }
  return QS_OK;
}

static int rv_frames(const qs_method_call *c, fused *s) {
  const qs_image *img = &c->in[2];
  const esrrf_geom *g = &s->g;
  size_t plane2 = 4 * g->plane;
  rv_call v = {.full = rgc_grid_full(g->rows_m, g->cols_m, g->mag)};
  int rc = QS_OK;
  s->samples = rv_samples;
  s->samples_ctx = &v;
  rv_call *calls = s->clones && g->frames > 1
                       ? calloc(s->n_clones, sizeof *calls)
                       : NULL;
  if (calls) { /* else (or short of memory) one frame at a time */
    for (size_t k = 0; k < s->n_clones; k++) {
      calls[k].full = v.full;
      s->clones[k].samples = rv_samples;
      s->clones[k].samples_ctx = &calls[k];
      s->clones[k].c = c;
    }
    rv_batch j = {c, s, calls};
    rc = c->parallel_for(c, 0, g->frames, rv_whole_frames, &j);
    free(calls);
    return rc;
  }
  for (size_t fr = 0; !rc && fr < g->frames; fr++) {
    v.gx = c->in[0].data + fr * plane2;
    v.gy = c->in[1].data + fr * plane2;
    s->dst = c->out[0].data + fr * g->plane;
    rc = s->var->frame(s);
    if (!rc && c->p[P_IW] != 0) {
      s->frame = img->data + fr * g->plane;
      rc = c->parallel_for(c, 0, (size_t)g->rows_m, rv_weight_rows, s);
    }
    if (!rc && method_advance(c, 1, g->frames)) rc = QS_ECANCELLED;
  }
  return rc;
}

/* Runs rgc with the pass var of the fused plan. */
static int rv_run(const qs_method_call *c, const fused_variant *var) {
  const qs_image *img = &c->in[2];
  rgc_consts k = rgc_consts_of(c->p);
  int margin = rgc_margin(k.fwhm, k.mag);
  if (img->rows <= 2 * (size_t)margin || img->cols <= 2 * (size_t)margin)
    return QS_OK; /* all margin: the zeroed output is the answer */
  size_t mag = (size_t)k.mag;
  if (img->rows % mag || img->cols % mag) return rv_scalar(c, &k, margin);
  fused *s = calloc(1, sizeof *s);
  if (!s) return QS_ENOMEM;
  s->c = c;
  s->var = var;
  esrrf_geom *g = &s->g;
  g->frames = img->frames;
  g->rows = (int)(img->rows / mag);
  g->cols = (int)(img->cols / mag);
  g->mag = k.mag;
  g->rows_m = (int)img->rows;
  g->cols_m = (int)img->cols;
  g->margin = margin;
  g->plane = img->rows * img->cols;
  g->k = k;
  g->weight = 0; /* the pass leaves the intensity to rv_weight_rows */
  size_t gr = 2 * (size_t)g->rows + 1, gc = 2 * (size_t)g->cols + 1;
  s->grid = malloc(gr * gc * sizeof *s->grid);
  int rc = s->grid ? fused_tables(s) : QS_ENOMEM;
  if (!rc) rc = var->plan(s);
  if (rc)
    snprintf(c->err, c->err_len,
             "rgc: no memory for the tables and one frame's grid (%zu x %zu "
             "output, magnification %d)",
             img->rows, img->cols, k.mag);
  else {
    fused_frames_mode(s);
    rc = rv_frames(c, s);
  }
  var->done(s);
  fused_free(s);
  return rc;
}

int rgc_run_vec(const qs_method_call *c) {
  return rv_run(c, fused_vec_pass());
}

int rgc_avx2_probe(const qs_method_call *c, char *why, size_t why_len) {
  (void)c;
  return fused_avx2_probe("vec", why, why_len);
}

/* The AVX2 pass exists only where the probe can succeed (x86, GCC or
 * Clang); the check stands in case the engine did not probe first. */
int rgc_run_avx2(const qs_method_call *c) {
  int rc = rgc_avx2_probe(c, c->err, c->err_len);
  const fused_variant *var = fused_avx2_pass();
  return rc ? rc : var ? rv_run(c, var) : QS_EUNAVAIL;
}

int rgc_avx512_probe(const qs_method_call *c, char *why, size_t why_len) {
  (void)c;
  return fused_avx512_probe("avx2", "vec", why, why_len);
}

/* As rgc_run_avx2, with the AVX-512 pass. */
int rgc_run_avx512(const qs_method_call *c) {
  int rc = rgc_avx512_probe(c, c->err, c->err_len);
  const fused_variant *var = rc ? NULL : fused_avx512_pass();
  return rc ? rc : var ? rv_run(c, var) : QS_EUNAVAIL;
}
