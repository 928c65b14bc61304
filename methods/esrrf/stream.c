/* stream.c — the live eSRRF stream (quicksilver.h, "live eSRRF"): frames
 * pushed as they arrive run a plan of "esrrf" with temporal=none (the
 * engine chooses and records each run like any call) with the stream's
 * sink (sink.h) as the run's argument, which makes the implementation
 * fold the frames into the stream's statistic instead of writing maps:
 * the host partial with the batch call's own fold (so a
 * timepoint is the batch call's bits), or the OpenCL chain's device
 * accumulators, kept with the chain's buffers and tables across pushes.
 * A sliding window is merged from host partials of K frames by two
 * stacks (stream_window: about three partials read per update instead of
 * N/K). A client of the plan: nothing here is called back by an
 * implementation (the sink's fold, esrrf_drive_sink, is esrrf.c's). */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/fail.h"
#include "engine/plan.h"
#include "methods/esrrf/esrrf.h"
#include "methods/esrrf/sink.h"

typedef struct pending {
  qs_image img;
  qs_esrrf_stream_result info;
} pending;

struct qs_esrrf_stream {
  qs_engine *e;
  const qs_method_desc *d;
  qs_param
      run_p[QS_MAX_PARAMS]; /* qs_method_run's: temporal none, all frames */
  size_t n_run_p;
  size_t rows, cols, rows_m, cols_m, plane;
  int mag, mpc, temporal, sliding;
  size_t window, every, max_pending;
  size_t chunk;           /* frames per qs_method_run */
  char want[QS_NAME_MAX]; /* the options' impl ("" none) */
  char impl[QS_NAME_MAX]; /* chosen at the first push */
  qs_esrrf_partial cur;   /* the timepoint, or the block being filled
                             (host side) */
  uint64_t cur_n;         /* its frames (wherever they are folded) */
  uint64_t cur_first;     /* its first frame */
  qs_plan *plan;          /* esrrf, temporal none, on chunk frames: the
                             implementation's kept state */
  esrrf_sink sink;        /* the last call's (finish: a device timepoint) */
  uint64_t up, down;      /* bytes moved by the stream's calls */
  int ringed;             /* sliding: -1 not known yet (before the first
                             call), 1 the implementation keeps the window
                             (sink.h), 0 host blocks */
  uint64_t valid_from;    /* sliding: the first frame of the windows to
                             come (a lost ring starts over) */
  qs_esrrf_partial *blocks; /* sliding, host: N/K blocks, a ring (allocated
                             when the first block completes) */
  size_t n_blocks, head, filled;
  qs_esrrf_partial **order; /* sliding, host: the ring oldest first */
  size_t fresh;           /* sliding, host: blocks since the last flip */
  qs_esrrf_partial back;  /* sliding, host: their merge (from 2 on) */
  qs_image spare;         /* the next result's image: one given back
                           (qs_esrrf_stream_give), or allocated and its pages
                           touched ahead (stream_spare) */
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

void qs_esrrf_stream_close(qs_esrrf_stream *s) {
  if (!s) return;
  qs_plan_close(s->plan);
  qs_esrrf_partial_free(&s->cur);
  for (size_t i = 0; s->blocks && i < s->n_blocks; i++)
    qs_esrrf_partial_free(&s->blocks[i]);
  free(s->blocks);
  free(s->order);
  qs_esrrf_partial_free(&s->back);
  qs_image_free(&s->spare);
  for (size_t i = 0; s->q && i < s->q_n; i++)
    qs_image_free(&s->q[(s->q_head + i) % s->q_cap].img);
  free(s->q);
  free(s);
}

/* Checks the options and resolves the parameters into s. */
static int stream_setup(qs_esrrf_stream *s, const qs_esrrf_stream_options *o,
                        char *err, size_t len) {
  const qs_method_desc *d = s->d;
  double v[QS_MAX_PARAMS];
  int rc = qs_params_resolve(d->params, d->n_params, o->params, o->n_params, v,
                             err, len);
  if (rc) return rc;
  s->temporal = (int)v[P_TEMPORAL];
  if (s->temporal == TEMPORAL_NONE)
    return fail_msg(err, len, QS_EPARAM,
                    "esrrf stream: temporal=none has no statistic to stream "
                    "(run qs_method_run on each frame instead)");
  if (!o->rows || !o->cols || o->rows > INT_MAX || o->cols > INT_MAX)
    return fail_msg(err, len, QS_ESHAPE, "esrrf stream: frame size %zu x %zu",
                    o->rows, o->cols);
  size_t every = o->sliding ? (o->every ? o->every : 1) : o->window;
  if (o->window < (s->temporal == TEMPORAL_TAC2 ? 2u : 1u))
    return fail_msg(
        err, len, QS_EINVAL,
        "esrrf stream: window %zu is too short (at least %d frames%s)",
        o->window, s->temporal == TEMPORAL_TAC2 ? 2 : 1,
        s->temporal == TEMPORAL_TAC2 ? " for tac2" : "");
  if (o->sliding && o->window % every)
    return fail_msg(err, len, QS_EINVAL,
                    "esrrf stream: window %zu is not a multiple of every %zu",
                    o->window, every);
  rc = rgc_check(v, 1, o->rows, o->cols, (size_t)v[P_MAG], err, len);
  if (rc) return rc;
  v[P_TEMPORAL] = TEMPORAL_NONE;
  v[P_FPT] = 0;
  for (size_t i = 0; i < d->n_params; i++)
    s->run_p[i] = (qs_param){d->params[i].name, v[i], NULL};
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
  s->chunk = QS_ESRRF_STREAM_MAP_BYTES / (4 * s->plane);
  if (s->chunk > QS_ESRRF_STREAM_CHUNK) s->chunk = QS_ESRRF_STREAM_CHUNK;
  if (s->chunk == 0) s->chunk = 1;
  if (o->impl) snprintf(s->want, sizeof s->want, "%s", o->impl);
  return QS_OK;
}

int qs_esrrf_stream_open(qs_engine *e, const qs_esrrf_stream_options *o,
                         qs_esrrf_stream **out, char *err, size_t len) {
  if (out) *out = NULL;
  if (!e || !o || !out)
    return fail_msg(err, len, QS_EINVAL, "esrrf stream: missing argument");
  /* sizes and pointers checked before any arithmetic on them */
  if (o->n_params && !o->params)
    return fail_msg(err, len, QS_EINVAL,
                    "esrrf stream: n_params %zu with no params", o->n_params);
  if (o->max_pending > QS_ESRRF_STREAM_MAX_PENDING)
    return fail_msg(err, len, QS_EINVAL,
                    "esrrf stream: max_pending %zu is more than %zu",
                    o->max_pending, (size_t)QS_ESRRF_STREAM_MAX_PENDING);
  qs_esrrf_stream *s = calloc(1, sizeof *s);
  if (!s) return fail_msg(err, len, QS_ENOMEM, "esrrf stream: out of memory");
  s->e = e;
  s->d = qs_method_find(e, "esrrf");
  int rc = s->d ? stream_setup(s, o, err, len)
                : fail_msg(err, len, QS_ENOMETHOD,
                           "esrrf stream: no method "
                           "esrrf in this engine");
  if (!rc)
    rc = qs_esrrf_partial_init(&s->cur, s->temporal, s->rows_m, s->cols_m);
  if (!rc) {
    qs_image shape = {.frames = s->chunk, .rows = s->rows, .cols = s->cols};
    qs_run_request rq = {.inputs = &shape,
                         .n_inputs = 1,
                         .params = s->run_p,
                         .n_params = s->n_run_p,
                         .impl = s->want[0] ? s->want : NULL};
    rc = qs_method_open(e, "esrrf", &rq, &s->plan);
    if (rc) fail_msg(err, len, rc, "esrrf stream: %s", qs_engine_error(e));
  }
  s->ringed = -1;
  s->q_cap = s->max_pending + 1;
  if (!rc) s->q = calloc(s->q_cap, sizeof *s->q);
  if (!rc && !s->q) rc = QS_ENOMEM;
  /* (a refusal of stream_setup keeps its own message) */
  if ((rc == QS_ENOMEM || rc == QS_EOVERFLOW) && s->rows_m)
    fail_msg(err, len, rc,
             "esrrf stream: no memory for the statistics of "
             "%zu x %zu maps",
             s->rows_m, s->cols_m);
  if (rc) {
    qs_esrrf_stream_close(s);
    return rc;
  }
  *out = s;
  return QS_OK;
}

/* Results the next `count` frames complete. */
static size_t stream_completes(const qs_esrrf_stream *s, size_t count) {
  if (!s->sliding) return (size_t)((s->cur_n + count) / s->window);
  size_t n = 0;
  for (uint64_t t = s->frames + 1; t <= s->frames + count; t++)
    n += t >= s->valid_from + s->window && t % s->every == 0;
  return n;
}

/* Frames after stream frame `end` (the end of a call) until the next
 * result completes. */
static uint64_t stream_due(const qs_esrrf_stream *s, uint64_t end) {
  if (!s->sliding)
    return s->window - (s->cur_n + (end - s->frames)) % s->window;
  uint64_t k = s->every, t = (end / k + 1) * k,
           first = (s->valid_from + s->window + k - 1) / k * k;
  return (t > first ? t : first) - end;
}

/* Queues img (taken) as the next result. */
static void stream_queue(qs_esrrf_stream *s, qs_image *img, uint64_t first,
                         uint64_t frames, double t0) {
  pending *r = &s->q[(s->q_head + s->q_n) % s->q_cap];
  r->img = *img;
  *img = (qs_image){0};
  r->info = (qs_esrrf_stream_result){.index = s->results++,
                                     .first = first,
                                     .frames = frames,
                                     .latency = now_s() - t0};
  s->q_n++;
}

static int stream_lost(qs_esrrf_stream *s, int rc) {
  return fail_msg(s->err, sizeof s->err, rc,
                  "esrrf stream: cannot finish result %llu (%s)",
                  (unsigned long long)s->results, qs_status_message(rc));
}

/* A result's image: the spare when there is one. */
static int stream_image(qs_esrrf_stream *s, qs_image *img) {
  if (!s->spare.data) return qs_image_alloc(img, 1, s->rows_m, s->cols_m);
  *img = s->spare;
  s->spare = (qs_image){0};
  return QS_OK;
}

/* The next result's image allocated now, each of its pages written once,
 * so that the push completing the result does not pay for them: a fresh
 * image of 26 MB (512 x 512 frames at M 5) took 8 to 46 ms to fault in
 * here, a third of that push. Called by a push whose next push of as many
 * frames completes a result; a failure leaves no spare (the result then
 * allocates its own). One result's image more in the stream's memory. */
static void stream_spare(qs_esrrf_stream *s) {
  if (!s->spare.data && !qs_image_alloc(&s->spare, 1, s->rows_m, s->cols_m))
    plan_touch(s->plan, &s->spare);
}

/* The result of host partial p, finished here. */
static int stream_emit(qs_esrrf_stream *s, const qs_esrrf_partial *p,
                       uint64_t first, double t0) {
  qs_image img;
  int rc = stream_image(s, &img);
  if (!rc) rc = qs_esrrf_partial_finish(p, s->mag, s->mpc, img.data);
  if (rc) {
    qs_image_free(&img);
    return stream_lost(s, rc);
  }
  stream_queue(s, &img, first, p->n, t0);
  return QS_OK;
}

/* The host blocks of a sliding window and the merge of the newer ones (at
 * the first completed block of a stream whose implementation does not
 * keep the window): N/K + 1 partials of 8·s·P bytes, with the block being
 * filled (s->cur) N/K + 2, as many as a ring and one merged window. */
static int stream_blocks(qs_esrrf_stream *s) {
  if (s->blocks) return QS_OK;
  s->n_blocks = s->window / s->every;
  s->blocks = calloc(s->n_blocks, sizeof *s->blocks);
  s->order = calloc(s->n_blocks, sizeof *s->order);
  int rc = s->blocks && s->order ? qs_esrrf_partial_init(&s->back, s->temporal,
                                                         s->rows_m, s->cols_m)
                                 : QS_ENOMEM;
  for (size_t i = 0; !rc && i < s->n_blocks; i++)
    rc = qs_esrrf_partial_init(&s->blocks[i], s->temporal, s->rows_m,
                               s->cols_m);
  return rc;
}

/* Pixels per range of a window update's passes (in a fused update the
 * back merge's range is still in cache when the window reads it). */
#define STREAM_RANGE 4096

/* Runs body over [b, e) for the stream's own work between calls (the
 * window update): on the engine's pool. */
static int stream_for(const void *env, size_t b, size_t e, qs_range_fn body,
                      void *ctx) {
  const qs_esrrf_stream *s = env;
  return plan_for(s->plan, b, e, body, ctx);
}

/* One window update: ranges of STREAM_RANGE pixels. The bodies never
 * fail (a loop is all or nothing for the stacks). */
typedef struct window_job {
  qs_esrrf_stream *s;
  float *out;
  const qs_esrrf_partial *two[2];   /* between flips: the suffix and back */
  const qs_esrrf_partial *prev, *c; /* the newest two blocks */
} window_job;

static int window_flip(void *ctx, size_t b, size_t e, int worker) {
  window_job *j = ctx;
  (void)worker;
  size_t end = e * STREAM_RANGE < j->s->plane ? e * STREAM_RANGE
                                              : j->s->plane;
  temporal_suffixes(j->s->order, j->s->n_blocks, j->out, b * STREAM_RANGE,
                    end);
  return 0;
}

static int window_update(void *ctx, size_t b0, size_t e0, int worker) {
  window_job *j = ctx;
  qs_esrrf_stream *s = j->s;
  size_t k = qs_esrrf_partial_slots(s->temporal);
  (void)worker;
  for (size_t r = b0; r < e0; r++) {
    size_t b = r * STREAM_RANGE;
    size_t e = s->plane - b < STREAM_RANGE ? s->plane : b + STREAM_RANGE;
    if (s->fresh == 2)
      memcpy(s->back.data + b * k, j->prev->data + b * k,
             (e - b) * k * sizeof(double));
    if (s->fresh >= 2) temporal_merge(&s->back, j->c, b, e);
    if (j->out) temporal_window(j->two, 2, j->out, b, e);
  }
  return 0;
}

/* The window's result from the ring by two stacks: at a flip (when every
 * block of the window is new since the last one) each block but the
 * oldest becomes in place the merge of itself and the newer ones (its
 * suffix) and the window is the oldest merged with the suffix after it
 * (temporal_suffixes); between flips the oldest block in the ring is the
 * suffix of the old blocks still in the window, `back` the merge of the
 * blocks since the flip, and the window is the two merged (temporal_window
 * on two): about 3 block reads and 1 write per update, plus the flip's N/K
 * reads and N/K − 2 writes once every N/K updates, where merging all the
 * blocks reads N/K at each. Chan's merges in another order: the same
 * statistic within rounding. Then the macro-pixel correction. */
static int stream_window(qs_esrrf_stream *s, double t0) {
  qs_image img;
  int rc = stream_image(s, &img);
  /* Without the image the result is lost but the stacks stay whole: a
   * flip waits for the next update (every block then new since the last
   * one), between flips `back` still takes the newest block. */
  if (rc) img.data = NULL;
  size_t nb = s->n_blocks, ranges = (s->plane + STREAM_RANGE - 1) /
                                    STREAM_RANGE;
  for (size_t i = 0; i < nb; i++)
    s->order[i] = &s->blocks[(s->head + i) % nb];
  window_job j = {.s = s, .out = img.data};
  qs_esrrf_partial after; /* back as it is once the newest block joins */
  if (s->fresh >= nb) {
    if (rc) return stream_lost(s, rc);
    rc = stream_for(s, 0, ranges, window_flip, &j);
    for (size_t i = nb - 1; i-- > 1;) s->order[i]->n += s->order[i + 1]->n;
    s->fresh = 0;
  } else {
    j.c = s->order[nb - 1];
    j.prev = s->order[nb - 2];
    if (s->fresh == 2) s->back.n = j.prev->n;
    after = s->back;
    after.n += j.c->n;
    j.two[0] = s->order[0];
    j.two[1] = s->fresh == 1 ? j.c : &after;
    int rf = stream_for(s, 0, ranges, window_update, &j);
    if (s->fresh >= 2) s->back.n += j.c->n;
    if (rc) return stream_lost(s, rc);
    rc = rf;
  }
  if (!rc && s->mpc)
    rc = temporal_mpc_with(stream_for, s, img.data, s->rows_m, s->cols_m,
                           s->mag);
  if (rc) {
    qs_image_free(&img);
    return stream_lost(s, rc);
  }
  stream_queue(s, &img, s->frames - s->window, s->window, t0);
  return QS_OK;
}

/* After `n` frames joined the current timepoint or block (folded into the
 * host partial, or kept where the implementation keeps them): a finished
 * timepoint's or window's image `img` (taken when set) or the host
 * partial's result, a completed block into the sliding ring and the
 * window's result. */
static int stream_advance(qs_esrrf_stream *s, uint64_t n, qs_image *img,
                          double t0) {
  if (s->cur_n == 0) s->cur_first = s->frames;
  s->cur_n += n;
  s->frames += n;
  if (s->sliding && s->ringed == 1) {
    if (s->cur_n == s->every) s->cur_n = 0;
    if (img && img->data)
      stream_queue(s, img, s->frames - s->window, s->window, t0);
    return QS_OK;
  }
  if (!s->sliding) {
    if (s->cur_n < s->window) return QS_OK;
    int rc = QS_OK;
    if (img && img->data)
      stream_queue(s, img, s->cur_first, s->cur_n, t0);
    else
      rc = stream_emit(s, &s->cur, s->cur_first, t0);
    qs_esrrf_partial_reset(&s->cur);
    s->cur_n = 0;
    return rc;
  }
  if (s->cur_n < s->every) return QS_OK;
  int rc = stream_blocks(s);
  if (rc) return stream_lost(s, rc);
  /* the block joins the ring in place of the oldest */
  qs_esrrf_partial t = s->blocks[s->head];
  s->blocks[s->head] = s->cur;
  s->cur = t;
  qs_esrrf_partial_reset(&s->cur);
  s->cur_n = 0;
  s->head = (s->head + 1) % s->n_blocks;
  if (s->filled < s->n_blocks) s->filled++;
  s->fresh++;
  if (s->filled < s->n_blocks) return QS_OK;
  return stream_window(s, t0);
}

/* n frames through the stream's plan with the sink as the run's argument;
 * the first run chooses. The implementation folds them (the sink); one that does not
 * know sinks gives their maps, folded here. */
static int stream_call(qs_esrrf_stream *s, const float *frames, size_t n,
                       double t0) {
  qs_image in = qs_image_wrap((float *)frames, n, s->rows, s->cols);
  size_t goal = s->sliding ? s->every : s->window;
  qs_image img = {0}, maps = {0};
  int rc = QS_OK;
  uint64_t end = s->frames + n;
  if (s->sliding ? s->ringed != 0 && end % s->every == 0 &&
                       end >= s->valid_from + s->window
                 : s->cur_n + n == goal)
    rc = stream_image(s, &img);
  if (rc) return stream_lost(s, rc);
  /* before the call: on a device the touching overlaps the units queued */
  if (stream_due(s, end) <= n) stream_spare(s);
  s->sink = (esrrf_sink){.kind = s->temporal,
                         .partial = &s->cur,
                         .device_ok = 1,
                         .n0 = s->cur_n,
                         .chunk = s->chunk < goal ? s->chunk : goal,
                         .out = img.data,
                         .ring = s->sliding ? s->window : 0,
                         .every = s->every,
                         .at = s->frames,
                         .due = stream_due(s, end)};
  qs_run_report rep;
  rc = plan_run_arg(s->plan, &in, 1, &s->sink, s->impl[0] ? s->impl : NULL,
                    &maps, 1, &rep);
  if (rc) {
    fail_msg(s->err, sizeof s->err, rc, "esrrf stream: %s",
             qs_engine_error(s->e));
    qs_image_free(&img);
    if (s->sink.lost) { /* the kept timepoint or window starts over */
      s->frames += s->sink.folded;
      s->valid_from = s->frames;
      s->cur_n = s->sliding ? s->frames % s->every : 0;
      qs_esrrf_partial_reset(&s->cur);
    } else if (s->sink.folded) { /* the frames folded before it stay */
      stream_advance(s, s->sink.folded, NULL, t0);
    }
    return rc;
  }
  if (!s->impl[0]) snprintf(s->impl, sizeof s->impl, "%s", rep.impl);
  if (s->sliding) s->ringed = s->sink.ringed;
  s->up += rep.bytes_up;
  s->down += rep.bytes_down;
  if (s->sink.folded != n) { /* maps, not folded */
    qs_esrrf_partial_add(&s->cur, maps.data, n);
    qs_image_free(&img);
  }
  if (s->sliding && !s->ringed) qs_image_free(&img);
  qs_image_free(&maps);
  rc = stream_advance(s, n, &img, t0);
  qs_image_free(&img);
  return rc;
}

int qs_esrrf_stream_push(qs_esrrf_stream *s, const qs_image *frames) {
  if (!s) return QS_EINVAL;
  double t0 = now_s();
  s->err[0] = '\0';
  if (s->ended)
    return fail_msg(s->err, sizeof s->err, QS_EINVAL,
                    "esrrf stream: push after the end of the stream");
  if (!frames || !frames->data || !frames->frames)
    return fail_msg(s->err, sizeof s->err, QS_EINVAL,
                    "esrrf stream: no frames to push");
  size_t all;
  if (qs_image_pixels(frames->frames, frames->rows, frames->cols, &all))
    return fail_msg(
        s->err, sizeof s->err, QS_EOVERFLOW,
        "esrrf stream: a push of %zu x %zu x %zu pixels is too large",
        frames->frames, frames->rows, frames->cols);
  if (frames->rows != s->rows || frames->cols != s->cols)
    return fail_msg(s->err, sizeof s->err, QS_ESHAPE,
                    "esrrf stream: frame of %zu x %zu pushed into a stream of "
                    "%zu x %zu",
                    frames->rows, frames->cols, s->rows, s->cols);
  size_t px = s->rows * s->cols, count = frames->frames;
  size_t i = esrrf_first_nonfinite(frames->data, count * px);
  if (i < count * px)
    return fail_msg(s->err, sizeof s->err, QS_EINVAL,
                    "esrrf stream: frame %zu of the push (stream frame %llu) "
                    "has %g at row %zu, column %zu; nothing was pushed",
                    i / px, (unsigned long long)(s->frames + i / px),
                    (double)frames->data[i], i % px / s->cols, i % s->cols);
  size_t done = stream_completes(s, count);
  if (s->q_n + done > s->max_pending)
    return fail_msg(
        s->err, sizeof s->err, QS_EOVERFLOW,
        "esrrf stream: the push completes %zu result(s) and %zu are "
        "waiting, more than max_pending %zu; pop them first",
        done, s->q_n, s->max_pending);
  int rc = QS_OK;
  for (size_t f = 0, n; !rc && f < count; f += n) {
    /* chunks never cross a timepoint or a block */
    size_t room = (s->sliding ? s->every : s->window) - (size_t)s->cur_n;
    n = count - f;
    if (n > s->chunk) n = s->chunk;
    if (n > room) n = room;
    rc = stream_call(s, frames->data + f * px, n, t0);
  }
  return rc;
}

int qs_esrrf_stream_pop(qs_esrrf_stream *s, qs_image *out,
                        qs_esrrf_stream_result *info, int *got) {
  if (got) *got = 0;
  if (!s || !out || !got) return QS_EINVAL;
  *out = (qs_image){0};
  if (!s->q_n) return QS_OK;
  pending *r = &s->q[s->q_head];
  *out = r->img;
  if (info) *info = r->info;
  r->img = (qs_image){0};
  s->q_head = (s->q_head + 1) % s->q_cap;
  s->q_n--;
  *got = 1;
  return QS_OK;
}

int qs_esrrf_stream_end(qs_esrrf_stream *s) {
  if (!s) return QS_EINVAL;
  if (s->ended) return QS_OK;
  s->ended = 1;
  char why[256] = "";
  if (s->sink.settle &&
      s->sink.settle(s->sink.finish_state, &s->up, why, sizeof why) != QS_OK) {
    qs_esrrf_partial_reset(&s->cur);
    s->cur_n = 0;
    return fail_msg(s->err, sizeof s->err, QS_ECL,
                    "esrrf stream: %s; the last %s is lost", why,
                    s->sliding ? "window" : "timepoint");
  }
  if (s->sliding || s->cur_n == 0) return QS_OK;
  if (s->temporal == TEMPORAL_TAC2 && s->cur_n < 2)
    return fail_msg(
        s->err, sizeof s->err, QS_EINVAL,
        "esrrf stream: the last timepoint has 1 frame, too few for "
        "tac2; discarded");
  /* the queue has one slot beyond max_pending for this result */
  double t0 = now_s();
  int rc = QS_OK;
  if (s->cur.n == s->cur_n) {
    rc = stream_emit(s, &s->cur, s->cur_first, t0);
  } else { /* on the device */
    qs_image img;
    rc = s->sink.finish ? stream_image(s, &img) : QS_EINVAL;
    if (!rc)
      rc = s->sink.finish(s->sink.finish_state, img.data, &s->down, why,
                          sizeof why);
    if (!rc)
      stream_queue(s, &img, s->cur_first, s->cur_n, t0);
    else if (s->sink.finish)
      qs_image_free(&img);
    if (rc)
      fail_msg(s->err, sizeof s->err, rc,
               "esrrf stream: cannot finish the last timepoint: %s",
               why[0] ? why : qs_status_message(rc));
  }
  qs_esrrf_partial_reset(&s->cur);
  s->cur_n = 0;
  return rc;
}

int qs_esrrf_stream_give(qs_esrrf_stream *s, qs_image *img) {
  if (!s || !img || !img->data) return QS_EINVAL;
  if (!img->owner_)
    return fail_msg(s->err, sizeof s->err, QS_EINVAL,
                    "esrrf stream: only an image the library allocated "
                    "(qs_esrrf_stream_pop, qs_image_alloc) can be given back");
  if (img->frames != 1 || img->rows != s->rows_m || img->cols != s->cols_m)
    return fail_msg(
        s->err, sizeof s->err, QS_ESHAPE,
        "esrrf stream: an image of %zu x %zu x %zu given back to a "
        "stream of 1 x %zu x %zu results",
        img->frames, img->rows, img->cols, s->rows_m, s->cols_m);
  if (s->spare.data) {
    qs_image_free(img);
  } else {
    s->spare = *img;
    *img = (qs_image){0};
  }
  return QS_OK;
}

uint64_t qs_esrrf_stream_frames(const qs_esrrf_stream *s) {
  return s ? s->frames : 0;
}

const char *qs_esrrf_stream_impl(const qs_esrrf_stream *s) {
  return s ? s->impl : "";
}

const char *qs_esrrf_stream_error(const qs_esrrf_stream *s) {
  return s ? s->err : "";
}

void qs_esrrf_stream_transfers(const qs_esrrf_stream *s, uint64_t *up,
                               uint64_t *down) {
  if (up) *up = s ? s->up : 0;
  if (down) *down = s ? s->down : 0;
}
