/* sweep.h — benchmark sweeps: every (method, input size, parameter
 * variant) step goes through qs_method_benchmark(), which times every
 * implementation (warm-up, repeats, min and median) and records each run in
 * the store. Inputs are simulated blinking-emitter stacks, deterministic
 * per size. Steps run from the least work to the most. With a time
 * budget, a step predicted not to finish in what is left of it is skipped
 * (and reported), never begun: the prediction comes from the method's
 * previous step, else the engine's estimates, else one or two frames run
 * with serial; the sweep ends when the budget is spent. */
#ifndef QS_SWEEP_H
#define QS_SWEEP_H

#include <stddef.h>

#include "quicksilver.h"

typedef struct sweep_size {
  size_t frames, rows, cols;
} sweep_size;

#define SWEEP_MAX_SIZES 16
#define SWEEP_MAX_METHODS 16
#define SWEEP_MAX_VARIANTS 16

/* One step of the grid. `params` is its parameter assignment as text
 * ("magnification=2"), "" for defaults. */
typedef struct sweep_step {
  const qs_method_desc *method;
  sweep_size size;
  char params[128];
  double work; /* the method's work measure for this step */
} sweep_step;

/* Called before each step (done = steps finished so far) and once at the
 * end (step NULL, done = total when all ran). */
typedef void (*sweep_progress_fn)(void *ctx, const sweep_step *step,
                                  size_t done, size_t total, double elapsed);
/* Called for a step skipped for the budget: its predicted seconds (< 0:
 * a step of its method with less work was predicted over already) and
 * the seconds of the budget left. */
typedef void (*sweep_skip_fn)(void *ctx, const sweep_step *step,
                              double predicted, double left);

typedef struct sweep_options {
  const char *methods; /* comma-separated; NULL: every method with one
                          input */
  const char *sizes;   /* "FxRxC,..."; NULL: the method's default sizes */
  const char *params;  /* "name=v1,v2;name2=v" grid; NULL: defaults */
  const char *impls;   /* as qs_method_benchmark; NULL: all */
  int warmup, repeats;
  double budget; /* seconds; <= 0: none */
  sweep_progress_fn progress;
  sweep_skip_fn skipped; /* may be NULL */
  void *ctx;
  /* Each step's benchmark's progress and cancellation (NULL: none): its
   * run_request.progress (qs_method_benchmark counts runs), also called with
   * (0, 0) before each step. A nonzero return stops the sweep as the
   * budget does; the step it cancels is left out of the result. */
  qs_progress_fn run_progress;
  void *run_ctx;
} sweep_options;

/* One implementation measured at one step. */
typedef struct sweep_row {
  sweep_step step;
  qs_bench_entry entry;
} sweep_row;

typedef struct sweep_result {
  sweep_row *rows;
  size_t n, cap;
  size_t steps_done, steps_total;
  size_t steps_skipped; /* predicted past the budget, not begun */
  int stopped; /* 1 when the budget (or run_progress) ended the sweep early or
                  made it skip steps */
  double seconds; /* wall time of the sweep */
  int threads;    /* the engine's pool threads */
} sweep_result;

/* Runs the sweep. QS_EINVAL / QS_ENOMETHOD / QS_EPARAM for a bad option
 * (message in err naming it); a step whose benchmark fails is recorded as
 * rows with that status and the sweep goes on. */
int sweep_run(qs_engine *e, const sweep_options *o, sweep_result *r, char *err,
              size_t err_len);
void sweep_free(sweep_result *r);

/* Parses "FxRxC,FxRxC" (at most max sizes); QS_EINVAL naming the bad one. */
int sweep_sizes(const char *text, sweep_size *out, size_t max, size_t *n,
                char *err, size_t err_len);

/* Writes every row as CSV / JSON, whole or not at all. */
int sweep_csv(const sweep_result *r, const char *path, char *err,
              size_t err_len);
int sweep_json(const sweep_result *r, const char *path, char *err,
               size_t err_len);

#endif
