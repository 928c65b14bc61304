/* catmull_rom.h — the Catmull-Rom (a = 0.5) interpolation of quicksilver,
 * shared by the C implementations and the OpenCL kernels (common subset of
 * C99 and OpenCL C 1.2; see common.h for QS_INLINE, QS_GLOBAL, QS_ACC).
 *
 * Numerics follow NanoPyx's CPU reference exactly, quirks included, so that
 * `serial` matches it bit for bit (methods.md §1):
 *  - coordinates are measured from the image edge: pixel k is centred at
 *    k + 0.5;
 *  - a coordinate outside [0, n) samples 0 (no clamping, no extrapolation);
 *  - the taps are floor((float)(x - 0.5)) - 1 .. + 2, and taps outside the
 *    image are dropped without renormalising the others;
 *  - weights and sums are QS_ACC (double on the CPU), columns are the outer
 *    sum, and the result is rounded to float once at the end.
 *
 * The point sampler and the half-pixel sampler share cr_taps_at-style taps
 * and cr_apply, so they agree by construction. The separable path (taps
 * computed once per output row and column, cr_vsums then cr_hsum) performs
 * the same additions in the same order, so it gives the same bits too
 * (tests/test_shift_magnify.c checks every pixel of several cases). */
#ifndef QS_MATH_CATMULL_ROM_H
#define QS_MATH_CATMULL_ROM_H

#include "methods/shared/math_common.h"

/* The taps of one axis for one coordinate: the first in-image tap index, how
 * many consecutive taps are in the image (0 when the coordinate is outside
 * [0, n), which makes the sample 0), and their weights in tap order. */
typedef struct cr_taps {
  int first;
  int n;
  QS_ACC w[4];
} cr_taps;

/* The Catmull-Rom cubic with a = 0.5 at distance v (in pixels), evaluated
 * term by term as the reference does: 1.5t³ − 2.5t² + 1 below 1,
 * −0.5t³ + 2.5t² − 4t + 2 below 2, else 0 (t = |v|). */
QS_INLINE QS_ACC cr_cubic(QS_ACC v) {
  const QS_ACC a = QS_C(0.5);
  QS_ACC t = v < 0 ? -v : v;
  if (t < 1) return t * t * (t * (2 - a) + (a - 3)) + 1;
  if (t < 2) return -a * t * t * t + 5 * a * t * t - 8 * a * t + 4 * a;
  return 0;
}

/* Fills *t for coordinate x along an axis of n pixels (n >= 1, x finite).
 * Returns t->n (0: x outside [0, n), the sample is 0). */
QS_INLINE int cr_taps_at(float x, int n, cr_taps *t) {
  t->first = 0;
  t->n = 0;
  if (x < 0 || x >= n) return 0;
  /* The reference rounds x - 0.5 to float before the floor. */
  int base = (int)floor((float)((QS_ACC)x - QS_C(0.5))) - 1;
  for (int k = 0; k < 4; k++) {
    int tap = base + k;
    if (tap < 0 || tap >= n) continue;
    if (t->n == 0) t->first = tap;
    t->w[t->n++] = cr_cubic((QS_ACC)x - ((QS_ACC)tap + QS_C(0.5)));
  }
  return t->n;
}

/* Taps for the coordinate h / 2 (h >= 0) along an axis of n pixels: the
 * positions where eSRRF reads its ×2M gradients (methods.md §3.3 Q3). Odd h
 * is a pixel centre, weights (0, 1, 0, 0); even h lies between two pixels,
 * weights (−1, 9, 9, −1)/16. These are exactly the values cr_cubic gives
 * there, so the result equals cr_taps_at((float)h / 2, n, t) bit for bit,
 * without evaluating the cubic. */
QS_INLINE int cr_taps_half(int h, int n, cr_taps *t) {
  t->first = 0;
  t->n = 0;
  if (h < 0 || h >= 2 * n) return 0;
  int odd = h & 1;
  int base = odd ? (h - 1) / 2 - 1 : h / 2 - 2;
  for (int k = 0; k < 4; k++) {
    int tap = base + k;
    if (tap < 0 || tap >= n) continue;
    if (t->n == 0) t->first = tap;
    QS_ACC w;
    if (odd)
      w = k == 1 ? QS_C(1) : QS_C(0);
    else
      w = (k == 0 || k == 3) ? QS_C(-0.0625) : QS_C(0.5625);
    t->w[t->n++] = w;
  }
  return t->n;
}

/* The column sum of the reference for one input column: starting from 0,
 * pixel × row weight added in row-tap order, in QS_ACC. `col` points at
 * row 0 of that column; `cols` is the row stride. */
QS_INLINE QS_ACC cr_vsum(const QS_GLOBAL float *col, int cols,
                         const cr_taps *rt) {
  QS_ACC p = 0;
  for (int i = 0; i < rt->n; i++)
    p = p + (QS_ACC)col[(long)(rt->first + i) * cols] * rt->w[i];
  return p;
}

/* The sample for row taps rt and column taps ct, in the reference's order:
 * for each column tap its cr_vsum times the column weight, added to a total
 * that starts from 0; the total rounded to float once. */
QS_INLINE float cr_apply(const QS_GLOBAL float *img, int cols,
                         const cr_taps *rt, const cr_taps *ct) {
  if (rt->n == 0 || ct->n == 0) return 0.0f;
  QS_ACC q = 0;
  for (int j = 0; j < ct->n; j++)
    q = q + cr_vsum(img + ct->first + j, cols, rt) * ct->w[j];
  return (float)q;
}

/* Separable path, step 1: p[c] = cr_vsum of input column c for every c in
 * [c0, c1), with the loop over columns innermost so it vectorises; each
 * p[c] still sees the same additions in the same order (from 0, row taps
 * ascending), so the values are cr_vsum's bits. One call serves a whole
 * output row. */
QS_INLINE void cr_vsums(const QS_GLOBAL float *img, int cols,
                        const cr_taps *rt, QS_ACC *p, int c0, int c1) {
  const QS_GLOBAL float *r0 = img + (long)rt->first * cols;
  if (rt->n == 4) { /* away from the borders: all taps, one pass */
    const QS_GLOBAL float *r1 = r0 + cols, *r2 = r1 + cols, *r3 = r2 + cols;
    QS_ACC w0 = rt->w[0], w1 = rt->w[1], w2 = rt->w[2], w3 = rt->w[3];
    for (int c = c0; c < c1; c++)
      p[c] = (((QS_C(0) + (QS_ACC)r0[c] * w0) + (QS_ACC)r1[c] * w1) +
              (QS_ACC)r2[c] * w2) +
             (QS_ACC)r3[c] * w3;
    return;
  }
  for (int c = c0; c < c1; c++) p[c] = 0;
  for (int i = 0; i < rt->n; i++) {
    const QS_GLOBAL float *row = r0 + (long)i * cols;
    QS_ACC w = rt->w[i];
    for (int c = c0; c < c1; c++) p[c] = p[c] + (QS_ACC)row[c] * w;
  }
}

/* Separable path, step 2: the sample of one output pixel from the column
 * sums p (indexed by input column, filled by cr_vsums over at least the
 * columns ct names) — cr_apply's bits, given the same row taps. */
QS_INLINE float cr_hsum(const QS_ACC *p, const cr_taps *ct) {
  const QS_ACC *a = p + ct->first;
  if (ct->n == 4) /* away from the borders: the loop below, unrolled */
    return (float)((((QS_C(0) + a[0] * ct->w[0]) + a[1] * ct->w[1]) +
                    a[2] * ct->w[2]) +
                   a[3] * ct->w[3]);
  QS_ACC q = 0;
  for (int j = 0; j < ct->n; j++) q = q + a[j] * ct->w[j];
  return (float)q;
}

/* NanoPyx's point sampler: frame img of rows × cols at (r, c) in edge
 * coordinates; 0 outside the image. */
QS_INLINE float cr_sample(const QS_GLOBAL float *img, float r, float c,
                          int rows, int cols) {
  cr_taps rt, ct;
  if (!cr_taps_at(r, rows, &rt) || !cr_taps_at(c, cols, &ct)) return 0.0f;
  return cr_apply(img, cols, &rt, &ct);
}

/* The sample at (hr / 2, hc / 2), equal to cr_sample there bit for bit. */
QS_INLINE float cr_sample_half(const QS_GLOBAL float *img, int hr, int hc,
                               int rows, int cols) {
  cr_taps rt, ct;
  if (!cr_taps_half(hr, rows, &rt) || !cr_taps_half(hc, cols, &ct))
    return 0.0f;
  return cr_apply(img, cols, &rt, &ct);
}

/* Input coordinate of output index i for magnification mag and shift: the
 * reference computes (float)i / mag - shift in float, with no +0.5 (output
 * pixel i samples its leading edge). */
QS_INLINE float cr_source(int i, float mag, float shift) {
  return (float)i / mag - shift;
}

#endif
