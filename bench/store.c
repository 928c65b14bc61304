/* store.c — cost of the timing store's write and read paths on a warm,
 * file-backed store: one store_record per call (what a dispatch pays when
 * it records synchronously), store_record_batch per row, and reading one
 * group's history. Measured, never asserted.
 *
 *   build/bench/store [path] [calls]
 *
 * path defaults to a temporary file (removed afterwards); calls to 5000.
 * Each line: min, median, p99, max and mean microseconds per call (or per
 * row for batches); the mean includes the WAL checkpoints (an fsync) that
 * land on some commits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/store.h"
#include "timer.h"

static char err[1024];

static int die(int rc, const char *what) {
  fprintf(stderr, "bench/store: %s: %s: %s\n", what, status_name(rc), err);
  return 1;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Prints the distribution of x[0..n) (microseconds). */
static void report(const char *what, double *x, size_t n) {
  stats st;
  if (stats_of(x, n, &st) != QS_OK) return;
  qsort(x, n, sizeof *x, cmp);
  printf("%-38s min %6.2f  median %6.2f  p99 %8.2f  max %9.2f  mean %7.2f "
         "us (n=%zu)\n",
         what, st.min, st.median, x[n * 99 / 100], st.max, st.mean, n);
}

static run_row row_of(const char *key, double wall) {
  run_row r = {.method = "esrrf",
               .impl = "threaded_dynamic",
               .impl_version = 1,
               .device = "cpu-0123456789abcdef",
               .key = key,
               .work = 262144,
               .params = "{\"magnification\":5,\"radius\":1.5,"
                         "\"sensitivity\":1,\"doIntensityWeighting\":true}",
               .wall = wall,
               .status = QS_OK,
               .error = ""};
  return r;
}

static int count_row(void *ctx, const run_row *r) {
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
    path = tmp;
  }
  store *s;
  int rc = store_open(&s, path, err, sizeof err);
  if (rc) return die(rc, "store_open");
  double *t = malloc(calls * sizeof *t);
  if (!t) return 1;
  const char *keys[] = {"esrrf|1x256x256|m=5", "esrrf|10x256x256|m=5",
                        "esrrf|1x512x512|m=5", "esrrf|100x64x64|m=2"};

  /* Warm: every group already holds STORE_KEEP rows, so each record also
   * trims one. */
  for (int i = 0; i < 4 * STORE_KEEP; i++) {
    run_row r = row_of(keys[i % 4], 0.01 * i);
    if ((rc = store_record(s, &r, err, sizeof err))) return die(rc, "warm");
  }
  for (size_t i = 0; i < calls; i++) {
    run_row r = row_of(keys[i % 4], 0.001 * (double)i);
    int64_t t0 = timer_ns();
    rc = store_record(s, &r, err, sizeof err);
    t[i] = (double)(timer_ns() - t0) * 1e-3;
    if (rc) return die(rc, "store_record");
  }
  printf("store %s, synchronous=NORMAL, WAL\n", path);
  report("store_record (1 row / commit)", t, calls);

  for (size_t batch = 8; batch <= 64; batch *= 8) {
    run_row b[64];
    size_t n = 0;
    for (size_t i = 0; i + batch <= calls; i += batch, n++) {
      for (size_t j = 0; j < batch; j++)
        b[j] = row_of(keys[j % 4], 0.001 * (double)(i + j));
      int64_t t0 = timer_ns();
      rc = store_record_batch(s, b, batch, err, sizeof err);
      t[n] = (double)(timer_ns() - t0) * 1e-3 / (double)batch;
      if (rc) return die(rc, "store_record_batch");
    }
    char what[64];
    snprintf(what, sizeof what, "store_record_batch (%zu rows), per row",
             batch);
    report(what, t, n);
  }

  size_t reads = calls / 10;
  for (size_t i = 0; i < reads; i++) {
    store_filter f = {.method = "esrrf",
                      .impl = "threaded_dynamic",
                      .device = "cpu-0123456789abcdef",
                      .key = keys[i % 4]};
    size_t got = 0;
    int64_t t0 = timer_ns();
    rc = store_query(s, &f, count_row, &got, err, sizeof err);
    t[i] = (double)(timer_ns() - t0) * 1e-3;
    if (rc || got != STORE_KEEP) return die(rc, "store_query");
  }
  report("store_query (one group, 200 rows)", t, reads);

  free(t);
  store_close(s);
  if (path == tmp) store_unlink(tmp, NULL, 0);
  return 0;
}
