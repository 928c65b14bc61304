/* rgc_fused.h — the formulas of RGC's fused paths, written once for C
 * (fused.c, fused_vec.h, the host tables of methods/esrrf/opencl.c) and
 * OpenCL C (methods/esrrf/esrrf.cl, which gets this text through cl/embed.py):
 * the taps of the compact half-pixel gradient grid, the slope of the
 * distance weight, and the first-order model of a candidate sample with
 * its convergence term in the unit-gradient form (fused_vec.h derives
 * it). Common subset of C99 and OpenCL C 1.2 (common.h).
 *
 * The term macros take the arithmetic as arguments, so that one text
 * serves scalars, GCC vector extensions and OpenCL vectors: MAD(a, b, c)
 * is a·b + c (fused where the caller allows it), ABS the absolute value. */
#ifndef QS_MATH_RGC_FUSED_H
#define QS_MATH_RGC_FUSED_H

#include "methods/shift_magnify/catmull_rom.h"
#include "methods/shared/math_common.h"
#include "methods/rgc/rgc_math.h"

/* The Catmull-Rom taps of index h (0 .. 2n) of the compact grid along an
 * axis of n input pixels magnified mag: the half-pixel sample h / 2, the
 * last (h = 2n) at the reference's clamped ×2M index 2·n·M − 1. */
QS_INLINE void rgc_grid_taps(int h, int n, int mag, cr_taps *t) {
  if (h < 2 * n)
    cr_taps_half(h, n, t);
  else
    cr_taps_at(cr_source(2 * n * mag - 1, (float)(2 * mag), 0.0f), n, t);
}

/* dw/dd of the distance weight w(d) = (d·exp(−d²/tSS))⁴ at d > 0, given
 * w = w(d): w·(4/d − 8d/tSS). */
QS_INLINE QS_ACC rgc_weight_slope(QS_ACC w, QS_ACC d, QS_ACC tss) {
  return w * (4 / d - 8 * d / tss);
}

/* A candidate sample in the first-order model: at the representative
 * pixel's offsets (dx0, dy0), distance d0 > 0, weight w0 and its slope
 * w1; a pixel of the same phase whose centre rounds e_x, e_y away has
 * w = w0 + wa·e_x + wb·e_y and 1/d = id0 + qa·e_x + qb·e_y (second-order
 * terms below 1e-9 relative). */
typedef struct rgc_lin {
  float w0, id0, wa, wb, qa, qb;
} rgc_lin;

QS_INLINE rgc_lin rgc_lin_at(QS_ACC dx0, QS_ACC dy0, QS_ACC d0, float w0,
                             QS_ACC w1) {
  rgc_lin l;
  l.w0 = w0;
  l.id0 = (float)(1 / d0);
  l.wa = (float)(w1 * dx0 / d0);
  l.wb = (float)(w1 * dy0 / d0);
  l.qa = (float)(-dx0 / (d0 * d0 * d0));
  l.qb = (float)(-dy0 / (d0 * d0 * d0));
  return l;
}

/* e = c_rep + m − c_x for pixel x = rep + m·M of the same phase: how far
 * x's float centre sits from its representative's shifted by m whole
 * pixels (exact: both subtractions are of nearby floats). */
QS_INLINE float rgc_shift(int rep, int x, int mag) {
  int m = (x - rep) / mag;
  return rgc_center(rep, mag) - (rgc_center(x, mag) - (float)m);
}

/* A first-order value v0 + slope·e. */
#define RGC_LIN(v0, slope, e, MAD) MAD(slope, e, v0)

/* Ĝ·R for the unit gradient (nx, ny) and offset (dx, dy): the sample
 * converges where it is < 0. */
#define RGC_UNIT_DOT(nx, ny, dx, dy, MAD) MAD(nx, dx, (ny) * (dy))

/* The convergence term w·(1 − |Ĝ × R|·(1/d)) with id = 1/d. */
#define RGC_UNIT_TERM(nx, ny, dx, dy, w, id, MAD, ABS)                       \
  MAD(-(w), ABS(MAD(ny, dx, -((nx) * (dy)))) * (id), w)

#endif
