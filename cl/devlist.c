/* devlist.c — the OpenCL devices found last time, kept as an entry of the
 * binary cache, so that a process that runs no OpenCL implementation does
 * not load the runtimes at all: PoCL's platform (LLVM with it) costs 25-35
 * ms and 60 MB of memory in every process that asks for platforms, three
 * times the whole of a small call from the command line.
 *
 * The entry's key hashes what decides which devices the ICD loader would
 * find: the vendor files (/etc/OpenCL/vendors or OCL_ICD_VENDORS) with
 * their sizes, times and contents, the libraries they name, the
 * environment variables the loader and the runtimes read, the CPUs this
 * process may use, and the GPU device nodes. Any change is a miss, and the
 * devices are discovered again. What the key cannot see (a GPU gone with
 * every file in place) shows at the first use of the device: clrt binds the
 * listed devices to the runtime's then, marks a missing one gone (its runs
 * fail with a message and the engine falls back) and stores the list anew. */
#define _GNU_SOURCE
#include "cl/devlist.h"

#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cl/cache.h"

extern char **environ;

#define LIST_MAGIC "QSDEVS1"
#define FILE_MAX 4096

/* The environment variables that can change the devices found. */
static int env_counts(const char *kv) {
  static const char *const prefixes[] = {
      "OCL_",  "OPENCL_", "POCL_",   "CUDA_",   "NVIDIA_", "ROCR_",
      "HIP_",  "GPU_",    "ZE_",     "SYCL_",   "RUSTICL_", "MESA_",
      "CL_",   "LD_LIBRARY_PATH=", "LD_PRELOAD="};
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
    if (!strncmp(kv, prefixes[i], strlen(prefixes[i]))) return 1;
  return 0;
}

static int str_cmp(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static uint64_t hash_stat(uint64_t h, const char *path) {
  struct stat st;
  h = hash_str(h, path);
  if (stat(path, &st)) return hash_str(h, "missing");
  int64_t v[3] = {(int64_t)st.st_size, (int64_t)st.st_mtim.tv_sec,
                  (int64_t)st.st_mtim.tv_nsec};
  return hash_bytes(h, v, sizeof v);
}

/* A library named by a vendor file: its path as written when absolute,
 * else as found in LD_LIBRARY_PATH and the usual directories. */
static uint64_t hash_library(uint64_t h, const char *name) {
  if (name[0] == '/') return hash_stat(h, name);
  char dirs[FILE_MAX] = "";
  const char *ld = getenv("LD_LIBRARY_PATH");
  snprintf(dirs, sizeof dirs, "%s%s/usr/local/lib:/usr/lib/x86_64-linux-gnu:"
           "/usr/lib/aarch64-linux-gnu:/usr/lib64:/usr/lib:/lib64:/lib",
           ld ? ld : "", ld && *ld ? ":" : "");
  char *save = NULL;
  for (char *d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
    char path[2 * FILE_MAX + 2];
    snprintf(path, sizeof path, "%s/%s", d, name);
    if (access(path, F_OK) == 0) return hash_stat(h, path);
  }
  return hash_str(h, name);
}

/* One vendor file: its stat, its text and the library it names. */
static uint64_t hash_vendor(uint64_t h, const char *path) {
  h = hash_stat(h, path);
  FILE *f = fopen(path, "r");
  if (!f) return h;
  char text[FILE_MAX];
  size_t n = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[n] = '\0';
  h = hash_str(h, text);
  text[strcspn(text, "\r\n")] = '\0';
  return text[0] ? hash_library(h, text) : h;
}

/* The entries of dir whose names pass keep(), sorted, each hashed by fn. */
static uint64_t hash_dir(uint64_t h, const char *dir,
                         int (*keep)(const char *name),
                         uint64_t (*fn)(uint64_t h, const char *path)) {
  DIR *d = opendir(dir);
  if (!d) return hash_str(h, "no dir");
  char **names = NULL;
  size_t n = 0, cap = 0;
  for (struct dirent *de; (de = readdir(d));) {
    if (!keep(de->d_name)) continue;
    if (n == cap) {
      size_t c = cap ? 2 * cap : 16;
      char **grown = realloc(names, c * sizeof *grown);
      if (!grown) break;
      names = grown, cap = c;
    }
    if (!(names[n] = strdup(de->d_name))) break;
    n++;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof *names, str_cmp);
  for (size_t i = 0; i < n; i++) {
    char path[2 * FILE_MAX + 2];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    h = fn(h, path);
    free(names[i]);
  }
  free(names);
  return h;
}

static int is_icd(const char *name) {
  size_t n = strlen(name);
  return n > 4 && !strcmp(name + n - 4, ".icd");
}

static int is_gpu_node(const char *name) {
  return !strncmp(name, "nvidia", 6) || !strcmp(name, "kfd") ||
         !strcmp(name, "dri") || !strcmp(name, "accel");
}

static uint64_t hash_name(uint64_t h, const char *path) {
  return hash_str(h, path);
}

uint64_t devlist_key(void) {
  uint64_t h = hash_str(HASH_SEED, LIST_MAGIC);
  size_t info_size = sizeof(cldev_info);
  h = hash_bytes(h, &info_size, sizeof info_size);
  /* the environment that counts, sorted */
  size_t n = 0;
  for (char **e = environ; e && *e; e++) n += env_counts(*e);
  const char **kv = n ? malloc(n * sizeof *kv) : NULL;
  size_t k = 0;
  for (char **e = environ; kv && e && *e; e++)
    if (env_counts(*e)) kv[k++] = *e;
  if (k) qsort(kv, k, sizeof *kv, str_cmp);
  for (size_t i = 0; i < k; i++) h = hash_str(h, kv[i]);
  free(kv);
  h = hash_bytes(h, &k, sizeof k);
  /* the vendor files, and the libraries they name */
  const char *vendors = getenv("OCL_ICD_VENDORS");
  struct stat st;
  if (vendors && *vendors && !stat(vendors, &st) && !S_ISDIR(st.st_mode))
    h = hash_vendor(h, vendors);
  else
    h = hash_dir(h, vendors && *vendors ? vendors : "/etc/OpenCL/vendors",
                 is_icd, hash_vendor);
  /* the CPUs this process may use (a CPU device counts them) */
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  cpu_set_t set;
  int allowed = sched_getaffinity(0, sizeof set, &set) ? -1 : CPU_COUNT(&set);
  h = hash_bytes(h, &online, sizeof online);
  h = hash_bytes(h, &allowed, sizeof allowed);
  /* the GPUs' device nodes */
  return hash_dir(h, "/dev", is_gpu_node, hash_name);
}

int devlist_load(const char *dir, uint64_t key, cldev_info **out, size_t *n) {
  *out = NULL;
  *n = 0;
  unsigned char *bin;
  size_t len;
  if (!dir || cache_load(dir, key, &bin, &len)) return -1;
  uint32_t head[2];
  int rc = -1;
  if (len >= 8 + sizeof head && !memcmp(bin, LIST_MAGIC, 8)) {
    memcpy(head, bin + 8, sizeof head);
    size_t count = head[1];
    if (head[0] == sizeof(cldev_info) && count > 0 &&
        len == 8 + sizeof head + count * sizeof(cldev_info) &&
        (*out = malloc(count * sizeof **out))) {
      memcpy(*out, bin + 8 + sizeof head, count * sizeof **out);
      /* every string ends inside its field, whatever the file held */
      for (size_t i = 0; i < count; i++) {
        cldev_info *d = &(*out)[i];
        d->slug[sizeof d->slug - 1] = d->fingerprint[16] = '\0';
        d->platform[sizeof d->platform - 1] = '\0';
        d->vendor[sizeof d->vendor - 1] = d->name[sizeof d->name - 1] = '\0';
        d->driver[sizeof d->driver - 1] = '\0';
        d->version[sizeof d->version - 1] = '\0';
      }
      *n = count;
      rc = 0;
    }
  }
  free(bin);
  return rc;
}

void devlist_store(const char *dir, uint64_t key, const cldev_info *infos,
                   size_t n) {
  if (!dir || !n) return;
  uint32_t head[2] = {(uint32_t)sizeof(cldev_info), (uint32_t)n};
  size_t len = 8 + sizeof head + n * sizeof *infos;
  unsigned char *bin = calloc(1, len);
  if (!bin) return;
  memcpy(bin, LIST_MAGIC, 8);
  memcpy(bin + 8, head, sizeof head);
  memcpy(bin + 8 + sizeof head, infos, n * sizeof *infos);
  cache_store(dir, key, bin, len); /* not stored: discovered next time */
  free(bin);
}
