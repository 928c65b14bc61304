/* internal.h — the engine handle and helpers shared by the dispatcher's
 * files. Not installed; methods never include it. */
#ifndef QS_INTERNAL_H
#define QS_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>

#include "agent.h"
#include "pool.h"
#include "timer.h"
#include "quicksilver.h"

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
  uint64_t seed;
  uint64_t rng;    /* the agent's random state */
  char *db_path;   /* resolved: option, env, default, or ":memory:" */
  char *cache_dir; /* resolved: option, env or default; may be NULL */
  int64_t (*clock_ns)(void *ctx);
  void *clock_ctx;
  pool *pool;
  store *store;    /* NULL when it could not be opened */
  clrt *cl;
  char cpu_fp[24]; /* "cpu-" and 16 hex digits */
  char cpu_name[128];
  mstate *methods;
  size_t n_methods, cap_methods;
  pending *queue;
};

/* FNV-1a of a string continuing from h (start from FNV_SEED): hash tables
 * and fingerprints, not security. */
#define FNV_SEED 1469598103934665603ull
static inline uint64_t fnv1a(uint64_t h, const char *s) {
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* Sets the engine's error message (printf-style) and returns status. */
int engine_fail(engine *e, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Nanoseconds from the engine's clock (injected or monotonic). */
int64_t engine_now(const engine *e);

/* Levenshtein distance of two names (SIZE_MAX past 63 characters) and the
 * nearest of n names (at(ctx, i)) within a third of the name's length (at
 * least 2), or NULL. */
size_t name_distance(const char *a, const char *b);
const char *name_nearest(const char *name,
                         const char *(*at)(const void *, size_t),
                         const void *ctx, size_t n);

/* registry.c: expands and adds a descriptor (built-ins at open, host
 * methods through method_register); releases every method's state. */
int registry_add(engine *e, const method_desc *d);
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

/* Most outputs of a method; longest key text. */
#define QS_MAX_OUTPUTS 16
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
              size_t n_outputs, prep *pr);
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

/* dispatch.c: the call context handed to an implementation (err may be
 * NULL for probes at listing time). */
void call_init(engine *e, const rimpl *r, method_call *c, const image *in,
               size_t n_in, image *out, size_t n_out, const double *p,
               char *err, size_t err_len);

/* history.c: the in-memory cache of the store's history. */
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

/* key.c: canonical key text, work and parameter JSON of a call. */
int key_text(const method_desc *d, const image *in, const double *p,
             char *buf, size_t len);
double key_work(const method_desc *d, const image *in, const double *p,
                const image *out);
char *key_json(const method_desc *d, const double *p); /* cJSON_free it */

#endif
