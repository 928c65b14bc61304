/* engine.c — engine lifecycle: options and environment knobs, the pool,
 * the last-error message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env.h"
#include "internal.h"
#include "timer.h"

int engine_fail(engine *e, int status, const char *fmt, ...) {
  if (!e) return status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->err, sizeof e->err, fmt, ap);
  va_end(ap);
  return status;
}

int64_t engine_now(const engine *e) {
  return e->clock_ns ? e->clock_ns(e->clock_ctx) : timer_ns();
}

const char *engine_error(const engine *e) { return e ? e->err : ""; }
int engine_threads(const engine *e) { return e ? e->threads : 0; }
const char *engine_db_path(const engine *e) { return e ? e->db_path : NULL; }

/* $XDG_CACHE_HOME/quicksilver[/leaf], else $HOME/.cache/quicksilver[/leaf];
 * NULL when neither variable is set. */
static char *cache_path(const char *leaf) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  const char *base = (xdg && *xdg) ? xdg : home;
  if (!base || !*base) return NULL;
  const char *mid = (xdg && *xdg) ? "" : "/.cache";
  size_t n = strlen(base) + strlen(mid) + strlen(leaf) + 16;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s%s/quicksilver%s%s", base, mid, *leaf ? "/" : "",
                  leaf);
  return p;
}

static char *dup_or_null(const char *s) {
  if (!s || !*s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static int resolve(engine *e, const engine_options *o) {
  char msg[512] = "";
  long threads = o->threads;
  if (threads <= 0) {
    threads = 0;
    if (env_int("QUICKSILVER_THREADS", getenv("QUICKSILVER_THREADS"), 0,
                QS_MAX_THREADS, &threads, msg, sizeof msg))
      return engine_fail(e, QS_EENV, "%s", msg);
    if (threads == 0) threads = pool_cores();
  }
  e->threads = threads > QS_MAX_THREADS ? QS_MAX_THREADS : (int)threads;

  int no_cl = 0;
  if (env_bool("QUICKSILVER_NO_OPENCL", getenv("QUICKSILVER_NO_OPENCL"),
               &no_cl, msg, sizeof msg))
    return engine_fail(e, QS_EENV, "%s", msg);
  e->no_opencl = o->no_opencl || no_cl;
  e->no_calibration = o->no_calibration;
  e->seed = o->seed;
  e->clock_ns = o->clock_ns;
  e->clock_ctx = o->clock_ctx;

  const char *db = o->db_path;
  if (!db || !*db) db = getenv("QUICKSILVER_DB");
  e->db_path = dup_or_null(db);
  if (!e->db_path) e->db_path = cache_path("timings.db");
  if (!e->db_path) e->db_path = dup_or_null(":memory:");

  const char *cache = o->cache_dir;
  if (!cache || !*cache) cache = getenv("QUICKSILVER_CACHE_DIR");
  e->cache_dir = cache && *cache ? dup_or_null(cache) : cache_path("");
  if (!e->db_path) return engine_fail(e, QS_ENOMEM, "out of memory");
  return QS_OK;
}

int engine_open(engine **out, const engine_options *options) {
  static const engine_options defaults;
  if (!out) return QS_EINVAL;
  *out = NULL;
  engine *e = calloc(1, sizeof *e);
  if (!e) return QS_ENOMEM;
  const engine_options *o = options ? options : &defaults;
  int rc = resolve(e, o);
  if (!rc && pool_create(&e->pool, e->threads))
    rc = engine_fail(e, QS_ENOMEM, "cannot start %d pool threads",
                     e->threads);
  *out = e;
  return rc;
}

void engine_close(engine *e) {
  if (!e) return;
  pool_destroy(e->pool);
  free(e->db_path);
  free(e->cache_dir);
  free(e);
}
