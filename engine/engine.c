/* engine.c — engine lifecycle, the top of the engine: options and
 * environment knobs, the pool, the OpenCL runtime, the timing store with
 * this machine's device rows, the registry, and the device listing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cJSON.h>

#include "cl/clrt.h"
#include "db/store.h"
#include "env.h"
#include "internal.h"
#include "timer.h"

const char *qs_engine_error(const qs_engine *e) { return e ? e->err : ""; }
int qs_engine_threads(const qs_engine *e) { return e ? e->threads : 0; }
const char *qs_engine_db_path(const qs_engine *e) {
  return e ? e->db_path : NULL;
}

int qs_engine_cores(void) { return pool_cores(); }

int qs_engine_cache_path(const char *leaf, char *buf, size_t len) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  const char *base = (xdg && *xdg) ? xdg : home;
  if (!buf && len) return QS_EINVAL;
  if (buf && len) buf[0] = 0;
  if (!base || !*base) return QS_EUNAVAIL;
  if (!leaf) leaf = "";
  const char *mid = (xdg && *xdg) ? "" : "/.cache";
  int k = snprintf(buf, len, "%s%s/quicksilver%s%s", base, mid,
                   *leaf ? "/" : "", leaf);
  if (k >= 0 && (size_t)k < len) return QS_OK;
  if (buf && len) buf[0] = 0;
  return QS_EOVERFLOW;
}

/* qs_engine_cache_path in memory of its own; NULL without a place (or
 * memory). */
static char *cache_path(const char *leaf) {
  const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
  size_t len =
      (xdg ? strlen(xdg) : 0) + (home ? strlen(home) : 0) + strlen(leaf) + 32;
  char *p = malloc(len);
  if (p && qs_engine_cache_path(leaf, p, len)) {
    free(p);
    p = NULL;
  }
  return p;
}

static char *dup_or_null(const char *s) {
  if (!s || !*s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static int resolve(qs_engine *e, const qs_engine_options *o) {
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
  /* kept device buffers: the option's MiB (< 0: none), else the
   * environment's (0: none), else the default (-1) */
  int64_t keep = -1;
  long mb = o->device_cache_mb;
  if (mb == 0) {
    mb = -1;
    if (env_int("QUICKSILVER_DEVICE_CACHE_MB",
                getenv("QUICKSILVER_DEVICE_CACHE_MB"), 0, 1L << 30, &mb, msg,
                sizeof msg))
      return engine_fail(e, QS_EENV, "%s", msg);
    if (mb >= 0) keep = (int64_t)mb << 20;
  } else {
    keep = mb < 0 ? 0 : (int64_t)(mb < (1L << 30) ? mb : 1L << 30) << 20;
  }
  e->device_keep = keep;
  e->no_calibration = o->no_calibration;
  e->calib_budget = o->calibration_budget > 0 ? o->calibration_budget : 0;
  e->calib_share = o->calibration_share > 0 && isfinite(o->calibration_share)
                       ? o->calibration_share
                       : 0;
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
static void cpu_identify(qs_engine *e) {
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

/* Old names of OpenCL devices seen in the store: fingerprint and the
 * memory sizes recorded with it. */
typedef struct old_dev {
  char fp[17];
  uint64_t global_mem, max_alloc;
} old_dev;

typedef struct old_devs {
  old_dev d[32];
  size_t n;
} old_devs;

static int old_dev_add(void *ctx, const device_row *r) {
  old_devs *o = ctx;
  cJSON *j = cJSON_Parse(r->info);
  const cJSON *kind = cJSON_GetObjectItem(j, "kind"),
              *gm = cJSON_GetObjectItem(j, "global_mem"),
              *ma = cJSON_GetObjectItem(j, "max_alloc");
  if (o->n < sizeof o->d / sizeof o->d[0] && cJSON_IsString(kind) &&
      !strcmp(kind->valuestring, "opencl") && cJSON_IsNumber(gm) &&
      cJSON_IsNumber(ma) && strlen(r->fingerprint) == 16) {
    old_dev *d = &o->d[o->n++];
    snprintf(d->fp, sizeof d->fp, "%s", r->fingerprint);
    d->global_mem = (uint64_t)gm->valuedouble;
    d->max_alloc = (uint64_t)ma->valuedouble;
  }
  cJSON_Delete(j);
  return 0;
}

/* Runs recorded under a device's first-scheme fingerprints (which hashed
 * the global memory PoCL reports from the host's free RAM) move to its
 * stable one: a row is this device's when the old scheme, fed the memory
 * sizes recorded with it, gives its fingerprint exactly. */
static int devices_migrate(qs_engine *e, const cldev_info *d,
                           const old_devs *o, char *msg, size_t len) {
  for (size_t i = 0; i < o->n; i++) {
    char v1[17];
    cl_fingerprint_v1(d, o->d[i].global_mem, o->d[i].max_alloc, v1);
    if (strcmp(v1, o->d[i].fp) || !strcmp(v1, d->fingerprint)) continue;
    int rc = store_device_merge(e->store, o->d[i].fp, d->fingerprint, NULL,
                                msg, len);
    if (rc) return rc;
  }
  return QS_OK;
}

/* Device rows for the CPU and every OpenCL device; a failure here is the
 * store's and does not stop the engine. */
static void devices_record(qs_engine *e) {
  char info[512], msg[1024];
  snprintf(info, sizeof info,
           "{\"kind\":\"cpu\",\"cores\":%d,\"threads\":%d}",
           pool_cores(), e->threads);
  old_devs old = {.n = 0};
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
    if (!rc && i == 0) rc = store_devices(e->store, old_dev_add, &old, msg,
                                          sizeof msg);
    if (!rc) rc = devices_migrate(e, d, &old, msg, sizeof msg);
    if (rc) engine_record_fail(e, rc, msg);
  }
}

static int open_parts(qs_engine *e) {
  char msg[1024] = "";
  if (pool_create(&e->pool, e->threads))
    return engine_fail(e, QS_ENOMEM, "cannot start %d pool threads",
                       e->threads);
  cpu_identify(e);
  e->rng =
      e->seed ? e->seed : (uint64_t)qs_timer_ns() ^ (uint64_t)(uintptr_t)e;
  char *kernels = NULL;
  if (e->cache_dir) {
    size_t n = strlen(e->cache_dir) + 16;
    if ((kernels = malloc(n))) snprintf(kernels, n, "%s/kernels", e->cache_dir);
  }
  int rc = clrt_open(&e->cl, e->no_opencl, kernels, msg, sizeof msg);
  free(kernels);
  if (rc) return engine_fail(e, rc, "OpenCL runtime: %s", msg);
  clrt_keep(e->cl, e->device_keep);
  e->step = dispatch_step;
  rc = registry_builtins(e);
  if (rc) return rc;
  rc = store_open(&e->store, e->db_path, msg, sizeof msg);
  if (rc) {
    e->store = NULL;
    e->store_status = rc;
    snprintf(e->store_err, sizeof e->store_err, "%s", msg);
    engine_record_fail(e, rc, msg);
    return engine_fail(e, rc, "%s", msg);
  }
  devices_record(e);
  return QS_OK;
}

const char *qs_engine_opencl_why(const qs_engine *e) {
  if (!e) return "no engine";
  if (!e->cl) return "OpenCL runtime not started";
  return clrt_why(e->cl);
}

static void device_cpu(const qs_engine *e, qs_device_info *o) {
  snprintf(o->name, sizeof o->name, "cpu");
  snprintf(o->fingerprint, sizeof o->fingerprint, "%s", e->cpu_fp);
  snprintf(o->model, sizeof o->model, "%s", e->cpu_name);
  o->shares_host_cores = 1;
  o->cores = pool_cores();
  o->threads = e->threads;
  o->compute_units = (unsigned)o->cores;
}

static void device_cl(const cldev_info *d, qs_device_info *o) {
  snprintf(o->name, sizeof o->name, "%s", d->slug);
  snprintf(o->fingerprint, sizeof o->fingerprint, "%s", d->fingerprint);
  snprintf(o->model, sizeof o->model, "%s", d->name);
  snprintf(o->platform, sizeof o->platform, "%s", d->platform);
  snprintf(o->vendor, sizeof o->vendor, "%s", d->vendor);
  snprintf(o->driver, sizeof o->driver, "%s", d->driver);
  snprintf(o->version, sizeof o->version, "%s", d->version);
  o->opencl = 1;
  o->gpu = d->is_gpu;
  o->shares_host_cores = d->shares_host_cores;
  o->compute_units = d->compute_units;
  o->clock_mhz = d->clock_mhz;
  o->global_mem = d->global_mem;
  o->max_alloc = d->max_alloc;
  o->local_mem = d->local_mem;
  o->max_work_group = d->max_work_group;
  o->fp64 = d->fp64;
}

int qs_engine_devices(qs_engine *e, qs_device_info *out, size_t max,
                      size_t *n) {
  if (!e || (max && !out)) return QS_EINVAL;
  if (!e->pool) return engine_fail(e, QS_EINVAL, "engine not open");
  size_t cl = e->cl ? clrt_count(e->cl) : 0;
  for (size_t i = 0; i < max && i < cl + 1; i++) {
    memset(&out[i], 0, sizeof out[i]);
    if (i == 0)
      device_cpu(e, &out[i]);
    else
      device_cl(cldev_about(clrt_device(e->cl, i - 1)), &out[i]);
  }
  if (n) *n = cl + 1;
  return QS_OK;
}

int qs_engine_open(qs_engine **out, const qs_engine_options *options) {
  static const qs_engine_options defaults;
  if (!out) return QS_EINVAL;
  *out = NULL;
  qs_engine *e = calloc(1, sizeof *e);
  if (!e) return QS_ENOMEM;
  const qs_engine_options *o = options ? options : &defaults;
  int rc = resolve(e, o);
  if (!rc) rc = open_parts(e);
  *out = e;
  return rc;
}

void qs_engine_close(qs_engine *e) {
  if (!e) return;
  recorder_close(e);
  registry_free(e);
  store_close(e->store);
  devimg_close_all(e); /* before their buffers' contexts go */
  clrt_close(e->cl);
  pool_destroy(e->pool);
  free(e->db_path);
  free(e->cache_dir);
  free(e);
}
