/* store_int.h — what the store's own files share: the handle, its prepared
 * statements, the guarded step (the fault-injection seam), transactions and
 * the field tables that map rows to SQL columns and JSON members.
 * Not included outside db/. */
#ifndef QS_STORE_INT_H
#define QS_STORE_INT_H

#include <sqlite3.h>
#include <stddef.h>

#include <cJSON.h>

#include "engine/fail.h"
#include "store.h"

/* Statements prepared once per handle, after migration. Columns of `runs`
 * appear in run_fields order (RUN_COLS) so binding and reading loop over the
 * table. */
#define RUN_COLS                                                              \
  "stamp, method, impl, impl_version, device, key, work, params, wall, "      \
  "device_s, once_s, status, error"
#define DEVICE_COLS "fingerprint, name, info, first_seen, last_seen"

/* Numbers the rows of every group 1..n by id again: after deletions that
 * can leave gaps (rows older than a date, imports). */
#define SQL_RENUMBER                                                          \
  "UPDATE runs SET seq = r.n FROM (SELECT id, row_number() OVER (PARTITION "  \
  "BY method, impl, device, key ORDER BY id) AS n FROM runs) AS r WHERE "     \
  "runs.id = r.id AND runs.seq != r.n"

#define STORE_STMT_TABLE(X)                                                   \
  X(ST_BEGIN, "BEGIN IMMEDIATE")                                              \
  X(ST_BEGIN_READ, "BEGIN")                                                   \
  X(ST_COMMIT, "COMMIT")                                                      \
  /* A new row takes the next seq of its group (an index seek). */            \
  X(ST_INSERT, "INSERT INTO runs (" RUN_COLS ", seq) VALUES "                 \
               "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "    \
               "coalesce((SELECT max(seq) FROM runs WHERE method = ?2 AND "   \
               "impl = ?3 AND device = ?5 AND key = ?6), 0) + 1)")            \
  /* Deletes the rows of one group more than ?5 behind its newest: a range    \
   * of the group's index that holds only the rows deleted. */                \
  X(ST_TRIM, "DELETE FROM runs WHERE method = ?1 AND impl = ?2 AND "          \
             "device = ?3 AND key = ?4 AND seq <= (SELECT max(seq) FROM "     \
             "runs WHERE method = ?1 AND impl = ?2 AND device = ?3 AND "      \
             "key = ?4) - ?5")                                                \
  X(ST_RENUMBER, SQL_RENUMBER)                                                \
  X(ST_TRIM_ALL, "DELETE FROM runs WHERE id IN (SELECT id FROM (SELECT id, "  \
                 "row_number() OVER (PARTITION BY method, impl, device, key " \
                 "ORDER BY id DESC) AS n FROM runs) WHERE n > ?1)")           \
  X(ST_OLDER, "DELETE FROM runs WHERE stamp < ?1")                            \
  /* Identity of a run for import: same stamp, group and wall time. */        \
  X(ST_EXISTS, "SELECT 1 FROM runs WHERE method = ?2 AND impl = ?3 AND "      \
               "device = ?5 AND key = ?6 AND stamp = ?1 AND wall = ?9 "       \
               "LIMIT 1")                                                     \
  X(ST_DEVICE,                                                                \
    "INSERT INTO devices (" DEVICE_COLS ") VALUES "                           \
    "(?1, ?2, ?3, ?4, ?5) ON CONFLICT (fingerprint) DO UPDATE SET "           \
    "name = excluded.name, info = excluded.info, "                            \
    "first_seen = min(first_seen, excluded.first_seen), "                     \
    "last_seen = max(last_seen, excluded.last_seen)")                         \
  /* Import keeps the name and limits already known for a device and only     \
   * widens the seen interval. */                                             \
  X(ST_DEVICE_MERGE, "INSERT INTO devices (" DEVICE_COLS ") VALUES "          \
                     "(?1, ?2, ?3, ?4, ?5) ON CONFLICT (fingerprint) DO "     \
                     "UPDATE SET "                                            \
                     "first_seen = min(first_seen, excluded.first_seen), "    \
                     "last_seen = max(last_seen, excluded.last_seen)")        \
  X(ST_DEVICES, "SELECT " DEVICE_COLS " FROM devices ORDER BY fingerprint")   \
  X(ST_ALL, "SELECT " RUN_COLS ", id FROM runs ORDER BY id")

enum {
#define STORE_STMT_ENUM_(id, sql) id,
  STORE_STMT_TABLE(STORE_STMT_ENUM_)
#undef STORE_STMT_ENUM_
      ST_COUNT
};

/* Filters have four optional fields: one cached statement per subset. */
#define STORE_FILTER_SETS 16

struct store {
  sqlite3 *db;
  char *path;
  sqlite3_stmt *st[ST_COUNT];
  sqlite3_stmt *query[STORE_FILTER_SETS];
  sqlite3_stmt *forget[STORE_FILTER_SETS];
  long fault_nth; /* steps left before the injected failure; 0: none */
  int fault_code;
  int busy_ms;    /* lock wait of this handle (STORE_BUSY_MS or the knob) */
  int readonly;   /* the file could only be opened for reading */
  int checked;    /* the pre-write integrity check has run */
  /* Nonzero once the file was seen damaged (SQLITE_CORRUPT from any
   * statement, or the pre-write check): every later write is refused with
   * this status and broken_msg, for the life of the handle. */
  int broken;
  char broken_msg[512];
};

/* sqlite3_step through the fault-injection seam. Every step of the store
 * goes through here. */
int store_step(store *s, sqlite3_stmt *st);

/* Writes "timing store <path>: <what>: <sqlite's reason>" into err and
 * returns the status for rc (QS_EBUSY, QS_ECORRUPT, QS_ENOMEM or QS_EDB). */
int store_fail(store *s, int rc, const char *what, char *err, size_t err_len);

/* Runs one fixed statement to completion (BEGIN, COMMIT, ...) and resets
 * it. Returns the SQLite code (SQLITE_DONE on success). */
int store_exec(store *s, int stmt);

/* Starts a write transaction (BEGIN IMMEDIATE: waits up to the busy timeout
 * for other writers); on failure nothing is open. Refuses at once on a
 * handle that is read-only or was found damaged, and runs the pre-write
 * integrity check before the handle's first write (store.h). */
int store_begin(store *s, const char *what, char *err, size_t err_len);
/* Commits; on failure rolls back so that nothing is half-written. */
int store_commit(store *s, const char *what, char *err, size_t err_len);
/* Rolls back the open transaction, if any; never fails the caller. */
void store_rollback(store *s);

/* Inserts r (already checked by fields_check) inside an open transaction. */
int store_insert(store *s, const run_row *r, char *err, size_t err_len);

/* Inside an open transaction: trims every (method, impl, device, key) to
 * its newest `keep` rows and adds the number deleted to *n. */
int store_trim_all(store *s, size_t keep, size_t *n, char *err,
                   size_t err_len);

/* Current time in unix seconds (UTC). */
double store_now(void);

/* --------------------------------------------------------------- fields */

/* One member of a row struct, as a column and as a JSON member. */
typedef enum field_type { FIELD_REAL, FIELD_INT, FIELD_TEXT } field_type;
typedef struct field {
  const char *name;
  field_type type;
  size_t off;
  int required; /* text must be non-NULL and non-empty */
} field;

extern const field run_fields[];
extern const size_t n_run_fields;
extern const field device_fields[];
extern const size_t n_device_fields;

/* Binds the fields of obj to parameters 1..n of st. */
int fields_bind(sqlite3_stmt *st, const field *f, size_t n, const void *obj);
/* Reads columns 0..n-1 of the current row of st into obj; strings point
 * into the statement (valid until the next step or reset). */
void fields_read(sqlite3_stmt *st, const field *f, size_t n, void *obj);
/* A JSON object holding the fields of obj; NULL when out of memory. */
cJSON *fields_json(const field *f, size_t n, const void *obj);
/* Fills obj from a JSON object (strings point into it). Returns 0, or -1
 * with the offending member named in why. */
int fields_parse(const field *f, size_t n, const cJSON *o, void *obj,
                 char *why, size_t why_len);
/* Checks the values a row must satisfy before it is stored: required texts
 * present, reals finite. Returns 0, or -1 with the field named in why. */
int fields_check(const field *f, size_t n, const void *obj, char *why,
                 size_t why_len);

/* Binds the fields of obj to fixed statement `stmt`, steps it once and
 * resets it. Returns the SQLite code of the step (SQLITE_ROW, SQLITE_DONE
 * or the failure). */
int store_put(store *s, int stmt, const field *f, size_t n, const void *obj);

#endif
