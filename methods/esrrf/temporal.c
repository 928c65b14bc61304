/* temporal.c — frame-by-frame temporal statistics in double, their exact
 * merge, the macro-pixel correction (see temporal.h for the definitions),
 * and the public esrrf_partial calls built on them. */
#include <stdlib.h>
#include <string.h>

#include "quicksilver.h"
#include "temporal.h"

size_t esrrf_partial_slots(int temporal) {
  static const size_t slots[] = {1, 2, 4};
  return temporal >= TEMPORAL_AVG && temporal < TEMPORAL_NONE
             ? slots[temporal]
             : 0;
}

void temporal_add(esrrf_partial *p, const float *x, uint64_t n, size_t begin,
                  size_t end) {
  double *a = p->data;
  switch ((temporal_kind)p->temporal) {
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

void temporal_merge(esrrf_partial *into, const esrrf_partial *next,
                    size_t begin, size_t end) {
  double *a = into->data;
  const double *b = next->data;
  double na = (double)into->n, nb = (double)next->n, n = na + nb;
  switch ((temporal_kind)into->temporal) {
  case TEMPORAL_AVG:
    for (size_t i = begin; i < end; i++) a[i] += b[i];
    break;
  case TEMPORAL_VAR: /* Chan et al.: pairwise update of mean and M2 */
    for (size_t i = begin; i < end; i++) {
      double *m = a + 2 * i;
      const double *q = b + 2 * i;
      double delta = q[0] - m[0];
      m[0] += delta * (nb / n);
      m[1] += q[1] + delta * delta * (na * nb / n);
    }
    break;
  case TEMPORAL_TAC2:
    /* next's values shifted by d = x0_b − x0_a: y'_t = y_t + d, so
     *   Σ y' = Σ y + nb·d,
     *   Σ y'_t·y'_{t+1} = Σ y_t·y_{t+1} + d·(2·Σy − y_last) + (nb − 1)·d²
     * (y_0 = 0 in next), plus the product across the boundary,
     * y_last_a·y'_0 = y_last_a·d. */
    for (size_t i = begin; i < end; i++) {
      double *m = a + 4 * i;
      const double *q = b + 4 * i;
      double d = q[0] - m[0];
      m[2] += m[3] * d + q[2] + d * (2 * q[1] - q[3]) + (nb - 1) * d * d;
      m[1] += q[1] + nb * d;
      m[3] = q[3] + d;
    }
    break;
  case TEMPORAL_NONE:
    break;
  }
}

void temporal_result(const esrrf_partial *p, float *out, size_t begin,
                     size_t end) {
  const double *a = p->data;
  double dn = (double)p->n;
  switch ((temporal_kind)p->temporal) {
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

/* ------------------------------------------------------- public partial */

int esrrf_partial_init(esrrf_partial *p, int temporal, size_t rows,
                       size_t cols) {
  if (!p) return QS_EINVAL;
  memset(p, 0, sizeof *p);
  size_t k = esrrf_partial_slots(temporal), px;
  if (k == 0 || rows == 0 || cols == 0) return QS_EINVAL;
  if (image_pixels(1, rows, cols, &px) ||
      px > (size_t)-1 / (k * sizeof(double)))
    return QS_EOVERFLOW;
  p->data = malloc(px * k * sizeof(double));
  if (!p->data) return QS_ENOMEM;
  p->temporal = temporal;
  p->rows = rows;
  p->cols = cols;
  return QS_OK;
}

void esrrf_partial_free(esrrf_partial *p) {
  if (!p) return;
  free(p->data);
  memset(p, 0, sizeof *p);
}

void esrrf_partial_reset(esrrf_partial *p) {
  if (p) p->n = 0;
}

int esrrf_partial_add(esrrf_partial *p, const float *maps, size_t count) {
  if (!p || !p->data || (!maps && count)) return QS_EINVAL;
  size_t px = p->rows * p->cols;
  for (size_t k = 0; k < count; k++, p->n++)
    temporal_add(p, maps + k * px, p->n, 0, px);
  return QS_OK;
}

int esrrf_partial_merge(esrrf_partial *into, const esrrf_partial *next) {
  if (!into || !next || !into->data || !next->data ||
      into->temporal != next->temporal || into->rows != next->rows ||
      into->cols != next->cols)
    return QS_EINVAL;
  size_t px = into->rows * into->cols;
  if (next->n == 0) return QS_OK;
  if (into->n == 0)
    memcpy(into->data, next->data,
           px * esrrf_partial_slots(into->temporal) * sizeof(double));
  else
    temporal_merge(into, next, 0, px);
  into->n += next->n;
  return QS_OK;
}

int esrrf_partial_finish(const esrrf_partial *p, int mag, int mpc,
                         float *out) {
  if (!p || !p->data || !out || p->n == 0 ||
      (p->temporal == TEMPORAL_TAC2 && p->n < 2))
    return QS_EINVAL;
  if (mpc && (mag < 1 || mag > TEMPORAL_MAX_MAG || p->rows % (size_t)mag ||
              p->cols % (size_t)mag))
    return QS_EINVAL;
  temporal_result(p, out, 0, p->rows * p->cols);
  if (mpc) temporal_mpc(out, p->rows, p->cols, mag);
  return QS_OK;
}
