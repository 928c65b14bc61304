/* internal.h — the engine handle and helpers shared by the dispatcher's
 * files. Not installed; methods never include it. */
#ifndef QS_INTERNAL_H
#define QS_INTERNAL_H

#include <stdarg.h>
#include <stdint.h>

#include "pool.h"
#include "quicksilver.h"

#define QS_ERR_MAX 2048

struct engine {
  char err[QS_ERR_MAX];
  int threads;
  int no_opencl;
  int no_calibration;
  uint64_t seed;
  char *db_path;   /* resolved: option, env, default, or ":memory:" */
  char *cache_dir; /* resolved: option, env or default; may be NULL */
  int64_t (*clock_ns)(void *ctx);
  void *clock_ctx;
  pool *pool;
};

/* Sets the engine's error message (printf-style) and returns status. */
int engine_fail(engine *e, int status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Nanoseconds from the engine's clock (injected or monotonic). */
int64_t engine_now(const engine *e);

#endif
