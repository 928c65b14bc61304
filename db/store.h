/* store.h — the SQLite timing store: one row per timed run (or failure),
 * devices, bounded history, export and import.
 *
 * The store knows nothing of methods or OpenCL: rows are plain data. Every
 * function returns a status from quicksilver.h and, on failure, writes a
 * message into err (which may be NULL). A store handle is used by one thread
 * at a time; several handles (threads or processes) may share one file. */
#ifndef QS_STORE_H
#define QS_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "quicksilver.h"

typedef struct store store;

/* Newest runs kept per (method, impl, device, key): "newest" is the order
 * of insertion (the row id), which is also the order of query results. */
#define STORE_KEEP 200
/* PRAGMA user_version of the current database schema. */
#define STORE_SCHEMA 2
/* Version of the export document ("schema" member); independent of the
 * database schema, so exports move between stores of other versions. */
#define STORE_DOC_SCHEMA 1
/* How long a writer waits for another one before QS_EBUSY; the
 * environment variable QUICKSILVER_DB_WAIT_MS (0 to 600000) replaces it. */
#define STORE_BUSY_MS 10000
/* Before its first write a handle checks its file: that it holds whole
 * pages, then SQLite's integrity_check up to STORE_DEEP_CHECK_BYTES (about
 * 6 ms per MiB) or quick_check up to STORE_CHECK_MAX_BYTES (about 1.5 ms
 * per MiB); larger files rely on SQLITE_CORRUPT from the statements. */
#define STORE_CHECK_MAX_BYTES ((long long)32 << 20)
#define STORE_DEEP_CHECK_BYTES ((long long)4 << 20)

typedef struct run_row {
  int64_t id;   /* assigned by the store; ignored on input */
  double stamp; /* unix seconds (UTC) */
  const char *method;
  const char *impl;
  int impl_version;
  const char *device; /* device fingerprint; "cpu" for CPU impls */
  const char *key;    /* canonical key text */
  double work;        /* scalar work size */
  const char *params; /* parameters as JSON text */
  double wall;        /* wall seconds (steady state) */
  double device_s;    /* device seconds (OpenCL) or 0 */
  double once_s;      /* one-time seconds (build, first launch) */
  int status;         /* QS_OK or the failure's status */
  const char *error;  /* error text or "" */
} run_row;

/* Opens (creating directories and the file as needed) and migrates the
 * store: WAL, busy timeout STORE_BUSY_MS, synchronous=NORMAL. ":memory:" is
 * allowed (a private store that lives as long as the handle). A file that
 * is not a database or is damaged gives QS_ECORRUPT and a message that
 * names the path; nothing is changed on disk. A file from a newer schema
 * gives QS_ESCHEMA, another program's SQLite database (tables but no
 * user_version) QS_EFORMAT, both left untouched. Directories that cannot be
 * made: QS_EIO. A malformed QUICKSILVER_DB_WAIT_MS: QS_EENV. On failure *s
 * is NULL. Close with store_close.
 *
 * A file this process may only read (permissions, read-only mount) opens
 * for reading: queries work, every write is refused with QS_EIO.
 * Damage the open-time probes cannot see (a page in the middle, the end
 * cut off) is looked for before the handle's first write
 * (STORE_CHECK_MAX_BYTES); damage found then, or SQLITE_CORRUPT from any
 * statement later, makes the handle refuse every further write with
 * QS_ECORRUPT, so a damaged file is never written into. */
int store_open(store **s, const char *path, char *err, size_t err_len);
void store_close(store *s);
const char *store_path(const store *s);

/* Appends a row and trims the history of its (method, impl, device, key)
 * to the newest STORE_KEEP rows, in one transaction: on any failure nothing
 * is written. The store assigns the id; a stamp <= 0 means now. method,
 * impl, device and key must be non-empty; params NULL is stored as "{}",
 * error NULL as ""; every real must be finite (else QS_EINVAL naming the
 * field). Another writer holding the file past STORE_BUSY_MS: QS_EBUSY. */
int store_record(store *s, const run_row *r, char *err, size_t err_len);

/* store_record for n rows in one transaction (all or none): the per-row
 * cost falls several-fold because the commit is paid once (see
 * bench/store.c). Rows are checked before anything is written; a bad one
 * gives QS_EINVAL naming its index. */
int store_record_batch(store *s, const run_row *rows, size_t n, char *err,
                       size_t err_len);

/* Records or refreshes a device: fingerprint, a display name and a JSON
 * object of its limits (NULL: "{}"); first seen is kept, last seen is now. */
int store_device(store *s, const char *fingerprint, const char *name,
                 const char *info_json, char *err, size_t err_len);

/* Moves every run recorded under fingerprint `from` to `to` (the same
 * device under another fingerprint: an identity that changed its scheme),
 * keeps the earlier first sighting on `to`'s device row and removes
 * `from`'s, in one transaction; the joined groups are bounded to
 * STORE_KEEP as any. *moved (may be NULL): runs moved. */
int store_device_merge(store *s, const char *from, const char *to,
                       size_t *moved, char *err, size_t err_len);

/* A known device; first_seen and last_seen in unix seconds. */
typedef struct device_row {
  const char *fingerprint;
  const char *name;
  const char *info; /* JSON text */
  double first_seen, last_seen;
} device_row;

/* Calls fn for every device, by fingerprint. fn returns nonzero to stop
 * (that value is returned); strings are valid only during the callback. */
typedef int (*store_device_fn)(void *ctx, const device_row *d);
int store_devices(store *s, store_device_fn fn, void *ctx, char *err,
                  size_t err_len);

/* Rows matching every non-NULL field, newest first, at most `limit` (0: no
 * limit). fn returns nonzero to stop early (that value is returned). The
 * row's strings are valid only during the callback, and fn must not call
 * into the same handle. */
typedef struct store_filter {
  const char *method, *impl, *device, *key;
  size_t limit;
} store_filter;
typedef int (*store_row_fn)(void *ctx, const run_row *r);
int store_query(store *s, const store_filter *f, store_row_fn fn, void *ctx,
                char *err, size_t err_len);

/* Keeps the newest `keep` rows per (method, impl, device, key) (0: no
 * limit) and drops rows older than `older_than_days` (<= 0: no limit). */
int store_prune(store *s, size_t keep, double older_than_days, size_t *removed,
                char *err, size_t err_len);

/* Deletes the rows matching every non-NULL field of f (limit ignored). */
int store_forget(store *s, const store_filter *f, size_t *removed, char *err,
                 size_t err_len);

/* Writes every row and device as one JSON document to path, atomically
 * (a temporary file beside it, synced, then renamed): either the old file
 * or the complete new one is there. The document is
 *   {"schema": STORE_DOC_SCHEMA, "devices": [{fingerprint, name, info,
 *    first_seen, last_seen}...], "runs": [{stamp, method, ... error}...]}
 * with runs oldest first; params and info stay JSON text (strings), so an
 * import gives back the same bytes. It is streamed: memory does not grow
 * with the store. File errors: QS_EIO naming the path. */
int store_export(store *s, const char *path, char *err, size_t err_len);

/* Reads a document written by store_export and adds its rows in one
 * transaction. A row already present (same stamp, method, impl, device, key
 * and wall) is skipped; devices are merged (known ones keep their name and
 * limits). A malformed row (a member missing, of the wrong type, not
 * finite) is rejected: the import is then refused as a whole with
 * QS_EFORMAT, *rejected counting every malformed row and err naming the
 * first one, because a file with damaged rows is not one store_export wrote
 * and its other rows cannot be trusted either. Any error (unreadable file:
 * QS_EIO; invalid JSON or no "runs" array: QS_EFORMAT; "schema" missing:
 * QS_EFORMAT, another version: QS_ESCHEMA; a store error) changes nothing
 * and leaves *added and *skipped 0. Groups over STORE_KEEP afterwards are
 * trimmed to their newest rows. The counters may be NULL. */
int store_import(store *s, const char *path, size_t *added, size_t *skipped,
                 size_t *rejected, char *err, size_t err_len);

/* SQLite's integrity check; QS_ECORRUPT with the first problems in err. */
int store_check(store *s, char *err, size_t err_len);

/* QS_OK while the handle may write; else the status every write now gets
 * (QS_EIO read-only, QS_ECORRUPT damaged) with the reason in err. */
int store_writable(const store *s, char *err, size_t err_len);

/* Moves a store file that store_open refused (and its -wal and -shm files)
 * aside to "<path>.corrupt-<unix seconds>", never overwriting anything, so
 * the next store_open starts a new store. The new name goes to moved (may
 * be NULL). The file must not be open. QS_EIO naming the path on failure. */
int store_move_aside(const char *path, char *moved, size_t moved_len,
                     char *err, size_t err_len);

/* Deletes a store file that no handle has open, with its -wal and -shm
 * companions; files already absent are not an error. QS_EIO naming the
 * file otherwise. */
int store_unlink(const char *path, char *err, size_t err_len);

/* Fault injection for tests: the nth sqlite3_step from now (1: the next)
 * returns `code` (an SQLite result code such as SQLITE_BUSY or
 * SQLITE_IOERR) without running; n <= 0 turns injection off. */
void store_fault(store *s, long nth, int code);

#endif
