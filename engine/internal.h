/* internal.h — the engine handle and the calls between engine/'s files.
 * Not installed; methods never include it.
 *
 * The files form layers; each calls only those below it:
 *   fail.c       the last-error message and the clock
 *   recorder.c   write-behind rows for the store
 *   history.c    the in-memory copy of the store's history
 *   call.c       the context handed to an implementation
 *   registry.c   methods and their implementations as this engine runs
 *                them, the listing calls
 *   prep.c, key.c  validation of a call, its key and work
 *   exec.c       one timed execution and its accounting
 *   choice.c     candidates, the agent's choice, estimates
 *   calibrate.c  timings on slices for cold implementations
 *   dispatch.c   method_run, method_estimate (and composite steps,
 *                reached from call.c through e->step, set at open)
 *   benchmark.c, dbapi.c, engine.c  the rest of the public API
 * agent.c (the policy), params.c, image.c, status.c, pool.c, env.c and
 * timer.c depend on none of them. */
#ifndef QS_INTERNAL_H
#define QS_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>

#include "agent.h"
#include "pool.h"
#include "timer.h"
#include "quicksilver_method.h"

#define QS_ERR_MAX 2048

typedef struct store store;
typedef struct clrt clrt;

/* One implementation as this engine runs it: OpenCL ones expanded per
 * device. */
typedef struct rimpl {
  char name[QS_NAME_MAX];
  const impl_def *def;
  void *device;       /* cldev * for IMPL_OPENCL, else NULL */
  const char *devfp;  /* device fingerprint (the engine's CPU one for CPU) */
  int version;        /* recorded and matched in the store (registry.c) */
  char why[128];      /* non-empty: unavailable on this machine */
  double oom_work;    /* ran out of device memory at this work (INFINITY:
                         never); larger work is skipped */
  /* The time-vs-work fit over this implementation's keys, valid while
   * fit_gen == gen; gen changes with every new timing of it. */
  unsigned long gen, fit_gen;
  size_t fit_n;
  double fit_a, fit_b;
} rimpl;

/* What the engine knows about one (method, implementation, device, key):
 * the newest successful wall times and the in-process flags. */
typedef struct hist {
  struct hist *next;    /* hash chain */
  struct hist *sibling; /* all entries of the method, newest key first */
  uint64_t hash;
  size_t impl;          /* index into the method's rimpls */
  char *key;
  double work;
  double walls[AGENT_WINDOW]; /* ring of successful walls */
  size_t n, head;             /* count (<= AGENT_WINDOW), next slot */
  stats win;                  /* of the ring, valid when win_ok */
  int win_ok;
  int mismatch;         /* a QS_EMISMATCH row exists: never chosen */
  int delayed;
  double factor, p;
  int failed;           /* failed in this process ... */
  long failed_at;       /* ... at this run count of the method */
} hist;

/* A registered method with its implementations and its history cache. */
typedef struct mstate {
  const method_desc *desc;
  rimpl *impls;
  size_t n_impls;
  int loaded;  /* the store's history has been read */
  long runs;   /* method_run calls in this process */
  hist **buckets;
  size_t n_buckets, n_hist;
  hist *all;
} mstate;

/* Rows waiting to be written to the store (see engine_record). */
typedef struct pending pending;

struct engine {
  char err[QS_ERR_MAX];
  int threads;
  int no_opencl;
  int no_calibration;
  double calib_budget, calib_share; /* engine_options' */
  uint64_t seed;
  uint64_t rng;    /* the agent's random state */
  char *db_path;   /* resolved: option, env, default, or ":memory:" */
  char *cache_dir; /* resolved: option, env or default; may be NULL */
  int64_t (*clock_ns)(void *ctx);
  void *clock_ctx;
  pool *pool;
  store *store;    /* NULL when it could not be opened ... */
  int store_status; /* ... with this status and message */
  char store_err[512];
  clrt *cl;
  char cpu_fp[24]; /* "cpu-" and 16 hex digits */
  char cpu_name[128];
  mstate *methods;
  size_t n_methods, cap_methods;
  pending *queue;
  int watch_runs;       /* CPU runs still to watch for disturbance */
  long disturbed_runs;  /* runs whose timing was dropped as disturbed */
  int rec_status;     /* engine_record_status; QS_OK: recording works */
  int rec_written;    /* a row has been written (the first goes at once) */
  char rec_msg[1024];
  /* Composite steps: dispatch_step, set at open (see call.c). */
  int (*step)(const method_call *c, const char *method, const char *impl,
              const image *in, size_t n_in, const param *p, size_t n_p,
              image *out, size_t n_out);
};

/* FNV-1a of a string continuing from h (start from FNV_SEED): hash tables
 * and fingerprints, not security. */
#define FNV_SEED 1469598103934665603ull
static inline uint64_t fnv1a(uint64_t h, const char *s) {
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* ---- fail.c */

/* Sets the engine's error message (printf-style) and returns status. */
int engine_fail(engine *e, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Nanoseconds from the engine's clock (injected or monotonic). */
int64_t engine_now(const engine *e);

/* Levenshtein distance of two names (SIZE_MAX past 63 characters); the
 * public name_nearest uses it. */
size_t name_distance(const char *a, const char *b);

/* ---- registry.c: expands and adds a descriptor (built-ins at open, with
 * builtin set: their versions include the code hash; host methods through
 * method_register); releases every method's state. */
int registry_add(engine *e, const method_desc *d, int builtin);
void registry_free(engine *e);
mstate *registry_find(engine *e, const char *name);
/* Status QS_ENOMETHOD with a message suggesting the nearest name. */
int registry_unknown(engine *e, const char *name);
/* Registers the built-in table (engine_open). */
int registry_builtins(engine *e);
/* Availability of one implementation for a call: "" when available, else
 * the reason in why. */
int registry_usable(const rimpl *r, const method_call *c, char *why,
                    size_t why_len);

/* Longest key text. */
#define QS_KEY_MAX 4096

/* A validated call: the method, resolved parameters, output shapes, key
 * and work. Filled by prep_call; prep_done releases it. */
typedef struct prep {
  mstate *m;
  const image *in;
  size_t n_in;
  double p[QS_MAX_PARAMS];
  image shape[QS_MAX_OUTPUTS]; /* dimensions only */
  char key[QS_KEY_MAX];
  double work;
  char *json; /* parameters as JSON, made on first record */
} prep;

/* Steps 1-3 of a call (registry, parameters and shapes, key). On failure
 * the engine's message names the field; nothing is allocated. */
int prep_call(engine *e, const char *method, const run_request *rq,
              size_t n_outputs, int shapes_only, prep *pr);
void prep_done(prep *pr);

/* Marks in mask[] (m->n_impls entries) the implementations named by text:
 * comma-separated implementation names or kinds ("serial", "threaded",
 * "opencl", "composite", "cpu"). *exact is set when text is a single
 * implementation name. QS_ENOIMPL naming the unknown word. */
int impl_select(engine *e, const mstate *m, const char *text,
                unsigned char *mask, int *exact);

/* One execution timed with the engine's clock; `reused` outputs (written by
 * an earlier run) are zeroed first, outside the timing. */
typedef struct run_result {
  int status;
  double wall, device_s, once_s; /* seconds; wall includes once_s */
  int disturbed; /* other threads of the process ran meanwhile: the output
                    stands, the time is not recorded (exec.c) */
  uint64_t bytes_up, bytes_down;  /* OpenCL transfers of the run */
  char err[512];
} run_result;
int run_once(engine *e, const mstate *m, size_t impl, const image *in,
             size_t n_in, image *out, size_t n_out, const double *p,
             int reused, run_result *res);

/* Records a run under (key, work) with `status` (res->status, or
 * QS_EMISMATCH from the benchmark) and updates the history cache: walls and
 * delay flags on success, the failure and out-of-memory skips otherwise. */
void run_account(engine *e, prep *pr, size_t impl, const char *key,
                 double work, const run_result *res, int status);

/* Allocates n zeroed outputs of the given shapes; on failure every one is
 * freed and emptied. */
int outputs_alloc(engine *e, const image *shape, size_t n, image *out);
void outputs_free(image *out, size_t n);

/* ---- choice.c */

/* The storage behind a candidate's pointers. */
typedef struct cand_buf {
  double walls[AGENT_WINDOW];
} cand_buf;

/* The candidates of a call: what the agent knows of every implementation,
 * the caller's selection (rq->impl) and the first usable one. */
typedef struct cands {
  agent_cand c[QS_MAX_ESTIMATES];
  cand_buf buf[QS_MAX_ESTIMATES];
  char why[QS_MAX_ESTIMATES][128];
  int exact;   /* rq->impl names one implementation: forced */
  long usable; /* first candidate not excluded, -1 if none */
} cands;

/* Selection, history and availability of every implementation for the
 * call; QS_EUNAVAIL (message set) when none can run. */
int cands_build(engine *e, prep *pr, const run_request *rq, cands *cs);
/* Refreshes candidate i from the history (after calibration added some). */
void cand_refresh(engine *e, prep *pr, cands *cs, size_t i);
/* Marks in cold[] the candidates calibration would run; returns how many. */
size_t cands_cold(const engine *e, const mstate *m, const cands *cs,
                  unsigned char *cold);
/* The agent's pick (forced: the usable one), its reason and every
 * estimate (est, src). */
long cands_choose(engine *e, const prep *pr, cands *cs, uint64_t *rng,
                  const char **reason, double *est, int *src);
/* The estimates part of a report. */
void report_estimates(run_report *report, const mstate *m, const cands *cs,
                      const double *est, const int *src);

/* The choice method_run makes for a recorded key (work and
 * parameter values p), from history and model, without calibrating or
 * running: report->impl ("" if none), reason and estimates. */
int choose_for_key(engine *e, mstate *m, const char *key, double work,
                   const double *p, run_report *report);

/* ---- calibrate.c: runs the cold candidates (cold[i]) on slices of the
 * call's input within the calibration budget and records their timings;
 * `known` is the best prediction of the full call from the candidates
 * already known (< 0: none). Returns the seconds spent, *once the
 * one-time part of them. */
double calibrate(engine *e, prep *pr, const unsigned char *cold,
                 double known, double *once);
/* How many of the cold candidates calibration would start at all (0: it
 * would return at once, making no slice). */
size_t calibrate_startable(const engine *e, const prep *pr,
                           const unsigned char *cold, double known);
/* choice.c: the best prediction among the usable candidates not marked
 * cold, -1 if none. */
double cands_known(const prep *pr, const cands *cs,
                   const unsigned char *cold);

/* ---- dispatch.c: a composite's step through method_run. */
int dispatch_step(const method_call *c, const char *method, const char *impl,
                  const image *in, size_t n_in, const param *p, size_t n_p,
                  image *out, size_t n_out);

/* ---- call.c: the call context handed to an implementation (err may be
 * NULL for probes at listing time). */
void call_init(engine *e, const rimpl *r, method_call *c, const image *in,
               size_t n_in, image *out, size_t n_out, const double *p,
               char *err, size_t err_len);

/* ---- history.c: the in-memory cache of the store's history. */
hist *hist_get(mstate *m, size_t impl, const char *key, double work,
               int create);
void hist_add(hist *h, double wall);
/* Successful walls oldest first into out[AGENT_WINDOW]; returns count. */
size_t hist_walls(const hist *h, double *out);
/* Statistics of the ring (computed once per change); NULL when empty. */
const stats *hist_stats(hist *h);
/* Reads the method's rows from the store once (idempotent). */
int hist_load(engine *e, mstate *m);
void hist_free(mstate *m);

/* ---- recorder.c */

/* A finished run to record: strings are copied. */
typedef struct run_rec {
  const char *key, *params;
  double work, wall, device_s, once_s;
  int status;
  const char *error;
} run_rec;

/* Queues a row for the store (written in batches, see engine.c) and returns
 * QS_OK; recording never fails a run. */
void engine_record(engine *e, const mstate *m, const rimpl *r,
                   const run_rec *rec);
/* Writes the queued rows now. */
int engine_flush(engine *e);
/* Notes the first failure to record (store.c status and message): the
 * engine then stops writing to its store. */
void engine_record_fail(engine *e, int status, const char *msg);
/* Flushes and releases the queue (engine_close). */
void recorder_close(engine *e);

/* ---- key.c: canonical key text, work and parameter JSON of a call. */
int key_text(const method_desc *d, const image *in, const double *p,
             char *buf, size_t len);
double key_work(const method_desc *d, const image *in, const double *p,
                const image *out);
char *key_json(const method_desc *d, const double *p); /* cJSON_free it */

#endif
