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
 * magnitude) and grid indices, so the pixel loop has no bounds tests. The
 * distance weight (d·e^{−d²/tSS})⁴, the costly part of the reference
 * (exp and pow per sample), comes from a table over d with a second-order
 * expansion at the nearest node; its error (below 1e-8 relative) is why
 * fused is not bit-identical to serial. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "methods/esrrf/esrrf.h"
#include "methods/math/catmull_rom.h"
#include "methods/methods.h"

/* Nodes of the weight table over [0, tSO]. */
#define FZ_NODES 1024

/* One sample position along an axis: offset from the pixel centre (float,
 * as the reference computes it) and index into the compact grid. */
typedef struct fz_tap {
  float delta;
  int idx;
} fz_tap;

/* One half-pixel gradient sample and its inverse norm. */
typedef struct fz_cell {
  float gx, gy, inv, pad;
} fz_cell;

typedef struct fused {
  const method_call *c;
  esrrf_geom g;
  int win;                /* window length end - start */
  fz_tap *ty, *tx;        /* per output row / column: win taps */
  int *ny, *nx;           /* valid taps per output row / column */
  float wt[FZ_NODES + 1][4]; /* node d, weight, slope, half curvature */
  float inv_h;
  cr_taps *hr, *hc;       /* grid row / column taps: 2R + 1, 2C + 1 */
  QS_ACC *sums;           /* 2·C column sums per worker */
  float *grad, *mag;      /* 2·R·C; R·M·C·M (intensity weighting only) */
  fz_cell *grid;          /* (2R + 1)(2C + 1) */
  float *dst;
} fused;

/* The window taps of output index i along an axis of n_m magnified pixels
 * (n original), in the reference's order; returns how many are valid. */
static int fz_axis(int i, int n, int n_m, const rgc_consts *k, fz_tap *t) {
  float c = rgc_center(i, k->mag);
  int base = (int)(RGC_GM * c), valid = 0;
  for (int j = k->start; j < k->end; j++) {
    float v = (float)(base + j) / RGC_GM;
    if (!(0 < v && v <= n_m - 1)) continue;
    float pos = v * 1.0f * RGC_GM; /* compact grid: step 1 */
    t[valid].delta = v - c;
    t[valid].idx = pos >= (float)(2 * n) ? 2 * n : (int)pos;
    valid++;
  }
  return valid;
}

/* w, w' and w''/2 of w(d) = d⁴·exp(−4d²/tSS) at the nodes (float
 * positions, so that d − node is exact), in double. */
static void fz_weights(fused *s) {
  double tss = s->g.k.tss, h = (double)s->g.k.tso / FZ_NODES;
  s->inv_h = (float)(1 / h);
  for (int n = 0; n <= FZ_NODES; n++) {
    float node = (float)(n * h);
    double d = node, w = 0, w1 = 0, w2 = 0;
    if (n > 0) {
      double e = exp(-d * d / tss), x = d * e;
      double l1 = 4 / d - 8 * d / tss, l2 = -4 / (d * d) - 8 / tss;
      w = x * x * x * x;
      w1 = w * l1;
      w2 = w1 * l1 + w * l2;
    }
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

/* Grid rows [b, e): the half-pixel samples of both gradients. */
static int fz_grid_rows(void *ctx, size_t b, size_t e, int worker) {
  fused *s = ctx;
  int cols = s->g.cols, gw = 2 * cols + 1;
  size_t plane = (size_t)s->g.rows * (size_t)cols;
  QS_ACC *pc = s->sums + (size_t)worker * 2 * (size_t)cols, *pr = pc + cols;
  for (size_t a = b; a < e; a++) {
    fz_cell *row = s->grid + a * (size_t)gw;
    cr_vsums(s->grad, cols, &s->hr[a], pc, 0, cols);
    cr_vsums(s->grad + plane, cols, &s->hr[a], pr, 0, cols);
    for (int x = 0; x < gw; x++) {
      fz_cell *cell = &row[x];
      cell->gx = s->hr[a].n ? cr_hsum(pc, &s->hc[x]) : 0.0f;
      cell->gy = s->hr[a].n ? cr_hsum(pr, &s->hc[x]) : 0.0f;
      cell->inv = (float)(1 / sqrt((double)(cell->gx * cell->gx +
                                            cell->gy * cell->gy)));
      cell->pad = 0;
    }
  }
  return QS_OK;
}

/* Output rows [b, e) of the frame's map. */
static int fz_rgc_rows(void *ctx, size_t b, size_t e, int worker) {
  (void)worker;
  const fused *s = ctx;
  const esrrf_geom *g = &s->g;
  size_t gw = 2 * (size_t)g->cols + 1;
  float tso = g->k.tso;
  for (size_t y = b; y < e; y++) {
    if ((int)y < g->margin || (int)y >= g->rows_m - g->margin) continue;
    const fz_tap *ty = s->ty + y * (size_t)s->win;
    int nty = s->ny[y];
    float *o = s->dst + y * (size_t)g->cols_m;
    const float *im = s->mag ? s->mag + y * (size_t)g->cols_m : NULL;
    for (int x = g->margin; x < g->cols_m - g->margin; x++) {
      const fz_tap *tx = s->tx + (size_t)x * (size_t)s->win;
      int ntx = s->nx[x];
      float rgc = 0, wsum = 0;
      for (int j = 0; j < nty; j++) {
        float dy = ty[j].delta;
        const fz_cell *grow = s->grid + (size_t)ty[j].idx * gw;
        for (int i = 0; i < ntx; i++) {
          float dx = tx[i].delta;
          float d = sqrtf(dx * dx + dy * dy);
          if (d == 0 || d > tso) continue;
          float w = fz_weight(s, d);
          wsum += w;
          const fz_cell *cl = &grow[tx[i].idx];
          if (cl->gx * dx + cl->gy * dy < 0) {
            float dk = fabsf(cl->gy * dx - cl->gx * dy) * cl->inv;
            if (isnan(dk)) dk = d;
            rgc += (1 - dk / d) * w;
          }
        }
      }
      float v = rgc_finish(rgc, wsum, g->k.sens);
      o[x] = im ? v * im[x] : v;
    }
  }
  return QS_OK;
}

static int fz_maps(void *state, size_t f0, size_t n, float *dst) {
  fused *s = state;
  const esrrf_geom *g = &s->g;
  size_t rc_px = (size_t)g->rows * (size_t)g->cols;
  double sm1[4] = {0, 0, g->mag, g->mag};
  for (size_t k = 0; k < n; k++) {
    image frame = image_wrap(s->c->in[0].data + (f0 + k) * rc_px, 1,
                             (size_t)g->rows, (size_t)g->cols);
    image grad[2] = {
        image_wrap(s->grad, 1, (size_t)g->rows, (size_t)g->cols),
        image_wrap(s->grad + rc_px, 1, (size_t)g->rows, (size_t)g->cols)};
    int rc = esrrf_sub(s->c, &method_roberts_cross, &frame, grad, NULL);
    if (!rc && s->mag) {
      image mag = image_wrap(s->mag, 1, (size_t)g->rows_m,
                             (size_t)g->cols_m);
      rc = esrrf_sub(s->c, &method_shift_magnify, &frame, &mag, sm1);
    }
    if (!rc)
      rc = s->c->parallel_for(s->c, 0, 2 * (size_t)g->rows + 1, fz_grid_rows,
                              s);
    s->dst = dst + k * g->plane;
    if (!rc)
      rc = s->c->parallel_for(s->c, 0, (size_t)g->rows_m, fz_rgc_rows, s);
    if (rc) return rc;
  }
  return QS_OK;
}

/* Per-call tables: window taps of every output row and column, grid taps,
 * weights. */
static int fz_plan(fused *s) {
  const esrrf_geom *g = &s->g;
  size_t rm = (size_t)g->rows_m, cm = (size_t)g->cols_m;
  size_t gr = 2 * (size_t)g->rows + 1, gc = 2 * (size_t)g->cols + 1;
  size_t threads = s->c->threads > 0 ? (size_t)s->c->threads : 1;
  s->win = g->k.end - g->k.start;
  s->ty = malloc((rm + cm) * (size_t)s->win * sizeof *s->ty);
  s->ny = malloc((rm + cm) * sizeof *s->ny);
  s->hr = malloc((gr + gc) * sizeof *s->hr);
  s->sums = malloc(threads * 2 * (size_t)g->cols * sizeof *s->sums);
  s->grad = malloc(2 * (size_t)g->rows * (size_t)g->cols * sizeof(float));
  s->grid = malloc(gr * gc * sizeof *s->grid);
  s->mag = g->weight ? malloc(g->plane * sizeof(float)) : NULL;
  if (!s->ty || !s->ny || !s->hr || !s->sums || !s->grad || !s->grid ||
      (g->weight && !s->mag))
    return QS_ENOMEM;
  s->tx = s->ty + rm * (size_t)s->win;
  s->nx = s->ny + rm;
  s->hc = s->hr + gr;
  for (size_t y = 0; y < rm; y++)
    s->ny[y] = fz_axis((int)y, g->rows, g->rows_m, &g->k,
                       s->ty + y * (size_t)s->win);
  for (size_t x = 0; x < cm; x++)
    s->nx[x] = fz_axis((int)x, g->cols, g->cols_m, &g->k,
                       s->tx + x * (size_t)s->win);
  /* Grid index 2n holds the clamped ×2M index 2·N·M − 1, a generic
   * Catmull-Rom sample at (2·N·M − 1) / (2M). */
  float m2 = (float)(2 * g->mag);
  for (size_t a = 0; a < gr; a++)
    if (a < gr - 1)
      cr_taps_half((int)a, g->rows, &s->hr[a]);
    else
      cr_taps_at(cr_source(2 * g->rows_m - 1, m2, 0.0f), g->rows, &s->hr[a]);
  for (size_t b = 0; b < gc; b++)
    if (b < gc - 1)
      cr_taps_half((int)b, g->cols, &s->hc[b]);
    else
      cr_taps_at(cr_source(2 * g->cols_m - 1, m2, 0.0f), g->cols, &s->hc[b]);
  fz_weights(s);
  return QS_OK;
}

int esrrf_run_fused(const method_call *c) {
  fused *s = calloc(1, sizeof *s);
  if (!s) return QS_ENOMEM;
  s->c = c;
  esrrf_geom_of(c, &s->g);
  int rc = fz_plan(s);
  if (rc)
    snprintf(c->err, c->err_len,
             "esrrf: no memory for the fused tables and one frame's grids "
             "(%d x %d input, magnification %d)",
             s->g.rows, s->g.cols, s->g.mag);
  else
    rc = esrrf_drive(c, &s->g, 1, fz_maps, s);
  free(s->ty);
  free(s->ny);
  free(s->hr);
  free(s->sums);
  free(s->grad);
  free(s->grid);
  free(s->mag);
  free(s);
  return rc;
}
