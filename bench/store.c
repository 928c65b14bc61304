/* store.c — what the timing store costs a host program, through the public
 * API alone, on a warm file-backed store (every group already holds 200
 * runs): a warm method_run of a method that does nothing (bench/nop.h) on
 * a file store against the same on an in-memory one (the difference is
 * what recording costs a call, written as the engine writes: in batches of
 * at most 64 runs or 250 ms); engine_db_import per row (the document
 * parsed and its rows added in one transaction); and engine_db_query of
 * one group's history. Measured, never asserted.
 *
 *   build/bench/store [path] [calls]
 *
 * path defaults to a temporary file (removed afterwards); calls to 5000.
 * Each line: min, median, p99, max and mean microseconds per call (or per
 * row for the import); the file store's mean includes its batched writes
 * and the WAL checkpoints (an fsync) that land on some of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nop.h"

enum { GROUP = 200, KEYS = 4 };

static int die(engine *e, const char *what) {
  fprintf(stderr, "bench/store: %s: %s\n", what, e ? engine_error(e) : "");
  return 1;
}

/* Prints the distribution of x[0..n) (microseconds). */
static void report(const char *what, double *x, size_t n) {
  stats st;
  if (stats_of(x, n, &st) != QS_OK) return;
  qsort(x, n, sizeof *x, cmp);
  printf("%-40s min %6.2f  median %6.2f  p99 %8.2f  max %9.2f  mean %7.2f "
         "us (n=%zu)\n",
         what, st.min, st.median, x[n * 99 / 100], st.max, st.mean, n);
}

static int open_nop(engine **e, const char *path) {
  engine_options o = {.db_path = path, .no_opencl = 1};
  return engine_open(e, &o) || method_register(*e, &nop_desc);
}

/* `calls` warm method_run calls of nop on key k % KEYS (inputs of 16,
 * 24, 32, 40 rows: a group per key), each timed into t; the first `warm`
 * calls untimed. */
static int run_calls(engine *e, size_t warm, size_t calls, double *t) {
  static float px[40 * 16];
  image out[1];
  for (size_t i = 0; i < warm + calls; i++) {
    image in = image_wrap(px, 1, 16 + 8 * (i % KEYS), 16);
    run_request rq = {.inputs = &in, .n_inputs = 1, .impl = "serial"};
    int64_t t0 = timer_ns();
    int rc = method_run(e, "nop", &rq, out, 1, NULL);
    if (i >= warm) t[i - warm] = (double)(timer_ns() - t0) * 1e-3;
    if (rc) return rc;
    image_free(&out[0]);
  }
  return QS_OK;
}

static int first_key(void *ctx, const db_stat *s) {
  snprintf(ctx, 256, "%s", s->key);
  return 1;
}

static int count_row(void *ctx, const db_row *r) {
  (void)r;
  ++*(size_t *)ctx;
  return 0;
}

int main(int argc, char **argv) {
  char tmp[] = "/tmp/qs-bench-store-XXXXXX";
  const char *path = argc > 1 ? argv[1] : NULL;
  size_t calls = argc > 2 ? strtoul(argv[2], NULL, 10) : 5000;
  if (calls < 100) calls = 100;
  if (!path) {
    int fd = mkstemp(tmp);
    if (fd < 0) return perror("mkstemp"), 1;
    close(fd);
    unlink(tmp);
    path = tmp;
  }
  double *t = malloc(calls * sizeof *t);
  if (!t) return 1;
  engine *e = NULL, *mem = NULL;
  if (open_nop(&e, path)) return die(e, "engine_open");
  if (open_nop(&mem, ":memory:")) return die(mem, "engine_open :memory:");
  /* warm: every group holds GROUP runs, as a used store does */
  if (run_calls(e, 0, GROUP * KEYS, t)) return die(e, "warm");
  printf("store %s (WAL), %d groups of %d runs\n", path, KEYS, GROUP);
  if (run_calls(mem, GROUP * KEYS, calls, t)) return die(mem, "method_run");
  report("method_run, store in memory", t, calls);
  if (run_calls(e, 0, calls, t)) return die(e, "method_run");
  report("method_run, file store (batched writes)", t, calls);

  /* one group's history */
  char key[256] = "";
  db_filter f = {.method = "nop", .impl = "serial"};
  engine_db_stats(e, &f, first_key, key);
  f.key = key;
  size_t reads = calls / 10;
  for (size_t i = 0; i < reads; i++) {
    size_t got = 0;
    int64_t t0 = timer_ns();
    int rc = engine_db_query(e, &f, count_row, &got);
    t[i] = (double)(timer_ns() - t0) * 1e-3;
    if (rc || got < GROUP) return die(e, "engine_db_query");
  }
  char what[64];
  snprintf(what, sizeof what, "engine_db_query (one group, %d+ rows)", GROUP);
  report(what, t, reads);

  /* the whole store exported once, imported into fresh stores */
  char doc[300], into[300];
  snprintf(doc, sizeof doc, "%s.json", path);
  snprintf(into, sizeof into, "%s.into", path);
  if (engine_db_export(e, doc)) return die(e, "engine_db_export");
  size_t n_imports = 10, rows = 0;
  for (size_t i = 0; i < n_imports; i++) {
    engine *in = NULL;
    engine_options o = {.db_path = into, .no_opencl = 1};
    if (engine_open(&in, &o)) return die(in, "engine_open (import)");
    size_t added = 0;
    int64_t t0 = timer_ns();
    int rc = engine_db_import(in, doc, &added, NULL, NULL);
    double us = (double)(timer_ns() - t0) * 1e-3;
    if (rc || !added) return die(in, "engine_db_import");
    rows = added;
    t[i] = us / (double)added;
    engine_close(in);
    engine_db_remove(into, NULL, 0);
  }
  snprintf(what, sizeof what, "engine_db_import (%zu rows), per row", rows);
  report(what, t, n_imports);

  free(t);
  engine_close(mem);
  engine_close(e);
  unlink(doc);
  if (path == tmp) engine_db_remove(tmp, NULL, 0);
  return 0;
}
