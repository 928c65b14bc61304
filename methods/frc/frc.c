/* frc.c — the frc method: Fourier ring correlation between two images and
 * the FIRE resolution, as NanoPyx 2.1.5's FIRECalculator computes them
 * (every step below is its, kept for parity where it is a quirk):
 *
 *  1. both images are cropped to the centred even square of side N (the
 *     smaller side, made even; NanoPyx's make_even_square, whose crop is
 *     one pixel short of centred when the difference is odd);
 *  2. each is multiplied by a Tukey window (α = 0.25, scipy's, in float)
 *     along both axes, transformed (FFT, float) and shifted to the centre;
 *  3. per ring r = 1 .. N/2 − 2, the products a·b*, |a|², |b|² are sampled
 *     bilinearly at angles 0, 1/r, 2/r, ... < 2π (float) around the centre
 *     N/2, summed in double, and FRC(r) = Σ a·b* / sqrt(Σ|a|² Σ|b|²); ring
 *     0 is 1;
 *  4. ring r is given the frequency r / (2·(N/2 − 2)) / pixel_size
 *     (NanoPyx's linspace over the rings, not r / N);
 *  5. the curve is smoothed (Savitzky–Golay, cubic, window
 *     int(0.0707·rings), at least 4, edges by cubic fits as scipy's
 *     'interp'), and the first ring where it crosses the threshold (1/7,
 *     NanoPyx's; or the half-bit curve of van Heel & Schatz 2005 with the
 *     ring's sample count) gives the crossing frequency f by linear
 *     interpolation and the FIRE resolution 1/f (0 when none crosses).
 *
 * Outputs: `curve` (1, 3, rings): frequency, FRC, smoothed FRC; and
 * `resolution` (1, 1, 3): FIRE resolution in pixel_size units, the
 * crossing frequency, the ring count. */
#include "methods/frc/frc.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/methods.h"
#include "methods/shared/fft.h"

#define FRC_PI 3.14159265358979323846

/* The centred even square NanoPyx crops to: side n, first row and column. */
static size_t frc_square(size_t rows, size_t cols, size_t *r0, size_t *c0) {
  size_t n = rows < cols ? rows : cols;
  n -= n % 2;
  *r0 = (rows - n) / 2;
  *c0 = (cols - n) / 2;
  return n;
}

size_t frc_rings(size_t rows, size_t cols) {
  size_t r0, c0, n = frc_square(rows, cols, &r0, &c0);
  if (n < 4) return 0;
  size_t rings = n / 2 - 1;
  size_t w = (size_t)(0.0707 * (double)rings);
  if (w <= 3) w = 4;
  return w <= rings ? rings : 0;
}

/* scipy.signal.windows.tukey(m, 0.25) (symmetric), rounded to float. */
static void frc_tukey(float *w, size_t m) {
  const double alpha = 0.25;
  if (m == 1) {
    w[0] = 1;
    return;
  }
  size_t width = (size_t)floor(alpha * (double)(m - 1) / 2.0);
  for (size_t k = 0; k < m; k++) {
    double n = (double)k, v = 1;
    if (k <= width)
      v = 0.5 * (1 + cos(FRC_PI * (-1 + 2.0 * n / alpha / (double)(m - 1))));
    else if (k >= m - width - 1)
      v = 0.5 * (1 + cos(FRC_PI * (-2.0 / alpha + 1 +
                                 2.0 * n / alpha / (double)(m - 1))));
    w[k] = (float)v;
  }
}

/* Least-squares polynomial of `order` through y[0..w) at t = 0..w−1,
 * evaluated at t0, as weights: value = Σ c[k]·y[k]. Normal equations in
 * double on t centred at the window's middle. */
static void frc_sg_weights(int w, int order, double t0, double *c) {
  double a[4][4] = {{0}}, inv[4][4], mid = (w - 1) / 2.0;
  int m = order + 1;
  for (int k = 0; k < w; k++) {
    double t = k - mid, p[4] = {1, t, t * t, t * t * t};
    for (int i = 0; i < m; i++)
      for (int j = 0; j < m; j++) a[i][j] += p[i] * p[j];
  }
  /* Gauss–Jordan inverse of the m × m matrix */
  for (int i = 0; i < m; i++)
    for (int j = 0; j < m; j++) inv[i][j] = i == j;
  for (int i = 0; i < m; i++) {
    int piv = i;
    for (int r = i + 1; r < m; r++)
      if (fabs(a[r][i]) > fabs(a[piv][i])) piv = r;
    for (int j = 0; j < m; j++) {
      double t = a[i][j];
      a[i][j] = a[piv][j];
      a[piv][j] = t;
      t = inv[i][j];
      inv[i][j] = inv[piv][j];
      inv[piv][j] = t;
    }
    double d = a[i][i];
    for (int j = 0; j < m; j++) {
      a[i][j] /= d;
      inv[i][j] /= d;
    }
    for (int r = 0; r < m; r++) {
      if (r == i) continue;
      double f = a[r][i];
      for (int j = 0; j < m; j++) {
        a[r][j] -= f * a[i][j];
        inv[r][j] -= f * inv[i][j];
      }
    }
  }
  double e = t0 - mid, q[4] = {1, e, e * e, e * e * e}, g[4] = {0};
  for (int i = 0; i < m; i++)
    for (int j = 0; j < m; j++) g[j] += q[i] * inv[i][j];
  for (int k = 0; k < w; k++) {
    double t = k - mid, p[4] = {1, t, t * t, t * t * t};
    c[k] = 0;
    for (int j = 0; j < m; j++) c[k] += g[j] * p[j];
  }
}

/* scipy.signal.savgol_filter(y, w, 3) with mode 'interp' on n >= w float
 * values, rounded to float. c holds w doubles of scratch. */
static void frc_smooth(const float *y, float *out, size_t n, int w,
                       double *c) {
  int h = w / 2, a = (w - 1) / 2;
  frc_sg_weights(w, 3, (w - 1) / 2.0, c);
  for (size_t i = (size_t)h; i + (size_t)h < n; i++) {
    double s = 0;
    for (int k = 0; k < w; k++) s += c[k] * y[i - (size_t)a + (size_t)k];
    out[i] = (float)s;
  }
  for (int e = 0; e < h; e++) {
    double s = 0, t = 0;
    frc_sg_weights(w, 3, e, c);
    for (int k = 0; k < w; k++) s += c[k] * y[k];
    frc_sg_weights(w, 3, w - h + e, c);
    for (int k = 0; k < w; k++) t += c[k] * y[n - (size_t)w + (size_t)k];
    out[e] = (float)s;
    out[n - (size_t)h + (size_t)e] = (float)t;
  }
}

/* The samples of ring r (NanoPyx's numpy arange(0, 2π, 1/r, float32):
 * ceil(2π r) angles i·(float)(1/r)). */
static size_t frc_ring_count(size_t r) {
  return (size_t)ceil((double)(float)(FRC_PI * 2) / (1.0 / (double)r));
}

/* Sample i of ring r around the centre of an n × n spectrum: the
 * lower-left pixel of its bilinear cell (*ll) and its fractions along x
 * and y, as NanoPyx places it (x in double, its cosine being double; y in
 * float, its sine being float). */
static inline void frc_sample(size_t n, size_t r, size_t i, size_t *ll,
                              float *xf, float *yf) {
  double centre = (double)(n / 2);
  float delta = (float)(1.0 / (double)r);
  float angle = (float)i * delta;
  double ca = cos((double)angle);
  float caf = (float)ca;
  float sn = (float)sqrt((double)(1 - caf * caf));
  if ((double)angle > FRC_PI) sn = -sn;
  float x = (float)(centre + (double)r * ca);
  float y = (float)centre + (float)r * sn;
  int xb = (int)x, yb = (int)y;
  *xf = x - (float)xb;
  *yf = y - (float)yb;
  if (*xf < 0) *xf = 0;
  if (*yf < 0) *yf = 0;
  *ll = (size_t)yb * n + (size_t)xb;
}

/* What a plan of frc keeps for one size (frc_open): the transforms'
 * plan, the taper, the buffers, and every ring's samples made once
 * (frc_sample: its cell and fractions), which a one-shot call computes
 * as it sums (a cosine and a square root a sample: a quarter of the call
 * at 1280 x 1280, 25 calls of the parameter sweep on one size). */
typedef struct frc_state {
  size_t rows, cols, n, rings;
  int workers;
  fft2 p;
  float *taper;
  fft_cpx *fa;          /* 2 planes of n × n */
  float *prod;          /* n × n pixels of 3 products */
  double *sums;         /* per ring: 3 sums and the sample count */
  float *own;           /* the curve when the caller wants none, and the
                           thresholds */
  double *sg;           /* the smoothing's weights */
  size_t *first;        /* ring r's samples: [first[r], first[r + 1]) */
  uint32_t *at;         /* per sample: its cell's lower-left pixel */
  float *fx, *fy;       /* per sample: its fractions */
} frc_state;

typedef struct frc_job {
  const float *a, *b;
  size_t cols, r0, c0, n;
  const float *taper;
  fft_cpx *fa, *fb;   /* n × n, then shifted into sa, sb */
  float *prod;        /* n × n pixels of 3: a·b*, |a|², |b|² */
  double *sums;       /* per ring: 3 sums and the sample count */
  size_t rings;
  const frc_state *st; /* a plan's ring samples, or NULL: computed here */
} frc_job;

/* Rows [b, e) of the windowed crops into the transform buffers. */
static int frc_window(void *ctx, size_t b, size_t e, int worker) {
  frc_job *j = ctx;
  (void)worker;
  for (size_t y = b; y < e; y++)
    for (size_t x = 0; x < j->n; x++) {
      size_t at = (j->r0 + y) * j->cols + j->c0 + x;
      float ty = j->taper[y], tx = j->taper[x];
      j->fa[y * j->n + x] = (fft_cpx){j->a[at] * tx * ty, 0};
      j->fb[y * j->n + x] = (fft_cpx){j->b[at] * tx * ty, 0};
    }
  return QS_OK;
}

/* Rows [b, e) of the shifted spectra: the three products (float). */
static int frc_products(void *ctx, size_t b, size_t e, int worker) {
  frc_job *j = ctx;
  (void)worker;
  size_t n = j->n, h = n / 2;
  for (size_t y = b; y < e; y++)
    for (size_t x = 0; x < n; x++) {
      /* fftshift: shifted (y, x) is unshifted ((y + h) % n, (x + h) % n) */
      size_t src = ((y + h) % n) * n + (x + h) % n, at = y * n + x;
      float a1 = j->fa[src].r, b1 = j->fa[src].i;
      float a2 = j->fb[src].r, b2 = j->fb[src].i;
      j->prod[3 * at] = a1 * a2 + b1 * b2;
      j->prod[3 * at + 1] = a1 * a1 + b1 * b1;
      j->prod[3 * at + 2] = a2 * a2 + b2 * b2;
    }
  return QS_OK;
}

/* One bilinear sample of the three products, added to s. They are
 * interleaved per pixel, so that a sample reads two cache lines (its two
 * rows) rather than six: along a ring the next sample is a pixel away, in
 * a new row wherever the ring runs up or down. */
static inline void frc_add(const float *prod, size_t n, size_t ll, float xf,
                           float yf, double s[3]) {
  const float *lo = prod + 3 * ll, *up = prod + 3 * (ll + n);
  for (int k = 0; k < 3; k++) {
    float u = up[k] + xf * (up[3 + k] - up[k]);
    float l = lo[k] + xf * (lo[3 + k] - lo[k]);
    s[k] += l + yf * (u - l);
  }
}

/* Rings [b, e): bilinear samples on the circle, summed in double. */
static int frc_ring_sums(void *ctx, size_t b, size_t e, int worker) {
  frc_job *j = ctx;
  (void)worker;
  size_t n = j->n;
  const frc_state *st = j->st;
  for (size_t r = b < 1 ? 1 : b; r < e; r++) {
    double s[3] = {0, 0, 0};
    size_t count;
    if (st) { /* the plan's samples */
      size_t i0 = st->first[r];
      count = st->first[r + 1] - i0;
      for (size_t i = i0; i < i0 + count; i++)
        frc_add(j->prod, n, st->at[i], st->fx[i], st->fy[i], s);
    } else {
      count = frc_ring_count(r);
      for (size_t i = 0; i < count; i++) {
        size_t ll;
        float xf, yf;
        frc_sample(n, r, i, &ll, &xf, &yf);
        frc_add(j->prod, n, ll, xf, yf, s);
      }
    }
    double *out = j->sums + 4 * r;
    out[0] = s[0];
    out[1] = s[1];
    out[2] = s[2];
    out[3] = (double)count;
  }
  return QS_OK;
}

static void frc_state_free(void *p) {
  frc_state *st = p;
  if (!st) return;
  fft2_free(&st->p);
  free(st->taper);
  free(st->fa);
  free(st->prod);
  free(st->sums);
  free(st->own);
  free(st->sg);
  free(st->first);
  free(st->at);
  free(st->fx);
  free(st->fy);
  free(st);
}

/* Rings [b, e) of a plan's samples (its first[] already made). */
static int frc_fill_rings(void *ctx, size_t b, size_t e, int worker) {
  frc_state *st = ctx;
  (void)worker;
  for (size_t r = b < 1 ? 1 : b; r < e; r++)
    for (size_t i = 0, k = st->first[r]; k < st->first[r + 1]; i++, k++) {
      size_t ll;
      frc_sample(st->n, r, i, &ll, &st->fx[k], &st->fy[k]);
      st->at[k] = (uint32_t)ll;
    }
  return QS_OK;
}

/* The buffers of a call on rows × cols; with samples, every ring's too.
 * NULL without memory. */
static frc_state *frc_state_new(const qs_method_call *c, size_t rows,
                                size_t cols, int samples) {
  frc_state *st = calloc(1, sizeof *st);
  if (!st) return NULL;
  size_t r0, c0, n = frc_square(rows, cols, &r0, &c0), plane = n * n;
  size_t rings = frc_rings(rows, cols);
  int w = (int)(0.0707 * (double)rings);
  if (w <= 3) w = 4;
  *st = (frc_state){.rows = rows, .cols = cols, .n = n, .rings = rings,
                    .workers = c->threads};
  int rc = fft2_plan(&st->p, n, n, c->threads);
  st->taper = malloc(n * sizeof *st->taper);
  st->fa = malloc(2 * plane * sizeof *st->fa);
  st->prod = malloc(3 * plane * sizeof *st->prod);
  st->sums = calloc(4 * rings, sizeof *st->sums);
  st->own = malloc(5 * rings * sizeof *st->own);
  st->sg = malloc((size_t)w * sizeof *st->sg);
  if (rc || !st->taper || !st->fa || !st->prod || !st->sums || !st->own ||
      !st->sg) {
    frc_state_free(st);
    return NULL;
  }
  frc_tukey(st->taper, n);
  if (!samples) return st;
  /* ring r's samples start where ring r - 1's end (ring 0 has none); a
   * cell index fits 32 bits up to 65536 pixels a side */
  st->first = malloc((rings + 1) * sizeof *st->first);
  size_t total = 0;
  for (size_t r = 0; st->first && r <= rings; r++) {
    st->first[r] = total;
    if (r >= 1 && r < rings) total += frc_ring_count(r);
  }
  if (st->first && n <= 65536) {
    st->at = malloc(total * sizeof *st->at);
    st->fx = malloc(total * sizeof *st->fx);
    st->fy = malloc(total * sizeof *st->fy);
  }
  if (!st->first || !st->at || !st->fx || !st->fy ||
      c->parallel_for(c, 1, rings, frc_fill_rings, st)) {
    frc_state_free(st);
    return NULL;
  }
  return st;
}

/* The threshold at ring r with `count` samples. */
static float frc_threshold(int kind, double count) {
  if (kind == FRC_HALF_BIT) {
    double s = sqrt(count > 1 ? count : 1);
    return (float)((0.2071 + 1.9102 / s) / (1.2071 + 0.9102 / s));
  }
  return (float)(1.0 / 7.0);
}

/* The first crossing of the smoothed curve with the threshold, as
 * NanoPyx's _get_intersections (float arithmetic): its frequency into *f;
 * returns 0 when there is none. */
static int frc_crossing(const float *freq, const float *y, const float *thr,
                        size_t n, float *f) {
  for (size_t i = 1; i < n; i++) {
    float y1 = y[i - 1], y2 = y[i], y3 = thr[i - 1], y4 = thr[i];
    if (!((y3 >= y1 && y4 < y2) || (y1 >= y3 && y2 < y4))) continue;
    float x1 = freq[i - 1], x2 = freq[i], x3 = x1, x4 = x2;
    float x12 = x1 - x2, x34 = x3 - x4, y12 = y1 - y2, y34 = y3 - y4;
    float den = x12 * y34 - y12 * x34;
    if (den == 0) {
      if (y1 != y3) continue;
      *f = x1;
      return 1;
    }
    *f = ((x1 * y2 - y1 * x2) * x34 - x12 * (x3 * y4 - y3 * x4)) / den;
    return 1;
  }
  *f = 0;
  return 0;
}

int frc_compute(const qs_method_call *c, const float *a, const float *b,
                size_t rows, size_t cols, double pixel_size, int threshold,
                float *curve, float *res, char *err, size_t err_len) {
  size_t r0, c0, n = frc_square(rows, cols, &r0, &c0);
  size_t rings = frc_rings(rows, cols);
  if (!rings) {
    snprintf(err, err_len,
             "frc: images of %zu x %zu pixels are too small (the centred "
             "even square must give at least 5 rings: 12 x 12 pixels)",
             rows, cols);
    return QS_ESHAPE;
  }
  /* a plan's state for this size and pool, else this call's own buffers
   * (its rings sampled as they are summed) */
  frc_state *st = c->state, *mine = NULL;
  if (!st || st->rows != rows || st->cols != cols ||
      st->workers != c->threads)
    st = mine = frc_state_new(c, rows, cols, 0);
  if (!st) {
    snprintf(err, err_len, "frc: no memory for the transforms of %zu x %zu",
             n, n);
    return QS_ENOMEM;
  }
  frc_job j = {.a = a, .b = b, .cols = cols, .r0 = r0, .c0 = c0, .n = n,
               .rings = rings, .taper = st->taper, .fa = st->fa,
               .fb = st->fa + n * n, .prod = st->prod, .sums = st->sums,
               .st = st->first ? st : NULL};
  int w = (int)(0.0707 * (double)rings);
  if (w <= 3) w = 4;
  float *own = st->own;
  double *sg = st->sg;
  int rc = c->parallel_for(c, 0, n, frc_window, &j);
  if (!rc) rc = fft2_run(c, &st->p, j.fa, 0);
  if (!rc) rc = fft2_run(c, &st->p, j.fb, 0);
  if (!rc) rc = c->parallel_for(c, 0, n, frc_products, &j);
  if (!rc) rc = c->parallel_for(c, 1, rings, frc_ring_sums, &j);
  if (rc) goto done;
  float *freq = curve ? curve : own, *val = freq + rings, *sm = val + rings;
  float *thr = own + 3 * rings;
  for (size_t r = 0; r < rings; r++) {
    /* numpy's linspace(0, 1 / (2·ps), rings) in double, rounded to float */
    double stop = 1 / (2 * pixel_size);
    freq[r] = (float)(r + 1 == rings ? stop
                                     : (double)r * (stop / (double)(rings - 1)));
    const double *s = j.sums + 4 * r;
    val[r] = r == 0 ? 1.0f : (float)(s[0] / sqrt(s[1] * s[2]));
    thr[r] = frc_threshold(threshold, r == 0 ? 1 : s[3]);
  }
  /* the half-bit curve is 1 at ring 0 (one sample), where every curve
   * starts: it starts from ring 1's value, so that only a real crossing
   * counts */
  if (threshold == FRC_HALF_BIT) thr[0] = thr[1];
  frc_smooth(val, sm, rings, w, sg);
  float f;
  /* NanoPyx's FIRE number: 1 / f in float, 0 without a crossing */
  res[FRC_RES] = frc_crossing(freq, sm, thr, rings, &f) ? 1 / f : 0;
  res[FRC_RES_FREQ] = f;
  res[FRC_RES_RINGS] = (float)rings;
done:
  frc_state_free(mine);
  return rc;
}

/* ----------------------------------------------------------- the method */

enum { P_PIXEL_SIZE, P_THRESHOLD };

static const qs_slot_def frc_inputs[] = {
    {"image_a", "first image (one frame), e.g. the odd frames' result"},
    {"image_b", "second image, same shape, independent noise"},
};
static const qs_slot_def frc_outputs[] = {
    {"curve", "(1, 3, rings): spatial frequency, FRC, smoothed FRC"},
    {"resolution", "(1, 1, 3): FIRE resolution (pixel_size units; 0: the "
                   "curve never crosses the threshold), crossing frequency, "
                   "rings"},
};
static const qs_param_def frc_params[] = {
    [P_PIXEL_SIZE] = {"pixel_size", QS_PARAM_FLOAT, 1, 0, 1e9,
                      QS_PARAM_MIN_OPEN, NULL,
                      "size of a pixel (the resolution's unit)"},
    [P_THRESHOLD] = {"threshold", QS_PARAM_ENUM, FRC_SEVENTH, 0, 0, 0,
                     FRC_THRESHOLDS,
                     "seventh: the fixed 1/7 (NanoPyx's FIRE); half_bit: "
                     "van Heel & Schatz's half-bit curve"},
};

static int frc_shape(const qs_image *in, const double *p, qs_image *out,
                     char *err, size_t err_len) {
  (void)p;
  for (int k = 0; k < 2; k++) {
    int rc = method_check_input("frc", &in[k], err, err_len);
    if (rc) return rc;
    if (in[k].frames != 1) {
      snprintf(err, err_len,
               "frc: %s has %zu frames; FRC compares two single images",
               frc_inputs[k].name, in[k].frames);
      return QS_ESHAPE;
    }
  }
  if (in[0].rows != in[1].rows || in[0].cols != in[1].cols) {
    snprintf(err, err_len, "frc: image_b is %zu x %zu, image_a %zu x %zu",
             in[1].rows, in[1].cols, in[0].rows, in[0].cols);
    return QS_ESHAPE;
  }
  size_t rings = frc_rings(in[0].rows, in[0].cols);
  if (!rings) {
    snprintf(err, err_len,
             "frc: image_a of %zu x %zu pixels is too small (at least 12 x "
             "12)",
             in[0].rows, in[0].cols);
    return QS_ESHAPE;
  }
  out[0] = (qs_image){.frames = 1, .rows = 3, .cols = rings};
  out[1] = (qs_image){.frames = 1, .rows = 1, .cols = FRC_RES_N};
  return QS_OK;
}

static double frc_work(const qs_image *in, const double *p) {
  (void)p;
  double n = (double)(in[0].rows < in[0].cols ? in[0].rows : in[0].cols);
  return n * n * (log2(n > 2 ? n : 2) + 4);
}

static int frc_run(const qs_method_call *c) {
  return frc_compute(c, c->in[0].data, c->in[1].data, c->in[0].rows,
                     c->in[0].cols, c->p[P_PIXEL_SIZE], (int)c->p[P_THRESHOLD],
                     c->out[0].data, c->out[1].data, c->err, c->err_len);
}

/* A plan's state: the buffers and every ring's samples for its size. */
static int frc_open(const qs_method_call *c, void **state) {
  *state = frc_state_new(c, c->in[0].rows, c->in[0].cols, 1);
  if (*state) return QS_OK;
  snprintf(c->err, c->err_len, "frc: no memory for a plan of %zu x %zu",
           c->in[0].rows, c->in[0].cols);
  return QS_ENOMEM;
}

static const qs_impl_def frc_impls[] = {
    {"serial", QS_IMPL_SERIAL, frc_run, NULL, 2, QS_SCHED_STATIC, 0, frc_open,
     frc_state_free},
    {"threaded", QS_IMPL_THREADED, frc_run, NULL, 2, QS_SCHED_STATIC, 0,
     frc_open, frc_state_free},
};

const qs_method_desc method_frc = {
    .name = "frc",
    .doc = "Fourier ring correlation of two images and the FIRE resolution "
           "(NanoPyx's FIRECalculator)",
    .inputs = frc_inputs,
    .n_inputs = 2,
    .outputs = frc_outputs,
    .n_outputs = 2,
    .params = frc_params,
    .n_params = sizeof frc_params / sizeof frc_params[0],
    .impls = frc_impls,
    .n_impls = sizeof frc_impls / sizeof frc_impls[0],
    .shape = frc_shape,
    .work = frc_work,
    .tolerance = 1e-6,
};
