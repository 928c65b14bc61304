/* esrrf.cl — eSRRF's chain on the device without the ×2M gradient images
 * (the host file is methods/esrrf/opencl.c), with the structure of the
 * `fused` CPU implementation. RGC reads the ×2M Catmull-Rom gradients only
 * at half-pixel positions, so esrrf_grid computes exactly those samples
 * from the raw frames, Roberts cross included, as cells (gx, gy, 1/|G|)
 * of a compact (2R+1)·(2C+1) grid (16 bytes a cell and frame instead of
 * 2·4·(2RM)·(2CM) bytes). esrrf_rgc then takes every output pixel's
 * samples from the candidate list of its phase pair (row mod M, column
 * mod M), built once per call on the host with the weight and its slope
 * at the phase's distance: no exp, pow or division per sample, and the
 * work-items of a work-group share one phase, so they walk one list in
 * step (what a GPU's SIMD lanes and PoCL's work-group vectoriser want).
 * The per-pixel math is the C code's: math/roberts.h, math/catmull_rom.h,
 * math/rgc.h. */
#include "math/catmull_rom.h"
#include "math/rgc.h"
#include "math/roberts.h"

/* Grid point (b, a) of frame f: the ×2M Catmull-Rom samples of both
 * Roberts gradients at half-pixel index (a, b), the last row/column at the
 * reference's clamped index. global (2·cols + 1, 2·rows + 1, frames). The
 * sums run in cr_apply's order over gradients computed where the taps
 * fall. */
__kernel void esrrf_grid(__global const float *in, __global float4 *grid,
                         int n_frames, int rows, int cols, int mag) {
  int b = (int)get_global_id(0), a = (int)get_global_id(1);
  int f = (int)get_global_id(2);
  if (f >= n_frames) return;
  int gw = (int)get_global_size(0), gh = (int)get_global_size(1);
  const __global float *img = in + (long)f * rows * cols;
  float m2 = (float)(2 * mag);
  cr_taps rt, ct;
  if (a < gh - 1)
    cr_taps_half(a, rows, &rt);
  else
    cr_taps_at(cr_source(2 * rows * mag - 1, m2, 0.0f), rows, &rt);
  if (b < gw - 1)
    cr_taps_half(b, cols, &ct);
  else
    cr_taps_at(cr_source(2 * cols * mag - 1, m2, 0.0f), cols, &ct);
  QS_ACC qc = 0, qr = 0;
  for (int j = 0; j < ct.n; j++) {
    QS_ACC pc = 0, pr = 0;
    for (int i = 0; i < rt.n; i++) {
      float gc, gr;
      rc_at(img, cols, rt.first + i, ct.first + j, &gc, &gr);
      pc = pc + (QS_ACC)gc * rt.w[i];
      pr = pr + (QS_ACC)gr * rt.w[i];
    }
    qc = qc + pc * ct.w[j];
    qr = qr + pr * ct.w[j];
  }
  float sx = (float)qc, sy = (float)qr;
  QS_ACC norm2 = (QS_ACC)(sx * sx + sy * sy);
  grid[((long)f * gh + a) * gw + b] =
      (float4)(sx, sy, (float)(QS_C(1) / sqrt(norm2)), 0.0f);
}

/* One sample of a phase pair: window offsets (j − start) << 8 | (i −
 * start), the distance d0 at the phase's representative pixel, the weight
 * there and its slope (host: methods/esrrf/opencl.c, cl_candidates). */
typedef struct esrrf_cand {
  int ji;
  float d0, w0, w1;
} esrrf_cand;

/* RGC of output pixel (x, y) of frame f, times the ×M intensity when
 * weighting; margins 0. global (C·M, R·M, frames): index (k, l) is pixel
 * x = (k mod C)·M + k / C, y = (l mod R)·M + l / R, so a run of C
 * consecutive work-items is one column phase and a row of work-items one
 * row phase. The samples follow rgc_pixel (window taps in the reference's
 * order, bounds 0 < v <= rows_m − 1, the grid's clamped last index, the
 * disk d <= tSO) with the weight w0 + w1·(d − d0) (d differs from d0 by
 * the centre's float rounding only) and 1/d from rsqrt. */
__kernel void esrrf_rgc(__global const float4 *grid,
                        __global const float *img, __global float *out,
                        __global const esrrf_cand *cand,
                        __global const int *cand_at, int n_frames, int rows,
                        int cols, int mag, int start, float tso, float sens,
                        int margin, int weight) {
  int k = (int)get_global_id(0), l = (int)get_global_id(1);
  int f = (int)get_global_id(2);
  if (f >= n_frames) return;
  int x = (k % cols) * mag + k / cols, y = (l % rows) * mag + l / rows;
  int cols_m = cols * mag, rows_m = rows * mag;
  long at = ((long)f * rows_m + y) * cols_m + x;
  if (y < margin || y >= rows_m - margin || x < margin ||
      x >= cols_m - margin) {
    out[at] = 0.0f;
    return;
  }
  float xc = rgc_center(x, mag), yc = rgc_center(y, mag);
  int bx = (int)(RGC_GM * xc), by = (int)(RGC_GM * yc);
  int gw = 2 * cols + 1;
  float lim_r = (float)(rows_m - 1), lim_c = (float)(cols_m - 1);
  __global const float4 *g = grid + (long)f * (2 * rows + 1) * gw;
  int ph = (y % mag) * mag + x % mag;
  float rgc = 0, wsum = 0;
  for (int e = cand_at[ph], end = cand_at[ph + 1]; e < end; e++) {
    esrrf_cand c = cand[e];
    int hy = by + (c.ji >> 8) + start, hx = bx + (c.ji & 255) + start;
    float vy = (float)hy / RGC_GM, vx = (float)hx / RGC_GM;
    if (!(0 < vy && vy <= lim_r && 0 < vx && vx <= lim_c)) continue;
    float dx = vx - xc, dy = vy - yc;
    float d2 = dx * dx + dy * dy;
    if (d2 == 0) continue;
    float id = rsqrt(d2), d = d2 * id;
    if (d > tso) continue;
    float4 s = g[min(hy, 2 * rows) * gw + min(hx, 2 * cols)];
    float w = c.w0 + c.w1 * (d - c.d0);
    wsum += w;
    if (s.x * dx + s.y * dy < 0) {
      float dk = fabs(s.y * dx - s.x * dy) * s.z;
      if (isnan(dk)) dk = d;
      rgc += (1 - dk * id) * w;
    }
  }
  float v = rgc_finish(rgc, wsum, sens);
  out[at] = weight ? v * img[at] : v;
}
