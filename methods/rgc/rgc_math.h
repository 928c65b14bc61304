/* rgc.h — radial gradient convergence (RGC) of one output pixel, shared by
 * the C implementations and the OpenCL kernels (common subset of C99 and
 * OpenCL C 1.2; see common.h for QS_INLINE, QS_GLOBAL, QS_ACC).
 *
 * Follows NanoPyx's CPU reference (methods.md §3.3) operation for operation,
 * so that `serial` gives its bits: centres rounded to float at their own
 * magnitude, a search window with an exclusive end (asymmetric), the bound
 * 0 < v <= rowsM - 1 that mixes original and magnified units (it never
 * binds above; the index clamp does), distances and sums in float, the
 * distance weight and the convergence term through QS_ACC (double on the
 * CPU), the Wsum > 0 guard, and the sensitivity power only when it is > 1.
 *
 * Gradients are read on the half-pixel grid v = n / 2 (original pixels).
 * The reference reads them from images magnified ×2M at index n·M, clamped
 * to the last row/column; rgc_grid describes that storage, or a compact one
 * holding only the half-pixel samples (what fused paths build), so both
 * read the same values through the same loop. */
#ifndef QS_MATH_RGC_H
#define QS_MATH_RGC_H

#include "methods/shared/math_common.h"

#if !QS_OPENCL
#include <float.h>
#include <stdint.h>
#include <string.h>
#endif

/* The reference's fixed gradient magnification relative to the output. */
#define RGC_GM 2.0f

/* Where the gradient sample for half-pixel index n lives: row/column index
 * pos = n·step (computed in float as the reference does, v·M·2), replaced
 * by `clamp` when pos >= `limit`. The ×2M images: step M, limit 2·RM,
 * clamp 2·RM − 1, width 2·CM. The compact half-pixel grid: step 1,
 * limit 2·R, clamp 2·R, width 2·C + 1 (its last row/column holds the
 * samples at the clamped index). */
typedef struct rgc_grid {
  int step;
  float limit_r, limit_c;
  float clamp_r, clamp_c;
  long width;
} rgc_grid;

/* Constants of one call, rounded to float as the reference rounds them:
 * fwhm = radius, sigma = radius / 2.355 (computed in double), tSS = 2σσ,
 * tSO = 2σ + 1 (the disk radius), window [-S, E) with S = (int)(2·fwhm),
 * E = (int)(2·fwhm + 1). */
typedef struct rgc_consts {
  float fwhm, tss, tso, sens;
  int start, end, mag;
} rgc_consts;

/* The constants from their float values (how kernels receive them). */
QS_INLINE rgc_consts rgc_consts_set(float fwhm, float tss, float tso,
                                    float sens, int mag) {
  rgc_consts k;
  k.fwhm = fwhm;
  k.tss = tss;
  k.tso = tso;
  k.sens = sens;
  k.start = -(int)(RGC_GM * fwhm);
  k.end = (int)(RGC_GM * fwhm + 1);
  k.mag = mag;
  return k;
}

QS_INLINE rgc_consts rgc_consts_make(QS_ACC radius, int mag,
                                     QS_ACC sensitivity) {
  float sigma = (float)(radius / QS_C(2.355));
  return rgc_consts_set((float)radius, 2 * sigma * sigma, 2 * sigma + 1,
                        (float)sensitivity, mag);
}

/* Zero margin of the output, int(float32(radius) · M) in double. */
QS_INLINE int rgc_margin(float fwhm, int mag) {
  return (int)((QS_ACC)fwhm * (QS_ACC)mag);
}

/* Centre of output pixel i in original pixels, edge convention:
 * (i + 0.5) / M in QS_ACC, rounded to float. */
QS_INLINE float rgc_center(int i, int mag) {
  return (float)(((QS_ACC)i + QS_C(0.5)) / (QS_ACC)mag);
}

#if !QS_OPENCL
/* Whether a double y, within a few double ulps of an exact value, rounds
 * to that value's float: y in float's normal range and not within 32
 * double ulps of a float rounding boundary (the 29 bits below a float's
 * mantissa near 2²⁸). rgc_pow4 and rgc_pow_whole take pow where not. */
static inline int rgc_float_sure(double y) {
  if (!(y >= 0x1p-126 && y < 0x1p127)) return 0;
  uint64_t u;
  memcpy(&u, &y, sizeof u);
  int64_t low = (int64_t)(u & ((UINT64_C(1) << 29) - 1)) - (INT64_C(1) << 28);
  return !(low < 32 && low > -32);
}

/* (float)pow(b, 4) for a double b, bit for bit, without pow in all but
 * about one input in 10⁷: (b²)² carries two double roundings (within a few
 * double ulps of b⁴; pow's double within one), so both round to the same
 * float unless b⁴ lies within a few double ulps of a float rounding
 * boundary (the 29 bits below a float's mantissa near 2²⁸) or outside
 * float's normal range: those take pow, as rgc_pow_whole does. The vector
 * paths' candidate tables use it (fused.c, fz_derivs: a pow each made
 * about a tenth of a small call); the serial paths keep the reference's
 * pow per sample (rgc_weight): made twice as fast, their slice runs on
 * small calls fell under what a CPU kind may hold as fixed cost
 * (AGENT_CPU_FIXED), where one run settles nothing, and calibration of
 * rgc 4 x 64 x 64 went from 11 % of calls 1-10 to about 20 %. */
static inline float rgc_pow4(double b) {
  double b2 = b * b, y = b2 * b2;
  return rgc_float_sure(y) ? (float)y : (float)pow(b, 4.0);
}
#endif

/* Distance weight (d · exp(−d²/tSS))⁴, in QS_ACC, rounded to float. It is 0
 * at d = 0 and peaks at d = σ. The CPU takes the reference's pow (its
 * bits); OpenCL squares twice, since pow with a float exponent is a slow
 * general routine on some devices (ten times slower on PoCL). */
QS_INLINE float rgc_weight(float d, float tss) {
  QS_ACC x = (QS_ACC)d;
  QS_ACC b = x * exp((-x * x) / (QS_ACC)tss);
#if QS_OPENCL
  QS_ACC b2 = b * b;
  return (float)(b2 * b2);
#else
  return (float)pow(b, QS_C(4));
#endif
}


/* Convergence of one inward-pointing gradient (gx, gy) seen from offset
 * (dx, dy) at distance d > 0: 1 − sin of the angle between G and −R. The
 * products are float, the rest QS_ACC, stored as float as the reference
 * does. A NaN (G = 0, unreachable when G·R < 0) counts as d. */
QS_INLINE float rgc_dk(float gx, float gy, float dx, float dy, float d) {
  float cross = gy * dx - gx * dy;
  float norm2 = gx * gx + gy * gy;
  float dk = (float)(fabs((QS_ACC)cross) / sqrt((QS_ACC)norm2));
  if (isnan(dk)) dk = d;
  return 1 - dk / d;
}

#if !QS_OPENCL
/* (float)pow(x, n) for 0 < x and a whole n in [2, 8], bit for bit, without
 * pow in all but about one input in 10⁷. x is a float (24 bits), so x² is
 * exact in double and x^n by repeated products carries at most n − 2
 * roundings (under n − 2 double ulps); pow's double is within one ulp of
 * x^n. Both therefore round to the same float unless x^n lies within a few
 * double ulps of a float rounding boundary (the 29 bits below a float's
 * mantissa near 2²⁸), or outside float's normal range: those take pow,
 * except y < 2⁻¹⁵¹: x^n and pow's double are then both below 2⁻¹⁵⁰, half
 * the least subnormal float, and round to +0. */
static inline float rgc_pow_whole(float x, int n) {
  double xd = x, x2 = xd * xd, y;
  switch (n) {
  case 2: return (float)x2;
  case 3: y = x2 * xd; break;
  case 4: y = x2 * x2; break;
  case 5: y = x2 * x2 * xd; break;
  case 6: y = x2 * x2 * x2; break;
  case 7: y = x2 * x2 * x2 * xd; break;
  default: y = (x2 * x2) * (x2 * x2); break;
  }
  if (y < 0x1p-151) return 0.0f;
  return rgc_float_sure(y) ? (float)y : (float)pow(xd, (double)n);
}

/* The largest float x with sqrtf(x) <= t. A correctly rounded square
 * root never decreases as x grows, so the reference's test on the
 * distance d = √x (rgc_pixel: d > tSO skips), d <= t, holds exactly when
 * x <= this bound, and d != 0 exactly when x != 0 (x a sum of squares, at
 * least +0): the vector paths compare x and take no square root per
 * candidate. -1 when no x passes (t < 0 or NaN). */
static inline float rgc_sq_bound(float t) {
  if (!(t >= 0)) return -1.0f;
  float x = t * t;
  if (!(x <= FLT_MAX)) x = FLT_MAX;
  while (x > 0 && !(sqrtf(x) <= t)) x = nextafterf(x, 0.0f);
  while (x < FLT_MAX && sqrtf(nextafterf(x, INFINITY)) <= t)
    x = nextafterf(x, INFINITY);
  return x;
}

/* Whether sens is an odd whole number (every float from 2²⁴ on is even). */
static inline int rgc_odd(float sens) {
  return sens > -0x1p24f && sens < 0x1p24f && sens == (float)(int)sens &&
         ((int)sens & 1);
}
#endif

/* (float)pow(x, sens) for x >= 0, sens > 1: the reference's power (on the
 * CPU through rgc_pow_whole for whole sensitivities up to 8, and without
 * pow for x = ±0, about half the sweep's inputs: pow(±0, y > 0) is +0, or
 * x itself, sign kept, for an odd whole y; its bits either way). */
QS_INLINE float rgc_pow(float x, float sens) {
#if !QS_OPENCL
  if (x == 0 && sens > 0) return rgc_odd(sens) ? x : 0.0f;
  if (x > 0 && sens <= 8 && sens == (float)(int)sens)
    return rgc_pow_whole(x, (int)sens);
#endif
  return (float)pow((QS_ACC)x, (QS_ACC)sens);
}

/* The sensitivity on a convergence ratio: a power only when sens > 1 (the
 * reference ignores sensitivity <= 1), negatives to 0. */
QS_INLINE float rgc_sens(float rgc, float sens) {
  if (rgc >= 0 && sens > 1)
    rgc = rgc_pow(rgc, sens);
  else if (rgc < 0)
    rgc = 0;
  return rgc;
}

/* The ratio, the Wsum > 0 guard, then the sensitivity (rgc_sens). */
QS_INLINE float rgc_finish(float rgc, float wsum, float sens) {
  return rgc_sens(wsum > 0 ? rgc / wsum : 0.0f, sens);
}

/* RGC of output pixel (yM, xM) of a rowsM × colsM output, before intensity
 * weighting; gx, gy are one frame's gradients stored as `g` describes. */
QS_INLINE float rgc_pixel(int xM, int yM, const QS_GLOBAL float *gx,
                          const QS_GLOBAL float *gy, rgc_grid g, int colsM,
                          int rowsM, rgc_consts k) {
  float xc = rgc_center(xM, k.mag);
  float yc = rgc_center(yM, k.mag);
  int by = (int)(RGC_GM * yc), bx = (int)(RGC_GM * xc);
  float rgc = 0, wsum = 0;
  for (int j = k.start; j < k.end; j++) {
    float vy = (float)(by + j) / RGC_GM;
    if (!(0 < vy && vy <= rowsM - 1)) continue;
    float py = vy * (float)g.step * RGC_GM;
    if (py >= g.limit_r) py = g.clamp_r;
    long row = (long)(int)py * g.width;
    for (int i = k.start; i < k.end; i++) {
      float vx = (float)(bx + i) / RGC_GM;
      if (!(0 < vx && vx <= colsM - 1)) continue;
      float dx = vx - xc, dy = vy - yc;
      float d = (float)sqrt((QS_ACC)(dx * dx + dy * dy));
      if (d == 0 || d > k.tso) continue;
      float px = vx * (float)g.step * RGC_GM;
      if (px >= g.limit_c) px = g.clamp_c;
      long at = row + (int)px;
      float sx = gx[at], sy = gy[at];
      float w = rgc_weight(d, k.tss);
      wsum += w;
      if (sx * dx + sy * dy < 0) rgc += rgc_dk(sx, sy, dx, dy, d) * w;
    }
  }
  return rgc_finish(rgc, wsum, k.sens);
}

/* The grid of the reference's ×2M gradient images for a rowsM × colsM
 * output magnified by mag. */
QS_INLINE rgc_grid rgc_grid_full(int rowsM, int colsM, int mag) {
  rgc_grid g;
  g.step = mag;
  g.limit_r = (float)rowsM * RGC_GM;
  g.limit_c = (float)colsM * RGC_GM;
  g.clamp_r = g.limit_r - 1;
  g.clamp_c = g.limit_c - 1;
  g.width = (long)(int)((float)colsM * RGC_GM);
  return g;
}

/* The compact grid of half-pixel samples for a rows × cols input:
 * (2·rows + 1) × (2·cols + 1), index n for v = n / 2, the last row/column
 * holding the samples at the reference's clamped index. */
QS_INLINE rgc_grid rgc_grid_half(int rows, int cols) {
  rgc_grid g;
  g.step = 1;
  g.limit_r = (float)(2 * rows);
  g.limit_c = (float)(2 * cols);
  g.clamp_r = g.limit_r;
  g.clamp_c = g.limit_c;
  g.width = 2L * cols + 1;
  return g;
}

#endif
