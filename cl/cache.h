/* cache.h — internals of cl/: the hash behind fingerprints and cache keys,
 * and the on-disk program binary cache. Not used outside cl/. */
#ifndef QS_CL_CACHE_H
#define QS_CL_CACHE_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a 64: h = hash_bytes(HASH_SEED, ...) then chained over more data. */
#define HASH_SEED 0xcbf29ce484222325ull
uint64_t hash_bytes(uint64_t h, const void *data, size_t n);
/* Hashes a string and its terminating NUL, so ("ab","c") != ("a","bc"). */
uint64_t hash_str(uint64_t h, const char *s);

/* The checksum of a cache entry's payload: 64 bits over 8-byte words in
 * four lanes, then FNV-1a over the lanes, the tail and the length. The
 * machine's byte order is part of it (entries are not shared between
 * machines of different orders; such an entry is a miss). */
uint64_t cache_sum(const void *data, size_t n);

/* Writes "<dir>/<16 hex of key>.bin" into path (len >= 4096 is ample);
 * QS_EOVERFLOW if it does not fit. */
int cache_path(const char *dir, uint64_t key, char *path, size_t len);

/* Reads the entry for key from dir. QS_OK with *bin (malloc'd, the caller
 * frees; zero bytes follow the payload as slack for careless parsers) and
 * *len; otherwise a nonzero status and nothing allocated: the
 * file is missing, unreadable, truncated, from another key or corrupt
 * (magic, length and checksum are all checked). */
int cache_load(const char *dir, uint64_t key, unsigned char **bin,
               size_t *len);

/* Stores bin[0..len) for key in dir, creating dir (and its parents) if
 * needed: a temporary file in dir renamed over the entry, so readers see
 * the old entry or the whole new one. A nonzero status means nothing was
 * stored (unwritable directory, full disk); the caller just goes on. */
int cache_store(const char *dir, uint64_t key, const unsigned char *bin,
                size_t len);

/* The folder of the binary cache's directory that holds the device list
 * (devlist.c), which cl_cache_clear removes too. */
#define CACHE_LIST_DIR "devices"

/* Entries the cache keeps; cache_store prunes beyond this. */
#define CACHE_MAX_ENTRIES 256

/* Removes the least recently used entries of dir (by modification time,
 * which cache_load refreshes on every hit) until at most keep remain.
 * Temporary files are left to cl_cache_clear. Errors are ignored: pruning
 * only bounds the directory's size. */
void cache_prune(const char *dir, size_t keep);

#endif
