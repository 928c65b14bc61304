/* qsmpi.c — a quicksilver method over the ranks of an MPI communicator
 * (see quicksilver_mpi.h for the contract, the split and the chunk rule).
 *
 * Phases, in the same order on every rank so that a failure never leaves a
 * rank waiting in a collective the others skipped:
 *   1. open the engine, plan (page counts, parameters, units): local, then
 *      agreed by an Allreduce of the status;
 *   2. the work loop: chunks from the counter in the root's window;
 *   3. agree on the status; commit the output files written in place
 *      (or agree on the output shapes and gather the outputs);
 *   4. gather the per-rank reports, root composes totals and the message,
 *      broadcast them. */
#include "quicksilver_mpi.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "describe.h"
#include "outfile.h"
#include "tiff.h"

#define QSM_MAX_IO 16
/* Largest MPI message in floats (counts are int). */
#define QSM_MSG_FLOATS ((size_t)1 << 28)

/* Window layout on the root, in bytes: next unit (int64), failure flag
 * (int64), then one rate (double, units per busy second) per rank. */
enum { W_NEXT = 0, W_FAILED = 8, W_RATES = 16 };

typedef struct chunk {
  uint64_t u0, u1;
  qs_image out[QSM_MAX_IO];
  struct chunk *next;
} chunk;

typedef struct ctx {
  MPI_Comm comm;
  int rank, size, root;
  qs_engine *e;
  const qs_method_desc *d;
  const char *const *inputs;
  size_t n_in, n_out;
  size_t frames;         /* pages of every input */
  size_t in_rows[QSM_MAX_IO], in_cols[QSM_MAX_IO];
  size_t out_rows[QSM_MAX_IO], out_cols[QSM_MAX_IO];
  int direct;            /* outputs written in place: stack[0..n_out) */
  tiff_stack stack[QSM_MAX_IO];
  tiff_meta meta[QSM_MAX_IO]; /* the root's: what each output says */
  size_t fpt;            /* frames per unit */
  uint64_t units;
  int by_timepoints;
  int within;            /* timepoints split across ranks (T < ranks) */
  uint64_t out_frames;   /* frames of every output */
  int temporal, mag, mpc; /* esrrf's statistic, within mode */
  qs_param params[QS_MAX_PARAMS + 1];
  size_t n_params;
  qs_param map_params[QS_MAX_PARAMS + 1]; /* within: temporal=none */
  size_t n_map_params;
  const char *impl;
  uint64_t max_units;    /* per chunk, from max_chunk_bytes */
  long fail_rank;        /* fault injection, -1: none */
  long slow_rank;        /* QUICKSILVER_MPI_SLOW: this rank sleeps */
  double slow_seconds;   /* per unit it runs, -1: none */
  MPI_Win win;
  int64_t *wbuf;
  chunk *chunks, *last;
  qsm_rank me;
  size_t range_at;       /* where the last range starts in me.ranges */
  uint64_t range_start, range_end;
  double t0;
} ctx;

/* ------------------------------------------------------------- helpers */

uint64_t qsm_chunk_units(uint64_t remaining, double my_rate, double total_rate,
                         int have_rate) {
  if (remaining == 0) return 0;
  if (!have_rate || !(my_rate > 0) || !(total_rate >= my_rate)) return 1;
  double share = (double)remaining * (my_rate / total_rate) / 2;
  uint64_t n = share >= (double)remaining ? remaining : (uint64_t)share;
  return n < 1 ? 1 : n;
}

void qsm_default_db(char *buf, size_t len) {
  char host[64] = "host";
  if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "host");
  host[sizeof host - 1] = 0;
  for (char *p = host; *p; p++) {
    if (*p == '.') {
      *p = 0; /* the short name: the domain adds nothing within a site */
      break;
    }
    if (*p == '/' || *p == '\\') *p = '_';
  }
  char leaf[96];
  snprintf(leaf, sizeof leaf, "timings-%s.db", host);
  qs_engine_cache_path(leaf, buf, len); /* "" without a place */
}

void qsm_report_free(qsm_report *r) {
  if (!r) return;
  free(r->rank);
  r->rank = NULL;
}

/* Appends ",text" (or "text") to a fixed buffer, ending in "..." when it
 * does not fit. */
static void append(char *buf, size_t len, const char *text) {
  size_t n = strlen(buf);
  if (n >= len - 1 || (n >= 3 && !strcmp(buf + n - 3, "..."))) return;
  int k = snprintf(buf + n, len - n, "%s%s", n ? "," : "", text);
  if (k < 0 || (size_t)k >= len - n) snprintf(buf + len - 4, 4, "...");
}

/* Index of the parameter called name in d's table, or -1. */
static int param_index(const qs_method_desc *d, const char *name) {
  for (size_t i = 0; i < d->n_params; i++)
    if (!strcmp(d->params[i].name, name)) return (int)i;
  return -1;
}

/* -------------------------------------------------------------- phase 1 */

/* Ends the job from a rank that cannot go on with the collectives: the
 * output temporaries this process created go first (MPI_Abort does not
 * unwind, and the others' SIGTERM may come after this process is gone). */
static void qsm_abort(ctx *c) {
  outfile_remove_all();
  MPI_Abort(c->comm, 1);
}

static int open_engine(ctx *c, const qsm_options *o, char *err, size_t len) {
  qs_engine_options eo = o ? o->engine : (qs_engine_options){0};
  const char *env = getenv("QUICKSILVER_DB");
  char dflt[sizeof c->me.db];
  if (!eo.db_path && !(env && *env)) {
    qsm_default_db(dflt, sizeof dflt);
    if (dflt[0]) eo.db_path = dflt;
  }
  int rc = qs_engine_open(&c->e, &eo);
  if (rc && !c->e) {
    snprintf(err, len, "cannot open an engine: %s", qs_status_message(rc));
    return rc;
  }
  /* A damaged store leaves an engine that runs without recording. */
  if (rc && rc != QS_ECORRUPT) {
    snprintf(err, len, "%s", qs_engine_error(c->e));
    return rc;
  }
  snprintf(c->me.db, sizeof c->me.db, "%s", qs_engine_db_path(c->e));
  c->me.threads = qs_engine_threads(c->e);
  return QS_OK;
}

/* qs_method_estimate on inputs of `frames` frames: shapes only (no data). */
static int estimate_call(ctx *c, size_t frames, const qs_param *p, size_t n_p,
                         qs_run_report *rep) {
  qs_image in[QSM_MAX_IO];
  for (size_t i = 0; i < c->n_in; i++)
    in[i] = (qs_image){.data = NULL,
                       .frames = frames,
                       .rows = c->in_rows[i],
                       .cols = c->in_cols[i]};
  qs_run_request rq = {.inputs = in,
                       .n_inputs = c->n_in,
                       .params = p,
                       .n_params = n_p,
                       .impl = c->impl};
  memset(rep, 0, sizeof *rep);
  return qs_method_estimate(c->e, c->d->name, &rq, rep);
}

/* The engine's predicted seconds for `frames` frames with parameters p, or
 * -1 when it has no prediction (nothing timed on this device yet). */
static double estimate(ctx *c, size_t frames, const qs_param *p, size_t n_p) {
  qs_run_report rep;
  if (estimate_call(c, frames, p, n_p, &rep)) return -1;
  for (size_t i = 0; i < rep.n_estimates && i < QS_MAX_ESTIMATES; i++)
    if (!strcmp(rep.estimates[i].impl, rep.impl))
      return rep.estimates[i].seconds > 0 ? rep.estimates[i].seconds : -1;
  return -1;
}

static int plan_chunks(ctx *c, const char *method, const qs_param *params,
                       size_t n_params, size_t max_bytes, char *err,
                       size_t len) {
  c->d = qs_method_find(c->e, method);
  if (!c->d) {
    snprintf(err, len, "unknown method '%s'", method);
    return QS_ENOMETHOD;
  }
  const qs_method_desc *d = c->d;
  if (c->n_in != d->n_inputs || c->n_in > QSM_MAX_IO) {
    snprintf(err, len, "%s takes %zu input%s, got %zu", d->name, d->n_inputs,
             d->n_inputs == 1 ? "" : "s", c->n_in);
    return QS_EINVAL;
  }
  if (c->n_out > d->n_outputs || d->n_outputs > QSM_MAX_IO) {
    snprintf(err, len, "%s has %zu output%s, %zu asked for", d->name,
             d->n_outputs, d->n_outputs == 1 ? "" : "s", c->n_out);
    return QS_EINVAL;
  }
  if (n_params > QS_MAX_PARAMS) {
    snprintf(err, len, "too many parameters (%zu)", n_params);
    return QS_EPARAM;
  }
  double frame_bytes = 0; /* one page of every input, as float */
  for (size_t k = 0; k < c->n_in; k++) {
    tiff_info ti;
    int rc = tiff_info_of(c->inputs[k], &ti, err, len);
    if (!rc) rc = qsm_axes_check(c->inputs[k], &ti.meta, err, len);
    if (rc) return rc;
    size_t pages = ti.pages;
    c->in_rows[k] = ti.rows;
    c->in_cols[k] = ti.cols;
    frame_bytes += (double)ti.rows * (double)ti.cols * sizeof(float);
    if (k == 0) c->frames = pages;
    if (pages != c->frames) {
      snprintf(err, len,
               "%s has %zu pages, %s has %zu: inputs split by frame "
               "need the same number",
               c->inputs[0], c->frames, c->inputs[k], pages);
      return QS_ESHAPE;
    }
  }
  double values[QS_MAX_PARAMS];
  int rc = qs_params_resolve(d->params, d->n_params, params, n_params, values,
                             err, len);
  if (rc) return rc;
  /* The whole call checked as one process would check it (shapes,
   * parameters, the implementation asked for), before any work. */
  qs_run_report rep;
  rc = estimate_call(c, c->frames, params, n_params, &rep);
  if (rc) {
    snprintf(err, len, "%s", qs_engine_error(c->e));
    return rc;
  }

  /* A method with a temporal statistic over frames_per_timepoint frames
   * (esrrf) splits by whole timepoints unless the statistic is "none". */
  int i_fpt = param_index(d, "frames_per_timepoint"),
      i_tmp = param_index(d, "temporal");
  double none = -1;
  char perr[64];
  if (i_tmp >= 0 &&
      qs_params_parse(&d->params[i_tmp], "none", &none, perr, sizeof perr))
    none = -1;
  c->by_timepoints = i_fpt >= 0 && i_tmp >= 0 && values[i_tmp] != none;
  c->fpt = 1;
  c->n_params = 0;
  for (size_t i = 0; i < n_params; i++)
    if (!c->by_timepoints || strcmp(params[i].name, "frames_per_timepoint"))
      c->params[c->n_params++] = params[i];
  if (c->by_timepoints) {
    size_t fpt = (size_t)values[i_fpt];
    c->fpt = fpt == 0 || fpt > c->frames ? c->frames : fpt;
    /* Every chunk is whole timepoints: its frames_per_timepoint is the
     * resolved one, never "all frames of the chunk". */
    c->params[c->n_params++] =
        (qs_param){.name = "frames_per_timepoint", .value = (double)c->fpt};
  }
  c->units = c->frames == 0 ? 0 : (c->frames + c->fpt - 1) / c->fpt;
  c->out_frames = c->units;
  /* Fewer timepoints than ranks: eSRRF's timepoints are split across ranks
   * through the public partial statistic; the units are then frames. */
  int i_mag = param_index(d, "magnification"),
      i_mpc = param_index(d, "macro_pixel_correction");
  if (c->by_timepoints && c->units < (uint64_t)c->size && i_mag >= 0 &&
      i_mpc >= 0 && !strcmp(d->name, "esrrf") &&
      qs_esrrf_partial_slots((int)values[i_tmp]) > 0) {
    c->within = 1;
    c->temporal = (int)values[i_tmp];
    c->mag = (int)values[i_mag];
    c->mpc = values[i_mpc] != 0;
    c->n_map_params = 0;
    for (size_t i = 0; i < n_params; i++)
      if (strcmp(params[i].name, "temporal") &&
          strcmp(params[i].name, "frames_per_timepoint"))
        c->map_params[c->n_map_params++] = params[i];
    c->map_params[c->n_map_params++] =
        (qs_param){.name = "temporal", .text = "none"};
    c->units = c->frames;
  }
  /* A chunk holds its input and its outputs: both count against the cap. */
  double unit_bytes = (double)(c->within ? 1 : c->fpt) * frame_bytes;
  for (size_t k = 0; k < d->n_outputs; k++) { /* no shape rule: as input 0 */
    c->out_rows[k] = c->in_rows[0];
    c->out_cols[k] = c->in_cols[0];
  }
  if (d->shape) {
    qs_image in[QSM_MAX_IO],
        out[QSM_MAX_IO]; /* shape rules take shapes only */
    for (size_t k = 0; k < c->n_in; k++)
      in[k] = (qs_image){.data = NULL,
                         .frames = c->frames,
                         .rows = c->in_rows[k],
                         .cols = c->in_cols[k]};
    memset(out, 0, sizeof out);
    rc = d->shape(in, values, out, err, len);
    if (rc) return rc;
    for (size_t k = 0; k < d->n_outputs; k++) {
      c->out_rows[k] = out[k].rows;
      c->out_cols[k] = out[k].cols;
    }
  }
  for (size_t k = 0; k < d->n_outputs; k++)
    unit_bytes += (double)c->out_rows[k] * (double)c->out_cols[k] * 4;
  double cap = (double)max_bytes / (unit_bytes > 0 ? unit_bytes : 1);
  c->max_units = cap < 1 ? 1 : cap > 1e18 ? (uint64_t)1e18 : (uint64_t)cap;
  return QS_OK;
}

/* ------------------------------------------------------------ agreement */

/* 64-bit FNV-1a over n bytes, continuing from h. */
static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

static uint64_t fnv_str(uint64_t h, const char *s) {
  return fnv(h, s ? s : "", s ? strlen(s) + 1 : 1);
}

/* What every rank must agree on before anything is written: [0] the
 * method, every resolved parameter and the options that shape the work
 * (implementation, gather, chunk cap, input and output counts); [1] every
 * input's page count and page size; [2] the pixels of sample pages of
 * every input (the first, the last and two between: reading all of them
 * on every rank would undo the split), as float32 after decoding. A rank
 * given another file of the same shape, another --radius, or a node whose
 * copy of the input differs, is caught here. */
static int agree_hash(ctx *c, const qs_param *params, size_t n_params,
                      int gather, size_t max_bytes, uint64_t h[3], char *err,
                      size_t len) {
  const uint64_t seed = 0xcbf29ce484222325ull;
  double v[QS_MAX_PARAMS];
  int rc = qs_params_resolve(c->d->params, c->d->n_params, params, n_params, v,
                             err, len);
  if (rc) return rc;
  h[0] = fnv_str(seed, c->d->name);
  h[0] = fnv(h[0], v, c->d->n_params * sizeof *v);
  h[0] = fnv_str(h[0], c->impl);
  uint64_t opts[4] = {(uint64_t)gather, (uint64_t)max_bytes, c->n_in,
                      c->n_out};
  h[0] = fnv(h[0], opts, sizeof opts);
  h[1] = fnv(seed, &c->frames, sizeof c->frames);
  h[2] = seed;
  for (size_t k = 0; k < c->n_in; k++) {
    h[1] = fnv(h[1], &c->in_rows[k], sizeof c->in_rows[k]);
    h[1] = fnv(h[1], &c->in_cols[k], sizeof c->in_cols[k]);
    size_t at[4] = {0, c->frames / 3, 2 * c->frames / 3,
                    c->frames ? c->frames - 1 : 0};
    for (size_t j = 0; j < 4 && c->frames; j++) {
      if (j && at[j] == at[j - 1]) continue;
      qs_image pg;
      rc = tiff_read_pages(c->inputs[k], at[j], 1, &pg, err, len);
      if (rc) return rc;
      h[2] = fnv(h[2], &at[j], sizeof at[j]);
      h[2] = fnv(h[2], pg.data, pg.rows * pg.cols * sizeof(float));
      qs_image_free(&pg);
    }
  }
  return QS_OK;
}

/* Collective: every rank's three hashes against the root's. A rank that
 * differs fails with a message naming what differs (the root names the
 * rank in the job's one message). Returns this rank's status. */
static int agree(ctx *c, const qs_param *params, size_t n_params, int gather,
                 size_t max_bytes, char *err, size_t len) {
  uint64_t mine[3] = {0, 0, 0}, root[3];
  int rc = agree_hash(c, params, n_params, gather, max_bytes, mine, err, len);
  memcpy(root, mine, sizeof root);
  MPI_Bcast(root, 3, MPI_UINT64_T, c->root, c->comm);
  if (c->rank == c->root)
    c->me.bytes_sent += sizeof root * (size_t)(c->size - 1);
  else
    c->me.bytes_received += sizeof root;
  if (rc) return rc;
  static const char *const what[3] = {
      "its method, parameters or options",
      "the shape of its input (pages, rows, columns)",
      "the pixels of its input (sample pages)"};
  for (int k = 0; k < 3; k++)
    if (mine[k] != root[k]) {
      snprintf(err, len,
               "%s differ from rank %d's: every rank must be given the same "
               "arguments and read the same input files (%s); nothing was "
               "written",
               what[k], c->root, c->inputs[0]);
      return QS_EMISMATCH;
    }
  return QS_OK;
}

/* -------------------------------------------------------------- phase 2 */

static void win_count(ctx *c, size_t sent, size_t received) {
  c->me.bytes_sent += sent;
  c->me.bytes_received += received;
}

/* Reads the counter, the failure flag and every rank's rate. */
static void win_peek(ctx *c, int64_t head[2], double *rates) {
  MPI_Get_accumulate(NULL, 0, MPI_INT64_T, head, 2, MPI_INT64_T, c->root,
                     W_NEXT, 2, MPI_INT64_T, MPI_NO_OP, c->win);
  MPI_Get_accumulate(NULL, 0, MPI_DOUBLE, rates, c->size, MPI_DOUBLE, c->root,
                     W_RATES, c->size, MPI_DOUBLE, MPI_NO_OP, c->win);
  MPI_Win_flush(c->root, c->win);
  win_count(c, 0, 16 + 8 * (size_t)c->size);
}

static void win_put_rate(ctx *c, double rate) {
  MPI_Accumulate(&rate, 1, MPI_DOUBLE, c->root,
                 W_RATES + 8 * (MPI_Aint)c->rank, 1, MPI_DOUBLE, MPI_REPLACE,
                 c->win);
  MPI_Win_flush(c->root, c->win);
  win_count(c, 8, 0);
}

static void win_fail(ctx *c) {
  int64_t one = 1;
  MPI_Accumulate(&one, 1, MPI_INT64_T, c->root, W_FAILED, 1, MPI_INT64_T,
                 MPI_REPLACE, c->win);
  MPI_Win_flush(c->root, c->win);
  win_count(c, 8, 0);
}

/* Takes up to n units; returns the first one (>= units when none left). */
static uint64_t win_take(ctx *c, uint64_t n) {
  int64_t add = (int64_t)n, old = 0;
  MPI_Fetch_and_op(&add, &old, MPI_INT64_T, c->root, W_NEXT, MPI_SUM, c->win);
  MPI_Win_flush(c->root, c->win);
  win_count(c, 8, 8);
  return (uint64_t)old;
}

static void note_impl(ctx *c, const char *impl) {
  char list[sizeof c->me.impl + 2];
  snprintf(list, sizeof list, ",%s,", c->me.impl);
  char key[QS_NAME_MAX + 2];
  snprintf(key, sizeof key, ",%s,", impl);
  if (!strstr(list, key)) append(c->me.impl, sizeof c->me.impl, impl);
}

/* Adds units [u0, u1) to the report's ranges, extending the last range
 * when they follow it. */
static void note_range(ctx *c, uint64_t u0, uint64_t u1) {
  char *text = c->me.ranges;
  if (c->range_end == u0 && c->range_end > 0) {
    text[c->range_at] = 0; /* rewrite the last range */
    u0 = c->range_start;
  }
  c->range_at = strlen(text);
  c->range_start = u0;
  c->range_end = u1;
  char r[48];
  if (u1 - u0 == 1)
    snprintf(r, sizeof r, "%llu", (unsigned long long)u0);
  else
    snprintf(r, sizeof r, "%llu-%llu", (unsigned long long)u0,
             (unsigned long long)(u1 - 1));
  append(text, sizeof c->me.ranges, r);
}

/* Pages [f0, f1) of every input into in[] (counted in the report). */
static int read_frames(ctx *c, size_t f0, size_t f1, qs_image *in, char *err,
                       size_t len) {
  double t = MPI_Wtime();
  int rc = QS_OK;
  for (size_t i = 0; !rc && i < c->n_in; i++) {
    rc = tiff_read_pages(c->inputs[i], f0, f1 - f0, &in[i], err, len);
    if (!rc) {
      c->me.pages_read += f1 - f0;
      c->me.bytes_read += (uint64_t)(f1 - f0) * in[i].rows * in[i].cols * 4;
    }
  }
  c->me.read_seconds += MPI_Wtime() - t;
  return rc;
}

/* Runs the method on in[] with the given parameters into out[]. */
static int run_method(ctx *c, qs_image *in, const qs_param *p, size_t n_p,
                      qs_image *out, char *err, size_t len) {
  qs_run_request rq = {.inputs = in,
                       .n_inputs = c->n_in,
                       .params = p,
                       .n_params = n_p,
                       .impl = c->impl};
  qs_run_report rep;
  memset(&rep, 0, sizeof rep);
  int rc = qs_method_run(c->e, c->d->name, &rq, out, c->d->n_outputs, &rep);
  if (rc) {
    snprintf(err, len, "%s", qs_engine_error(c->e));
    return rc;
  }
  c->me.run_seconds += rep.seconds;
  c->me.calibration_seconds += rep.calibration_seconds;
  note_impl(c, rep.impl);
  return QS_OK;
}

/* Keeps a chunk's outputs for the gather; when writing in place, writes
 * the asked-for outputs into their pages of the output files at once and
 * frees them instead. */
static int keep(ctx *c, chunk *k, char *err, size_t len) {
  if (!c->direct) {
    if (c->last)
      c->last->next = k;
    else
      c->chunks = k;
    c->last = k;
    return QS_OK;
  }
  int rc = QS_OK;
  for (size_t i = 0; i < c->n_out && !rc; i++) {
    const qs_image *o = &k->out[i];
    if (o->rows != c->out_rows[i] || o->cols != c->out_cols[i]) {
      snprintf(err, len, "%s: output %s is %zux%zu, expected %zux%zu",
               c->d->name, c->d->outputs[i].name, o->rows, o->cols,
               c->out_rows[i], c->out_cols[i]);
      rc = QS_ESHAPE;
      break;
    }
    double t = MPI_Wtime();
    rc = tiff_stack_write(&c->stack[i], (size_t)k->u0, o->frames, o->data,
                          err, len);
    c->me.write_seconds += MPI_Wtime() - t;
    if (!rc) c->me.bytes_written += o->frames * o->rows * o->cols * 4;
  }
  for (size_t i = 0; i < QSM_MAX_IO; i++)
    qs_image_free(&k->out[i]);
  free(k);
  return rc;
}

/* Units [u0, u1): read their pages, run the method, keep the outputs. */
static int run_chunk(ctx *c, uint64_t u0, uint64_t u1, char *err, size_t len) {
  size_t f0 = (size_t)u0 * c->fpt, f1 = (size_t)u1 * c->fpt;
  if (f1 > c->frames) f1 = c->frames;
  qs_image in[QSM_MAX_IO] = {{0}};
  chunk *k = calloc(1, sizeof *k);
  if (!k) {
    snprintf(err, len, "out of memory");
    return QS_ENOMEM;
  }
  k->u0 = u0;
  k->u1 = u1;
  int rc = read_frames(c, f0, f1, in, err, len);
  if (!rc) {
    rc = run_method(c, in, c->params, c->n_params, k->out, err, len);
    /* the method counts frames from the chunk's first: say which pages
     * of the input those are (a refused NaN names its frame) */
    if (rc && strstr(err, "frame")) {
      char why[1024];
      snprintf(why, sizeof why, "%s", err);
      snprintf(err, len, "input pages [%zu, %zu): %.900s", f0, f1, why);
    }
  }
  for (size_t i = 0; !rc && i < c->d->n_outputs; i++)
    if (k->out[i].frames != u1 - u0) {
      snprintf(err, len,
               "%s gives %zu frames of output %s for %llu units: its outputs "
               "are not one frame per %s",
               c->d->name, k->out[i].frames, c->d->outputs[i].name,
               (unsigned long long)(u1 - u0),
               c->by_timepoints ? "timepoint" : "input frame");
      rc = QS_ESHAPE;
    }
  for (size_t i = 0; i < c->n_in; i++)
    qs_image_free(&in[i]);
  if (!rc && c->slow_rank == c->rank) { /* a slower node, for tests */
    double d = c->slow_seconds * (double)(u1 - u0);
    struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
    nanosleep(&ts, NULL);
  }
  if (rc) {
    for (size_t i = 0; i < QSM_MAX_IO; i++)
      qs_image_free(&k->out[i]);
    free(k);
    return rc;
  }
  c->me.chunks++;
  c->me.units += u1 - u0;
  note_range(c, u0, u1);
  return keep(c, k, err, len);
}

static int injected(ctx *c, char *err, size_t len) {
  if (c->fail_rank != c->rank) return QS_OK;
  /* as a device that fails to start */
  snprintf(err, len, "fault injected by QUICKSILVER_MPI_FAIL=%ld",
           c->fail_rank);
  return QS_EFAIL;
}

/* The dispenser loop: timepoints or frames in chunks (the chunk rule). */
static int work(ctx *c, char *err, size_t len) {
  double *rates = calloc((size_t)c->size, sizeof *rates);
  int rc = rates ? injected(c, err, len) : QS_ENOMEM;
  if (!rates) snprintf(err, len, "out of memory");
  if (rc) {
    win_fail(c);
    free(rates);
    return rc;
  }
  /* The engine's prediction for one unit, when it has one, sizes the first
   * chunk instead of a one-unit probe. */
  double est = estimate(c, c->fpt < c->frames ? c->fpt : c->frames, c->params,
                        c->n_params);
  if (est > 0) win_put_rate(c, 1 / est);
  double busy = 0; /* seconds in chunks, calibration excluded */
  for (;;) {
    int64_t head[2];
    win_peek(c, head, rates);
    if (head[1] || (uint64_t)head[0] >= c->units) break;
    double total = 0, known = 0;
    int n_known = 0;
    for (int r = 0; r < c->size; r++)
      if (rates[r] > 0) total += rates[r], n_known++;
    known = total;
    if (n_known) total += (c->size - n_known) * (known / n_known);
    uint64_t n = qsm_chunk_units(c->units - (uint64_t)head[0], rates[c->rank],
                                 total, rates[c->rank] > 0);
    if (n > c->max_units) n = c->max_units;
    uint64_t u0 = win_take(c, n);
    if (u0 >= c->units) break;
    uint64_t u1 = u0 + n < c->units ? u0 + n : c->units;
    double t = MPI_Wtime(), cal0 = c->me.calibration_seconds;
    rc = run_chunk(c, u0, u1, err, len);
    if (rc) {
      win_fail(c);
      break;
    }
    busy += MPI_Wtime() - t - (c->me.calibration_seconds - cal0);
    c->me.busy_seconds = MPI_Wtime() - c->t0;
    if (busy > 0) win_put_rate(c, (double)c->me.units / busy);
  }
  free(rates);
  return rc;
}

/* ------------------------------------------------ within a timepoint */

/* Within mode: frames [block[r], block[r + 1]) go to rank r, contiguous in
 * time and sized by the engines' predicted speeds (equal when none has a
 * prediction): the partials of a timepoint then merge pairwise in rank
 * order, one partial per rank and timepoint, whatever the number of
 * chunks. (Dispensing frames from the counter would leave a rank with many
 * non-adjacent runs of a timepoint, each a full-size partial to move.) */
static int blocks_of(ctx *c, uint64_t *block, char *err, size_t len) {
  double mine = estimate(c, 1, c->map_params, c->n_map_params);
  double *sec = calloc((size_t)c->size, sizeof *sec);
  if (!sec) {
    snprintf(err, len, "out of memory");
    return QS_ENOMEM;
  }
  MPI_Allgather(&mine, 1, MPI_DOUBLE, sec, 1, MPI_DOUBLE, c->comm);
  c->me.bytes_sent += 8;
  c->me.bytes_received += 8 * (size_t)c->size;
  double known = 0, total = 0;
  int n_known = 0;
  for (int r = 0; r < c->size; r++)
    if (sec[r] > 0) known += 1 / sec[r], n_known++;
  double unknown = n_known ? known / n_known : 1; /* weight of the others */
  for (int r = 0; r < c->size; r++) total += sec[r] > 0 ? 1 / sec[r] : unknown;
  double cum = 0;
  block[0] = 0;
  for (int r = 0; r < c->size; r++) {
    cum += sec[r] > 0 ? 1 / sec[r] : unknown;
    block[r + 1] = r + 1 == c->size ? c->frames
                                    : (uint64_t)((double)c->frames * cum /
                                                     total + 0.5);
    if (block[r + 1] < block[r]) block[r + 1] = block[r];
  }
  free(sec);
  return QS_OK;
}

typedef struct piece {
  uint64_t t;          /* timepoint */
  qs_esrrf_partial p;
} piece;

/* Folds frames [f0, f1) (inside one timepoint) into *p, in batches of at
 * most max_units frames: each batch's RGC maps (the method with
 * temporal=none) are added in time order. */
static int fold(ctx *c, uint64_t f0, uint64_t f1, qs_esrrf_partial *p,
                char *err, size_t len) {
  int rc = QS_OK;
  for (uint64_t a = f0; !rc && a < f1;) {
    uint64_t b = f1 - a < c->max_units ? f1 : a + c->max_units;
    qs_image in[QSM_MAX_IO] = {{0}}, maps[QSM_MAX_IO] = {{0}};
    rc = read_frames(c, (size_t)a, (size_t)b, in, err, len);
    if (!rc)
      rc = run_method(c, in, c->map_params, c->n_map_params, maps, err, len);
    if (!rc && (maps[0].rows != p->rows || maps[0].cols != p->cols ||
                maps[0].frames != b - a)) {
      snprintf(err, len, "esrrf maps of %zux%zux%zu, expected %llux%zux%zu",
               maps[0].frames, maps[0].rows, maps[0].cols,
               (unsigned long long)(b - a), p->rows, p->cols);
      rc = QS_ESHAPE;
    }
    if (!rc) rc = qs_esrrf_partial_add(p, maps[0].data, (size_t)(b - a));
    if (rc && !err[0])
      snprintf(err, len, "esrrf partial: %s", qs_status_message(rc));
    for (size_t i = 0; i < QSM_MAX_IO; i++)
      qs_image_free(&in[i]), qs_image_free(&maps[i]);
    if (!rc) {
      c->me.chunks++;
      c->me.units += b - a;
      note_range(c, a, b);
    }
    a = b;
  }
  return rc;
}

/* The partial of timepoint t as an image chunk for the gather. */
static int finish_piece(ctx *c, const piece *q, char *err, size_t len) {
  chunk *k = calloc(1, sizeof *k);
  int rc = k ? qs_image_alloc(&k->out[0], 1, q->p.rows, q->p.cols) : QS_ENOMEM;
  if (!rc) rc = qs_esrrf_partial_finish(&q->p, c->mag, c->mpc, k->out[0].data);
  if (rc) {
    snprintf(err, len, "timepoint %llu: cannot finish its statistic: %s",
             (unsigned long long)q->t, qs_status_message(rc));
    if (k) qs_image_free(&k->out[0]);
    free(k);
    return rc;
  }
  k->u0 = q->t;
  k->u1 = q->t + 1;
  return keep(c, k, err, len);
}

/* A partial between ranks: its map count, then its doubles. */
static void send_partial(ctx *c, const qs_esrrf_partial *p, int to) {
  uint64_t n = p->n;
  MPI_Send(&n, 1, MPI_UINT64_T, to, 3, c->comm);
  size_t total = p->rows * p->cols * qs_esrrf_partial_slots(p->temporal);
  for (size_t at = 0; n && at < total; at += QSM_MSG_FLOATS) {
    size_t k = total - at < QSM_MSG_FLOATS ? total - at : QSM_MSG_FLOATS;
    MPI_Send(p->data + at, (int)k, MPI_DOUBLE, to, 4, c->comm);
    c->me.bytes_sent += k * sizeof(double);
  }
  c->me.bytes_sent += 8;
}

static void recv_partial(ctx *c, qs_esrrf_partial *p, int from) {
  uint64_t n = 0;
  MPI_Recv(&n, 1, MPI_UINT64_T, from, 3, c->comm, MPI_STATUS_IGNORE);
  size_t total = p->rows * p->cols * qs_esrrf_partial_slots(p->temporal);
  for (size_t at = 0; n && at < total; at += QSM_MSG_FLOATS) {
    size_t k = total - at < QSM_MSG_FLOATS ? total - at : QSM_MSG_FLOATS;
    MPI_Recv(p->data + at, (int)k, MPI_DOUBLE, from, 4, c->comm,
             MPI_STATUS_IGNORE);
    c->me.bytes_received += k * sizeof(double);
  }
  p->n = n;
  c->me.bytes_received += 8;
}

/* Within mode. Compute: every rank folds its block, one partial per
 * timepoint it touches (a timepoint wholly inside its block is finished on
 * the spot: the same fold as one process, so the same bits). Then, once all
 * ranks have succeeded, each shared timepoint's partials merge pairwise in
 * rank order (a binary tree: log2 of the ranks sharing it in steps) into
 * its first rank, which finishes it. TAC2's product across a boundary
 * needs no overlap and no separate exchange: a partial carries its first
 * map and last shifted value, and the merge forms the product. */
static int work_within(ctx *c, char *err, size_t len) {
  uint64_t *block = calloc((size_t)c->size + 1, sizeof *block);
  piece *pieces = NULL;
  size_t n_pieces = 0;
  size_t rows = c->in_rows[0] * (size_t)c->mag,
         cols = c->in_cols[0] * (size_t)c->mag;
  if (!block) qsm_abort(c); /* 8 bytes a rank */
  int rc = injected(c, err, len);
  int brc = blocks_of(c, block, err, len); /* collective */
  if (!rc) rc = brc;
  uint64_t T = c->out_frames;
  /* Timepoints [t_lo, t_hi] overlap this rank's block (none if empty). */
  uint64_t b0 = block[c->rank], b1 = block[c->rank + 1];
  if (!rc && b1 > b0) {
    uint64_t t_lo = b0 / c->fpt, t_hi = (b1 - 1) / c->fpt;
    pieces = calloc((size_t)(t_hi - t_lo + 1), sizeof *pieces);
    if (!pieces) {
      snprintf(err, len, "out of memory");
      rc = QS_ENOMEM;
    }
    for (uint64_t t = t_lo; !rc && t <= t_hi; t++) {
      uint64_t s0 = t * c->fpt, s1 = s0 + c->fpt < c->frames ? s0 + c->fpt
                                                            : c->frames;
      piece *q = &pieces[n_pieces++];
      q->t = t;
      rc = qs_esrrf_partial_init(&q->p, c->temporal, rows, cols);
      if (rc)
        snprintf(err, len, "no memory for a %zux%zu partial", rows, cols);
      if (!rc) rc = fold(c, s0 > b0 ? s0 : b0, s1 < b1 ? s1 : b1, &q->p, err,
                         len);
      if (!rc && s0 >= b0 && s1 <= b1) { /* whole timepoint here */
        rc = finish_piece(c, q, err, len);
        qs_esrrf_partial_free(&q->p);
      }
    }
  }
  c->me.busy_seconds = MPI_Wtime() - c->t0;
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, c->comm);
  double merge0 = MPI_Wtime();
  /* Merge every timepoint shared by several ranks. */
  for (uint64_t t = 0; !worst && t < T; t++) {
    uint64_t s0 = t * c->fpt, s1 = s0 + c->fpt < c->frames ? s0 + c->fpt
                                                          : c->frames;
    int ra = -1, rb = -1;
    for (int r = 0; r < c->size; r++)
      if (block[r] < s1 && block[r + 1] > s0) {
        if (ra < 0) ra = r;
        rb = r;
      }
    if (ra == rb || c->rank < ra || c->rank > rb) continue;
    piece *q = NULL, empty = {.t = t};
    for (size_t i = 0; i < n_pieces; i++)
      if (pieces[i].t == t) q = &pieces[i];
    if (!q) { /* an empty block between two sharing ranks */
      q = &empty;
      if (qs_esrrf_partial_init(&q->p, c->temporal, rows, cols)) qsm_abort(c);
    }
    qs_esrrf_partial next;
    if (qs_esrrf_partial_init(&next, c->temporal, rows, cols)) qsm_abort(c);
    int i = c->rank - ra, g = rb - ra + 1;
    for (int step = 1; step < g; step *= 2) {
      if (i % (2 * step) == step) {
        send_partial(c, &q->p, ra + i - step);
        break;
      }
      if (i % (2 * step) == 0 && i + step < g) {
        recv_partial(c, &next, ra + i + step);
        if (qs_esrrf_partial_merge(&q->p, &next)) qsm_abort(c);
      }
    }
    qs_esrrf_partial_free(&next);
    if (i == 0 && !rc) rc = finish_piece(c, q, err, len);
    qs_esrrf_partial_free(&q->p);
  }
  for (size_t i = 0; i < n_pieces; i++)
    qs_esrrf_partial_free(&pieces[i].p);
  free(pieces);
  free(block);
  c->me.merge_seconds = MPI_Wtime() - merge0;
  return rc;
}

/* -------------------------------------------------------------- phase 3 */

static void chunks_free(ctx *c) {
  while (c->chunks) {
    chunk *k = c->chunks;
    c->chunks = k->next;
    for (size_t i = 0; i < QSM_MAX_IO; i++)
      qs_image_free(&k->out[i]);
    free(k);
  }
  c->last = NULL;
}

/* Frames [0, n) of float data between a rank and the root, in messages
 * of at most QSM_MSG_FLOATS. */
static void send_floats(ctx *c, const float *p, size_t n) {
  for (size_t at = 0; at < n; at += QSM_MSG_FLOATS) {
    size_t k = n - at < QSM_MSG_FLOATS ? n - at : QSM_MSG_FLOATS;
    MPI_Send(p + at, (int)k, MPI_FLOAT, c->root, 2, c->comm);
    c->me.bytes_sent += k * sizeof(float);
  }
}

static void recv_floats(ctx *c, float *p, size_t n, int from) {
  for (size_t at = 0; at < n; at += QSM_MSG_FLOATS) {
    size_t k = n - at < QSM_MSG_FLOATS ? n - at : QSM_MSG_FLOATS;
    MPI_Recv(p + at, (int)k, MPI_FLOAT, from, 2, c->comm, MPI_STATUS_IGNORE);
    c->me.bytes_received += k * sizeof(float);
  }
}

/* Agrees on the output shapes (every chunk's outputs have the same rows and
 * cols), then gathers every chunk into outputs on the root. Collective;
 * returns the same status everywhere. */
static int gather(ctx *c, qs_image *outputs, char *err, size_t len) {
  size_t n = c->d->n_outputs;
  int64_t ext[4 * QSM_MAX_IO] = {0}, all[4 * QSM_MAX_IO];
  for (size_t i = 0; i < n; i++) {
    const qs_image *o = c->chunks ? &c->chunks->out[i] : NULL;
    ext[4 * i] = o ? (int64_t)o->rows : 0;        /* max */
    ext[4 * i + 1] = o ? (int64_t)o->cols : 0;
    ext[4 * i + 2] = o ? -(int64_t)o->rows : -INT64_MAX; /* -min */
    ext[4 * i + 3] = o ? -(int64_t)o->cols : -INT64_MAX;
  }
  for (chunk *k = c->chunks; k; k = k->next)
    for (size_t i = 0; i < n; i++)
      if ((int64_t)k->out[i].rows != ext[4 * i] ||
          (int64_t)k->out[i].cols != ext[4 * i + 1])
        ext[4 * i] = INT64_MAX; /* differs within the rank */
  MPI_Allreduce(ext, all, (int)(4 * n), MPI_INT64_T, MPI_MAX, c->comm);
  int rc = QS_OK;
  for (size_t i = 0; i < n && !rc; i++)
    if (all[4 * i] != -all[4 * i + 2] || all[4 * i + 1] != -all[4 * i + 3] ||
        all[4 * i] <= 0) {
      snprintf(err, len, "%s: chunks disagree on the shape of output %s",
               c->d->name, c->d->outputs[i].name);
      rc = QS_ESHAPE;
    }
  if (rc) return rc;
  /* The root allocates and tells everyone whether to send. */
  int ok = 1;
  if (c->rank == c->root)
    for (size_t i = 0; i < n && ok; i++)
      if (qs_image_alloc(&outputs[i], (size_t)c->out_frames,
                         (size_t)all[4 * i], (size_t)all[4 * i + 1]))
        ok = 0;
  MPI_Bcast(&ok, 1, MPI_INT, c->root, c->comm);
  if (!ok) {
    if (c->rank == c->root)
      for (size_t i = 0; i < n; i++)
        qs_image_free(&outputs[i]);
    snprintf(err, len, "rank %d: no memory for the whole output (%llu frames)",
             c->root, (unsigned long long)c->out_frames);
    return QS_ENOMEM;
  }
  uint64_t mine = 0; /* output chunks held (not the chunks run) */
  for (chunk *k = c->chunks; k; k = k->next) mine++;
  uint64_t *counts = NULL;
  if (c->rank == c->root) {
    counts = calloc((size_t)c->size, sizeof *counts);
    if (!counts) qsm_abort(c); /* 8 bytes a rank */
  }
  MPI_Gather(&mine, 1, MPI_UINT64_T, counts, 1, MPI_UINT64_T, c->root,
             c->comm);
  if (c->rank != c->root) c->me.bytes_sent += 8;
  if (c->rank == c->root) {
    for (chunk *k = c->chunks; k; k = k->next)
      for (size_t i = 0; i < n; i++) {
        size_t plane = outputs[i].rows * outputs[i].cols;
        memcpy(outputs[i].data + k->u0 * plane, k->out[i].data,
               (size_t)(k->u1 - k->u0) * plane * sizeof(float));
      }
    for (int r = 0; r < c->size; r++) {
      if (r == c->root) continue;
      c->me.bytes_received += 8;
      for (uint64_t j = 0; j < counts[r]; j++) {
        uint64_t span[2];
        MPI_Recv(span, 2, MPI_UINT64_T, r, 1, c->comm, MPI_STATUS_IGNORE);
        c->me.bytes_received += sizeof span;
        for (size_t i = 0; i < n; i++) {
          size_t plane = outputs[i].rows * outputs[i].cols;
          recv_floats(c, outputs[i].data + span[0] * plane,
                      (size_t)(span[1] - span[0]) * plane, r);
        }
      }
    }
  } else {
    for (chunk *k = c->chunks; k; k = k->next) {
      uint64_t span[2] = {k->u0, k->u1};
      MPI_Send(span, 2, MPI_UINT64_T, c->root, 1, c->comm);
      c->me.bytes_sent += sizeof span;
      for (size_t i = 0; i < n; i++)
        send_floats(c, k->out[i].data,
                    (size_t)(k->u1 - k->u0) * k->out[i].rows *
                        k->out[i].cols);
    }
  }
  free(counts);
  chunks_free(c);
  return QS_OK;
}

/* -------------------------------------------------------------- phase 4 */

/* What the root tells every rank at the end: the report's totals (its
 * rank array stays on the root), the status and the one message. */
typedef struct totals {
  int status;
  qsm_report sum; /* .rank: NULL */
  char msg[1024];
} totals;

static void finish(ctx *c, int status, const char *why, const char *output,
                   qsm_report *report, totals *tot) {
  c->me.status = status;
  snprintf(c->me.error, sizeof c->me.error, "%s", status ? why : "");
  qsm_rank *all = NULL;
  if (c->rank == c->root) all = calloc((size_t)c->size, sizeof *all);
  MPI_Gather(&c->me, (int)sizeof c->me, MPI_BYTE, all, (int)sizeof c->me,
             MPI_BYTE, c->root, c->comm);
  memset(tot, 0, sizeof *tot);
  qsm_report *t = &tot->sum;
  if (c->rank == c->root) {
    if (!all) {
      tot->status = QS_ENOMEM;
      snprintf(tot->msg, sizeof tot->msg, "rank %d: out of memory", c->root);
    }
    double max = 0, sum = 0;
    for (int r = 0; all && r < c->size; r++) {
      const qsm_rank *q = &all[r];
      if (q->status && !tot->status) {
        tot->status = q->status;
        snprintf(tot->msg, sizeof tot->msg, "rank %d (%s): %s", r, q->host,
                 q->error);
      }
      t->chunks += q->chunks;
      t->bytes_communicated += q->bytes_sent;
      t->bytes_written += q->bytes_written;
      max = q->busy_seconds > max ? q->busy_seconds : max;
      sum += q->busy_seconds;
    }
    if (!tot->status && status) { /* a collective failure, same everywhere */
      tot->status = status;
      snprintf(tot->msg, sizeof tot->msg, "%s", why);
    }
    t->ranks = c->size;
    t->units = c->units;
    t->seconds = MPI_Wtime() - c->t0;
    t->imbalance = sum > 0 ? max / (sum / c->size) - 1 : 0;
    snprintf(t->output, sizeof t->output, "%s", output);
    snprintf(t->split, sizeof t->split, "%s",
             c->within          ? "within"
             : c->by_timepoints ? "timepoints"
                                : "frames");
  }
  MPI_Bcast(tot, (int)sizeof *tot, MPI_BYTE, c->root, c->comm);
  if (report) {
    *report = tot->sum;
    report->rank = all;
    all = NULL;
  }
  free(all);
}

/* ------------------------------------------------------ in-place output */

/* The root creates every output file's temporary (tiff_stack: full size,
 * every directory written) and passes its name on; every other rank opens
 * it to write its own pages. Collective; the same status everywhere. On
 * failure nothing is left (the root removes what it created). */
static int direct_open(ctx *c, const char *const *paths, char *err,
                       size_t len) {
  int rc = QS_OK;
  char tmp[4200] = "";
  size_t k = 0;
  for (; k < c->n_out && !rc; k++) {
    if (c->rank == c->root) {
      rc = tiff_stack_create(&c->stack[k], paths[k], (size_t)c->out_frames,
                             c->out_rows[k], c->out_cols[k], 0, err, len);
      if (!rc && snprintf(tmp, sizeof tmp, "%s",
                          tiff_stack_temp(&c->stack[k])) >= (int)sizeof tmp) {
        snprintf(err, len, "%s: path too long", paths[k]);
        rc = QS_EINVAL;
      }
    }
    /* the name's length, or minus the root's failure (enum values from
     * 1: the root's message names the cause) */
    int n = rc ? -rc : (int)strlen(tmp) + 1;
    MPI_Bcast(&n, 1, MPI_INT, c->root, c->comm);
    if (n < 0) {
      rc = -n;
      break;
    }
    MPI_Bcast(tmp, n, MPI_CHAR, c->root, c->comm);
    int mine = c->rank == c->root
                   ? QS_OK
                   : tiff_stack_open(&c->stack[k], tmp, (size_t)c->out_frames,
                                     c->out_rows[k], c->out_cols[k], 0, err,
                                     len);
    if (c->rank != c->root)
      c->me.bytes_received += sizeof n + (size_t)n;
    else
      c->me.bytes_sent += (sizeof n + (size_t)n) * (size_t)(c->size - 1);
    MPI_Allreduce(&mine, &rc, 1, MPI_INT, MPI_MAX, c->comm);
    win_count(c, sizeof mine, sizeof rc);
    if (rc && !mine) snprintf(err, len, "another rank cannot open %s", tmp);
  }
  if (rc) /* the ones opened and, on the root, created */
    for (size_t i = 0; i < k && i < c->n_out; i++)
      tiff_stack_abort(&c->stack[i]);
  c->direct = !rc;
  return rc;
}

/* After the work: every rank but the root closes its handles (its status:
 * whether its pages reached the files); the statuses and each output's
 * value range are reduced; the root commits every file when every rank
 * succeeded (worst: the work's agreed status) and removes them otherwise.
 * Collective. Returns this rank's own failure (the root's: of a commit). */
static int direct_finish(ctx *c, int worst, char *err, size_t len) {
  int mine = QS_OK, any = QS_OK;
  float lo[QSM_MAX_IO], hi[QSM_MAX_IO], all_lo[QSM_MAX_IO],
      all_hi[QSM_MAX_IO];
  for (size_t k = 0; k < c->n_out; k++) {
    tiff_stack_range(&c->stack[k], &lo[k], &hi[k]);
    if (c->rank != c->root) {
      int rc = tiff_stack_close(&c->stack[k], err, len);
      if (rc && !mine) mine = rc;
    }
  }
  MPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, c->comm);
  MPI_Reduce(lo, all_lo, (int)c->n_out, MPI_FLOAT, MPI_MIN, c->root, c->comm);
  MPI_Reduce(hi, all_hi, (int)c->n_out, MPI_FLOAT, MPI_MAX, c->root, c->comm);
  win_count(c, sizeof mine + 2 * sizeof(float) * c->n_out, sizeof any);
  c->direct = 0;
  if (c->rank != c->root) return mine;
  for (size_t k = 0; k < c->n_out; k++) {
    if (worst || any || mine)
      tiff_stack_abort(&c->stack[k]);
    else
      mine = tiff_stack_commit(&c->stack[k], all_lo[k], all_hi[k], err, len);
  }
  return mine;
}

/* ------------------------------------------------------------ metadata */

/* What the output files will say (describe.h): the implementations every
 * rank ran, the pixel size, the provenance; on the root, given to the
 * stacks written in place (or kept in c->meta for the gathered write).
 * Collective; the root's status (QS_OK elsewhere). */
static int describe_outputs(ctx *c, const qs_param *params, size_t n_params,
                            char *err, size_t len) {
  const char *split = c->within          ? "within"
                      : c->by_timepoints ? "timepoints"
                                         : "frames";
  uint64_t frames = c->out_frames;
  int rc = qsm_describe(c->comm, c->root, c->d, c->inputs, c->n_in, params,
                        n_params, c->me.impl, split, c->n_out, c->out_rows,
                        c->out_cols, (size_t)frames, c->meta, err, len);
  if (c->rank == c->root)
    win_count(c, 0, sizeof c->me.impl * (size_t)(c->size - 1));
  else
    win_count(c, sizeof c->me.impl, 0);
  for (size_t k = 0; !rc && c->direct && c->rank == c->root && k < c->n_out;
       k++)
    rc = tiff_stack_describe(&c->stack[k], &c->meta[k], err, len);
  return rc;
}

/* ---------------------------------------------------------------- entry */

static int run(MPI_Comm comm, const char *method, const char *const *inputs,
               size_t n_inputs, const qs_param *params, size_t n_params,
               const qsm_options *o, qs_image *outputs, size_t n_outputs,
               const char *const *paths, qsm_report *report, char *err,
               size_t err_len) {
  int gather_files = paths && o && o->gather;
  ctx *c = calloc(1, sizeof *c);
  qs_image outs[QSM_MAX_IO] = {{0}};
  char why[1024] = "";
  if (!c) {
    snprintf(err, err_len, "out of memory");
    MPI_Abort(comm, 1); /* cannot take part in the collectives */
    return QS_ENOMEM;
  }
  c->comm = comm;
  MPI_Comm_rank(comm, &c->rank);
  MPI_Comm_size(comm, &c->size);
  c->root = o ? o->root : 0;
  if (c->root < 0 || c->root >= c->size) c->root = 0;
  c->inputs = inputs;
  c->n_in = n_inputs;
  c->n_out = n_outputs;
  c->impl = o ? o->impl : NULL;
  c->fail_rank = -1;
  c->me.rank = c->rank;
  int hl = 0;
  char host[MPI_MAX_PROCESSOR_NAME];
  MPI_Get_processor_name(host, &hl);
  snprintf(c->me.host, sizeof c->me.host, "%.63s", host);
  MPI_Barrier(comm);
  c->t0 = MPI_Wtime();

  /* 1: engine and plan, agreed. */
  int rc = QS_OK;
  const char *fail = getenv("QUICKSILVER_MPI_FAIL");
  if (fail && *fail) {
    char *end;
    c->fail_rank = strtol(fail, &end, 10);
    if (*end || c->fail_rank < 0) {
      snprintf(why, sizeof why,
               "QUICKSILVER_MPI_FAIL=%s: expected a rank number", fail);
      rc = QS_EENV;
    }
  }
  c->slow_rank = -1;
  const char *slow = getenv("QUICKSILVER_MPI_SLOW");
  if (!rc && slow && *slow) {
    char *end;
    c->slow_rank = strtol(slow, &end, 10);
    c->slow_seconds = *end == ':' ? strtod(end + 1, &end) : -1;
    if (*end || c->slow_rank < 0 || !(c->slow_seconds >= 0)) {
      snprintf(why, sizeof why,
               "QUICKSILVER_MPI_SLOW=%s: expected RANK:SECONDS_PER_UNIT",
               slow);
      rc = QS_EENV;
    }
  }
  if (!rc) rc = open_engine(c, o, why, sizeof why);
  size_t max_bytes = o && o->max_chunk_bytes ? o->max_chunk_bytes
                                             : (size_t)256 << 20;
  if (!rc) rc = plan_chunks(c, method, params, n_params, max_bytes, why, sizeof why);
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, comm);
  /* 1b: the same work everywhere, before anything is written */
  if (!worst) {
    rc = agree(c, params, n_params, gather_files, max_bytes, why, sizeof why);
    MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, comm);
  }
  if (!worst && paths && !gather_files) {
    rc = direct_open(c, paths, why, sizeof why);
    worst = rc;
  }

  /* 2: work. The window exists on every rank in every case. */
  MPI_Aint wsize = c->rank == c->root ? W_RATES + 8 * (MPI_Aint)c->size : 0;
  MPI_Win_allocate(wsize, 1, MPI_INFO_NULL, comm, &c->wbuf, &c->win);
  if (c->rank == c->root) {
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, c->root, 0, c->win);
    memset(c->wbuf, 0, (size_t)wsize);
    MPI_Win_unlock(c->root, c->win);
  }
  MPI_Barrier(comm);
  MPI_Win_lock_all(0, c->win);
  if (!worst) rc = c->within ? work_within(c, why, sizeof why)
                             : work(c, why, sizeof why);
  MPI_Win_unlock_all(c->win);
  MPI_Win_free(&c->win);

  /* 3: outputs: the files written in place committed (or removed), or
   * the outputs gathered on the root (and written by it). */
  int direct = c->direct;
  if (!worst) MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, comm);
  char gerr[512] = "";
  int grc = QS_OK;
  /* the files' metadata (the root's status: a failure there removes them) */
  if (!worst && paths)
    grc = describe_outputs(c, params, n_params, gerr, sizeof gerr);
  if (direct) {
    int drc = direct_finish(c, worst ? worst : grc, gerr, sizeof gerr);
    grc = grc ? grc : drc;
  }
  if (!worst && !direct) {
    int drc = gather(c, outs, grc ? NULL : gerr, grc ? 0 : sizeof gerr);
    grc = grc ? grc : drc;
  }
  chunks_free(c);
  if (!worst && !grc && !direct && paths && c->rank == c->root)
    for (size_t k = 0; k < n_outputs && !grc; k++) {
      double t = MPI_Wtime();
      grc = tiff_write_meta(paths[k], &outs[k], 0, &c->meta[k], gerr,
                            sizeof gerr);
      c->me.write_seconds += MPI_Wtime() - t;
      c->me.bytes_written +=
          (uint64_t)outs[k].frames * outs[k].rows * outs[k].cols * 4;
    }
  if (!worst && paths) {
    /* Only the root knows why its write failed; the others learn it in
     * the report's message. */
    int wrc = grc;
    MPI_Bcast(&wrc, 1, MPI_INT, c->root, comm);
    if (c->rank != c->root && wrc && !grc) worst = wrc;
  }
  if (c->e) qs_engine_close(c->e);
  c->e = NULL;

  /* 4: report and the one message. */
  totals tot;
  finish(c, rc ? rc : grc, rc ? why : gerr,
         !paths ? "memory" : direct ? "in place" : "gathered", report, &tot);
  if (!tot.status && worst) { /* a failure no rank could describe */
    tot.status = worst;
    snprintf(tot.msg, sizeof tot.msg, "a rank failed: %s",
             qs_status_message(worst));
  }
  snprintf(err, err_len, "%s", tot.status ? tot.msg : "");
  for (size_t k = 0; k < QSM_MAX_IO; k++) {
    if (!tot.status && outputs && k < n_outputs && c->rank == c->root) {
      outputs[k] = outs[k];
      continue;
    }
    qs_image_free(&outs[k]);
  }
  free(c);
  return tot.status;
}

int qsm_run(MPI_Comm comm, const char *method, const char *const *inputs,
            size_t n_inputs, const qs_param *params, size_t n_params,
            const qsm_options *options, qs_image *outputs, size_t n_outputs,
            qsm_report *report, char *err, size_t err_len) {
  for (size_t k = 0; outputs && k < n_outputs; k++)
    outputs[k] = (qs_image){0};
  return run(comm, method, inputs, n_inputs, params, n_params, options,
             outputs, n_outputs, NULL, report, err, err_len);
}

int qsm_run_files(MPI_Comm comm, const char *method, const char *const *inputs,
                  size_t n_inputs, const qs_param *params, size_t n_params,
                  const qsm_options *options, const char *const *out_paths,
                  size_t n_paths, qsm_report *report, char *err,
                  size_t err_len) {
  return run(comm, method, inputs, n_inputs, params, n_params, options, NULL,
             n_paths, out_paths, report, err, err_len);
}
