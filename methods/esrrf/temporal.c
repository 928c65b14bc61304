/* temporal.c — frame-by-frame temporal statistics in double and the
 * macro-pixel correction (see temporal.h for the definitions). */
#include <stdlib.h>

#include "quicksilver.h"
#include "temporal.h"

size_t temporal_slots(temporal_kind kind) {
  static const size_t slots[] = {1, 2, 4, 0};
  return slots[kind];
}

int temporal_init(temporal *t, temporal_kind kind, size_t pixels) {
  t->kind = kind;
  t->pixels = pixels;
  t->acc = NULL;
  size_t k = temporal_slots(kind);
  if (k == 0 || pixels == 0) return QS_OK;
  if (pixels > (size_t)-1 / (k * sizeof(double))) return QS_ENOMEM;
  t->acc = malloc(pixels * k * sizeof(double));
  return t->acc ? QS_OK : QS_ENOMEM;
}

void temporal_free(temporal *t) {
  free(t->acc);
  t->acc = NULL;
}

void temporal_add(temporal *t, const float *x, size_t n, size_t begin,
                  size_t end) {
  double *a = t->acc;
  switch (t->kind) {
  case TEMPORAL_AVG: /* a: sum */
    for (size_t i = begin; i < end; i++) a[i] = (n ? a[i] : 0) + x[i];
    break;
  case TEMPORAL_VAR: /* a: mean, sum of squared deviations */
    for (size_t i = begin; i < end; i++) {
      double *m = a + 2 * i, v = x[i];
      if (n == 0) {
        m[0] = v;
        m[1] = 0;
        continue;
      }
      double delta = v - m[0];
      m[0] += delta / (double)(n + 1);
      m[1] += delta * (v - m[0]);
    }
    break;
  case TEMPORAL_TAC2: /* a: x_0, Σ y_t, Σ y_t·y_{t+1}, y_last */
    for (size_t i = begin; i < end; i++) {
      double *m = a + 4 * i;
      if (n == 0) {
        m[0] = x[i];
        m[1] = m[2] = m[3] = 0;
        continue;
      }
      double y = (double)x[i] - m[0];
      m[1] += y;
      m[2] += m[3] * y;
      m[3] = y;
    }
    break;
  case TEMPORAL_NONE:
    break;
  }
}

void temporal_result(const temporal *t, size_t n, float *out, size_t begin,
                     size_t end) {
  const double *a = t->acc;
  double dn = (double)n;
  switch (t->kind) {
  case TEMPORAL_AVG:
    for (size_t i = begin; i < end; i++) out[i] = (float)(a[i] / dn);
    break;
  case TEMPORAL_VAR:
    for (size_t i = begin; i < end; i++) out[i] = (float)(a[2 * i + 1] / dn);
    break;
  case TEMPORAL_TAC2:
    /* Σ_{t<n-1}(y_t − μ)(y_{t+1} − μ) = P − μ(2S − y_0 − y_last) + (n−1)μ²
     * with y_0 = 0. */
    for (size_t i = begin; i < end; i++) {
      const double *m = a + 4 * i;
      double mu = m[1] / dn;
      double s = m[2] - mu * (2 * m[1] - m[3]) + (dn - 1) * mu * mu;
      out[i] = (float)(s / (dn - 1));
    }
    break;
  case TEMPORAL_NONE:
    break;
  }
}

void temporal_mpc(float *map, size_t rows_m, size_t cols_m, int mag) {
  size_t m = (size_t)mag, rows = rows_m / m, cols = cols_m / m;
  float corr[TEMPORAL_MAX_MAG * TEMPORAL_MAX_MAG] = {0};
  float blocks = (float)(int)(rows * cols);
  for (size_t ry = 0; ry < rows; ry++)
    for (size_t rx = 0; rx < cols; rx++)
      for (size_t y = 0; y < m; y++)
        for (size_t x = 0; x < m; x++)
          corr[y * m + x] += map[(ry * m + y) * cols_m + rx * m + x] / blocks;
  for (size_t y = 0; y < rows_m; y++)
    for (size_t x = 0; x < cols_m; x++) {
      float c = corr[(y % m) * m + x % m];
      if (c != 0) map[y * cols_m + x] /= c;
    }
}
