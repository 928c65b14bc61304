/* timer.h — monotonic time and the summary statistics shared by the agent
 * and the benchmarks. */
#ifndef QS_TIMER_H
#define QS_TIMER_H

#include <stddef.h>
#include <stdint.h>

/* Monotonic nanoseconds (CLOCK_MONOTONIC). */
int64_t timer_ns(void);

/* Summary of a sample. The "fast half" is the smallest max(1, n / 2) values
 * (the rule NanoPyx's agent uses, defined for n == 1 too); the "slow half"
 * is the rest (or the one value when n == 1). Standard deviations are
 * population ones. */
typedef struct stats {
  size_t n;
  double min, max, median, mean;
  double fast_mean, fast_std;
  double slow_mean, slow_std;
} stats;

/* Fills *s from x[0..n); x is not modified. Returns QS_EINVAL for n == 0
 * and QS_ENOMEM if the scratch copy cannot be made. */
int stats_of(const double *x, size_t n, stats *s);

#endif
