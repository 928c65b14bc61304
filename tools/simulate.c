/* simulate.c — the blinking-emitter simulator (see simulate.h). */
#include "simulate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outfile.h"

const qs_param_def sim_params[SIM_N] = {
    [SIM_FRAMES] = {"frames", QS_PARAM_INT, 200, 1, 1e7, 0, NULL,
                    "frames in the stack"},
    [SIM_ROWS] = {"rows", QS_PARAM_INT, 64, 1, 65536, 0, NULL,
                  "rows per frame"},
    [SIM_COLS] = {"cols", QS_PARAM_INT, 64, 1, 65536, 0, NULL,
                  "columns per frame"},
    [SIM_EMITTERS] = {"emitters", QS_PARAM_INT, 30, 0, 1e7, 0, NULL,
                      "blinking emitters"},
    [SIM_FILAMENTS] = {"filaments", QS_PARAM_INT, 0, 0, 1e5, 0, NULL,
                       "curved filaments carrying the emitters (0: one per "
                       "10 emitters)"},
    [SIM_WAVELENGTH] = {"wavelength", QS_PARAM_FLOAT, 600, 100, 2000, 0, NULL,
                        "emission wavelength, nm"},
    [SIM_NA] = {"na", QS_PARAM_FLOAT, 1.4, 0.05, 1.7, 0, NULL,
                "numerical aperture of the objective"},
    [SIM_PIXEL_SIZE] = {"pixel_size", QS_PARAM_FLOAT, 100, 1, 10000, 0, NULL,
                        "pixel size in the sample plane, nm"},
    [SIM_PHOTONS] = {"photons", QS_PARAM_FLOAT, 1000, 0, 1e9, 0, NULL,
                     "expected photons of an emitter in a frame it is on"},
    [SIM_BACKGROUND] = {"background", QS_PARAM_FLOAT, 20, 0, 1e9, 0, NULL,
                        "expected background photons per pixel and frame"},
    [SIM_P_ON] = {"p_on", QS_PARAM_FLOAT, 0.1, 0, 1, 0, NULL,
                  "probability per frame that an off emitter turns on"},
    [SIM_P_OFF] = {"p_off", QS_PARAM_FLOAT, 0.2, 0, 1, 0, NULL,
                   "probability per frame that an on emitter turns off"},
    [SIM_GAIN] = {"gain", QS_PARAM_FLOAT, 1, 0, 1e6, 0, NULL,
                  "camera counts per photon"},
    [SIM_OFFSET] = {"offset", QS_PARAM_FLOAT, 100, 0, 1e9, 0, NULL,
                    "camera offset, counts"},
    [SIM_READ_NOISE] = {"read_noise", QS_PARAM_FLOAT, 2, 0, 1e6, 0, NULL,
                        "camera read noise (standard deviation), counts"},
    [SIM_SEED] = {"seed", QS_PARAM_INT, 1, 0, 9007199254740992.0, 0, NULL,
                  "random seed; equal seeds give equal stacks"},
};

/* ---------------------------------------------------------- randomness */

typedef struct rng {
  uint64_t s[4];
  double spare; /* second normal of the polar method */
  int has_spare;
} rng;

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static void rng_seed(rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++)
    r->s[i] = splitmix64(&seed);
  r->has_spare = 0;
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t rng_next(rng *r) { /* xoshiro256** */
  uint64_t *s = r->s;
  uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

/* Uniform in [0, 1) with 53 random bits. */
static double rng_unit(rng *r) {
  return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

static double rng_normal(rng *r) {
  if (r->has_spare) {
    r->has_spare = 0;
    return r->spare;
  }
  double u, v, s;
  do {
    u = 2 * rng_unit(r) - 1;
    v = 2 * rng_unit(r) - 1;
    s = u * u + v * v;
  } while (s >= 1 || s == 0);
  double f = sqrt(-2 * log(s) / s);
  r->spare = v * f;
  r->has_spare = 1;
  return u * f;
}

/* Poisson variate: multiplication of uniforms below mean 10, else
 * Hörmann's transformed rejection with squeeze (PTRS, 1993). */
static double rng_poisson(rng *r, double lam) {
  if (lam <= 0) return 0;
  if (lam < 10) {
    double limit = exp(-lam), p = 1;
    int k = -1;
    do {
      k++;
      p *= rng_unit(r);
    } while (p > limit);
    return k;
  }
  double slam = sqrt(lam), loglam = log(lam);
  double b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  double inv_alpha = 1.1239 + 1.1328 / (b - 3.4),
         vr = 0.9277 - 3.6224 / (b - 2);
  for (;;) {
    double u = rng_unit(r) - 0.5, v = rng_unit(r), us = 0.5 - fabs(u);
    double k = floor((2 * a / us + b) * u + lam + 0.43);
    if (us >= 0.07 && v <= vr) return k;
    if (k < 0 || (us < 0.013 && v > us)) continue;
    if (log(v) + log(inv_alpha) - log(a / (us * us) + b) <=
        -lam + k * loglam - lgamma(k + 1))
      return k;
  }
}

/* --------------------------------------------------------------- scene */

typedef struct point {
  double row, col;
} point;

static point bezier(const point *c, double t) {
  double u = 1 - t, w0 = u * u * u, w1 = 3 * u * u * t, w2 = 3 * u * t * t,
         w3 = t * t * t;
  point p = {w0 * c[0].row + w1 * c[1].row + w2 * c[2].row + w3 * c[3].row,
             w0 * c[0].col + w1 * c[1].col + w2 * c[2].col + w3 * c[3].col};
  return p;
}

/* Fraction of a unit Gaussian (centre x, sigma s) over pixel [i-.5, i+.5]. */
static double pixel_mass(double i, double x, double s) {
  double k = 1 / (s * sqrt(2.0));
  return 0.5 * (erf((i + 0.5 - x) * k) - erf((i - 0.5 - x) * k));
}

static int truth_add(sim_truth *t, const sim_event *e) {
  if (t->n == t->cap) {
    size_t cap = t->cap ? 2 * t->cap : 256;
    sim_event *p = realloc(t->events, cap * sizeof *p);
    if (!p) return QS_ENOMEM;
    t->events = p;
    t->cap = cap;
  }
  t->events[t->n++] = *e;
  return QS_OK;
}

void sim_truth_free(sim_truth *t) {
  if (!t) return;
  free(t->events);
  t->events = NULL;
  t->n = t->cap = 0;
}

int simulate(const double *v, qs_image *out, sim_truth *truth, char *err,
             size_t err_len) {
  size_t frames = (size_t)v[SIM_FRAMES], rows = (size_t)v[SIM_ROWS],
         cols = (size_t)v[SIM_COLS], n_em = (size_t)v[SIM_EMITTERS];
  size_t n_fil = (size_t)v[SIM_FILAMENTS];
  if (n_fil == 0) n_fil = n_em / 10 + 1;
  if (truth) truth->events = NULL, truth->n = truth->cap = 0;
  int rc = qs_image_alloc(out, frames, rows, cols);
  if (rc) {
    snprintf(err, err_len, "simulate: %zu frames of %zux%zu: %s", frames, rows,
             cols, qs_status_message(rc));
    return rc;
  }
  point *ctrl = malloc(4 * n_fil * sizeof *ctrl);
  point *pos = malloc((n_em ? n_em : 1) * sizeof *pos);
  unsigned char *on = malloc(n_em ? n_em : 1);
  double *wr = NULL, *wc = NULL;
  double sigma = 0.21 * v[SIM_WAVELENGTH] / v[SIM_NA] / v[SIM_PIXEL_SIZE];
  long half = (long)ceil(4 * sigma) + 1; /* PSF support: +-4 sigma */
  size_t span = (size_t)(2 * half + 1);
  wr = malloc(span * sizeof *wr);
  wc = malloc(span * sizeof *wc);
  if (!ctrl || !pos || !on || !wr || !wc) {
    rc = QS_ENOMEM;
    snprintf(err, err_len, "simulate: out of memory");
    goto done;
  }
  rng r;
  rng_seed(&r, (uint64_t)v[SIM_SEED]);
  for (size_t i = 0; i < 4 * n_fil; i++) {
    ctrl[i].row = rng_unit(&r) * (double)rows - 0.5;
    ctrl[i].col = rng_unit(&r) * (double)cols - 0.5;
  }
  double p_on = v[SIM_P_ON], p_off = v[SIM_P_OFF];
  double duty = p_on + p_off > 0 ? p_on / (p_on + p_off) : 0;
  for (size_t e = 0; e < n_em; e++) {
    size_t f = (size_t)(rng_unit(&r) * (double)n_fil);
    pos[e] = bezier(ctrl + 4 * (f < n_fil ? f : n_fil - 1), rng_unit(&r));
    on[e] = rng_unit(&r) < duty;
  }
  size_t plane = rows * cols;
  for (size_t fr = 0; fr < frames && !rc; fr++) {
    float *img = out->data + fr * plane;
    for (size_t i = 0; i < plane; i++)
      img[i] = (float)v[SIM_BACKGROUND];
    for (size_t e = 0; e < n_em && !rc; e++) {
      if (fr > 0) on[e] = on[e] ? rng_unit(&r) >= p_off : rng_unit(&r) < p_on;
      if (!on[e]) continue;
      long r0 = (long)floor(pos[e].row + 0.5) - half;
      long c0 = (long)floor(pos[e].col + 0.5) - half;
      for (size_t k = 0; k < span; k++) {
        wr[k] = pixel_mass((double)(r0 + (long)k), pos[e].row, sigma);
        wc[k] = pixel_mass((double)(c0 + (long)k), pos[e].col, sigma);
      }
      for (size_t i = 0; i < span; i++) {
        long rr = r0 + (long)i;
        if (rr < 0 || rr >= (long)rows) continue;
        for (size_t j = 0; j < span; j++) {
          long cc = c0 + (long)j;
          if (cc < 0 || cc >= (long)cols) continue;
          img[(size_t)rr * cols + (size_t)cc] +=
              (float)(v[SIM_PHOTONS] * wr[i] * wc[j]);
        }
      }
      if (truth) {
        sim_event ev = {(uint32_t)fr, (uint32_t)e, pos[e].row, pos[e].col,
                        v[SIM_PHOTONS]};
        if (truth_add(truth, &ev)) {
          rc = QS_ENOMEM;
          snprintf(err, err_len, "simulate: out of memory for the truth");
        }
      }
    }
    for (size_t i = 0; i < plane; i++) {
      double adu = v[SIM_GAIN] * rng_poisson(&r, img[i]) + v[SIM_OFFSET] +
                   v[SIM_READ_NOISE] * rng_normal(&r);
      img[i] = adu > 0 ? (float)floor(adu + 0.5) : 0.0f;
    }
  }
done:
  free(ctrl);
  free(pos);
  free(on);
  free(wr);
  free(wc);
  if (rc) {
    qs_image_free(out);
    sim_truth_free(truth);
  }
  return rc;
}

int sim_truth_write(const sim_truth *t, double pixel_nm, const char *path,
                    char *err, size_t err_len) {
  outfile o;
  int rc = outfile_open(&o, path, err, err_len);
  if (rc) return rc;
  fprintf(o.f, "frame,emitter,row,col,x_nm,y_nm,photons\n");
  for (size_t i = 0; i < t->n; i++) {
    const sim_event *e = &t->events[i];
    fprintf(o.f, "%u,%u,%.6f,%.6f,%.3f,%.3f,%.3f\n", e->frame, e->emitter,
            e->row, e->col, e->col * pixel_nm, e->row * pixel_nm, e->photons);
  }
  return outfile_commit(&o, err, err_len);
}
