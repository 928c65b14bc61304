/*
 * quicksilver.h — the interface of quicksilver for host programs.
 *
 * quicksilver runs image-processing methods through an auto-tuning
 * dispatcher: every method has several implementations (serial, threaded,
 * OpenCL per device, ...); the engine times them on the caller's real inputs,
 * keeps every timing in SQLite and picks the fastest for each input.
 *
 * Two headers: this one is everything a program that runs methods needs
 * (images, the engine, parameters, method listing, method_run and
 * method_estimate, the timing store, live eSRRF). quicksilver_method.h adds
 * what only a method author needs (the implementation table, the call
 * context an implementation receives, method_register); it includes this
 * header, and this header includes nothing of it.
 *
 * Conventions
 *  - Every call that can fail returns an int status (QS_OK == 0, otherwise a
 *    positive code from QS_STATUS_TABLE) and leaves a message naming the field
 *    or file at fault in engine_error(e). The library never prints or exits.
 *  - Images are float32, (frames, rows, cols), row-major, frames outermost.
 *  - Ownership is stated per function. Nothing here is a process global.
 *  - Names: the short names are the API's names, decided for good: types
 *    read as the domain (image, engine, param, run_request) and functions
 *    carry their family's prefix (engine_, method_, image_, params_,
 *    esrrf_, db_), as the Python binding and the MPI layer mirror them.
 *    Every name is also spelled with a qs_ prefix (QS_ for constants), as
 *    permanently: enumerators here and in quicksilver_method.h, the rest in
 *    the generated quicksilver_prefixed.h (typedef aliases, enumeration
 *    constants, and functions the library exports under qs_ names; no
 *    macro, so it renames nothing of the including program). A host whose
 *    own names collide (its own `image` type, say) includes quicksilver
 *    only in the translation units that call it: types and enumerators
 *    never leave a translation unit. A host function of an API function's
 *    name leaves the shared library working (it binds its own calls inside
 *    itself) and the qs_ spelling still reaches the library's.
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

/* Short stable name ("shape") and one-line message; "unknown" for codes
 * outside the table. The strings are static. */
QS_API const char *status_name(int status);
QS_API const char *status_message(int status);

/* ---------------------------------------------------------------- images */

/* A float32 (frames, rows, cols) row-major image. `owner_` is private:
 * non-NULL when the memory belongs to the image (image_alloc, engine
 * outputs) and must be released with image_free. */
typedef struct image {
  float *data;
  size_t frames, rows, cols;
  void *owner_;
} image;

/* Largest image accepted anywhere: 2^36 pixels (256 GiB of float32). */
#define QS_MAX_PIXELS ((size_t)1 << 36)

/* Wraps caller memory; the caller keeps ownership (image_free leaves it). */
QS_API image image_wrap(float *data, size_t frames, size_t rows, size_t cols);

/* Allocates a zeroed, 64-byte aligned image. On failure *img is emptied and
 * QS_EOVERFLOW (over QS_MAX_PIXELS or size_t overflow), QS_EINVAL (a zero
 * dimension) or QS_ENOMEM is returned. */
QS_API int image_alloc(image *img, size_t frames, size_t rows, size_t cols);

/* Releases owned memory (no-op for wrapped images) and empties *img. */
QS_API void image_free(image *img);

/* *n = frames * rows * cols with overflow checks; QS_EOVERFLOW past
 * QS_MAX_PIXELS. Zero dimensions give 0 and QS_OK. */
QS_API int image_pixels(size_t frames, size_t rows, size_t cols, size_t *n);

/* ---------------------------------------------------------------- engine */

typedef struct engine engine;

#define QS_NAME_MAX 64
#define QS_MAX_ESTIMATES 32

/* Zero-initialised options mean "defaults" for every field. */
typedef struct engine_options {
  const char *db_path;   /* NULL: $QUICKSILVER_DB, else
                            $XDG_CACHE_HOME/quicksilver/timings.db;
                            ":memory:" keeps the store in memory */
  int threads;           /* 0: $QUICKSILVER_THREADS, else online cores;
                            clamped to [1, QS_MAX_THREADS] */
  int no_opencl;         /* nonzero: no OpenCL devices (also
                            $QUICKSILVER_NO_OPENCL=1) */
  const char *cache_dir; /* NULL: $QUICKSILVER_CACHE_DIR, else
                            $XDG_CACHE_HOME/quicksilver */
  int no_calibration;    /* nonzero: cold implementations are ordered by a
                            static rule instead of calibrated */
  uint64_t seed;         /* 0: seeded from the clock; else fixed */
  /* Clock used for every timing; NULL: CLOCK_MONOTONIC. Tests inject one. */
  int64_t (*clock_ns)(void *ctx);
  void *clock_ctx;
  /* Calibration of implementations without timings (see method_run): the
   * budget per call is this share of the predicted call (0: 0.10; above 1
   * calibration may cost more than the call), at least 0.5 ms, capped at
   * calibration_budget seconds when that is > 0. */
  double calibration_share;
  double calibration_budget;
  /* OpenCL buffers a call or stream released, kept per device for the
   * next ones of the same size (a fresh buffer costs its allocation and,
   * on a CPU device, a page fault per page at first touch): at most this
   * many MiB per device; 0: $QUICKSILVER_DEVICE_CACHE_MB, else a quarter
   * of the device's global memory; < 0: none kept. */
  long device_cache_mb;
} engine_options;

#define QS_MAX_THREADS 256

/* Opens an engine. On failure *e is NULL unless the failure could be
 * described in an engine (then *e is a usable handle whose engine_error
 * says why, to be closed with engine_close). A damaged store file gives
 * QS_ECORRUPT and a handle that runs methods without recording them; the
 * file is left untouched.
 * An engine is used by one thread at a time; open one per thread (they may
 * share the store file). Runs are written to the store in batches (at most
 * 64 runs or 250 ms late, and at engine_close). */
QS_API int engine_open(engine **e, const engine_options *options);
QS_API void engine_close(engine *e);

/* Last error message of this engine ("" if none). Valid until the next call
 * on the same engine. */
QS_API const char *engine_error(const engine *e);

/* Threads the engine's pool runs (caller included). */
QS_API int engine_threads(const engine *e);

/* Path of the timing store in use (":memory:" possible). */
QS_API const char *engine_db_path(const engine *e);

/* The host's online cores in [1, QS_MAX_THREADS]: an engine's threads
 * when neither its options nor $QUICKSILVER_THREADS say. */
QS_API int engine_cores(void);

/* The engine's place for `leaf` (NULL: the folder itself) in the user's
 * cache, $XDG_CACHE_HOME/quicksilver/leaf, else $HOME/.cache/quicksilver/
 * leaf (the default store is leaf "timings.db"), into buf. QS_EUNAVAIL
 * when neither variable is set, QS_EOVERFLOW when len is too short (buf
 * is then ""). */
QS_API int engine_cache_path(const char *leaf, char *buf, size_t len);

/* The devices this engine runs on: entry 0 is the host CPU (the pool), then
 * one entry per OpenCL device in the order of their implementations. */
typedef struct device_info {
  char name[QS_NAME_MAX];   /* "cpu", or the OpenCL slug that ends the
                               names of its implementations ("opencl:<name>") */
  char fingerprint[QS_NAME_MAX]; /* as recorded in the store's rows */
  char model[128];          /* CPU model or OpenCL device name */
  char platform[128], vendor[128], driver[64], version[128]; /* OpenCL */
  int opencl;               /* 1 for an OpenCL device, 0 for the host CPU */
  int gpu;                  /* an OpenCL GPU or accelerator */
  int shares_host_cores;    /* runs on the host's cores: the CPU itself, or
                               an OpenCL CPU device (its work competes with
                               the pool's threads) */
  int cores;                /* host CPU: online cores */
  int threads;              /* host CPU: the engine's pool threads */
  unsigned compute_units, clock_mhz;
  uint64_t global_mem, max_alloc, local_mem;
  size_t max_work_group;
  int fp64;
} device_info;

/* Fills up to max entries; *n receives the total. */
QS_API int engine_devices(engine *e, device_info *out, size_t max, size_t *n);

/* Why the engine has no OpenCL device ("" when it has some). */
QS_API const char *engine_opencl_why(const engine *e);

/* The nearest of n names (at(ctx, i)) to `name` by edit distance, within a
 * third of the name's length (at least 2), or NULL: "did you mean" help for
 * any list of names (commands, flags, methods). */
QS_API const char *name_nearest(const char *name,
                                const char *(*at)(const void *ctx, size_t i),
                                const void *ctx, size_t n);

/* The registered method nearest to `name` (name_nearest over the
 * methods), or NULL. */
QS_API const char *method_nearest_name(const engine *e, const char *name);

/* ------------------------------------------------- recording of timings */

/* Whether the engine's timings reach its store: QS_OK while every timing
 * so far was written (or is queued for a store that has taken writes);
 * else the status of the first failure, with a message naming the store
 * and the reason in msg (may be NULL): the store could not be opened
 * (damaged, another program's database, newer schema), it can only be
 * read, it was found damaged (the file is then never written again by
 * this engine), another process held its lock past the wait
 * (QUICKSILVER_DB_WAIT_MS, default 10 s), the disk is full, or any other
 * failed write. After the first failure the engine stops writing to the
 * store, so a process waits at most once for a lock; runs go on and still
 * choose from the history already read. The engine writes the first run it
 * records at once, so that run's run_report.record_status is exact; later
 * runs are written in batches and a failure there shows in the next
 * report and here. */
QS_API int engine_record_status(const engine *e, char *msg, size_t len);

/* ------------------------------------------------------------ parameters */

/* A parameter value given by a caller. `text`, when non-NULL, is parsed
 * according to the parameter's declared type ("true", "avg", "1.5");
 * otherwise `value` is used (enums: the index into the choices). */
typedef struct param {
  const char *name;
  double value;
  const char *text;
} param;

/* Enumerators come with their QS_ spelling too (see Names above). */
typedef enum param_type {
  PARAM_INT,
  QS_PARAM_INT = PARAM_INT,
  PARAM_FLOAT,
  QS_PARAM_FLOAT = PARAM_FLOAT,
  PARAM_BOOL,
  QS_PARAM_BOOL = PARAM_BOOL,
  PARAM_ENUM,
  QS_PARAM_ENUM = PARAM_ENUM
} param_type;

/* Flags of param_def. */
#define PARAM_MIN_OPEN 1u /* the minimum itself is excluded */
#define PARAM_MAX_OPEN 2u /* the maximum itself is excluded */

/* One declared parameter of a method. */
typedef struct param_def {
  const char *name;    /* lower_snake_case */
  param_type type;
  double def;          /* default (enum: index into choices) */
  double min, max;     /* range for int and float */
  unsigned flags;      /* PARAM_MIN_OPEN, PARAM_MAX_OPEN */
  const char *choices; /* PARAM_ENUM: "avg|var|tac2|none" */
  const char *doc;     /* one line */
} param_def;

/* Parses `text` as a value of parameter *d: int (decimal), float, bool
 * (true/false/1/0/yes/no/on/off), enum (a name from choices, giving its
 * index); then checks the range as params_check. QS_EPARAM with a message
 * naming the parameter on failure. */
QS_API int params_parse(const param_def *d, const char *text, double *value,
                        char *err, size_t err_len);

/* Checks a value of *d: finite, integral for int/bool/enum, an index into
 * choices for enum, 0/1 for bool, inside [min, max] for int and float when
 * min < max (PARAM_MIN_OPEN / PARAM_MAX_OPEN exclude the bounds; min == max
 * means unbounded). QS_EPARAM with a message naming the parameter. */
QS_API int params_check(const param_def *d, double value, char *err,
                        size_t err_len);

/* Resolves a caller's parameters against a table of n definitions:
 * values[i] starts at defs[i].def, each given parameter (by name, `text`
 * parsed, else `value`) overrides it once. An unknown name (with the nearest
 * valid name suggested), a name given twice or a bad value gives QS_EPARAM
 * naming it; values is then unspecified. */
QS_API int params_resolve(const param_def *defs, size_t n, const param *given,
                          size_t n_given, double *values, char *err,
                          size_t err_len);

/* Canonical text of a value ("3", "1.5", "true", "avg") into buf (always
 * NUL-terminated); returns the length snprintf would have written. Floats
 * in the shortest form that reads back as the same double ("0.1"), whole
 * numbers as integers. */
QS_API int params_format(const param_def *d, double value, char *buf,
                         size_t len);

/* --------------------------------------------------------------- methods */

/* One table gives the kinds and their names. */
#define QS_IMPL_KIND_TABLE(X)                                                \
  X(IMPL_SERIAL, "serial")                                                   \
  X(IMPL_THREADED, "threaded")                                               \
  X(IMPL_OPENCL, "opencl")                                                   \
  X(IMPL_COMPOSITE, "composite")

typedef enum impl_kind {
#define QS_IMPL_KIND_ENUM_(code, name) code, QS_##code = code,
  QS_IMPL_KIND_TABLE(QS_IMPL_KIND_ENUM_)
#undef QS_IMPL_KIND_ENUM_
  IMPL_KIND_COUNT,
  QS_IMPL_KIND_COUNT = IMPL_KIND_COUNT
} impl_kind;

/* "serial", "threaded", "opencl", "composite"; "unknown" outside the
 * table. The string is static. */
QS_API const char *impl_kind_name(impl_kind k);

/* An input or output of a method: its name and one line of doc. */
typedef struct slot_def {
  const char *name;
  const char *doc;
} slot_def;

/* A method's implementation table entry: defined in quicksilver_method.h,
 * for method authors; a host program only lists implementations
 * (method_impls). */
struct impl_def;

/* Limits of a method descriptor, checked by method_register (QS_EINVAL
 * naming the method and the limit): parameters, input and output slots,
 * and implementations as the engine runs them (an OpenCL implementation
 * counts once per device). Every registered method is within them, so a
 * host may size its arrays by them. */
#define QS_MAX_PARAMS 64
#define QS_MAX_INPUTS 16
#define QS_MAX_OUTPUTS 16
#define QS_MAX_IMPLS QS_MAX_ESTIMATES

/* A method: one descriptor, from which validation, CLI flags, help, JSON,
 * the store key and the benchmark grid all derive. Host programs read the
 * descriptors of the registered methods (method_at, method_find) for names,
 * slots, parameters and the shape and work rules; a method author fills
 * one and registers it with quicksilver_method.h. */
typedef struct method_desc {
  const char *name;
  const char *doc;
  const slot_def *inputs;
  size_t n_inputs;
  const slot_def *outputs;
  size_t n_outputs;
  const param_def *params;
  size_t n_params;
  const struct impl_def *impls; /* quicksilver_method.h */
  size_t n_impls;
  /* Checks the input shapes against the parameter values and sets the
   * frames/rows/cols of every output (data untouched). On a mismatch it
   * returns QS_ESHAPE (or QS_EOVERFLOW / QS_EPARAM) with a message naming
   * the input and both shapes. The engine has already checked the input
   * count and that no input is empty. An input's data is NULL when only
   * shapes are known (method_estimate, plans), else its real pixels, which
   * the rule may check (eSRRF refuses NaN there). NULL: every output takes
   * the shape of the first input. */
  int (*shape)(const image *in, const double *p, image *out, char *err,
               size_t err_len);
  /* Scalar work size for nearness between keys; NULL: output pixels. */
  double (*work)(const image *in, const double *p);
  /* Accepted max |impl - serial| / max |serial| in method_benchmark. */
  double tolerance;
  /* Calibration slice (NULL: the generic one). Fills out[0..n_inputs) with
   * a small version of the inputs, consistent across inputs, whose first
   * input is about rows x cols: images allocated with image_alloc (or
   * wrapping memory of in), which the engine releases with image_free. The
   * generic slice takes the first frame of every input, cropped top-left to
   * the same fraction of each input's size. Returns a status; a nonzero one
   * skips calibration for the call. */
  int (*slice)(const image *in, const double *p, size_t rows, size_t cols,
               image *out);
} method_desc;

/* Listing: the registered methods (built-in first, then registered ones).
 * Pointers stay valid for the life of the engine. */
QS_API size_t method_count(const engine *e);
QS_API const method_desc *method_at(const engine *e, size_t i);
QS_API const method_desc *method_find(const engine *e, const char *name);

/* The implementations of a method as this engine runs them (OpenCL ones
 * expanded per device) with their availability. */
typedef struct impl_info {
  char name[QS_NAME_MAX];
  impl_kind kind;
  int version;     /* as recorded in the store: for built-in methods the
                      declared version mixed with the build-time hash of
                      the method's code and the library version */
  int available;
  char why[256];   /* why not available, else "" */
  char device[QS_NAME_MAX]; /* device fingerprint: "cpu-<16 hex>" (CPU
                               model, cores, pool threads) for CPU ones */
} impl_info;

/* Fills up to max entries; *n receives the total. */
QS_API int method_impls(engine *e, const char *method, impl_info *out,
                        size_t max, size_t *n);

/* ------------------------------------------------------------------ runs */

/* A run's progress: `done` units of work out of `total` (frames for most
 * implementations; total 0 while not yet known). The engine calls it
 * about every PROGRESS_INTERVAL_MS of work (never per pixel), from one of
 * its threads (never two at once), with `done` never decreasing within the
 * call (a fallback to another implementation does not move it back), and
 * once more with done == total when the call succeeds. A nonzero return
 * cancels the call: the running implementation stops at its next check
 * (a tile, a frame, a device batch), the call returns QS_ECANCELLED, its
 * outputs are freed, and nothing of it is recorded as a timing. */
typedef int (*progress_fn)(void *ctx, uint64_t done, uint64_t total);
#define PROGRESS_INTERVAL_MS 50

typedef struct run_request {
  const image *inputs;
  size_t n_inputs;
  const param *params;
  size_t n_params;
  /* NULL: the agent chooses. Otherwise an implementation name
   * ("threaded_dynamic", "opencl:<slug>"): forced, an error if it is not
   * available or fails; or a kind ("serial", "threaded", "opencl", "cpu",
   * "composite", several comma-separated): the agent chooses among those,
   * with fallback. A word that names an implementation and a kind
   * ("threaded") means the implementation. */
  const char *impl;
  /* Progress and cancellation (NULL: none); see progress_fn. */
  progress_fn progress;
  void *progress_ctx;
} run_request;

/* The evidence behind an estimate, strongest first: "history" (runs of
 * this exact key), "model" (a fit a + b * work over two or more other keys
 * of the implementation on this device), "scaled" (one other key, scaled
 * in proportion to the work), "none" (no timing on this device). */
typedef struct run_estimate {
  char impl[QS_NAME_MAX];
  double seconds;       /* predicted steady-state seconds; < 0: unknown */
  char source[16];      /* "history", "model", "scaled", "none"; or why it
                           was not a candidate: "unavailable", "failed",
                           "mismatch", "device_memory" */
  int runs;             /* timings behind the estimate: runs of the key
                           (history), else keys fitted */
  double optimistic;    /* the least seconds it could still take (its
                           optimistic bound); < 0: not a candidate */
  char state[16];       /* how the selection rule treats it: "best",
                           "next" (tried on this call), "promising",
                           "costly", "hopeless", "second" (timed at one
                           slice size: a second size first), "cold",
                           "unmeasured" (see README, how the engine
                           chooses); "forced"; or why it was
                           not a candidate */
} run_estimate;

typedef struct run_report {
  char impl[QS_NAME_MAX]; /* the implementation that produced the output */
  char reason[16];        /* the evidence the choice used: "forced",
                             "history", "model", "scaled", "calibration"
                             (a model from this call's calibration),
                             "verification" (known only by its model,
                             whose optimistic bound beats the measured
                             best: run on the key), "exploration" (one
                             timed on the key whose bound beats the best,
                             a cold one tried on a small call, or a
                             delayed favourite's rival), "fallback" (after
                             failures), "static" (kind and size only) */
  double seconds;         /* wall seconds of the run that produced it */
  double device_seconds;  /* OpenCL: device time; else 0 */
  double once_seconds;    /* one-time costs inside that run */
  double calibration_seconds; /* spent calibrating before the run */
  int fallbacks;          /* implementations that failed before it */
  size_t n_estimates;
  run_estimate estimates[QS_MAX_ESTIMATES];
  double calibration_once_seconds; /* one-time costs (program builds, first
                                      launches) inside calibration_seconds */
  int record_status; /* engine_record_status when the call returned: QS_OK
                        or why timings are not being recorded */
  uint64_t bytes_up, bytes_down; /* OpenCL: bytes the run moved host→device
                                    and device→host (cl/clrt.h's transfer
                                    accounting); else 0 */
} run_report;

/* Runs `method` on the request. outputs[0..n_outputs) receive images
 * allocated by the engine (free with image_free); on failure they are
 * empty. `report` may be NULL.
 * Choice: the exact key's history (mean of the fastest half of the newest
 * 50 runs); else a fit time = a + b * work over the implementation's other
 * keys; implementations with no timing on this device are first calibrated
 * on slices of the input (recorded under the slice's own key, marked as
 * db_key_is_slice tells) within the calibration budget (engine_options;
 * those the budget leaves out are passed over and calibrated by later
 * calls), unless no_calibration: a static order by kind and size. One
 * whose optimistic bound could beat the best timed on the key is tried on
 * the call (README: how the engine chooses). An
 * implementation that fails is recorded, skipped for that key for the next
 * 20 runs of the method, and the next best runs. */
QS_API int method_run(engine *e, const char *method, const run_request *rq,
                      image *outputs, size_t n_outputs, run_report *report);

/* ----------------------------------------------------------------- plans */

/* A plan, as FFTW's: a method, its parameters and the shapes of its inputs
 * fixed once by method_open, which validates them, lets the agent choose
 * for those shapes and opens the chosen implementation's state (tables,
 * device programs and buffers: impl_def.open); plan_run then only works.
 * Every plan_run is chosen, timed and recorded by the dispatcher exactly as
 * a method_run call (history, model, calibration, fallback, the store,
 * rq->progress), and an implementation chosen later gets its state opened
 * at its first run. method_run is a plan opened, run once and closed
 * (without states: an implementation then plans inside its run).
 * rq->inputs give the shapes (data may be NULL); the plan copies what it
 * needs of rq. A plan is used by one thread at a time, like its engine,
 * which must outlive it. QS_EINVAL/QS_EPARAM/QS_ESHAPE as method_run. */
typedef struct plan plan;
QS_API int method_open(engine *e, const char *method, const run_request *rq,
                       plan **out);

/* Runs the plan on inputs of its shapes (each input's rows and columns as
 * planned, frames at most as planned: a shorter last batch of a stream),
 * outputs as method_run's. The message of a failure is engine_error of the
 * plan's engine. */
QS_API int plan_run(plan *p, const image *inputs, size_t n_inputs,
                    image *outputs, size_t n_outputs, run_report *report);

/* The implementation the last run used ("" before any run). */
QS_API const char *plan_impl(const plan *p);

/* Releases the plan and every state its implementations opened or kept.
 * NULL is a no-op. */
QS_API void plan_close(plan *p);

/* What method_run would do for this request, without running anything or
 * touching the store: report->impl is the implementation it would run and
 * report->reason why ("forced", "history", "model", "static"); the
 * estimates give every implementation's prediction and its source. When
 * method_run would first calibrate cold implementations (no timing on their
 * device and calibration enabled), reason is "calibration" and impl the
 * choice among what is known now (the static order when nothing is); the
 * cold ones have source "none". seconds and the other timings stay 0.
 * Inputs need shapes only: `data` may be NULL here. */
QS_API int method_estimate(engine *e, const char *method,
                           const run_request *rq, run_report *report);

/* Benchmark: every available implementation (or those named in `impls`,
 * comma-separated names or kinds), `warmup` untimed runs then `repeats`
 * timed runs each, all recorded in the store; each output is compared with
 * serial's within the method's tolerance and a mismatching implementation is
 * recorded with QS_EMISMATCH. Entries come back fastest first.
 * rq->progress counts runs (warm-up and timed, of every implementation);
 * a cancel returns QS_ECANCELLED: the implementation under way records
 * nothing, those finished before stay recorded. */
typedef struct bench_entry {
  char impl[QS_NAME_MAX];
  int status;            /* QS_OK, QS_EMISMATCH, or the failure */
  int runs;
  double min, median, fast_mean; /* seconds */
  double once_seconds;   /* one-time costs seen in the warm-up */
  double max_rel_diff;   /* max |out - serial| / max |serial| */
} bench_entry;

typedef struct bench_result {
  size_t n;
  bench_entry entries[QS_MAX_ESTIMATES];
} bench_result;

QS_API int method_benchmark(engine *e, const char *method,
                            const run_request *rq, const char *impls,
                            int warmup, int repeats, bench_result *result);

/* ------------------------------------------------------------ the store */

/* The engine's timing store, as `quicksilver db` and the bindings see it.
 * Calls return a status with the message in engine_error(e). Writes
 * pending in the engine are flushed first; calls that remove or add rows
 * make the engine re-read its history on the next run. */

/* Rows matching every non-NULL field; at most `limit` (0: no limit). */
typedef struct db_filter {
  const char *method, *impl, *device, *key;
  size_t limit;
} db_filter;

/* One recorded run (or failure). Strings are valid during the callback. */
typedef struct db_row {
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
} db_row;

/* Callbacks return nonzero to stop (that value is returned). */
typedef int (*db_row_fn)(void *ctx, const db_row *r);

/* Rows newest first. */
QS_API int engine_db_query(engine *e, const db_filter *f, db_row_fn fn,
                           void *ctx);

/* Summary of one (method, key, impl, device) group: `count` successful
 * runs (min, median, fast-half mean of their walls when count > 0) and
 * `failed` failures; `status` is the newest failure's status (or QS_OK). */
typedef struct db_stat {
  const char *method, *key, *impl, *device;
  size_t count, failed;
  double min, median, fast_mean;
  int status;
} db_stat;
typedef int (*db_stat_fn)(void *ctx, const db_stat *s);

/* Groups ordered by method, key, impl, device (filter limit ignored). */
QS_API int engine_db_stats(engine *e, const db_filter *f, db_stat_fn fn,
                           void *ctx);

/* For every (method, key) with runs of this engine's implementations on
 * this machine's devices (filtered by method and key), the choice
 * method_run makes for that key by the engine's own rule (history, then
 * model, never calibrating, never a cold implementation a small call would
 * try next): choice->impl, reason and the estimates. choice->impl may be
 * one the rule is still trying (reason "exploration" or "verification",
 * its estimate's state "next"); the best known is then the estimate whose
 * state is "best".
 * Keys of other machines or older implementation versions do not count,
 * as in method_run. */
typedef int (*db_best_fn)(void *ctx, const char *method, const char *key,
                          const run_report *choice);
QS_API int engine_db_best(engine *e, const db_filter *f, db_best_fn fn,
                          void *ctx);

/* Whether a key is one calibration recorded on a slice of a call's input
 * (see method_run): such keys end in "#slice" (a caller's key ends in
 * ")"). They feed the time-vs-work model like any key; listings such as
 * `quicksilver db best` hide them unless asked. 0 for NULL. */
QS_API int db_key_is_slice(const char *key);

/* Writes every row and device as one JSON document at path (atomically). */
QS_API int engine_db_export(engine *e, const char *path);

/* Adds the rows of a document engine_db_export wrote; rows already present
 * are skipped; a malformed document changes nothing. Counters may be
 * NULL. */
QS_API int engine_db_import(engine *e, const char *path, size_t *added,
                            size_t *skipped, size_t *rejected);

/* Keeps the newest `keep` runs per (method, impl, device, key) (0: no
 * limit) and drops runs older than `older_than_days` (<= 0: no limit). */
QS_API int engine_db_prune(engine *e, size_t keep, double older_than_days,
                           size_t *removed);

/* Deletes the runs matching every non-NULL field of f (limit ignored). */
QS_API int engine_db_forget(engine *e, const db_filter *f, size_t *removed);

/* SQLite's integrity check. A store engine_open could not open gives the
 * status it gave then (QS_ECORRUPT, QS_ESCHEMA, QS_EFORMAT...). */
QS_API int engine_db_check(engine *e);

/* Moves a store file no engine has open (and its -wal and -shm files)
 * aside to "<path>.corrupt-<unix seconds>", never overwriting anything;
 * the new name goes to moved (may be NULL). QS_EIO with err on failure. */
QS_API int engine_db_move_aside(const char *path, char *moved,
                                size_t moved_len, char *err, size_t err_len);

/* Deletes a store file no engine has open, with its -wal and -shm files
 * (absent files are not an error): a fresh store for benchmarks. */
QS_API int engine_db_remove(const char *path, char *err, size_t err_len);

/* ------------------------------------------------------------- timing */

/* Monotonic nanoseconds (CLOCK_MONOTONIC). */
QS_API int64_t timer_ns(void);

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
QS_API int stats_of(const double *x, size_t n, stats *s);

#ifdef __cplusplus
}
#endif

#endif /* QUICKSILVER_H */
