/* agent.c — the selection policy (see agent.h): fast-half means of the
 * exact key, a robust linear model of time against work for unseen keys,
 * a static order for cold starts, one exploration rule (optimism under
 * uncertainty: a candidate is tried while its optimistic bound could beat
 * the best timed one, within what it could save) and delay-aware
 * exploration. */
#include "agent.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "timer.h"

int agent_window(const double *walls, size_t n, qs_stats *s) {
  size_t k = n > AGENT_WINDOW ? AGENT_WINDOW : n;
  return qs_stats_of(walls + (n - k), k, s);
}

double agent_fast_mean(const double *walls, size_t n) {
  qs_stats s;
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

static int static_rank(qs_impl_kind k, double work) {
  static const int small[] = {[QS_IMPL_SERIAL] = 0,
                              [QS_IMPL_THREADED] = 1,
                              [QS_IMPL_COMPOSITE] = 2,
                              [QS_IMPL_OPENCL] = 3};
  static const int large[] = {[QS_IMPL_OPENCL] = 0,
                              [QS_IMPL_THREADED] = 1,
                              [QS_IMPL_COMPOSITE] = 2,
                              [QS_IMPL_SERIAL] = 3};
  if ((unsigned)k > QS_IMPL_COMPOSITE) return 4;
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

int agent_outclassed(const agent_cand *c, double best) {
  double p = c->prior > c->stopped ? c->prior : c->stopped;
  return agent_cold(c) && p > 0 && !(p < best * (1 - AGENT_TIE));
}

/* The cold CPU candidate a small call tries (AGENT_SMALL_CALL): first in
 * the static order, the one declared last among equals (a method lists a
 * kind from its reference to its most refined variant), none whose prior
 * cannot beat the best (best seconds); -1 if none. */
static long small_call_cold(const agent_cand *c, size_t n, double work,
                            double best) {
  long pick = -1;
  for (size_t i = n; i-- > 0;)
    if (!c[i].excluded && c[i].kind != QS_IMPL_OPENCL && agent_cold(&c[i]) &&
        !agent_outclassed(&c[i], best) &&
        (pick < 0 ||
         static_rank(c[i].kind, work) < static_rank(c[pick].kind, work)))
      pick = (long)i;
  return pick;
}

/* Fast-half mean of the newest m of the candidate's walls. */
/* What a call adds to a candidate's steady estimate: one-time costs and
 * the moves of device images it needs. */
static double extra(const agent_cand *c) { return c->once + c->transfer; }

static double newest_fast(const agent_cand *c, size_t m) {
  if (m >= c->n_walls || m >= AGENT_WINDOW)
    return c->fast > 0 ? c->fast : agent_fast_mean(c->walls, c->n_walls);
  return agent_fast_mean(c->walls + (c->n_walls - m), m);
}

/* The bound of a candidate known by a model, before its stopped runs'. */
static double model_lower(const agent_cand *c, double work, double t,
                          double once) {
  if (c->n_points == 1 && c->point_work > 0) {
    /* one size: as much of it fixed as the kind may carry */
    double t1 = c->fit_b * c->point_work;
    double cap = c->kind == QS_IMPL_SERIAL ? AGENT_SERIAL_FIXED
                                           : AGENT_CPU_FIXED;
    double fixed = c->kind == QS_IMPL_OPENCL || t1 < cap ? t1 : cap;
    double scaled = fixed + (t1 - fixed) * work / c->point_work;
    return (scaled < t ? scaled : t) * (1 - AGENT_NOISE) + once;
  }
  double reach = c->max_work;
  for (size_t i = 0; !(c->max_work > 0) && c->works && i < c->n_points; i++)
    if (c->works[i] > reach) reach = c->works[i];
  double widen = reach > 0 && work > reach ? pow(reach / work, AGENT_REACH)
                                           : 1;
  return t * (1 - AGENT_MODEL_U) * widen + once;
}

double agent_run_noise(const agent_cand *c, size_t n) {
  double worst = 0;
  size_t seen = 0;
  for (size_t i = 0; i < n; i++) {
    if (c[i].n_walls < 2) continue;
    /* the window's slowest, against the fast-half mean the caller keeps
     * (a scan: this runs on every call, for every candidate) */
    size_t m = c[i].n_walls < AGENT_WINDOW ? c[i].n_walls : AGENT_WINDOW;
    const double *w = c[i].walls + (c[i].n_walls - m);
    double hi = 0;
    for (size_t k = 0; k < m; k++)
      if (w[k] > hi) hi = w[k];
    double fast = c[i].fast > 0 ? c[i].fast : agent_fast_mean(w, m);
    if (!(hi > 0) || !(fast > 0)) continue;
    seen += m - 1;
    if (1 - fast / hi > worst) worst = 1 - fast / hi;
  }
  if (seen < AGENT_NOISE_SEEN) return AGENT_RUN_U;
  double u = AGENT_NOISE_MARGIN * worst;
  return u < AGENT_NOISE ? AGENT_NOISE : u > AGENT_RUN_U ? AGENT_RUN_U : u;
}

double agent_lower(const agent_cand *c, double work) {
  int src;
  double t = agent_estimate(c, work, &src);
  if (src == SRC_NONE || !(t >= 0))
    return c->prior > c->stopped ? c->prior : c->stopped;
  double once = (c->once_known ? c->once : 0) + c->transfer;
  if (src == SRC_HISTORY) {
    size_t n = c->n_walls < AGENT_WINDOW ? c->n_walls : AGENT_WINDOW;
    double u = c->run_u > 0 ? c->run_u : AGENT_RUN_U;
    return t * (1 - u / (double)n) + once;
  }
  double lo = model_lower(c, work, t, once);
  double floor = c->stopped;
  if (c->n_points == 1 && !c->n_walls && c->prior > floor) floor = c->prior;
  return lo > floor ? lo : floor;
}

/* What the rule compares a candidate with: the incumbent's estimate; for
 * one timed on the key, the lesser of that and the incumbent over as many
 * of its newest runs as the rival has, at least AGENT_FOOTING. The newest
 * runs judge the two on equal footing (a fast-half mean falls as runs
 * accumulate, so a favourite's old lucky runs would keep beating a rival
 * timed once), the whole window keeps a rival timed while the machine was
 * quieter from being tried again each time the load rises. One-time costs
 * included. */
static double ref_for(const agent_cand *c, long inc, size_t i, double work) {
  int src;
  double all = agent_estimate(&c[inc], work, &src) + extra(&c[inc]);
  if (!c[i].n_walls || !c[inc].n_walls) return all;
  double newest = newest_fast(&c[inc], c[i].n_walls > AGENT_FOOTING
                                           ? c[i].n_walls
                                           : AGENT_FOOTING) +
                  extra(&c[inc]);
  return newest < all ? newest : all;
}

enum { V_HOPELESS, V_COSTLY, V_PROMISING };

/* The rule's verdict on candidate i against the incumbent; *score the
 * bound over the reference (lower: more promising). */
static int verdict(const agent_cand *c, long inc, size_t i, double work,
                   double *score) {
  int src;
  double ref = ref_for(c, inc, i, work);
  double lo = agent_lower(&c[i], work);
  double t = agent_estimate(&c[i], work, &src) + extra(&c[i]);
  double inc_t = agent_estimate(&c[inc], work, &src) + extra(&c[inc]);
  *score = ref > 0 ? lo / ref : INFINITY;
  if (!(lo < ref * (1 - AGENT_TIE))) return V_HOPELESS;
  double cost = t > inc_t ? t - inc_t : 0;
  return cost <= AGENT_HORIZON * (ref - lo) ? V_PROMISING : V_COSTLY;
}

/* The incumbent: the best estimate among the candidates timed on the key
 * (-1: none). */
static long incumbent(const agent_cand *c, size_t n, double work) {
  long inc = -1;
  double best = INFINITY;
  for (size_t i = 0; i < n; i++) {
    int src;
    if (c[i].excluded || !c[i].n_walls) continue;
    double t = agent_estimate(&c[i], work, &src) + extra(&c[i]);
    if (t < best) best = t, inc = (long)i;
  }
  return inc;
}

/* The candidate the exploration rule tries on the call (-1: none). */
static long explore(const agent_cand *c, size_t n, double work, long inc) {
  long pick = -1;
  double pick_s = INFINITY;
  for (size_t i = 0; i < n; i++) {
    double s;
    if ((long)i == inc || c[i].excluded || agent_cold(&c[i]) ||
        c[i].second)
      continue;
    /* equal footing: a rival timed on the key as often as an incumbent
     * of few runs waits for the incumbent's next run (its first is often
     * a cold one, 1.5-2x its steady time, against which every rival
     * looks promising; a rival gets the benefit of the doubt through its
     * bound, the incumbent through being run again) */
    if (c[i].n_walls && c[inc].n_walls < AGENT_FOOTING &&
        c[i].n_walls >= c[inc].n_walls)
      continue;
    if (verdict(c, inc, i, work, &s) != V_PROMISING) continue;
    if (s < pick_s || (s == pick_s && c[i].n_walls < c[pick].n_walls))
      pick = (long)i, pick_s = s;
  }
  return pick;
}

long agent_explain(const agent_cand *c, size_t n, double work, long pick,
                   double *lower, const char **state) {
  long inc = incumbent(c, n, work);
  for (size_t i = 0; i < n; i++) {
    double s;
    lower[i] = c[i].excluded ? -1 : agent_lower(&c[i], work);
    if (c[i].excluded)
      state[i] = c[i].excluded;
    else if ((long)i == pick && (long)i != inc && inc >= 0)
      state[i] = "next";
    else if ((long)i == inc)
      state[i] = "best";
    else if (agent_cold(&c[i]))
      state[i] = inc >= 0 && agent_outclassed(&c[i], ref_for(c, inc, i, work))
                     ? (c[i].stopped > c[i].prior ? "stopped" : "outclassed")
                 : c[i].waits_once ? "waiting"
                 : c[i].stopped > 0 ? "retry"
                                    : "cold";
    else if (inc < 0)
      state[i] = "unmeasured";
    else if (verdict(c, inc, i, work, &s) == V_HOPELESS)
      state[i] = c[i].stopped >= lower[i] ? "stopped" : "hopeless";
    else if (c[i].second)
      state[i] = "second";
    else
      state[i] = (const char *[]){"hopeless", "costly", "promising"}
          [verdict(c, inc, i, work, &s)];
  }
  return inc;
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
    if (t + extra(&c[i]) < best_t) best_t = t + extra(&c[i]), best = (long)i;
  }
  if (any < 0) return -1;
  if (best < 0 || (cold && static_cold)) {
    *reason = "static";
    return agent_static(c, n, work);
  }
  /* a best known only by its model runs on the key first */
  long inc = incumbent(c, n, work);
  if (inc < 0) {
    *reason = "model";
    return best;
  }
  best = inc;
  int src;
  best_t = agent_estimate(&c[best], work, &src);
  *reason = "history";
  /* A small call tries a cold CPU candidate on the call itself:
   * calibrating it on a slice would cost about as much (agent.h). OpenCL
   * ones wait for a larger call. */
  if (cold && best_t < AGENT_SMALL_CALL) {
    long k = small_call_cold(c, n, work, best_t + extra(&c[best]));
    if (k >= 0) {
      *reason = "exploration";
      return k;
    }
  }
  /* a cold one that no slice can time is tried on the call itself */
  for (size_t i = 0; cold && i < n; i++)
    if (!c[i].excluded && c[i].no_slice && agent_cold(&c[i]) &&
        !agent_outclassed(&c[i], best_t + extra(&c[best]))) {
      *reason = "exploration";
      return (long)i;
    }
  long k = explore(c, n, work, best);
  if (k >= 0) {
    *reason = c[k].n_walls ? "exploration" : "verification";
    return k;
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
    t += c[i].transfer;
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
  qs_stats s;
  if (n == 0 || agent_window(walls, n, &s)) {
    *delayed = 0;
    return 0;
  }
  return agent_inform_with(walls, n, &s, t, delayed, factor, p);
}

int agent_inform_with(const double *walls, size_t n, const qs_stats *st,
                      double t, int *delayed, double *factor, double *p) {
  size_t k = n > AGENT_WINDOW ? AGENT_WINDOW : n;
  if (k + 1 < AGENT_DELAY_MIN) {
    *delayed = 0;
    return 0;
  }
  const double *x = walls + (n - k);
  const qs_stats s = *st;
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
