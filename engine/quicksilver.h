/*
 * quicksilver.h — the interface of quicksilver for host programs.
 *
 * quicksilver runs image-processing methods through an auto-tuning
 * dispatcher: every method has several implementations (serial, threaded,
 * OpenCL per device, ...); the engine times them on the caller's real
 * inputs, keeps every timing in SQLite and picks the fastest for each input.
 *
 * This header is what a program that runs methods needs (images, the
 * engine, parameters, method listing, runs and plans, the timing store).
 * quicksilver_method.h adds what a method author needs (the implementation
 * table, the call context, qs_method_register) and includes this header; a
 * method's own API has a header of its own (quicksilver_esrrf.h).
 *
 * Conventions
 *  - A call that can fail returns an int status (QS_OK == 0, else a code of
 *    QS_STATUS_TABLE) and leaves a message naming the field or file at
 *    fault in qs_engine_error(e). The library never prints or exits.
 *  - Images are float32, (frames, rows, cols), row-major, frames outermost.
 *  - Ownership is stated per function. Nothing here is a process global.
 *  - Names: one prefix, qs_ (QS_ for macros and enumerators), on every
 *    public type and function, as sqlite3_ and uv_ have theirs, so a host
 *    program's own `image` or `engine` never collides. Names inside the
 *    library carry no prefix and are not exported (tests/exports.py checks
 *    both).
 *
 * Compiles as C11 and as C++ (checked by tests/header_cxx.cpp).
 */
#ifndef QUICKSILVER_H
#define QUICKSILVER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define QS_API __attribute__((visibility("default")))
#else
#define QS_API
#endif

#define QS_VERSION_MAJOR 0
#define QS_VERSION_MINOR 1
#define QS_VERSION_PATCH 0
#define QS_VERSION "0.1.0"

/* ---------------------------------------------------------------- status */

/* One table gives the enum, the names and the messages. */
#define QS_STATUS_TABLE(X)                                                   \
  X(QS_OK, "ok", "success")                                                  \
  X(QS_EINVAL, "invalid", "invalid argument")                                \
  X(QS_ENOMEM, "no_memory", "out of memory")                                 \
  X(QS_EOVERFLOW, "overflow", "size exceeds what can be represented")        \
  X(QS_ESHAPE, "shape", "image shape does not fit the method")               \
  X(QS_ENOMETHOD, "no_method", "unknown method")                             \
  X(QS_EPARAM, "param", "unknown or invalid parameter")                      \
  X(QS_ENOIMPL, "no_impl", "unknown implementation")                         \
  X(QS_EUNAVAIL, "unavailable", "implementation not available here")        \
  X(QS_EFAIL, "failed", "implementation failed")                             \
  X(QS_EMISMATCH, "mismatch", "output disagrees with the serial reference")  \
  X(QS_EENV, "environment", "invalid environment variable")                  \
  X(QS_EDB, "store", "timing store error")                                   \
  X(QS_ECORRUPT, "corrupt", "timing store file is corrupt")                  \
  X(QS_EBUSY, "busy", "timing store is busy")                                \
  X(QS_ESCHEMA, "schema", "data from a different schema version")            \
  X(QS_ECL, "opencl", "OpenCL error")                                        \
  X(QS_EBUILD, "build", "OpenCL program build failed")                       \
  X(QS_EDEVMEM, "device_memory", "not enough device memory")                 \
  X(QS_EIO, "io", "input/output error")                                      \
  X(QS_EFORMAT, "format", "malformed or unsupported file")                   \
  X(QS_EEXISTS, "exists", "already exists")                                  \
  X(QS_ECANCELLED, "cancelled", "cancelled by the caller")

typedef enum qs_status {
#define QS_STATUS_ENUM_(code, name, msg) code,
  QS_STATUS_TABLE(QS_STATUS_ENUM_)
#undef QS_STATUS_ENUM_
  QS_STATUS_COUNT
} qs_status;

/* Short stable name ("shape"), one-line message; static; "unknown" else. */
QS_API const char *qs_status_name(int status);
QS_API const char *qs_status_message(int status);

/* ---------------------------------------------------------------- images */

/* A float32 (frames, rows, cols) row-major image. `owner_` is private: set
 * when the memory is the image's (qs_image_alloc, outputs; qs_image_free it);
 * with data NULL, a device image (quicksilver_image.h). */
typedef struct qs_image {
  float *data;
  size_t frames, rows, cols;
  void *owner_;
} qs_image;

/* Largest image accepted anywhere: 2^36 pixels (256 GiB of float32). */
#define QS_MAX_PIXELS ((size_t)1 << 36)

/* Wraps caller memory, which stays the caller's (qs_image_free leaves it). */
QS_API qs_image qs_image_wrap(float *data, size_t frames, size_t rows,
                              size_t cols);
/* A zeroed, 64-byte aligned image; on failure *img emptied and QS_EOVERFLOW
 * (past QS_MAX_PIXELS), QS_EINVAL (a zero dimension) or QS_ENOMEM. */
QS_API int qs_image_alloc(qs_image *img, size_t frames, size_t rows,
                          size_t cols);

/* Releases owned memory (no-op for wrapped images) and empties *img. */
QS_API void qs_image_free(qs_image *img);
/* *n = frames * rows * cols; QS_EOVERFLOW past QS_MAX_PIXELS (0: QS_OK). */
QS_API int qs_image_pixels(size_t frames, size_t rows, size_t cols, size_t *n);

/* ---------------------------------------------------------------- engine */

typedef struct qs_engine qs_engine;

#define QS_NAME_MAX 64
#define QS_MAX_ESTIMATES 32

/* Zero-initialised options mean "defaults" for every field. */
typedef struct qs_engine_options {
  const char *db_path;   /* NULL: $QUICKSILVER_DB, else qs_engine_cache_path
                            "timings.db"; ":memory:": kept in memory */
  int threads;           /* 0: $QUICKSILVER_THREADS, else qs_engine_cores();
                            clamped to [1, QS_MAX_THREADS] */
  int no_opencl;         /* nonzero (or $QUICKSILVER_NO_OPENCL=1): none */
  const char *cache_dir; /* NULL: $QUICKSILVER_CACHE_DIR, else
                            qs_engine_cache_path's folder */
  int no_calibration;    /* nonzero: cold implementations are ordered by a
                            static rule instead of calibrated */
  uint64_t seed;         /* 0: seeded from the clock; else fixed */
  /* Clock of every timing; NULL: CLOCK_MONOTONIC. Tests inject one. */
  int64_t (*clock_ns)(void *ctx);
  void *clock_ctx;
  /* Calibration of cold implementations (qs_method_run): per call this share
   * of the predicted call (0: 0.10; above 1 it may cost more than the
   * call), at least 0.5 ms, at most calibration_budget seconds if > 0. */
  double calibration_share;
  double calibration_budget;
  /* MiB of released OpenCL buffers kept per device for reuse by size (0:
   * $QUICKSILVER_DEVICE_CACHE_MB, else a quarter of its memory; < 0: none). */
  long device_cache_mb;
} qs_engine_options;

#define QS_MAX_THREADS 256
/* Opens an engine. On failure *e is NULL unless an engine could say why
 * (qs_engine_error; close it). A damaged store gives QS_ECORRUPT and a
 * handle that runs methods without recording them, the file untouched. One
 * thread at a time uses an engine; open one per thread (they may share the
 * store file). Runs are written in batches (at most 64 runs or 250 ms
 * late, and at close). */
QS_API int qs_engine_open(qs_engine **e, const qs_engine_options *options);
QS_API void qs_engine_close(qs_engine *e);

/* Last error message ("" if none), valid until the engine's next call. */
QS_API const char *qs_engine_error(const qs_engine *e);

/* Threads of the engine's pool (caller included); the store's path. */
QS_API int qs_engine_threads(const qs_engine *e);
QS_API const char *qs_engine_db_path(const qs_engine *e);

/* The host's online cores in [1, QS_MAX_THREADS] (threads 0's default). */
QS_API int qs_engine_cores(void);
/* $XDG_CACHE_HOME/quicksilver/leaf, else $HOME/.cache/quicksilver/leaf
 * (leaf NULL: the folder) into buf: the engine's cache. QS_EUNAVAIL: no
 * such variable; QS_EOVERFLOW: len short (buf ""); QS_EINVAL: buf NULL. */
QS_API int qs_engine_cache_path(const char *leaf, char *buf, size_t len);

/* The engine's devices: the host CPU (the pool), then each OpenCL device
 * in the order of their implementations. */
typedef struct qs_device_info {
  char name[QS_NAME_MAX];   /* "cpu", or the slug ending its implementations'
                               names ("opencl:<name>") */
  char fingerprint[QS_NAME_MAX]; /* as recorded in the store's rows */
  char model[128];          /* CPU model or OpenCL device name */
  char platform[128], vendor[128], driver[64], version[128]; /* OpenCL */
  int opencl;               /* 1 for an OpenCL device, 0 for the host CPU */
  int gpu;                  /* an OpenCL GPU or accelerator */
  int shares_host_cores;    /* the CPU, or an OpenCL CPU device (its work
                               competes with the pool's threads) */
  int cores;                /* host CPU: online cores */
  int threads;              /* host CPU: the engine's pool threads */
  unsigned compute_units, clock_mhz;
  uint64_t global_mem, max_alloc, local_mem;
  size_t max_work_group;
  int fp64;
} qs_device_info;

/* Fills up to max entries; *n receives the total. */
QS_API int qs_engine_devices(qs_engine *e, qs_device_info *out, size_t max,
                             size_t *n);
/* Why the engine has no OpenCL device ("" when it has some). */
QS_API const char *qs_engine_opencl_why(const qs_engine *e);

/* The nearest of n names (at(ctx, i)) to `name` by edit distance, within a
 * third of its length (at least 2), or NULL: "did you mean" for any list. */
QS_API const char *
qs_name_nearest(const char *name, const char *(*at)(const void *ctx, size_t i),
                const void *ctx, size_t n);

/* The registered method nearest to `name` (qs_name_nearest), or NULL. */
QS_API const char *qs_method_nearest_name(const qs_engine *e,
                                          const char *name);

/* ------------------------------------------------- recording of timings */

/* Whether the timings reach the store: QS_OK while every one so far was
 * written (or queued for a store that took writes); else the first
 * failure's status and, in msg (may be NULL), the store and why: not
 * opened (damaged, not ours, newer schema), read-only, found damaged
 * (then never written again by this engine), its lock held past the wait
 * (QUICKSILVER_DB_WAIT_MS, default 10 s), disk full, any failed write.
 * After the first failure the engine writes no more (a process waits at
 * most once for a lock); runs go on, choosing from the history read. The
 * first run recorded is written at once (its record_status is exact);
 * later ones in batches, whose failure shows in the next report. */
QS_API int qs_engine_record_status(const qs_engine *e, char *msg, size_t len);

/* ------------------------------------------------------------ parameters */

/* A caller's parameter value: `text` when non-NULL, parsed by the
 * parameter's type ("true", "avg", "1.5"), else `value` (enum: index). */
typedef struct qs_param {
  const char *name;
  double value;
  const char *text;
} qs_param;

typedef enum qs_param_type {
  QS_PARAM_INT,
  QS_PARAM_FLOAT,
  QS_PARAM_BOOL,
  QS_PARAM_ENUM,
} qs_param_type;

/* Flags of param_def: the minimum, the maximum itself excluded. */
#define QS_PARAM_MIN_OPEN 1u
#define QS_PARAM_MAX_OPEN 2u

/* One declared parameter of a method. */
typedef struct qs_param_def {
  const char *name;    /* lower_snake_case */
  qs_param_type type;
  double def;          /* default (enum: index into choices) */
  double min, max;     /* range for int and float */
  unsigned flags;      /* QS_PARAM_MIN_OPEN, QS_PARAM_MAX_OPEN */
  const char *choices; /* QS_PARAM_ENUM: "avg|var|tac2|none" */
  const char *doc;     /* one line */
} qs_param_def;

/* Parses `text` as a value of *d: int (decimal), float, bool (true/false/
 * 1/0/yes/no/on/off), enum (a choice's name: its index); then checks it as
 * qs_params_check. QS_EPARAM with a message naming the parameter. */
QS_API int qs_params_parse(const qs_param_def *d, const char *text,
                           double *value, char *err, size_t err_len);

/* Checks a value of *d: finite; integral for int/bool/enum; an index of
 * choices (enum), 0/1 (bool); in [min, max] for int and float when min <
 * max (the flags exclude a bound; min == max: unbounded). QS_EPARAM with a
 * message naming the parameter. */
QS_API int qs_params_check(const qs_param_def *d, double value, char *err,
                           size_t err_len);

/* Resolves given parameters against n definitions: values[i] starts at
 * defs[i].def, and each given one (by name) overrides it once. An unknown
 * name (the nearest suggested), a name given twice or a bad value gives
 * QS_EPARAM naming it; values is then unspecified. */
QS_API int qs_params_resolve(const qs_param_def *defs, size_t n,
                             const qs_param *given, size_t n_given,
                             double *values, char *err, size_t err_len);

/* Canonical text of a value ("3", "1.5", "true", "avg") into buf (always
 * NUL-terminated; floats the shortest that reads back the same, whole ones
 * as integers); returns the length snprintf would have written. */
QS_API int qs_params_format(const qs_param_def *d, double value, char *buf,
                            size_t len);

/* --------------------------------------------------------------- methods */

/* One table gives the kinds and their names. */
#define QS_IMPL_KIND_TABLE(X)                                                 \
  X(QS_IMPL_SERIAL, "serial")                                                 \
  X(QS_IMPL_THREADED, "threaded")                                             \
  X(QS_IMPL_OPENCL, "opencl")                                                 \
  X(QS_IMPL_COMPOSITE, "composite")

typedef enum qs_impl_kind {
#define QS_IMPL_KIND_ENUM_(code, name) code,
  QS_IMPL_KIND_TABLE(QS_IMPL_KIND_ENUM_)
#undef QS_IMPL_KIND_ENUM_
      QS_IMPL_KIND_COUNT,
} qs_impl_kind;

/* The kind's name (static); "unknown" outside the table. */
QS_API const char *qs_impl_kind_name(qs_impl_kind k);
/* An input or output of a method: its name and one line of doc. */
typedef struct qs_slot_def {
  const char *name;
  const char *doc;
} qs_slot_def;

/* An implementation table entry (quicksilver_method.h, for method
 * authors; a host lists implementations with qs_method_impls). */
struct qs_impl_def;

/* Limits of a descriptor, checked by qs_method_register (QS_EINVAL naming the
 * method and limit): parameters, slots, and implementations as run (an
 * OpenCL one counts once per device). A host may size arrays by them. */
#define QS_MAX_PARAMS 64
#define QS_MAX_INPUTS 16
#define QS_MAX_OUTPUTS 16
#define QS_MAX_IMPLS QS_MAX_ESTIMATES

/* A method: one descriptor, from which validation, CLI flags, help, JSON,
 * the store key and the benchmark grid all derive. Hosts read those of the
 * registered methods (qs_method_at, qs_method_find); a method author fills one
 * and registers it (quicksilver_method.h). */
typedef struct qs_method_desc {
  const char *name;
  const char *doc;
  const qs_slot_def *inputs;
  size_t n_inputs;
  const qs_slot_def *outputs;
  size_t n_outputs;
  const qs_param_def *params;
  size_t n_params;
  const struct qs_impl_def *impls; /* quicksilver_method.h */
  size_t n_impls;
  /* Checks the input shapes against the parameters and sets every
   * output's frames/rows/cols (data untouched); on a mismatch QS_ESHAPE
   * (or QS_EOVERFLOW / QS_EPARAM) with a message naming the input and both
   * shapes. The input count and non-emptiness are checked already. Input
   * data is NULL when only shapes are known (qs_method_estimate, plans) or
   * on a device, else the pixels, which the rule may check (NaN, say).
   * NULL: every output takes the first input's shape. */
  int (*shape)(const qs_image *in, const double *p, qs_image *out, char *err,
               size_t err_len);
  /* Scalar work size for nearness between keys; NULL: output pixels. */
  double (*work)(const qs_image *in, const double *p);
  /* Accepted max |impl - serial| / max |serial| in qs_method_benchmark. */
  double tolerance;
  /* Calibration slice (NULL: the first frame of every input, cropped
   * top-left to the same fraction of each). Fills out[0..n_inputs) with a
   * small version of the inputs, the first about rows x cols (qs_image_alloc,
   * or wrapping memory of in; the engine calls qs_image_free). A nonzero
   * status skips calibration for the call. */
  int (*slice)(const qs_image *in, const double *p, size_t rows, size_t cols,
               qs_image *out);
  /* Nonzero: inputs hold no NaN or infinity. The engine scans device
   * inputs, whose pixels the shape rule never sees, and refuses them. */
  int finite_inputs;
} qs_method_desc;

/* The registered methods, built-in first; valid for the engine's life. */
QS_API size_t qs_method_count(const qs_engine *e);
QS_API const qs_method_desc *qs_method_at(const qs_engine *e, size_t i);
QS_API const qs_method_desc *qs_method_find(const qs_engine *e,
                                            const char *name);

/* A method's implementations as run here (OpenCL ones per device). */
typedef struct qs_impl_info {
  char name[QS_NAME_MAX];
  qs_impl_kind kind;
  int version;     /* as in the store (built-in methods: the declared one
                      mixed with a hash of the code and library version) */
  int available;
  char why[256];   /* why not available, else "" */
  char device[QS_NAME_MAX]; /* fingerprint; CPU: "cpu-<16 hex>" (model,
                               cores, pool threads) */
} qs_impl_info;

/* Fills up to max entries; *n the total. */
QS_API int qs_method_impls(qs_engine *e, const char *method, qs_impl_info *out,
                           size_t max, size_t *n);

/* ------------------------------------------------------------------ runs */

/* A run's progress: `done` units of work of `total` (frames mostly; total
 * 0 while unknown), about every QS_PROGRESS_INTERVAL_MS of work, from one of
 * the engine's threads at a time, `done` never going back within the call
 * (a fallback included), and once more with done == total on success. A
 * nonzero return cancels: the implementation stops at its next check (a
 * tile, a frame, a device batch), the call returns QS_ECANCELLED with its
 * outputs freed, and nothing of it is recorded as a timing. */
typedef int (*qs_progress_fn)(void *ctx, uint64_t done, uint64_t total);
#define QS_PROGRESS_INTERVAL_MS 50

typedef struct qs_run_request {
  const qs_image *inputs;
  size_t n_inputs;
  const qs_param *params;
  size_t n_params;
  /* NULL: the agent chooses. An implementation's name ("opencl:<slug>"):
   * forced, an error if unavailable or failing. Kinds ("serial",
   * "threaded", "opencl", "cpu", "composite", comma-separated): the agent
   * chooses among them, with fallback. A word naming both an
   * implementation and a kind ("threaded") means the implementation. */
  const char *impl;
  /* Progress and cancellation (NULL: none); see progress_fn. */
  qs_progress_fn progress;
  void *progress_ctx;
  /* Nonzero: outputs[] are the caller's host images of the output shapes,
   * none overlapping an input, written in place (zeroed first) and never
   * freed; on failure their contents are undefined. A plan keeps it. */
  int outputs_given;
} qs_run_request;

/* An estimate's evidence, strongest first: "history" (runs of the key),
 * "model" (a + b * work fitted over two or more other keys of the
 * implementation on this device), "scaled" (one other key, in proportion
 * to the work), "none" (no timing on this device). */
typedef struct qs_run_estimate {
  char impl[QS_NAME_MAX];
  double seconds;       /* predicted steady-state seconds; < 0: unknown */
  char source[16];      /* the evidence, or why not a candidate:
                           "unavailable", "failed", "mismatch",
                           "device_memory" */
  int runs;             /* runs of the key (history), else keys fitted */
  double optimistic;    /* its optimistic bound: the least seconds it
                           could take; < 0: not a candidate */
  char state[16];       /* the rule's verdict (README: how the engine
                           chooses): "best", "next" (tried on this call),
                           "promising", "costly", "hopeless", "second" (a
                           second slice size first), "cold", "waiting",
                           "outclassed", "stopped", "retry",
                           "unmeasured"; "forced"; or why not one */
  double transfer_seconds; /* moving device images for it (added) */
} qs_run_estimate;

typedef struct qs_run_report {
  char impl[QS_NAME_MAX]; /* the implementation that produced the output */
  char reason[16];        /* the choice's evidence: "forced", "history",
                             "model", "scaled", "calibration" (this call's),
                             "verification" (a model whose bound beats the
                             measured best, run on the key), "exploration"
                             (a timed one whose bound beats the best, a
                             cold one on a small call, or a delayed
                             favourite's rival), "fallback", "static" */
  double seconds;         /* wall seconds of the run that produced it */
  double device_seconds;  /* OpenCL: device time; else 0 */
  double once_seconds;    /* one-time costs inside that run */
  double calibration_seconds; /* spent calibrating before the run */
  int fallbacks;          /* implementations that failed before it */
  size_t n_estimates;
  qs_run_estimate estimates[QS_MAX_ESTIMATES];
  double calibration_once_seconds; /* one-time costs in calibration_seconds */
  int record_status; /* qs_engine_record_status at the call's return */
  uint64_t bytes_up, bytes_down; /* moved host→device, device→host */
  uint64_t bytes_pulled, bytes_pushed; /* device images moved by the engine */
  double load_seconds; /* OpenCL loaded for a listed device (README) */
} qs_run_report;

/* Runs `method` on the request. outputs[0..n_outputs) receive images the
 * engine allocates (qs_image_free), empty on failure, unless outputs_given.
 * `report` may be NULL.
 * Choice: the key's history (mean of the fastest half of the newest 50
 * runs); else time = a + b * work fitted over the implementation's other
 * keys; implementations without a timing on this device are first
 * calibrated on slices of the input (under the slice's key:
 * qs_db_key_is_slice) within the calibration budget (the rest by later
 * calls), unless no_calibration: a static order by kind and size. One
 * whose optimistic bound could beat the key's best is tried on the call
 * (README: how the engine chooses). One that fails is recorded, skipped
 * for the key for the method's next 20 runs, and the next best runs. */
QS_API int qs_method_run(qs_engine *e, const char *method,
                         const qs_run_request *rq, qs_image *outputs,
                         size_t n_outputs, qs_run_report *report);

/* ----------------------------------------------------------------- plans */

/* A plan, as FFTW's: qs_method_open fixes a method, its parameters and its
 * input shapes, validates them, lets the agent choose and opens the
 * chosen implementation's state (tables, device programs and buffers:
 * impl_def.open); qs_plan_run then only works. Each qs_plan_run is chosen, timed
 * and recorded as a qs_method_run call (history, model, calibration,
 * fallback, the store, rq->progress); an implementation chosen later has
 * its state opened at its first run. qs_method_run is a plan opened, run once
 * and closed (without states). rq->inputs give the shapes (data may be
 * NULL); the plan copies what it needs of rq. One thread at a time uses a
 * plan; its engine must outlive it. Errors as qs_method_run's. */
typedef struct qs_plan qs_plan;
QS_API int qs_method_open(qs_engine *e, const char *method,
                          const qs_run_request *rq, qs_plan **out);

/* Runs the plan on inputs of its shapes (rows and columns as planned,
 * frames at most as planned: a shorter last batch), outputs as
 * qs_method_run's; a failure's message is in the engine's qs_engine_error. */
QS_API int qs_plan_run(qs_plan *p, const qs_image *inputs, size_t n_inputs,
                       qs_image *outputs, size_t n_outputs,
                       qs_run_report *report);

/* The implementation the last run used ("" before any run). */
QS_API const char *qs_plan_impl(const qs_plan *p);
/* Releases the plan and every state opened or kept in it (NULL: no-op). */
QS_API void qs_plan_close(qs_plan *p);

/* What qs_method_run would do, running nothing and leaving the store alone:
 * report->impl and ->reason ("forced", "history", "model", "static"), and
 * every implementation's estimate. When qs_method_run would first calibrate
 * cold implementations, reason is "calibration" and impl the choice among
 * what is known (the static order if nothing), the cold ones with source
 * "none". The timings stay 0. Inputs need shapes only (data may be NULL). */
QS_API int qs_method_estimate(qs_engine *e, const char *method,
                              const qs_run_request *rq, qs_run_report *report);

/* Benchmark: every available implementation (or those in `impls`, names or
 * kinds), `warmup` untimed then `repeats` timed runs each, all recorded;
 * each output is held to serial's within the method's tolerance (else
 * recorded QS_EMISMATCH). Entries fastest first. rq->progress counts runs
 * (warm-up and timed, of every implementation); a cancel returns
 * QS_ECANCELLED, the implementation under way recording nothing. */
typedef struct qs_bench_entry {
  char impl[QS_NAME_MAX];
  int status;            /* QS_OK, QS_EMISMATCH, or the failure */
  int runs;
  double min, median, fast_mean; /* seconds */
  double once_seconds;   /* one-time costs seen in the warm-up */
  double max_rel_diff;   /* max |out - serial| / max |serial| */
} qs_bench_entry;

typedef struct qs_bench_result {
  size_t n;
  qs_bench_entry entries[QS_MAX_ESTIMATES];
} qs_bench_result;
QS_API int qs_method_benchmark(qs_engine *e, const char *method,
                               const qs_run_request *rq, const char *impls,
                               int warmup, int repeats,
                               qs_bench_result *result);

/* ------------------------------------------------------------ the store */

/* The engine's timing store (`quicksilver db`, the bindings): messages in
 * qs_engine_error(e); pending writes are flushed first; removing or adding
 * rows makes the engine re-read its history at its next run. */

/* Rows matching every non-NULL field; at most `limit` (0: no limit). */
typedef struct qs_db_filter {
  const char *method, *impl, *device, *key;
  size_t limit;
} qs_db_filter;

/* One recorded run (or failure). Strings are valid during the callback. */
typedef struct qs_db_row {
  int64_t id;
  double stamp;        /* unix seconds (UTC) */
  const char *method, *impl;
  int impl_version;
  const char *device;  /* device fingerprint */
  const char *key;     /* canonical key text */
  double work;         /* scalar work size */
  const char *params;  /* parameters as JSON text */
  double wall;         /* steady wall seconds */
  double device_seconds, once_seconds;
  int status;          /* QS_OK or the failure's status */
  const char *error;   /* "" on success */
} qs_db_row;

/* Rows newest first; callbacks return nonzero to stop (that value is
 * returned). */
typedef int (*qs_db_row_fn)(void *ctx, const qs_db_row *r);
QS_API int qs_engine_db_query(qs_engine *e, const qs_db_filter *f,
                              qs_db_row_fn fn, void *ctx);

/* One (method, key, impl, device) group: `count` successes (their walls'
 * min, median, fast-half mean), `failed` failures, the newest's status. */
typedef struct qs_db_stat {
  const char *method, *key, *impl, *device;
  size_t count, failed;
  double min, median, fast_mean;
  int status;
} qs_db_stat;
typedef int (*qs_db_stat_fn)(void *ctx, const qs_db_stat *s);

/* Groups ordered by method, key, impl, device (filter limit ignored). */
QS_API int qs_engine_db_stats(qs_engine *e, const qs_db_filter *f,
                              qs_db_stat_fn fn, void *ctx);

/* For every (method, key) with runs of this engine's implementations on
 * this machine's devices (filtered by method and key), qs_method_run's choice
 * by its rule (history, then model; no calibration, no cold one a small
 * call would try): impl, reason, estimates. impl may be one the rule is
 * still trying (reason "exploration" or "verification", state "next"):
 * the best known is then the estimate whose state is "best". Other
 * machines' keys and older implementation versions do not count. */
typedef int (*qs_db_best_fn)(void *ctx, const char *method, const char *key,
                             const qs_run_report *choice);
QS_API int qs_engine_db_best(qs_engine *e, const qs_db_filter *f,
                             qs_db_best_fn fn, void *ctx);

/* Whether a key is a calibration slice's (qs_method_run): it ends in "#slice"
 * (a caller's in ")"); it feeds the model like any key, and listings hide
 * it unless asked. 0 for NULL. */
QS_API int qs_db_key_is_slice(const char *key);

/* Writes every row and device as one JSON document at path (atomically). */
QS_API int qs_engine_db_export(qs_engine *e, const char *path);
/* Adds the rows of a document qs_engine_db_export wrote, skipping those
 * present; a malformed one changes nothing. Counters may be NULL. */
QS_API int qs_engine_db_import(qs_engine *e, const char *path, size_t *added,
                               size_t *skipped, size_t *rejected);

/* Keeps the newest `keep` runs per (method, impl, device, key) (0: no
 * limit) and drops runs older than `older_than_days` (<= 0: no limit). */
QS_API int qs_engine_db_prune(qs_engine *e, size_t keep,
                              double older_than_days, size_t *removed);

/* Deletes the runs matching every non-NULL field of f (limit ignored). */
QS_API int qs_engine_db_forget(qs_engine *e, const qs_db_filter *f,
                               size_t *removed);

/* SQLite's integrity check. A store qs_engine_open could not open gives the
 * status it gave then (QS_ECORRUPT, QS_ESCHEMA, QS_EFORMAT...). */
QS_API int qs_engine_db_check(qs_engine *e);
/* Moves a store file no engine has open (with its -wal, -shm) aside to
 * "<path>.corrupt-<unix seconds>", overwriting nothing; the new name to
 * moved (may be NULL). QS_EIO with err on failure. */
QS_API int qs_engine_db_move_aside(const char *path, char *moved,
                                   size_t moved_len, char *err, size_t err_len);

/* Deletes a store file no engine has open, with its -wal and -shm (absent:
 * no error): a fresh store for benchmarks. */
QS_API int qs_engine_db_remove(const char *path, char *err, size_t err_len);

/* ------------------------------------------------------------- timing */

/* Monotonic nanoseconds (CLOCK_MONOTONIC). */
QS_API int64_t qs_timer_ns(void);

/* Summary of a sample. The "fast half" is the smallest max(1, n / 2) values
 * (NanoPyx's agent's rule), the "slow half" the rest (the one value when
 * n == 1). Population standard deviations. */
typedef struct qs_stats {
  size_t n;
  double min, max, median, mean;
  double fast_mean, fast_std;
  double slow_mean, slow_std;
} qs_stats;

/* Fills *s from x[0..n) (untouched); QS_EINVAL for n == 0, QS_ENOMEM. */
QS_API int qs_stats_of(const double *x, size_t n, qs_stats *s);

#ifdef __cplusplus
}
#endif
#include "quicksilver_image.h" /* device images, a part of this header */

#endif /* QUICKSILVER_H */
