/* cache.c — the on-disk cache of built program binaries, and the FNV-1a
 * hash that keys it and the device fingerprints.
 *
 * An entry is one file "<key>.bin": a 32-byte header (magic, key, payload
 * length, payload checksum (cache_sum), each 8 bytes, integers
 * little-endian) and the payload. Anything that does not check out in
 * full is a miss, never trusted: the caller rebuilds and overwrites it. */
#include "cl/cache.h"
#include "cl/clrt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quicksilver.h"

/* 2: the payload's checksum is cache_sum (1 had FNV-1a byte by byte,
 * 9 ms of a fresh process's first OpenCL call on PoCL's 6 MB binaries). */
#define MAGIC "QSCLBIN2"
#define HEAD 32
#define PAD 256
/* Larger binaries than this are taken for corruption (PoCL's are < 1 MB). */
#define MAX_PAYLOAD ((uint64_t)1 << 30)

uint64_t hash_bytes(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

uint64_t hash_str(uint64_t h, const char *s) {
  return hash_bytes(h, s ? s : "", (s ? strlen(s) : 0) + 1);
}

/* One lane of cache_sum: a bijection of h for each word and of the word
 * for each h (xor, an odd multiplier, a rotation, an odd multiplier), so
 * a changed word always changes its lane's state from there on. */
static uint64_t sum_lane(uint64_t h, uint64_t w) {
  h ^= w * 0x9e3779b97f4a7c15ull;
  h = (h << 27) | (h >> 37);
  return h * 0xff51afd7ed558ccdull;
}

uint64_t cache_sum(const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t lane[4] = {1, 2, 3, 4};
  size_t at = 0;
  /* four independent lanes of 8-byte words: about 8 bytes a cycle where
   * FNV-1a takes a multiply's latency per byte */
  for (; at + 32 <= n; at += 32)
    for (int k = 0; k < 4; k++) {
      uint64_t w;
      memcpy(&w, p + at + 8 * (size_t)k, sizeof w);
      lane[k] = sum_lane(lane[k], w);
    }
  uint64_t h = hash_bytes(HASH_SEED, lane, sizeof lane);
  h = hash_bytes(h, p + at, n - at);
  uint64_t len = n;
  return hash_bytes(h, &len, sizeof len);
}

static void put_u64(unsigned char *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get_u64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

int cache_path(const char *dir, uint64_t key, char *path, size_t len) {
  int n = snprintf(path, len, "%s/%016llx.bin", dir, (unsigned long long)key);
  return n < 0 || (size_t)n >= len ? QS_EOVERFLOW : QS_OK;
}

int cache_load(const char *dir, uint64_t key, unsigned char **bin,
               size_t *len) {
  char path[4096];
  *bin = NULL;
  *len = 0;
  if (cache_path(dir, key, path, sizeof path)) return QS_EOVERFLOW;
  FILE *f = fopen(path, "rb");
  if (!f) return QS_EIO;
  unsigned char head[HEAD];
  int rc = QS_EFORMAT;
  unsigned char *buf = NULL;
  if (fread(head, 1, HEAD, f) != HEAD || memcmp(head, MAGIC, 8) ||
      get_u64(head + 8) != key)
    goto out;
  uint64_t n = get_u64(head + 16);
  if (n == 0 || n > MAX_PAYLOAD) goto out;
  /* Zeroed slack after the payload: a driver parsing a short binary's
   * header may read past its end (PoCL 3.1 reads a fixed-size header in
   * 16-byte loads), so that read stays inside this block. */
  buf = calloc(1, (size_t)n + PAD);
  if (!buf) {
    rc = QS_ENOMEM;
    goto out;
  }
  /* Exactly n bytes, then end of file: a longer file is not this entry. */
  if (fread(buf, 1, (size_t)n, f) != n || fgetc(f) != EOF ||
      cache_sum(buf, (size_t)n) != get_u64(head + 24))
    goto out;
  *bin = buf;
  *len = (size_t)n;
  buf = NULL;
  rc = QS_OK;
  /* A hit makes the entry recent, so pruning drops the unused ones. */
  utimensat(AT_FDCWD, path, NULL, 0);
out:
  free(buf);
  fclose(f);
  return rc;
}

/* mkdir -p with mode 0755; QS_OK if dir exists as a directory after. */
static int make_dirs(const char *dir) {
  char p[4096];
  size_t n = strlen(dir);
  if (n == 0 || n >= sizeof p) return QS_EINVAL;
  memcpy(p, dir, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (p[i] != '/' && p[i] != '\0') continue;
    char c = p[i];
    p[i] = '\0';
    if (mkdir(p, 0755) && errno != EEXIST) return QS_EIO;
    p[i] = c;
  }
  struct stat st;
  return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? QS_OK : QS_EIO;
}

int cache_store(const char *dir, uint64_t key, const unsigned char *bin,
                size_t len) {
  char path[4096], tmp[4096 + 16];
  if (!len || cache_path(dir, key, path, sizeof path)) return QS_EINVAL;
  if (make_dirs(dir)) return QS_EIO;
  snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
  int fd = mkstemp(tmp);
  if (fd < 0) return QS_EIO;
  FILE *f = fdopen(fd, "wb");
  if (!f) {
    close(fd);
    unlink(tmp);
    return QS_EIO;
  }
  unsigned char head[HEAD];
  memcpy(head, MAGIC, 8);
  put_u64(head + 8, key);
  put_u64(head + 16, len);
  put_u64(head + 24, cache_sum(bin, len));
  /* No fsync: a torn entry after a crash fails its checksum and is rebuilt,
   * which is cheaper than syncing every build. */
  int bad = fwrite(head, 1, HEAD, f) != HEAD || fwrite(bin, 1, len, f) != len;
  bad |= fclose(f) != 0;
  /* mkstemp gives 0600; entries are as shareable as the directory. */
  if (!bad) bad = chmod(tmp, 0644) != 0;
  if (!bad) bad = rename(tmp, path) != 0;
  if (bad) {
    unlink(tmp);
    return QS_EIO;
  }
  cache_prune(dir, CACHE_MAX_ENTRIES);
  return QS_OK;
}

/* An entry's name: 16 hex digits, ".bin", and for a temporary file a
 * ".XXXXXX" suffix from mkstemp. */
static int is_entry(const char *name) {
  size_t hex = strspn(name, "0123456789abcdef");
  if (hex != 16 || strncmp(name + 16, ".bin", 4)) return 0;
  return name[20] == '\0' || (name[20] == '.' && strlen(name + 21) == 6);
}

/* Removes the entries of dir, adding their count to *removed. */
static int clear_entries(const char *dir, size_t *removed) {
  DIR *d = opendir(dir);
  if (!d) return errno == ENOENT ? QS_OK : QS_EIO;
  int rc = QS_OK;
  struct dirent *e;
  char path[4096];
  while ((e = readdir(d))) {
    if (!is_entry(e->d_name)) continue;
    int n = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (n < 0 || (size_t)n >= sizeof path || unlink(path)) {
      rc = QS_EIO;
      continue;
    }
    if (removed) (*removed)++;
  }
  closedir(d);
  return rc;
}

int cl_cache_clear(const char *dir, size_t *removed) {
  if (removed) *removed = 0;
  if (!dir) return QS_EINVAL;
  /* the device list (devlist.c) in its own folder, then the binaries */
  char list[4096];
  int n = snprintf(list, sizeof list, "%s/" CACHE_LIST_DIR, dir);
  if (n < 0 || (size_t)n >= sizeof list) return QS_EOVERFLOW;
  int rc = clear_entries(list, removed);
  if (rc == QS_OK && rmdir(list) && errno != ENOENT) rc = QS_EIO;
  int rc2 = clear_entries(dir, removed);
  return rc ? rc : rc2;
}

typedef struct aged {
  char name[32];
  struct timespec mtime;
} aged;

static int aged_cmp(const void *a, const void *b) {
  const struct timespec *x = &((const aged *)a)->mtime;
  const struct timespec *y = &((const aged *)b)->mtime;
  if (x->tv_sec != y->tv_sec) return x->tv_sec < y->tv_sec ? -1 : 1;
  return (x->tv_nsec > y->tv_nsec) - (x->tv_nsec < y->tv_nsec);
}

void cache_prune(const char *dir, size_t keep) {
  DIR *d = opendir(dir);
  if (!d) return;
  aged *all = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  char path[4096];
  while ((e = readdir(d))) {
    struct stat st;
    if (!is_entry(e->d_name) || strlen(e->d_name) != 20) continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    if (stat(path, &st)) continue;
    if (n == cap) {
      aged *more = realloc(all, (cap = cap ? 2 * cap : 64) * sizeof *all);
      if (!more) break;
      all = more;
    }
    snprintf(all[n].name, sizeof all[n].name, "%s", e->d_name);
    all[n++].mtime = st.st_mtim;
  }
  closedir(d);
  if (n > keep) {
    qsort(all, n, sizeof *all, aged_cmp);
    for (size_t i = 0; i < n - keep; i++) {
      snprintf(path, sizeof path, "%s/%s", dir, all[i].name);
      unlink(path);
    }
  }
  free(all);
}
