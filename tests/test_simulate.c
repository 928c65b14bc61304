/* test_simulate.c — the simulator: determinism for a seed, the noise model
 * (Poisson mean and variance at small and large means, offset, gain), the
 * PSF's photon budget and centre, blinking duty cycle, the truth file. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qs_test.h"
#include "simulate.h"

TestSuite(simulate, .fini = qs_leak_check);

static void defaults(double *v) {
  for (int i = 0; i < SIM_N; i++)
    v[i] = sim_params[i].def;
}

/* Mean and population variance of frame f. */
static void frame_moments(const qs_image *img, size_t f, double *mean,
                          double *var) {
  size_t n = img->rows * img->cols;
  const float *p = img->data + f * n;
  double s = 0, s2 = 0;
  for (size_t i = 0; i < n; i++)
    s += p[i], s2 += (double)p[i] * p[i];
  *mean = s / (double)n;
  *var = s2 / (double)n - *mean * *mean;
}

Test(simulate, same_seed_same_stack_other_seed_other_stack) {
  double v[SIM_N];
  defaults(v);
  v[SIM_FRAMES] = 20;
  char err[256];
  qs_image a, b, c;
  sim_truth ta, tb;
  cr_assert_eq(simulate(v, &a, &ta, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(simulate(v, &b, &tb, err, sizeof err), QS_OK, "%s", err);
  v[SIM_SEED] = 2;
  cr_assert_eq(simulate(v, &c, NULL, err, sizeof err), QS_OK, "%s", err);
  size_t n = 20 * 64 * 64;
  cr_assert_eq(a.frames, 20);
  cr_assert_eq(memcmp(a.data, b.data, n * sizeof(float)), 0);
  cr_assert_neq(memcmp(a.data, c.data, n * sizeof(float)), 0);
  cr_assert_eq(ta.n, tb.n);
  cr_assert_gt(ta.n, 0);
  cr_assert_eq(memcmp(ta.events, tb.events, ta.n * sizeof *ta.events), 0);
  qs_image_free(&a);
  qs_image_free(&b);
  qs_image_free(&c);
  sim_truth_free(&ta);
  sim_truth_free(&tb);
}

/* Background only, no read noise: counts are Poisson(background) * gain +
 * offset, so mean and variance follow (checked within 5 standard errors,
 * for the small-mean and the rejection sampler). */
Test(simulate, shot_noise_is_poisson) {
  double v[SIM_N];
  defaults(v);
  v[SIM_EMITTERS] = 0;
  v[SIM_READ_NOISE] = 0;
  v[SIM_FRAMES] = 1;
  v[SIM_ROWS] = v[SIM_COLS] = 256;
  double means[] = {3, 50, 2000};
  for (int k = 0; k < 3; k++) {
    double lam = means[k];
    v[SIM_BACKGROUND] = lam;
    v[SIM_OFFSET] = 0;
    v[SIM_GAIN] = 1;
    qs_image img;
    char err[256];
    cr_assert_eq(simulate(v, &img, NULL, err, sizeof err), QS_OK);
    double m, var, n = 256.0 * 256.0;
    frame_moments(&img, 0, &m, &var);
    cr_assert_lt(fabs(m - lam), 5 * sqrt(lam / n), "mean %g for %g", m, lam);
    /* variance of the sample variance of a Poisson ~ (2 lam^2 + lam) / n */
    cr_assert_lt(fabs(var - lam), 5 * sqrt((2 * lam * lam + lam) / n),
                 "variance %g for %g", var, lam);
    qs_image_free(&img);
  }
  /* gain and offset: mean = gain * lam + offset */
  v[SIM_BACKGROUND] = 50;
  v[SIM_GAIN] = 2;
  v[SIM_OFFSET] = 100;
  qs_image img;
  char err[256];
  cr_assert_eq(simulate(v, &img, NULL, err, sizeof err), QS_OK);
  double m, var;
  frame_moments(&img, 0, &m, &var);
  cr_assert_lt(fabs(m - 200), 5 * 2 * sqrt(50 / 65536.0), "mean %g", m);
  qs_image_free(&img);
}

/* One emitter always on, nothing else: each frame holds its photons (less
 * what the PSF spills past the border), centred on the truth. */
Test(simulate, psf_budget_and_centre) {
  double v[SIM_N];
  defaults(v);
  v[SIM_EMITTERS] = 1;
  v[SIM_P_ON] = 1;
  v[SIM_P_OFF] = 0;
  v[SIM_BACKGROUND] = 0;
  v[SIM_OFFSET] = 0;
  v[SIM_READ_NOISE] = 0;
  v[SIM_PHOTONS] = 1e6;
  v[SIM_FRAMES] = 4;
  v[SIM_ROWS] = v[SIM_COLS] = 48;
  v[SIM_SEED] = 7;
  qs_image img;
  sim_truth t;
  char err[256];
  cr_assert_eq(simulate(v, &img, &t, err, sizeof err), QS_OK);
  cr_assert_eq(t.n, 4);
  double r0 = t.events[0].row, c0 = t.events[0].col;
  /* sigma = 0.21 * 600 / 1.4 / 100 = 0.9 px; keep away from the border */
  if (r0 < 5 || r0 > 42 || c0 < 5 || c0 > 42)
    cr_skip_test("seed put the emitter near the border (%g, %g)", r0, c0);
  for (size_t f = 0; f < 4; f++) {
    double s = 0, sr = 0, sc = 0, src = 0;
    for (size_t r = 0; r < 48; r++)
      for (size_t c = 0; c < 48; c++) {
        double x = img.data[(f * 48 + r) * 48 + c];
        s += x, sr += x * (double)r, sc += x * (double)c;
        src += x * ((double)r - r0) * ((double)r - r0);
      }
    cr_assert_lt(fabs(s - 1e6), 5e3, "frame %zu holds %g photons", f, s);
    cr_assert_lt(fabs(sr / s - r0), 0.01, "row centre %g vs %g", sr / s, r0);
    cr_assert_lt(fabs(sc / s - c0), 0.01, "col centre %g vs %g", sc / s, c0);
    /* pixel-integrated Gaussian: variance sigma^2 + 1/12 */
    double sigma = 0.21 * 600 / 1.4 / 100;
    cr_assert_lt(fabs(src / s - (sigma * sigma + 1.0 / 12)), 0.01);
  }
  qs_image_free(&img);
  sim_truth_free(&t);
}

/* The two-state chain spends p_on / (p_on + p_off) of the time on. */
Test(simulate, blinking_duty_cycle) {
  double v[SIM_N];
  defaults(v);
  v[SIM_EMITTERS] = 200;
  v[SIM_FRAMES] = 500;
  v[SIM_ROWS] = v[SIM_COLS] = 16;
  v[SIM_P_ON] = 0.1;
  v[SIM_P_OFF] = 0.2;
  qs_image img;
  sim_truth t;
  char err[256];
  cr_assert_eq(simulate(v, &img, &t, err, sizeof err), QS_OK);
  double duty = (double)t.n / (200.0 * 500.0);
  cr_assert_lt(fabs(duty - 1.0 / 3.0), 0.02, "duty %g", duty);
  /* on -> off transitions happen at rate p_off: count "on at f, off at
   * f+1" over "on at f" (events are in frame order) */
  unsigned char *on = calloc(500 * 200, 1);
  for (size_t i = 0; i < t.n; i++)
    on[t.events[i].frame * 200 + t.events[i].emitter] = 1;
  double stays = 0, was = 0;
  for (size_t f = 0; f + 1 < 500; f++)
    for (size_t e = 0; e < 200; e++)
      if (on[f * 200 + e]) was++, stays += on[(f + 1) * 200 + e];
  cr_assert_lt(fabs(1 - stays / was - 0.2), 0.02, "p_off %g", 1 - stays / was);
  free(on);
  qs_image_free(&img);
  sim_truth_free(&t);
}

Test(simulate, truth_csv) {
  double v[SIM_N];
  defaults(v);
  v[SIM_FRAMES] = 10;
  qs_image img;
  sim_truth t;
  char err[256], path[] = "/tmp/qs-truth-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  close(fd);
  cr_assert_eq(simulate(v, &img, &t, err, sizeof err), QS_OK);
  cr_assert_eq(sim_truth_write(&t, 100, path, err, sizeof err), QS_OK, "%s",
               err);
  FILE *f = fopen(path, "r");
  char line[256];
  cr_assert_not_null(fgets(line, sizeof line, f));
  cr_assert_str_eq(line, "frame,emitter,row,col,x_nm,y_nm,photons\n");
  size_t lines = 0;
  unsigned fr, em;
  double row, col, x, y, ph;
  while (fscanf(f, "%u,%u,%lf,%lf,%lf,%lf,%lf", &fr, &em, &row, &col, &x, &y,
                &ph) == 7) {
    cr_assert_lt(fabs(x - col * 100), 1e-2);
    cr_assert_lt(fabs(y - row * 100), 1e-2);
    lines++;
  }
  fclose(f);
  cr_assert_eq(lines, t.n);
  unlink(path);
  cr_assert_eq(
      sim_truth_write(&t, 100, "/nonexistent-dir/t.csv", err, sizeof err),
      QS_EIO);
  qs_image_free(&img);
  sim_truth_free(&t);
}
