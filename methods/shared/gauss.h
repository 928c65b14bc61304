/* gauss.h — the Gaussian blur the quality metrics share, with the
 * conventions of scipy.ndimage.gaussian_filter (NanoPyx's): a kernel
 * exp(−x²/2σ²) over |x| <= int(4σ + 0.5) normalised to sum 1, 'reflect'
 * borders (d c b a | a b c d | d c b a), axis 0 (along columns) first,
 * each pass accumulated in double and rounded to float; σ <= 1e-15
 * (negative included) leaves the image as it is. Internal to methods/. */
#ifndef QS_SHARED_GAUSS_H
#define QS_SHARED_GAUSS_H

#include <stddef.h>

#include "quicksilver_method.h"

/* Blurs the rows × cols image in into out (may be in) on c's pool; tmp
 * holds rows · cols floats. QS_ENOMEM when the kernel cannot be made. */
int gauss_blur(const qs_method_call *c, const float *in, float *out,
               float *tmp, size_t rows, size_t cols, double sigma);

/* Index i (any integer) of an axis of n samples under 'reflect'. */
static inline size_t gauss_reflect(long i, size_t n) {
  long m = 2 * (long)n;
  i %= m;
  if (i < 0) i += m;
  return (size_t)(i < (long)n ? i : m - 1 - i);
}

#endif
