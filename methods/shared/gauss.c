/* gauss.c — scipy.ndimage's Gaussian blur for the metrics (gauss.h). */
#include "methods/shared/gauss.h"

#include <math.h>
#include <stdlib.h>

typedef struct gauss_job {
  const float *in;
  float *out;
  size_t rows, cols;
  const double *w; /* 2·radius + 1 weights */
  long radius;
} gauss_job;

/* Rows [b, e) of out from the columns of in (axis 0). */
static int gauss_axis0(void *ctx, size_t b, size_t e, int worker) {
  const gauss_job *j = ctx;
  (void)worker;
  for (size_t r = b; r < e; r++)
    for (size_t c = 0; c < j->cols; c++) {
      /* scipy's order for a symmetric kernel: the centre, then pairs */
      const float *col = j->in + c;
      double s = (double)col[r * j->cols] * j->w[j->radius];
      for (long k = 1; k <= j->radius; k++)
        s += ((double)col[gauss_reflect((long)r - k, j->rows) * j->cols] +
              (double)col[gauss_reflect((long)r + k, j->rows) * j->cols]) *
             j->w[j->radius + k];
      j->out[r * j->cols + c] = (float)s;
    }
  return QS_OK;
}

/* Rows [b, e) along their own axis (axis 1). */
static int gauss_axis1(void *ctx, size_t b, size_t e, int worker) {
  const gauss_job *j = ctx;
  (void)worker;
  for (size_t r = b; r < e; r++) {
    const float *row = j->in + r * j->cols;
    for (size_t c = 0; c < j->cols; c++) {
      double s = (double)row[c] * j->w[j->radius];
      for (long k = 1; k <= j->radius; k++)
        s += ((double)row[gauss_reflect((long)c - k, j->cols)] +
              (double)row[gauss_reflect((long)c + k, j->cols)]) *
             j->w[j->radius + k];
      j->out[r * j->cols + c] = (float)s;
    }
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
  double *w = malloc((size_t)(2 * radius + 1) * sizeof *w);
  if (!w) return QS_ENOMEM;
  double sum = 0;
  for (long k = -radius; k <= radius; k++)
    sum += w[k + radius] = exp(-0.5 / (sigma * sigma) * (double)(k * k));
  for (long k = -radius; k <= radius; k++) w[k + radius] /= sum;
  gauss_job j = {in, tmp, rows, cols, w, radius};
  int rc = c->parallel_for(c, 0, rows, gauss_axis0, &j);
  j.in = tmp;
  j.out = out;
  if (!rc) rc = c->parallel_for(c, 0, rows, gauss_axis1, &j);
  free(w);
  return rc;
}
