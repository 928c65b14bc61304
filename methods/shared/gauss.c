/* gauss.c — scipy.ndimage's Gaussian blur for the metrics (gauss.h).
 *
 * Each output pixel sums its taps in scipy's order for a symmetric kernel:
 * the centre times w[0], then (left + right) · w[k] for k = 1 .. radius,
 * in double. The loops run that order for a whole row of outputs at once
 * (one double accumulator per output, k outermost), so that the taps of
 * consecutive outputs are consecutive inputs: the adds of different
 * outputs no longer wait on one another and the row loads vectorise,
 * while each output still sees the same operations in the same order (the
 * same bits as a pixel-by-pixel loop). The 'reflect' index of every tap
 * comes from a table made once per blur. */
#include "methods/shared/gauss.h"

#include <math.h>
#include <stdlib.h>

typedef struct gauss_job {
  const float *in;
  float *out;
  size_t rows, cols;
  const double *w;   /* w[k], k in [0, radius]: the kernel's half */
  long radius;
  const size_t *ir;  /* 'reflect' of row m at ir[m + radius], m in
                        [−radius, rows + radius) */
  const size_t *ic;  /* the same for columns */
  double *acc;       /* per worker: `stride` doubles */
  size_t stride;
} gauss_job;

/* Rows [b, e) of out from the columns of in (axis 0): for each output
 * row, every column's sum over the rows r ± k. */
static int gauss_axis0(void *ctx, size_t b, size_t e, int worker) {
  const gauss_job *j = ctx;
  size_t cols = j->cols;
  double *s = j->acc + (size_t)worker * j->stride;
  for (size_t r = b; r < e; r++) {
    const float *mid = j->in + r * cols;
    for (size_t c = 0; c < cols; c++) s[c] = (double)mid[c] * j->w[0];
    for (long k = 1; k <= j->radius; k++) {
      const float *lo = j->in + j->ir[(long)r - k + j->radius] * cols;
      const float *hi = j->in + j->ir[(long)r + k + j->radius] * cols;
      double wk = j->w[k];
      for (size_t c = 0; c < cols; c++)
        s[c] += ((double)lo[c] + (double)hi[c]) * wk;
    }
    for (size_t c = 0; c < cols; c++) j->out[r * cols + c] = (float)s[c];
  }
  return QS_OK;
}

/* Rows [b, e) along their own axis (axis 1): for each row, every
 * column's sum over the columns c ± k, the columns whose taps stay inside
 * the row read directly, the others through the table. */
static int gauss_axis1(void *ctx, size_t b, size_t e, int worker) {
  const gauss_job *j = ctx;
  size_t cols = j->cols;
  long n = (long)cols, rad = j->radius;
  double *s = j->acc + (size_t)worker * j->stride;
  for (size_t r = b; r < e; r++) {
    const float *row = j->in + r * cols;
    for (size_t c = 0; c < cols; c++) s[c] = (double)row[c] * j->w[0];
    for (long k = 1; k <= rad; k++) {
      double wk = j->w[k];
      /* columns k .. n − 1 − k have both taps inside */
      long c0 = k < n ? k : n, c1 = n - k > c0 ? n - k : c0;
      for (long c = 0; c < c0; c++)
        s[c] += ((double)row[j->ic[c - k + rad]] +
                 (double)row[j->ic[c + k + rad]]) * wk;
      for (long c = c0; c < c1; c++)
        s[c] += ((double)row[c - k] + (double)row[c + k]) * wk;
      for (long c = c1; c < n; c++)
        s[c] += ((double)row[j->ic[c - k + rad]] +
                 (double)row[j->ic[c + k + rad]]) * wk;
    }
    for (size_t c = 0; c < cols; c++) j->out[r * cols + c] = (float)s[c];
  }
  return QS_OK;
}

int gauss_blur(const qs_method_call *c, const float *in, float *out,
               float *tmp, size_t rows, size_t cols, double sigma) {
  size_t n = rows * cols;
  if (!(sigma > 1e-15)) {
    for (size_t i = 0; in != out && i < n; i++) out[i] = in[i];
    return QS_OK;
  }
  long radius = (long)(4.0 * sigma + 0.5);
  size_t stride = rows > cols ? rows : cols;
  int workers = c->threads > 0 ? c->threads : 1;
  double *w = malloc((size_t)(radius + 1) * sizeof *w);
  size_t *ir = malloc((rows + 2 * (size_t)radius) * sizeof *ir);
  size_t *ic = malloc((cols + 2 * (size_t)radius) * sizeof *ic);
  double *acc = malloc((size_t)workers * stride * sizeof *acc);
  int rc = QS_OK;
  if (!w || !ir || !ic || !acc) {
    rc = QS_ENOMEM;
    goto done;
  }
  /* scipy's kernel: exp(−k²/2σ²) over |k| <= radius, normalised by its
   * sum taken from −radius up */
  for (long k = 0; k <= radius; k++)
    w[k] = exp(-0.5 / (sigma * sigma) * (double)(k * k));
  double sum = 0;
  for (long k = -radius; k <= radius; k++) sum += w[k < 0 ? -k : k];
  for (long k = 0; k <= radius; k++) w[k] /= sum;
  for (long m = -radius; m < (long)rows + radius; m++)
    ir[m + radius] = gauss_reflect(m, rows);
  for (long m = -radius; m < (long)cols + radius; m++)
    ic[m + radius] = gauss_reflect(m, cols);
  gauss_job j = {in, tmp, rows, cols, w, radius, ir, ic, acc, stride};
  rc = c->parallel_for(c, 0, rows, gauss_axis0, &j);
  j.in = tmp;
  j.out = out;
  if (!rc) rc = c->parallel_for(c, 0, rows, gauss_axis1, &j);
done:
  free(w);
  free(ir);
  free(ic);
  free(acc);
  return rc;
}
