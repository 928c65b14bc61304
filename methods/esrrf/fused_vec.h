/* fused_vec.h — the vectorised RGC pass of eSRRF's fused plan (fused.h),
 * written once with GCC/Clang vector extensions and included by the files
 * that compile it for one instruction set each: fused_vec.c (baseline
 * flags, portable), fused_avx2.c (AVX2 + FMA, 8 lanes) and fused_avx512.c
 * (AVX-512F, 16 lanes, lane masks in mask registers). The including file
 * defines FV_LANES and FV_FMA(a, b, c) = a·b + c (fused or not),
 * optionally the lane-mask operations (FV_MASK, below), then uses
 * fv_variant with fused_run.
 *
 * Layout. The lanes are FV_LANES output pixels of one row and one phase:
 * x, x + M, x + 2M, ... Their window taps sit at the same offsets from
 * grid columns two apart, so the half-pixel grid is stored split by column
 * parity (even and odd columns in separate planes), which makes the lanes'
 * samples one contiguous load; the grid holds the unit gradient
 * (gx, gy)/|G| in structure-of-arrays planes, padded on the right with
 * copies of the clamped last column so lanes past the image read valid
 * memory. The loop runs over the phase pair's candidate list (fused.c)
 * with the lanes' accumulators in registers. What does not change along
 * a row is made once per call: per candidate its grid offset from the
 * row's first window row and its slopes along e_x, per group of lanes
 * the x offsets dx0_i + e_x of each window column and, for a border group
 * (a lane whose column taps leave the image), the lane mask of each window
 * column. Per row and phase only w and w/d at the row's e_y are made (one
 * vector operation per FV_LANES candidates); a row whose window leaves
 * the image or is clamped at its bottom takes a copy of the list without
 * those rows. So every group, border or not, runs one tight loop.
 *
 * No square root or division per sample. A pixel's offsets differ from its
 * phase's representative (the one the candidates were made from) by the
 * float rounding of its centre, e_x along x (one value per lane) and e_y
 * along y (one per row), a few ulps of the centre. Then, with
 * d0, (dx0, dy0) the candidate's, to first order
 *   d − d0 = (dx0·e_x + dy0·e_y) / d0,
 *   w(d)  = w0 + w'(d0)·(d − d0),      1/d = 1/d0 − (d − d0)/d0²,
 * whose second-order terms are below 1e-9 relative. The offsets themselves
 * are exact (dx0 + e_x is the reference's float offset), so the
 * orientation test G·R < 0 and the cross product use the reference's
 * values; with unit G the convergence term is 1 − |Ĝ × R|·(1/d), and the
 * sample's w·(1 − |Ĝ × R|/d) is w − |Ĝ × R|·(w/d) with w/d to first order
 * as well.
 * Candidates within the centre-rounding slack of the disk edge take the
 * exact distance (one square root) and the reference's test d <= tSO.
 *
 * Model per sample (one lane): 15 flops counting a multiply-add as two
 * (dx 1, G·R 3, G×R 3, w 2, w/d 2, w − |G×R|·(w/d) 2, two sums 2),
 * 8 bytes of grid (two floats, from L1: a row's grid taps stay there) and
 * a share of the candidate constants (broadcast, L1). Per output pixel:
 * n_c samples (n_c ≈ 40 at radius 1.5; bench/roofline counts them
 * exactly) and 4 bytes written, so the pass is compute bound.
 *
 * Results depend on the lane layout only through the pixel, never on the
 * worker or the split of rows: threaded runs equal single-thread runs bit
 * for bit. Nor on the lane count: a pixel sums its candidates in the same
 * order whatever group it falls in (a border group masks per candidate
 * what an inner group would not add), so the 8- and 16-lane builds with
 * fused multiply-adds (fused_avx2, fused_avx512) give the same bits.
 * Internal to methods/esrrf. */
#ifndef QS_ESRRF_FUSED_VEC_H
#define QS_ESRRF_FUSED_VEC_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "methods/esrrf/fused.h"

#ifndef FV_LANES
#define FV_LANES 8
#endif

typedef float fv_f __attribute__((vector_size(4 * FV_LANES)));
typedef int32_t fv_i __attribute__((vector_size(4 * FV_LANES)));

#ifndef FV_FMA
#define FV_FMA(a, b, c) ((a) * (b) + (c))
#endif

/* Lane masks: which lanes a sum takes. By default a vector of all-ones or
 * zero ints (what vector comparisons give) and a masked sum adds the
 * lanes kept, 0 in the others; a file with mask registers (fused_avx512.c)
 * defines FV_MASK, the type fv_m and the operations below, where a masked
 * sum leaves the other lanes as they are. The two agree bit for bit: an
 * accumulator starting at +0 never holds −0, so acc + 0 is acc. */
#ifndef FV_MASK
typedef fv_i fv_m;
#define FV_ALL (~(fv_i){0})
#define FV_LT(a, b) ((a) < (b))
#define FV_LE(a, b) ((a) <= (b))
#define FV_GE(a, b) ((a) >= (b))
#define FV_NE(a, b) ((a) != (b))
#define FV_AND(a, b) ((a) & (b))
#define FV_ADD_IF(acc, m, v) ((acc) + fv_keep(m, v))
#define FV_SELECT(m, a, b) ((fv_f)(((m) & (fv_i)(a)) | (~(m) & (fv_i)(b))))
#endif

/* One candidate of a phase pair as the lane loop reads it (per call; a
 * row with window rows out of bounds or clamped takes a copy). off: the
 * grid position (in floats) of lane 0's sample from the row's base, i.e.
 * window row j's plane row plus the plane position of the candidate's
 * column; the lane offsets along x come from the group's table by i. */
typedef struct fv_cand {
  int off;
  unsigned char i, j; /* window column, row */
  unsigned short pad;
  float wa, pa;       /* slopes of w and of w/d along e_x */
} fv_cand;

/* One output row's list for one column phase: what the lane loops read. */
typedef struct fv_rl {
  const fv_cand *c;
  const float *w0, *p0; /* per candidate: w and w/d at the row's e_y */
  const fz_tap *rt;     /* the row's window taps: dy by window row */
  const float *base;    /* the grid at offset 0 */
  int n_sure, n;
  float sw0, swa;       /* sums of w0 and wa over the sure candidates */
} fv_rl;

/* Catmull-Rom taps of one output row or column in float. */
typedef struct fv_taps {
  int first, n;
  float w[4];
} fv_taps;

/* One phase pair's list: sure candidates (inside the disk for every pixel
 * of the pair) first, then those near its edge. */
typedef struct fv_list {
  int at, n_sure, n;
  float swa; /* the sure candidates' wa summed (fv_sum_wa) */
} fv_list;

typedef struct fv_state {
  fv_cand *cand;
  float *w0, *wb, *p0, *pb; /* per candidate, as cand: w and w/d at the
                             * representative and their slopes along e_y
                             * (FV_LANES floats of padding) */
  fv_list *list;     /* M² */
  int *x0, *nk;      /* per column phase: first column, count */
  fv_f *ex;          /* per column phase: groups of lane offsets e_x */
  unsigned char *border; /* per group: a lane has taps out of bounds */
  fv_m *colin;       /* per group: win lane masks, column tap in bounds,
                      * then the lanes with a tap out of bounds */
  int *ex_at;        /* M + 1 offsets into ex and border */
  float *soa;        /* (2R + 1) rows of 4 planes of w2 floats */
  size_t w2;         /* floats per plane row */
  int lp;            /* plane positions left of grid column 0 */
  float *sw0;        /* per output row and column phase: the sure
                      * candidates' w0 + wb·e_y summed (fv_sum's order) */
  int mag;
  char *rows;        /* per worker: a row's list (cand copy, w0, p0) */
  size_t row_bytes;
  fz_tap *rtaps;     /* per worker: win row taps */
  int longest;
  /* ×M intensity (intensity weighting): Catmull-Rom taps per output row
   * and column (catmull_rom.h's, weights in float), the frame magnified
   * along x (R × C·M), and one output row of it per worker. */
  fv_taps *irt, *ict;
  float *hx, *irow;
  /* The column taps again by tap (fv_hx_row's vectors): the first input
   * column of each output column and the weights w[k][x] (cm each), for
   * the output columns [ix0, ix1) whose four taps are all in the frame. */
  int *icf;
  float *icw[4];
  size_t ix0, ix1;
  float xmax;        /* rgc_sq_bound(tSO): the disk-edge test (fv_edge_n) */
  /* A clone's band (band mode, fv_band_on): its output rows [by0, by1)
   * and the grid rows [blo, bhi) they read, found once; by1 0: none. */
  size_t by0, by1, blo, bhi;
} fv_state;


/* Interior groups through the sure candidates at once (fv_rows): 2, or 4
 * where the including file has the registers for it (fv_groups). */
#ifndef FV_GROUPS
#define FV_GROUPS 2
#endif

/* FV_PIN(v): the including file may keep v in a register, so that the
 * compiler does not load it again for a second use (changes no value). */
#ifndef FV_PIN
#define FV_PIN(v) ((void)0)
#endif

static inline fv_f fv_load(const float *p) {
  fv_f v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* x in every lane (x − 0 is x for every x, −0 included, so this folds to a
 * broadcast; x + 0 would not). */
static inline fv_f fv_splat(float x) { return x - (fv_f){0}; }

/* The lanes of m where mask is set, 0 elsewhere. */
static inline fv_f fv_keep(fv_i mask, fv_f v) {
  return (fv_f)(mask & (fv_i)v);
}

static inline fv_f fv_abs(fv_f v) {
  return (fv_f)((fv_i)v & ((fv_i){0} + 0x7fffffff));
}

/* 1/|G| from |G|² lane by lane as fused_cell computes it: in double,
 * rounded to float once (the including file may give a vector form with
 * the same bits). */
#ifndef FV_INV_NORM
#define FV_INV_NORM(g2) fv_inv_norm_lanes(g2)
#endif
static inline fv_f fv_inv_norm_lanes(fv_f g2) {
  for (int k = 0; k < FV_LANES; k++)
    g2[k] = (float)(1 / sqrt((double)g2[k]));
  return g2;
}

/* base[idx[k]] in lane k (AVX2's and AVX-512's gather instructions made
 * fv_hx_row 3 % slower than these lane loads on the Zen 5). */
static inline fv_f fv_gather_lanes(const float *base, const int *idx) {
  fv_f v;
  for (int k = 0; k < FV_LANES; k++) v[k] = base[idx[k]];
  return v;
}

/* Lanes 0, 2, 4, ... of v to even[0 .. FV_LANES / 2), lanes 1, 3, ... to
 * odd[0 .. FV_LANES / 2) (the including file may give a shuffle). */
#ifndef FV_SPLIT
#define FV_SPLIT(v, even, odd) fv_split_lanes(v, even, odd)
#endif
static inline void fv_split_lanes(fv_f v, float *even, float *odd) {
  for (int k = 0; k < FV_LANES / 2; k++) {
    even[k] = v[2 * k];
    odd[k] = v[2 * k + 1];
  }
}

/* The padding of grid row a's planes (its gw = 2C + 1 columns made): zero
 * on the left, the last column on the right. Plane p holds parity p & 1
 * (x for p < 2, y after): C + 1 even columns, C odd ones, from lp. */
static void fv_soa_pad(const fv_state *v, size_t a, size_t gw) {
  float *o = v->soa + a * 4 * v->w2;
  size_t lp = (size_t)v->lp, c = gw / 2, last = gw - 1;
  const float *lastx = o + (last & 1) * v->w2 + lp + (last >> 1);
  float lx = lastx[0], ly = lastx[2 * v->w2];
  for (size_t p = 0; p < 4; p++) {
    float *pl = o + p * v->w2, val = p < 2 ? lx : ly;
    for (size_t q = 0; q < lp; q++) pl[q] = 0;
    for (size_t q = lp + c + !(p & 1); q < v->w2; q++) pl[q] = val;
  }
}

/* Row a of the unit-gradient grid from its samples gx, gy (2C + 1 each),
 * split by column parity; plane position q holds grid column
 * 2(q − lp) + parity: zero left of column 0 (taps there are masked),
 * copies of the clamped last column right of it. The unit vector is
 * (gx, gy)·inv with inv fused_cell's 1/|G| (0 where G = 0). */
static void fv_soa_row(const fv_state *v, size_t a, size_t gw,
                       const float *gx, const float *gy) {
  float *o = v->soa + a * 4 * v->w2;
  float *ex = o + (size_t)v->lp, *ox = o + v->w2 + (size_t)v->lp;
  float *ey = o + 2 * v->w2 + (size_t)v->lp, *oy = o + 3 * v->w2 +
                                                  (size_t)v->lp;
  size_t c = 0;
  for (; c + FV_LANES <= gw; c += FV_LANES) {
    fv_f x = fv_load(gx + c), y = fv_load(gy + c), zero = {0};
    fv_i some = (x != zero) | (y != zero);
    fv_f inv = FV_INV_NORM(x * x + y * y);
    fv_f nx = fv_keep(some, x * inv), ny = fv_keep(some, y * inv);
    FV_SPLIT(nx, ex + c / 2, ox + c / 2); /* c is even */
    FV_SPLIT(ny, ey + c / 2, oy + c / 2);
  }
  for (; c < gw; c++) {
    float nx = 0, ny = 0;
    if (gx[c] != 0 || gy[c] != 0) {
      float inv = (float)(1 / sqrt((double)(gx[c] * gx[c] + gy[c] * gy[c])));
      nx = gx[c] * inv;
      ny = gy[c] * inv;
    }
    (c & 1 ? ox : ex)[c >> 1] = nx;
    (c & 1 ? oy : ey)[c >> 1] = ny;
  }
  fv_soa_pad(v, a, gw);
}

/* rgc_finish for the lanes: the ratio where Wsum > 0 (the division is
 * correctly rounded in both), then negatives to 0 (NaN and −0 kept, as
 * there); with sens > 1 the power takes rgc_finish itself lane by lane. */
static inline fv_f fv_finish(fv_f acc, fv_f ws, float sens) {
  if (sens > 1) {
    for (int k = 0; k < FV_LANES; k++) acc[k] = rgc_finish(acc[k], ws[k], sens);
    return acc;
  }
  fv_f zero = {0};
  fv_f q = fv_keep(ws > zero, acc / ws);
  return fv_keep(~(q < zero), q);
}

/* Where a group's lanes stand: lane k is pixel k0 + k of its phase. */
typedef struct fv_at {
  const float *gx, *gy; /* the row's grid at offset 0 for lane 0 */
  fv_f ex;
  const fz_tap *tx;     /* by window column: dx0_i (its delta) */
  const fv_m *colin;    /* by window column: lanes whose tap is in bounds
                         * (a border group's; NULL: all) */
} fv_at;

/* Candidate c for the lanes of group a: the offsets dx, dy, the weight w
 * and the convergence term *t; returns the lanes whose gradient points
 * inward (the only ones whose t counts). */
static inline __attribute__((always_inline)) fv_m
fv_term(const fv_rl *r, int k, const fv_at *a, fv_f dy, fv_f *dx, fv_f *w,
        fv_f *t) {
  const fv_cand *c = &r->c[k];
  fv_f nx = fv_load(a->gx + c->off), ny = fv_load(a->gy + c->off);
  /* the lanes' x offsets: one broadcast for both groups of a pair and an
   * addition, where a table by group and window column cost each group a
   * vector load (loads bound the 16-lane loop) */
  *dx = fv_splat(a->tx[c->i].delta) + a->ex;
  FV_PIN(nx);
  FV_PIN(ny);
  FV_PIN(*dx);
  fv_f dot = RGC_UNIT_DOT(nx, ny, *dx, dy, FV_FMA);
  *w = RGC_LIN(fv_splat(r->w0[k]), fv_splat(c->wa), a->ex, FV_FMA);
  fv_f pd = RGC_LIN(fv_splat(r->p0[k]), fv_splat(c->pa), a->ex, FV_FMA);
  /* RGC_UNIT_TERM's w·(1 − |Ĝ × R|·(1/d)) as w − |Ĝ × R|·(w/d), with w/d
   * to first order in e_x like w and 1/d (its e_x² term is of the order
   * of theirs): one multiply fewer */
  *t = FV_FMA(-fv_abs(FV_FMA(ny, *dx, -(nx * dy))), pd, *w);
  return FV_LT(dot, (fv_f){0});
}

/* The routines below take n groups (1 to 4, a constant where they are
 * inlined) through one row list together: each candidate's constants are
 * loaded once for all of them, and each group's sums keep the candidates'
 * order, so its bits do not depend on its partners. */

/* The sure candidates (inside the disk for every pixel of the pair) for n
 * groups that are not border groups: their convergence terms. Their
 * weights need no sum per sample: over the sure list w sums to
 * sw0 + swa·e_x, which the caller starts wsum with. */
static inline __attribute__((always_inline)) void
fv_sure_n(const fv_rl *r, const fv_at *a, int n, fv_f *rgc) {
  fv_f acc[4], dx, w, t;
  fv_at at[4];
#pragma GCC unroll 4
  for (int h = 0; h < n; h++) acc[h] = rgc[h], at[h] = a[h];
  for (int k = 0; k < r->n_sure; k++) {
    fv_f dy = fv_splat(r->rt[r->c[k].j].delta);
#pragma GCC unroll 4
    for (int h = 0; h < n; h++) {
      fv_m in = fv_term(r, k, &at[h], dy, &dx, &w, &t);
      acc[h] = FV_ADD_IF(acc[h], in, t);
    }
  }
#pragma GCC unroll 4
  for (int h = 0; h < n; h++) rgc[h] = acc[h];
}

/* The sure candidates for n groups with border lanes among them: lanes
 * whose column tap is out of bounds masked. The lanes with such a tap
 * (out[h]) sum their weights here; the others keep the sums wsum holds
 * (those fv_sure_n's caller starts with), so a pixel's sums do not depend
 * on its group: an interior group among them (its column masks all set,
 * no lane out) gets fv_sure_n's bits. */
static inline __attribute__((always_inline)) void
fv_sure_border_n(const fv_rl *r, const fv_at *a, const fv_m *out, int n,
                 fv_f *rgc, fv_f *wsum) {
  fv_f acc[4], ws[4], dx, w, t;
  fv_at at[4];
#pragma GCC unroll 4
  for (int h = 0; h < n; h++) acc[h] = rgc[h], ws[h] = (fv_f){0}, at[h] = a[h];
  for (int k = 0; k < r->n_sure; k++) {
    fv_f dy = fv_splat(r->rt[r->c[k].j].delta);
#pragma GCC unroll 4
    for (int h = 0; h < n; h++) {
      fv_m dot = fv_term(r, k, &at[h], dy, &dx, &w, &t);
      fv_m in = at[h].colin[r->c[k].i];
      acc[h] = FV_ADD_IF(acc[h], FV_AND(in, dot), t);
      ws[h] = FV_ADD_IF(ws[h], in, w);
    }
  }
#pragma GCC unroll 4
  for (int h = 0; h < n; h++) {
    rgc[h] = acc[h];
    wsum[h] = FV_SELECT(out[h], ws[h], wsum[h]);
  }
}

/* The candidates near the disk edge for n groups: the reference's test
 * d <= tSO (and d != 0) on the exact squared distance against xmax =
 * rgc_sq_bound(tSO) (no square root per candidate), border lanes
 * masked. */
static inline __attribute__((always_inline)) void
fv_edge_n(const fv_rl *r, const fv_at *a, int n, float xmax, fv_f *rgc,
          fv_f *wsum) {
  fv_f acc[4], ws[4], dx, w, t, zero = {0};
  fv_at at[4];
#pragma GCC unroll 4
  for (int h = 0; h < n; h++) acc[h] = rgc[h], ws[h] = wsum[h], at[h] = a[h];
  for (int k = r->n_sure; k < r->n; k++) {
    fv_f dy = fv_splat(r->rt[r->c[k].j].delta);
#pragma GCC unroll 4
    for (int h = 0; h < n; h++) {
      fv_m dot = fv_term(r, k, &at[h], dy, &dx, &w, &t);
      fv_f x = dx * dx + dy * dy; /* not fused: the reference's d² */
      fv_m in = FV_AND(FV_LE(x, fv_splat(xmax)), FV_NE(x, zero));
      if (at[h].colin) in = FV_AND(in, at[h].colin[r->c[k].i]);
      acc[h] = FV_ADD_IF(acc[h], FV_AND(in, dot), t);
      ws[h] = FV_ADD_IF(ws[h], in, w);
    }
  }
#pragma GCC unroll 4
  for (int h = 0; h < n; h++) rgc[h] = acc[h], wsum[h] = ws[h];
}

/* n groups through the row list: the sure candidates (the border form
 * when border is set), then the edge ones. */
static inline __attribute__((always_inline)) void
fv_groups(const fv_rl *r, const fv_at *a, int n, int border, int win,
          float xmax, fv_f *rgc, fv_f *wsum) {
  if (border) {
    fv_m out[4];
    for (int h = 0; h < n; h++) out[h] = a[h].colin[win];
    fv_sure_border_n(r, a, out, n, rgc, wsum);
  } else {
    fv_sure_n(r, a, n, rgc);
  }
  fv_edge_n(r, a, n, xmax, rgc, wsum);
}

/* a[0] + a[1] + ... (n values) in that order, as the reference sums its
 * weights (the same order keeps the rounding close to its). */
static float fv_sum(const float *a, int n) {
  float acc = 0;
  for (int k = 0; k < n; k++) acc += a[k];
  return acc;
}

/* The same sum of the candidates' wa. */
static float fv_sum_wa(const fv_cand *c, int n) {
  float acc = 0;
  for (int k = 0; k < n; k++) acc += c[k].wa;
  return acc;
}

/* The row's list for column phase px into *r: the phase pair's own when
 * the row's window rows are all in bounds and consecutive on the grid
 * (`regular`), else a copy in `own` of the candidates whose row tap is in
 * bounds with their grid offsets from the row's taps; and the per-row
 * terms w0 + wb·e_y, p0 + pb·e_y into w0, p0 (FV_LANES-padded). */
static void fv_row_list(const fv_state *v, const fz_tap *rt, int regular,
                        const unsigned char *rok, int y, int px, float ey,
                        fv_cand *own, float *w0, float *p0, fv_rl *r) {
  const fv_list *l = &v->list[(y % v->mag) * v->mag + px];
  const fv_cand *cd = v->cand + l->at;
  const float *a0 = v->w0 + l->at, *b0 = v->wb + l->at;
  const float *a1 = v->p0 + l->at, *b1 = v->pb + l->at;
  r->rt = rt;
  r->w0 = w0;
  r->p0 = p0;
  if (regular) {
    fv_f e = fv_splat(ey);
    for (int k = 0; k < l->n; k += FV_LANES) {
      fv_f w = fv_load(a0 + k) + fv_load(b0 + k) * e;
      fv_f p = fv_load(a1 + k) + fv_load(b1 + k) * e;
      memcpy(w0 + k, &w, sizeof w);
      memcpy(p0 + k, &p, sizeof p);
    }
    r->c = cd;
    r->n = l->n;
    r->n_sure = l->n_sure;
    r->base = v->soa + (size_t)rt[0].idx * 4 * v->w2;
    r->sw0 = v->sw0[(size_t)y * (size_t)v->mag + (size_t)px];
    r->swa = l->swa;
    return;
  }
  int n = 0;
  r->n_sure = -1;
  for (int k = 0; k < l->n; k++) {
    if (k == l->n_sure) r->n_sure = n;
    int j = cd[k].j;
    if (!rok[j]) continue;
    own[n] = cd[k];
    own[n].off += (rt[j].idx - j) * 4 * (int)v->w2;
    w0[n] = a0[k] + b0[k] * ey;
    p0[n] = a1[k] + b1[k] * ey;
    n++;
  }
  if (r->n_sure < 0) r->n_sure = n;
  r->c = own;
  r->n = n;
  r->base = v->soa;
  r->sw0 = fv_sum(w0, r->n_sure);
  r->swa = fv_sum_wa(own, r->n_sure);
}

/* One output column of fv_hx_row from its taps t on the input row in. */
static inline float fv_hx_cell(const fv_taps *t, const float *in) {
  const float *p = in + t->first;
  float a = 0;
  if (t->n == 4) /* the loop below, unrolled: the same sums */
    return (((a + t->w[0] * p[0]) + t->w[1] * p[1]) + t->w[2] * p[2]) +
           t->w[3] * p[3];
  for (int k = 0; k < t->n; k++) a += t->w[k] * p[k];
  return a;
}

/* The ×M intensity, along x first: input row r of the frame magnified
 * along x into hx. In float (the reference sums in double: the results
 * differ by a few ulps, well inside the variant's 1e-6). */
static void fv_hx_row(const fused *s, size_t r) {
  const fv_state *v = s->vs;
  size_t cm = (size_t)s->g.cols_m;
  const float *in = s->frame + r * (size_t)s->g.cols;
  float *o = v->hx + r * cm;
  /* the columns of four taps FV_LANES at a time, each lane fv_hx_cell's
   * operations in its order (no contraction: the same floats); the
   * columns before and after them one at a time */
  size_t vx = v->ix0 + (v->ix1 - v->ix0) / FV_LANES * FV_LANES;
  for (size_t x = 0; x < v->ix0; x++) o[x] = fv_hx_cell(&v->ict[x], in);
  for (size_t x = v->ix0; x < vx; x += FV_LANES) {
    fv_f a = {0};
    for (int k = 0; k < 4; k++)
      a = a + fv_load(v->icw[k] + x) * fv_gather_lanes(in + k, v->icf + x);
    memcpy(o + x, &a, sizeof a);
  }
  for (size_t x = vx; x < cm; x++) o[x] = fv_hx_cell(&v->ict[x], in);
}

/* Half of a lane vector in double, and in float. */
typedef double fv_d __attribute__((vector_size(4 * FV_LANES)));
typedef float fv_h __attribute__((vector_size(2 * FV_LANES)));
#define FV_HALF (FV_LANES / 2)

/* The unit gradient of one cell from its samples, as fv_soa_row. */
static inline void fv_unit(float gx, float gy, float *nx, float *ny) {
  *nx = *ny = 0;
  if (gx != 0 || gy != 0) {
    float inv = (float)(1 / sqrt((double)(gx * gx + gy * gy)));
    *nx = gx * inv;
    *ny = gy * inv;
  }
}

/* cr_vsums of FV_HALF columns from c of the four rows r (weights w),
 * into p: the same double operations in the same order. */
static inline void fv_col_sums(const float *const r[4], int c,
                               const fv_d w[4], QS_ACC *p) {
  fv_d q = {0};
  for (int k = 0; k < 4; k++) {
    fv_h f;
    memcpy(&f, r[k] + c, sizeof f);
    q = q + __builtin_convertvector(f, fv_d) * w[k];
  }
  memcpy(p + c, &q, sizeof q);
}

/* The unit gradients of FV_LANES cells from m of one column parity, from
 * the column sums p[0] (x) and p[1] (y), the cells' first tap at m + off
 * and their weights w: cr_hsum then fv_unit, lane by lane. */
static inline void fv_unit_cells(QS_ACC *const p[2], int m, int off,
                                 const fv_d w[4], float *px, float *py) {
  float g2[2][FV_LANES];
  for (int g = 0; g < 2; g++)
    for (int half = 0; half < 2; half++) {
      const QS_ACC *at = p[g] + m + off + half * FV_HALF;
      fv_d q = {0};
      for (int k = 0; k < 4; k++) {
        fv_d x;
        memcpy(&x, at + k, sizeof x);
        q = q + x * w[k];
      }
      fv_h f = __builtin_convertvector(q, fv_h);
      memcpy(g2[g] + half * FV_HALF, &f, sizeof f);
    }
  fv_f x = fv_load(g2[0]), y = fv_load(g2[1]), zero = {0};
  fv_i some = (x != zero) | (y != zero);
  fv_f inv = FV_INV_NORM(x * x + y * y);
  fv_f nx = fv_keep(some, x * inv), ny = fv_keep(some, y * inv);
  memcpy(px + m, &nx, sizeof nx);
  memcpy(py + m, &ny, sizeof ny);
}

/* Grid row a of eSRRF's own samples (s->roberts: fused.c's Catmull-Rom
 * half-pixel samples of the Roberts gradients) made straight into the
 * unit-gradient planes, FV_LANES cells of one column parity at a time:
 * the column sums (cr_vsums) and the sums along the row (cr_hsum) with
 * the same double operations in the same order, so the same floats as
 * s->samples then fv_soa_row give; cells whose taps leave the image take
 * cr_hsum itself. */
static void fv_roberts_row(const fused *s, size_t a, int worker) {
  const fv_state *v = s->vs;
  int cols = s->g.cols;
  size_t gw = 2 * (size_t)cols + 1, plane = (size_t)s->g.rows * (size_t)cols;
  float *o = v->soa + a * 4 * v->w2;
  const cr_taps *rt = &s->hr[a];
  if (!rt->n) { /* no row taps: every sample 0 */
    memset(o, 0, 4 * v->w2 * sizeof *o);
    return;
  }
  QS_ACC *p[2];
  p[0] = (QS_ACC *)((char *)s->sums +
                    (size_t)worker * fused_stride(2 * (size_t)cols,
                                                  sizeof *p[0]));
  p[1] = p[0] + cols;
  for (int g = 0; g < 2; g++) {
    const float *img = s->grad + (size_t)g * plane;
    if (rt->n != 4) {
      cr_vsums(img, cols, rt, p[g], 0, cols);
      continue;
    }
    const float *r0 = img + (size_t)rt->first * (size_t)cols;
    const float *r[4] = {r0, r0 + cols, r0 + 2 * (size_t)cols,
                         r0 + 3 * (size_t)cols};
    fv_d w[4];
    for (int k = 0; k < 4; k++) w[k] = (fv_d){0} + rt->w[k];
    int c = 0;
    for (; c + FV_HALF <= cols; c += FV_HALF) fv_col_sums(r, c, w, p[g]);
    /* the last columns as one vector ending at the row's end, over
     * columns already summed (the same values again): on a narrow image
     * the scalar remainder was a large share of the row */
    if (c < cols && cols >= FV_HALF) fv_col_sums(r, cols - FV_HALF, w, p[g]);
    else cr_vsums(img, cols, rt, p[g], c, cols);
  }
  /* along the row, per column parity: cells h = 2m + par whose four taps
   * are in the image start at m - 2 (even) or m - 1 (odd) */
  for (int par = 0; par < 2; par++) {
    float *px = o + (size_t)par * v->w2 + (size_t)v->lp;
    float *py = o + (size_t)(2 + par) * v->w2 + (size_t)v->lp;
    int lo = par ? 1 : 2, hi = par ? cols - 2 : cols - 1, m = 0;
    for (; m < lo && 2 * m + par < (int)gw; m++)
      fv_unit(cr_hsum(p[0], &s->hc[2 * m + par]),
              cr_hsum(p[1], &s->hc[2 * m + par]), &px[m], &py[m]);
    if (hi > lo) {
      const QS_ACC *tw = s->hc[2 * lo + par].w;
      fv_d w[4];
      for (int k = 0; k < 4; k++) w[k] = (fv_d){0} + tw[k];
      int off = par ? -1 : -2;
      for (; m + FV_LANES <= hi; m += FV_LANES)
        fv_unit_cells(p, m, off, w, px, py);
      /* the rest up to hi as one vector ending there, over cells already
       * made (the same values again), where the row holds one */
      if (m < hi && hi - lo >= FV_LANES) {
        fv_unit_cells(p, hi - FV_LANES, off, w, px, py);
        m = hi;
      }
    }
    for (; 2 * m + par < (int)gw; m++)
      fv_unit(cr_hsum(p[0], &s->hc[2 * m + par]),
              cr_hsum(p[1], &s->hc[2 * m + par]), &px[m], &py[m]);
  }
  fv_soa_pad(v, a, gw);
}

/* Grid rows [b, e) of the frame: their samples (s->samples), made into
 * the unit-gradient planes (or the cells, for a call without candidate
 * lists, where every pixel takes fused_pixel), and the rows of the
 * intensity along x that belong to them (input row r with grid row 2r),
 * all in one parallel loop. */
static int fv_grid_rows(void *ctx, size_t b, size_t e, int worker) {
  const fused *s = ctx;
  const fv_state *v = s->vs;
  size_t gw = 2 * (size_t)s->g.cols + 1;
  float *gx = (float *)((char *)s->gtmp +
                        (size_t)worker * fused_stride(2 * gw, sizeof *gx)),
        *gy = gx + gw;
  for (size_t a = b; a < e; a++) {
    if (v->soa && s->roberts) {
      fv_roberts_row(s, a, worker);
      if (s->g.weight && a % 2 == 0 && a / 2 < (size_t)s->g.rows)
        fv_hx_row(s, a / 2);
      continue;
    }
    s->samples(s, a, worker, gx, gy);
    if (v->soa)
      fv_soa_row(v, a, gw, gx, gy);
    else
      for (size_t x = 0; x < gw; x++)
        fused_cell(&s->grid[a * gw + x], gx[x], gy[x]);
    if (s->g.weight && a % 2 == 0 && a / 2 < (size_t)s->g.rows)
      fv_hx_row(s, a / 2);
  }
  return QS_OK;
}

/* Then along y: output row y of the intensity into o, columns [x0, x1). */
static void fv_intensity_row(const fv_state *v, int y, size_t cm, int x0,
                             int x1, float *o) {
  const fv_taps *t = &v->irt[y];
  const float *h[4];
  fv_f w[4];
  for (int k = 0; k < 4; k++) {
    h[k] = v->hx + (size_t)(t->first + (k < t->n ? k : 0)) * cm;
    w[k] = fv_splat(k < t->n ? t->w[k] : 0.0f);
  }
  int x = x0;
  for (; x + FV_LANES <= x1; x += FV_LANES) {
    fv_f a = FV_FMA(w[0], fv_load(h[0] + x), (fv_f){0});
    for (int k = 1; k < 4; k++) a = FV_FMA(w[k], fv_load(h[k] + x), a);
    memcpy(o + x, &a, sizeof a);
  }
  for (; x < x1; x++) { /* the lanes' operations on one pixel */
    fv_f a = FV_FMA(w[0], fv_splat(h[0][x]), (fv_f){0});
    for (int k = 1; k < 4; k++) a = FV_FMA(w[k], fv_splat(h[k][x]), a);
    o[x] = a[0];
  }
}

/* o[x] *= im[x] for x in [x0, x1). */
static void fv_mul_row(float *o, const float *im, int x0, int x1) {
  int x = x0;
  for (; x + FV_LANES <= x1; x += FV_LANES) {
    fv_f a = fv_load(o + x) * fv_load(im + x);
    memcpy(o + x, &a, sizeof a);
  }
  for (; x < x1; x++) o[x] *= im[x];
}

/* Output rows [b, e): every pixel inside the margins by phase groups when
 * there are candidate lists, else through fused_pixel. */
static int fv_rows(void *ctx, size_t b, size_t e, int worker) {
  const fused *s = ctx;
  const fv_state *v = s->vs;
  const esrrf_geom *g = &s->g;
  int mag = g->mag, win = s->win;
  size_t w = (size_t)worker;
  /* the worker's row list: a candidate copy, then w0 and p0 */
  char *rb = v->cand ? v->rows + w * v->row_bytes : NULL;
  size_t nl = (size_t)(v->longest + FV_LANES);
  fv_cand *own = (fv_cand *)rb;
  float *w0r = rb ? (float *)(rb + fused_stride(nl, sizeof *own)) : NULL;
  float *p0r = rb ? w0r + nl : NULL;
  fz_tap *rt = v->cand ? (fz_tap *)((char *)v->rtaps +
                                    w * fused_stride((size_t)win, sizeof *rt))
                       : NULL;
  unsigned char rok[2 * 50 * 2 + 2]; /* win <= 2·floor(2·50) + 1 */
  for (size_t yy = b; yy < e; yy++) {
    int y = (int)yy;
    if (y < g->margin || y >= g->rows_m - g->margin) continue;
    float *o = s->dst + yy * (size_t)g->cols_m;
    float *im = NULL;
    if (g->weight) {
      im = (float *)((char *)v->irow +
                     w * fused_stride((size_t)g->cols_m, sizeof *im));
      fv_intensity_row(v, y, (size_t)g->cols_m, g->margin,
                       g->cols_m - g->margin, im);
    }
    if (!v->cand) {
      for (int x = g->margin; x < g->cols_m - g->margin; x++) {
        float val = fused_pixel(s, y, x);
        o[x] = im ? val * im[x] : val;
      }
      continue;
    }
    int py = y % mag, regular = 1;
    for (int j = 0; j < win; j++) {
      rok[j] = (unsigned char)fused_tap(y, j, g->rows, g->rows_m, &g->k,
                                        &rt[j]);
      regular &= rok[j] && rt[j].idx == rt[0].idx + j;
    }
    float ey = rgc_shift(s->rep_y[py], y, mag);
    for (int px = 0; px < mag; px++) {
      fv_rl rl;
      fv_row_list(v, rt, regular, rok, y, px, ey, own, w0r, p0r, &rl);
      int g0 = v->ex_at[px], ng = v->ex_at[px + 1] - g0;
      /* interior groups FV_GROUPS at a time (up to four), border groups
       * two at a time, each kind with its own (a group's sums do not
       * depend on its partners): first the interior, then the border
       * groups; with FV_GROUPS 4, a phase of three or four groups with a
       * border one among them all at once, in the border form */
      int mixed = 0;
#if FV_GROUPS == 4
      if (ng == 3 || ng == 4)
        for (int k = 0; k < ng; k++) mixed |= v->border[g0 + k];
#endif
      for (int pass = mixed; pass < 2; pass++) {
        int most = mixed ? ng : pass ? 2 : FV_GROUPS;
        for (int k = 0; k < ng;) {
          if (!mixed && v->border[g0 + k] != pass) {
            k++;
            continue;
          }
          int kk[FV_GROUPS] = {k}, m = 1;
          for (int q = k + 1; q < ng && m < most; q++)
            if (mixed || v->border[g0 + q] == pass) kk[m++] = q;
          fv_at two[FV_GROUPS];
          fv_f acc[FV_GROUPS] = {{0}}, ws[FV_GROUPS] = {{0}};
          for (int h = 0; h < m; h++) {
            int gi = g0 + kk[h];
            const float *at = rl.base + (size_t)kk[h] * FV_LANES;
            two[h] = (fv_at){.gx = at, .gy = at + 2 * v->w2, .ex = v->ex[gi],
                             .tx = s->tx + (size_t)s->rep_x[px] * win,
                             .colin = pass ? v->colin +
                                          (size_t)gi * (size_t)(win + 1)
                                           : NULL};
            /* the sure candidates' weights summed: sw0 + swa·e_x */
            ws[h] = FV_FMA(fv_splat(rl.swa), two[h].ex, fv_splat(rl.sw0));
          }
          /* a constant group count for each form (fv_groups) */
          if (m == 1)
            fv_groups(&rl, two, 1, pass, win, v->xmax, acc, ws);
          else if (m == 2)
            fv_groups(&rl, two, 2, pass, win, v->xmax, acc, ws);
#if FV_GROUPS == 4
          else if (m == 3)
            fv_groups(&rl, two, 3, pass, win, v->xmax, acc, ws);
          else
            fv_groups(&rl, two, 4, pass, win, v->xmax, acc, ws);
#endif
          for (int h = 0; h < m; h++) {
            int k1 = kk[h] * FV_LANES;
            int lanes = v->nk[px] - k1 < FV_LANES ? v->nk[px] - k1 : FV_LANES;
            fv_f val = fv_finish(acc[h], ws[h], g->k.sens);
            int x = v->x0[px] + k1 * mag;
            for (int q = 0; q < lanes; q++, x += mag) o[x] = val[q];
          }
          /* the partners are done: the next of this kind after them */
          k = kk[m - 1] + 1;
        }
      }
    }
    /* the intensity over the whole row, in lanes (the same products as
     * pixel by pixel, where the phases' strided stores could not) */
    if (im) fv_mul_row(o, im, g->margin, g->cols_m - g->margin);
  }
  fused_fold_rows(s, b, e);
  return QS_OK;
}

/* Two parallel loops per frame: the grid (and the intensity along x),
 * then the output rows. */
static int fv_frame(fused *s) {
  int rc = s->c->parallel_for(s->c, 0, 2 * (size_t)s->g.rows + 1,
                              fv_grid_rows, s);
  if (!rc) rc = s->c->parallel_for(s->c, 0, (size_t)s->g.rows_m, fv_rows, s);
  return rc;
}

/* Per column phase: its columns inside the margins, each group's lane
 * offsets e_x and whether a lane of it has column taps out of bounds. */
static int fv_plan_columns(fused *s, fv_state *v) {
  const esrrf_geom *g = &s->g;
  int mag = g->mag, lo = g->margin, hi = g->cols_m - g->margin;
  size_t groups = 0;
  for (int px = 0; px < mag; px++) {
    int x0 = lo + ((px - lo % mag) % mag + mag) % mag;
    v->x0[px] = x0;
    v->nk[px] = x0 < hi ? (hi - 1 - x0) / mag + 1 : 0;
    v->ex_at[px] = (int)groups;
    groups += (size_t)(v->nk[px] + FV_LANES - 1) / FV_LANES;
  }
  v->ex_at[mag] = (int)groups;
  size_t ng = groups ? groups : 1, win = (size_t)s->win;
  v->ex = aligned_alloc(sizeof(fv_f), ng * sizeof(fv_f));
  /* (aligned_alloc takes whole multiples of the alignment) */
  v->colin = aligned_alloc(sizeof(fv_f), (ng * (win + 1) * sizeof(fv_m) +
                                          sizeof(fv_f) - 1) /
                                             sizeof(fv_f) * sizeof(fv_f));
  v->border = calloc(ng, 1);
  if (!v->ex || !v->colin || !v->border) return QS_ENOMEM;
  fv_f one = fv_splat(1.0f), cmax = fv_splat((float)(2 * (g->cols_m - 1)));
  for (int px = 0; px < mag; px++) {
    /* raw grid column of lane 0 of the phase for window column 0 */
    int base = (int)(RGC_GM * rgc_center(v->x0[px], mag)) + g->k.start;
    for (int gl = 0; gl < v->ex_at[px + 1] - v->ex_at[px]; gl++) {
      size_t gi = (size_t)(v->ex_at[px] + gl);
      fv_f out = {0};
      for (int k = 0; k < FV_LANES; k++) {
        int x = v->x0[px] + (gl * FV_LANES + k) * mag;
        v->ex[gi][k] = rgc_shift(s->rep_x[px], x, mag);
        if (gl * FV_LANES + k < v->nk[px] && s->nx[x] != s->win) {
          v->border[gi] = 1;
          out[k] = 1;
        }
      }
      /* per window column: which lanes' column tap passes the
       * reference's bound (raw column in [1, 2·(CM − 1)]); then the lanes
       * with a tap out of bounds */
      fv_m *cin = v->colin + gi * (win + 1);
      for (size_t i = 0; i < win; i++) {
        fv_f raw = fv_splat((float)(base + (int)i + 2 * gl * FV_LANES));
        for (int k = 0; k < FV_LANES; k++) raw[k] += (float)(2 * k);
        cin[i] = FV_AND(FV_GE(raw, one), FV_LE(raw, cmax));
      }
      cin[win] = FV_GE(out, one);
    }
  }
  return QS_OK;
}

/* The vector form of the candidate lists: sure ones first, then those
 * within the slack of the disk edge; d0 = 0 dropped (its weight is 0 and
 * every pixel of the pair has d = 0 there too). */
static int fv_plan_lists(fused *s, fv_state *v) {
  const esrrf_geom *g = &s->g;
  int mag = g->mag, win = s->win;
  size_t total = (size_t)s->cand_at[mag * mag];
  v->cand = malloc((total ? total : 1) * sizeof *v->cand);
  v->w0 = calloc(4 * (total + FV_LANES), sizeof *v->w0);
  if (!v->cand || !v->w0) return QS_ENOMEM;
  v->wb = v->w0 + total + FV_LANES;
  v->p0 = v->wb + total + FV_LANES;
  v->pb = v->p0 + total + FV_LANES;
  float tso = g->k.tso;
  int n = 0, row = 4 * (int)v->w2;
  for (int py = 0; py < mag; py++)
    for (int px = 0; px < mag; px++) {
      fv_list *l = &v->list[py * mag + px];
      const fz_cand *c0 = s->cand + s->cand_at[py * mag + px];
      const fz_cand *c1 = s->cand + s->cand_at[py * mag + px + 1];
      const fz_tap *ty = s->ty + (size_t)s->rep_y[py] * (size_t)win;
      const fz_tap *tx = s->tx + (size_t)s->rep_x[px] * (size_t)win;
      int base = (int)(RGC_GM * rgc_center(v->x0[px], mag)) + g->k.start;
      l->at = n;
      for (int pass = 0; pass < 2; pass++) {
        for (const fz_cand *c = c0; c < c1; c++) {
          int edge = c->d0 >= tso - s->slack;
          if (c->d0 == 0 || edge != pass) continue;
          double dx0 = tx[c->i].delta, dy0 = ty[c->j].delta, d0 = c->d0;
          rgc_lin lin = rgc_lin_at(dx0, dy0, d0, c->w0, c->w1);
          /* w/d and its slopes: (w/d)' = w'/d − w/d² along d, times
           * dx0/d0 (dy0/d0) along e_x (e_y), as rgc_lin_at's */
          double w0 = c->w0, dp = (double)c->w1 / d0 - w0 / (d0 * d0);
          int q = base + c->i + 2 * v->lp; /* >= 0: lp covers the window */
          v->cand[n] = (fv_cand){.off = c->j * row + (q & 1) * (int)v->w2 +
                                        (q >> 1),
                                 .i = (unsigned char)c->i,
                                 .j = (unsigned char)c->j,
                                 .wa = lin.wa,
                                 .pa = (float)(dp * dx0 / d0)};
          v->w0[n] = lin.w0;
          v->wb[n] = lin.wb;
          v->p0[n] = (float)(w0 / d0);
          v->pb[n] = (float)(dp * dy0 / d0);
          n++;
        }
        if (pass == 0) l->n_sure = n - l->at;
      }
      l->n = n - l->at;
      l->swa = fv_sum_wa(v->cand + l->at, l->n_sure);
      if (l->n > v->longest) v->longest = l->n;
    }
  /* sw0 of every row and phase, FV_LANES rows of one row phase at a time:
   * each lane the scalar sum w0 + wb·e_y over the sure list in order */
  size_t rm = (size_t)g->rows_m, m = (size_t)mag;
  v->mag = mag;
  v->sw0 = malloc(rm * m * sizeof *v->sw0);
  if (!v->sw0) return QS_ENOMEM;
  for (int py = 0; py < mag; py++)
    for (int y0 = py; y0 < g->rows_m; y0 += FV_LANES * mag) {
      fv_f e = {0};
      for (int q = 0; q < FV_LANES && y0 + q * mag < g->rows_m; q++)
        e[q] = rgc_shift(s->rep_y[py], y0 + q * mag, mag);
      for (int px = 0; px < mag; px++) {
        const fv_list *l = &v->list[py * mag + px];
        fv_f acc = {0};
        for (int k = l->at; k < l->at + l->n_sure; k++)
          acc += fv_splat(v->w0[k]) + fv_splat(v->wb[k]) * e;
        for (int q = 0; q < FV_LANES && y0 + q * mag < g->rows_m; q++)
          v->sw0[(size_t)(y0 + q * mag) * m + (size_t)px] = acc[q];
      }
    }
  return QS_OK;
}

/* The unit-gradient planes of one frame: (2R + 1) rows of 4 planes of w2
 * floats, whole cache lines (aligned_alloc's rule). */
static size_t fv_soa_bytes(const fused *s, const fv_state *v) {
  return ((2 * (size_t)s->g.rows + 1) * 4 * v->w2 * sizeof(float) + 63) &
         ~(size_t)63;
}

static int fv_plan(fused *s) {
  const esrrf_geom *g = &s->g;
  fv_state *v = calloc(1, sizeof *v);
  s->vs = v;
  if (!v) return QS_ENOMEM;
  int mag = g->mag;
  size_t threads = s->c->threads > 0 ? (size_t)s->c->threads : 1;
  v->xmax = rgc_sq_bound(g->k.tso);
  if (g->weight) {
    size_t rm = (size_t)g->rows_m, cm = (size_t)g->cols_m;
    v->irt = malloc((rm + cm) * sizeof *v->irt);
    v->hx = malloc((size_t)g->rows * cm * sizeof *v->hx);
    v->irow = aligned_alloc(64, threads * fused_stride(cm, sizeof *v->irow));
    if (!v->irt || !v->hx || !v->irow) return QS_ENOMEM;
    v->ict = v->irt + rm;
    for (size_t i = 0; i < rm + cm; i++) {
      int along_x = i >= rm, at = (int)(along_x ? i - rm : i);
      cr_taps t;
      cr_taps_at(cr_source(at, (float)mag, 0.0f),
                 along_x ? g->cols : g->rows, &t);
      v->irt[i].first = t.first;
      v->irt[i].n = t.n;
      for (int k = 0; k < 4; k++)
        v->irt[i].w[k] = k < t.n ? (float)t.w[k] : 0.0f;
    }
    /* the interior columns (four taps) by tap; the first output columns
     * and the last may take fewer */
    v->icf = malloc(cm * sizeof *v->icf);
    v->icw[0] = malloc(4 * cm * sizeof *v->icw[0]);
    if (!v->icf || !v->icw[0]) return QS_ENOMEM;
    for (int k = 1; k < 4; k++) v->icw[k] = v->icw[0] + (size_t)k * cm;
    for (size_t x = 0; x < cm; x++) {
      v->icf[x] = v->ict[x].first;
      for (int k = 0; k < 4; k++) v->icw[k][x] = v->ict[x].w[k];
    }
    size_t x = 0;
    while (x < cm && v->ict[x].n != 4) x++;
    v->ix0 = x;
    while (x < cm && v->ict[x].n == 4) x++;
    v->ix1 = x;
  }
  if (!s->cand) return QS_OK; /* every pixel through fused_pixel */
  v->list = calloc((size_t)mag * (size_t)mag, sizeof *v->list);
  v->x0 = malloc(2 * (size_t)mag * sizeof *v->x0);
  v->ex_at = malloc(((size_t)mag + 1) * sizeof *v->ex_at);
  /* Plane positions: lp on the left so that raw columns down to
   * start − 1 stay in the buffer; on the right the grid, the window and
   * the columns of lanes up to FV_LANES output pixels past the last. */
  v->lp = s->win / 2 + 2;
  v->w2 = (size_t)v->lp + (size_t)g->cols + (size_t)FV_LANES +
          (size_t)s->win + 2;
  v->w2 = (v->w2 + 7) & ~(size_t)7;
  v->soa = aligned_alloc(64, fv_soa_bytes(s, v));
  v->rtaps = aligned_alloc(
      64, threads * fused_stride((size_t)s->win, sizeof *v->rtaps));
  if (!v->list || !v->x0 || !v->ex_at || !v->soa || !v->rtaps)
    return QS_ENOMEM;
  v->nk = v->x0 + mag;
  int rc = fv_plan_columns(s, v);
  if (!rc) rc = fv_plan_lists(s, v);
  if (!rc) {
    size_t nl = (size_t)(v->longest + FV_LANES);
    v->row_bytes = fused_stride(nl, sizeof(fv_cand)) +
                   fused_stride(2 * nl, sizeof(float));
    v->rows = aligned_alloc(64, threads * v->row_bytes);
    if (!v->rows) rc = QS_ENOMEM;
  }
  return rc;
}

static void fv_done(fused *s) {
  fv_state *v = s->vs;
  if (!v) return;
  free(v->cand);
  free(v->w0);
  free(v->sw0);
  free(v->colin);
  free(v->list);
  free(v->x0);
  free(v->ex);
  free(v->ex_at);
  free(v->border);
  free(v->rtaps);
  free(v->irt);
  free(v->icf);
  free(v->icw[0]);
  free(v->hx);
  free(v->irow);
  free(v->soa);
  free(v->rows);
  free(v);
  s->vs = NULL;
}

/* What fv_clone made. */
static void fv_unclone(fused *w) {
  fv_state *o = w->vs;
  if (!o) return;
  free(o->soa);
  free(o->hx);
  free(o);
  w->vs = NULL;
}

/* Frames mode (fused.h): a worker's own unit-gradient planes and ×M
 * intensity along x; every other table is s's, shared (read only, or one
 * slice per worker). Only with candidate lists; the caller gives the
 * clone its frame (fused.c: its Roberts gradients; rgc_vec.c: its own
 * samples_ctx). */
static int fv_clone(const fused *s, fused *w) {
  const fv_state *v = s->vs;
  if (!v || !v->cand || !v->soa) return QS_EUNAVAIL;
  fv_state *o = malloc(sizeof *o);
  if (!o) return QS_ENOMEM;
  *o = *v;
  o->by0 = o->by1 = 0;
  o->soa = aligned_alloc(64, fv_soa_bytes(s, v));
  o->hx = v->hx ? malloc((size_t)s->g.rows * (size_t)s->g.cols_m *
                         sizeof *o->hx)
                : NULL;
  w->vs = o;
  if (o->soa && (o->hx || !v->hx)) return QS_OK;
  fv_unclone(w);
  return QS_ENOMEM;
}

/* fv_frame's two loops, every row on the calling worker. */
static int fv_frame_on(fused *w, int worker) {
  int rc = fv_grid_rows(w, 0, 2 * (size_t)w->g.rows + 1, worker);
  if (!rc) rc = fv_rows(w, 0, (size_t)w->g.rows_m, worker);
  return rc;
}

/* The grid rows [*lo, *hi) that output rows [y0, y1) read: their window
 * taps' and their intensity rows' (input row r is made with grid row 2r). */
static void fv_band_rows(const fused *w, size_t y0, size_t y1, size_t *lo_out,
                         size_t *hi_out) {
  const esrrf_geom *g = &w->g;
  const fv_state *v = w->vs;
  size_t lo = 2 * (size_t)g->rows + 1, hi = 0;
  for (size_t yy = y0; yy < y1; yy++) {
    int y = (int)yy;
    if (y < g->margin || y >= g->rows_m - g->margin) continue;
    for (int j = 0; j < w->win; j++) {
      fz_tap t;
      if (!fused_tap(y, j, g->rows, g->rows_m, &g->k, &t)) continue;
      if ((size_t)t.idx < lo) lo = (size_t)t.idx;
      if ((size_t)t.idx + 1 > hi) hi = (size_t)t.idx + 1;
    }
    if (g->weight) { /* the ×M intensity's rows r: grid rows 2r */
      const fv_taps *t = &v->irt[y];
      size_t a0 = 2 * (size_t)t->first, a1 = 2 * (size_t)(t->first + t->n);
      if (t->n > 0 && a0 < lo) lo = a0;
      if (t->n > 0 && a1 - 1 > hi) hi = a1 - 1;
    }
  }
  *lo_out = lo, *hi_out = hi;
}

/* Band mode: output rows [y0, y1) on the calling worker, after the grid
 * rows they read (each worker makes its band's and their halo in its own
 * planes: the rows near a band's edge are made twice, the bits of each
 * the same). */
static int fv_band_on(fused *w, int worker, size_t y0, size_t y1) {
  fv_state *o = w->vs;
  if (o->by0 != y0 || o->by1 != y1) { /* a batch's frames share the band */
    fv_band_rows(w, y0, y1, &o->blo, &o->bhi);
    o->by0 = y0, o->by1 = y1;
  }
  int rc = o->blo < o->bhi ? fv_grid_rows(w, o->blo, o->bhi, worker) : QS_OK;
  if (!rc) rc = fv_rows(w, y0, y1, worker);
  return rc;
}

static const fused_variant fv_variant = {
    .plan = fv_plan, .frame = fv_frame, .done = fv_done, .intensity = 1,
    .clone = fv_clone, .frame_on = fv_frame_on, .unclone = fv_unclone,
    .band_on = fv_band_on};

#endif
