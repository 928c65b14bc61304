/* decorr.c — the decorr method: image resolution by decorrelation
 * analysis (Descloux, Grußmayer & Radenovic 2019) as NanoPyx 2.1.5's
 * DecorrAnalysis computes it. Its steps, quirks kept for parity:
 *
 *  1. the edges are apodised (a raised cosine over 20 pixels towards the
 *     mean of the pixels outside the circle of radius w/2 − 20);
 *  2. the image is placed in a square of the next power-of-two side N
 *     filled with its first pixel, columns centred, rows from the top
 *     (NanoPyx's offset is applied to columns only);
 *  3. its spectrum (FFT, shifted, DC set to 0) and the spectrum
 *     normalised to unit modulus are correlated ring by ring over the
 *     first half of the spectrum (x-major scan up to the centre): d(r) is
 *     the correlation within normalised radius r (n_r radii over [rmin,
 *     rmax]), d0 the curve of the image itself;
 *  4. each curve's highest local maximum (a peak that rises more than
 *     0.001 above what follows it) gives a cut-off kc and amplitude A;
 *  5. curves of the image minus Gaussian blurs of it (n_g σ from 0.14 to
 *     2/kc0, logarithmically) refine the range of σ and radii; a second
 *     pass of n_g curves gives the largest kc: resolution = 2·pixel_size /
 *     kc_max (0 when no curve has a maximum: NanoPyx then reports
 *     uninitialised memory).
 *
 * NanoPyx's arithmetic is followed where it decides the curves' bits:
 * its image halves are whole pixels (C division of ints: an odd side's
 * centre is left of the middle), its edge mean and spectrum norm are float
 * sums split between the two OpenMP threads the fixtures were made with,
 * squares are summed in float; and the DC bin of each high-pass image is
 * its sum in double (what numpy's transform gives), not kissfft's float
 * noise: whether it is 0 adds or not 1 to every radius's normalised
 * energy. The curves then agree with NanoPyx's within 3e-7.
 *
 * Outputs: `resolution` (1, 1, 4): resolution (pixel_size units), kc_max,
 * its amplitude, kc0; `curves` (1, 1 + 2·n_g, n_r): d0, then the blurred
 * curves of both passes. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods/methods.h"
#include "methods/shared/fft.h"
#include "methods/shared/gauss.h"

#define DC_PI 3.14159265358979323846

/* The row from which NanoPyx's norm of the spectrum is summed by its
 * second thread: the fixtures were made with 2 OpenMP threads, whose
 * float sums of the two halves of the rows are added at the end. */
#define DC_NORM_SPLIT(n) ((n) / 2)

enum { P_RMIN, P_RMAX, P_NR, P_NG, P_PIXEL_SIZE };
enum { R_RES, R_KC, R_AMP, R_KC0, R_N };

typedef struct decorr {
  const qs_method_call *c;
  size_t n;             /* N: the padded side */
  int n_r;
  fft2 plan;
  fft_cpx *f;           /* N × N */
  float *re, *im, *nre, *nim; /* shifted spectrum and its normalised copy */
  float *img;           /* the padded image N × N */
  float *blur, *tmp;    /* N × N */
  float *coef;          /* 2·n_r */
} decorr;

/* NanoPyx's apodisation of the h × w image in place. */
static void dc_apodize(float *p, int h, int w) {
  /* NanoPyx's halves are whole (C division of ints): the centre of an
   * odd side is the pixel left of the middle */
  const int offset = 20, hh = h / 2, hw = w / 2;
  float radius = (float)(hw - offset);
  /* NanoPyx's float sum over columns on its two threads (the fixtures'):
   * columns [0, ⌈w/2⌉) and the rest summed apart, then added */
  float part[2] = {0, 0}, edge;
  long count = 0;
  for (int x = 0; x < w; x++)
    for (int y = 0; y < h; y++) {
      long dist = (long)(y - hh) * (y - hh) + (long)(x - hw) * (x - hw);
      if ((double)dist > (double)radius * radius) {
        part[x >= (w + 1) / 2] += p[y * w + x];
        count++;
      }
    }
  edge = count ? (part[0] + part[1]) / (float)count : 0;
  for (int x = 0; x < w; x++)
    for (int y = 0; y < h; y++) {
      int ex = abs(abs(x - hw) - hw), ey = abs(abs(y - hh) - hh);
      if (ex <= offset || ey <= offset) {
        float d = (float)(ex < ey ? ex : ey);
        float c = (float)((cos(d * DC_PI / offset - DC_PI) + 1) / 2);
        p[y * w + x] = (float)(c * (p[y * w + x] - edge)) + edge;
      }
    }
}

/* The correlation of the spectrum with its normalised copy inside each
 * radius of [crmin, crmax] (NanoPyx's _get_corr_coef_ring): sums into
 * coef[0..n_r) and the normalised energy into coef[n_r..2·n_r), float, in
 * its order. */
static void dc_ring(decorr *s, float crmin, float crmax) {
  int n = (int)s->n, nr = s->n_r;
  float *out = s->coef;
  memset(out, 0, 2 * (size_t)nr * sizeof *out);
  int ox = (int)((float)n * (1 - crmax) / 2), oy = ox;
  int w = (int)((float)n * crmax), h = w;
  double limit = (double)n * n / 2 + (double)n / 2;
  for (int x = ox; x < ox + w; x++)
    for (int y = oy; y < oy + h; y++) {
      float dist = (float)(pow(x - (double)n / 2, 2) + pow(y - (double)n / 2, 2));
      dist = (float)sqrt(4.0 * dist / (double)(float)(n * n)); /* in double */
      float k = (float)(x * n + y);
      if ((double)k > limit) return;
      if (!(dist >= 0 && dist <= crmax)) continue;
      dist = (dist - crmin) / (crmax - crmin) * (float)(nr - 1);
      if (dist < 0) dist = 0;
      int d = (int)round(dist);
      if (d + nr >= 2 * nr) continue;
      size_t at = (size_t)y * s->n + (size_t)x;
      out[d] += s->re[at] * s->nre[at] + s->im[at] * s->nim[at];
      out[d + nr] += powf(s->nre[at], 2) + powf(s->nim[at], 2); /* float */
    }
}

/* The shifted spectrum of img (N × N) into re, im and its normalised copy;
 * the energy inside the unit disk into *cr. */
static int dc_spectrum(decorr *s, const float *img, int zero_dc, float *cr) {
  size_t n = s->n, nn = n * n;
  for (size_t i = 0; i < nn; i++) s->f[i] = (fft_cpx){img[i], 0};
  int rc = fft2_run(s->c, &s->plan, s->f, 0);
  if (rc) return rc;
  for (size_t y = 0; y < n; y++)
    for (size_t x = 0; x < n; x++) {
      const fft_cpx *v = &s->f[((y + n / 2) % n) * n + (x + n / 2) % n];
      s->re[y * n + x] = v->r;
      s->im[y * n + x] = v->i;
    }
  /* The DC bin is the image's sum: taken in double, rounded once, not
   * the transform's rounding noise. Of an image minus its blur that sum
   * is near 0, and whether it is exactly 0 decides whether the bin's
   * unit-modulus copy adds 1 to every radius's normalised energy (numpy's
   * transform gives the rounded sum here; kissfft's butterflies in float
   * gave 0 for some nonzero sums, moving the curves' first radii by 3 %). */
  double sum = 0;
  for (size_t i = 0; i < nn; i++) sum += img[i];
  s->re[n / 2 * n + n / 2] = zero_dc ? 0 : (float)sum;
  s->im[n / 2 * n + n / 2] = 0;
  double radius = (double)n * (double)n / 4;
  float half[2] = {0, 0}; /* NanoPyx's float sum over rows, two threads */
  for (size_t y = 0; y < n; y++)
    for (size_t x = 0; x < n; x++) {
      size_t at = y * n + x;
      /* NanoPyx's magnitude: the squares summed in float */
      float m2 = powf(s->re[at], 2) + powf(s->im[at], 2);
      double mag = sqrt((double)m2);
      s->nre[at] = mag != 0 ? (float)(s->re[at] / mag) : 0;
      s->nim[at] = mag != 0 ? (float)(s->im[at] / mag) : 0;
      double dist = pow((double)y - (double)n / 2, 2) +
                    pow((double)x - (double)n / 2, 2);
      if (dist < radius) half[y >= DC_NORM_SPLIT(n)] += m2;
    }
  *cr = (float)sqrt((double)(half[0] + half[1]));
  return QS_OK;
}

/* The curve d (n_r values) from the ring sums and the norm cr. */
static void dc_curve(const decorr *s, float cr, float *d) {
  float sd = 0, sc = 0;
  for (int k = 0; k < s->n_r; k++) {
    sd += s->coef[k];
    sc += s->coef[k + s->n_r];
    d[k] = cr == 0 || sc == 0 ? NAN : (float)(sqrt(2) * sd / (cr * sqrt(sc)));
  }
  if (isnan(d[0])) d[0] = 0;
}

/* Index and value of the first largest (smallest) of a[x1..x2). */
static void dc_max(const float *a, int x1, int x2, float out[2]) {
  out[0] = (float)x1;
  out[1] = a[x1];
  for (int k = x1; k < x2; k++)
    if (a[k] > out[1]) {
      out[0] = (float)k;
      out[1] = a[k];
    }
}
static void dc_min(const float *a, int x1, int x2, float out[2]) {
  out[0] = (float)x1;
  out[1] = a[x1];
  for (int k = x1; k < x2; k++)
    if (a[k] < out[1]) {
      out[0] = (float)k;
      out[1] = a[k];
    }
}

/* The curve's peak (NanoPyx's _get_d_corr_max): kc mapped to [r1, r2]
 * and its amplitude. t: n_r floats of scratch. */
static void dc_peak(const float *d, int nr, float r1, float r2, float *t,
                    float out[2]) {
  float lo[2];
  memcpy(t, d, (size_t)nr * sizeof *t);
  dc_max(d, 0, nr, out);
  int len = nr;
  while (out[0] == (float)(len - 1)) {
    t[len - 1] = 0;
    len--;
    if (len == 0) {
      out[0] = out[1] = 0;
      break;
    }
    dc_max(t, 0, nr, out);
    dc_min(t, (int)out[0], len - 1, lo);
    if (t[(int)out[0]] - lo[1] > 0.001f) break;
    t[(int)out[0]] = lo[1];
    out[0] = (float)(len - 1);
  }
  out[0] = r1 + (r2 - r1) * out[0] / (float)(nr - 1);
}

/* The best k by kc·a (gm 1) or by kc (gm 0): kc, a, k; zeros when none
 * is positive. */
static void dc_best(const float *kc, const float *a, int n, int gm,
                    float out[3]) {
  float best = 0;
  out[0] = out[1] = out[2] = 0;
  for (int k = 0; k < n; k++) {
    float v = gm ? kc[k] * a[k] : kc[k];
    if (v > best) {
      best = v;
      out[0] = kc[k];
      out[1] = a[k];
      out[2] = (float)k;
    }
  }
}

static int dc_run(const qs_method_call *c) {
  const qs_image *in = &c->in[0];
  int h = (int)in->rows, w = (int)in->cols;
  int nr = (int)c->p[P_NR], ng = (int)c->p[P_NG];
  float rmin = (float)c->p[P_RMIN], rmax = (float)c->p[P_RMAX];
  decorr s = {.c = c, .n_r = nr};
  size_t n = 1;
  while (n < (size_t)(h > w ? h : w)) n *= 2;
  s.n = n;
  size_t nn = n * n;
  float *a = malloc((size_t)h * (size_t)w * sizeof *a);
  float *buf = malloc(7 * nn * sizeof *buf);
  float *curves = c->out[1].data, *t = malloc((size_t)nr * sizeof *t);
  s.coef = malloc(2 * (size_t)nr * sizeof *s.coef);
  s.f = malloc(nn * sizeof *s.f);
  int rc = fft2_plan(&s.plan, n, n, c->threads);
  if (rc || !a || !buf || !t || !s.coef || !s.f) {
    snprintf(c->err, c->err_len, "decorr: no memory for %zu x %zu", n, n);
    rc = QS_ENOMEM;
    goto done;
  }
  s.img = buf;
  s.re = buf + nn;
  s.im = buf + 2 * nn;
  s.nre = buf + 3 * nn;
  s.nim = buf + 4 * nn;
  s.blur = buf + 5 * nn;
  s.tmp = buf + 6 * nn;
  memcpy(a, in->data, (size_t)h * (size_t)w * sizeof *a);
  dc_apodize(a, h, w);
  /* NanoPyx's padding: first pixel around, columns centred, rows from 0 */
  size_t ox = (n - (size_t)w) / 2;
  for (size_t i = 0; i < nn; i++) s.img[i] = a[0];
  for (int y = 0; y < h; y++)
    memcpy(s.img + (size_t)y * n + ox, a + (size_t)y * (size_t)w,
           (size_t)w * sizeof *a);
  float cr, pk[2];
  rc = dc_spectrum(&s, s.img, 1, &cr);
  if (rc) goto done;
  dc_ring(&s, rmin, rmax);
  float *d0 = curves;
  dc_curve(&s, cr, d0);
  dc_peak(d0, nr, 0, 1, t, pk);
  float kc0 = pk[0];
  float gmax = kc0 == 0 ? (float)n / 2 : 2 / kc0, gmin = 0.14f;
  float crmin = rmin, crmax = rmax;
  float kc[64], amp[64], gm[3], mx[3];
  for (int refine = 0; refine < 2; refine++) {
    for (int k = 0; k < ng; k++) {
      double sig = exp(log(gmin) + (log(gmax) - log(gmin)) *
                                       (double)((float)k / (float)(ng - 1)));
      rc = gauss_blur(c, s.img, s.blur, s.tmp, n, n, sig);
      if (rc) goto done;
      for (size_t i = 0; i < nn; i++) s.blur[i] = s.img[i] - s.blur[i];
      rc = dc_spectrum(&s, s.blur, 0, &cr);
      if (rc) goto done;
      dc_ring(&s, crmin, crmax);
      dc_curve(&s, cr, curves + (size_t)(1 + refine * ng + k) * (size_t)nr);
    }
    for (int j = 0; j < ng; j++) {
      dc_peak(curves + (size_t)(1 + refine * ng + j) * (size_t)nr, nr, crmin,
              crmax, t, pk);
      kc[j] = pk[0];
      amp[j] = pk[1];
    }
    if (refine == 0) {
      dc_peak(d0, nr, crmin, crmax, t, pk);
      kc[ng] = pk[0];
      amp[ng] = pk[1];
      dc_best(kc, amp, ng + 1, 1, gm);
      dc_best(kc, amp, ng + 1, 0, mx);
      /* in double, then float (NanoPyx's: fmin, fmax and the constants
       * are double there) */
      float lo = (float)(fmin(gm[0], mx[0]) - 0.05);
      float hi = (float)(fmax(gm[0], mx[0]) + 0.3);
      crmin = lo < rmin ? rmin : lo;
      crmax = hi > rmax ? rmax : hi;
      float i1 = fminf(gm[2], mx[2]) - 1, i2 = fmaxf(gm[2], mx[2]);
      if (i2 < (float)ng) {
        double lmin = log(gmin), lmax = log(gmax);
        double gt = exp(lmin + (lmax - lmin) * (double)(i1 / (float)(ng - 1)));
        gmax = (float)exp(lmin + (lmax - lmin) * (double)(i2 / (float)(ng - 1)));
        gmin = (float)gt;
      } else {
        gmax = gmin;
        gmin = 2.0f / (float)n;
      }
    } else {
      dc_best(kc, amp, ng, 0, mx);
    }
  }
  float *res = c->out[0].data;
  res[R_KC] = mx[0];
  res[R_AMP] = mx[1];
  res[R_KC0] = kc0;
  res[R_RES] = mx[0] > 0 ? (float)(2 * c->p[P_PIXEL_SIZE]) / mx[0] : 0;
done:
  fft2_free(&s.plan);
  free(a);
  free(buf);
  free(t);
  free(s.coef);
  free(s.f);
  return rc;
}

/* ------------------------------------------------------------ the method */

static const qs_slot_def dc_inputs[] = {{"image", "one image (1, R, C)"}};
static const qs_slot_def dc_outputs[] = {
    {"resolution", "(1, 1, 4): resolution (pixel_size units; 0: none "
                   "found), kc_max, its amplitude, kc0"},
    {"curves", "(1, 1 + 2·n_g, n_r): d0, then the curves of the blurred "
               "images (first pass, refined pass)"},
};
static const qs_param_def dc_params[] = {
    [P_RMIN] = {"rmin", QS_PARAM_FLOAT, 0, 0, 1, QS_PARAM_MAX_OPEN, NULL,
                "smallest normalised frequency of the curves"},
    [P_RMAX] = {"rmax", QS_PARAM_FLOAT, 1, 0, 1, QS_PARAM_MIN_OPEN, NULL,
                "largest normalised frequency of the curves"},
    [P_NR] = {"n_r", QS_PARAM_INT, 50, 2, 10000, 0, NULL,
              "radii sampled per curve"},
    [P_NG] = {"n_g", QS_PARAM_INT, 10, 2, 63, 0, NULL,
              "Gaussian high-pass filters per pass"},
    [P_PIXEL_SIZE] = {"pixel_size", QS_PARAM_FLOAT, 1, 0, 1e9,
                      QS_PARAM_MIN_OPEN, NULL,
                      "size of a pixel (the resolution's unit)"},
};

static int dc_shape(const qs_image *in, const double *p, qs_image *out,
                    char *err, size_t err_len) {
  int rc = method_check_input("decorr", in, err, err_len);
  if (rc) return rc;
  if (in->frames != 1) {
    snprintf(err, err_len, "decorr: image has %zu frames; one expected",
             in->frames);
    return QS_ESHAPE;
  }
  if (in->rows < 2 || in->cols < 2 || in->rows > 16384 || in->cols > 16384) {
    snprintf(err, err_len, "decorr: image of %zu x %zu (2 to 16384 a side)",
             in->rows, in->cols);
    return QS_ESHAPE;
  }
  if (!(p[P_RMIN] < p[P_RMAX])) {
    snprintf(err, err_len, "rmin: %g is not below rmax %g", p[P_RMIN],
             p[P_RMAX]);
    return QS_EPARAM;
  }
  out[0] = (qs_image){.frames = 1, .rows = 1, .cols = R_N};
  out[1] = (qs_image){
      .frames = 1, .rows = 1 + 2 * (size_t)p[P_NG], .cols = (size_t)p[P_NR]};
  return QS_OK;
}

static double dc_work(const qs_image *in, const double *p) {
  size_t n = 1;
  while (n < (in->rows > in->cols ? in->rows : in->cols)) n *= 2;
  return (double)n * (double)n * (2 * p[P_NG] + 1) * 64;
}

static const qs_impl_def dc_impls[] = {
    {"serial", QS_IMPL_SERIAL, dc_run, NULL, 1, QS_SCHED_STATIC, 0},
    {"threaded", QS_IMPL_THREADED, dc_run, NULL, 1, QS_SCHED_STATIC, 0},
};

const qs_method_desc method_decorr = {
    .name = "decorr",
    .doc = "image resolution by decorrelation analysis (Descloux et al. "
           "2019; NanoPyx's DecorrAnalysis)",
    .inputs = dc_inputs,
    .n_inputs = 1,
    .outputs = dc_outputs,
    .n_outputs = 2,
    .params = dc_params,
    .n_params = sizeof dc_params / sizeof dc_params[0],
    .impls = dc_impls,
    .n_impls = sizeof dc_impls / sizeof dc_impls[0],
    .shape = dc_shape,
    .work = dc_work,
    .tolerance = 1e-5,
};
