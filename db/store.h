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

/* Newest runs kept per (method, impl, device, key). */
#define STORE_KEEP 200
/* PRAGMA user_version of the current schema. */
#define STORE_SCHEMA 1

typedef struct run_row {
  int64_t id;            /* assigned by the store */
  double stamp;          /* unix seconds (UTC) */
  const char *method;
  const char *impl;
  int impl_version;
  const char *device;    /* device fingerprint; "cpu" for CPU impls */
  const char *key;       /* canonical key text */
  double work;           /* scalar work size */
  const char *params;    /* parameters as JSON text */
  double wall;           /* wall seconds (steady state) */
  double device_s;       /* device seconds (OpenCL) or 0 */
  double once_s;         /* one-time seconds (build, first launch) */
  int status;            /* QS_OK or the failure's status */
  const char *error;     /* error text or "" */
} run_row;

/* Opens (creating directories and the file as needed) and migrates the
 * store: WAL, busy timeout, synchronous=NORMAL. ":memory:" is allowed.
 * A file that is not a database or is damaged gives QS_ECORRUPT and a
 * message that names the path; nothing is changed on disk. A file from a
 * newer schema gives QS_ESCHEMA. */
int store_open(store **s, const char *path, char *err, size_t err_len);
void store_close(store *s);
const char *store_path(const store *s);

/* Appends a row (its id and stamp are set if stamp <= 0) and trims the
 * history of its (method, impl, device, key) to STORE_KEEP rows. */
int store_record(store *s, const run_row *r, char *err, size_t err_len);

/* Records or refreshes a device: fingerprint, a display name and a JSON
 * object of its limits. */
int store_device(store *s, const char *fingerprint, const char *name,
                 const char *info_json, char *err, size_t err_len);

/* Rows matching every non-NULL field, newest first, at most `limit` (0: no
 * limit). fn returns nonzero to stop early (that value is returned). The
 * row's strings are valid only during the callback. */
typedef struct store_filter {
  const char *method, *impl, *device, *key;
  size_t limit;
} store_filter;
typedef int (*store_row_fn)(void *ctx, const run_row *r);
int store_query(store *s, const store_filter *f, store_row_fn fn, void *ctx,
                char *err, size_t err_len);

/* Keeps the newest `keep` rows per (method, impl, device, key) (0: no
 * limit) and drops rows older than `older_than_days` (<= 0: no limit). */
int store_prune(store *s, size_t keep, double older_than_days,
                size_t *removed, char *err, size_t err_len);

/* Deletes the rows matching every non-NULL field of f (limit ignored). */
int store_forget(store *s, const store_filter *f, size_t *removed, char *err,
                 size_t err_len);

/* Writes every row and device as one JSON document (with the schema
 * version) to path, atomically (temporary file and rename). */
int store_export(store *s, const char *path, char *err, size_t err_len);

/* Reads a document written by store_export and adds its rows in one
 * transaction: rows already present are skipped, malformed rows are
 * rejected; any error (unreadable file, bad JSON, another schema version)
 * changes nothing. */
int store_import(store *s, const char *path, size_t *added, size_t *skipped,
                 size_t *rejected, char *err, size_t err_len);

/* SQLite's integrity check; QS_ECORRUPT with the first problems in err. */
int store_check(store *s, char *err, size_t err_len);

#endif
