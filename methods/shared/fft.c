/* fft.c — 2-D FFTs on kissfft for the quality metrics (see fft.h). */
#include "methods/shared/fft.h"

#include <kiss_fft.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Columns transformed together: gathered a block at a time, eight
 * complex floats (one 64-byte line) from each row, transformed
 * contiguous and put back the same way, so that a column pass reads and
 * writes whole lines instead of one value per line per column. kissfft
 * reads a strided line as it reads a contiguous one: the same arithmetic,
 * the same bits. */
#define FFT_BLOCK 8
/* The cosine transform's column lines gathered at once (even: two lines
 * per FFT), for the same reason: eight doubles are one line. */
#define DCT_BLOCK 8

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
  /* per worker: FFT_BLOCK columns gathered and one line of output; the
   * cosine transform's column pass takes from the same room two complex
   * lines and DCT_BLOCK lines of doubles in and out (fft_cpx and double
   * are both 8 bytes) */
  p->stride = (2 + 2 * DCT_BLOCK) * (rows > cols ? rows : cols);
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
  kiss_fft_cpx *g = (kiss_fft_cpx *)(j->p->tmp + (size_t)worker * j->p->stride);
  kiss_fft_cpx *t = g + FFT_BLOCK * rows; /* one line of output */
  kiss_fft_cpx *d = (kiss_fft_cpx *)j->d;
  for (size_t blk = b; blk < e; blk++) {
    size_t c0 = blk * FFT_BLOCK, w = cols - c0 < FFT_BLOCK ? cols - c0
                                                            : FFT_BLOCK;
    for (size_t r = 0; r < rows; r++)
      for (size_t k = 0; k < w; k++) g[k * rows + r] = d[r * cols + c0 + k];
    for (size_t k = 0; k < w; k++) {
      kiss_fft(j->cfg, g + k * rows, t);
      memcpy(g + k * rows, t, rows * sizeof *t);
    }
    for (size_t r = 0; r < rows; r++)
      for (size_t k = 0; k < w; k++) d[r * cols + c0 + k] = g[k * rows + r];
  }
  return QS_OK;
}

int fft2_run(const qs_method_call *c, const fft2 *p, fft_cpx *d, int inverse) {
  if (c->threads > p->workers) return QS_EINVAL;
  fft_job j = {p, d, inverse ? p->inv_r : p->fwd_r};
  int rc = c->parallel_for(c, 0, p->rows, fft_rows, &j);
  if (rc) return rc;
  j.cfg = inverse ? p->inv_c : p->fwd_c;
  return c->parallel_for(c, 0, (p->cols + FFT_BLOCK - 1) / FFT_BLOCK,
                         fft_cols, &j);
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

/* ------------------------------------------------ the cosine transform */

/* Scale and twiddle of an axis of n: t[2k] = s_k·cos(πk/2n),
 * t[2k+1] = s_k·sin(πk/2n), s_0 = √(1/n), s_k = √(2/n). */
static void dct_twiddles(double *t, size_t n) {
  for (size_t k = 0; k < n; k++) {
    double s = sqrt((k ? 2.0 : 1.0) / (double)n);
    double a = 3.14159265358979323846 * (double)k / (2.0 * (double)n);
    t[2 * k] = s * cos(a);
    t[2 * k + 1] = s * sin(a);
  }
}

int dct2_plan(dct2 *p, size_t rows, size_t cols, int workers) {
  memset(p, 0, sizeof *p);
  int rc = fft2_plan(&p->f, rows, cols, workers);
  if (rc) return rc;
  p->tw_r = malloc(2 * cols * sizeof *p->tw_r);
  p->tw_c = malloc(2 * rows * sizeof *p->tw_c);
  p->mid = malloc(rows * cols * sizeof *p->mid);
  if (!p->tw_r || !p->tw_c || !p->mid) {
    dct2_free(p);
    return QS_ENOMEM;
  }
  dct_twiddles(p->tw_r, cols);
  dct_twiddles(p->tw_c, rows);
  return QS_OK;
}

void dct2_free(dct2 *p) {
  fft2_free(&p->f);
  free(p->tw_r);
  free(p->tw_c);
  free(p->mid);
  memset(p, 0, sizeof *p);
}

/* Makhoul's index of sample j in the reordered line of n: the even
 * samples forwards, then the odd ones backwards. */
static size_t dct_slot(size_t j, size_t n) {
  return j % 2 ? n - 1 - j / 2 : j / 2;
}

/* Two contiguous lines a and b (b NULL: zeros) of n samples, from float
 * or double (one of fa, da), through one FFT into their DCTs, written to
 * oa and ob (ob NULL: not written). */
typedef struct dct_line {
  const float *fa, *fb;
  const double *da, *db;
  size_t n;
  double *oa, *ob;
} dct_line;

static void dct_lines(const dct_line *l, kiss_fft_cfg cfg, const double *tw,
                      kiss_fft_cpx *z, kiss_fft_cpx *zf) {
  size_t n = l->n;
  for (size_t j = 0; j < n; j++) {
    size_t s = dct_slot(j, n);
    z[s].r = l->fa ? l->fa[j] : (float)l->da[j];
    z[s].i = !(l->fb || l->db) ? 0.0f : l->fb ? l->fb[j] : (float)l->db[j];
  }
  kiss_fft(cfg, z, zf);
  for (size_t k = 0; k < n; k++) {
    /* A = (Z_k + conj Z_(n−k))/2 and B = (Z_k − conj Z_(n−k))/2i: the
     * transforms of the real and the imaginary line */
    const kiss_fft_cpx *u = &zf[k], *v = &zf[k ? n - k : 0];
    double ar = 0.5 * ((double)u->r + v->r), ai = 0.5 * ((double)u->i - v->i);
    double c = tw[2 * k], s = tw[2 * k + 1];
    l->oa[k] = ar * c + ai * s;
    if (l->ob) {
      double br = 0.5 * ((double)u->i + v->i),
             bi = 0.5 * ((double)v->r - u->r);
      l->ob[k] = br * c + bi * s;
    }
  }
}

/* One pass of the transform over `lines` lines of n samples from fin
 * (float) or din (double) into out, two lines per FFT: the rows, in
 * place; the columns (`stride` apart), gathered DCT_BLOCK at a time into
 * contiguous scratch and their transforms put back the same way. Each
 * line's values, pairing and arithmetic are the same either way, so are
 * the bits. */
typedef struct dct_job {
  const dct2 *p;
  const float *fin;
  const double *din;
  double *out;
  size_t lines, n, stride;
  kiss_fft_cfg cfg;
  const double *tw;
} dct_job;

/* `count` contiguous lines of n, line k at k·n of fin or din and of out,
 * two per FFT (the last alone when count is odd). */
static void dct_run_lines(const dct_job *j, size_t count, const float *fin,
                          const double *din, double *out, kiss_fft_cpx *z) {
  size_t n = j->n;
  for (size_t a = 0; a < count; a += 2) {
    int two = a + 1 < count;
    size_t i0 = a * n, i1 = i0 + n;
    dct_line l = {.fa = fin ? fin + i0 : NULL,
                  .fb = fin && two ? fin + i1 : NULL,
                  .da = din ? din + i0 : NULL,
                  .db = din && two ? din + i1 : NULL,
                  .n = n,
                  .oa = out + i0,
                  .ob = two ? out + i1 : NULL};
    dct_lines(&l, j->cfg, j->tw, z, z + n);
  }
}

/* Rows: pairs [b, e) of lines, in place from their starts. */
static int dct_rows(void *ctx, size_t b, size_t e, int worker) {
  const dct_job *j = ctx;
  kiss_fft_cpx *z =
      (kiss_fft_cpx *)(j->p->f.tmp + (size_t)worker * j->p->f.stride);
  size_t a0 = 2 * b, a1 = 2 * e < j->lines ? 2 * e : j->lines;
  if (a0 < a1)
    dct_run_lines(j, a1 - a0, j->fin ? j->fin + a0 * j->n : NULL,
                  j->din ? j->din + a0 * j->n : NULL, j->out + a0 * j->n, z);
  return QS_OK;
}

/* Columns: blocks [b, e) of DCT_BLOCK lines (of doubles, line a at a,
 * samples `stride` apart), gathered, transformed, put back. */
static int dct_cols(void *ctx, size_t b, size_t e, int worker) {
  const dct_job *j = ctx;
  size_t n = j->n, st = j->stride;
  kiss_fft_cpx *z =
      (kiss_fft_cpx *)(j->p->f.tmp + (size_t)worker * j->p->f.stride);
  double *g = (double *)(z + 2 * n), *o = g + DCT_BLOCK * n;
  for (size_t blk = b; blk < e; blk++) {
    size_t a0 = blk * DCT_BLOCK,
           w = j->lines - a0 < DCT_BLOCK ? j->lines - a0 : DCT_BLOCK;
    for (size_t r = 0; r < n; r++)
      for (size_t k = 0; k < w; k++) g[k * n + r] = j->din[r * st + a0 + k];
    dct_run_lines(j, w, NULL, g, o, z);
    for (size_t r = 0; r < n; r++)
      for (size_t k = 0; k < w; k++) j->out[r * st + a0 + k] = o[k * n + r];
  }
  return QS_OK;
}

int dct2_run(const qs_method_call *c, const dct2 *p, const float *in,
             double *out) {
  if (c->threads > p->f.workers) return QS_EINVAL;
  size_t rows = p->f.rows, cols = p->f.cols;
  /* the rows into mid, then mid's columns into out */
  dct_job r = {.p = p,
               .fin = in,
               .out = p->mid,
               .lines = rows,
               .n = cols,
               .cfg = p->f.fwd_r,
               .tw = p->tw_r};
  dct_job k = {.p = p,
               .din = p->mid,
               .out = out,
               .lines = cols,
               .n = rows,
               .stride = cols,
               .cfg = p->f.fwd_c,
               .tw = p->tw_c};
  int rc = c->parallel_for(c, 0, (rows + 1) / 2, dct_rows, &r);
  return rc ? rc
            : c->parallel_for(c, 0, (cols + DCT_BLOCK - 1) / DCT_BLOCK,
                              dct_cols, &k);
}
