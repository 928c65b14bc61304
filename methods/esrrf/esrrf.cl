/* esrrf.cl — eSRRF's chain on the device without the ×2M gradient images
 * (the host file is methods/esrrf/opencl.c), with the structure of the
 * `fused` CPU implementations. RGC reads the ×2M Catmull-Rom gradients
 * only at half-pixel positions, so esrrf_grid computes exactly those
 * samples from the raw frames, Roberts cross included, on a compact grid
 * of (2R + 1) rows, and stores the unit gradient G/|G| (no square root or
 * division per sample later). esrrf_rgc then takes every output pixel's
 * samples from the candidate list of its phase pair (row mod M, column
 * mod M), built once per call on the host with the weight, 1/d and their
 * first-order slopes in the pixel's centre rounding (fused_vec.h's model):
 * no exp, pow, square root or division per sample, except one square root
 * for the few candidates at the disk's edge. A work-item computes two
 * vectors of ESRRF_LANES pixels of one phase pair side by side (columns x,
 * x + M, x + 2M, ...; the two vectors share each candidate's constants,
 * as fused_vec's paired groups), which share the candidate list, its loop
 * count and every branch, and whose gradient samples, at grid columns two
 * apart, are
 * contiguous in the grid's layout (rows split by column parity, padded):
 * one vector load per plane and candidate, the same straight-line code for
 * every group, borders included (masks, not branches). That is what a CPU
 * device's SIMD units want, and a GPU runs the lanes as registers of one
 * thread (or the work-items of a phase as a warp, which then share the
 * candidate loads). The ×M intensity's second separable step runs in the
 * same kernel on the lanes it weights: no ×M image in device memory.
 * The per-pixel math is the C code's: math/roberts.h, math/catmull_rom.h,
 * math/rgc.h, and the fused paths' model math/rgc_fused.h. */
#include "methods/shift_magnify/catmull_rom.h"
#include "methods/rgc/rgc_math.h"
#include "methods/rgc/rgc_fused.h"
#include "methods/roberts_cross/roberts.h"

/* No contractions but where ESRRF_MAD says so: the separable sums round as
 * the C code does. */
#pragma OPENCL FP_CONTRACT OFF

/* Pixels a work-item of esrrf_rgc computes (4, 8 or 16: the host's
 * build option), and the padding of the per-lane tables (opencl.c's
 * ESRRF_CL_MAX_LANES). */
#ifndef ESRRF_LANES
#define ESRRF_LANES 8
#endif
#define ESRRF_PAD 32
#define ESRRF_CAT_(a, b) a##b
#define ESRRF_CAT(a, b) ESRRF_CAT_(a, b)
#define floatv ESRRF_CAT(float, ESRRF_LANES)
#define intv ESRRF_CAT(int, ESRRF_LANES)
#define vloadv ESRRF_CAT(vload, ESRRF_LANES)
#define vstorev ESRRF_CAT(vstore, ESRRF_LANES)
#define convert_floatv ESRRF_CAT(convert_float, ESRRF_LANES)

/* The grid's layout: per frame two planes (Gx/|G|, Gy/|G|; 0 where G = 0)
 * of 2R + 1 rows; a row is two parts of `gw` floats, even columns then
 * odd ones: slot s of part p holds grid column b = 2(s − lp) + p, clamped
 * to [0, 2C] (lp slots on the left for taps left of the image, which the
 * kernel masks; on the right copies of the clamped last column, which the
 * reference reads there, for the lanes and taps past the last column).
 * Host: methods/esrrf/opencl.c, cl_grid_layout. */

/* Catmull-Rom taps of one row or column (host: cl_taps_of in
 * methods/esrrf/opencl.c): four taps, those past the axis's valid ones
 * with weight 0 at a valid index, so every sum is four straight-line
 * multiply-adds (what PoCL's work-group vectoriser wants) and adds only
 * exact zeros to the terms the valid taps give, in cr_apply's order. */
typedef struct esrrf_taps {
  int at[4];
  float w[4];
} esrrf_taps;

/* The four taps of t over p (stride 1), in cr_apply's order. */
inline float esrrf_tapsum(const __global float *p, const esrrf_taps *t) {
  QS_ACC q = 0;
  for (int j = 0; j < 4; j++)
    q = q + (QS_ACC)p[t->at[j]] * t->w[j];
  return (float)q;
}

/* The grid's column sums, separable step 1: for grid row a and input
 * columns c0 .. c0 + ESRRF_LANES − 1, both Roberts gradients of the row
 * taps' pixels times their weights (cr_vsum's order), one vector of
 * columns per work-item where the chunk is whole and away from column 0
 * (whose left neighbour is clamped), else column by column: the same sums
 * either way. vs holds per frame two planes (column, row gradient) of
 * (2R + 1) × C. global (ceil(C / ESRRF_LANES), 2R + 1, frames); taps: the
 * grid rows' taps, then the grid columns'. */
__kernel void esrrf_gvsum(__global const float *in, __global float *vs,
                          int n_frames, int rows, int cols,
                          __global const esrrf_taps *taps) {
  int c0 = (int)get_global_id(0) * ESRRF_LANES, a = (int)get_global_id(1);
  int f = (int)get_global_id(2);
  if (f >= n_frames) return;
  const __global float *img = in + (long)f * rows * cols;
  esrrf_taps rt = taps[a];
  long plane = (long)(2 * rows + 1) * cols;
  __global float *o = vs + (long)f * 2 * plane + (long)a * cols + c0;
  if (c0 >= 1 && c0 + ESRRF_LANES <= cols) {
    floatv pc = 0, pr = 0;
    for (int i = 0; i < 4; i++) {
      int r = rt.at[i], r0 = r > 0 ? r - 1 : 0;
      const __global float *row = img + (long)r * cols + c0;
      const __global float *prev = img + (long)r0 * cols + c0;
      floatv up = vloadv(0, prev), left = vloadv(0, row - 1);
      floatv here = vloadv(0, row), diag = vloadv(0, prev - 1);
      pc = pc + RC_COL(up, left, here, diag) * rt.w[i];
      pr = pr + RC_ROW(up, left, here, diag) * rt.w[i];
    }
    vstorev(pc, 0, o);
    vstorev(pr, 0, o + plane);
    return;
  }
  for (int c = c0; c < min(cols, c0 + ESRRF_LANES); c++) {
    QS_ACC pc = 0, pr = 0; /* both gradients from one pass over the taps */
    for (int i = 0; i < 4; i++) {
      float gc, gr;
      rc_at(img, cols, rt.at[i], c, &gc, &gr);
      pc = pc + (QS_ACC)gc * rt.w[i];
      pr = pr + (QS_ACC)gr * rt.w[i];
    }
    o[c - c0] = (float)pc;
    o[c - c0 + plane] = (float)pr;
  }
}

/* Slots [s0, s0 + ESRRF_LANES) of parity part p of grid row a of frame
 * f, separable step 2: the ×2M Catmull-Rom samples of both Roberts
 * gradients at those half-pixel columns, from the column sums, as the
 * unit gradient, one vector per plane. stab (host: cl_slot_taps): per
 * part, the taps of the (clamped) column each slot holds, eight planes of
 * gw floats: the four input columns (exact), then the four weights; then
 * per chunk (this work-item's index 0) its kind, decided on the host
 * (vector tests cost more than the sums in PoCL's build): 1 where the
 * chunk's columns are consecutive input columns for every tap (all but
 * the chunks at the image's edges): four vector multiply-adds over
 * contiguous column sums; 2 where every slot holds the same column (the
 * padding): one sum for all; 0 lane by lane. Either
 * way each lane sums as esrrf_tapsum (the same terms in the same order),
 * and the padding slots hold their clamped column's value without a
 * second pass. gw is a multiple of ESRRF_LANES (opencl.c,
 * cl_grid_layout). global (2·gw / ESRRF_LANES, 2R + 1, frames). */
__kernel void esrrf_grid(__global const float *vs, __global float *grid,
                         int n_frames, int rows, int cols,
                         __global const float *stab, int gw) {
  int ch = (int)get_global_id(0), a = (int)get_global_id(1);
  int f = (int)get_global_id(2);
  if (f >= n_frames) return;
  int chunks = gw / ESRRF_LANES, part = ch / chunks;
  int s0 = (ch % chunks) * ESRRF_LANES;
  long plane = (long)(2 * rows + 1) * cols;
  const __global float *pc = vs + (long)f * 2 * plane + (long)a * cols;
  const __global float *t = stab + (long)part * 8 * gw + s0;
  int kind = (int)stab[16L * gw + ch];
  const floatv zero = 0;
  floatv sx = zero, sy = zero;
  if (kind == 1) { /* consecutive columns */
    for (int j = 0; j < 4; j++) {
      const __global float *q = pc + (int)t[j * gw];
      floatv w = vloadv(0, t + (4 + j) * gw);
      sx = sx + vloadv(0, q) * w;
      sy = sy + vloadv(0, q + plane) * w;
    }
  } else if (kind == 2) { /* padding past the last column: one column */
    float x = 0, y = 0;
    for (int j = 0; j < 4; j++) {
      int c = (int)t[j * gw];
      x = x + pc[c] * t[(4 + j) * gw];
      y = y + pc[c + plane] * t[(4 + j) * gw];
    }
    sx = x;
    sy = y;
  } else {
    float xa[ESRRF_LANES], ya[ESRRF_LANES];
    for (int i = 0; i < ESRRF_LANES; i++) {
      float x = 0, y = 0;
      for (int j = 0; j < 4; j++) {
        int c = (int)t[j * gw + i];
        x = x + pc[c] * t[(4 + j) * gw + i];
        y = y + pc[c + plane] * t[(4 + j) * gw + i];
      }
      xa[i] = x;
      ya[i] = y;
    }
    sx = vloadv(0, xa);
    sy = vloadv(0, ya);
  }
  floatv inv = 1.0f / sqrt(sx * sx + sy * sy);
  intv nz = (sx != zero) | (sy != zero);
  long gplane = (long)(2 * rows + 1) * 2 * gw;
  __global float *o =
      grid + (long)f * 2 * gplane + (long)a * 2 * gw + (long)part * gw + s0;
  vstorev(select(zero, sx * inv, nz), 0, o);
  vstorev(select(zero, sy * inv, nz), 0, o + gplane);
}

/* One candidate sample of a phase pair (host: cl_vcandidates), for the
 * phase's first pixel, its representative (row py, column px): the raw
 * grid row and column of the sample (row = by + j, col = bx + i), its
 * offset row·(floats per grid row) + slot in a grid plane, the x offset
 * dx0, and the first-order slopes of the weight and of 1/d in the pixel's
 * centre rounding e_x: w = w0 + wa·e_x, 1/d = id0 + qa·e_x (the
 * second-order terms are below 1e-9 relative). The row's parts, its y
 * offset dy and w0, id0 (with their e_y slopes folded in), come from the
 * per-row table (host: cl_row_tables), shared by every work-item of the
 * row. A pixel m macro-pixels further along an axis reads the grid 2m
 * half-pixels further, and dx0 + e_x, dy are its own float offsets (up to
 * an ulp of their rounding). */
typedef struct esrrf_vcand {
  int row, col, off;
  float dx0, wa, qa;
} esrrf_vcand;

/* a·b + c, fused where the device has it in hardware (the host's build
 * option), else as written; only where rounding moves the value alone. */
#ifdef ESRRF_HW_FMA
#define ESRRF_MAD(a, b, c) fma(a, b, c)
#else
#define ESRRF_MAD(a, b, c) ((a) * (b) + (c))
#endif

/* What the lanes of one work-item share. */
typedef struct esrrf_lanes {
  __global const float *gx; /* plane Gx/|G| of the frame, lane 0's slot */
  __global const float *gxr; /* the same, the row's first grid row */
  __global const float *vr; /* the row's candidate values (esrrf_rgc) */
  long rstride, pstride;    /* floats per grid row, per plane */
  int dy_rows, rows2;       /* 2·(macro-pixel row), 2R */
  int row_hi;               /* the last raw grid row in bounds */
  float tso;
  floatv ex, ex2;           /* both vectors' lanes' e_x */
  intv lo, hi, lo2, hi2;    /* both vectors' lanes' candidate columns in
                             * bounds (esrrf_col_range) */
} esrrf_lanes;

/* Lane l (raw column offset 2·k from its representative) takes a
 * candidate of column c where the reference's v = (c + 2k) / 2 has
 * 0 < v <= C·M − 1: in integers (v's float is exact), c in
 * [1 − 2k, 2(C·M − 1) − 2k]. A vector with no lane near a border gets
 * the whole int range, so its masks are all true. */
inline void esrrf_col_range(int k0, int near, int cols_m, intv *lo,
                            intv *hi) {
  int a[ESRRF_LANES], b[ESRRF_LANES];
  for (int i = 0; i < ESRRF_LANES; i++) {
    a[i] = near ? 1 - 2 * (k0 + i) : INT_MIN;
    b[i] = near ? 2 * (cols_m - 1) - 2 * (k0 + i) : INT_MAX;
  }
  *lo = vloadv(0, a);
  *hi = vloadv(0, b);
}

/* One candidate's term for one vector of lanes (esrrf_terms' body). */
#define ESRRF_TERM(P, EX, LO, HI, RGC, WSUM)                                  \
  do {                                                                        \
    floatv nx = vloadv(0, P), ny = vloadv(0, (P) + k->pstride);               \
    floatv dx = c.dx0 + (EX);                                                 \
    floatv w = RGC_LIN((floatv)w0, (floatv)c.wa, EX, ESRRF_MAD);              \
    floatv id = RGC_LIN((floatv)id0, (floatv)c.qa, EX, ESRRF_MAD);            \
    intv conv = RGC_UNIT_DOT(nx, ny, dx, dy, ESRRF_MAD) < zero;               \
    if (edge) {                                                               \
      floatv d2 = dx * dx + dy * dy;                                          \
      intv in = (d2 != zero) & (sqrt(d2) <= k->tso);                          \
      w = select(zero, w, in);                                                \
      conv &= in;                                                             \
    }                                                                         \
    if (border) {                                                             \
      intv in = ((intv)c.col >= (LO)) & ((intv)c.col <= (HI));                \
      w = select(zero, w, in);                                                \
      conv &= in;                                                             \
    }                                                                         \
    WSUM += w;                                                                \
    RGC += select(zero, RGC_UNIT_TERM(nx, ny, dx, dy, w, id, ESRRF_MAD, fabs), \
                  conv);                                                      \
  } while (0)

/* Adds the candidates [e0, e1) to *rgc (the convergence term
 * w·(1 − |Ĝ × R|·(1/d)) where Ĝ·R < 0) and *wsum (the weight). edge:
 * near the disk's edge, lanes outside it (the reference's d <= tSO) or at
 * d = 0 masked; border: candidates whose row is out of bounds skipped,
 * lanes whose column is out of bounds masked (integer ranges per lane,
 * esrrf_col_range: no branch in the loop body, so the masks stay in
 * vector registers). Always inlined with constant flags, so that each of the four loops is
 * its own straight-line code with the sums in registers; masks combine
 * with & (not &&, which the compiler narrows to bytes and back). */
__attribute__((always_inline)) inline void
esrrf_terms(const esrrf_lanes *k, __global const esrrf_vcand *cd, int e0,
            int e1, const int edge, const int border, floatv *rgc_out,
            floatv *wsum_out) {
  floatv rgc = rgc_out[0], wsum = wsum_out[0];
  floatv rgc2 = rgc_out[1], wsum2 = wsum_out[1];
  const floatv zero = 0;
  for (int e = e0; e < e1; e++) {
    esrrf_vcand c = cd[e];
    __global const float *p = k->gxr + c.off;
    if (border) { /* the reference's 0 < hy / 2 <= R·M − 1, exact */
      int hy = c.row + k->dy_rows;
      if (hy < 1 || hy > k->row_hi) continue;
      p = k->gx + min(hy, k->rows2) * k->rstride + (c.off - c.row * k->rstride);
    }
    __global const float *r = k->vr + 3 * e;
    float dy = r[0], w0 = r[1], id0 = r[2];
    ESRRF_TERM(p, k->ex, k->lo, k->hi, rgc, wsum);
    ESRRF_TERM(p + ESRRF_LANES, k->ex2, k->lo2, k->hi2, rgc2, wsum2);
  }
  rgc_out[0] = rgc;
  wsum_out[0] = wsum;
  rgc_out[1] = rgc2;
  wsum_out[1] = wsum2;
}

/* Writes the lanes' pixels x0 + i·M, i < lanes (none if lanes <= 0):
 * rgc_finish on the lanes (the ratio where Wsum > 0, then negatives to 0,
 * or the power, sens > 1, lane by lane), times the intensity when
 * weighting, 0 in the margin columns. ln: the lanes' column of the lane
 * table (planes lplane apart); ctaps: the output columns' intensity taps. */
__attribute__((always_inline)) inline void
esrrf_store(floatv rgc, floatv wsum, float sens, int weight,
            __global const float *irow, __global const float *ln,
            long lplane, __global const esrrf_taps *ctaps,
            __global float *orow, int x0, int lanes, int mag, int margin,
            int cols_m) {
  if (lanes <= 0) return;
  const floatv zero = 0;
  floatv v = select(zero, rgc / wsum, wsum > zero);
  float va[ESRRF_LANES];
  if (sens > 1) {
    float ra[ESRRF_LANES], wa[ESRRF_LANES];
    vstorev(rgc, 0, ra);
    vstorev(wsum, 0, wa);
    for (int i = 0; i < ESRRF_LANES; i++)
      va[i] = rgc_finish(ra[i], wa[i], sens);
    v = vloadv(0, va);
  } else {
    v = select(v, zero, v < zero);
  }
  int regular = 0;
  if (weight) {
    regular = ln[6 * lplane] != 0; /* consecutive first columns, all valid */
    if (regular) {
      __global const float *p = irow + (int)ln[5 * lplane];
      floatv q = zero;
      for (int j = 0; j < 4; j++)
        q = q + vloadv(0, p + j) * vloadv(0, ln + (1 + j) * lplane);
      v = v * q;
    }
  }
  vstorev(v, 0, va);
  for (int i = 0; i < min(lanes, ESRRF_LANES); i++) {
    int x = x0 + i * mag;
    float o = 0.0f;
    if (x >= margin && x < cols_m - margin) {
      o = va[i];
      if (weight && !regular) {
        esrrf_taps t = ctaps[x];
        o = o * esrrf_tapsum(irow, &t);
      }
    }
    orow[x] = o;
  }
}

/* RGC, times the ×M intensity when weighting, of output row y at columns
 * x_l = (k0 + l)·M + px, l < 2·ESRRF_LANES (two vectors), of frame f;
 * margins 0. global (ceil(C / (2·LANES))·M, R·M, frames): index (g, l) is
 * lane group g mod ceil(C / (2·LANES)) of column phase
 * g / ceil(C / (2·LANES)), and row y = l: work-items along dimension 0
 * share a row (and in runs of the groups, a phase pair: a GPU's warp
 * shares the candidate loads and the loop count), and neighbouring rows
 * read nearly the same grid rows, so that a work-group's share of the
 * grid stays in cache at large frames. Every pixel of a phase pair reads the grid 2m half-pixels from
 * its representative's m macro-pixels away: its centre (x + 0.5)/M is
 * k + (px + 0.5)/M up to a rounding smaller than 1/(2M) below
 * RGC_MAX_SIDE, which never moves 2·centre across an integer (that part
 * is an integer or at least 1/M from one). lane: per column phase px and
 * its pixels k = 0, 1, ... (padded to a multiple of ESRRF_PAD), planes
 * e_x (rgc_shift's, made on the host in the C code's rounding), the four
 * intensity weights, the first input column (−1: fewer than four
 * valid) and whether the vector of lanes from k has consecutive valid
 * first columns (opencl.c, cl_lane_table). The intensity: the output
 * columns' taps over the row's column sums (ivs, esrrf_magv), as vectors
 * where the lanes' first columns are consecutive (the same sums in the
 * same order as esrrf_tapsum), else from itaps (after the R·M rows'
 * taps). */
__kernel void esrrf_rgc(__global const float *grid, __global const float *ivs,
                        __global const esrrf_taps *itaps,
                        __global float *out,
                        __global const esrrf_vcand *vcand,
                        __global const int *vcand_at,
                        __global const float *lane, int n_frames, int rows,
                        int cols, int mag, int start, int win, float tso,
                        float sens, int margin, int weight, int gw,
                        __global const float *vrow,
                        __global const int *vcls) {
  int gid = (int)get_global_id(0), l = (int)get_global_id(1);
  int f = (int)get_global_id(2);
  if (f >= n_frames) return;
  int groups = (cols + 2 * ESRRF_LANES - 1) / (2 * ESRRF_LANES);
  int k0 = (gid % groups) * 2 * ESRRF_LANES, px = gid / groups;
  int y = l;
  int cols_m = cols * mag, rows_m = rows * mag;
  __global float *orow = out + ((long)f * rows_m + y) * cols_m;
  int lanes = min(2 * ESRRF_LANES, cols - k0), x0 = k0 * mag + px;
  if (y < margin || y >= rows_m - margin) {
    for (int i = 0; i < lanes; i++)
      orow[x0 + i * mag] = 0.0f;
    return;
  }
  int py = y % mag, ph = py * mag + px;
  esrrf_lanes k;
  long gplane = (long)(2 * rows + 1) * 2 * gw;
  k.rstride = 2L * gw;
  k.pstride = gplane;
  k.gx = grid + (long)f * 2 * gplane + k0;
  k.dy_rows = 2 * (y / mag);
  k.rows2 = 2 * rows;
  k.row_hi = 2 * (rows_m - 1);
  k.tso = tso;
  k.gxr = k.gx + k.dy_rows * k.rstride;
  k.vr = vrow + vcls[y];
  long lplane = (long)mag * ((cols + ESRRF_PAD - 1) / ESRRF_PAD) * ESRRF_PAD;
  __global const float *ln =
      lane + px * ((cols + ESRRF_PAD - 1) / ESRRF_PAD) * ESRRF_PAD + k0;
  k.ex = vloadv(0, ln);
  k.ex2 = vloadv(1, ln);
  /* every tap of every lane in bounds: straight-line loops; else the
   * rows checked per candidate, and the columns masked in the vectors
   * whose valid lanes have taps out of bounds (lanes past the image are
   * never stored; at the left edge only the first vector has such lanes,
   * the second's masks are then all true) */
  int by = (int)(RGC_GM * rgc_center(y, mag));
  int bx = (int)(RGC_GM * rgc_center(x0, mag));
  int hy_hi = by + start + win - 1;
  int rowb = !(by + start >= 1 && hy_hi <= 2 * rows && hy_hi <= k.row_hi);
  int near[2];
  for (int v = 0; v < 2; v++) {
    int last = min(lanes, (v + 1) * ESRRF_LANES) - 1;
    int hx_lo = bx + 2 * v * ESRRF_LANES + start;
    int hx_hi = bx + 2 * last + start + win - 1;
    near[v] = last >= v * ESRRF_LANES &&
              !(hx_lo >= 1 && hx_hi <= 2 * (cols_m - 1));
  }
  esrrf_col_range(k0, near[0], cols_m, &k.lo, &k.hi);
  esrrf_col_range(k0 + ESRRF_LANES, near[1], cols_m, &k.lo2, &k.hi2);
  int v0 = vcand_at[2 * ph], v1 = vcand_at[2 * ph + 1];
  int v2 = vcand_at[2 * ph + 2];
  floatv rgcs[2] = {0, 0}, wsums[2] = {0, 0};
  if (rowb || near[0] || near[1]) {
    esrrf_terms(&k, vcand, v0, v1, 0, 1, rgcs, wsums);
    esrrf_terms(&k, vcand, v1, v2, 1, 1, rgcs, wsums);
  } else {
    esrrf_terms(&k, vcand, v0, v1, 0, 0, rgcs, wsums);
    esrrf_terms(&k, vcand, v1, v2, 1, 0, rgcs, wsums);
  }
  __global const float *irow = ivs + ((long)f * rows_m + y) * cols;
  esrrf_store(rgcs[0], wsums[0], sens, weight, irow, ln, lplane,
              itaps + rows_m, orow, x0, lanes, mag, margin, cols_m);
  esrrf_store(rgcs[1], wsums[1], sens, weight, irow, ln + ESRRF_LANES, lplane,
              itaps + rows_m, orow, x0 + ESRRF_LANES * mag,
              lanes - ESRRF_LANES, mag, margin, cols_m);
}

/* The ×M Catmull-Rom intensity, separable step 1: for output row y and
 * input columns c0 .. c0 + ESRRF_LANES − 1, the row taps' pixels times
 * their weights, one vector per work-item where the chunk is whole, else
 * column by column, in the same order (step 2 is in esrrf_rgc).
 * global (ceil(C / ESRRF_LANES), R·M, frames); taps: the output rows'
 * taps. */
__kernel void esrrf_magv(__global const float *in, __global float *vs,
                         int n_frames, int rows, int cols,
                         __global const esrrf_taps *taps) {
  int c0 = (int)get_global_id(0) * ESRRF_LANES, y = (int)get_global_id(1);
  int f = (int)get_global_id(2);
  if (f >= n_frames) return;
  int rows_m = (int)get_global_size(1);
  const __global float *img = in + (long)f * rows * cols + c0;
  __global float *o = vs + ((long)f * rows_m + y) * cols + c0;
  esrrf_taps rt = taps[y];
  if (c0 + ESRRF_LANES <= cols) {
    floatv p = 0;
    for (int i = 0; i < 4; i++)
      p = p + vloadv(0, img + (long)rt.at[i] * cols) * rt.w[i];
    vstorev(p, 0, o);
    return;
  }
  for (int c = 0; c < cols - c0; c++) {
    float p = 0;
    for (int i = 0; i < 4; i++)
      p = p + img[(long)rt.at[i] * cols + c] * rt.w[i];
    o[c] = p;
  }
}
