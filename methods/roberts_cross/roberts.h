/* roberts.h — the Roberts-cross gradients of quicksilver (a 2×2 stencil
 * rotated by 45°), shared by the C implementations and the OpenCL kernels
 * (common subset of C99 and OpenCL C 1.2; see common.h).
 *
 * For pixel (r, c) with r0 = max(r − 1, 0) and c0 = max(c − 1, 0):
 *   gradient_col = I[r0,c] − I[r,c0] + I[r,c] − I[r0,c0]
 *   gradient_row = −I[r0,c] + I[r,c0] + I[r,c] − I[r0,c0]
 * in float, left to right, as NanoPyx evaluates them (methods.md §2), so the
 * borders come out as the reference has them: row 0 gives gradient_row 0
 * and gradient_col 2·(I[0,c] − I[0,c−1]); column 0 gives gradient_col 0
 * (exact zeros for integer-valued data below 2^24, else a rounding residue
 * the reference has too). The gradient sits at the top-left corner of the
 * pixel. */
#ifndef QS_MATH_ROBERTS_H
#define QS_MATH_ROBERTS_H

#include "methods/shared/math_common.h"

/* The stencil from its four values: up = I[r0,c], left = I[r,c0],
 * here = I[r,c], diag = I[r0,c0]. Callers that walk rows pass the clamped
 * neighbours themselves; these two macros are the only arithmetic (as
 * macros, so that OpenCL vectors of pixels take the same text). */
#define RC_COL(up, left, here, diag) ((((up) - (left)) + (here)) - (diag))
#define RC_ROW(up, left, here, diag) (((-(up) + (left)) + (here)) - (diag))

QS_INLINE float rc_col(float up, float left, float here, float diag) {
  return RC_COL(up, left, here, diag);
}

QS_INLINE float rc_row(float up, float left, float here, float diag) {
  return RC_ROW(up, left, here, diag);
}

/* Both gradients of pixel (r, c) of one frame (row stride cols), the
 * neighbours clamped at the top and left borders. */
QS_INLINE void rc_at(const QS_GLOBAL float *img, int cols, int r, int c,
                     float *gcol, float *grow) {
  int r0 = r > 0 ? r - 1 : 0;
  int c0 = c > 0 ? c - 1 : 0;
  const QS_GLOBAL float *row = img + (long)r * cols;
  const QS_GLOBAL float *prev = img + (long)r0 * cols;
  float up = prev[c], left = row[c0], here = row[c], diag = prev[c0];
  *gcol = rc_col(up, left, here, diag);
  *grow = rc_row(up, left, here, diag);
}

#endif
