/* store.c — what the timing store costs a host program, through the public
 * API alone, on a warm file-backed store (every group already holds 200
 * runs): a warm qs_method_run of a method that does nothing (bench/nop.h) on
 * a file store against the same on an in-memory one (the difference is
 * what recording costs a call, written as the engine writes: in batches of
 * at most 64 runs or 250 ms); qs_engine_db_import per row (the document
 * parsed and its rows added in one transaction); and qs_engine_db_query of
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

static int die(qs_engine *e, const char *what) {
  fprintf(stderr, "bench/store: %s: %s\n", what, e ? qs_engine_error(e) : "");
  return 1;
}

/* Prints the distribution of x[0..n) (microseconds). */
static void report(const char *what, double *x, size_t n) {
  qs_stats st;
  if (qs_stats_of(x, n, &st) != QS_OK) return;
  qsort(x, n, sizeof *x, cmp);
  printf("%-40s min %6.2f  median %6.2f  p99 %8.2f  max %9.2f  mean %7.2f "
         "us (n=%zu)\n",
         what, st.min, st.median, x[n * 99 / 100], st.max, st.mean, n);
}

static int open_nop(qs_engine **e, const char *path) {
  qs_engine_options o = {.db_path = path, .no_opencl = 1};
  return qs_engine_open(e, &o) || qs_method_register(*e, &nop_desc);
}

/* `calls` warm qs_method_run calls of nop on key k % KEYS (inputs of 16,
 * 24, 32, 40 rows: a group per key), each timed into t; the first `warm`
 * calls untimed. */
static int run_calls(qs_engine *e, size_t warm, size_t calls, double *t) {
  static float px[40 * 16];
  qs_image out[1];
  for (size_t i = 0; i < warm + calls; i++) {
    qs_image in = qs_image_wrap(px, 1, 16 + 8 * (i % KEYS), 16);
    qs_run_request rq = {.inputs = &in, .n_inputs = 1, .impl = "serial"};
    int64_t t0 = qs_timer_ns();
    int rc = qs_method_run(e, "nop", &rq, out, 1, NULL);
    if (i >= warm) t[i - warm] = (double)(qs_timer_ns() - t0) * 1e-3;
    if (rc) return rc;
    qs_image_free(&out[0]);
  }
  return QS_OK;
}

static int first_key(void *ctx, const qs_db_stat *s) {
  snprintf(ctx, 256, "%s", s->key);
  return 1;
}

static int count_row(void *ctx, const qs_db_row *r) {
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
  qs_engine *e = NULL, *mem = NULL;
  if (open_nop(&e, path)) return die(e, "qs_engine_open");
  if (open_nop(&mem, ":memory:")) return die(mem, "qs_engine_open :memory:");
  /* warm: every group holds GROUP runs, as a used store does */
  if (run_calls(e, 0, GROUP * KEYS, t)) return die(e, "warm");
  printf("store %s (WAL), %d groups of %d runs\n", path, KEYS, GROUP);
  if (run_calls(mem, GROUP * KEYS, calls, t)) return die(mem, "qs_method_run");
  report("qs_method_run, store in memory", t, calls);
  if (run_calls(e, 0, calls, t)) return die(e, "qs_method_run");
  report("qs_method_run, file store (batched writes)", t, calls);

  /* one group's history */
  char key[256] = "";
  qs_db_filter f = {.method = "nop", .impl = "serial"};
  qs_engine_db_stats(e, &f, first_key, key);
  f.key = key;
  size_t reads = calls / 10;
  for (size_t i = 0; i < reads; i++) {
    size_t got = 0;
    int64_t t0 = qs_timer_ns();
    int rc = qs_engine_db_query(e, &f, count_row, &got);
    t[i] = (double)(qs_timer_ns() - t0) * 1e-3;
    if (rc || got < GROUP) return die(e, "qs_engine_db_query");
  }
  char what[64];
  snprintf(what, sizeof what, "qs_engine_db_query (one group, %d+ rows)",
           GROUP);
  report(what, t, reads);

  /* the whole store exported once, imported into fresh stores */
  char doc[300], into[300];
  snprintf(doc, sizeof doc, "%s.json", path);
  snprintf(into, sizeof into, "%s.into", path);
  if (qs_engine_db_export(e, doc)) return die(e, "qs_engine_db_export");
  size_t n_imports = 10, rows = 0;
  for (size_t i = 0; i < n_imports; i++) {
    qs_engine *in = NULL;
    qs_engine_options o = {.db_path = into, .no_opencl = 1};
    if (qs_engine_open(&in, &o)) return die(in, "qs_engine_open (import)");
    size_t added = 0;
    int64_t t0 = qs_timer_ns();
    int rc = qs_engine_db_import(in, doc, &added, NULL, NULL);
    double us = (double)(qs_timer_ns() - t0) * 1e-3;
    if (rc || !added) return die(in, "qs_engine_db_import");
    rows = added;
    t[i] = us / (double)added;
    qs_engine_close(in);
    qs_engine_db_remove(into, NULL, 0);
  }
  snprintf(what, sizeof what, "qs_engine_db_import (%zu rows), per row", rows);
  report(what, t, n_imports);

  free(t);
  qs_engine_close(mem);
  qs_engine_close(e);
  unlink(doc);
  if (path == tmp) qs_engine_db_remove(tmp, NULL, 0);
  return 0;
}
