/* clrt.c — the OpenCL runtime: device discovery with slugs and
 * fingerprints, lazy per-device contexts and profiling queues, program
 * builds behind a memory cache and the disk binary cache, buffers, first
 * launches, and the OpenCL error names.
 *
 * All state hangs off one clrt (one per engine); its mutex guards the lazy
 * contexts, the caches and the counters, so several threads of one engine
 * may share it. Built without OpenCL, a clrt has zero devices and a reason. */
#include "cl/clrt.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl/cache.h"
#include "cl/devlist.h"
#include "engine/fail.h"
#include "timer.h"

#define WHY_MAX 512
#define SLUG_WORDS 32 /* slugs are cut at a dash before this many chars */

/* A built program, or a build that failed: the same source and options
 * fail the same way, so the failure is kept (status and message) and
 * returned again without another compile. */
typedef struct prog_entry {
  uint64_t key;
#if QS_HAVE_OPENCL
  cl_program prog; /* NULL for a failure */
#endif
  int status;
  char *failure;
} prog_entry;

#if QS_HAVE_OPENCL
/* A buffer released by its user, kept for the next request of the same
 * flags and size (cldev_release). */
typedef struct kept_buf {
  cl_mem mem;
  cl_mem_flags flags;
  size_t bytes;
} kept_buf;
#endif

struct cldev {
  clrt *rt;
  cldev_info info;
#if QS_HAVE_OPENCL
  cl_platform_id platform;
  cl_device_id id; /* NULL until bound (a listed device: rt_bind) */
  cl_context ctx;
  cl_command_queue queue;
#endif
  int gone; /* listed, but not found when the runtime was loaded */
  prog_entry *progs;
  size_t n_progs, cap_progs;
  uint64_t *launches; /* hashes of (kernel, dims, global size) seen */
  size_t n_launches, cap_launches;
  _Atomic uint64_t bytes_up, bytes_down; /* cldev_transfer */
  double rate_bytes, rate_seconds; /* cldev_rate_note, under rt->lock */
#if QS_HAVE_OPENCL
  kept_buf *kept;     /* released buffers kept for reuse, oldest first */
  size_t n_kept, cap_kept;
  uint64_t kept_bytes;
#endif
};

struct clrt {
  pthread_mutex_t lock;
  char why[WHY_MAX];
  char *cache_dir;
  cldev *devs;
  size_t n;
  clrt_counters stats;
  clrt_fault_fn fault;
  void *fault_ctx;
  int64_t keep; /* clrt_keep: < 0 the default, else bytes per device */
  /* devices from the cached list (devlist.c), not yet matched with the
   * runtime's: rt_bind loads the runtimes at the first use of one */
  int listed, bound;
  uint64_t list_key;
  char *list_dir; /* cache_dir/CACHE_LIST_DIR; NULL: no list */
  int64_t load_ns; /* spent in rt_bind (clrt_load_seconds) */
};

/* ------------------------------------------------------------ error names */

static const struct {
  int code;
  const char *name;
} code_names[] = {
    {0, "CL_SUCCESS"},
    {-1, "CL_DEVICE_NOT_FOUND"},
    {-2, "CL_DEVICE_NOT_AVAILABLE"},
    {-3, "CL_COMPILER_NOT_AVAILABLE"},
    {-4, "CL_MEM_OBJECT_ALLOCATION_FAILURE"},
    {-5, "CL_OUT_OF_RESOURCES"},
    {-6, "CL_OUT_OF_HOST_MEMORY"},
    {-7, "CL_PROFILING_INFO_NOT_AVAILABLE"},
    {-8, "CL_MEM_COPY_OVERLAP"},
    {-9, "CL_IMAGE_FORMAT_MISMATCH"},
    {-10, "CL_IMAGE_FORMAT_NOT_SUPPORTED"},
    {-11, "CL_BUILD_PROGRAM_FAILURE"},
    {-12, "CL_MAP_FAILURE"},
    {-13, "CL_MISALIGNED_SUB_BUFFER_OFFSET"},
    {-14, "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST"},
    {-15, "CL_COMPILE_PROGRAM_FAILURE"},
    {-16, "CL_LINKER_NOT_AVAILABLE"},
    {-17, "CL_LINK_PROGRAM_FAILURE"},
    {-18, "CL_DEVICE_PARTITION_FAILED"},
    {-19, "CL_KERNEL_ARG_INFO_NOT_AVAILABLE"},
    {-30, "CL_INVALID_VALUE"},
    {-31, "CL_INVALID_DEVICE_TYPE"},
    {-32, "CL_INVALID_PLATFORM"},
    {-33, "CL_INVALID_DEVICE"},
    {-34, "CL_INVALID_CONTEXT"},
    {-35, "CL_INVALID_QUEUE_PROPERTIES"},
    {-36, "CL_INVALID_COMMAND_QUEUE"},
    {-37, "CL_INVALID_HOST_PTR"},
    {-38, "CL_INVALID_MEM_OBJECT"},
    {-39, "CL_INVALID_IMAGE_FORMAT_DESCRIPTOR"},
    {-40, "CL_INVALID_IMAGE_SIZE"},
    {-41, "CL_INVALID_SAMPLER"},
    {-42, "CL_INVALID_BINARY"},
    {-43, "CL_INVALID_BUILD_OPTIONS"},
    {-44, "CL_INVALID_PROGRAM"},
    {-45, "CL_INVALID_PROGRAM_EXECUTABLE"},
    {-46, "CL_INVALID_KERNEL_NAME"},
    {-47, "CL_INVALID_KERNEL_DEFINITION"},
    {-48, "CL_INVALID_KERNEL"},
    {-49, "CL_INVALID_ARG_INDEX"},
    {-50, "CL_INVALID_ARG_VALUE"},
    {-51, "CL_INVALID_ARG_SIZE"},
    {-52, "CL_INVALID_KERNEL_ARGS"},
    {-53, "CL_INVALID_WORK_DIMENSION"},
    {-54, "CL_INVALID_WORK_GROUP_SIZE"},
    {-55, "CL_INVALID_WORK_ITEM_SIZE"},
    {-56, "CL_INVALID_GLOBAL_OFFSET"},
    {-57, "CL_INVALID_EVENT_WAIT_LIST"},
    {-58, "CL_INVALID_EVENT"},
    {-59, "CL_INVALID_OPERATION"},
    {-60, "CL_INVALID_GL_OBJECT"},
    {-61, "CL_INVALID_BUFFER_SIZE"},
    {-62, "CL_INVALID_MIP_LEVEL"},
    {-63, "CL_INVALID_GLOBAL_WORK_SIZE"},
    {-64, "CL_INVALID_PROPERTY"},
    {-65, "CL_INVALID_IMAGE_DESCRIPTOR"},
    {-66, "CL_INVALID_COMPILER_OPTIONS"},
    {-67, "CL_INVALID_LINKER_OPTIONS"},
    {-68, "CL_INVALID_DEVICE_PARTITION_COUNT"},
    {-1001, "CL_PLATFORM_NOT_FOUND_KHR"},
};

const char *cl_code_name(int code) {
  for (size_t i = 0; i < sizeof code_names / sizeof code_names[0]; i++)
    if (code_names[i].code == code) return code_names[i].name;
  return "unknown OpenCL error";
}

/* ----------------------------------------------------------- common parts */

size_t clrt_count(const clrt *rt) { return rt ? rt->n : 0; }

int clrt_listed(const clrt *rt) { return rt && rt->listed && !rt->bound; }

double clrt_load_seconds(clrt *rt) {
  if (!rt) return 0;
  pthread_mutex_lock(&rt->lock);
  double s = (double)rt->load_ns * 1e-9;
  pthread_mutex_unlock(&rt->lock);
  return s;
}

cldev *clrt_device(clrt *rt, size_t i) {
  return rt && i < rt->n ? &rt->devs[i] : NULL;
}

const char *clrt_why(const clrt *rt) { return rt ? rt->why : "no runtime"; }

const cldev_info *cldev_about(const cldev *d) { return d ? &d->info : NULL; }

void clrt_fault(clrt *rt, clrt_fault_fn fn, void *ctx) {
  pthread_mutex_lock(&rt->lock);
  rt->fault = fn;
  rt->fault_ctx = ctx;
  pthread_mutex_unlock(&rt->lock);
}

void clrt_keep(clrt *rt, int64_t bytes) {
  if (!rt) return;
  pthread_mutex_lock(&rt->lock);
  rt->keep = bytes < 0 ? -1 : bytes;
  pthread_mutex_unlock(&rt->lock);
}

clrt_counters clrt_stats(const clrt *rt) {
  clrt_counters c = {0};
  if (!rt) return c;
  clrt *m = (clrt *)rt; /* the lock is not part of the value */
  pthread_mutex_lock(&m->lock);
  c = rt->stats;
  pthread_mutex_unlock(&m->lock);
  return c;
}

static int is_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9');
}

/* "pthread-haswell-AMD EPYC" -> "pthread-haswell-amd-epyc". Words are cut
 * whole, so two devices differing past the limit share a base and are told
 * apart by the uniqueness suffix. */
void cl_slug(const char *name, char *out, size_t len) {
  static const char *const drop[] = {"r",   "tm",          "c",   "processor",
                                     "cpu", "corporation", "inc", "with"};
  size_t o = 0;
  const char *p = name ? name : "";
  char word[64];
  while (*p && *p != '@') {
    size_t w = 0;
    while (*p && *p != '@' && !is_word(*p))
      p++;
    for (; is_word(*p); p++)
      if (w + 1 < sizeof word)
        word[w++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
    word[w] = '\0';
    int skip = w == 0;
    for (size_t i = 0; !skip && i < sizeof drop / sizeof drop[0]; i++)
      skip = strcmp(word, drop[i]) == 0;
    if (skip) continue;
    if (o == 0 && w >= len) w = len - 1; /* a first word alone too long */
    size_t need = w + (o ? 1 : 0);
    if (o + need >= len || (o && o + need > SLUG_WORDS)) break;
    if (o) out[o++] = '-';
    memcpy(out + o, word, w);
    o += w;
  }
  if (o == 0) {
    snprintf(out, len, "device");
    return;
  }
  out[o] = '\0';
}

#if QS_HAVE_OPENCL

/* ------------------------------------------------------------- discovery */

/* Grows *arr (of *cap elements of size sz) to hold one more than n. */
static int grow(void **arr, size_t *cap, size_t n, size_t sz) {
  if (n < *cap) return QS_OK;
  size_t c = *cap ? *cap * 2 : 8;
  void *p = realloc(*arr, c * sz);
  if (!p) return QS_ENOMEM;
  *arr = p;
  *cap = c;
  return QS_OK;
}

/* A string property, truncated into buf; the untruncated text is hashed
 * into *h so long names still tell devices apart. */
static void info_str(cl_device_id dev, cl_platform_id plat, cl_uint what,
                     char *buf, size_t len, uint64_t *h) {
  size_t n = 0;
  cl_int rc = dev ? clGetDeviceInfo(dev, what, 0, NULL, &n)
                  : clGetPlatformInfo(plat, what, 0, NULL, &n);
  char *s = rc == CL_SUCCESS && n ? malloc(n + 1) : NULL;
  if (s) {
    rc = dev ? clGetDeviceInfo(dev, what, n, s, NULL)
             : clGetPlatformInfo(plat, what, n, s, NULL);
    s[rc == CL_SUCCESS ? n : 0] = '\0';
  }
  const char *v = s ? s : "";
  size_t k = strlen(v);
  while (k && (v[k - 1] == ' ' || v[k - 1] == '\0'))
    k--;
  *h = hash_bytes(*h, v, k);
  *h = hash_bytes(*h, "", 1);
  if (k >= len) k = len - 1;
  memcpy(buf, v, k);
  buf[k] = '\0';
  free(s);
}

static uint64_t info_num(cl_device_id dev, cl_uint what, size_t size) {
  unsigned char raw[8] = {0};
  uint64_t v = 0;
  if (size <= sizeof raw &&
      clGetDeviceInfo(dev, what, size, raw, NULL) == CL_SUCCESS) {
    if (size == sizeof(cl_uint)) {
      cl_uint u;
      memcpy(&u, raw, sizeof u);
      v = u;
    } else {
      memcpy(&v, raw, sizeof v);
    }
  }
  return v;
}

/* Reads the identity and limits of a device and its fingerprint. */
static void dev_read(cldev *d) {
  cldev_info *in = &d->info;
  uint64_t h = HASH_SEED;
  info_str(NULL, d->platform, CL_PLATFORM_NAME, in->platform,
           sizeof in->platform, &h);
  info_str(d->id, NULL, CL_DEVICE_VENDOR, in->vendor, sizeof in->vendor, &h);
  info_str(d->id, NULL, CL_DEVICE_NAME, in->name, sizeof in->name, &h);
  info_str(d->id, NULL, CL_DRIVER_VERSION, in->driver, sizeof in->driver, &h);
  info_str(d->id, NULL, CL_DEVICE_VERSION, in->version, sizeof in->version,
           &h);
  in->ident = h;
  cl_device_type type = 0;
  clGetDeviceInfo(d->id, CL_DEVICE_TYPE, sizeof type, &type, NULL);
  in->is_gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
  in->shares_host_cores = (type & CL_DEVICE_TYPE_CPU) != 0;
  in->compute_units =
      (unsigned)info_num(d->id, CL_DEVICE_MAX_COMPUTE_UNITS, 4);
  in->clock_mhz =
      (unsigned)info_num(d->id, CL_DEVICE_MAX_CLOCK_FREQUENCY, 4);
  in->global_mem = info_num(d->id, CL_DEVICE_GLOBAL_MEM_SIZE, 8);
  in->max_alloc = info_num(d->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE, 8);
  in->local_mem = info_num(d->id, CL_DEVICE_LOCAL_MEM_SIZE, 8);
  in->max_work_group = (size_t)info_num(d->id, CL_DEVICE_MAX_WORK_GROUP_SIZE,
                                        sizeof(size_t));
  char ext[4096];
  uint64_t ignored = 0;
  info_str(d->id, NULL, CL_DEVICE_EXTENSIONS, ext, sizeof ext, &ignored);
  in->fp64 = strstr(ext, "cl_khr_fp64") != NULL;
  cl_fingerprint(in, in->fingerprint);
}

/* Gives every device a slug unique within rt: the name's slug, then "-2",
 * "-3", ... for later devices with the same one. */
static void slugs_assign(clrt *rt) {
  for (size_t i = 0; i < rt->n; i++) {
    char base[sizeof rt->devs[i].info.slug - 4];
    cl_slug(rt->devs[i].info.name, base, sizeof base);
    snprintf(rt->devs[i].info.slug, sizeof rt->devs[i].info.slug, "%s", base);
    for (unsigned k = 2;; k++) {
      int taken = 0;
      for (size_t j = 0; j < i && !taken; j++)
        taken = !strcmp(rt->devs[j].info.slug, rt->devs[i].info.slug);
      if (!taken) break;
      snprintf(rt->devs[i].info.slug, sizeof rt->devs[i].info.slug, "%s-%u",
               base, k);
    }
  }
}

/* Fills rt->devs; leaves a reason in rt->why when none is found. Only
 * allocation failures are errors. */
static int discover(clrt *rt) {
  cl_uint np = 0;
  cl_int rc = clGetPlatformIDs(0, NULL, &np);
  if (rc == -1001 || (rc == CL_SUCCESS && np == 0)) {
    snprintf(rt->why, sizeof rt->why,
             "no OpenCL platform: no ICD is installed, or OCL_ICD_VENDORS "
             "names none (clGetPlatformIDs: CL_PLATFORM_NOT_FOUND_KHR)");
    return QS_OK;
  }
  if (rc != CL_SUCCESS) {
    snprintf(rt->why, sizeof rt->why, "clGetPlatformIDs failed: %s (%d)",
             cl_code_name(rc), (int)rc);
    return QS_OK;
  }
  cl_platform_id *plats = calloc(np, sizeof *plats);
  if (!plats) return QS_ENOMEM;
  rc = clGetPlatformIDs(np, plats, NULL);
  if (rc != CL_SUCCESS) np = 0;
  char notes[WHY_MAX] = "";
  int status = QS_OK;
  for (cl_uint p = 0; p < np && status == QS_OK; p++) {
    cl_uint nd = 0;
    rc = clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
    if (rc != CL_SUCCESS || nd == 0) {
      char pname[128];
      uint64_t ignored = 0;
      info_str(NULL, plats[p], CL_PLATFORM_NAME, pname, sizeof pname,
               &ignored);
      size_t used = strlen(notes);
      snprintf(notes + used, sizeof notes - used, "%splatform \"%s\": %s",
               used ? "; " : "", pname,
               rc == CL_SUCCESS ? "no devices" : cl_code_name(rc));
      continue;
    }
    cl_device_id *ids = calloc(nd, sizeof *ids);
    cldev *devs = ids ? realloc(rt->devs, (rt->n + nd) * sizeof *devs) : NULL;
    if (!devs) {
      free(ids);
      status = QS_ENOMEM;
      break;
    }
    rt->devs = devs;
    if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, nd, ids, NULL) ==
        CL_SUCCESS) {
      for (cl_uint i = 0; i < nd; i++) {
        cldev *d = &rt->devs[rt->n++];
        memset(d, 0, sizeof *d);
        d->rt = rt;
        d->platform = plats[p];
        d->id = ids[i];
        dev_read(d);
      }
    }
    free(ids);
  }
  free(plats);
  if (status == QS_OK && rt->n == 0)
    snprintf(rt->why, sizeof rt->why,
             "no OpenCL device (%s); PoCL hides its device when its kernel "
             "cache (POCL_CACHE_DIR) cannot be created",
             notes[0] ? notes : "no platform lists one");
  slugs_assign(rt);
  return status;
}

/* The infos of rt's devices as the list stores them (padding zeroed). */
static void list_save(const clrt *rt, const char *dir, uint64_t key) {
  if (!dir || !rt->n) return;
  cldev_info *infos = calloc(rt->n, sizeof *infos);
  if (!infos) return;
  for (size_t i = 0; i < rt->n; i++)
    memcpy(&infos[i], &rt->devs[i].info, sizeof infos[i]);
  devlist_store(dir, key, infos, rt->n);
  free(infos);
}

/* The devices of the cached list, unbound; 0 if the list was there. */
static int list_take(clrt *rt) {
  cldev_info *infos;
  size_t n;
  if (!rt->list_dir) return -1; /* no cache: no list, no key to make */
  rt->list_key = devlist_key();
  if (devlist_load(rt->list_dir, rt->list_key, &infos, &n)) return -1;
  cldev *devs = calloc(n, sizeof *devs);
  if (!devs) {
    free(infos);
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    devs[i].rt = rt;
    memcpy(&devs[i].info, &infos[i], sizeof infos[i]);
    /* this build's scheme, whatever wrote the list */
    cl_fingerprint(&devs[i].info, devs[i].info.fingerprint);
  }
  free(infos);
  rt->devs = devs;
  rt->n = n;
  rt->listed = 1;
  slugs_assign(rt);
  return 0;
}

/* Matches the listed devices with the runtime's, loading it (once, lock
 * held): each gets its platform and id by fingerprint and slug; one not
 * found is gone. When the runtime's devices differ from the list, the
 * list is stored anew for the next process. */
static void rt_bind(clrt *rt) {
  if (!rt->listed || rt->bound) return;
  rt->bound = 1;
  int64_t t0 = qs_timer_ns();
  clrt *now = calloc(1, sizeof *now);
  if (!now) {
    for (size_t i = 0; i < rt->n; i++) rt->devs[i].gone = 1;
    return;
  }
  int same = discover(now) == QS_OK && now->n == rt->n;
  for (size_t i = 0; i < rt->n; i++) {
    cldev *d = &rt->devs[i];
    d->gone = 1;
    for (size_t j = 0; j < now->n && d->gone; j++) {
      const cldev_info *f = &now->devs[j].info;
      if (strcmp(f->fingerprint, d->info.fingerprint) ||
          strcmp(f->slug, d->info.slug))
        continue;
      d->platform = now->devs[j].platform;
      d->id = now->devs[j].id;
      d->gone = 0;
    }
    same &= !d->gone;
  }
  if (!same) list_save(now, rt->list_dir, rt->list_key);
  free(now->devs);
  free(now);
  rt->load_ns += qs_timer_ns() - t0;
}

/* QS_EUNAVAIL with its message for a listed device found gone. */
static int gone_fail(const cldev *d, char *err, size_t err_len) {
  return fail_msg(err, err_len, QS_EUNAVAIL,
                  "OpenCL device %s, in the device list cached from an "
                  "earlier process, was not found when the runtime was "
                  "loaded (the list is stored anew for the next engine)",
                  d->info.slug);
}

int cldev_bind(cldev *d, char *err, size_t err_len) {
  if (!d) return fail_msg(err, err_len, QS_EINVAL, "cldev_bind: no device");
  pthread_mutex_lock(&d->rt->lock);
  rt_bind(d->rt);
  int gone = d->gone;
  pthread_mutex_unlock(&d->rt->lock);
  return gone ? gone_fail(d, err, err_len) : QS_OK;
}

/* ---------------------------------------------------------- queue, build */

static int queue_ensure(cldev *d, char *err, size_t err_len) {
  if (d->queue) return QS_OK;
  char what[96];
  cl_int rc;
  rt_bind(d->rt);
  if (d->gone) return gone_fail(d, err, err_len);
  if (!d->ctx) {
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                     (cl_context_properties)d->platform, 0};
    d->ctx = clCreateContext(props, 1, &d->id, NULL, NULL, &rc);
    if (!d->ctx) {
      snprintf(what, sizeof what, "clCreateContext on %s", d->info.slug);
      return cl_status(rc ? rc : CL_INVALID_CONTEXT, what, err, err_len);
    }
  }
  d->queue =
      clCreateCommandQueue(d->ctx, d->id, CL_QUEUE_PROFILING_ENABLE, &rc);
  if (!d->queue) {
    snprintf(what, sizeof what, "clCreateCommandQueue on %s", d->info.slug);
    return cl_status(rc ? rc : CL_INVALID_COMMAND_QUEUE, what, err, err_len);
  }
  return QS_OK;
}

int cldev_queue(cldev *d, cl_context *ctx, cl_command_queue *q, char *err,
                size_t err_len) {
  if (!d) return fail_msg(err, err_len, QS_EINVAL, "cldev_queue: no device");
  pthread_mutex_lock(&d->rt->lock);
  int rc = queue_ensure(d, err, err_len);
  if (ctx) *ctx = rc ? NULL : d->ctx;
  if (q) *q = rc ? NULL : d->queue;
  pthread_mutex_unlock(&d->rt->lock);
  return rc;
}

cl_device_id cldev_id(const cldev *d) {
  if (!d) return NULL;
  pthread_mutex_lock(&d->rt->lock);
  rt_bind(d->rt);
  cl_device_id id = d->id;
  pthread_mutex_unlock(&d->rt->lock);
  return id;
}

/* Asks the test hook; 0 means go ahead. Lock held. */
static int fault_ask(clrt *rt, clrt_op op, const char *what) {
  return rt->fault ? rt->fault(rt->fault_ctx, op, what) : 0;
}

/* The program from binary bin on d, built; NULL if the device rejects it
 * (another device's or driver's binary: CL_INVALID_BINARY). */
static cl_program load_binary(cldev *d, const unsigned char *bin, size_t len,
                              const char *options) {
  cl_int rc, bin_rc = CL_SUCCESS;
  cl_program p =
      clCreateProgramWithBinary(d->ctx, 1, &d->id, &len, &bin, &bin_rc, &rc);
  if (!p) return NULL;
  if (rc != CL_SUCCESS || bin_rc != CL_SUCCESS ||
      clBuildProgram(p, 1, &d->id, options, NULL, NULL) != CL_SUCCESS) {
    clReleaseProgram(p);
    return NULL;
  }
  return p;
}

/* Writes a failed build's message, with as much of the log as fits. */
static int build_failed(cldev *d, cl_program p, cl_int rc, const char *label,
                        const char *options, char *err, size_t err_len) {
  char what[512];
  snprintf(what, sizeof what, "building %s (options \"%s\") on %s", label,
           options, d->info.slug);
  int status = cl_status(rc, what, err, err_len);
  size_t n = 0;
  if (!p || !err || !err_len ||
      clGetProgramBuildInfo(p, d->id, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) ||
      n < 2)
    return status;
  char *log = malloc(n + 1);
  if (log && clGetProgramBuildInfo(p, d->id, CL_PROGRAM_BUILD_LOG, n, log,
                                   NULL) == CL_SUCCESS) {
    log[n] = '\0';
    size_t used = strlen(err);
    snprintf(err + used, err_len - used, ":\n%s", log);
  }
  free(log);
  return status;
}

/* Saves the binary of a freshly built program into the disk cache. A
 * failure only costs the cache. Lock held. */
static void binary_save(cldev *d, cl_program p, uint64_t key) {
  size_t len = 0;
  if (!d->rt->cache_dir ||
      clGetProgramInfo(p, CL_PROGRAM_BINARY_SIZES, sizeof len, &len, NULL) ||
      !len)
    return;
  unsigned char *bin = malloc(len);
  if (bin &&
      clGetProgramInfo(p, CL_PROGRAM_BINARIES, sizeof bin, &bin, NULL) ==
          CL_SUCCESS &&
      cache_store(d->rt->cache_dir, key, bin, len) == QS_OK)
    d->rt->stats.disk_writes++;
  free(bin);
}

/* Builds from memory, disk or source with the lock held. */
static int program_get(cldev *d, const char *label, const char *text,
                       const char *options, cl_program *out, double *seconds,
                       char *err, size_t err_len) {
  clrt *rt = d->rt;
  int status = queue_ensure(d, err, err_len);
  if (status) return status;
  uint64_t key = hash_str(HASH_SEED, text);
  key = hash_str(key, options);
  key = hash_str(key, d->info.fingerprint);
  key = hash_str(key, QS_VERSION_STRING);
  for (size_t i = 0; i < d->n_progs; i++) {
    if (d->progs[i].key != key) continue;
    if (d->progs[i].failure) {
      rt->stats.failures++;
      return fail_msg(err, err_len, d->progs[i].status, "%s (remembered)",
                      d->progs[i].failure);
    }
    rt->stats.memory_hits++;
    *out = d->progs[i].prog;
    return QS_OK;
  }
  if (grow((void **)&d->progs, &d->cap_progs, d->n_progs, sizeof *d->progs))
    return fail_msg(err, err_len, QS_ENOMEM, "building %s: out of memory",
                    label);
  int64_t t0 = qs_timer_ns();
  int injected = fault_ask(rt, CLRT_BUILD, label);
  if (injected) {
    status = build_failed(d, NULL, injected, label, options, err, err_len);
    size_t used = err ? strlen(err) : 0;
    if (err && used < err_len)
      snprintf(err + used, err_len - used, " (injected by the fault hook)");
    return status;
  }
  cl_program p = NULL;
  unsigned char *bin = NULL;
  size_t len = 0;
  if (rt->cache_dir && cache_load(rt->cache_dir, key, &bin, &len) == QS_OK) {
    p = load_binary(d, bin, len, options);
    free(bin);
    if (p) rt->stats.disk_hits++;
  }
  if (!p) {
    cl_int rc;
    size_t tlen = strlen(text);
    p = clCreateProgramWithSource(d->ctx, 1, &text, &tlen, &rc);
    if (!p) return build_failed(d, NULL, rc, label, options, err, err_len);
    rc = clBuildProgram(p, 1, &d->id, options, NULL, NULL);
    if (rc != CL_SUCCESS) {
      char msg[8192];
      status = build_failed(d, p, rc, label, options, msg, sizeof msg);
      clReleaseProgram(p);
      rt->stats.failures++;
      /* Only a compile error is certain to repeat; out of resources may
       * not. Without memory to remember it, it is simply tried again. */
      char *keep = status == QS_EBUILD ? malloc(strlen(msg) + 1) : NULL;
      if (keep) {
        strcpy(keep, msg);
        d->progs[d->n_progs].key = key;
        d->progs[d->n_progs].prog = NULL;
        d->progs[d->n_progs].status = status;
        d->progs[d->n_progs++].failure = keep;
      }
      return fail_msg(err, err_len, status, "%s", msg);
    }
    rt->stats.built++;
    binary_save(d, p, key);
  }
  d->progs[d->n_progs].key = key;
  d->progs[d->n_progs].prog = p;
  d->progs[d->n_progs].status = QS_OK;
  d->progs[d->n_progs++].failure = NULL;
  *out = p;
  if (seconds) *seconds = (double)(qs_timer_ns() - t0) * 1e-9;
  return QS_OK;
}

int cldev_program_text(cldev *d, const char *label, const char *text,
                       const char *options, cl_program *prog, double *seconds,
                       char *err, size_t err_len) {
  if (seconds) *seconds = 0;
  if (prog) *prog = NULL;
  if (!d || !text || !prog)
    return fail_msg(err, err_len, QS_EINVAL, "building %s: missing argument",
                    label ? label : "(unnamed)");
  pthread_mutex_lock(&d->rt->lock);
  int rc = program_get(d, label ? label : "(unnamed)", text,
                       options ? options : "", prog, seconds, err, err_len);
  pthread_mutex_unlock(&d->rt->lock);
  return rc;
}

int cldev_program(cldev *d, const char *file, const char *options,
                  cl_program *prog, double *seconds, char *err,
                  size_t err_len) {
  const char *text = cl_source(file, NULL);
  if (!text) {
    if (prog) *prog = NULL;
    if (seconds) *seconds = 0;
    return fail_msg(err, err_len, QS_EINVAL,
                    "no embedded OpenCL source named \"%s\"",
                    file ? file : "");
  }
  return cldev_program_text(d, file, text, options, prog, seconds, err,
                            err_len);
}

/* ------------------------------------------------------ buffers kept */

/* Flags of a buffer whose storage is the device's own: only those are
 * kept (one over host memory or with its contents copied in belongs to
 * its request). */
static int keepable(cl_mem_flags flags) {
  return !(flags & (CL_MEM_USE_HOST_PTR | CL_MEM_COPY_HOST_PTR |
                    CL_MEM_ALLOC_HOST_PTR));
}

/* The most bytes d keeps; under rt->lock. */
static uint64_t keep_max(const cldev *d) {
  return d->rt->keep >= 0 ? (uint64_t)d->rt->keep : d->info.global_mem / 4;
}

/* Releases the oldest kept buffers until at most `max` bytes stay; under
 * rt->lock. The released cl_mem go to out (room for d->n_kept), to be
 * released outside the lock; returns how many. */
static size_t kept_trim(cldev *d, uint64_t max, cl_mem *out) {
  size_t drop = 0;
  while (drop < d->n_kept && d->kept_bytes > max) {
    d->kept_bytes -= d->kept[drop].bytes;
    out[drop] = d->kept[drop].mem;
    drop++;
  }
  memmove(d->kept, d->kept + drop, (d->n_kept - drop) * sizeof *d->kept);
  d->n_kept -= drop;
  return drop;
}

/* Every kept buffer released (an allocation failed, or the end): the
 * list taken under the lock, released outside it. */
static void kept_drop_all(cldev *d) {
  pthread_mutex_lock(&d->rt->lock);
  kept_buf *all = d->kept;
  size_t n = d->n_kept;
  d->kept = NULL;
  d->n_kept = d->cap_kept = 0;
  d->kept_bytes = 0;
  pthread_mutex_unlock(&d->rt->lock);
  for (size_t i = 0; i < n; i++) clReleaseMemObject(all[i].mem);
  free(all);
}

/* A kept buffer of these flags and bytes, taken (the newest: the most
 * likely still in cache), or NULL. */
static cl_mem kept_take(cldev *d, cl_mem_flags flags, size_t bytes) {
  cl_mem m = NULL;
  pthread_mutex_lock(&d->rt->lock);
  for (size_t i = d->n_kept; i-- > 0 && !m;) {
    if (d->kept[i].flags != flags || d->kept[i].bytes != bytes) continue;
    m = d->kept[i].mem;
    d->kept_bytes -= bytes;
    memmove(d->kept + i, d->kept + i + 1,
            (d->n_kept - i - 1) * sizeof *d->kept);
    d->n_kept--;
    d->rt->stats.buffers_reused++;
  }
  pthread_mutex_unlock(&d->rt->lock);
  return m;
}

int cldev_buffer(cldev *d, cl_mem_flags flags, size_t bytes, void *host,
                 const char *what, cl_mem *mem, char *err, size_t err_len) {
  if (mem) *mem = NULL;
  if (!what) what = "buffer";
  if (!d || !mem || bytes == 0)
    return fail_msg(err, err_len, QS_EINVAL, "buffer %s: %s", what,
                    bytes ? "missing argument" : "zero bytes");
  pthread_mutex_lock(&d->rt->lock);
  int status = queue_ensure(d, err, err_len);
  cl_int rc = status ? CL_SUCCESS : fault_ask(d->rt, CLRT_BUFFER, what);
  cl_context ctx = d->ctx;
  pthread_mutex_unlock(&d->rt->lock);
  if (status) return status;
  if (rc == CL_SUCCESS && !host && keepable(flags))
    *mem = kept_take(d, flags, bytes);
  if (*mem) return QS_OK;
  int injected = rc != CL_SUCCESS;
  if (!injected) *mem = clCreateBuffer(ctx, flags, bytes, host, &rc);
  /* the kept buffers may be what the device lacks: once more without */
  if (!*mem && !injected && (rc == CL_MEM_OBJECT_ALLOCATION_FAILURE ||
                rc == CL_OUT_OF_RESOURCES || rc == CL_OUT_OF_HOST_MEMORY) &&
      d->n_kept) {
    kept_drop_all(d);
    *mem = clCreateBuffer(ctx, flags, bytes, host, &rc);
  }
  if (*mem) {
    pthread_mutex_lock(&d->rt->lock);
    d->rt->stats.buffers_made++;
    pthread_mutex_unlock(&d->rt->lock);
    return QS_OK;
  }
  char msg[256];
  snprintf(msg, sizeof msg, "buffer %s of %zu bytes (%.1f MiB) on %s", what,
           bytes, (double)bytes / (1024.0 * 1024.0), d->info.slug);
  return cl_status(rc ? rc : CL_MEM_OBJECT_ALLOCATION_FAILURE, msg, err,
                   err_len);
}

int cldev_kept_fill(cldev *d, unsigned char byte, size_t *n) {
  if (n) *n = 0;
  if (!d) return QS_EINVAL;
  pthread_mutex_lock(&d->rt->lock);
  cl_int rc = CL_SUCCESS;
  for (size_t i = 0; i < d->n_kept && rc == CL_SUCCESS; i++) {
    rc = clEnqueueFillBuffer(d->queue, d->kept[i].mem, &byte, 1, 0,
                             d->kept[i].bytes, 0, NULL, NULL);
    if (rc == CL_SUCCESS && n) (*n)++;
  }
  if (rc == CL_SUCCESS && d->queue) rc = clFinish(d->queue);
  pthread_mutex_unlock(&d->rt->lock);
  return cl_status(rc, "filling the kept buffers", NULL, 0);
}

void cldev_release(cldev *d, cl_mem mem) {
  if (!mem) return;
  cl_mem_flags flags = 0;
  size_t bytes = 0;
  cl_uint refs = 0;
  cl_mem parent = NULL;
  cl_context ctx = NULL;
  int keep =
      d &&
      clGetMemObjectInfo(mem, CL_MEM_FLAGS, sizeof flags, &flags, NULL) ==
          CL_SUCCESS &&
      clGetMemObjectInfo(mem, CL_MEM_SIZE, sizeof bytes, &bytes, NULL) ==
          CL_SUCCESS &&
      clGetMemObjectInfo(mem, CL_MEM_REFERENCE_COUNT, sizeof refs, &refs,
                         NULL) == CL_SUCCESS &&
      clGetMemObjectInfo(mem, CL_MEM_ASSOCIATED_MEMOBJECT, sizeof parent,
                         &parent, NULL) == CL_SUCCESS &&
      clGetMemObjectInfo(mem, CL_MEM_CONTEXT, sizeof ctx, &ctx, NULL) ==
          CL_SUCCESS &&
      refs == 1 && !parent && keepable(flags) && bytes > 0;
  cl_mem *out = NULL;
  size_t n_out = 0;
  if (d) {
    pthread_mutex_lock(&d->rt->lock);
    uint64_t max = keep_max(d);
    keep = keep && ctx == d->ctx && bytes <= max &&
           grow((void **)&d->kept, &d->cap_kept, d->n_kept,
                sizeof *d->kept) == QS_OK;
    if (keep) {
      d->kept[d->n_kept++] = (kept_buf){mem, flags, bytes};
      d->kept_bytes += bytes;
    }
    /* over the bound (this one, or a lowered bound): the oldest go;
     * without room for the list they stay until a next release */
    if (d->kept_bytes > max && (out = malloc(d->n_kept * sizeof *out)))
      n_out = kept_trim(d, max, out);
    pthread_mutex_unlock(&d->rt->lock);
  }
  if (!keep) clReleaseMemObject(mem);
  for (size_t i = 0; i < n_out; i++) clReleaseMemObject(out[i]);
  free(out);
}

int cldev_first_launch(cldev *d, const char *kernel, const size_t *global,
                       unsigned dims) {
  if (!d || !kernel || !global) return 0;
  uint64_t h = hash_str(HASH_SEED, kernel);
  h = hash_bytes(h, &dims, sizeof dims);
  h = hash_bytes(h, global, dims * sizeof *global);
  int first = 1;
  pthread_mutex_lock(&d->rt->lock);
  for (size_t i = 0; i < d->n_launches && first; i++)
    first = d->launches[i] != h;
  /* Without room to remember it, it will count as first again: harmless. */
  if (first && !grow((void **)&d->launches, &d->cap_launches, d->n_launches,
                     sizeof *d->launches))
    d->launches[d->n_launches++] = h;
  pthread_mutex_unlock(&d->rt->lock);
  return first;
}

double cl_event_seconds(cl_event ev) {
  cl_ulong t0 = 0, t1 = 0;
  if (!ev ||
      clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START, sizeof t0, &t0,
                              NULL) != CL_SUCCESS ||
      clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof t1, &t1,
                              NULL) != CL_SUCCESS ||
      t1 < t0)
    return 0;
  return (double)(t1 - t0) * 1e-9;
}

int cl_status(cl_int code, const char *what, char *err, size_t err_len) {
  if (code == CL_SUCCESS) return QS_OK;
  int status;
  switch (code) {
  case CL_MEM_OBJECT_ALLOCATION_FAILURE:
  case CL_OUT_OF_RESOURCES:
  case CL_OUT_OF_HOST_MEMORY:
  case CL_INVALID_BUFFER_SIZE:
    status = QS_EDEVMEM;
    break;
  case CL_BUILD_PROGRAM_FAILURE:
  case CL_COMPILE_PROGRAM_FAILURE:
  case CL_LINK_PROGRAM_FAILURE:
  case CL_INVALID_BUILD_OPTIONS:
  case CL_INVALID_BINARY:
    status = QS_EBUILD;
    break;
  default:
    status = QS_ECL;
  }
  return fail_msg(err, err_len, status, "%s: %s (%d)", what ? what : "OpenCL",
                  cl_code_name(code), (int)code);
}

static void dev_release(cldev *d) {
  kept_drop_all(d);
  for (size_t i = 0; i < d->n_progs; i++)
    if (d->progs[i].prog) clReleaseProgram(d->progs[i].prog);
  if (d->queue) clReleaseCommandQueue(d->queue);
  if (d->ctx) clReleaseContext(d->ctx);
}

#else
int cldev_bind(cldev *d, char *err, size_t err_len) {
  return fail_msg(err, err_len, d ? QS_EUNAVAIL : QS_EINVAL,
                  "built without OpenCL");
}
#endif /* QS_HAVE_OPENCL */

void cldev_transfer(cldev *d, uint64_t up, uint64_t down) {
  if (!d) return;
  atomic_fetch_add_explicit(&d->bytes_up, up, memory_order_relaxed);
  atomic_fetch_add_explicit(&d->bytes_down, down, memory_order_relaxed);
}

void cldev_transfers(cldev *d, uint64_t *up, uint64_t *down) {
  *up = d ? atomic_load_explicit(&d->bytes_up, memory_order_relaxed) : 0;
  *down = d ? atomic_load_explicit(&d->bytes_down, memory_order_relaxed) : 0;
}

void cldev_rate_note(cldev *d, uint64_t bytes, double seconds) {
  if (!d || !(seconds > 0)) return;
  pthread_mutex_lock(&d->rt->lock);
  d->rate_bytes += (double)bytes;
  d->rate_seconds += seconds;
  pthread_mutex_unlock(&d->rt->lock);
}

double cldev_rate(cldev *d) {
  if (!d) return 0;
  pthread_mutex_lock(&d->rt->lock);
  double r = d->rate_seconds > 0 ? d->rate_bytes / d->rate_seconds : 0;
  pthread_mutex_unlock(&d->rt->lock);
  return r;
}

/* ------------------------------------------------------------ open, close */

int clrt_open(clrt **out, int disabled, const char *cache_dir, char *err,
              size_t err_len) {
  *out = NULL;
  clrt *rt = calloc(1, sizeof *rt);
  if (!rt)
    return fail_msg(err, err_len, QS_ENOMEM, "clrt_open: out of memory");
  pthread_mutex_init(&rt->lock, NULL);
  rt->keep = -1;
  int status = QS_OK;
  if (cache_dir && *cache_dir) {
    rt->cache_dir = malloc(strlen(cache_dir) + 1);
    if (!rt->cache_dir)
      status = QS_ENOMEM;
    else
      strcpy(rt->cache_dir, cache_dir);
    size_t n = strlen(cache_dir) + sizeof "/" CACHE_LIST_DIR;
    if (status == QS_OK && !(rt->list_dir = malloc(n))) status = QS_ENOMEM;
    if (status == QS_OK)
      snprintf(rt->list_dir, n, "%s/" CACHE_LIST_DIR, cache_dir);
  }
  if (status == QS_OK && disabled) {
    snprintf(rt->why, sizeof rt->why,
             "OpenCL disabled (engine option no_opencl or "
             "QUICKSILVER_NO_OPENCL=1)");
  } else if (status == QS_OK) {
#if QS_HAVE_OPENCL
    /* the list cached by an earlier process, else the runtimes asked now
     * (and their answer cached) */
    if (list_take(rt)) {
      status = discover(rt);
      if (status == QS_OK) list_save(rt, rt->list_dir, rt->list_key);
    }
#else
    snprintf(rt->why, sizeof rt->why,
             "built without OpenCL (-Dopencl=disabled, or no OpenCL headers "
             "and ICD loader at build time)");
#endif
  }
  if (status) {
    clrt_close(rt);
    return fail_msg(err, err_len, status, "clrt_open: out of memory");
  }
  *out = rt;
  return QS_OK;
}

void clrt_close(clrt *rt) {
  if (!rt) return;
  for (size_t i = 0; i < rt->n; i++) {
#if QS_HAVE_OPENCL
    dev_release(&rt->devs[i]);
#endif
    for (size_t j = 0; j < rt->devs[i].n_progs; j++)
      free(rt->devs[i].progs[j].failure);
    free(rt->devs[i].progs);
    free(rt->devs[i].launches);
  }
  free(rt->devs);
  free(rt->cache_dir);
  free(rt->list_dir);
  pthread_mutex_destroy(&rt->lock);
  free(rt);
}
