/* agent.h — the selection policy: a pure function of the timing history.
 *
 * No I/O, no clock, no engine: the dispatcher hands the agent what it knows
 * per candidate implementation and the agent returns a choice and its
 * reason. Randomness comes from a caller-owned state (the engine seeds it),
 * so a fixed seed gives a fixed sequence of choices. */
#ifndef QS_AGENT_H
#define QS_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "quicksilver.h"
#include "timer.h"

/* Runs of the exact key the estimate reads (newest first). */
#define AGENT_WINDOW 50
/* Runs needed before a slow run can count as a delay. */
#define AGENT_DELAY_MIN 20
/* Work below this is "small" for the static order (pixels or work units). */
#define AGENT_SMALL_WORK 65536.0
/* A candidate known only by its model and predicted within this factor of
 * the best measured one is run once on the key (agent_choose). */
#define AGENT_VERIFY 1.5
/* Evidence for close candidates (agent_choose): one timed within
 * AGENT_CLOSE of the best on the key (the best's fast-half mean taken over
 * as many of its newest runs as the other has) and with fewer than
 * AGENT_EVIDENCE
 * runs there is run (fewest runs first); close ones then compare on equal
 * numbers of their newest runs, and one within AGENT_TIE of the fastest
 * there counts as tied with it, the tie going to the one with more runs.
 * Once in AGENT_REVISIT calls (by the caller's random state) the close
 * runner-up with the fewest runs is run again. */
/* A call whose best candidate is predicted under AGENT_SMALL_CALL seconds
 * is small: slices of it cost about as much as the call (each slice run
 * pays a run's fixed costs), so calibration stops at the first candidate's
 * prediction and the other cold CPU candidates are tried on the caller's
 * own later calls, one a call, once the best has run on the key
 * (choice.c, calibrate.c). */
#define AGENT_SMALL_CALL 1e-3
#define AGENT_CLOSE 1.3
#define AGENT_EVIDENCE 3
#define AGENT_TIE 0.03
#define AGENT_REVISIT 32

/* What the dispatcher knows about one candidate implementation. */
typedef struct agent_cand {
  impl_kind kind;
  /* Why it cannot be chosen for this call (NULL: it can): "unavailable",
   * "failed" (skipped after a failure), "mismatch", "device_memory". */
  const char *excluded;
  /* Successful wall seconds for the exact key, oldest first, and their
   * agent_fast_mean when the caller keeps it (0: computed here). */
  const double *walls;
  size_t n_walls;
  double fast;
  /* Other keys on this device: work size and fast-half mean seconds; or,
   * with fitted, only their count and the caller's agent_fit of them (so a
   * warm call does not refit them). */
  const double *works, *times;
  size_t n_points;
  int fitted;
  double fit_a, fit_b;
  /* Delay flag of (implementation, key). */
  int delayed;
  double factor, p;
} agent_cand;

enum agent_source { SRC_NONE, SRC_HISTORY, SRC_MODEL };

/* Mean of the fastest half (at least one) of the newest AGENT_WINDOW
 * values of walls (oldest first). n must be > 0. */
double agent_fast_mean(const double *walls, size_t n);

/* Robust fit t = a + b * work through the points: Theil-Sen slope (median
 * of pairwise slopes), intercept the median residual; a and b are clamped
 * at 0. One point (or all at one work) scales proportionally (a = 0).
 * Returns 0 on success, -1 for n == 0. */
int agent_fit(const double *works, const double *times, size_t n, double *a,
              double *b);

/* The candidate's predicted seconds at `work` and its source (SRC_NONE:
 * unknown, *seconds = -1). */
double agent_estimate(const agent_cand *c, double work, int *source);

/* 1 if the candidate has no timing on this device at all (cold). */
int agent_cold(const agent_cand *c);

/* Chooses among c[0..n): returns the index, or -1 if every candidate is
 * excluded. `reason` receives "history", "model", "verification" (a
 * model-only candidate within AGENT_VERIFY of the best measured one, run
 * once on the key), "exploration" (a close candidate short of evidence or
 * revisited, a delayed favourite's rival, or a cold CPU candidate tried on
 * a small call, AGENT_SMALL_CALL) or "static". With static_cold, any
 * usable cold candidate makes the choice
 * the static order by kind and work; otherwise cold candidates are passed
 * over while some candidate has an estimate. seconds[i] and source[i]
 * (both may be NULL) receive every candidate's estimate. */
long agent_choose(const agent_cand *c, size_t n, double work, int static_cold,
                  uint64_t *rng, const char **reason, double *seconds,
                  int *source);

/* Index of the first usable candidate in the static order: serial, then
 * threaded, composite, OpenCL for small work; the reverse preference
 * (OpenCL, threaded, composite, serial) for large work. -1 if none. */
long agent_static(const agent_cand *c, size_t n, double work);

/* Delay bookkeeping after a successful run of t seconds; walls are the
 * previous successful runs of the key, oldest first. With at least
 * AGENT_DELAY_MIN runs (t included), t > fast_mean + 4 fast_std over the
 * newest window flags a delay with factor t / fast_mean and p the
 * Laplace-smoothed frequency of delayed-after-delayed in the window
 * followed by t; any other run clears the flag. Returns 1 when t is a
 * delay, 0 otherwise. */
int agent_inform(const double *walls, size_t n, double t, int *delayed,
                 double *factor, double *p);

/* The statistics agent_inform compares a run against: those of the newest
 * AGENT_WINDOW of walls (oldest first); n must be > 0. Callers that keep
 * them per key avoid re-sorting the window on every run. */
int agent_window(const double *walls, size_t n, stats *s);
int agent_inform_with(const double *walls, size_t n, const stats *s,
                      double t, int *delayed, double *factor, double *p);

/* Uniform double in [0, 1) from a 64-bit state (never left at 0). */
double agent_random(uint64_t *state);

#endif
