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
/* The one exploration rule (agent_choose). Every usable candidate has an
 * estimate and an optimistic bound (agent_lower): what it could still
 * take at best, given how much is known of it. Exact-key history of n runs:
 * the estimate less u / n of it, u the key's run noise (agent_run_noise:
 * how far above its implementation's fast-half mean one run has been seen
 * on this key, with a margin, between AGENT_NOISE and AGENT_RUN_U; until
 * the key shows AGENT_NOISE_SEEN repeated runs, AGENT_RUN_U: one run can be
 * 2-3x its implementation's median, a cold call's run, a burst of load,
 * and a true best timed once on such a run must be tried again; a key
 * whose runs repeat within 10 % has shown that a schedule timed once at
 * 1.8x the best is not such a run). A model through two or
 * more work sizes: half its prediction (AGENT_MODEL_U; a model fitted on
 * slices can miss the full call's time by that much), and less again when
 * it extrapolates: times (w_max / w)^AGENT_REACH for a call of work w
 * beyond the largest work w_max it was fitted on (a slice of a few dozen
 * pixels a side spends a share of its time on borders and vector
 * remainders that the full call does not, and a burst of load on one
 * short slice run steepens the slope: a variant that looks several times
 * slower there can be the fastest on the call; an extrapolation over a
 * large ratio is never tight). A model of one work
 * size (w1, t1) cannot tell a fixed cost from a per-work one: at best all
 * of the fixed cost the implementation's kind may carry is fixed (OpenCL:
 * all of t1, launches and transfers; a CPU kind: at most AGENT_CPU_FIXED
 * seconds, a pool's wake-up and a call's tables many times over, the
 * serial kind AGENT_SERIAL_FIXED, which no pool wakes: a call's tables
 * and outputs, measured at under 0.1 ms here, eSRRF on 1 x 4 x 4 pixels
 * in 0.09 ms, rgc on a 20 x 20 image in 0.06-0.09 ms; a fixed
 * cost learnt from the method's own fits was tried and dropped: under
 * load a larger slice can run faster than a smaller one, and one noisy
 * intercept then let every hopeless candidate look promising) and the
 * rest scales with the work. Nothing at all: 0 (calibration
 * measures it first).
 * The incumbent is the best estimate among the candidates timed on the
 * key. Another candidate is tried on the call when its optimistic bound
 * beats the incumbent by more than AGENT_TIE (for a rival timed on the
 * key, the incumbent judged by the lesser of its estimate and as many of
 * its newest runs as the rival has, at least AGENT_FOOTING: a fast-half
 * mean falls as runs accumulate, and a rival's old runs may date from a
 * quieter machine) and what the try may cost over the incumbent
 * (its estimate less the incumbent's) is at most AGENT_HORIZON times what
 * it could save a call (the incumbent less its bound); the most promising
 * (lowest bound relative to the incumbent) first. While the incumbent
 * has fewer than AGENT_FOOTING runs on the key, a rival timed there as
 * often as it waits for its next run: an incumbent's first run is often a
 * cold one, against which every rival looks promising. A candidate whose
 * bound does not beat the incumbent is hopeless: neither run nor
 * calibrated again while that holds. */
#define AGENT_RUN_U 0.5
#define AGENT_NOISE_SEEN 3
#define AGENT_NOISE_MARGIN 1.5
#define AGENT_NOISE 0.15
#define AGENT_TIE 0.05
#define AGENT_FOOTING 4
#define AGENT_MODEL_U 0.5
#define AGENT_REACH 0.125
#define AGENT_HORIZON 20.0
#define AGENT_CPU_FIXED 1e-3
#define AGENT_SERIAL_FIXED 0.25e-3
/* A call whose best candidate is predicted under AGENT_SMALL_CALL seconds
 * is small: slices of it cost about as much as the call (each slice run
 * pays a run's fixed costs), so calibration stops at the first candidate's
 * prediction and the other cold CPU candidates are tried on the caller's
 * own later calls, one a call, once the best has run on the key
 * (choice.c, calibrate.c). */
#define AGENT_SMALL_CALL 1e-3

/* What the dispatcher knows about one candidate implementation. */
typedef struct agent_cand {
  qs_impl_kind kind;
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
  /* The work of the model's one point when it has a single one (0: not
   * known), for the optimistic bound (agent_lower). */
  double point_work;
  /* The largest work the model was fitted on (0: not known: the largest
   * of works, if given), for the optimistic bound (agent_lower). */
  double max_work;
  /* One-time seconds this call would pay on top of the steady estimate
   * (program builds, first launches of a size in this process); added to
   * the estimate and the bound. */
  double once;
  /* once is known from more than one run (or is none): the optimistic
   * bound includes it; a single run's may have filled the caches. */
  int once_known;
  /* Seconds of moving device images this candidate needs on this call
   * (inputs pulled to the host, outputs pushed back: bytes over the
   * device's measured bandwidth, as StarPU's dmda adds them); certain, so
   * added to the estimate and the bound alike. 0 for a host call. */
  double transfer;
  /* Its probe refused the key's calibration slice: the call itself is the
   * only place to time it (agent_choose tries it there). */
  int no_slice;
  /* No timing yet, and the one-time costs it would pay in this process
   * are more than calibration's budget now holds: it waits for the
   * account (agent_explain says "waiting"). */
  int waits_once;
  /* Known by a model of one work size (point_work) that calibration will
   * give a second size: not tried on the call meanwhile (agent_choose).
   * One size cannot tell a fixed cost from a per-work one, so its bound
   * (agent_lower) is near 0 for a CPU kind timed on a slice of a few
   * microseconds: a try on the call cost up to 100x the best (a threaded
   * schedule at 1.7 s against 0.05 s), a second slice size a fraction of
   * the call. */
  int second;
  /* The key's run noise (agent_run_noise), the share of its estimate a
   * run on the key may be above the implementation's steady time: its
   * optimistic bound is its estimate less run_u / n for n runs (0: not
   * known, AGENT_RUN_U). */
  double run_u;
  /* Cold (no timing of its own): the least it can take, known from a
   * sibling, another schedule of the same code timed for this call
   * (choice.c, cands_prior); 0: nothing known. The optimistic bound of a
   * cold candidate (agent_lower): one that cannot beat the best is
   * neither calibrated nor tried on the call while that holds. Known by
   * one size only (and not on the key): the least its siblings' stopped
   * slice runs allow, which its bound is never below either. */
  double prior;
  /* The least it can take at the call's work by its calibration slice
   * runs stopped at their time limit (calibrate.c: each such wall is a
   * lower bound on its slice, scaled as a one-size model's bound); 0:
   * none. Its optimistic bound (agent_lower) is never below it. */
  double stopped;
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

/* 1 if the candidate is cold and its prior (agent_cand.prior, or its
 * stopped bound) does not beat best seconds by AGENT_TIE: it is not tried
 * while that holds. */
int agent_outclassed(const agent_cand *c, double best);

/* The run noise of the key c[0..n) were timed on: AGENT_NOISE_MARGIN
 * times the largest share by which a run stood above its candidate's
 * fast-half mean (1 - fast / slowest, over each candidate's window), among
 * the candidates timed more than once there, clamped to [AGENT_NOISE,
 * AGENT_RUN_U]; AGENT_RUN_U while those show fewer than AGENT_NOISE_SEEN
 * repeated runs (runs beyond each one's first). For agent_cand.run_u. */
double agent_run_noise(const agent_cand *c, size_t n);

/* The optimistic bound of the candidate at `work` (see AGENT_NOISE), its
 * one-time costs included once more than one run has shown them; for a
 * cold one its prior (0 when nothing is known). */
double agent_lower(const agent_cand *c, double work);

/* Why the rule treats each candidate as it does, for a report: the
 * incumbent's index (-1: none timed on the key) and per candidate its
 * bound (lower[i]) and a verdict (state[i]): "best", "next" (the pick of
 * an exploration), "promising" (could beat the best, tried after the
 * next), "costly" (could beat it, but trying costs more than it could
 * save), "hopeless" (cannot beat it), "second" (could beat it, timed at
 * one size: calibration's second size first, agent_cand.second), "cold"
 * (no timing yet: calibration or a small call's try first), "waiting"
 * (cold, its one-time costs over calibration's budget now), "outclassed"
 * (no timing, and its prior cannot beat the best: not tried), "stopped"
 * (hopeless or outclassed by the bound of its slice runs stopped at
 * calibration's time limit, agent_cand.stopped), "retry" (cold, stopped
 * short of what settles it: it runs again when the budget covers that),
 * "unmeasured" (no incumbent to compare with) or the candidate's
 * exclusion. pick is agent_choose's result. */
long agent_explain(const agent_cand *c, size_t n, double work, long pick,
                   double *lower, const char **state);

/* Chooses among c[0..n): returns the index, or -1 if every candidate is
 * excluded. `reason` receives "history", "model", "verification" (a
 * candidate known only by its model whose bound beats the best measured
 * one, run on the key), "exploration" (a candidate timed on the key whose
 * bound beats the best, a delayed favourite's rival, or a cold CPU
 * candidate tried on a small call, AGENT_SMALL_CALL) or "static". With
 * static_cold, any
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
int agent_window(const double *walls, size_t n, qs_stats *s);
int agent_inform_with(const double *walls, size_t n, const qs_stats *s,
                      double t, int *delayed, double *factor, double *p);

/* Uniform double in [0, 1) from a 64-bit state (never left at 0). */
double agent_random(uint64_t *state);

#endif
