/* transfer.c — export of the store to a JSON document and import from one.
 *
 * Export streams one row at a time (memory does not grow with the store)
 * into a temporary file that is synced and renamed over the target. Import
 * validates the whole document before it touches the store, then adds the
 * rows in one transaction: it is all or nothing. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_int.h"

/* ---------------------------------------------------------------- export */

/* Writes the rows of a fixed SELECT as ",\n"-separated JSON objects; obj is
 * scratch space for one row of the table f. */
static int dump(store *s, FILE *out, int stmt, const field *f, size_t n,
                void *obj, char *err, size_t err_len) {
  sqlite3_stmt *st = s->st[stmt];
  int rc, status = QS_OK, first = 1;
  while (status == QS_OK && (rc = store_step(s, st)) == SQLITE_ROW) {
    fields_read(st, f, n, obj);
    cJSON *o = fields_json(f, n, obj);
    char *text = o ? cJSON_PrintUnformatted(o) : NULL;
    if (!text)
      status = fail_msg(err, err_len, QS_ENOMEM, "export: out of memory");
    else if (fprintf(out, "%s\n  %s", first ? "" : ",", text) < 0)
      status = QS_EIO; /* reported with the path by the caller */
    first = 0;
    cJSON_free(text);
    cJSON_Delete(o);
  }
  if (status == QS_OK && rc != SQLITE_DONE)
    status = store_fail(s, rc, "reading the store for export", err, err_len);
  sqlite3_reset(st);
  return status;
}

/* The destination of an export must be a regular file or a new name, and
 * not the store itself or one of its companions (it would be replaced). */
static int export_target(const store *s, const char *path, char *err,
                         size_t err_len) {
  struct stat dst, sb;
  if (stat(path, &dst) != 0) return QS_OK; /* a new name */
  if (!S_ISREG(dst.st_mode))
    return fail_msg(err, err_len, QS_EINVAL,
                    "export to %s: it is not a regular file (a directory, "
                    "device, FIFO or socket); name a file",
                    path);
  static const char *const side[] = {"", "-wal", "-shm"};
  size_t n = strlen(s->path) + 8;
  char *name = malloc(n);
  if (!name) return fail_msg(err, err_len, QS_ENOMEM, "out of memory");
  int status = QS_OK;
  for (int i = 0; i < 3 && status == QS_OK; i++) {
    snprintf(name, n, "%s%s", s->path, side[i]);
    if (stat(name, &sb) == 0 && sb.st_dev == dst.st_dev &&
        sb.st_ino == dst.st_ino)
      status = fail_msg(err, err_len, QS_EINVAL,
                        "export to %s: that is the timing store %s itself",
                        path, name);
  }
  free(name);
  return status;
}

int store_export(store *s, const char *path, char *err, size_t err_len) {
  if (!s || !path || !*path)
    return fail_msg(err, err_len, QS_EINVAL, "store_export: no store or path");
  int checked = export_target(s, path, err, err_len);
  if (checked != QS_OK) return checked;
  size_t n = strlen(path) + 48;
  char *tmp = malloc(n);
  if (!tmp) return fail_msg(err, err_len, QS_ENOMEM, "export: out of memory");
  /* The CLI's temporary naming (tools/outfile.h): recognisable, with the
   * pid, so a run killed mid-export leaves a name its sweep knows. */
  snprintf(tmp, n, "%s.qs-tmp-%ld-XXXXXX", path, (long)getpid());
  int fd = mkstemp(tmp);
  FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
  if (!out) {
    int status = fail_msg(err, err_len, QS_EIO,
                          "export to %s: cannot "
                          "create %s: %s",
                          path, tmp, strerror(errno));
    if (fd >= 0) {
      close(fd);
      unlink(tmp);
    }
    free(tmp);
    return status;
  }
  fchmod(fd, 0644);

  /* One read transaction: a consistent snapshot while writers go on. */
  int rc = store_exec(s, ST_BEGIN_READ), status = QS_OK;
  if (rc != SQLITE_DONE)
    status = store_fail(s, rc, "starting the export", err, err_len);
  run_row r;
  device_row d;
  if (status == QS_OK &&
      fprintf(out, "{\n\"schema\": %d,\n\"devices\": [", STORE_DOC_SCHEMA) < 0)
    status = QS_EIO;
  if (status == QS_OK)
    status = dump(s, out, ST_DEVICES, device_fields, n_device_fields, &d, err,
                  err_len);
  if (status == QS_OK && fprintf(out, "\n],\n\"runs\": [") < 0)
    status = QS_EIO;
  if (status == QS_OK)
    status = dump(s, out, ST_ALL, run_fields, n_run_fields, &r, err, err_len);
  if (status == QS_OK && fprintf(out, "\n]\n}\n") < 0) status = QS_EIO;
  store_rollback(s); /* ends the read transaction */

  if (fflush(out) != 0 || fsync(fd) != 0) status = status ? status : QS_EIO;
  if (fclose(out) != 0) status = status ? status : QS_EIO;
  if (status == QS_OK && rename(tmp, path) != 0) status = QS_EIO;
  if (status == QS_EIO)
    fail_msg(err, err_len, QS_EIO, "export to %s: %s", path,
             strerror(errno ? errno : EIO));
  if (status != QS_OK) unlink(tmp);
  free(tmp);
  return status;
}

/* ---------------------------------------------------------------- import */

/* Reads a whole file; *len excludes the terminating NUL added. */
static int slurp(const char *path, char **text, size_t *len, char *err,
                 size_t err_len) {
  *text = NULL;
  /* Without blocking, and only a regular file: a FIFO would wait for a
   * writer forever. */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat sb;
  if (fd >= 0 && (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))) {
    close(fd);
    return fail_msg(err, err_len, QS_EIO, "import from %s: not a regular file",
                    path);
  }
  if (fd >= 0) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
  if (!f) {
    int status =
        fail_msg(err, err_len, QS_EIO, "import from %s: cannot open: %s", path,
                 strerror(errno));
    if (fd >= 0) close(fd);
    return status;
  }
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  int status = QS_OK;
  while (buf) {
    if (n + 1 >= cap) {
      char *bigger = cap < SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
      if (!bigger) break;
      buf = bigger;
      cap *= 2;
    }
    size_t got = fread(buf + n, 1, cap - n - 1, f);
    n += got;
    if (got == 0) break;
  }
  if (!buf || n + 1 >= cap)
    status = fail_msg(err, err_len, QS_ENOMEM, "import from %s: out of memory",
                      path);
  else if (ferror(f))
    status = fail_msg(err, err_len, QS_EIO, "import from %s: cannot read: %s",
                      path, strerror(errno));
  fclose(f);
  if (status != QS_OK) {
    free(buf);
    return status;
  }
  buf[n] = '\0';
  *text = buf;
  *len = n;
  return QS_OK;
}

/* The document's shape: a "schema" equal to ours and the row arrays. */
static int doc_check(const char *path, const cJSON *doc, const cJSON **devs,
                     const cJSON **runs, char *err, size_t err_len) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(doc, "schema");
  if (!cJSON_IsObject(doc) || !cJSON_IsNumber(v))
    return fail_msg(err, err_len, QS_EFORMAT,
                    "import from %s: no \"schema\" number: not a quicksilver "
                    "store export; nothing imported",
                    path);
  if (v->valuedouble != STORE_DOC_SCHEMA)
    return fail_msg(
        err, err_len, QS_ESCHEMA,
        "import from %s: schema %g, this quicksilver reads schema %d; "
        "nothing imported",
        path, v->valuedouble, STORE_DOC_SCHEMA);
  *runs = cJSON_GetObjectItemCaseSensitive(doc, "runs");
  *devs = cJSON_GetObjectItemCaseSensitive(doc, "devices");
  if (!cJSON_IsArray(*runs) || (*devs && !cJSON_IsArray(*devs)))
    return fail_msg(err, err_len, QS_EFORMAT,
                    "import from %s: \"runs\" (and \"devices\", if given) "
                    "must be arrays; nothing imported",
                    path);
  return QS_OK;
}

/* Counts the malformed rows of both arrays, naming the first in err. */
static size_t doc_rejects(const char *path, const cJSON *devs,
                          const cJSON *runs, char *err, size_t err_len) {
  const struct {
    const cJSON *rows;
    const char *name;
    const field *f;
    size_t n;
  } parts[] = {{devs, "devices", device_fields, n_device_fields},
               {runs, "runs", run_fields, n_run_fields}};
  size_t bad = 0;
  for (size_t p = 0; p < 2; p++) {
    const cJSON *row;
    int i = 0;
    cJSON_ArrayForEach(row, parts[p].rows) {
      run_row r;
      device_row d;
      char why[160];
      void *obj = parts[p].f == run_fields ? (void *)&r : (void *)&d;
      if (fields_parse(parts[p].f, parts[p].n, row, obj, why, sizeof why) &&
          bad++ == 0)
        fail_msg(err, err_len, QS_EFORMAT, "%s[%d]: %s", parts[p].name, i,
                 why);
      i++;
    }
  }
  if (bad) {
    char first[256];
    snprintf(first, sizeof first, "%s", err ? err : "");
    fail_msg(err, err_len, QS_EFORMAT,
             "import from %s: %zu malformed row%s (first: %s); nothing "
             "imported",
             path, bad, bad == 1 ? "" : "s", first);
  }
  return bad;
}

/* Adds the (valid) rows inside an open transaction. */
static int doc_add(store *s, const cJSON *devs, const cJSON *runs,
                   size_t *added, size_t *skipped, char *err, size_t err_len) {
  const cJSON *row;
  char why[8];
  int rc = SQLITE_DONE;
  cJSON_ArrayForEach(row, devs) {
    device_row d;
    fields_parse(device_fields, n_device_fields, row, &d, why, sizeof why);
    rc = store_put(s, ST_DEVICE_MERGE, device_fields, n_device_fields, &d);
    if (rc != SQLITE_DONE)
      return store_fail(s, rc, "importing a device", err, err_len);
  }
  cJSON_ArrayForEach(row, runs) {
    run_row r;
    fields_parse(run_fields, n_run_fields, row, &r, why, sizeof why);
    rc = store_put(s, ST_EXISTS, run_fields, n_run_fields, &r);
    if (rc == SQLITE_ROW) {
      ++*skipped;
      continue;
    }
    if (rc != SQLITE_DONE)
      return store_fail(s, rc, "importing a run", err, err_len);
    int status = store_insert(s, &r, err, err_len);
    if (status != QS_OK) return status;
    ++*added;
  }
  size_t trimmed = 0;
  return store_trim_all(s, STORE_KEEP, &trimmed, err, err_len);
}

int store_import(store *s, const char *path, size_t *added, size_t *skipped,
                 size_t *rejected, char *err, size_t err_len) {
  size_t a = 0, k = 0, bad = 0;
  if (added) *added = 0;
  if (skipped) *skipped = 0;
  if (rejected) *rejected = 0;
  if (!s || !path || !*path)
    return fail_msg(err, err_len, QS_EINVAL, "store_import: no store or path");
  char *text;
  size_t len = 0;
  int status = slurp(path, &text, &len, err, err_len);
  if (status != QS_OK) return status;
  const char *end = NULL;
  cJSON *doc = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  const cJSON *devs = NULL, *runs = NULL;
  if (!doc)
    status = fail_msg(err, err_len, QS_EFORMAT,
                      "import from %s: invalid JSON at byte %zu of %zu; "
                      "nothing imported",
                      path, end ? (size_t)(end - text) : (size_t)0, len);
  else
    status = doc_check(path, doc, &devs, &runs, err, err_len);
  if (status == QS_OK && (bad = doc_rejects(path, devs, runs, err, err_len)))
    status = QS_EFORMAT;
  if (status == QS_OK) status = store_begin(s, "importing", err, err_len);
  if (status == QS_OK) {
    status = doc_add(s, devs, runs, &a, &k, err, err_len);
    if (status == QS_OK)
      status = store_commit(s, "importing", err, err_len);
    else
      store_rollback(s);
  }
  cJSON_Delete(doc);
  free(text);
  if (rejected) *rejected = bad;
  if (status == QS_OK) {
    if (added) *added = a;
    if (skipped) *skipped = k;
  }
  return status;
}
