/* esrrf.cl — eSRRF's chain on the device without the ×2M gradient images
 * (the host file is methods/esrrf/opencl.c), with the structure of the
 * `fused` CPU implementation. RGC reads the ×2M Catmull-Rom gradients only
 * at half-pixel positions, so esrrf_grid computes exactly those samples
 * from the raw frames, Roberts cross included, with 1/|G|, on a compact
 * (2R+1)·(2C+1) grid (12 bytes a point and frame instead of
 * 2·4·(2RM)·(2CM) bytes). esrrf_rgc then takes every output pixel's
 * samples from the candidate list of its phase pair (row mod M, column
 * mod M), built once per call on the host with the weight and its slope
 * at the phase's distance: no exp, pow or division per sample. A
 * work-item computes ESRRF_LANES pixels of one phase pair side by side
 * (columns x, x + M, x + 2M, ...), which share the candidate list and
 * whose gradient samples, at grid columns two apart, are contiguous in the
 * grid's layout (planes gx, gy, 1/|G|; each row as its even columns then
 * its odd ones): one vector load per plane and candidate. That is what a
 * CPU device's SIMD units want, and a GPU runs the lanes as plain
 * registers.
 * The per-pixel math is the C code's: math/roberts.h, math/catmull_rom.h,
 * math/rgc.h. */
#include "math/catmull_rom.h"
#include "math/rgc.h"
#include "math/roberts.h"

/* No contractions: the vector lanes and the per-pixel path then round
 * alike, and both as the C code does (TAC2 amplifies the difference). */
#pragma OPENCL FP_CONTRACT OFF

/* The grid's layout: per frame three planes (gx, gy, 1/|G|) of 2R + 1
 * rows; a row holds its even columns b = 0, 2, ..., 2C at [0, C + 1) and
 * its odd ones at [C + 1, 2C + 2) (one unused). The buffer has
 * ESRRF_GUARD floats before and after the frames, so that vector lanes
 * masked out at the image's borders read inside it. */
#define ESRRF_GUARD 16
inline long grid_at(int rows, int cols, int f, int plane, int a, int b) {
  int hw = cols + 1;
  return (((long)f * 3 + plane) * (2 * rows + 1) + a) * (2L * hw) +
         (b & 1) * hw + (b >> 1);
}

/* Catmull-Rom taps of one row or column (host: esrrf_taps_fill in
 * methods/esrrf/opencl.c): four taps, those past the axis's valid ones
 * with weight 0 at a valid index, so every sum is four straight-line
 * multiply-adds (what PoCL's work-group vectoriser wants) and adds only
 * exact zeros to the terms the valid taps give, in cr_apply's order. */
typedef struct esrrf_taps {
  int at[4];
  float w[4];
} esrrf_taps;

/* The grid's column sums, separable step 1: for grid row a and input
 * column c, both Roberts gradients of the row taps' pixels times their
 * weights (cr_vsum's order). vs holds per frame two planes (column, row
 * gradient) of (2R + 1) × C. global (C, 2R + 1, frames); taps: the grid
 * rows' taps, then the grid columns'. */
__kernel void esrrf_gvsum(__global const float *in, __global float *vs,
                          int n_frames, int rows, int cols,
                          __global const esrrf_taps *taps) {
  int c = (int)get_global_id(0), a = (int)get_global_id(1);
  int f = (int)get_global_id(2);
  if (f >= n_frames) return;
  const __global float *img = in + (long)f * rows * cols;
  esrrf_taps rt = taps[a];
  QS_ACC pc = 0, pr = 0;
  for (int i = 0; i < 4; i++) {
    float gc, gr;
    rc_at(img, cols, rt.at[i], c, &gc, &gr);
    pc = pc + (QS_ACC)gc * rt.w[i];
    pr = pr + (QS_ACC)gr * rt.w[i];
  }
  long plane = (long)(2 * rows + 1) * cols;
  __global float *o = vs + (long)f * 2 * plane + (long)a * cols + c;
  o[0] = (float)pc;
  o[plane] = (float)pr;
}

/* Grid point (b, a) of frame f, separable step 2: the ×2M Catmull-Rom
 * samples of both Roberts gradients at half-pixel index (a, b) (the last
 * row/column at the reference's clamped index) from the column sums, and
 * 1/|G|. global (2·cols + 1, 2·rows + 1, frames). */
__kernel void esrrf_grid(__global const float *vs, __global float *grid,
                         int n_frames, int rows, int cols,
                         __global const esrrf_taps *taps) {
  int b = (int)get_global_id(0), a = (int)get_global_id(1);
  int f = (int)get_global_id(2);
  if (f >= n_frames) return;
  grid += ESRRF_GUARD;
  long plane = (long)(2 * rows + 1) * cols;
  const __global float *pc = vs + (long)f * 2 * plane + (long)a * cols;
  const __global float *pr = pc + plane;
  esrrf_taps ct = taps[2 * rows + 1 + b];
  QS_ACC qc = 0, qr = 0;
  for (int j = 0; j < 4; j++) {
    qc = qc + (QS_ACC)pc[ct.at[j]] * ct.w[j];
    qr = qr + (QS_ACC)pr[ct.at[j]] * ct.w[j];
  }
  float sx = (float)qc, sy = (float)qr;
  QS_ACC norm2 = (QS_ACC)(sx * sx + sy * sy);
  grid[grid_at(rows, cols, f, 0, a, b)] = sx;
  grid[grid_at(rows, cols, f, 1, a, b)] = sy;
  grid[grid_at(rows, cols, f, 2, a, b)] = (float)(QS_C(1) / sqrt(norm2));
}

/* One sample of a phase pair: window offsets (j − start) << 8 | (i −
 * start), the distance d0 at the phase's representative pixel, the weight
 * there and its slope (host: methods/esrrf/opencl.c, cl_candidates). */
typedef struct esrrf_cand {
  int ji;
  float d0, w0, w1;
} esrrf_cand;

#define ESRRF_LANES 8

/* One sample of a phase pair in the interior form (host: cl_vcandidates):
 * its grid position off (plane gx, relative to lane 0's macro-pixel being
 * the representative's: grid_at's offset), the representative pixel's offsets
 * (dx0, dy0), weight w0 and 1/d0 there, and their first-order slopes in
 * the pixel's centre rounding (e_x, e_y): w = w0 + wa·e_x + wb·e_y,
 * 1/d = id0 + qa·e_x + qb·e_y (methods/esrrf/fused_vec.h derives them; the
 * second-order terms are below 1e-9 relative). dx0 + e_x and dy0 + e_y are
 * the pixel's own float offsets, exactly. */
typedef struct esrrf_vcand {
  int off;
  float dx0, dy0, w0, id0, wa, wb, qa, qb;
} esrrf_vcand;

/* e = c_rep + m − c_x for pixel x = rep + m·M: how far x's float centre
 * sits from its representative's shifted by m whole pixels (exact). */
inline float esrrf_shift(int rep, int x, int mag) {
  int m = (x - rep) / mag;
  return rgc_center(rep, mag) - (rgc_center(x, mag) - (float)m);
}

/* a·b + c, fused where the device has it in hardware (the host's build
 * option), else as written; only where rounding moves the value alone. */
#ifdef ESRRF_HW_FMA
#define ESRRF_MAD(a, b, c) fma(a, b, c)
#else
#define ESRRF_MAD(a, b, c) ((a) * (b) + (c))
#endif

/* One interior sample for the lanes at grid offset base, e_y = ey and e_x
 * = ex: adds its weight to *wsum and, where the gradient points inward,
 * its convergence term w·(1 − |G × R|/|G|·(1/d)) to *rgc; `edge`: near the
 * disk's edge, lanes outside it (the reference's d <= tSO) or at d = 0
 * masked. */
inline void esrrf_term(__global const float *gx, long pstride, long base,
                       const esrrf_vcand *c, float8 ex, float ey, float tso,
                       int edge, float8 *rgc, float8 *wsum) {
  __global const float *p = gx + base + c->off;
  float8 sx = vload8(0, p), sy = vload8(0, p + pstride);
  float8 inv = vload8(0, p + 2 * pstride);
  float8 dx = c->dx0 + ex;
  float dy = c->dy0 + ey;
  /* fused where rounding only moves the value (as fused_avx2's FMA); the
   * orientation test and the distances keep the reference's arithmetic */
  float8 w = ESRRF_MAD((float8)c->wa, ex, (float8)(c->w0 + c->wb * ey));
  float8 id = ESRRF_MAD((float8)c->qa, ex, (float8)(c->id0 + c->qb * ey));
  float8 t = fabs(ESRRF_MAD(sy, dx, -(sx * dy))) * inv * id;
  int8 conv = sx * dx + sy * dy < 0;
  if (edge) {
    float8 d2 = dx * dx + dy * dy;
    int8 in = d2 != 0 && sqrt(d2) <= tso;
    w = select((float8)0, w, in);
    conv = conv & in;
  }
  *wsum += w;
  *rgc += select((float8)0, ESRRF_MAD(-w, t, w), conv);
}

/* What every pixel of a call shares. */
typedef struct rgc_call {
  __global const float *grid;
  __global const esrrf_cand *cand;
  __global const int *cand_at;
  int f, rows, cols, mag, start;
  float tso, sens;
} rgc_call;

/* RGC of pixel (x, y), one at a time: the samples follow rgc_pixel
 * (window taps in the reference's order, bounds 0 < v <= rows_m − 1, the
 * grid's clamped last index, the disk d <= tSO) with the weight
 * w0 + w1·(d − d0) (d differs from d0 by the centre's float rounding
 * only); d and dk/d correctly rounded (rsqrt's 2 ulp, amplified by TAC2,
 * cost more accuracy than its speed was worth on PoCL). */
float rgc_one(const rgc_call *k, int x, int y) {
  float xc = rgc_center(x, k->mag), yc = rgc_center(y, k->mag);
  int bx = (int)(RGC_GM * xc), by = (int)(RGC_GM * yc);
  float lim_r = (float)(k->rows * k->mag - 1);
  float lim_c = (float)(k->cols * k->mag - 1);
  int ph = (y % k->mag) * k->mag + x % k->mag;
  float rgc = 0, wsum = 0;
  for (int e = k->cand_at[ph], end = k->cand_at[ph + 1]; e < end; e++) {
    esrrf_cand c = k->cand[e];
    int hy = by + (c.ji >> 8) + k->start, hx = bx + (c.ji & 255) + k->start;
    float vy = (float)hy / RGC_GM, vx = (float)hx / RGC_GM;
    if (!(0 < vy && vy <= lim_r && 0 < vx && vx <= lim_c)) continue;
    float dx = vx - xc, dy = vy - yc;
    float d2 = dx * dx + dy * dy;
    if (d2 == 0) continue;
    float d = sqrt(d2);
    if (d > k->tso) continue;
    int a = min(hy, 2 * k->rows), b = min(hx, 2 * k->cols);
    float sx = k->grid[grid_at(k->rows, k->cols, k->f, 0, a, b)];
    float sy = k->grid[grid_at(k->rows, k->cols, k->f, 1, a, b)];
    float w = c.w0 + c.w1 * (d - c.d0);
    wsum += w;
    if (sx * dx + sy * dy < 0) {
      float dk = fabs(sy * dx - sx * dy) *
                 k->grid[grid_at(k->rows, k->cols, k->f, 2, a, b)];
      if (isnan(dk)) dk = d;
      rgc += (1 - dk / d) * w;
    }
  }
  return rgc_finish(rgc, wsum, k->sens);
}

/* RGC, times the ×M intensity when weighting, of output row y at columns
 * x_l = (k0 + l)·M + px, l < ESRRF_LANES, of frame f; margins 0. global
 * (ceil(C / LANES)·M, R·M, frames): index (g, l) is lane group g mod
 * ceil(C / LANES) of column phase g / ceil(C / LANES), and row
 * y = (l mod R)·M + l / R (so neighbouring work-items share a phase
 * pair). A group of lanes whose samples are two grid columns apart
 * (always) runs as one vector with rgc_one's arithmetic per lane: samples
 * out of bounds, lanes in the margin and lanes past the last column are
 * masked, and near the right border the lanes read the clamped last
 * column one by one. An irregular group runs rgc_one per lane. */
__kernel void esrrf_rgc(__global const float *grid, __global const float *img,
                        __global float *out, __global const esrrf_cand *cand,
                        __global const int *cand_at, int n_frames, int rows,
                        int cols, int mag, int start, float tso, float sens,
                        int margin, int weight,
                        __global const esrrf_vcand *vcand,
                        __global const int *vcand_at, int win) {
  int gid = (int)get_global_id(0), l = (int)get_global_id(1);
  int f = (int)get_global_id(2);
  if (f >= n_frames) return;
  grid += ESRRF_GUARD;
  int groups = (cols + ESRRF_LANES - 1) / ESRRF_LANES;
  int k0 = (gid % groups) * ESRRF_LANES, px = gid / groups;
  int y = (l % rows) * mag + l / rows;
  int cols_m = cols * mag, rows_m = rows * mag;
  rgc_call k = {grid, cand, cand_at, f, rows, cols, mag, start, tso, sens};
  __global float *orow = out + ((long)f * rows_m + y) * cols_m;
  __global const float *irow = img + ((long)f * rows_m + y) * cols_m;
  int ymargin = y < margin || y >= rows_m - margin;
  float yc = rgc_center(y, mag);
  int by = (int)(RGC_GM * yc);
  int lanes = min(ESRRF_LANES, cols - k0);
  /* the vector path: a full group of lanes off the margin rows whose
   * samples are two grid columns apart and never reach the clamped last
   * column; lanes in the margin columns and samples out of bounds are
   * masked (their loads stay inside the guard) */
  int x0 = k0 * mag + px;
  int fast = !ymargin;
  float xa[ESRRF_LANES];
  int ba[ESRRF_LANES];
  for (int i = 0; i < ESRRF_LANES; i++) {
    xa[i] = rgc_center(x0 + i * mag, mag);
    ba[i] = (int)(RGC_GM * xa[i]);
  }
  float8 xc = vload8(0, xa);
  int8 bx = vload8(0, ba);
  if (fast) {
    /* the window's first tap stays within the guard before the grid */
    fast = bx.s0 + start >= -ESRRF_GUARD &&
           all(bx - bx.s0 == (int8)(0, 2, 4, 6, 8, 10, 12, 14));
  }
  if (!fast) {
    for (int i = 0; i < lanes; i++) {
      int x = (k0 + i) * mag + px;
      if (ymargin || x < margin || x >= cols_m - margin)
        orow[x] = 0.0f;
      else
        orow[x] = weight ? rgc_one(&k, x, y) * irow[x] : rgc_one(&k, x, y);
    }
    return;
  }
  int ph = (y % mag) * mag + px;
  int hw = cols + 1;
  __global const float *gx = grid + grid_at(rows, cols, f, 0, 0, 0);
  long pstride = (long)(2 * rows + 1) * 2 * hw;
  float8 rgc = 0, wsum = 0;
  float8 fbx = convert_float8(bx);
  float lim_r = (float)(rows_m - 1), lim_c = (float)(cols_m - 1);
  /* The interior: every window tap of every lane in bounds and below the
   * clamped last row and column, the lanes' windows where the
   * representatives' are (two grid columns / rows per macro-pixel). Then
   * no bounds, no square root and no division per sample: the sure
   * candidates (inside the disk for every pixel of the pair) add their
   * terms unmasked, those near the disk's edge take the exact distance
   * and the reference's test. */
  int rep_y = y % mag, rep_x = px; /* cl_vcandidates' representatives */
  int by_rep = (int)(RGC_GM * rgc_center(rep_y, mag));
  int bx_rep = (int)(RGC_GM * rgc_center(rep_x, mag));
  int hy_lo = by + start, hy_hi = hy_lo + win - 1;
  int hx_lo = bx.s0 + start, hx_hi = bx.s7 + start + win - 1;
  int interior = lanes == ESRRF_LANES && hy_lo >= 1 && hy_hi <= 2 * rows &&
                 (float)hy_hi / RGC_GM <= lim_r && hx_lo >= 1 &&
                 hx_hi <= 2 * cols && (float)hx_hi / RGC_GM <= lim_c &&
                 by - by_rep == 2 * ((y - rep_y) / mag) &&
                 bx.s0 - bx_rep == 2 * ((x0 - rep_x) / mag);
  if (interior) {
    float ey = esrrf_shift(rep_y, y, mag);
    float ea[ESRRF_LANES];
    for (int i = 0; i < ESRRF_LANES; i++)
      ea[i] = esrrf_shift(rep_x, x0 + i * mag, mag);
    float8 ex = vload8(0, ea);
    /* lane 0's macro-pixel and row from the representative's */
    long base = 4L * hw * ((y - rep_y) / mag) + (x0 - rep_x) / mag;
    int v0 = vcand_at[2 * ph], v1 = vcand_at[2 * ph + 1];
    int v2 = vcand_at[2 * ph + 2];
    for (int e = v0; e < v1; e++) {
      esrrf_vcand c = vcand[e];
      esrrf_term(gx, pstride, base, &c, ex, ey, tso, 0, &rgc, &wsum);
    }
    for (int e = v1; e < v2; e++) {
      esrrf_vcand c = vcand[e];
      esrrf_term(gx, pstride, base, &c, ex, ey, tso, 1, &rgc, &wsum);
    }
  }
  for (int e = cand_at[ph], stop = interior ? 0 : cand_at[ph + 1]; e < stop;
       e++) {
    esrrf_cand c = cand[e];
    int hy = by + (c.ji >> 8) + start, i = (c.ji & 255) + start;
    float vy = (float)hy / RGC_GM;
    if (!(0 < vy && vy <= lim_r)) continue;
    float dy = vy - yc;
    float8 vx = (fbx + (float)i) / RGC_GM;
    float8 dx = vx - xc;
    int hx0 = bx.s0 + i;
    long row = (long)min(hy, 2 * rows) * 2 * hw;
    float8 sx, sy, inv;
    if (hx0 + 2 * (ESRRF_LANES - 1) <= 2 * cols) {
      long at = row + (hx0 & 1) * hw + (hx0 >> 1);
      sx = vload8(0, gx + at);
      sy = vload8(0, gx + pstride + at);
      inv = vload8(0, gx + 2 * pstride + at);
    } else { /* lanes past the last column read its clamped samples */
      float ga[ESRRF_LANES], gb[ESRRF_LANES], gc[ESRRF_LANES];
      for (int q = 0; q < ESRRF_LANES; q++) {
        int b = min(hx0 + 2 * q, 2 * cols);
        long at = row + (b & 1) * hw + (b >> 1);
        ga[q] = gx[at];
        gb[q] = gx[pstride + at];
        gc[q] = gx[2 * pstride + at];
      }
      sx = vload8(0, ga);
      sy = vload8(0, gb);
      inv = vload8(0, gc);
    }
    float8 d2 = dx * dx + dy * dy;
    float8 d = sqrt(d2);
    int8 in = d2 != 0 && d <= tso && 0 < vx && vx <= lim_c;
    float8 w = select((float8)0, c.w0 + c.w1 * (d - c.d0), in);
    wsum += w;
    float8 dk = fabs(sy * dx - sx * dy) * inv;
    dk = select(dk, d, isnan(dk));
    int8 conv = in && sx * dx + sy * dy < 0;
    rgc += select((float8)0, (1 - dk / d) * w, conv);
  }
  float ra[ESRRF_LANES], wa[ESRRF_LANES];
  vstore8(rgc, 0, ra);
  vstore8(wsum, 0, wa);
  for (int i = 0; i < lanes; i++) {
    int x = x0 + i * mag;
    if (x < margin || x >= cols_m - margin) {
      orow[x] = 0.0f;
      continue;
    }
    float v = rgc_finish(ra[i], wa[i], sens);
    orow[x] = weight ? v * irow[x] : v;
  }
}

/* The ×M Catmull-Rom intensity, separable step 1: for output row y and
 * input column c, the row taps' pixels times their weights. global (C,
 * R·M, frames); taps: the output rows' taps, then the output columns'. */
__kernel void esrrf_magv(__global const float *in, __global float *vs,
                         int n_frames, int rows, int cols,
                         __global const esrrf_taps *taps) {
  int c = (int)get_global_id(0), y = (int)get_global_id(1);
  int f = (int)get_global_id(2);
  if (f >= n_frames) return;
  int rows_m = (int)get_global_size(1);
  const __global float *img = in + (long)f * rows * cols + c;
  esrrf_taps rt = taps[y];
  float p = 0;
  for (int i = 0; i < 4; i++)
    p = p + img[(long)rt.at[i] * cols] * rt.w[i];
  vs[((long)f * rows_m + y) * cols + c] = p;
}

/* Step 2: pixel (x, y) of frame f from the column sums, summed in
 * cr_apply's order (no cubic, no division per pixel). global (C·M, R·M,
 * frames). */
__kernel void esrrf_mag(__global const float *vs, __global float *out,
                        int n_frames, int rows, int cols,
                        __global const esrrf_taps *taps) {
  int x = (int)get_global_id(0), y = (int)get_global_id(1);
  int f = (int)get_global_id(2);
  if (f >= n_frames) return;
  int cols_m = (int)get_global_size(0), rows_m = (int)get_global_size(1);
  const __global float *p = vs + ((long)f * rows_m + y) * cols;
  esrrf_taps ct = taps[rows_m + x];
  float q = 0;
  for (int j = 0; j < 4; j++)
    q = q + p[ct.at[j]] * ct.w[j];
  (void)rows;
  out[((long)f * rows_m + y) * cols_m + x] = q;
}
