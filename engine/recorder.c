/* recorder.c — the write-behind recorder: finished runs wait in memory and
 * reach the store in batches. Above fail.c, below everything that runs
 * methods; it knows the store and nothing of the dispatcher. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db/store.h"
#include "internal.h"

/* Rows are written to the store in batches, one transaction each: a commit
 * per row (with the history trim) costs several times the rest of a warm
 * call (about 50 us median, 200 us mean with WAL checkpoints, against 5 us
 * for the call). Runs wait in memory until FLUSH_ROWS are pending or the
 * oldest is FLUSH_NS old (checked at each record), and are written at
 * qs_engine_close and before the store is read. A crash loses at most that
 * batch; the selection never waits for the store because the engine's own
 * history cache is updated at once. */
#define FLUSH_ROWS 64
#define FLUSH_NS 250000000

struct pending {
  run_row rows[FLUSH_ROWS];
  char *text[FLUSH_ROWS]; /* one block per row holding its strings */
  size_t n;
  int64_t first_ns;
};

static double unix_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Copies s to *at and advances it. */
static const char *put_str(char **at, const char *s) {
  size_t n = strlen(s) + 1;
  char *d = *at;
  memcpy(d, s, n);
  *at += n;
  return d;
}

/* ---------------------------------------------- recording of timings */

void engine_record_fail(qs_engine *e, int status, const char *msg) {
  if (e->rec_status || !status) return;
  e->rec_status = status;
  snprintf(e->rec_msg, sizeof e->rec_msg, "%s", msg);
}

int qs_engine_record_status(const qs_engine *e, char *msg, size_t len) {
  if (msg && len) snprintf(msg, len, "%s", e ? e->rec_msg : "no engine");
  return e ? e->rec_status : QS_EINVAL;
}

int engine_flush(qs_engine *e) {
  pending *q = e->queue;
  if (!q || !q->n) return QS_OK;
  char msg[1024] = "";
  /* After a failure nothing more is tried: one lock wait per process. */
  int rc = e->store && !e->rec_status
               ? store_record_batch(e->store, q->rows, q->n, msg, sizeof msg)
               : QS_OK;
  for (size_t i = 0; i < q->n; i++) free(q->text[i]);
  q->n = 0;
  e->rec_written = 1;
  if (rc) {
    engine_record_fail(e, rc, msg);
    return engine_fail(e, rc, "recording runs: %s", msg);
  }
  return QS_OK;
}

void engine_record(qs_engine *e, const mstate *m, const rimpl *r,
                   const run_rec *rec) {
  if (!e->store || e->rec_status) return;
  if (!e->queue && !(e->queue = calloc(1, sizeof *e->queue))) return;
  pending *q = e->queue;
  const char *err = rec->error ? rec->error : "";
  const char *str[] = {m->desc->name, r->name, r->devfp, rec->key,
                       rec->params, err};
  size_t len = 0;
  for (size_t i = 0; i < 6; i++) len += strlen(str[i]) + 1;
  char *block = malloc(len), *at = block;
  if (!block) return;
  q->text[q->n] = block;
  q->rows[q->n] = (run_row){
      .stamp = unix_now(), .method = put_str(&at, str[0]),
      .impl = put_str(&at, str[1]), .impl_version = r->version,
      .device = put_str(&at, str[2]), .key = put_str(&at, str[3]),
      .work = rec->work, .params = put_str(&at, str[4]), .wall = rec->wall,
      .device_s = rec->device_s, .once_s = rec->once_s,
      .status = rec->status, .error = put_str(&at, str[5])};
  int64_t now = qs_timer_ns();
  if (q->n++ == 0) q->first_ns = now;
  /* The first row of a call's own run goes at once: a store that cannot
   * take it is known in that run's report. A calibration slice's row
   * waits for it: written at once, the first write of a process (about
   * 0.1 ms here) was counted as calibration, a twentieth of a call's
   * share on calls of 2-3 ms. */
  if (q->n == FLUSH_ROWS || now - q->first_ns >= FLUSH_NS ||
      (!e->rec_written && !rec->sliced))
    engine_flush(e);
}

void recorder_close(qs_engine *e) {
  engine_flush(e);
  free(e->queue);
  e->queue = NULL;
}
