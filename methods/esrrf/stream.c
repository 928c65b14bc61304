/* stream.c — the live eSRRF stream (quicksilver.h, "live eSRRF"): frames
 * pushed as they arrive go through method_run "esrrf" with temporal=none
 * (the engine chooses and records like any call), and their maps fold into
 * the public partial statistics, so that a timepoint is the batch call's
 * bits and a sliding window is merged from partials of K frames. Built on
 * the public API only. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "methods/esrrf/esrrf.h"

typedef struct pending {
  image img;
  esrrf_stream_result info;
} pending;

struct esrrf_stream {
  engine *e;
  const method_desc *d;
  param run_p[QS_MAX_PARAMS]; /* method_run's: temporal none, all frames */
  size_t n_run_p;
  size_t rows, cols, rows_m, cols_m, plane;
  int mag, mpc, temporal, sliding;
  size_t window, every, max_pending;
  size_t chunk;           /* frames per method_run */
  char want[QS_NAME_MAX]; /* the options' impl ("" none) */
  char impl[QS_NAME_MAX]; /* chosen at the first push */
  esrrf_partial cur;      /* the timepoint, or the block being filled */
  uint64_t cur_first;     /* its first frame */
  esrrf_partial *blocks;  /* sliding: N/K blocks, a ring */
  size_t n_blocks, head, filled;
  esrrf_partial merged; /* sliding: the window */
  pending *q;           /* results, a ring of max_pending + 1 */
  size_t q_cap, q_head, q_n;
  uint64_t frames, results;
  int ended;
  char err[512];
};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int fail(char *err, size_t len, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t len, int rc, const char *fmt, ...) {
  if (err && len) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, len, fmt, ap);
    va_end(ap);
  }
  return rc;
}

void esrrf_stream_close(esrrf_stream *s) {
  if (!s) return;
  esrrf_partial_free(&s->cur);
  esrrf_partial_free(&s->merged);
  for (size_t i = 0; s->blocks && i < s->n_blocks; i++)
    esrrf_partial_free(&s->blocks[i]);
  free(s->blocks);
  for (size_t i = 0; s->q && i < s->q_n; i++)
    image_free(&s->q[(s->q_head + i) % s->q_cap].img);
  free(s->q);
  free(s);
}

/* Checks the options and resolves the parameters into s. */
static int stream_setup(esrrf_stream *s, const esrrf_stream_options *o,
                        char *err, size_t len) {
  const method_desc *d = s->d;
  double v[QS_MAX_PARAMS];
  int rc = params_resolve(d->params, d->n_params, o->params, o->n_params, v,
                          err, len);
  if (rc) return rc;
  s->temporal = (int)v[P_TEMPORAL];
  if (s->temporal == TEMPORAL_NONE)
    return fail(err, len, QS_EPARAM,
                "esrrf stream: temporal=none has no statistic to stream "
                "(run method_run on each frame instead)");
  if (!o->rows || !o->cols || o->rows > INT_MAX || o->cols > INT_MAX)
    return fail(err, len, QS_ESHAPE, "esrrf stream: frame size %zu x %zu",
                o->rows, o->cols);
  size_t every = o->sliding ? (o->every ? o->every : 1) : o->window;
  if (o->window < (s->temporal == TEMPORAL_TAC2 ? 2u : 1u))
    return fail(err, len, QS_EINVAL,
                "esrrf stream: window %zu is too short (at least %d frames%s)",
                o->window, s->temporal == TEMPORAL_TAC2 ? 2 : 1,
                s->temporal == TEMPORAL_TAC2 ? " for tac2" : "");
  if (o->sliding && o->window % every)
    return fail(err, len, QS_EINVAL,
                "esrrf stream: window %zu is not a multiple of every %zu",
                o->window, every);
  rc = rgc_check(v, 1, o->rows, o->cols, (size_t)v[P_MAG], err, len);
  if (rc) return rc;
  v[P_TEMPORAL] = TEMPORAL_NONE;
  v[P_FPT] = 0;
  for (size_t i = 0; i < d->n_params; i++)
    s->run_p[i] = (param){d->params[i].name, v[i], NULL};
  s->n_run_p = d->n_params;
  s->rows = o->rows;
  s->cols = o->cols;
  s->rows_m = o->rows * (size_t)v[P_MAG];
  s->cols_m = o->cols * (size_t)v[P_MAG];
  s->plane = s->rows_m * s->cols_m;
  s->mag = (int)v[P_MAG];
  s->mpc = v[P_MPC] != 0;
  s->sliding = o->sliding != 0;
  s->window = o->window;
  s->every = every;
  s->max_pending = o->max_pending ? o->max_pending : 4;
  s->chunk = ESRRF_STREAM_MAP_BYTES / (4 * s->plane);
  if (s->chunk > ESRRF_STREAM_CHUNK) s->chunk = ESRRF_STREAM_CHUNK;
  if (s->chunk == 0) s->chunk = 1;
  if (o->impl) snprintf(s->want, sizeof s->want, "%s", o->impl);
  return QS_OK;
}

int esrrf_stream_open(engine *e, const esrrf_stream_options *o,
                      esrrf_stream **out, char *err, size_t len) {
  if (out) *out = NULL;
  if (!e || !o || !out)
    return fail(err, len, QS_EINVAL, "esrrf stream: missing argument");
  esrrf_stream *s = calloc(1, sizeof *s);
  if (!s) return fail(err, len, QS_ENOMEM, "esrrf stream: out of memory");
  s->e = e;
  s->d = method_find(e, "esrrf");
  int rc = s->d ? stream_setup(s, o, err, len)
                : fail(err, len, QS_ENOMETHOD,
                       "esrrf stream: no method "
                       "esrrf in this engine");
  if (!rc) rc = esrrf_partial_init(&s->cur, s->temporal, s->rows_m, s->cols_m);
  if (!rc && s->sliding) {
    s->n_blocks = s->window / s->every;
    s->blocks = calloc(s->n_blocks, sizeof *s->blocks);
    rc = s->blocks ? esrrf_partial_init(&s->merged, s->temporal, s->rows_m,
                                        s->cols_m)
                   : QS_ENOMEM;
    for (size_t i = 0; !rc && i < s->n_blocks; i++)
      rc =
          esrrf_partial_init(&s->blocks[i], s->temporal, s->rows_m, s->cols_m);
  }
  s->q_cap = s->max_pending + 1;
  if (!rc) s->q = calloc(s->q_cap, sizeof *s->q);
  if (!rc && !s->q) rc = QS_ENOMEM;
  if (rc == QS_ENOMEM || rc == QS_EOVERFLOW)
    fail(err, len, rc,
         "esrrf stream: no memory for the statistics of "
         "%zu x %zu maps",
         s->rows_m, s->cols_m);
  if (rc) {
    esrrf_stream_close(s);
    return rc;
  }
  *out = s;
  return QS_OK;
}

/* Results the next `count` frames complete. */
static size_t stream_completes(const esrrf_stream *s, size_t count) {
  if (!s->sliding) return (size_t)((s->cur.n + count) / s->window);
  size_t n = 0;
  for (uint64_t t = s->frames + 1; t <= s->frames + count; t++)
    n += t >= s->window && t % s->every == 0;
  return n;
}

static int stream_emit(esrrf_stream *s, const esrrf_partial *p, uint64_t first,
                       double t0) {
  pending *r = &s->q[(s->q_head + s->q_n) % s->q_cap];
  int rc = image_alloc(&r->img, 1, s->rows_m, s->cols_m);
  if (!rc) rc = esrrf_partial_finish(p, s->mag, s->mpc, r->img.data);
  if (rc) {
    image_free(&r->img);
    return fail(s->err, sizeof s->err, rc,
                "esrrf stream: cannot finish result %llu (%s)",
                (unsigned long long)s->results, status_message(rc));
  }
  r->info = (esrrf_stream_result){.index = s->results++,
                                  .first = first,
                                  .frames = p->n,
                                  .latency = now_s() - t0};
  s->q_n++;
  return QS_OK;
}

/* Folds n maps into the current partial and emits what completes. */
static int stream_fold(esrrf_stream *s, const float *maps, size_t n,
                       double t0) {
  if (s->cur.n == 0) s->cur_first = s->frames;
  esrrf_partial_add(&s->cur, maps, n);
  s->frames += n;
  if (!s->sliding) {
    if (s->cur.n < s->window) return QS_OK;
    int rc = stream_emit(s, &s->cur, s->cur_first, t0);
    esrrf_partial_reset(&s->cur);
    return rc;
  }
  if (s->cur.n < s->every) return QS_OK;
  /* the block joins the ring in place of the oldest */
  esrrf_partial t = s->blocks[s->head];
  s->blocks[s->head] = s->cur;
  s->cur = t;
  esrrf_partial_reset(&s->cur);
  s->head = (s->head + 1) % s->n_blocks;
  if (s->filled < s->n_blocks) s->filled++;
  if (s->filled < s->n_blocks) return QS_OK;
  esrrf_partial_reset(&s->merged);
  for (size_t i = 0; i < s->n_blocks; i++)
    esrrf_partial_merge(&s->merged, &s->blocks[(s->head + i) % s->n_blocks]);
  return stream_emit(s, &s->merged, s->frames - s->window, t0);
}

/* The maps of n frames through the engine; the first call chooses. */
static int stream_maps(esrrf_stream *s, const float *frames, size_t n,
                       image *maps) {
  image in = image_wrap((float *)frames, n, s->rows, s->cols);
  run_request rq = {.inputs = &in,
                    .n_inputs = 1,
                    .params = s->run_p,
                    .n_params = s->n_run_p,
                    .impl = s->impl[0]   ? s->impl
                            : s->want[0] ? s->want
                                         : NULL};
  run_report rep;
  int rc = method_run(s->e, "esrrf", &rq, maps, 1, &rep);
  if (rc)
    return fail(s->err, sizeof s->err, rc, "esrrf stream: %s",
                engine_error(s->e));
  if (!s->impl[0]) snprintf(s->impl, sizeof s->impl, "%s", rep.impl);
  return QS_OK;
}

int esrrf_stream_push(esrrf_stream *s, const image *frames) {
  if (!s) return QS_EINVAL;
  double t0 = now_s();
  s->err[0] = '\0';
  if (s->ended)
    return fail(s->err, sizeof s->err, QS_EINVAL,
                "esrrf stream: push after the end of the stream");
  if (!frames || !frames->data || !frames->frames)
    return fail(s->err, sizeof s->err, QS_EINVAL,
                "esrrf stream: no frames to push");
  if (frames->rows != s->rows || frames->cols != s->cols)
    return fail(s->err, sizeof s->err, QS_ESHAPE,
                "esrrf stream: frame of %zu x %zu pushed into a stream of "
                "%zu x %zu",
                frames->rows, frames->cols, s->rows, s->cols);
  size_t px = s->rows * s->cols, count = frames->frames;
  for (size_t i = 0; i < count * px; i++)
    if (!isfinite(frames->data[i]))
      return fail(s->err, sizeof s->err, QS_EINVAL,
                  "esrrf stream: frame %zu of the push (stream frame %llu) "
                  "has %g at row %zu, column %zu; nothing was pushed",
                  i / px, (unsigned long long)(s->frames + i / px),
                  (double)frames->data[i], i % px / s->cols, i % s->cols);
  size_t done = stream_completes(s, count);
  if (s->q_n + done > s->max_pending)
    return fail(s->err, sizeof s->err, QS_EOVERFLOW,
                "esrrf stream: the push completes %zu result(s) and %zu are "
                "waiting, more than max_pending %zu; pop them first",
                done, s->q_n, s->max_pending);
  int rc = QS_OK;
  for (size_t f = 0, n; !rc && f < count; f += n) {
    /* chunks never cross a timepoint or a block */
    size_t room = (s->sliding ? s->every : s->window) - (size_t)s->cur.n;
    n = count - f;
    if (n > s->chunk) n = s->chunk;
    if (n > room) n = room;
    image maps = {0};
    rc = stream_maps(s, frames->data + f * px, n, &maps);
    if (!rc) rc = stream_fold(s, maps.data, n, t0);
    image_free(&maps);
  }
  return rc;
}

int esrrf_stream_pop(esrrf_stream *s, image *out, esrrf_stream_result *info,
                     int *got) {
  if (got) *got = 0;
  if (!s || !out || !got) return QS_EINVAL;
  *out = (image){0};
  if (!s->q_n) return QS_OK;
  pending *r = &s->q[s->q_head];
  *out = r->img;
  if (info) *info = r->info;
  r->img = (image){0};
  s->q_head = (s->q_head + 1) % s->q_cap;
  s->q_n--;
  *got = 1;
  return QS_OK;
}

int esrrf_stream_end(esrrf_stream *s) {
  if (!s) return QS_EINVAL;
  if (s->ended) return QS_OK;
  s->ended = 1;
  if (s->sliding || s->cur.n == 0) return QS_OK;
  if (s->temporal == TEMPORAL_TAC2 && s->cur.n < 2)
    return fail(s->err, sizeof s->err, QS_EINVAL,
                "esrrf stream: the last timepoint has 1 frame, too few for "
                "tac2; discarded");
  /* the queue has one slot beyond max_pending for this result */
  int rc = stream_emit(s, &s->cur, s->cur_first, now_s());
  esrrf_partial_reset(&s->cur);
  return rc;
}

uint64_t esrrf_stream_frames(const esrrf_stream *s) {
  return s ? s->frames : 0;
}

const char *esrrf_stream_impl(const esrrf_stream *s) {
  return s ? s->impl : "";
}

const char *esrrf_stream_error(const esrrf_stream *s) {
  return s ? s->err : "";
}
