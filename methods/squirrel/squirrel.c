/* squirrel.c — the squirrel method: SQUIRREL's error map between a
 * super-resolved reconstruction and its diffraction-limited reference, as
 * NanoPyx 2.1.5's ErrorMap computes it (Culley et al. 2018):
 *
 *  1. the reference is the mean of its frames (in double, rounded to
 *     float), brought to the reconstruction's size by Fourier
 *     interpolation (NanoPyx's fht_space_interpolation: mirror padding to
 *     a square of a power-of-two side D, spectrum centred in a zero
 *     spectrum M times larger, inverse transform, real part, rescaled to
 *     the reference's min and max, centre cropped); M = 1 uses it as is;
 *  2. for a σ, the reconstruction blurred by a Gaussian of σ (scipy's
 *     gaussian_filter, methods/shared/gauss.h) is fitted to the reference
 *     by least squares, ref ≈ α·blur + β; the error is the RMS of
 *     α·blur + β − ref;
 *  3. σ minimises that error: scipy's brent() started from the bracket
 *     (0, 4/2.35482·M), whose bracketing search may step to σ <= 0, where
 *     the blur is no blur (NanoPyx reports such a σ as it is);
 *  4. the error map is |blur(α·rec + β, σ) − ref| with α, β, σ rounded to
 *     float (NanoPyx's), RSE its RMS, RSP the Pearson correlation of the
 *     blurred, rescaled reconstruction with the reference (RSE and RSP
 *     from the cosine transforms of step 3 up to 2048 pixels a side, so
 *     they are the same with or without the map: error_map false skips
 *     the map's blur).
 *
 * Outputs: `error_map` (P, R·M, C·M) and `metrics` (P, 1, 5): RSE, RSP,
 * σ (reconstruction pixels), α, β, for P reconstructions (frames of the
 * second input) each scored on its own against the one reference, whose
 * mean, interpolation and transform are made once: a reconstruction's
 * numbers are those of a call with it alone. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/methods.h"
#include "methods/shared/fft.h"
#include "methods/shared/gauss.h"

enum { M_RSE, M_RSP, M_SIGMA, M_ALPHA, M_BETA, M_N };
enum { P_SIGMA, P_MAP };

/* ------------------------------------------------- Fourier interpolation */

/* NanoPyx's mirror padding of an h × w image to a d × d square (d the
 * larger power of two of the sides): an odd number of tiles per axis,
 * flipped on alternate tiles from the middle one, centre cropped. */
static void sq_mirror(const float *img, size_t h, size_t w, size_t d,
                      fft_cpx *out) {
  size_t sw = (d + w - 1) / w, sh = (d + h - 1) / h;
  if (sw % 2 == 0) sw++;
  if (sh % 2 == 0) sh++;
  size_t mw = (sw - 1) / 2, mh = (sh - 1) / 2;
  size_t x0 = (sw * w - d) / 2, y0 = (sh * h - d) / 2;
  for (size_t y = 0; y < d; y++) {
    size_t py = y + y0, th = py / h, j = py % h;
    /* tiles at an odd distance from the middle are flipped */
    size_t q = ((th > mh ? th - mh : mh - th) % 2) ? h - 1 - j : j;
    for (size_t x = 0; x < d; x++) {
      size_t px = x + x0, tw = px / w, i = px % w;
      size_t p = ((tw > mw ? tw - mw : mw - tw) % 2) ? w - 1 - i : i;
      out[y * d + x] = (fft_cpx){img[q * w + p], 0};
    }
  }
}

static size_t sq_pow2(size_t n) {
  size_t p = 1;
  while (p < n) p *= 2;
  return p;
}

/* The reference (h × w) interpolated × m into out (h·m × w·m). */
static int sq_interpolate(const qs_method_call *c, const float *img, size_t h,
                          size_t w, size_t m, float *out) {
  size_t d = sq_pow2(h > w ? h : w), dm = d * m;
  fft2 small, big;
  int rc = fft2_plan(&small, d, d, c->threads);
  int rc2 = fft2_plan(&big, dm, dm, c->threads);
  fft_cpx *a = malloc(d * d * sizeof *a), *b = calloc(dm * dm, sizeof *b);
  fft_cpx *s = malloc(d * d * sizeof *s);
  if (rc || rc2 || !a || !b || !s) {
    rc = QS_ENOMEM;
    goto done;
  }
  float lo = img[0], hi = img[0];
  for (size_t i = 1; i < h * w; i++) {
    lo = img[i] < lo ? img[i] : lo;
    hi = img[i] > hi ? img[i] : hi;
  }
  sq_mirror(img, h, w, d, a);
  rc = fft2_run(c, &small, a, 0);
  if (rc) goto done;
  /* fftshift, centred in the big spectrum, ifftshift: the big spectrum's
   * unshifted index of small shifted index k is (k + o − dm/2) mod dm with
   * o = (dm − d) / 2 */
  fft_shift(a, s, d, d, sizeof *a, 0);
  size_t o = (dm - d) / 2;
  for (size_t y = 0; y < d; y++)
    for (size_t x = 0; x < d; x++) {
      size_t by = (y + o + dm - dm / 2) % dm, bx = (x + o + dm - dm / 2) % dm;
      b[by * dm + bx] = s[y * d + x];
    }
  rc = fft2_run(c, &big, b, 1);
  if (rc) goto done;
  /* real part (the scale of the inverse does not matter: rescaled) */
  float omin = b[0].r, omax = b[0].r;
  for (size_t i = 1; i < dm * dm; i++) {
    omin = b[i].r < omin ? b[i].r : omin;
    omax = b[i].r > omax ? b[i].r : omax;
  }
  float scale = omax != omin ? (hi - lo) / (omax - omin) : 1;
  size_t y0 = (dm - m * h) / 2, x0 = (dm - m * w) / 2;
  for (size_t y = 0; y < m * h; y++)
    for (size_t x = 0; x < m * w; x++) {
      float v = b[(y + y0) * dm + x + x0].r;
      out[y * m * w + x] = omax != omin ? (v - omin) * scale + lo : v;
    }
done:
  fft2_free(&small);
  fft2_free(&big);
  free(a);
  free(b);
  free(s);
  return rc;
}

/* ------------------------------------------------------------- the fit */

/* Sides up to which the fit runs on cosine transforms (below); larger
 * images blur in space at every step of the search. */
#define SQ_DCT_MAX 2048

/* The error of the fit at σ, computed in one of two ways that agree to
 * rounding:
 *  - in space: blur (gauss.h), least squares, RMS — a blur per σ;
 *  - on cosine transforms: the 'reflect' Gaussian is diagonal in the
 *    orthonormal DCT-II (its symmetric extension is the DCT's), with
 *    gain H(k) = Σ_m w[m] cos(π k m / n) per axis, so with X and F the
 *    transforms of the reconstruction and the reference, P = X·F and
 *    Q = X², the blur's covariance with the reference is Σ H·P, its
 *    variance Σ H²·Q (DC excluded), and the residual's energy
 *    α²·ΣH²Q − 2α·ΣHP + ΣF² (the fitted β cancels the DC term): O(pixels)
 *    per σ, in double, after two transforms (fft.h's dct2, O(n log n):
 *    a float FFT, each coefficient within ~1e-7 of the image's energy). */
typedef struct sq_fit {
  const qs_method_call *c;
  const float *ref, *rec; /* ref interpolated, reconstruction: n each */
  float *blur, *tmp;      /* n each (in space) */
  size_t rows, cols, n;
  double *p, *q;          /* DCT: X·F and X², rows × cols (NULL: space) */
  double *x;              /* DCT: X */
  const double *fr;       /* DCT: F, the reference's */
  double *hy, *hx;        /* the gains per axis */
  double *rp, *rq;        /* DCT: per row, Σ hx·P and Σ hx²·Q (sq_sums) */
  const double *csy, *csx; /* the cosines per axis (sq_cosines) */
  double srr, x0, f0;     /* Σ F² without DC; the DC terms */
  double alpha, beta;     /* of the last evaluation */
  int rc;
} sq_fit;

/* The means of x and y (n values) and their centred sums of squares and
 * products, in double: m[0] mean x, m[1] mean y, m[2] Σdx², m[3] Σdx·dy,
 * m[4] Σdy². */
static void sq_moments(const float *x, const float *y, size_t n,
                       double m[5]) {
  double mx = 0, my = 0, sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < n; i++) {
    mx += x[i];
    my += y[i];
  }
  mx /= (double)n;
  my /= (double)n;
  for (size_t i = 0; i < n; i++) {
    double dx = x[i] - mx, dy = y[i] - my;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  m[0] = mx;
  m[1] = my;
  m[2] = sxx;
  m[3] = sxy;
  m[4] = syy;
}

/* The least-squares α, β of ref ≈ α·x + β (scipy's linregress). */
static void sq_regress(const float *x, const float *y, size_t n, double *a,
                       double *b) {
  double m[5];
  sq_moments(x, y, n, m);
  *a = m[2] != 0 ? m[3] / m[2] : 0;
  *b = m[1] - *a * m[0];
}

/* cos(π j / n) for j < 2n into cs: an axis's table for sq_gain. */
static void sq_cosines(size_t n, double *cs) {
  for (size_t j = 0; j < 2 * n; j++)
    cs[j] = cos(3.14159265358979323846 * (double)j / (double)n);
}

/* The gain of scipy's Gaussian of σ along an axis of n at frequencies
 * 0 .. n − 1 (all 1 for σ <= 1e-15: no blur); cs: the axis's sq_cosines. */
static int sq_gain(double sigma, size_t n, const double *cs, double *h) {
  if (!(sigma > 1e-15)) {
    for (size_t k = 0; k < n; k++) h[k] = 1;
    return QS_OK;
  }
  long r = (long)(4.0 * sigma + 0.5);
  double *w = malloc((size_t)(r + 1) * sizeof *w), sum = 0;
  if (!w) return QS_ENOMEM;
  for (long m = 0; m <= r; m++) {
    w[m] = exp(-0.5 / (sigma * sigma) * (double)(m * m));
    sum += m ? 2 * w[m] : w[m];
  }
  for (size_t k = 0; k < n; k++) {
    double g = w[0];
    size_t at = 0; /* k·m mod 2n, stepped */
    for (long m = 1; m <= r; m++) {
      at += k;
      if (at >= 2 * n) at -= 2 * n;
      g += 2 * w[m] * cs[at];
    }
    h[k] = g / sum;
  }
  free(w);
  return QS_OK;
}

/* Rows [b, e) of sq_sums: each row's Σ hx·P and Σ hx²·Q, over x in
 * order as one row alone would sum them, four rows at a time (eight
 * independent chains of additions, where one row's two would wait on
 * each addition's latency). */
static int sq_rows(void *ctx, size_t b, size_t e, int worker) {
  const sq_fit *f = ctx;
  (void)worker;
  size_t cols = f->cols, y = b;
  const double *hx = f->hx;
  for (; y + 4 <= e; y += 4) {
    const double *p0 = f->p + y * cols, *q0 = f->q + y * cols;
    const double *p1 = p0 + cols, *q1 = q0 + cols;
    const double *p2 = p1 + cols, *q2 = q1 + cols;
    const double *p3 = p2 + cols, *q3 = q2 + cols;
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0, c0 = 0, c1 = 0, c2 = 0, c3 = 0;
    for (size_t x = 0; x < cols; x++) {
      double h = hx[x], h2 = hx[x] * hx[x];
      a0 += h * p0[x];
      a1 += h * p1[x];
      a2 += h * p2[x];
      a3 += h * p3[x];
      c0 += h2 * q0[x];
      c1 += h2 * q1[x];
      c2 += h2 * q2[x];
      c3 += h2 * q3[x];
    }
    f->rp[y] = a0, f->rp[y + 1] = a1, f->rp[y + 2] = a2, f->rp[y + 3] = a3;
    f->rq[y] = c0, f->rq[y + 1] = c1, f->rq[y + 2] = c2, f->rq[y + 3] = c3;
  }
  for (; y < e; y++) {
    const double *p = f->p + y * cols, *q = f->q + y * cols;
    double hp = 0, hq = 0;
    for (size_t x = 0; x < cols; x++) {
      hp += hx[x] * p[x];
      hq += hx[x] * hx[x] * q[x];
    }
    f->rp[y] = hp;
    f->rq[y] = hq;
  }
  return QS_OK;
}

/* Σ H·P and Σ H²·Q over the coefficients but DC, at σ (cosine path): the
 * rows' sums on the call's pool (sq_rows), then over the rows in order. */
static int sq_sums(sq_fit *f, double sigma, double *sp, double *sq) {
  int rc = sq_gain(sigma, f->rows, f->csy, f->hy);
  if (!rc) rc = sq_gain(sigma, f->cols, f->csx, f->hx);
  if (!rc) rc = f->c->parallel_for(f->c, 0, f->rows, sq_rows, f);
  if (rc) return rc;
  double a = 0, b = 0;
  for (size_t y = 0; y < f->rows; y++) {
    a += f->hy[y] * f->rp[y];
    b += f->hy[y] * f->hy[y] * f->rq[y];
  }
  *sp = a - f->p[0]; /* the DC term (gain 1) */
  *sq = b - f->q[0];
  return QS_OK;
}

/* The error at σ: RMS of α·blur(rec, σ) + β − ref, α and β fitted. */
static double sq_error(sq_fit *f, double sigma) {
  if (f->rc) return INFINITY;
  if (!f->p) {
    f->rc = gauss_blur(f->c, f->rec, f->blur, f->tmp, f->rows, f->cols, sigma);
    if (f->rc) return INFINITY;
    sq_regress(f->blur, f->ref, f->n, &f->alpha, &f->beta);
    double s = 0;
    for (size_t i = 0; i < f->n; i++) {
      double e = f->alpha * f->blur[i] + f->beta - f->ref[i];
      s += e * e;
    }
    return sqrt(s / (double)f->n);
  }
  double sp, sq;
  f->rc = sq_sums(f, sigma, &sp, &sq);
  if (f->rc) return INFINITY;
  double rn = sqrt((double)f->n);
  f->alpha = sq != 0 ? sp / sq : 0;
  f->beta = f->f0 / rn - f->alpha * f->x0 / rn;
  double e = f->alpha * f->alpha * sq - 2 * f->alpha * sp + f->srr;
  return sqrt(e > 0 ? e / (double)f->n : 0);
}

/* The fit of f->rec on cosine transforms (f->p, f->q, x0), given the
 * reference's transform f->fr (f0, srr) and buffers f->x, f->p, f->q. */
static int sq_fit_dct(sq_fit *f, const dct2 *d) {
  int rc = dct2_run(f->c, d, f->rec, f->x);
  if (rc) return rc;
  f->x0 = f->x[0];
  for (size_t i = 0; i < f->n; i++) {
    f->p[i] = f->x[i] * f->fr[i];
    f->q[i] = f->x[i] * f->x[i];
  }
  return QS_OK;
}

/* scipy.optimize.bracket from (xa, xb): a triple with f(xb) below both
 * ends (golden steps and parabolic extrapolation, growth limit 110). */
static void sq_bracket(sq_fit *f, double x[3], double y[3]) {
  const double gold = 1.618034, tiny = 1e-21, grow = 110.0;
  double xa = x[0], xb = x[1], fa = sq_error(f, xa), fb = sq_error(f, xb);
  if (fa < fb) {
    double t = xa;
    xa = xb;
    xb = t;
    t = fa;
    fa = fb;
    fb = t;
  }
  double xc = xb + gold * (xb - xa), fc = sq_error(f, xc);
  for (int iter = 0; fc < fb && iter <= 1000 && !f->rc; iter++) {
    double t1 = (xb - xa) * (fb - fc), t2 = (xb - xc) * (fb - fa);
    double val = t2 - t1, den = fabs(val) < tiny ? 2 * tiny : 2 * val;
    double w = xb - ((xb - xc) * t2 - (xb - xa) * t1) / den, fw;
    double wlim = xb + grow * (xc - xb);
    if ((w - xc) * (xb - w) > 0) {
      fw = sq_error(f, w);
      if (fw < fc) {
        xa = xb;
        xb = w;
        fa = fb;
        fb = fw;
        break;
      } else if (fw > fb) {
        xc = w;
        fc = fw;
        break;
      }
      w = xc + gold * (xc - xb);
      fw = sq_error(f, w);
    } else if ((w - wlim) * (wlim - xc) >= 0) {
      w = wlim;
      fw = sq_error(f, w);
    } else if ((w - wlim) * (xc - w) > 0) {
      fw = sq_error(f, w);
      if (fw < fc) {
        xb = xc;
        xc = w;
        w = xc + gold * (xc - xb);
        fb = fc;
        fc = fw;
        fw = sq_error(f, w);
      }
    } else {
      w = xc + gold * (xc - xb);
      fw = sq_error(f, w);
    }
    xa = xb;
    xb = xc;
    xc = w;
    fa = fb;
    fb = fc;
    fc = fw;
  }
  x[0] = xa;
  x[1] = xb;
  x[2] = xc;
  y[0] = fa;
  y[1] = fb;
  y[2] = fc;
}

/* scipy.optimize.brent (tol 1.48e-8, at most 1000 iterations) from the
 * bracket: Brent's parabolic interpolation with golden-section steps. */
static double sq_brent(sq_fit *f, const double br[3], const double fb3[3]) {
  const double tol = 1.48e-8, mintol = 1e-11, cg = 0.3819660;
  double x = br[1], w = x, v = x, fx = fb3[1], fw = fx, fv = fx;
  double a = br[0] < br[2] ? br[0] : br[2], b = br[0] < br[2] ? br[2] : br[0];
  double deltax = 0, rat = 0;
  for (int iter = 0; iter < 1000 && !f->rc; iter++) {
    double tol1 = tol * fabs(x) + mintol, tol2 = 2 * tol1;
    double xmid = 0.5 * (a + b);
    if (fabs(x - xmid) < tol2 - 0.5 * (b - a)) break;
    if (fabs(deltax) <= tol1) {
      deltax = x >= xmid ? a - x : b - x;
      rat = cg * deltax;
    } else {
      double t1 = (x - w) * (fx - fv), t2 = (x - v) * (fx - fw);
      double p = (x - v) * t2 - (x - w) * t1;
      t2 = 2 * (t2 - t1);
      if (t2 > 0) p = -p;
      t2 = fabs(t2);
      double dx = deltax;
      deltax = rat;
      if (p > t2 * (a - x) && p < t2 * (b - x) && fabs(p) < fabs(0.5 * t2 * dx)) {
        rat = p / t2;
        double u = x + rat;
        if (u - a < tol2 || b - u < tol2) rat = xmid - x >= 0 ? tol1 : -tol1;
      } else {
        deltax = x >= xmid ? a - x : b - x;
        rat = cg * deltax;
      }
    }
    double u = fabs(rat) < tol1 ? (rat >= 0 ? x + tol1 : x - tol1) : x + rat;
    double fu = sq_error(f, u);
    if (fu > fx) {
      if (u < x)
        a = u;
      else
        b = u;
      if (fu <= fw || w == x) {
        v = w;
        w = u;
        fv = fw;
        fw = fu;
      } else if (fu <= fv || v == x || v == w) {
        v = u;
        fv = fu;
      }
    } else {
      if (u >= x)
        a = x;
      else
        b = x;
      v = w;
      w = x;
      x = u;
      fv = fw;
      fw = fx;
      fx = fu;
    }
  }
  return x;
}

/* Pearson's correlation of x and y (n values), in double; 0 when either
 * is constant (NanoPyx's). */
static double sq_pearson(const float *x, const float *y, size_t n) {
  double m[5];
  sq_moments(x, y, n, m);
  return m[2] == 0 || m[4] == 0 ? 0 : m[3] / sqrt(m[2] * m[4]);
}

/* ------------------------------------------------------------ the method */

static const qs_slot_def sq_inputs[] = {
    {"reference", "diffraction-limited reference (F, R, C): the raw stack, "
                  "whose mean over frames is used, or its mean"},
    {"reconstruction", "super-resolved images (P, R·M, C·M), each scored "
                       "on its own against the one reference"},
};
static const qs_slot_def sq_outputs[] = {
    {"error_map", "(P, R·M, C·M): |blurred, rescaled reconstruction − "
                  "interpolated reference|"},
    {"metrics", "(P, 1, 5): RSE, RSP, sigma (reconstruction pixels), alpha, "
                "beta"},
};
static const qs_param_def sq_params[] = {
    [P_SIGMA] = {"sigma", QS_PARAM_FLOAT, 0, 0, 1e6, 0, NULL,
                 "Gaussian sigma in reconstruction pixels (0: fitted)"},
    [P_MAP] = {"error_map", QS_PARAM_BOOL, 1, 0, 1, 0, NULL,
               "compute the error map (false: zeros, metrics only)"},
};

static int sq_shape(const qs_image *in, const double *p, qs_image *out,
                    char *err, size_t err_len) {
  (void)p;
  for (int k = 0; k < 2; k++) {
    int rc = method_check_input("squirrel", &in[k], err, err_len);
    if (rc) return rc;
  }
  const qs_image *r = &in[0], *s = &in[1];
  size_t m = s->rows / r->rows;
  if (m < 1 || s->rows != m * r->rows || s->cols != m * r->cols ||
      m > 64) {
    snprintf(err, err_len,
             "squirrel: reconstruction is %zu x %zu, not the reference's %zu "
             "x %zu times a magnification from 1 to 64",
             s->rows, s->cols, r->rows, r->cols);
    return QS_ESHAPE;
  }
  if (r->rows * r->cols < 2) {
    snprintf(err, err_len, "squirrel: reference of one pixel");
    return QS_ESHAPE;
  }
  out[0] = (qs_image){.frames = s->frames, .rows = s->rows, .cols = s->cols};
  out[1] = (qs_image){.frames = s->frames, .rows = 1, .cols = M_N};
  return QS_OK;
}

static double sq_work(const qs_image *in, const double *p) {
  (void)p;
  return (double)in[1].frames * (double)in[1].rows * (double)in[1].cols * 64;
}

/* The metrics (and the map, if asked) of reconstruction f->rec into met
 * and map; f's transforms prepared (f->p) or not (the fit in space). */
static int sq_one(const qs_method_call *c, sq_fit *f, float *scaled,
                  float *met, float *map) {
  size_t n = f->n;
  double sigma = c->p[P_SIGMA];
  if (sigma == 0) {
    double x[3] = {0, 4 / 2.35482 * (double)(f->rows / c->in[0].rows)}, y[3];
    sq_bracket(f, x, y);
    sigma = sq_brent(f, x, y);
  }
  sq_error(f, sigma); /* α, β at σ */
  if (f->rc) return f->rc;
  /* NanoPyx keeps α, β and σ as float and blurs α·rec + β */
  float a32 = (float)f->alpha, b32 = (float)f->beta, s32 = (float)sigma;
  met[M_SIGMA] = s32;
  met[M_ALPHA] = a32;
  met[M_BETA] = b32;
  if (f->p) {
    /* RSE and RSP from the transforms (the blur's, at σ, α and β as
     * float), so that they do not depend on whether the map is made */
    double sp, sq, rn = sqrt((double)n);
    int rc = sq_sums(f, s32, &sp, &sq);
    if (rc) return rc;
    double dc = (double)a32 * f->x0 + (double)b32 * rn - f->f0;
    double e = (double)a32 * a32 * sq - 2.0 * a32 * sp + f->srr + dc * dc;
    met[M_RSE] = (float)sqrt(e > 0 ? e / (double)n : 0);
    met[M_RSP] = sq > 0 && f->srr > 0 && a32 != 0
                     ? (float)((a32 > 0 ? sp : -sp) / sqrt(sq * f->srr))
                     : 0;
  }
  if (c->p[P_MAP] != 0 || !f->p) {
    for (size_t i = 0; i < n; i++) scaled[i] = a32 * f->rec[i] + b32;
    int rc = gauss_blur(c, scaled, f->blur, f->tmp, f->rows, f->cols, s32);
    if (rc) return rc;
    double se = 0;
    for (size_t i = 0; i < n; i++) {
      float e = f->blur[i] - f->ref[i];
      if (c->p[P_MAP] != 0) map[i] = fabsf(e);
      se += (double)e * (double)e;
    }
    if (!f->p) {
      met[M_RSE] = (float)sqrt(se / (double)n);
      met[M_RSP] = (float)sq_pearson(f->blur, f->ref, n);
    }
  }
  return QS_OK;
}

/* The reference (mean, interpolation and its transform) is made once for
 * all the reconstructions, which are scored one by one. */
static int sq_run(const qs_method_call *c) {
  const qs_image *r = &c->in[0], *s = &c->in[1];
  size_t h = r->rows, w = r->cols, m = s->rows / r->rows;
  size_t n = s->rows * s->cols, plane = h * w;
  float *mean = malloc(plane * sizeof *mean);
  float *ref = malloc(n * sizeof *ref), *blur = malloc(n * sizeof *blur);
  float *tmp = malloc(n * sizeof *tmp), *scaled = malloc(n * sizeof *scaled);
  sq_fit f0 = {.c = c, .ref = ref, .blur = blur, .tmp = tmp,
               .rows = s->rows, .cols = s->cols, .n = n};
  dct2 d = {0};
  double *fr = NULL, *x = NULL, *p = NULL, *q = NULL, *hs = NULL;
  int rc = QS_OK;
  if (!mean || !ref || !blur || !tmp || !scaled) {
    rc = QS_ENOMEM;
    snprintf(c->err, c->err_len, "squirrel: no memory for %zu pixels", n);
    goto done;
  }
  for (size_t i = 0; i < plane; i++) {
    double sum = 0;
    for (size_t k = 0; k < r->frames; k++) sum += r->data[k * plane + i];
    mean[i] = (float)(sum / (double)r->frames);
  }
  if (m > 1)
    rc = sq_interpolate(c, mean, h, w, m, ref);
  else
    memcpy(ref, mean, n * sizeof *ref);
  if (rc) {
    snprintf(c->err, c->err_len,
             "squirrel: no memory for the reference's interpolation");
    goto done;
  }
  /* the fit on cosine transforms where they fit in memory, else in space */
  if (s->rows <= SQ_DCT_MAX && s->cols <= SQ_DCT_MAX &&
      !dct2_plan(&d, s->rows, s->cols, c->threads)) {
    fr = malloc(n * sizeof *fr);
    x = malloc(n * sizeof *x);
    p = malloc(n * sizeof *p);
    q = malloc(n * sizeof *q);
    /* the gains per axis, the cosines per axis (2 per frequency) and
     * the rows' sums (2 per row) */
    hs = malloc((5 * s->rows + 3 * s->cols) * sizeof *hs);
    if (fr && x && p && q && hs && !dct2_run(c, &d, ref, fr)) {
      f0.fr = fr;
      f0.x = x;
      f0.hy = hs;
      f0.hx = hs + s->rows;
      double *cs = hs + s->rows + s->cols;
      sq_cosines(s->rows, cs);
      sq_cosines(s->cols, cs + 2 * s->rows);
      f0.csy = cs;
      f0.csx = cs + 2 * s->rows;
      f0.rp = cs + 2 * (s->rows + s->cols);
      f0.rq = f0.rp + s->rows;
      f0.f0 = fr[0];
      for (size_t i = 1; i < n; i++) f0.srr += fr[i] * fr[i];
    }
  }
  for (size_t k = 0; !rc && k < s->frames; k++) {
    sq_fit f = f0;
    f.rec = s->data + k * n;
    if (f.fr) {
      f.p = p;
      f.q = q;
      if (sq_fit_dct(&f, &d)) f.p = f.q = NULL; /* in space */
    }
    rc = sq_one(c, &f, scaled, c->out[1].data + k * M_N,
                c->out[0].data + k * n);
    if (rc) {
      snprintf(c->err, c->err_len, "squirrel: no memory for the blur");
      break;
    }
    if (method_advance(c, 1, s->frames)) rc = QS_ECANCELLED;
  }
done:
  dct2_free(&d);
  free(fr);
  free(x);
  free(p);
  free(q);
  free(hs);
  free(mean);
  free(ref);
  free(blur);
  free(tmp);
  free(scaled);
  return rc;
}

static const qs_impl_def sq_impls[] = {
    {"serial", QS_IMPL_SERIAL, sq_run, NULL, 1, QS_SCHED_STATIC, 0},
    {"threaded", QS_IMPL_THREADED, sq_run, NULL, 1, QS_SCHED_STATIC, 0},
};

const qs_method_desc method_squirrel = {
    .name = "squirrel",
    .doc = "SQUIRREL error map of a reconstruction against its "
           "diffraction-limited reference: RSE and RSP (NanoPyx's ErrorMap)",
    .inputs = sq_inputs,
    .n_inputs = 2,
    .outputs = sq_outputs,
    .n_outputs = 2,
    .params = sq_params,
    .n_params = sizeof sq_params / sizeof sq_params[0],
    .impls = sq_impls,
    .n_impls = sizeof sq_impls / sizeof sq_impls[0],
    .shape = sq_shape,
    .work = sq_work,
    .tolerance = 1e-5,
};
