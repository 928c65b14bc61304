/* fft.c — 2-D FFTs on kissfft for the quality metrics (see fft.h). */
#include "methods/shared/fft.h"

#include <kiss_fft.h>
#include <stdlib.h>
#include <string.h>

int fft2_plan(fft2 *p, size_t rows, size_t cols, int workers) {
  memset(p, 0, sizeof *p);
  if (!rows || !cols || rows > (1u << 30) || cols > (1u << 30))
    return QS_EINVAL;
  if (workers < 1) workers = 1;
  p->rows = rows;
  p->cols = cols;
  p->workers = workers;
  p->fwd_r = kiss_fft_alloc((int)cols, 0, NULL, NULL);
  p->inv_r = kiss_fft_alloc((int)cols, 1, NULL, NULL);
  p->fwd_c = kiss_fft_alloc((int)rows, 0, NULL, NULL);
  p->inv_c = kiss_fft_alloc((int)rows, 1, NULL, NULL);
  p->stride = 2 * (rows > cols ? rows : cols);
  p->tmp = malloc((size_t)workers * p->stride * sizeof *p->tmp);
  if (!p->fwd_r || !p->inv_r || !p->fwd_c || !p->inv_c || !p->tmp) {
    fft2_free(p);
    return QS_ENOMEM;
  }
  return QS_OK;
}

void fft2_free(fft2 *p) {
  kiss_fft_free(p->fwd_r);
  kiss_fft_free(p->inv_r);
  kiss_fft_free(p->fwd_c);
  kiss_fft_free(p->inv_c);
  free(p->tmp);
  memset(p, 0, sizeof *p);
}

typedef struct fft_job {
  const fft2 *p;
  fft_cpx *d;
  kiss_fft_cfg cfg;
} fft_job;

static int fft_rows(void *ctx, size_t b, size_t e, int worker) {
  const fft_job *j = ctx;
  size_t cols = j->p->cols;
  kiss_fft_cpx *t = (kiss_fft_cpx *)(j->p->tmp + (size_t)worker * j->p->stride);
  for (size_t r = b; r < e; r++) {
    kiss_fft_cpx *row = (kiss_fft_cpx *)(j->d + r * cols);
    kiss_fft(j->cfg, row, t);
    memcpy(row, t, cols * sizeof *t);
  }
  return QS_OK;
}

static int fft_cols(void *ctx, size_t b, size_t e, int worker) {
  const fft_job *j = ctx;
  size_t rows = j->p->rows, cols = j->p->cols;
  kiss_fft_cpx *t = (kiss_fft_cpx *)(j->p->tmp + (size_t)worker * j->p->stride);
  for (size_t c = b; c < e; c++) {
    kiss_fft_stride(j->cfg, (kiss_fft_cpx *)(j->d + c), t, (int)cols);
    for (size_t r = 0; r < rows; r++) {
      j->d[r * cols + c].r = t[r].r;
      j->d[r * cols + c].i = t[r].i;
    }
  }
  return QS_OK;
}

int fft2_run(const qs_method_call *c, const fft2 *p, fft_cpx *d, int inverse) {
  if (c->threads > p->workers) return QS_EINVAL;
  fft_job j = {p, d, inverse ? p->inv_r : p->fwd_r};
  int rc = c->parallel_for(c, 0, p->rows, fft_rows, &j);
  if (rc) return rc;
  j.cfg = inverse ? p->inv_c : p->fwd_c;
  return c->parallel_for(c, 0, p->cols, fft_cols, &j);
}

void fft_shift(const void *src, void *dst, size_t rows, size_t cols,
               size_t size, int inverse) {
  /* fftshift moves index k to (k + n/2) mod n; ifftshift to
   * (k + n - n/2) mod n (they differ for odd n) */
  size_t sr = inverse ? rows - rows / 2 : rows / 2;
  size_t sc = inverse ? cols - cols / 2 : cols / 2;
  const char *s = src;
  char *o = dst;
  for (size_t r = 0; r < rows; r++) {
    size_t rr = (r + sr) % rows;
    for (size_t k = 0; k < cols; k++) {
      size_t kk = (k + sc) % cols;
      memcpy(o + (rr * cols + kk) * size, s + (r * cols + k) * size, size);
    }
  }
}
