/* agent.c — the selection policy (see agent.h): fast-half means of the
 * exact key, a robust linear model of time against work for unseen keys,
 * a static order for cold starts, and delay-aware exploration. */
#include "agent.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "timer.h"

int agent_window(const double *walls, size_t n, stats *s) {
  size_t k = n > AGENT_WINDOW ? AGENT_WINDOW : n;
  return stats_of(walls + (n - k), k, s);
}

double agent_fast_mean(const double *walls, size_t n) {
  stats s;
  return agent_window(walls, n, &s) ? -1 : s.fast_mean;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_of(double *x, size_t n) {
  qsort(x, n, sizeof *x, cmp_double);
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* Pairs used by the Theil-Sen slope; more points than this use the newest
 * ones (the points come oldest key first). */
#define FIT_POINTS 64

int agent_fit(const double *works, const double *times, size_t n, double *a,
              double *b) {
  if (n == 0) return -1;
  if (n > FIT_POINTS) {
    works += n - FIT_POINTS;
    times += n - FIT_POINTS;
    n = FIT_POINTS;
  }
  double slopes[FIT_POINTS * (FIT_POINTS - 1) / 2], resid[FIT_POINTS];
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++)
      if (works[j] != works[i])
        slopes[m++] = (times[j] - times[i]) / (works[j] - works[i]);
  if (m == 0) {
    /* one work size: proportional scaling through the origin */
    double t = 0, w = 0;
    for (size_t i = 0; i < n; i++) t += times[i], w += works[i];
    *a = 0;
    *b = w > 0 ? t / w : 0;
    return 0;
  }
  double slope = median_of(slopes, m);
  if (slope < 0) slope = 0;
  for (size_t i = 0; i < n; i++) resid[i] = times[i] - slope * works[i];
  double icept = median_of(resid, n);
  *a = icept < 0 ? 0 : icept;
  *b = slope;
  return 0;
}

int agent_cold(const agent_cand *c) {
  return c->n_walls == 0 && c->n_points == 0;
}

double agent_estimate(const agent_cand *c, double work, int *source) {
  if (c->n_walls) {
    *source = SRC_HISTORY;
    return c->fast > 0 ? c->fast : agent_fast_mean(c->walls, c->n_walls);
  }
  double a = c->fit_a, b = c->fit_b;
  if (c->fitted || !agent_fit(c->works, c->times, c->n_points, &a, &b)) {
    *source = SRC_MODEL;
    return a + b * work;
  }
  *source = SRC_NONE;
  return -1;
}

double agent_random(uint64_t *state) {
  /* splitmix64: good enough for weighted exploration, trivially seeded */
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (double)(z >> 11) / 9007199254740992.0;
}

static int static_rank(impl_kind k, double work) {
  static const int small[] = {[IMPL_SERIAL] = 0, [IMPL_THREADED] = 1,
                              [IMPL_COMPOSITE] = 2, [IMPL_OPENCL] = 3};
  static const int large[] = {[IMPL_OPENCL] = 0, [IMPL_THREADED] = 1,
                              [IMPL_COMPOSITE] = 2, [IMPL_SERIAL] = 3};
  if ((unsigned)k > IMPL_COMPOSITE) return 4;
  return work < AGENT_SMALL_WORK ? small[k] : large[k];
}

long agent_static(const agent_cand *c, size_t n, double work) {
  long best = -1;
  for (size_t i = 0; i < n; i++)
    if (!c[i].excluded &&
        (best < 0 ||
         static_rank(c[i].kind, work) < static_rank(c[best].kind, work)))
      best = (long)i;
  return best;
}

/* The cold CPU candidate a small call tries (AGENT_SMALL_CALL): first in
 * the static order, the one declared last among equals (a method lists a
 * kind from its reference to its most refined variant); -1 if none. */
static long small_call_cold(const agent_cand *c, size_t n, double work) {
  long pick = -1;
  for (size_t i = n; i-- > 0;)
    if (!c[i].excluded && c[i].kind != IMPL_OPENCL && agent_cold(&c[i]) &&
        (pick < 0 ||
         static_rank(c[i].kind, work) < static_rank(c[pick].kind, work)))
      pick = (long)i;
  return pick;
}

/* Fast-half mean of the newest m of the candidate's walls. */
static double newest_fast(const agent_cand *c, size_t m) {
  if (m >= c->n_walls || m >= AGENT_WINDOW)
    return c->fast > 0 ? c->fast : agent_fast_mean(c->walls, c->n_walls);
  return agent_fast_mean(c->walls + (c->n_walls - m), m);
}

/* Whether candidate i, timed on the key, is within AGENT_CLOSE of the best
 * when the best is judged by as many of its newest runs as i has. */
static int is_close(const agent_cand *c, size_t i, long best) {
  if (c[i].excluded || !c[i].n_walls) return 0;
  int src;
  return agent_estimate(&c[i], 0, &src) <=
         AGENT_CLOSE * newest_fast(&c[best], c[i].n_walls);
}

/* The evidence rules of AGENT_CLOSE (agent.h) among the candidates timed
 * on the key, given the best by estimate. A fast-half mean falls as runs
 * accumulate (more chances of a lucky run), so a favourite with many runs
 * would otherwise keep beating a rival timed once or twice whatever their
 * true times; and a single run says little where runs vary by tens of
 * per cent. */
static long agent_close(const agent_cand *c, size_t n, long best,
                        uint64_t *rng, const char **reason) {
  long few = -1, rival = -1;
  size_t m = AGENT_WINDOW, close = 0;
  unsigned char near[QS_MAX_ESTIMATES];
  size_t k = n < QS_MAX_ESTIMATES ? n : QS_MAX_ESTIMATES;
  for (size_t i = 0; i < k; i++) {
    near[i] = (long)i == best || is_close(c, i, best);
    if (!near[i]) continue;
    close++;
    if (c[i].n_walls < m) m = c[i].n_walls;
    if (c[i].n_walls < AGENT_EVIDENCE &&
        (few < 0 || c[i].n_walls < c[few].n_walls))
      few = (long)i;
    if ((long)i != best && (rival < 0 || c[i].n_walls < c[rival].n_walls))
      rival = (long)i;
  }
  if (few >= 0) { /* the best itself short of runs: simply the best */
    if (few != best) *reason = "exploration";
    return few;
  }
  if (close < 2) return best;
  if (agent_random(rng) * AGENT_REVISIT < 1) {
    *reason = "exploration";
    return rival;
  }
  /* equal footing: the newest m runs of each; then ties to evidence */
  double t[QS_MAX_ESTIMATES], lo = INFINITY;
  for (size_t i = 0; i < k; i++) {
    t[i] = INFINITY;
    if (!near[i]) continue;
    t[i] = newest_fast(&c[i], m);
    if (t[i] < lo) lo = t[i];
  }
  long pick = best;
  for (size_t i = 0; i < k; i++) {
    if (!(t[i] <= lo * (1 + AGENT_TIE))) continue;
    if (!(t[pick] <= lo * (1 + AGENT_TIE)) ||
        c[i].n_walls > c[pick].n_walls ||
        (c[i].n_walls == c[pick].n_walls && t[i] < t[pick]))
      pick = (long)i;
  }
  return pick;
}

long agent_choose(const agent_cand *c, size_t n, double work, int static_cold,
                  uint64_t *rng, const char **reason, double *seconds,
                  int *source) {
  long best = -1, any = -1;
  int cold = 0, delays = 0;
  double best_t = INFINITY;
  for (size_t i = 0; i < n; i++) {
    int src;
    double t = agent_estimate(&c[i], work, &src);
    if (seconds) seconds[i] = t;
    if (source) source[i] = src;
    if (c[i].excluded) continue;
    if (any < 0) any = (long)i;
    if (src == SRC_NONE) {
      cold = 1;
      continue;
    }
    delays |= c[i].delayed;
    if (t < best_t) best_t = t, best = (long)i;
  }
  if (any < 0) return -1;
  if (best < 0 || (cold && static_cold)) {
    *reason = "static";
    return agent_static(c, n, work);
  }
  int src;
  agent_estimate(&c[best], work, &src);
  *reason = src == SRC_HISTORY ? "history" : "model";
  /* A small call whose best has run on the key tries a cold CPU
   * candidate on the call itself: calibrating it on a slice would cost
   * about as much (agent.h). OpenCL ones wait for a larger call. */
  if (cold && src == SRC_HISTORY && best_t < AGENT_SMALL_CALL) {
    long k = small_call_cold(c, n, work);
    if (k >= 0) {
      *reason = "exploration";
      return k;
    }
  }
  /* Verification: a candidate known here only by its model (other keys,
   * calibration slices) and predicted within AGENT_VERIFY of the measured
   * best runs once on this key, so that a model error (a slice that did
   * not transfer, a disturbed calibration) costs one run, not every run. */
  if (src == SRC_HISTORY) {
    long verify = -1;
    double verify_t = INFINITY;
    for (size_t i = 0; i < n; i++) {
      int s2;
      if (c[i].excluded || c[i].n_walls) continue;
      double t = agent_estimate(&c[i], work, &s2);
      if (s2 == SRC_MODEL && t <= AGENT_VERIFY * best_t && t < verify_t)
        verify = (long)i, verify_t = t;
    }
    if (verify >= 0) {
      *reason = "verification";
      return verify;
    }
  }
  if (src == SRC_HISTORY) {
    best = agent_close(c, n, best, rng, reason);
    if (strcmp(*reason, "history")) return best;
  }
  if (!delays) return best;

  /* Expected times with the delays; explore only if they change the
   * winner, weighting candidates by (1 / expected)^2. */
  double w[QS_MAX_ESTIMATES], total = 0, exp_best = INFINITY;
  long exp_arg = -1;
  size_t m = n < QS_MAX_ESTIMATES ? n : QS_MAX_ESTIMATES;
  for (size_t i = 0; i < m; i++) {
    w[i] = 0;
    if (c[i].excluded) continue;
    double t = agent_estimate(&c[i], work, &src);
    if (src == SRC_NONE || !(t > 0)) continue;
    if (c[i].delayed) t = t * (1 - c[i].p) + t * c[i].factor * c[i].p;
    if (t < exp_best) exp_best = t, exp_arg = (long)i;
    w[i] = 1 / (t * t);
    total += w[i];
  }
  if (exp_arg == best || exp_arg < 0 || !(total > 0)) return best;
  double r = agent_random(rng) * total;
  *reason = "exploration";
  for (size_t i = 0; i < m; i++) {
    if (w[i] <= 0) continue;
    if (r < w[i]) return (long)i;
    r -= w[i];
  }
  return exp_arg;
}

int agent_inform(const double *walls, size_t n, double t, int *delayed,
                 double *factor, double *p) {
  stats s;
  if (n == 0 || agent_window(walls, n, &s)) {
    *delayed = 0;
    return 0;
  }
  return agent_inform_with(walls, n, &s, t, delayed, factor, p);
}

int agent_inform_with(const double *walls, size_t n, const stats *st,
                      double t, int *delayed, double *factor, double *p) {
  size_t k = n > AGENT_WINDOW ? AGENT_WINDOW : n;
  if (k + 1 < AGENT_DELAY_MIN) {
    *delayed = 0;
    return 0;
  }
  const double *x = walls + (n - k);
  const stats s = *st;
  double limit = s.fast_mean + 4 * s.fast_std;
  if (!(t > limit) || !(s.fast_mean > 0)) {
    *delayed = 0;
    return 0;
  }
  /* states of the window followed by t; count what follows a delay */
  size_t after_delay = 0, delay_delay = 0;
  int prev = 0;
  for (size_t i = 0; i <= k; i++) {
    int cur = (i < k ? x[i] : t) > limit;
    if (i > 0 && prev) {
      after_delay++;
      delay_delay += cur;
    }
    prev = cur;
  }
  *delayed = 1;
  *factor = t / s.fast_mean;
  *p = ((double)delay_delay + 1) / ((double)after_delay + 2);
  return 1;
}
