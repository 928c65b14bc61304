/* fft.h — two-dimensional complex FFTs and orthonormal cosine transforms
 * for the quality metrics (frc, decorr, squirrel), on kissfft (BSD-3;
 * float) with the rows and the columns of a transform split over the
 * call's pool. A plan holds the twiddle tables of both sides, made once
 * and shared read-only by the workers. Internal to methods/. */
#ifndef QS_SHARED_FFT_H
#define QS_SHARED_FFT_H

#include <stddef.h>

#include "quicksilver_method.h"

/* One complex value, laid out as kissfft's kiss_fft_cpx (re, im). */
typedef struct fft_cpx {
  float r, i;
} fft_cpx;

typedef struct fft2 {
  size_t rows, cols;
  void *fwd_r, *fwd_c, *inv_r, *inv_c; /* kissfft configurations */
  fft_cpx *tmp;                        /* per worker: 2·max(rows, cols) */
  size_t stride;                       /* values of tmp per worker */
  int workers;
} fft2;

/* Plans transforms of rows × cols for up to `workers` workers (the pool's
 * threads). QS_ENOMEM with *p emptied on failure. */
int fft2_plan(fft2 *p, size_t rows, size_t cols, int workers);
void fft2_free(fft2 *p);

/* In place: forward (inverse 0, numpy's fft2) or the unnormalised inverse
 * (numpy's ifft2 times rows·cols) of the rows × cols values at d, rows and
 * then columns on c's pool. */
int fft2_run(const qs_method_call *c, const fft2 *p, fft_cpx *d, int inverse);

/* The orthonormal 2-D DCT-II (scipy's dctn(norm="ortho")) of rows × cols
 * images: per axis one complex FFT of length n (Makhoul's reordering,
 * x[0], x[2], … then the odd samples backwards) carrying two real lines at
 * once (one as the real, one as the imaginary part), the twiddle
 * e^(−iπk/2n) and the scale in double. The FFT runs in float (kissfft's),
 * so a coefficient is within about 1e-7·log2(n) of the input's energy of
 * the exact transform. */
typedef struct dct2 {
  fft2 f;               /* the forward transforms of both sides, scratch */
  double *tw_r, *tw_c;  /* per axis: scale·cos θk, scale·sin θk (2n) */
  double *mid;          /* rows × cols: the rows' transforms */
} dct2;

/* Plans transforms of rows × cols for up to `workers` workers.
 * QS_ENOMEM with *p emptied on failure. */
int dct2_plan(dct2 *p, size_t rows, size_t cols, int workers);
void dct2_free(dct2 *p);

/* out (rows × cols, out[ky·cols + kx]) = the DCT of in, on c's pool. */
int dct2_run(const qs_method_call *c, const dct2 *p, const float *in,
             double *out);

/* numpy's fftshift (inverse 0) and ifftshift (inverse 1) of a rows × cols
 * array of `size`-byte items, from src into dst (distinct). */
void fft_shift(const void *src, void *dst, size_t rows, size_t cols,
               size_t size, int inverse);

#endif
