/* store.c — the SQLite timing store: opening (with the checks that keep a
 * damaged file untouched), schema migrations, recording, queries, pruning
 * and the integrity check. Export and import live in transfer.c.
 *
 * Every write is one short transaction opened with BEGIN IMMEDIATE, so a
 * writer waits (up to STORE_BUSY_MS) for the write lock before it reads
 * anything and never has to be restarted; on any failure the transaction is
 * rolled back and nothing is half-written. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store_int.h"

/* Forward migrations: entry v takes a store from user_version v to v + 1.
 * Each runs in its own transaction together with the version bump. Never
 * edit a shipped entry; append one. */
static const char *const migrations[] = {
    /* 0 -> 1 */
    "CREATE TABLE devices ("
    " fingerprint TEXT PRIMARY KEY NOT NULL,"
    " name TEXT NOT NULL,"
    " info TEXT NOT NULL,"
    " first_seen REAL NOT NULL,"
    " last_seen REAL NOT NULL);"
    "CREATE TABLE runs ("
    " id INTEGER PRIMARY KEY,"
    " stamp REAL NOT NULL,"
    " method TEXT NOT NULL,"
    " impl TEXT NOT NULL,"
    " impl_version INTEGER NOT NULL,"
    " device TEXT NOT NULL,"
    " key TEXT NOT NULL,"
    " work REAL NOT NULL,"
    " params TEXT NOT NULL,"
    " wall REAL NOT NULL,"
    " device_s REAL NOT NULL,"
    " once_s REAL NOT NULL,"
    " status INTEGER NOT NULL,"
    " error TEXT NOT NULL);"
    "CREATE INDEX runs_group ON runs (method, impl, device, key, id);",
    /* 1 -> 2: seq numbers the rows of each group 1, 2, 3... in insertion
     * order, without gaps, so that trimming a full group is one index range
     * "seq <= newest - STORE_KEEP" instead of a walk over STORE_KEEP index
     * entries (about 15 us per record). */
    "ALTER TABLE runs ADD COLUMN seq INTEGER NOT NULL DEFAULT 0;"
    "UPDATE runs SET seq = r.n FROM (SELECT id, row_number() OVER (PARTITION"
    " BY method, impl, device, key ORDER BY id) AS n FROM runs) AS r"
    " WHERE runs.id = r.id;"
    "DROP INDEX runs_group;"
    "CREATE INDEX runs_seq ON runs (method, impl, device, key, seq);",
};
_Static_assert(sizeof migrations / sizeof migrations[0] == STORE_SCHEMA,
               "one migration per schema version");

static const char *const stmt_sql[] = {
#define STORE_STMT_SQL_(id, sql) sql,
    STORE_STMT_TABLE(STORE_STMT_SQL_)
#undef STORE_STMT_SQL_
};

/* The filterable fields, in the bit order of a filter set. */
static const char *const filter_cols[] = {"method", "impl", "device", "key"};

/* ------------------------------------------------------------- helpers */

static int status_of(int rc) {
  switch (rc & 0xff) {
  case SQLITE_BUSY:
  case SQLITE_LOCKED:
    return QS_EBUSY;
  case SQLITE_CORRUPT:
  case SQLITE_NOTADB:
    return QS_ECORRUPT;
  case SQLITE_NOMEM:
    return QS_ENOMEM;
  default:
    return QS_EDB;
  }
}

/* The message of a file that store_open refuses and nobody should write. */
static int corrupt_msg(const char *path, const char *why, char *err,
                       size_t err_len) {
  return fail_msg(err, err_len, QS_ECORRUPT,
                  "timing store %s is not a database or is damaged (%s); "
                  "it was left unchanged: move it aside (`quicksilver db "
                  "check` offers to) and a new store will be created",
                  path, why);
}

/* From now on the handle refuses to write: the file is damaged. */
static void store_broken(store *s, const char *why) {
  if (s->broken) return;
  s->broken = QS_ECORRUPT;
  corrupt_msg(s->path, why, s->broken_msg, sizeof s->broken_msg);
}

static int is_corrupt(int rc) {
  return (rc & 0xff) == SQLITE_CORRUPT || (rc & 0xff) == SQLITE_NOTADB;
}

int store_writable(const store *s, char *err, size_t err_len) {
  if (!s) return fail_msg(err, err_len, QS_EINVAL, "no store");
  if (s->broken)
    return fail_msg(err, err_len, s->broken,
                    "%s; nothing more is written "
                    "to it by this process",
                    s->broken_msg);
  if (s->readonly)
    return fail_msg(err, err_len, QS_EIO,
                    "timing store %s can only be read (file permissions or "
                    "a read-only file system): nothing is written to it",
                    s->path);
  return QS_OK;
}

int store_fail(store *s, int rc, const char *what, char *err, size_t err_len) {
  int status = status_of(rc);
  /* An injected code leaves SQLite's own message stale: use the code's. */
  const char *why = sqlite3_errcode(s->db) == rc ? sqlite3_errmsg(s->db)
                                                 : sqlite3_errstr(rc);
  if (status == QS_ECORRUPT) {
    store_broken(s, why);
    return corrupt_msg(s->path, why, err, err_len);
  }
  if (status == QS_EBUSY)
    return fail_msg(err, err_len, status,
                    "timing store %s: %s: %s (another writer held it for "
                    "more than %d ms)",
                    s->path, what, why, s->busy_ms);
  return fail_msg(err, err_len, status, "timing store %s: %s: %s", s->path,
                  what, why);
}

int store_step(store *s, sqlite3_stmt *st) {
  int rc = s->fault_nth > 0 && --s->fault_nth == 0 ? s->fault_code
                                                   : sqlite3_step(st);
  /* Damage seen by any statement, read or write, stops the writes. */
  if (is_corrupt(rc)) store_broken(s, sqlite3_errstr(rc));
  return rc;
}

void store_fault(store *s, long nth, int code) {
  s->fault_nth = nth > 0 ? nth : 0;
  s->fault_code = code;
}

int store_exec(store *s, int stmt) {
  sqlite3_stmt *st = s->st[stmt];
  int rc;
  do
    rc = store_step(s, st);
  while (rc == SQLITE_ROW);
  sqlite3_reset(st);
  return rc;
}

/* Runs sql and reads the first column of its first row into *out (out
 * NULL: a statement without rows, SQLITE_DONE on success). */
static int read_int(store *s, const char *sql, int *out) {
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(s->db, sql, -1, &st, NULL);
  if (rc != SQLITE_OK) return rc;
  rc = store_step(s, st);
  if (rc == SQLITE_ROW && out) {
    *out = sqlite3_column_int(st, 0);
    rc = SQLITE_OK;
  }
  sqlite3_finalize(st);
  return rc;
}

/* Before the first write of a handle: the open-time probes read only the
 * header and the schema, and damage elsewhere must not be written around.
 * A file whose size is not a whole number of pages was cut short (WAL
 * checkpoints write whole pages); then SQLite's integrity_check on files
 * up to STORE_DEEP_CHECK_BYTES (it also reads the cells: about 6 ms per
 * MiB) or its quick_check up to STORE_CHECK_MAX_BYTES (about 1.5 ms per
 * MiB). Larger files rely on SQLITE_CORRUPT from the statements. */
static void precheck(store *s) {
  if (s->checked) return;
  s->checked = 1;
  struct stat sb;
  if (!strcmp(s->path, ":memory:") || stat(s->path, &sb) != 0 ||
      (long long)sb.st_size > STORE_CHECK_MAX_BYTES)
    return;
  int page = 0;
  if (read_int(s, "PRAGMA page_size", &page) == SQLITE_OK && page > 0 &&
      sb.st_size % page != 0) {
    char why[128];
    snprintf(why, sizeof why, "%lld bytes is not a whole number of %d-byte "
             "pages: the file was cut short", (long long)sb.st_size, page);
    store_broken(s, why);
    return;
  }
  sqlite3_stmt *st;
  const char *sql = (long long)sb.st_size <= STORE_DEEP_CHECK_BYTES
                        ? "PRAGMA integrity_check(4)"
                        : "PRAGMA quick_check(4)";
  if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) {
    if (is_corrupt(sqlite3_errcode(s->db)))
      store_broken(s, sqlite3_errmsg(s->db));
    return;
  }
  char found[400] = "";
  size_t used = 0;
  int rc;
  while ((rc = store_step(s, st)) == SQLITE_ROW) {
    const char *line = (const char *)sqlite3_column_text(st, 0);
    if (!line || !strcmp(line, "ok") || used >= sizeof found - 1) continue;
    int w = snprintf(found + used, sizeof found - used, "%s%s",
                     used ? "; " : "", line);
    if (w > 0) used += (size_t)w < sizeof found - used ? (size_t)w
                                                       : sizeof found - 1 - used;
  }
  sqlite3_finalize(st);
  if (used) store_broken(s, found);
}

int store_begin(store *s, const char *what, char *err, size_t err_len) {
  precheck(s);
  int status = store_writable(s, err, err_len);
  if (status != QS_OK) return status;
  int rc = store_exec(s, ST_BEGIN);
  if (rc == SQLITE_DONE) return QS_OK;
  store_rollback(s);
  return store_fail(s, rc, what, err, err_len);
}

void store_rollback(store *s) {
  /* Not a prepared statement: also used before they exist (open, migrate),
   * and only on failure paths. */
  if (!sqlite3_get_autocommit(s->db))
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

int store_commit(store *s, const char *what, char *err, size_t err_len) {
  int rc = store_exec(s, ST_COMMIT);
  if (rc == SQLITE_DONE) return QS_OK;
  int status = store_fail(s, rc, what, err, err_len);
  store_rollback(s);
  return status;
}

double store_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Steps a bound write statement to completion; resets and clears it. */
static int write_step(store *s, sqlite3_stmt *st) {
  int rc = store_step(s, st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return rc == SQLITE_ROW ? SQLITE_DONE : rc;
}

/* mkdir -p of the directory part of path. */
static int make_parents(const char *path, char *err, size_t err_len) {
  size_t n = strlen(path);
  char *dir = malloc(n + 1);
  if (!dir) return fail_msg(err, err_len, QS_ENOMEM, "out of memory");
  memcpy(dir, path, n + 1);
  int status = QS_OK;
  for (char *p = dir + 1; *p && status == QS_OK; p++) {
    if (*p != '/') continue;
    *p = '\0';
    struct stat sb;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
      status = fail_msg(err, err_len, QS_EIO,
                        "timing store %s: cannot create directory %s: %s",
                        path, dir, strerror(errno));
    else if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
      status = fail_msg(err, err_len, QS_EIO,
                        "timing store %s: %s is not a directory", path, dir);
    *p = '/';
  }
  free(dir);
  return status;
}

/* Applies the missing migrations, one transaction each. Called only when
 * the probe saw an old version (a current store takes no write lock to
 * open); the version is read again inside each transaction, as another
 * process may have migrated meanwhile. */
static int migrate(store *s, char *err, size_t err_len) {
  for (;;) {
    int v = 0, rc = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = read_int(s, "PRAGMA user_version", &v);
    if (rc != SQLITE_OK) {
      store_rollback(s);
      return store_fail(s, rc, "starting the schema migration", err, err_len);
    }
    if (v >= STORE_SCHEMA) {
      sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
      return QS_OK;
    }
    char bump[64];
    snprintf(bump, sizeof bump, "PRAGMA user_version = %d", v + 1);
    rc = sqlite3_exec(s->db, migrations[v], NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(s->db, bump, NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
      char what[64];
      snprintf(what, sizeof what, "migrating schema %d to %d", v, v + 1);
      int status = store_fail(s, rc, what, err, err_len);
      store_rollback(s);
      return status;
    }
  }
}

/* Turns WAL on. Changing the journal mode of a new store can report
 * SQLITE_BUSY at once, without calling the busy handler, while another
 * connection is creating the same store: retry for up to STORE_BUSY_MS. */
static int wal_enable(store *s) {
  int rc;
  for (int waited = 0;; waited++) {
    rc = sqlite3_exec(s->db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL);
    if ((rc & 0xff) != SQLITE_BUSY || waited >= s->busy_ms) return rc;
    sqlite3_sleep(1);
  }
}

static int prepare(store *s, const char *sql, sqlite3_stmt **st, char *err,
                   size_t err_len) {
  int rc =
      sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st, NULL);
  if (rc != SQLITE_OK)
    return store_fail(s, rc, "preparing a statement", err, err_len);
  return QS_OK;
}

/* ------------------------------------------------------------ lifecycle */

int store_open(store **out, const char *path, char *err, size_t err_len) {
  if (!out) return fail_msg(err, err_len, QS_EINVAL, "store_open: no handle");
  *out = NULL;
  if (!path || !*path)
    return fail_msg(err, err_len, QS_EINVAL, "timing store: empty path");
  int memory = strcmp(path, ":memory:") == 0;
  int status = memory ? QS_OK : make_parents(path, err, err_len);
  if (status != QS_OK) return status;

  store *s = calloc(1, sizeof *s);
  if (!s || !(s->path = malloc(strlen(path) + 1))) {
    free(s);
    return fail_msg(err, err_len, QS_ENOMEM, "timing store: out of memory");
  }
  strcpy(s->path, path);
  /* One thread at a time per handle (store.h): no per-call mutex. */
  int rc = sqlite3_open_v2(
      path, &s->db,
      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK) {
    if (!s->db) {
      store_close(s);
      return fail_msg(err, err_len, QS_ENOMEM, "timing store: out of memory");
    }
    status = store_fail(s, rc, "cannot open", err, err_len);
    store_close(s);
    return status;
  }
  s->busy_ms = STORE_BUSY_MS;
  const char *wait = getenv("QUICKSILVER_DB_WAIT_MS");
  if (wait && *wait) {
    char *end;
    errno = 0;
    long ms = strtol(wait, &end, 10);
    if (end == wait || *end || errno || ms < 0 || ms > 600000) {
      store_close(s);
      return fail_msg(err, err_len, QS_EENV,
                      "QUICKSILVER_DB_WAIT_MS: \"%s\" is not a number of "
                      "milliseconds in [0, 600000]",
                      wait);
    }
    s->busy_ms = (int)ms;
  }
  sqlite3_busy_timeout(s->db, s->busy_ms);
  s->readonly = !memory && sqlite3_db_readonly(s->db, "main") == 1;

  /* Read-only probes first: a file that is not a database or is damaged
   * fails here, before the journal mode (a header write) or a migration
   * could touch it. The file is never opened outside SQLite, not even to
   * peek at its header: closing any descriptor of it would drop the POSIX
   * locks that this process's other connections hold on it, and another
   * process could then delete a WAL still in use (lost commits). */
  int version = 0, n = 0;
  rc = read_int(s, "BEGIN", NULL);
  if (rc == SQLITE_DONE) rc = read_int(s, "PRAGMA user_version", &version);
  /* In the same snapshot: another process may be migrating. */
  if (rc == SQLITE_OK)
    rc = read_int(s, "SELECT count(*) FROM sqlite_schema", &n);
  store_rollback(s);
  if (rc != SQLITE_OK) {
    status = store_fail(s, rc, "reading the schema", err, err_len);
  } else if (version > STORE_SCHEMA) {
    status = fail_msg(err, err_len, QS_ESCHEMA,
                      "timing store %s has schema version %d; this "
                      "quicksilver reads up to %d: use a newer quicksilver "
                      "or another store (QUICKSILVER_DB)",
                      path, version, STORE_SCHEMA);
  } else if (version == 0 && n > 0) {
    status = fail_msg(err, err_len, QS_EFORMAT,
                      "timing store %s is an SQLite database of something "
                      "else (it has tables but no store schema version); it "
                      "was left unchanged: use another path (QUICKSILVER_DB)",
                      path);
  } else if (s->readonly && version < STORE_SCHEMA) {
    status = fail_msg(err, err_len, QS_EIO,
                      "timing store %s can only be read and has schema "
                      "version %d, older than this quicksilver's %d: it "
                      "cannot be brought up to date",
                      path, version, STORE_SCHEMA);
  } else if (s->readonly) {
    status = QS_OK; /* read as it is: no journal mode or pragma to set */
  } else if (!memory && (rc = wal_enable(s)) != SQLITE_OK) {
    status = store_fail(s, rc, "setting WAL mode", err, err_len);
  } else if ((rc = sqlite3_exec(s->db,
                                "PRAGMA synchronous = NORMAL;"
                                "PRAGMA journal_size_limit = 4194304",
                                NULL, NULL, NULL)) != SQLITE_OK) {
    status = store_fail(s, rc, "setting pragmas", err, err_len);
  } else {
    status = version < STORE_SCHEMA ? migrate(s, err, err_len) : QS_OK;
  }
  for (int i = 0; status == QS_OK && i < ST_COUNT; i++)
    status = prepare(s, stmt_sql[i], &s->st[i], err, err_len);
  if (status != QS_OK) {
    store_close(s);
    return status;
  }
  *out = s;
  return QS_OK;
}

void store_close(store *s) {
  if (!s) return;
  for (int i = 0; i < ST_COUNT; i++)
    sqlite3_finalize(s->st[i]);
  for (int i = 0; i < STORE_FILTER_SETS; i++) {
    sqlite3_finalize(s->query[i]);
    sqlite3_finalize(s->forget[i]);
  }
  sqlite3_close(s->db);
  free(s->path);
  free(s);
}

const char *store_path(const store *s) { return s ? s->path : NULL; }

/* ---------------------------------------------------------------- write */

int store_put(store *s, int stmt, const field *f, size_t n, const void *obj) {
  sqlite3_stmt *st = s->st[stmt];
  int rc = fields_bind(st, f, n, obj);
  if (rc == SQLITE_OK) rc = store_step(s, st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return rc;
}

int store_insert(store *s, const run_row *r, char *err, size_t err_len) {
  int rc = store_put(s, ST_INSERT, run_fields, n_run_fields, r);
  return rc == SQLITE_DONE ? QS_OK
                           : store_fail(s, rc, "adding a run", err, err_len);
}

/* The row as stored: defaults filled, then checked (QS_EINVAL naming the
 * row and field). */
static int row_ready(store *s, const run_row *in, size_t i, double now,
                     run_row *r, char *err, size_t err_len) {
  *r = *in;
  if (r->stamp <= 0) r->stamp = now;
  if (!r->params) r->params = "{}";
  char why[128];
  if (fields_check(run_fields, n_run_fields, r, why, sizeof why) == 0)
    return QS_OK;
  return fail_msg(err, err_len, QS_EINVAL,
                  "timing store %s: run %zu (%s/%s) not recorded: %s", s->path,
                  i, r->method ? r->method : "?", r->impl ? r->impl : "?",
                  why);
}

/* Inside an open transaction: adds r and trims its group. */
static int row_append(store *s, const run_row *r, char *err, size_t err_len) {
  int status = store_insert(s, r, err, err_len);
  if (status != QS_OK) return status;
  sqlite3_stmt *st = s->st[ST_TRIM];
  const char *group[] = {r->method, r->impl, r->device, r->key};
  int rc = SQLITE_OK;
  for (int i = 0; i < 4 && rc == SQLITE_OK; i++)
    rc = sqlite3_bind_text(st, i + 1, group[i], -1, SQLITE_STATIC);
  if (rc == SQLITE_OK) rc = sqlite3_bind_int(st, 5, STORE_KEEP);
  rc = rc == SQLITE_OK ? write_step(s, st) : rc;
  if (rc != SQLITE_DONE)
    return store_fail(s, rc, "trimming the history", err, err_len);
  return QS_OK;
}

int store_record_batch(store *s, const run_row *rows, size_t n, char *err,
                       size_t err_len) {
  if (!s || (!rows && n))
    return fail_msg(err, err_len, QS_EINVAL, "store_record: no store or row");
  double now = store_now();
  run_row r;
  for (size_t i = 0; i < n; i++) {
    int status = row_ready(s, &rows[i], i, now, &r, err, err_len);
    if (status != QS_OK) return status;
  }
  if (n == 0) return QS_OK;
  int status = store_begin(s, "recording runs", err, err_len);
  for (size_t i = 0; status == QS_OK && i < n; i++) {
    row_ready(s, &rows[i], i, now, &r, err, err_len);
    status = row_append(s, &r, err, err_len);
  }
  if (status == QS_OK) return store_commit(s, "recording runs", err, err_len);
  store_rollback(s);
  return status;
}

int store_record(store *s, const run_row *r, char *err, size_t err_len) {
  if (!r)
    return fail_msg(err, err_len, QS_EINVAL, "store_record: no store or row");
  return store_record_batch(s, r, 1, err, err_len);
}

int store_device(store *s, const char *fingerprint, const char *name,
                 const char *info_json, char *err, size_t err_len) {
  if (!s) return fail_msg(err, err_len, QS_EINVAL, "store_device: no store");
  double now = store_now();
  device_row d = {fingerprint, name ? name : fingerprint,
                  info_json ? info_json : "{}", now, now};
  char why[128];
  if (fields_check(device_fields, n_device_fields, &d, why, sizeof why) != 0)
    return fail_msg(err, err_len, QS_EINVAL,
                    "timing store %s: device not recorded: %s", s->path, why);
  int status = store_begin(s, "recording a device", err, err_len);
  if (status != QS_OK) return status;
  int rc = store_put(s, ST_DEVICE, device_fields, n_device_fields, &d);
  if (rc != SQLITE_DONE) {
    status = store_fail(s, rc, "recording a device", err, err_len);
    store_rollback(s);
    return status;
  }
  return store_commit(s, "recording a device", err, err_len);
}

/* -------------------------------------------------------------- filters */

static unsigned filter_set(const store_filter *f) {
  const char *v[] = {f ? f->method : NULL, f ? f->impl : NULL,
                     f ? f->device : NULL, f ? f->key : NULL};
  unsigned set = 0;
  for (unsigned i = 0; i < 4; i++)
    if (v[i]) set |= 1u << i;
  return set;
}

/* The statement for one filter set, prepared on first use: head, then
 * "WHERE a = ?1 AND b = ?2 ...", then tail. */
static int filter_stmt(store *s, sqlite3_stmt **cache, unsigned set,
                       const char *head, const char *tail, char *err,
                       size_t err_len) {
  if (cache[set]) return QS_OK;
  char sql[512];
  int n = snprintf(sql, sizeof sql, "%s", head);
  int at = 1;
  for (unsigned i = 0; i < 4; i++)
    if (set & (1u << i))
      n += snprintf(sql + n, sizeof sql - (size_t)n, "%s %s = ?%d",
                    at == 1 ? " WHERE" : " AND", filter_cols[i], at),
          at++;
  snprintf(sql + n, sizeof sql - (size_t)n, "%s", tail);
  return prepare(s, sql, &cache[set], err, err_len);
}

static int filter_bind(sqlite3_stmt *st, const store_filter *f) {
  const char *v[] = {f ? f->method : NULL, f ? f->impl : NULL,
                     f ? f->device : NULL, f ? f->key : NULL};
  int at = 1, rc = SQLITE_OK;
  for (unsigned i = 0; i < 4 && rc == SQLITE_OK; i++)
    if (v[i]) rc = sqlite3_bind_text(st, at++, v[i], -1, SQLITE_STATIC);
  return rc;
}

int store_query(store *s, const store_filter *f, store_row_fn fn, void *ctx,
                char *err, size_t err_len) {
  if (!s || !fn)
    return fail_msg(err, err_len, QS_EINVAL, "store_query: no store or fn");
  unsigned set = filter_set(f);
  /* Within one group seq follows id and comes in index order: no sort. */
  const char *order = set == STORE_FILTER_SETS - 1
                          ? " ORDER BY seq DESC LIMIT ?5"
                          : " ORDER BY id DESC LIMIT ?5";
  int status =
      filter_stmt(s, s->query, set, "SELECT " RUN_COLS ", id FROM runs", order,
                  err, err_len);
  if (status != QS_OK) return status;
  sqlite3_stmt *st = s->query[set];
  int rc = filter_bind(st, f);
  sqlite3_int64 limit = f && f->limit ? (sqlite3_int64)f->limit : -1;
  if (rc == SQLITE_OK) rc = sqlite3_bind_int64(st, 5, limit);
  while (rc == SQLITE_OK || rc == SQLITE_ROW) {
    rc = store_step(s, st);
    if (rc != SQLITE_ROW) break;
    run_row r;
    fields_read(st, run_fields, n_run_fields, &r);
    r.id = sqlite3_column_int64(st, (int)n_run_fields);
    if ((status = fn(ctx, &r)) != 0) break;
  }
  if (status == QS_OK && rc != SQLITE_DONE)
    status = store_fail(s, rc, "reading runs", err, err_len);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  return status;
}

int store_devices(store *s, store_device_fn fn, void *ctx, char *err,
                  size_t err_len) {
  if (!s || !fn)
    return fail_msg(err, err_len, QS_EINVAL, "store_devices: no store or fn");
  sqlite3_stmt *st = s->st[ST_DEVICES];
  int rc, status = QS_OK;
  while ((rc = store_step(s, st)) == SQLITE_ROW) {
    device_row d;
    fields_read(st, device_fields, n_device_fields, &d);
    if ((status = fn(ctx, &d)) != 0) break;
  }
  if (status == QS_OK && rc != SQLITE_DONE)
    status = store_fail(s, rc, "reading devices", err, err_len);
  sqlite3_reset(st);
  return status;
}

/* ---------------------------------------------------------------- prune */

int store_forget(store *s, const store_filter *f, size_t *removed, char *err,
                 size_t err_len) {
  if (removed) *removed = 0;
  if (!s) return fail_msg(err, err_len, QS_EINVAL, "store_forget: no store");
  unsigned set = filter_set(f);
  int status =
      filter_stmt(s, s->forget, set, "DELETE FROM runs", "", err, err_len);
  if (status == QS_OK)
    status = store_begin(s, "forgetting runs", err, err_len);
  if (status != QS_OK) return status;
  sqlite3_stmt *st = s->forget[set];
  int rc = filter_bind(st, f);
  rc = rc == SQLITE_OK ? write_step(s, st) : rc;
  if (rc != SQLITE_DONE) {
    status = store_fail(s, rc, "forgetting runs", err, err_len);
    store_rollback(s);
    return status;
  }
  size_t n = (size_t)sqlite3_changes64(s->db);
  status = store_commit(s, "forgetting runs", err, err_len);
  if (status == QS_OK && removed) *removed = n;
  return status;
}

int store_device_merge(store *s, const char *from, const char *to,
                       size_t *moved, char *err, size_t err_len) {
  if (moved) *moved = 0;
  if (!s || !from || !to || !*from || !*to || !strcmp(from, to))
    return fail_msg(err, err_len, QS_EINVAL,
                    "store_device_merge: no store or fingerprints");
  static const char *const sql[] = {
      "UPDATE runs SET device = ?2 WHERE device = ?1",
      /* the older name's first sighting is the device's */
      "UPDATE devices SET first_seen = min(first_seen, (SELECT first_seen "
      "FROM devices WHERE fingerprint = ?1)) WHERE fingerprint = ?2 AND "
      "EXISTS (SELECT 1 FROM devices WHERE fingerprint = ?1)",
      "DELETE FROM devices WHERE fingerprint = ?1"};
  int status = store_begin(s, "merging a device's runs", err, err_len);
  size_t n = 0, trimmed = 0;
  for (size_t i = 0; status == QS_OK && i < sizeof sql / sizeof sql[0]; i++) {
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(s->db, sql[i], -1, &st, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_bind_text(st, 1, from, -1, SQLITE_STATIC);
    if (rc == SQLITE_OK && i < 2)
      rc = sqlite3_bind_text(st, 2, to, -1, SQLITE_STATIC);
    rc = rc == SQLITE_OK ? write_step(s, st) : rc;
    if (rc == SQLITE_DONE && i == 0) n = (size_t)sqlite3_changes64(s->db);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
      status = store_fail(s, rc, "merging a device's runs", err, err_len);
  }
  /* the groups joined: numbered again by id, then bounded as any group */
  if (status == QS_OK && n) {
    int rc = store_exec(s, ST_RENUMBER);
    status = rc == SQLITE_DONE
                 ? store_trim_all(s, STORE_KEEP, &trimmed, err, err_len)
                 : store_fail(s, rc, "renumbering runs", err, err_len);
  }
  if (status != QS_OK) {
    store_rollback(s);
    return status;
  }
  status = store_commit(s, "merging a device's runs", err, err_len);
  if (status == QS_OK && moved) *moved = n;
  return status;
}

int store_trim_all(store *s, size_t keep, size_t *n, char *err,
                   size_t err_len) {
  sqlite3_stmt *st = s->st[ST_TRIM_ALL];
  int rc = sqlite3_bind_int64(st, 1, (sqlite3_int64)keep);
  rc = rc == SQLITE_OK ? write_step(s, st) : rc;
  if (rc != SQLITE_DONE)
    return store_fail(s, rc, "trimming the history", err, err_len);
  *n += (size_t)sqlite3_changes64(s->db);
  return QS_OK;
}

int store_prune(store *s, size_t keep, double older_than_days, size_t *removed,
                char *err, size_t err_len) {
  if (removed) *removed = 0;
  if (!s) return fail_msg(err, err_len, QS_EINVAL, "store_prune: no store");
  if (isnan(older_than_days))
    return fail_msg(err, err_len, QS_EINVAL,
                    "store_prune: older_than_days is not a number");
  size_t n = 0;
  int status = store_begin(s, "pruning", err, err_len);
  if (status == QS_OK && keep > 0)
    status = store_trim_all(s, keep, &n, err, err_len);
  if (status == QS_OK && older_than_days > 0) {
    sqlite3_stmt *st = s->st[ST_OLDER];
    int rc =
        sqlite3_bind_double(st, 1, store_now() - older_than_days * 86400.0);
    rc = rc == SQLITE_OK ? write_step(s, st) : rc;
    if (rc != SQLITE_DONE)
      status = store_fail(s, rc, "pruning old runs", err, err_len);
    else
      n += (size_t)sqlite3_changes64(s->db);
  }
  if (status == QS_OK) {
    /* Rows older than a date need not be a group's oldest (imported rows,
     * clock steps): close the gaps that trimming relies on. */
    int rc = store_exec(s, ST_RENUMBER);
    if (rc != SQLITE_DONE)
      status = store_fail(s, rc, "renumbering runs", err, err_len);
  }
  if (status != QS_OK) {
    store_rollback(s);
    return status;
  }
  status = store_commit(s, "pruning", err, err_len);
  if (status == QS_OK && removed) *removed = n;
  return status;
}

/* ---------------------------------------------------------------- check */

int store_check(store *s, char *err, size_t err_len) {
  if (!s) return fail_msg(err, err_len, QS_EINVAL, "store_check: no store");
  sqlite3_stmt *st;
  int status = prepare(s, "PRAGMA integrity_check(8)", &st, err, err_len);
  if (status != QS_OK) return status;
  char found[1024] = "";
  size_t used = 0;
  int rc;
  while ((rc = store_step(s, st)) == SQLITE_ROW) {
    const char *line = (const char *)sqlite3_column_text(st, 0);
    if (!line || strcmp(line, "ok") == 0) continue;
    int w = snprintf(found + used, sizeof found - used, "%s%s",
                     used ? "; " : "", line);
    if (w > 0)
      used = used + (size_t)w < sizeof found ? used + (size_t)w
                                             : sizeof found - 1;
  }
  if (rc != SQLITE_DONE)
    status = store_fail(s, rc, "checking integrity", err, err_len);
  else if (used)
    status = corrupt_msg(s->path, found, err, err_len);
  sqlite3_finalize(st);
  return status;
}

int store_unlink(const char *path, char *err, size_t err_len) {
  if (!path || !*path || strcmp(path, ":memory:") == 0)
    return fail_msg(err, err_len, QS_EINVAL, "store_unlink: no file");
  static const char *const side[] = {"", "-wal", "-shm"};
  size_t n = strlen(path) + 8;
  char *name = malloc(n);
  if (!name) return fail_msg(err, err_len, QS_ENOMEM, "out of memory");
  int status = QS_OK;
  for (int i = 0; i < 3 && status == QS_OK; i++) {
    snprintf(name, n, "%s%s", path, side[i]);
    if (unlink(name) != 0 && errno != ENOENT)
      status = fail_msg(err, err_len, QS_EIO, "cannot remove %s: %s", name,
                        strerror(errno));
  }
  free(name);
  return status;
}

int store_move_aside(const char *path, char *moved, size_t moved_len,
                     char *err, size_t err_len) {
  if (!path || !*path || strcmp(path, ":memory:") == 0)
    return fail_msg(err, err_len, QS_EINVAL,
                    "store_move_aside: no file to move");
  size_t n = strlen(path) + 64;
  char *dst = malloc(n), *from = malloc(n), *to = malloc(n);
  int status = QS_OK;
  if (!dst || !from || !to) {
    status = fail_msg(err, err_len, QS_ENOMEM, "out of memory");
    goto done;
  }
  /* A new name that nothing holds, main file first: it decides the suffix
   * and link() refuses to overwrite. */
  long stamp = (long)store_now();
  for (int i = 0;; i++) {
    snprintf(dst, n, i ? "%s.corrupt-%ld-%d" : "%s.corrupt-%ld", path, stamp,
             i);
    if (link(path, dst) == 0) break;
    if (errno != EEXIST || i > 100) {
      status = fail_msg(err, err_len, QS_EIO,
                        "timing store %s: cannot move it aside to %s: %s",
                        path, dst, strerror(errno));
      goto done;
    }
  }
  if (unlink(path) != 0) {
    status = fail_msg(err, err_len, QS_EIO,
                      "timing store %s: moved to %s but cannot remove it: %s",
                      path, dst, strerror(errno));
    goto done;
  }
  static const char *const side[] = {"-wal", "-shm"};
  for (int i = 0; i < 2 && status == QS_OK; i++) {
    snprintf(from, n, "%s%s", path, side[i]);
    snprintf(to, n, "%s%s", dst, side[i]);
    if (rename(from, to) != 0 && errno != ENOENT)
      status = fail_msg(err, err_len, QS_EIO,
                        "timing store %s: cannot move %s aside: %s", path,
                        from, strerror(errno));
  }
  if (moved && moved_len) snprintf(moved, moved_len, "%s", dst);
done:
  free(dst);
  free(from);
  free(to);
  return status;
}
