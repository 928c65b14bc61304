/* timer.c — see timer.h. */
#include "timer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quicksilver.h"

int64_t qs_timer_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void mean_std(const double *x, size_t n, double *mean, double *std) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += x[i];
  double m = s / (double)n, v = 0;
  for (size_t i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
  *mean = m;
  *std = sqrt(v / (double)n);
}

int qs_stats_of(const double *x, size_t n, qs_stats *s) {
  if (!s) return QS_EINVAL;
  memset(s, 0, sizeof *s);
  if (n == 0 || !x) return QS_EINVAL;
  if (n > SIZE_MAX / sizeof(double)) return QS_EOVERFLOW;
  double local[64];
  double *y = n <= 64 ? local : malloc(n * sizeof *y);
  if (!y) return QS_ENOMEM;
  memcpy(y, x, n * sizeof *y);
  qsort(y, n, sizeof *y, cmp_double);
  s->n = n;
  s->min = y[0];
  s->max = y[n - 1];
  s->median = n % 2 ? y[n / 2] : 0.5 * (y[n / 2 - 1] + y[n / 2]);
  double sd;
  mean_std(y, n, &s->mean, &sd);
  size_t h = n / 2 ? n / 2 : 1;
  mean_std(y, h, &s->fast_mean, &s->fast_std);
  if (n > h)
    mean_std(y + h, n - h, &s->slow_mean, &s->slow_std);
  else
    mean_std(y, n, &s->slow_mean, &s->slow_std);
  if (y != local) free(y);
  return QS_OK;
}
