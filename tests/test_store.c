/* test_store.c — the SQLite timing store: round trips, filters, bounded
 * history, pruning, export/import, damaged files, injected faults and
 * concurrent writers (threads and processes on one file). */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "db/store.h"
#include "quicksilver.h"
#include "qs_test.h"

TestSuite(store, .fini = qs_leak_check);

/* ------------------------------------------------------------- helpers */

static char err[1024];

/* A fresh database path (an empty file from mkstemp). */
static void db_temp(char path[64]) {
  snprintf(path, 64, "/tmp/qs-store-XXXXXX");
  int fd = mkstemp(path);
  cr_assert(fd >= 0, "mkstemp: %s", strerror(errno));
  close(fd);
}

/* Removes the database and its WAL companions. */
static void db_remove(const char *path) {
  cr_expect_eq(store_unlink(path, err, sizeof err), QS_OK, "%s", err);
}

static store *db_open(const char *path) {
  store *s = NULL;
  int rc = store_open(&s, path, err, sizeof err);
  cr_assert_eq(rc, QS_OK, "store_open(%s): %s: %s", path, qs_status_name(rc),
               err);
  return s;
}

static run_row row_make(const char *method, const char *impl,
                        const char *device, const char *key, double wall) {
  run_row r = {.stamp = 0,
               .method = method,
               .impl = impl,
               .impl_version = 3,
               .device = device,
               .key = key,
               .work = 1024.5,
               .params = "{\"radius\":1.5}",
               .wall = wall,
               .device_s = wall / 2,
               .once_s = 0.25,
               .status = QS_OK,
               .error = ""};
  return r;
}

static void record(store *s, const run_row *r) {
  int rc = store_record(s, r, err, sizeof err);
  cr_assert_eq(rc, QS_OK, "store_record: %s: %s", qs_status_name(rc), err);
}

/* Rows copied out of a query. */
typedef struct rows {
  run_row *v;
  size_t n, cap;
} rows;

static char *str_dup(const char *t) {
  char *d = malloc(strlen(t) + 1);
  cr_assert_not_null(d);
  return strcpy(d, t);
}

static int rows_add(void *ctx, const run_row *r) {
  rows *rs = ctx;
  if (rs->n == rs->cap) {
    rs->cap = rs->cap ? rs->cap * 2 : 64;
    rs->v = realloc(rs->v, rs->cap * sizeof *rs->v);
    cr_assert_not_null(rs->v);
  }
  run_row c = *r;
  c.method = str_dup(r->method);
  c.impl = str_dup(r->impl);
  c.device = str_dup(r->device);
  c.key = str_dup(r->key);
  c.params = str_dup(r->params);
  c.error = str_dup(r->error);
  rs->v[rs->n++] = c;
  return 0;
}

static void rows_free(rows *rs) {
  for (size_t i = 0; i < rs->n; i++) {
    free((char *)rs->v[i].method);
    free((char *)rs->v[i].impl);
    free((char *)rs->v[i].device);
    free((char *)rs->v[i].key);
    free((char *)rs->v[i].params);
    free((char *)rs->v[i].error);
  }
  free(rs->v);
  *rs = (rows){0};
}

static rows query(store *s, const store_filter *f) {
  rows rs = {0};
  int rc = store_query(s, f, rows_add, &rs, err, sizeof err);
  cr_assert_eq(rc, QS_OK, "store_query: %s: %s", qs_status_name(rc), err);
  return rs;
}

static size_t count(store *s, const store_filter *f) {
  rows rs = query(s, f);
  size_t n = rs.n;
  rows_free(&rs);
  return n;
}

/* Every field but the id. */
static void row_expect_eq(const run_row *a, const run_row *b) {
  cr_expect_eq(a->stamp, b->stamp);
  cr_expect_str_eq(a->method, b->method);
  cr_expect_str_eq(a->impl, b->impl);
  cr_expect_eq(a->impl_version, b->impl_version);
  cr_expect_str_eq(a->device, b->device);
  cr_expect_str_eq(a->key, b->key);
  cr_expect_eq(a->work, b->work);
  cr_expect_str_eq(a->params, b->params);
  cr_expect_eq(a->wall, b->wall);
  cr_expect_eq(a->device_s, b->device_s);
  cr_expect_eq(a->once_s, b->once_s);
  cr_expect_eq(a->status, b->status);
  cr_expect_str_eq(a->error, b->error);
}

static void rows_expect_eq(const rows *a, const rows *b) {
  cr_assert_eq(a->n, b->n, "%zu rows vs %zu", a->n, b->n);
  for (size_t i = 0; i < a->n; i++)
    row_expect_eq(&a->v[i], &b->v[i]);
}

/* A whole file's bytes, followed by a NUL so text files can be searched as
 * strings; *n its size. */
static unsigned char *file_read(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s: %s", path, strerror(errno));
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)len + 1);
  cr_assert_not_null(b);
  *n = fread(b, 1, (size_t)len, f);
  fclose(f);
  cr_assert_eq(*n, (size_t)len);
  b[*n] = '\0';
  return b;
}

/* text with the first `from` at or after text + skip replaced by `to` (a
 * new string). */
static char *str_swap(const char *text, size_t skip, const char *from,
                      const char *to) {
  const char *at = strstr(text + skip, from);
  cr_assert_not_null(at, "\"%s\" not found", from);
  size_t head = (size_t)(at - text), n = strlen(text) - strlen(from);
  char *out = malloc(n + strlen(to) + 1);
  cr_assert_not_null(out);
  memcpy(out, text, head);
  strcpy(out + head, to);
  strcat(out, at + strlen(from));
  return out;
}

static void file_write(const char *path, const void *b, size_t n) {
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f, "%s: %s", path, strerror(errno));
  cr_assert_eq(fwrite(b, 1, n, f), n);
  fclose(f);
}

/* Expects path to hold exactly before[0..n), then frees before. */
static void file_expect_same(const char *path, unsigned char *before,
                             size_t n) {
  size_t n1;
  unsigned char *now = file_read(path, &n1);
  cr_expect(n == n1 && memcmp(before, now, n) == 0, "%s was modified", path);
  free(before);
  free(now);
}

static int exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

/* store_open must refuse the file with `status` and a message naming it
 * and holding `needle`, and leave its bytes as they were (creating no WAL
 * beside it). */
static void expect_refused_untouched(const char *path, int status,
                                     const char *needle) {
  size_t n0;
  unsigned char *b0 = file_read(path, &n0);
  store *s = NULL;
  int rc = store_open(&s, path, err, sizeof err);
  cr_expect_eq(rc, status, "%s: %s", qs_status_name(rc), err);
  cr_expect_null(s);
  cr_expect(strstr(err, path), "message does not name the file: %s", err);
  cr_expect(strstr(err, needle), "message lacks \"%s\": %s", needle, err);
  file_expect_same(path, b0, n0);
  char wal[128];
  cr_assert_lt(snprintf(wal, sizeof wal, "%s-wal", path), (int)sizeof wal);
  cr_expect(!exists(wal), "a WAL was created beside a refused file");
}

static void expect_corrupt_untouched(const char *path) {
  expect_refused_untouched(path, QS_ECORRUPT, "move it aside");
}

/* A store with 3 devices' worth of rows of two methods. */
static void fill(store *s, int n) {
  const char *impls[] = {"serial", "threaded", "opencl:pocl"};
  for (int i = 0; i < n; i++) {
    run_row r = row_make(i % 2 ? "esrrf" : "rgc", impls[i % 3],
                         i % 3 == 2 ? "dev-1" : "cpu", i % 4 ? "k1" : "k2",
                         0.001 * (i + 1));
    r.stamp = 1.7e9 + i * 0.123456789;
    r.status = i % 7 == 0 ? QS_EFAIL : QS_OK;
    r.error = i % 7 == 0 ? "kernel \"x\" failed: 'quoted'\n" : "";
    record(s, &r);
  }
  int rc = store_device(s, "dev-1", "pthread-cpu", "{\"mem\":3594150912}", err,
                        sizeof err);
  cr_assert_eq(rc, QS_OK, "%s", err);
}

/* --------------------------------------------------------- round trips */

static double realtime_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

Test(store, record_query_round_trip_every_field) {
  char path[64];
  db_temp(path);
  store *s = db_open(path);
  cr_expect_str_eq(store_path(s), path);
  run_row r = {.stamp = 1712345678.125,
               .method = "esrrf",
               .impl = "opencl:pthread-skylake",
               .impl_version = 7,
               .device = "fp-0123456789abcdef",
               .key = "esrrf|1x64x64|magnification=5|radius=1.5",
               .work = 102400.0,
               .params = "{\"magnification\":5,\"radius\":1.5}",
               .wall = 0.0123,
               .device_s = 0.0101,
               .once_s = 0.61,
               .status = QS_EDEVMEM,
               .error = "out of device memory: 1 GiB"};
  record(s, &r);
  rows rs = query(s, NULL);
  cr_assert_eq(rs.n, 1);
  cr_expect_gt(rs.v[0].id, 0);
  row_expect_eq(&rs.v[0], &r);
  rows_free(&rs);

  /* Defaults: stamp now, params "{}", error "". */
  run_row d = row_make("rgc", "serial", "cpu", "k", 1.0);
  d.params = NULL;
  d.error = NULL;
  /* the store's clock (CLOCK_REALTIME) around the write, within a minute:
   * CI once saw the stamp more than a second past a later time(NULL) (a
   * coarser clock, or the VM's clock stepped back); a minute still tells
   * "now" from any default */
  double before = realtime_s();
  record(s, &d);
  double after = realtime_s();
  store_filter f = {.method = "rgc"};
  rs = query(s, &f);
  cr_assert_eq(rs.n, 1);
  cr_expect_geq(rs.v[0].stamp, before - 60, "%.6f, before %.6f",
                rs.v[0].stamp, before);
  cr_expect_leq(rs.v[0].stamp, after + 60, "%.6f, after %.6f",
                rs.v[0].stamp, after);
  cr_expect_str_eq(rs.v[0].params, "{}");
  cr_expect_str_eq(rs.v[0].error, "");
  rows_free(&rs);
  store_close(s);
  db_remove(path);
}

Test(store, invalid_rows_are_refused_and_not_written) {
  store *s = db_open(":memory:");
  run_row r = row_make("m", "serial", "cpu", "k", 1.0);
  r.method = NULL;
  cr_expect_eq(store_record(s, &r, err, sizeof err), QS_EINVAL);
  cr_expect(strstr(err, "method"), "%s", err);
  r = row_make("m", "serial", "cpu", "", 1.0);
  cr_expect_eq(store_record(s, &r, err, sizeof err), QS_EINVAL);
  cr_expect(strstr(err, "key"), "%s", err);
  r = row_make("m", "serial", "cpu", "k", NAN);
  cr_expect_eq(store_record(s, &r, err, sizeof err), QS_EINVAL);
  cr_expect(strstr(err, "wall"), "%s", err);
  r = row_make("m", "serial", "cpu", "k", 1.0);
  r.once_s = INFINITY;
  cr_expect_eq(store_record(s, &r, err, sizeof err), QS_EINVAL);
  cr_expect(strstr(err, "once_s"), "%s", err);
  cr_expect_eq(store_record(s, NULL, err, sizeof err), QS_EINVAL);
  cr_expect_eq(count(s, NULL), 0);
  store_close(s);
}

Test(store, filter_by_each_field) {
  store *s = db_open(":memory:");
  const char *a[] = {"m0", "m1"}, *b[] = {"i0", "i1"}, *c[] = {"d0", "d1"},
             *d[] = {"k0", "k1"};
  for (int i = 0; i < 16; i++) {
    run_row r =
        row_make(a[i & 1], b[i >> 1 & 1], c[i >> 2 & 1], d[i >> 3 & 1], i);
    record(s, &r);
  }
  store_filter f[] = {
      {.method = "m1"}, {.impl = "i1"}, {.device = "d1"}, {.key = "k1"}};
  for (int i = 0; i < 4; i++) {
    rows rs = query(s, &f[i]);
    cr_expect_eq(rs.n, 8, "filter %d: %zu rows", i, rs.n);
    for (size_t j = 0; j < rs.n; j++) {
      int bit = (int)rs.v[j].wall >> i & 1;
      cr_expect_eq(bit, 1, "filter %d let through wall %g", i, rs.v[j].wall);
    }
    rows_free(&rs);
  }
  store_filter all = {"m0", "i1", "d0", "k1", 0};
  rows rs = query(s, &all);
  cr_assert_eq(rs.n, 1);
  cr_expect_eq(rs.v[0].wall, 10.0); /* bits 0,1,0,1 */
  rows_free(&rs);
  store_filter none = {.method = "nope"};
  cr_expect_eq(count(s, &none), 0);
  cr_expect_eq(count(s, NULL), 16);
  store_close(s);
}

Test(store, newest_first_and_limit) {
  store *s = db_open(":memory:");
  for (int i = 0; i < 10; i++) {
    run_row r = row_make("m", "serial", "cpu", "k", i);
    record(s, &r);
  }
  store_filter f = {.method = "m", .limit = 3};
  rows rs = query(s, &f);
  cr_assert_eq(rs.n, 3);
  for (size_t i = 0; i < 3; i++)
    cr_expect_eq(rs.v[i].wall, 9.0 - (double)i);
  cr_expect_gt(rs.v[0].id, rs.v[1].id);
  rows_free(&rs);
  store_close(s);
}

static int stop_at_two(void *ctx, const run_row *r) {
  (void)r;
  return ++*(int *)ctx == 2 ? 42 : 0;
}

Test(store, callback_stops_the_query) {
  store *s = db_open(":memory:");
  fill(s, 5);
  int seen = 0;
  cr_expect_eq(store_query(s, NULL, stop_at_two, &seen, err, sizeof err), 42);
  cr_expect_eq(seen, 2);
  cr_expect_eq(count(s, NULL), 5); /* the statement was reset */
  store_close(s);
}

Test(store, history_is_bounded_to_the_newest) {
  char path[64];
  db_temp(path);
  store *s = db_open(path);
  run_row other = row_make("m", "threaded", "cpu", "k", 0.5);
  record(s, &other);
  for (int i = 0; i < 250; i++) {
    run_row r = row_make("m", "serial", "cpu", "k", i);
    record(s, &r);
  }
  store_filter f = {.impl = "serial"};
  rows rs = query(s, &f);
  cr_assert_eq(rs.n, STORE_KEEP);
  for (size_t i = 0; i < rs.n; i++)
    cr_expect_eq(rs.v[i].wall, 249.0 - (double)i);
  rows_free(&rs);
  f.impl = "threaded";
  cr_expect_eq(count(s, &f), 1);
  store_close(s);
  db_remove(path);
}

Test(store, batch_is_all_or_nothing) {
  char path[64];
  db_temp(path);
  store *s = db_open(path);
  run_row b[250];
  for (int i = 0; i < 250; i++)
    b[i] = row_make("m", "serial", "cpu", "k", i);
  b[2].device = NULL;
  cr_expect_eq(store_record_batch(s, b, 250, err, sizeof err), QS_EINVAL);
  cr_expect(strstr(err, "run 2") && strstr(err, "device"), "%s", err);
  cr_expect_eq(count(s, NULL), 0);
  b[2].device = "cpu";
  store_fault(s, 300, SQLITE_IOERR); /* mid-batch: an insert or a trim */
  cr_expect_eq(store_record_batch(s, b, 250, err, sizeof err), QS_EDB);
  cr_expect_eq(count(s, NULL), 0);
  cr_assert_eq(store_record_batch(s, b, 250, err, sizeof err), QS_OK, "%s",
               err);
  rows rs = query(s, NULL);
  cr_assert_eq(rs.n, STORE_KEEP);
  cr_expect_eq(rs.v[0].wall, 249.0);
  cr_expect_eq(rs.v[STORE_KEEP - 1].wall, 50.0);
  cr_expect_eq(rs.v[0].stamp, rs.v[1].stamp); /* one "now" per batch */
  rows_free(&rs);
  cr_expect_eq(store_record_batch(s, NULL, 0, err, sizeof err), QS_OK);
  store_close(s);
  db_remove(path);
}

Test(store, prune_keep_and_older_than) {
  store *s = db_open(":memory:");
  const char *keys[] = {"a", "b", "c"};
  for (int i = 0; i < 30; i++) {
    run_row r = row_make("m", "serial", "cpu", keys[i % 3], i);
    record(s, &r);
  }
  size_t removed = 0;
  cr_assert_eq(store_prune(s, 4, 0, &removed, err, sizeof err), QS_OK, "%s",
               err);
  cr_expect_eq(removed, 18);
  for (int k = 0; k < 3; k++) {
    store_filter f = {.key = keys[k]};
    rows rs = query(s, &f);
    cr_assert_eq(rs.n, 4);
    cr_expect_eq(rs.v[0].wall, 27.0 + k);
    cr_expect_eq(rs.v[3].wall, 18.0 + k);
    rows_free(&rs);
  }

  double now = (double)time(NULL);
  run_row old = row_make("m", "serial", "cpu", "old", 1);
  old.stamp = now - 10 * 86400.0;
  record(s, &old);
  old.stamp = now - 3 * 86400.0;
  record(s, &old);
  cr_assert_eq(store_prune(s, 0, 5, &removed, err, sizeof err), QS_OK);
  cr_expect_eq(removed, 1);
  cr_expect_eq(count(s, NULL), 13);
  cr_assert_eq(store_prune(s, 0, 0, &removed, err, sizeof err), QS_OK);
  cr_expect_eq(removed, 0);
  cr_expect_eq(store_prune(s, 0, NAN, &removed, err, sizeof err), QS_EINVAL);
  store_close(s);
}

/* Rows removed from the middle of a group (older than a date) must not make
 * the bound keep fewer than STORE_KEEP rows afterwards. */
Test(store, bound_stays_exact_after_pruning_the_middle) {
  store *s = db_open(":memory:");
  double now = (double)time(NULL);
  for (int i = 0; i < STORE_KEEP; i++) {
    run_row r = row_make("m", "serial", "cpu", "k", i);
    r.stamp = i >= 100 && i < 105 ? now - 30 * 86400.0 : now;
    record(s, &r);
  }
  size_t removed;
  cr_assert_eq(store_prune(s, 0, 7, &removed, err, sizeof err), QS_OK);
  cr_expect_eq(removed, 5);
  for (int i = 0; i < 5; i++) {
    run_row r = row_make("m", "serial", "cpu", "k", 1000 + i);
    record(s, &r);
  }
  cr_expect_eq(count(s, NULL), STORE_KEEP, "the bound trimmed too early");
  run_row r = row_make("m", "serial", "cpu", "k", 2000);
  record(s, &r);
  rows rs = query(s, NULL);
  cr_assert_eq(rs.n, STORE_KEEP);
  cr_expect_eq(rs.v[0].wall, 2000.0);
  cr_expect_eq(rs.v[STORE_KEEP - 1].wall, 1.0); /* row 0 went */
  rows_free(&rs);
  store_close(s);
}

/* A store written by schema 1 (no seq column) is migrated in place: its
 * rows stay, and the bound applies to them at the next record. */
Test(store, migrates_schema_1) {
  char path[64];
  db_temp(path);
  sqlite3 *db;
  cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
  const char *v1 =
      "PRAGMA journal_mode = WAL;"
      "CREATE TABLE devices (fingerprint TEXT PRIMARY KEY NOT NULL,"
      " name TEXT NOT NULL, info TEXT NOT NULL, first_seen REAL NOT NULL,"
      " last_seen REAL NOT NULL);"
      "CREATE TABLE runs (id INTEGER PRIMARY KEY, stamp REAL NOT NULL,"
      " method TEXT NOT NULL, impl TEXT NOT NULL,"
      " impl_version INTEGER NOT NULL, device TEXT NOT NULL,"
      " key TEXT NOT NULL, work REAL NOT NULL, params TEXT NOT NULL,"
      " wall REAL NOT NULL, device_s REAL NOT NULL, once_s REAL NOT NULL,"
      " status INTEGER NOT NULL, error TEXT NOT NULL);"
      "CREATE INDEX runs_group ON runs (method, impl, device, key, id);"
      "WITH RECURSIVE i(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM i"
      " WHERE n < 209) INSERT INTO runs (stamp, method, impl, impl_version,"
      " device, key, work, params, wall, device_s, once_s, status, error)"
      " SELECT 1.7e9 + n, 'm', 'serial', 1, 'cpu', 'k', 1, '{}', n, 0, 0,"
      " 0, '' FROM i;"
      "INSERT INTO runs (stamp, method, impl, impl_version, device, key,"
      " work, params, wall, device_s, once_s, status, error) VALUES"
      " (1.7e9, 'm', 'threaded', 1, 'cpu', 'k', 1, '{}', 0.5, 0, 0, 0, '');"
      "PRAGMA user_version = 1;";
  cr_assert_eq(sqlite3_exec(db, v1, 0, 0, 0), SQLITE_OK, "%s",
               sqlite3_errmsg(db));
  sqlite3_close(db);

  store *s = db_open(path);
  cr_expect_eq(count(s, NULL), 211);
  run_row r = row_make("m", "serial", "cpu", "k", 5000);
  record(s, &r);
  store_filter f = {.impl = "serial"};
  rows rs = query(s, &f);
  cr_assert_eq(rs.n, STORE_KEEP);
  cr_expect_eq(rs.v[0].wall, 5000.0);
  cr_expect_eq(rs.v[1].wall, 209.0);
  cr_expect_eq(rs.v[STORE_KEEP - 1].wall, 11.0);
  rows_free(&rs);
  f.impl = "threaded";
  cr_expect_eq(count(s, &f), 1);
  store_close(s);

  cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
  sqlite3_stmt *st;
  sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
  cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
  cr_expect_eq(sqlite3_column_int(st, 0), STORE_SCHEMA);
  sqlite3_finalize(st);
  sqlite3_close(db);
  db_remove(path);
}

Test(store, forget_matching_rows) {
  store *s = db_open(":memory:");
  fill(s, 24);
  store_filter f = {.impl = "threaded"};
  size_t removed = 0;
  cr_assert_eq(store_forget(s, &f, &removed, err, sizeof err), QS_OK, "%s",
               err);
  cr_expect_eq(removed, 8);
  cr_expect_eq(count(s, &f), 0);
  cr_expect_eq(count(s, NULL), 16);
  store_filter g = {.method = "esrrf", .device = "dev-1"};
  size_t before = count(s, &g);
  cr_assert_eq(store_forget(s, &g, &removed, err, sizeof err), QS_OK);
  cr_expect_eq(removed, before);
  cr_expect_gt(before, 0);
  cr_expect_eq(count(s, NULL), 16 - before);
  store_close(s);
}

static int dev_collect(void *ctx, const device_row *d) {
  char *out = ctx;
  snprintf(out + strlen(out), 256 - strlen(out), "%s|%s|%s|%d;",
           d->fingerprint, d->name, d->info, d->first_seen <= d->last_seen);
  return 0;
}

Test(store, devices_refresh_and_list) {
  store *s = db_open(":memory:");
  cr_assert_eq(store_device(s, "fp2", "second", NULL, err, sizeof err), QS_OK);
  cr_assert_eq(
      store_device(s, "fp1", "old name", "{\"a\":1}", err, sizeof err), QS_OK);
  cr_assert_eq(
      store_device(s, "fp1", "new name", "{\"a\":2}", err, sizeof err), QS_OK);
  cr_expect_eq(store_device(s, "", "x", NULL, err, sizeof err), QS_EINVAL);
  char out[256] = "";
  cr_assert_eq(store_devices(s, dev_collect, out, err, sizeof err), QS_OK);
  cr_expect_str_eq(out, "fp1|new name|{\"a\":2}|1;fp2|second|{}|1;");
  store_close(s);
}

Test(store, reopen_keeps_rows) {
  char path[64];
  db_temp(path);
  store *s = db_open(path);
  fill(s, 20);
  rows a = query(s, NULL);
  store_close(s);
  s = db_open(path);
  rows b = query(s, NULL);
  rows_expect_eq(&a, &b);
  for (size_t i = 0; i < a.n; i++)
    cr_expect_eq(a.v[i].id, b.v[i].id);
  rows_free(&a);
  rows_free(&b);
  cr_expect_eq(store_check(s, err, sizeof err), QS_OK, "%s", err);
  store_close(s);
  db_remove(path);
}

Test(store, creates_missing_directories) {
  char dir[64] = "/tmp/qs-store-dir-XXXXXX", path[128], sub[96];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/a/b/timings.db", dir);
  store *s = db_open(path);
  fill(s, 2);
  store_close(s);
  cr_expect(exists(path));
  db_remove(path);
  snprintf(sub, sizeof sub, "%s/a/b", dir);
  rmdir(sub);
  snprintf(sub, sizeof sub, "%s/a", dir);
  rmdir(sub);

  /* A file where a directory must be: QS_EIO naming it. */
  snprintf(sub, sizeof sub, "%s/file", dir);
  file_write(sub, "x", 1);
  snprintf(path, sizeof path, "%s/file/timings.db", dir);
  store *t = NULL;
  cr_expect_eq(store_open(&t, path, err, sizeof err), QS_EIO);
  cr_expect_null(t);
  cr_expect(strstr(err, sub), "%s", err);
  unlink(sub);
  rmdir(dir);
}

Test(store, newer_schema_is_refused) {
  char path[64];
  db_temp(path);
  sqlite3 *db;
  cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
  cr_assert_eq(sqlite3_exec(db, "PRAGMA user_version = 99", 0, 0, 0),
               SQLITE_OK);
  sqlite3_close(db);
  expect_refused_untouched(path, QS_ESCHEMA, "99");
  db_remove(path);
}

Test(store, foreign_database_is_refused_and_untouched) {
  char path[64];
  db_temp(path);
  sqlite3 *db;
  cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
  cr_assert_eq(sqlite3_exec(db,
                            "CREATE TABLE runs (x); INSERT INTO runs "
                            "VALUES (1)",
                            0, 0, 0),
               SQLITE_OK);
  sqlite3_close(db);
  expect_refused_untouched(path, QS_EFORMAT, "QUICKSILVER_DB");
  db_remove(path);
}

/* --------------------------------------------------------- damaged files */

Test(store, garbage_file_is_corrupt_and_untouched) {
  char path[64];
  db_temp(path);
  unsigned char junk[8192];
  srand(7);
  for (size_t i = 0; i < sizeof junk; i++)
    junk[i] = (unsigned char)rand();
  file_write(path, junk, sizeof junk);
  expect_corrupt_untouched(path);
  file_write(path, "hello", 5); /* shorter than a header */
  expect_corrupt_untouched(path);
  db_remove(path);
}

Test(store, damaged_header_is_corrupt_and_untouched) {
  char path[64];
  db_temp(path);
  store *s = db_open(path);
  fill(s, 300);
  store_close(s);
  size_t n;
  unsigned char *b = file_read(path, &n);
  memset(b + 16, 0xff, 8); /* page size, versions: out of range */
  file_write(path, b, n);
  free(b);
  expect_corrupt_untouched(path);
  db_remove(path);
}

Test(store, truncated_database_is_corrupt_and_untouched) {
  char path[64];
  db_temp(path);
  store *s = db_open(path);
  fill(s, 600); /* several pages */
  store_close(s);
  size_t n;
  unsigned char *b = file_read(path, &n);
  cr_assert_gt(n, 4 * 4096, "database too small to truncate: %zu", n);
  file_write(path, b, n / 2);
  free(b);
  expect_corrupt_untouched(path);
  db_remove(path);
}

Test(store, unlink_removes_companions) {
  char path[64], side[80];
  db_temp(path);
  store *s = db_open(path);
  fill(s, 3);
  snprintf(side, sizeof side, "%s-wal", path);
  cr_expect(exists(side), "WAL mode leaves a -wal while open");
  cr_expect_eq(store_unlink(":memory:", err, sizeof err), QS_EINVAL);
  store_close(s);
  file_write(side, "x", 1);
  cr_assert_eq(store_unlink(path, err, sizeof err), QS_OK, "%s", err);
  cr_expect(!exists(path) && !exists(side));
  cr_expect_eq(store_unlink(path, err, sizeof err), QS_OK, "absent is ok");
}

/* Damage past the schema: the store opens (the probes read only the header
 * and the schema), the integrity check finds it, reads report it, and the
 * file is never written. */
Test(store, damaged_page_is_found_by_check) {
  char path[64];
  db_temp(path);
  store *s = db_open(path);
  fill(s, 600);
  store_close(s);
  size_t n;
  unsigned char *b = file_read(path, &n);
  cr_assert_gt(n, 8 * 4096);
  for (size_t i = 4 * 4096; i < 6 * 4096; i++)
    b[i] = (unsigned char)(i * 7);
  file_write(path, b, n);
  int rc = store_open(&s, path, err, sizeof err);
  if (rc == QS_OK) {
    cr_expect_eq(store_check(s, err, sizeof err), QS_ECORRUPT);
    cr_expect(strstr(err, path) && strstr(err, "move it aside"), "%s", err);
    rows rs = {0};
    rc = store_query(s, NULL, rows_add, &rs, err, sizeof err);
    rows_free(&rs);
    cr_expect_eq(rc, QS_ECORRUPT, "%s: %s", qs_status_name(rc), err);
    store_close(s);
  } else {
    cr_expect_eq(rc, QS_ECORRUPT, "%s: %s", qs_status_name(rc), err);
  }
  file_expect_same(path, b, n);
  db_remove(path);
}

Test(store, export_to_a_missing_directory_fails_cleanly) {
  store *s = db_open(":memory:");
  fill(s, 3);
  cr_expect_eq(store_export(s, "/nonexistent-qs/dir/x.json", err, sizeof err),
               QS_EIO);
  cr_expect(strstr(err, "/nonexistent-qs/dir/x.json"), "%s", err);
  store_close(s);
}

Test(store, move_aside_then_start_anew) {
  char path[64], moved[128];
  db_temp(path);
  file_write(path, "not a database at all, clearly not one....", 42);
  cr_assert_eq(store_open(&(store *){NULL}, path, err, sizeof err),
               QS_ECORRUPT);
  cr_assert_eq(store_move_aside(path, moved, sizeof moved, err, sizeof err),
               QS_OK, "%s", err);
  cr_expect(!exists(path));
  size_t n;
  unsigned char *b = file_read(moved, &n);
  cr_expect(n == 42 && memcmp(b, "not a database", 14) == 0);
  free(b);
  store *s = db_open(path);
  cr_expect_eq(count(s, NULL), 0);
  store_close(s);
  unlink(moved);
  db_remove(path);
}

/* ---------------------------------------------------------- export/import */

static void export_ok(store *s, const char *path) {
  int rc = store_export(s, path, err, sizeof err);
  cr_assert_eq(rc, QS_OK, "store_export: %s: %s", qs_status_name(rc), err);
}

Test(store, export_import_gives_identical_rows) {
  char a[64], b[64], doc[80];
  db_temp(a);
  db_temp(b);
  snprintf(doc, sizeof doc, "%s.json", a);
  store *s = db_open(a), *t = db_open(b);
  fill(s, 60);
  export_ok(s, doc);
  size_t added = 9, skipped = 9, rejected = 9;
  cr_assert_eq(
      store_import(t, doc, &added, &skipped, &rejected, err, sizeof err),
      QS_OK, "%s", err);
  cr_expect_eq(added, 60);
  cr_expect_eq(skipped, 0);
  cr_expect_eq(rejected, 0);
  rows x = query(s, NULL), y = query(t, NULL);
  rows_expect_eq(&x, &y);
  rows_free(&x);
  rows_free(&y);
  char d1[256] = "", d2[256] = "";
  store_devices(s, dev_collect, d1, err, sizeof err);
  store_devices(t, dev_collect, d2, err, sizeof err);
  cr_expect_str_eq(d1, d2);

  /* Twice: everything is already there. */
  cr_assert_eq(
      store_import(t, doc, &added, &skipped, &rejected, err, sizeof err),
      QS_OK, "%s", err);
  cr_expect_eq(added, 0);
  cr_expect_eq(skipped, 60);
  cr_expect_eq(count(t, NULL), 60);

  /* Export replaces an existing file whole. */
  file_write(doc, "old", 3);
  export_ok(t, doc);
  cr_assert_eq(
      store_import(s, doc, &added, &skipped, &rejected, err, sizeof err),
      QS_OK, "%s", err);
  cr_expect_eq(skipped, 60);
  store_close(s);
  store_close(t);
  unlink(doc);
  db_remove(a);
  db_remove(b);
}

Test(store, import_bounds_history) {
  store *s = db_open(":memory:"), *t = db_open(":memory:");
  for (int i = 0; i < 150; i++) {
    run_row r = row_make("m", "serial", "cpu", "k", i);
    record(s, &r);
    r.wall = 1000 + i;
    record(t, &r);
  }
  char doc[64];
  db_temp(doc);
  export_ok(s, doc);
  size_t added;
  cr_assert_eq(store_import(t, doc, &added, NULL, NULL, err, sizeof err),
               QS_OK, "%s", err);
  cr_expect_eq(added, 150);
  rows rs = query(t, NULL);
  cr_assert_eq(rs.n, STORE_KEEP);
  cr_expect_eq(rs.v[0].wall, 149.0); /* the imported rows are the newest */
  rows_free(&rs);
  store_close(s);
  store_close(t);
  unlink(doc);
}

/* Imports doc into s and expects `status` with nothing changed. */
static void import_refused(store *s, const char *doc, int status,
                           size_t want_rejected, const char *needle) {
  rows before = query(s, NULL);
  size_t added = 9, skipped = 9, rejected = 9;
  int rc = store_import(s, doc, &added, &skipped, &rejected, err, sizeof err);
  cr_expect_eq(rc, status, "%s instead of %s: %s", qs_status_name(rc),
               qs_status_name(status), err);
  cr_expect_eq(added, 0);
  cr_expect_eq(skipped, 0);
  cr_expect_eq(rejected, want_rejected);
  cr_expect(strstr(err, needle), "message lacks \"%s\": %s", needle, err);
  rows after = query(s, NULL);
  rows_expect_eq(&before, &after);
  rows_free(&before);
  rows_free(&after);
}

Test(store, malformed_imports_change_nothing) {
  store *s = db_open(":memory:"), *src = db_open(":memory:");
  fill(s, 10);
  fill(src, 30);
  char doc[64], bad[64];
  db_temp(doc);
  db_temp(bad);
  export_ok(src, doc);
  size_t n;
  char *text = (char *)file_read(doc, &n);

  file_write(bad, text, n / 2); /* truncated */
  import_refused(s, bad, QS_EFORMAT, 0, "invalid JSON");
  file_write(bad, "{\"schema\": 1, \"runs\": [", 23);
  import_refused(s, bad, QS_EFORMAT, 0, bad);
  file_write(bad, "[1, 2, 3]", 9);
  import_refused(s, bad, QS_EFORMAT, 0, "schema");
  file_write(bad, "{\"runs\": []}", 12);
  import_refused(s, bad, QS_EFORMAT, 0, "schema");
  char doc2[64];
  snprintf(doc2, sizeof doc2, "{\"schema\": %d, \"runs\": []}",
           STORE_DOC_SCHEMA + 1);
  file_write(bad, doc2, strlen(doc2));
  import_refused(s, bad, QS_ESCHEMA, 0, "schema 2");
  file_write(bad, "{\"schema\": 1, \"runs\": {}}", 25);
  import_refused(s, bad, QS_EFORMAT, 0, "runs");
  file_write(bad, "", 0);
  import_refused(s, bad, QS_EFORMAT, 0, "invalid JSON");
  import_refused(s, "/nonexistent/dir/x.json", QS_EIO, 0, "/nonexistent");

  /* Malformed rows among good ones: counted, named, nothing added. */
  char *p = strstr(text, "\"wall\":");
  cr_assert_not_null(p);
  memcpy(p, "\"wa1l\"", 6);
  /* ... and, in a later row, a number given as a string. */
  char *q = str_swap(text, (size_t)(strchr(p, '}') - text),
                     "\"impl_version\":3", "\"impl_version\":\"3\"");
  file_write(bad, q, strlen(q));
  free(q);
  import_refused(s, bad, QS_EFORMAT, 2, "\"wall\" is missing");
  cr_expect(strstr(err, "2 malformed rows"), "%s", err);

  free(text);
  store_close(s);
  store_close(src);
  unlink(doc);
  unlink(bad);
}

/* ------------------------------------------------------- fault injection */

Test(store, injected_faults_leave_nothing_half_written) {
  char path[64];
  db_temp(path);
  store *s = db_open(path);
  run_row r = row_make("m", "serial", "cpu", "k", 1);
  record(s, &r);
  /* A record is 4 steps: BEGIN, INSERT, trim, COMMIT. */
  const struct {
    int code, status;
  } faults[] = {{SQLITE_BUSY, QS_EBUSY},
                {SQLITE_IOERR, QS_EDB},
                {SQLITE_FULL, QS_EDB}};
  /* (SQLITE_CORRUPT stops every later write: its own test below.) */
  for (size_t f = 0; f < 3; f++)
    for (long nth = 1; nth <= 4; nth++) {
      store_fault(s, nth, faults[f].code);
      r.wall = 100 + nth;
      int rc = store_record(s, &r, err, sizeof err);
      cr_expect_eq(rc, faults[f].status, "fault %d at step %ld: %s (%s)",
                   faults[f].code, nth, qs_status_name(rc), err);
      cr_expect(strstr(err, path), "%s", err);
      cr_expect_eq(count(s, NULL), 1, "a row was half-written");
    }
  store_fault(s, 1, SQLITE_BUSY);
  cr_expect_eq(store_record(s, &r, err, sizeof err), QS_EBUSY);
  record(s, &r); /* injection is spent: the retry succeeds */
  cr_expect_eq(count(s, NULL), 2);

  /* Import and prune under faults. */
  char doc[64];
  db_temp(doc);
  store *src = db_open(":memory:");
  fill(src, 20);
  export_ok(src, doc);
  store_close(src);
  for (long nth = 1; nth <= 12; nth++) {
    store_fault(s, nth, SQLITE_IOERR);
    size_t added = 9;
    int rc = store_import(s, doc, &added, NULL, NULL, err, sizeof err);
    cr_expect_eq(rc, QS_EDB, "import fault at %ld: %s", nth, err);
    cr_expect_eq(added, 0);
    cr_expect_eq(count(s, NULL), 2);
  }
  store_fault(s, 2, SQLITE_BUSY);
  size_t removed = 9;
  cr_expect_eq(store_prune(s, 1, 0, &removed, err, sizeof err), QS_EBUSY);
  cr_expect_eq(removed, 0);
  cr_expect_eq(count(s, NULL), 2);
  store_fault(s, 0, 0);
  store_close(s);
  unlink(doc);
  db_remove(path);
}

/* ------------------------------------------------------------ concurrency */

#define WRITERS 4
#define PROCS 2
#define RUNS_EACH 1000

typedef struct writer {
  const char *path;
  int proc, thread, status;
  char err[512];
} writer;

static void *writer_main(void *arg) {
  writer *w = arg;
  store *s = NULL;
  w->status = store_open(&s, w->path, w->err, sizeof w->err);
  for (int i = 0; w->status == QS_OK && i < RUNS_EACH; i++) {
    char key[64];
    /* Groups of 100 rows, under STORE_KEEP: trimming removes nothing. */
    snprintf(key, sizeof key, "p%d-t%d-g%d", w->proc, w->thread, i / 100);
    run_row r = row_make("m", "serial", "cpu", key, i);
    w->status = store_record(s, &r, w->err, sizeof w->err);
  }
  store_close(s);
  return NULL;
}

/* Runs WRITERS threads; returns the first failure's status (0: none). */
static int writers_run(const char *path, int proc) {
  pthread_t t[WRITERS];
  writer w[WRITERS];
  for (int i = 0; i < WRITERS; i++) {
    w[i] = (writer){.path = path, .proc = proc, .thread = i};
    pthread_create(&t[i], NULL, writer_main, &w[i]);
  }
  int status = 0;
  for (int i = 0; i < WRITERS; i++) {
    pthread_join(t[i], NULL);
    if (w[i].status && !status) {
      fprintf(stderr, "writer %d/%d: %s: %s\n", proc, i,
              qs_status_name(w[i].status), w[i].err);
      status = w[i].status;
    }
  }
  return status;
}

Test(store, threads_and_processes_lose_no_row, .timeout = 240) {
  char path[64];
  db_temp(path);
  store *s = db_open(path); /* created and migrated once, up front */
  store_close(s);
  pid_t kids[PROCS];
  for (int p = 0; p < PROCS; p++) {
    kids[p] = fork();
    cr_assert(kids[p] >= 0, "fork: %s", strerror(errno));
    if (kids[p] == 0) _exit(writers_run(path, p));
  }
  for (int p = 0; p < PROCS; p++) {
    int ws;
    cr_assert_eq(waitpid(kids[p], &ws, 0), kids[p]);
    cr_expect(WIFEXITED(ws), "writer process %d died", p);
    cr_expect_eq(WEXITSTATUS(ws), QS_OK, "writer process %d: %s", p,
                 qs_status_name(WEXITSTATUS(ws)));
  }
  s = db_open(path);
  size_t n = count(s, NULL);
  cr_expect_eq(n, (size_t)WRITERS * PROCS * RUNS_EACH, "%zu rows", n);
  store_filter f = {.key = "p1-t3-g9"};
  cr_expect_eq(count(s, &f), 100);
  store_close(s);
  db_remove(path);
}

/* Several processes creating the same new store (directories included) at
 * once: each opens, one migrates, all record. */
Test(store, concurrent_first_open_creates_once) {
  enum { OPENERS = 8 };
  char dir[64] = "/tmp/qs-store-dir-XXXXXX", path[96], sub[80];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/a/b/timings.db", dir);
  pid_t kids[OPENERS];
  for (int p = 0; p < OPENERS; p++) {
    kids[p] = fork();
    cr_assert(kids[p] >= 0);
    if (kids[p] == 0) {
      store *s = NULL;
      char msg[512] = "";
      int rc = store_open(&s, path, msg, sizeof msg);
      run_row r = row_make("m", "serial", "cpu", "k", p);
      if (rc == QS_OK) rc = store_record(s, &r, msg, sizeof msg);
      if (rc) fprintf(stderr, "opener %d: %s\n", p, msg);
      store_close(s);
      _exit(rc);
    }
  }
  for (int p = 0; p < OPENERS; p++) {
    int ws;
    waitpid(kids[p], &ws, 0);
    cr_expect(WIFEXITED(ws) && WEXITSTATUS(ws) == 0, "opener %d: %s", p,
              qs_status_name(WEXITSTATUS(ws)));
  }
  store *s = db_open(path);
  cr_expect_eq(count(s, NULL), OPENERS);
  store_close(s);
  db_remove(path);
  snprintf(sub, sizeof sub, "%s/a/b", dir);
  rmdir(sub);
  snprintf(sub, sizeof sub, "%s/a", dir);
  rmdir(sub);
  rmdir(dir);
}

/* ------------------------------------------------ damage, locks, rights */

/* SQLITE_CORRUPT from any statement, a read as well as a write, makes the
 * handle refuse every later write: a damaged file is never written. */
Test(store, corruption_seen_anywhere_stops_writes) {
  for (int on_write = 0; on_write < 2; on_write++) {
    char path[64];
    db_temp(path);
    store *s = db_open(path);
    run_row r = row_make("m", "serial", "cpu", "k", 1);
    record(s, &r);
    cr_assert_eq(store_writable(s, err, sizeof err), QS_OK);
    if (on_write) {
      store_fault(s, 2, SQLITE_CORRUPT); /* the INSERT */
      cr_assert_eq(store_record(s, &r, err, sizeof err), QS_ECORRUPT);
    } else {
      store_fault(s, 1, SQLITE_CORRUPT);
      rows rs = {0};
      cr_assert_eq(store_query(s, NULL, rows_add, &rs, err, sizeof err),
                   QS_ECORRUPT);
      rows_free(&rs);
    }
    store_fault(s, 0, 0);
    for (int i = 0; i < 3; i++) {
      r.wall = 10 + i;
      cr_assert_eq(store_record(s, &r, err, sizeof err), QS_ECORRUPT,
                   "write %d after damage was seen", i);
      cr_assert(strstr(err, path) && strstr(err, "nothing more is written"),
                "%s", err);
    }
    cr_assert_eq(store_device(s, "cpu-x", "x", NULL, err, sizeof err),
                 QS_ECORRUPT);
    size_t removed;
    cr_assert_eq(store_prune(s, 1, 0, &removed, err, sizeof err),
                 QS_ECORRUPT);
    cr_assert_eq(store_writable(s, err, sizeof err), QS_ECORRUPT);
    cr_assert_eq(count(s, NULL), 1, "reads still work; nothing was added");
    store_close(s);
    db_remove(path);
  }
}

/* Damage the open-time probes do not see — a page in the middle, the end
 * of the last page cut off — is found before the first write, which is
 * refused, and the file is left as it was. */
Test(store, hidden_damage_is_found_before_the_first_write) {
  for (int kind = 0; kind < 2; kind++) {
    char path[64];
    db_temp(path);
    store *s = db_open(path);
    fill(s, 600);
    store_close(s);
    size_t n;
    unsigned char *b = file_read(path, &n);
    cr_assert_gt(n, 8 * 4096);
    if (kind == 0)
      for (size_t i = 4 * 4096; i < 5 * 4096; i++)
        b[i] = (unsigned char)(i * 7 + 3);
    else
      n -= 100;
    file_write(path, b, n);
    int rc = store_open(&s, path, err, sizeof err);
    cr_assert_eq(rc, QS_OK, "kind %d: the probes see only header and schema: %s", kind, err);
    run_row r = row_make("m", "serial", "cpu", "k", 1);
    rc = store_record(s, &r, err, sizeof err);
    cr_assert_eq(rc, QS_ECORRUPT, "%s damage: %s: %s",
                 kind ? "truncation" : "page", qs_status_name(rc), err);
    cr_assert(strstr(err, path) && strstr(err, "move it aside"), "%s", err);
    cr_assert_eq(store_device(s, "cpu-x", "x", NULL, err, sizeof err),
                 QS_ECORRUPT);
    store_close(s);
    file_expect_same(path, b, n);
    db_remove(path);
  }
}

/* Another process holding the write lock: the wait is bounded by
 * QUICKSILVER_DB_WAIT_MS, the failure names it, and it is not sticky (the
 * next write, once the lock is free, succeeds). */
Test(store, lock_wait_is_bounded_by_the_knob) {
  char path[64];
  db_temp(path);
  setenv("QUICKSILVER_DB_WAIT_MS", "150", 1);
  store *s = db_open(path);
  sqlite3 *other;
  cr_assert_eq(sqlite3_open(path, &other), SQLITE_OK);
  cr_assert_eq(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL),
               SQLITE_OK);
  run_row r = row_make("m", "serial", "cpu", "k", 1);
  struct timeval t0, t1;
  gettimeofday(&t0, NULL);
  cr_assert_eq(store_record(s, &r, err, sizeof err), QS_EBUSY, "%s", err);
  gettimeofday(&t1, NULL);
  cr_assert(strstr(err, "more than 150 ms"), "%s", err);
  /* termination, not speed: the default would wait 10 s */
  cr_assert_lt((double)(t1.tv_sec - t0.tv_sec), 8.0);
  sqlite3_exec(other, "COMMIT", NULL, NULL, NULL);
  sqlite3_close(other);
  record(s, &r);
  cr_assert_eq(count(s, NULL), 1);
  store_close(s);
  setenv("QUICKSILVER_DB_WAIT_MS", "soon", 1);
  cr_assert_eq(store_open(&s, path, err, sizeof err), QS_EENV);
  cr_assert(strstr(err, "QUICKSILVER_DB_WAIT_MS"), "%s", err);
  unsetenv("QUICKSILVER_DB_WAIT_MS");
  db_remove(path);
}

/* Becomes an unprivileged user for the rest of this test's process (root
 * bypasses file permissions); `path` is handed over first. 0 if that is
 * not possible. */
static int drop_root(const char *path) {
  if (geteuid() != 0) return 1;
  if (chown(path, 65534, 65534) != 0) return 0;
  return setgid(65534) == 0 &&
         setuid(65534) == 0;
}

/* A file this process may only read: it opens, its history is read, and
 * every write is refused with QS_EIO saying why; the file is unchanged. */
Test(store, read_only_file_is_read_not_written) {
  char path[64];
  db_temp(path);
  store *s = db_open(path);
  fill(s, 5);
  store_close(s);
  if (!drop_root(path)) cr_skip_test("cannot become an unprivileged user");
  cr_assert_eq(chmod(path, 0444), 0);
  size_t n;
  unsigned char *b = file_read(path, &n);
  s = db_open(path);
  cr_assert_eq(count(s, NULL), 5);
  run_row r = row_make("m", "serial", "cpu", "k", 1);
  cr_assert_eq(store_record(s, &r, err, sizeof err), QS_EIO);
  cr_assert(strstr(err, path) && strstr(err, "can only be read"), "%s", err);
  cr_assert_eq(store_writable(s, err, sizeof err), QS_EIO);
  store_close(s);
  file_expect_same(path, b, n);
  db_remove(path);
}

/* ------------------------------------------------ the engine's recorder */

static qs_engine *engine_on(const char *path, int *rc) {
  qs_engine_options o = {
      .db_path = path, .threads = 1, .no_opencl = 1, .seed = 7};
  qs_engine *e = NULL;
  *rc = qs_engine_open(&e, &o);
  cr_assert_not_null(e, "%s", qs_status_name(*rc));
  return e;
}

/* One shift_magnify call; returns its report's record_status. */
static int run_small(qs_engine *e) {
  float px[2 * 8 * 8];
  for (size_t i = 0; i < sizeof px / sizeof *px; i++) px[i] = (float)i;
  qs_image in = qs_image_wrap(px, 2, 8, 8), out = {0};
  qs_run_request rq = {.inputs = &in, .n_inputs = 1};
  qs_run_report rep;
  int rc = qs_method_run(e, "shift_magnify", &rq, &out, 1, &rep);
  cr_assert_eq(rc, QS_OK, "%s", qs_engine_error(e));
  qs_image_free(&out);
  return rep.record_status;
}

static size_t rows_in(const char *path) {
  store *s = db_open(path);
  size_t n = count(s, NULL);
  store_close(s);
  return n;
}

Test(store, engine_reports_timings_it_cannot_record) {
  char msg[512];
  /* a good store: recorded, and the first run is written at once */
  char path[64];
  db_temp(path);
  int rc;
  qs_engine *e = engine_on(path, &rc);
  cr_assert_eq(rc, QS_OK);
  cr_assert_eq(run_small(e), QS_OK);
  cr_assert_eq(qs_engine_record_status(e, msg, sizeof msg), QS_OK);
  cr_assert_geq(rows_in(path), 1, "the first run waits in memory");
  qs_engine_close(e);

  /* the lock held past the wait: reported, and no second wait */
  setenv("QUICKSILVER_DB_WAIT_MS", "100", 1);
  sqlite3 *other;
  cr_assert_eq(sqlite3_open(path, &other), SQLITE_OK);
  cr_assert_eq(sqlite3_exec(other, "BEGIN IMMEDIATE", NULL, NULL, NULL),
               SQLITE_OK);
  size_t before = rows_in(path);
  e = engine_on(path, &rc);
  cr_assert_eq(rc, QS_OK);
  cr_assert_eq(run_small(e), QS_EBUSY);
  cr_assert_eq(qs_engine_record_status(e, msg, sizeof msg), QS_EBUSY);
  cr_assert(strstr(msg, path) && strstr(msg, "100 ms"), "%s", msg);
  sqlite3_exec(other, "COMMIT", NULL, NULL, NULL);
  sqlite3_close(other);
  cr_assert_eq(run_small(e), QS_EBUSY, "the engine stops writing");
  qs_engine_close(e);
  cr_assert_eq(rows_in(path), before, "nothing written after the failure");
  unsetenv("QUICKSILVER_DB_WAIT_MS");

  /* hidden damage: found before the engine's first write, never written */
  store *s = db_open(path);
  fill(s, 600);
  store_close(s);
  size_t n;
  unsigned char *b = file_read(path, &n);
  for (size_t i = 4 * 4096; i < 5 * 4096; i++) b[i] = (unsigned char)(i * 5);
  file_write(path, b, n);
  e = engine_on(path, &rc);
  cr_assert_eq(rc, QS_OK, "%s", qs_engine_error(e));
  cr_assert_eq(run_small(e), QS_ECORRUPT);
  cr_assert_eq(qs_engine_record_status(e, msg, sizeof msg), QS_ECORRUPT);
  cr_assert(strstr(msg, path), "%s", msg);
  qs_engine_close(e);
  file_expect_same(path, b, n);
  db_remove(path);

  /* another program's database: untouched, runs go on unrecorded */
  db_temp(path);
  sqlite3 *foreign;
  cr_assert_eq(sqlite3_open(path, &foreign), SQLITE_OK);
  sqlite3_exec(foreign, "CREATE TABLE notes (t TEXT); INSERT INTO notes "
               "VALUES ('mine')", NULL, NULL, NULL);
  sqlite3_close(foreign);
  b = file_read(path, &n);
  e = engine_on(path, &rc);
  cr_assert_eq(rc, QS_EFORMAT);
  cr_assert_eq(run_small(e), QS_EFORMAT);
  cr_assert_eq(qs_engine_record_status(e, msg, sizeof msg), QS_EFORMAT);
  qs_engine_close(e);
  file_expect_same(path, b, n);
  db_remove(path);
}

/* Export never lands on the store itself (or its companions) or on
 * something that is not a file; import does not block on a FIFO. */
Test(store, export_and_import_refuse_what_is_not_a_file, .timeout = 30) {
  char path[64], link_name[80], fifo[80];
  db_temp(path);
  store *s = db_open(path);
  fill(s, 4);
  snprintf(link_name, sizeof link_name, "%s.link", path);
  cr_assert_eq(link(path, link_name), 0);
  size_t n;
  unsigned char *b = file_read(path, &n);
  cr_assert_eq(store_export(s, path, err, sizeof err), QS_EINVAL);
  cr_assert(strstr(err, "timing store"), "%s", err);
  cr_assert_eq(store_export(s, link_name, err, sizeof err), QS_EINVAL);
  file_expect_same(path, b, n);
  snprintf(fifo, sizeof fifo, "%s.fifo", path);
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  cr_assert_eq(store_export(s, fifo, err, sizeof err), QS_EINVAL);
  cr_assert(strstr(err, "not a regular file"), "%s", err);
  cr_assert_eq(store_export(s, "/dev/null", err, sizeof err), QS_EINVAL);
  struct stat st;
  cr_assert_eq(stat("/dev/null", &st), 0);
  cr_assert(S_ISCHR(st.st_mode));
  size_t added = 5;
  cr_assert_eq(store_import(s, fifo, &added, NULL, NULL, err, sizeof err),
               QS_EIO);
  cr_assert(strstr(err, "not a regular file"), "%s", err);
  cr_assert_eq(added, 0);
  store_close(s);
  unlink(fifo);
  unlink(link_name);
  db_remove(path);
}
