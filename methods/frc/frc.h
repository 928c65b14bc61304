/* frc.h — Fourier ring correlation between two images, as NanoPyx 2.1.5's
 * FIRECalculator computes it (methods/frc/frc.c), for the frc method and
 * for the parameter sweep (engine/sweep.c) through the same function.
 * Internal to methods/ and the engine. */
#ifndef QS_FRC_H
#define QS_FRC_H

#include <stddef.h>

#include "quicksilver_method.h"

/* Threshold curves (the frc method's `threshold` choices, in order). */
enum { FRC_SEVENTH, FRC_HALF_BIT };
#define FRC_THRESHOLDS "seventh|half_bit"

/* Values of the frc method's `resolution` output, in order. */
enum { FRC_RES, FRC_RES_FREQ, FRC_RES_RINGS, FRC_RES_N };

/* Rings of the curve for rows × cols images (the side N of the centred
 * even square crop gives N/2 − 1); 0 when the images are too small for
 * the smoothing window (fewer than 5 rings). */
size_t frc_rings(size_t rows, size_t cols);

/* FRC of a and b (rows × cols each) on c's pool. curve (may be NULL)
 * receives 3 rows of frc_rings() values: spatial frequency (NanoPyx's
 * linspace(0, 1/(2·pixel_size), rings)), the ring correlation, and the
 * correlation smoothed (Savitzky–Golay, cubic, window int(0.0707·rings)
 * at least 4, 'interp' edges) which the threshold is applied to. res
 * receives FRC_RES_N values: the FIRE resolution 1/f at the first
 * crossing of the smoothed curve with the threshold (0: no crossing), f,
 * and the ring count. QS_ESHAPE (message in err) when the images are too
 * small, QS_ENOMEM. */
int frc_compute(const qs_method_call *c, const float *a, const float *b,
                size_t rows, size_t cols, double pixel_size, int threshold,
                float *curve, float *res, char *err, size_t err_len);

#endif
