/* engine.c — engine lifecycle: options and environment knobs, the pool,
 * the OpenCL runtime, the timing store with this machine's device rows,
 * the registry, the last-error message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cl/clrt.h"
#include "db/store.h"
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

/* The CPU as a device: its model, the online cores and the pool's threads
 * hashed into a fingerprint, so that CPU timings from other hardware or
 * another thread count are not mistaken for this machine's. */
static void cpu_identify(engine *e) {
  snprintf(e->cpu_name, sizeof e->cpu_name, "unknown CPU");
  FILE *f = fopen("/proc/cpuinfo", "r");
  char line[256];
  while (f && fgets(line, sizeof line, f)) {
    if (strncmp(line, "model name", 10)) continue;
    const char *v = strchr(line, ':');
    if (!v) continue;
    v += 1 + (v[1] == ' ');
    snprintf(e->cpu_name, sizeof e->cpu_name, "%.*s",
             (int)strcspn(v, "\n"), v);
    break;
  }
  if (f) fclose(f);
  char id[256];
  snprintf(id, sizeof id, "%s|%d|%d", e->cpu_name, pool_cores(), e->threads);
  snprintf(e->cpu_fp, sizeof e->cpu_fp, "cpu-%016llx",
           (unsigned long long)fnv1a(FNV_SEED, id));
}

/* Device rows for the CPU and every OpenCL device; a failure here is the
 * store's and does not stop the engine. */
static void devices_record(engine *e) {
  char info[512], msg[1024];
  snprintf(info, sizeof info,
           "{\"kind\":\"cpu\",\"cores\":%d,\"threads\":%d}",
           pool_cores(), e->threads);
  int rc = store_device(e->store, e->cpu_fp, e->cpu_name, info, msg,
                        sizeof msg);
  if (rc) engine_record_fail(e, rc, msg);
  for (size_t i = 0; !rc && e->cl && i < clrt_count(e->cl); i++) {
    const cldev_info *d = cldev_about(clrt_device(e->cl, i));
    snprintf(info, sizeof info,
             "{\"kind\":\"opencl\",\"slug\":\"%s\",\"gpu\":%d,"
             "\"compute_units\":%u,\"clock_mhz\":%u,\"global_mem\":%llu,"
             "\"max_alloc\":%llu,\"local_mem\":%llu,\"fp64\":%d}",
             d->slug, d->is_gpu, d->compute_units, d->clock_mhz,
             (unsigned long long)d->global_mem,
             (unsigned long long)d->max_alloc,
             (unsigned long long)d->local_mem, d->fp64);
    char name[300];
    snprintf(name, sizeof name, "%s (%s)", d->name, d->platform);
    rc = store_device(e->store, d->fingerprint, name, info, msg, sizeof msg);
    if (rc) engine_record_fail(e, rc, msg);
  }
}

static int open_parts(engine *e) {
  char msg[1024] = "";
  if (pool_create(&e->pool, e->threads))
    return engine_fail(e, QS_ENOMEM, "cannot start %d pool threads",
                       e->threads);
  cpu_identify(e);
  e->rng = e->seed ? e->seed : (uint64_t)timer_ns() ^ (uint64_t)(uintptr_t)e;
  char *kernels = NULL;
  if (e->cache_dir) {
    size_t n = strlen(e->cache_dir) + 16;
    if ((kernels = malloc(n))) snprintf(kernels, n, "%s/kernels", e->cache_dir);
  }
  int rc = clrt_open(&e->cl, e->no_opencl, kernels, msg, sizeof msg);
  free(kernels);
  if (rc) return engine_fail(e, rc, "OpenCL runtime: %s", msg);
  rc = registry_builtins(e);
  if (rc) return rc;
  rc = store_open(&e->store, e->db_path, msg, sizeof msg);
  if (rc) {
    e->store = NULL;
    engine_record_fail(e, rc, msg);
    return engine_fail(e, rc, "%s", msg);
  }
  devices_record(e);
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
  if (!rc) rc = open_parts(e);
  *out = e;
  return rc;
}

/* Rows are written to the store in batches, one transaction each: a commit
 * per row (with the history trim) costs several times the rest of a warm
 * call (about 50 us median, 200 us mean with WAL checkpoints, against 5 us
 * for the call). Runs wait in memory until FLUSH_ROWS are pending or the
 * oldest is FLUSH_NS old (checked at each record), and are written at
 * engine_close and before the store is read. A crash loses at most that
 * batch; the selection never waits for the store because the engine's own
 * history cache is updated at once. */
#define FLUSH_ROWS 64
#define FLUSH_NS 250000000

struct pending {
  run_row rows[FLUSH_ROWS];
  char *text[FLUSH_ROWS]; /* one block per row holding its strings */
  size_t n;
  int64_t first_ns;
};

static double unix_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Copies s to *at and advances it. */
static const char *put_str(char **at, const char *s) {
  size_t n = strlen(s) + 1;
  char *d = *at;
  memcpy(d, s, n);
  *at += n;
  return d;
}

/* ---------------------------------------------- recording of timings */

void engine_record_fail(engine *e, int status, const char *msg) {
  if (e->rec_status || !status) return;
  e->rec_status = status;
  snprintf(e->rec_msg, sizeof e->rec_msg, "%s", msg);
}

int engine_record_status(const engine *e, char *msg, size_t len) {
  if (msg && len) snprintf(msg, len, "%s", e ? e->rec_msg : "no engine");
  return e ? e->rec_status : QS_EINVAL;
}

int engine_flush(engine *e) {
  pending *q = e->queue;
  if (!q || !q->n) return QS_OK;
  char msg[1024] = "";
  /* After a failure nothing more is tried: one lock wait per process. */
  int rc = e->store && !e->rec_status
               ? store_record_batch(e->store, q->rows, q->n, msg, sizeof msg)
               : QS_OK;
  for (size_t i = 0; i < q->n; i++) free(q->text[i]);
  q->n = 0;
  e->rec_written = 1;
  if (rc) {
    engine_record_fail(e, rc, msg);
    return engine_fail(e, rc, "recording runs: %s", msg);
  }
  return QS_OK;
}

void engine_record(engine *e, const mstate *m, const rimpl *r,
                   const run_rec *rec) {
  if (!e->store || e->rec_status) return;
  if (!e->queue && !(e->queue = calloc(1, sizeof *e->queue))) return;
  pending *q = e->queue;
  const char *err = rec->error ? rec->error : "";
  const char *str[] = {m->desc->name, r->name, r->devfp, rec->key,
                       rec->params, err};
  size_t len = 0;
  for (size_t i = 0; i < 6; i++) len += strlen(str[i]) + 1;
  char *block = malloc(len), *at = block;
  if (!block) return;
  q->text[q->n] = block;
  q->rows[q->n] = (run_row){
      .stamp = unix_now(), .method = put_str(&at, str[0]),
      .impl = put_str(&at, str[1]), .impl_version = r->def->version,
      .device = put_str(&at, str[2]), .key = put_str(&at, str[3]),
      .work = rec->work, .params = put_str(&at, str[4]), .wall = rec->wall,
      .device_s = rec->device_s, .once_s = rec->once_s,
      .status = rec->status, .error = put_str(&at, str[5])};
  int64_t now = timer_ns();
  if (q->n++ == 0) q->first_ns = now;
  /* The first row goes at once: a store that cannot take it is known in
   * that run's report. */
  if (q->n == FLUSH_ROWS || now - q->first_ns >= FLUSH_NS || !e->rec_written)
    engine_flush(e);
}

void engine_close(engine *e) {
  if (!e) return;
  engine_flush(e);
  free(e->queue);
  registry_free(e);
  store_close(e->store);
  clrt_close(e->cl);
  pool_destroy(e->pool);
  free(e->db_path);
  free(e->cache_dir);
  free(e);
}
