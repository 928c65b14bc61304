/* cmd_stream.c — `quicksilver stream` (also `quicksilver esrrf --stream`):
 * live eSRRF on frames as they arrive, through the library's stream
 * (quicksilver.h, "live eSRRF").
 *
 * Input: a TIFF stack that another program may still be writing (polled
 * for new pages every --poll-ms; the stream ends after --frames frames or
 * when the file has not grown for --idle seconds, which it says while it
 * waits), or "-": raw frames on standard input (--size RxC and --dtype
 * float32|uint16, both required: raw bytes do not say their type; native
 * byte order), ending at end of file. A TIFF of several channels is
 * refused (one stream is one channel). The results carry the input's
 * pixel size / M and the provenance (parameters, window, implementation,
 * version, input) in their description. Output: every result as it completes, into -o
 * OUT.tif (the first result written to a temporary and renamed over OUT;
 * each later one appended in place, tiff_append: a reader sees the stack
 * with or without it, never half a page) and/or --out-dir DIR (one
 * numbered TIFF per result). -v prints a line per frame (its latency: from the moment it
 * was read to the end of its push) and per result; the summary gives
 * frames/s and the frame latencies' min, median and p99. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <unistd.h>

#include "cli.h"
#include "cmd_stream.h"
#include "outfile.h"
#include "provenance.h"
#include "tiff.h"

static const opt_def stream_opts[] = {
    {"output", 'o', "FILE",
     "the results so far as one TIFF stack, "
     "appended atomically per result"},
    {"out-dir", 0, "DIR", "one TIFF per result: DIR/esrrf_000000.tif, ..."},
    {"window", 0, "N", "frames per timepoint, or the sliding window (100)"},
    {"every", 0, "K", "with --sliding: a result every K frames (1)"},
    {"sliding", 0, NULL, "a sliding window of the last N frames"},
    {"size", 0, "RxC", "frame size of raw input on stdin"},
    {"dtype", 0, "T", "raw input type: float32 or uint16 (required for -)"},
    {"frames", 0, "N", "stop after N frames (default: end of input)"},
    {"poll-ms", 0, "MS", "TIFF input: poll interval (200)"},
    {"idle", 0, "SECONDS",
     "TIFF input: end when the file has not grown "
     "for this long (10)"},
    {"impl", 0, "NAME|KIND", "implementation (default: the engine's choice)"},
    {"stream", 0, NULL, "accepted for `esrrf --stream`"},
    {NULL, 0, NULL, NULL}};

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void sleep_s(double s) {
  struct timespec t = {(time_t)s, (long)((s - floor(s)) * 1e9)};
  while (nanosleep(&t, &t) && errno == EINTR) {
  }
}

typedef struct run_state {
  cli *c;
  qs_esrrf_stream *s;
  const char *in, *out, *dir; /* in: NULL for stdin */
  size_t n_res;
  double *lat; /* per-frame latencies */
  size_t n_lat, cap_lat;
  double t_first, t_last; /* first frame read, last push done */
  double t_start, waited; /* the command's start; seconds spent waiting
                             for frames that did not come (--idle) */
  tiff_meta meta;         /* of every result: pixel size, provenance */
  cJSON *prov;            /* the provenance, until the impl is known */
  cli_progress prog;      /* frames pushed; Ctrl-C ends the input */
  uint64_t total;         /* frames to come when known (--frames), else 0 */
  const char *label;      /* NULL: `stream`; else the batch command whose
                             input is read in pieces (stream_job.label) */
} run_state;

static int lat_add(run_state *r, double v) {
  if (r->n_lat == r->cap_lat) {
    size_t cap = r->cap_lat ? 2 * r->cap_lat : 1024;
    double *p = realloc(r->lat, cap * sizeof *p);
    if (!p) return cli_fail("stream: out of memory");
    r->lat = p;
    r->cap_lat = cap;
  }
  r->lat[r->n_lat++] = v;
  return CLI_OK;
}

/* Appends one result to the -o stack and writes it to --out-dir. The
 * first result replaces OUT atomically (an existing OUT stays whole until
 * then); the later ones are appended in place to the file we wrote. */
static int result_write(run_state *r, const qs_image *img) {
  char err[512];
  if (r->prov) { /* the first result: the implementation is chosen now */
    cJSON_AddStringToObject(r->prov, "impl", qs_esrrf_stream_impl(r->s));
    prov_text(r->prov, r->meta.provenance, sizeof r->meta.provenance);
    r->prov = NULL;
  }
  if (r->dir) {
    char path[4096];
    snprintf(path, sizeof path, "%s/esrrf_%06zu.tif", r->dir, r->n_res);
    /* the numbered file is an output like -o: never the input, never -o */
    const char *outs[2] = {path, r->out}, *ins[1] = {r->in};
    int crc = outfile_check(outs, r->out ? 2 : 1, ins, r->in ? 1 : 0, err,
                            sizeof err);
    if (crc || tiff_write_meta(path, img, 0, &r->meta, err, sizeof err))
      return cli_fail("stream: %s", err);
  }
  if (r->out && (r->n_res ? tiff_append(r->out, img, err, sizeof err)
                            : tiff_write_meta(r->out, img, TIFF_APPENDABLE,
                                              &r->meta, err, sizeof err)))
    return cli_fail("%s", err);
  r->n_res++;
  return CLI_OK;
}

/* Takes every waiting result. */
static int results_drain(run_state *r) {
  for (;;) {
    qs_image img;
    qs_esrrf_stream_result info;
    int got;
    qs_esrrf_stream_pop(r->s, &img, &info, &got);
    if (!got) return CLI_OK;
    if (r->c->verbose)
      cli_note(r->c,
               "result %llu: frames %llu-%llu, %.4f s after its last "
               "frame's push began\n",
               (unsigned long long)info.index, (unsigned long long)info.first,
               (unsigned long long)(info.first + info.frames - 1),
               info.latency);
    int rc = result_write(r, &img);
    /* written: the next result goes into it */
    if (qs_esrrf_stream_give(r->s, &img)) qs_image_free(&img);
    if (rc) return rc;
  }
}

/* Pushes one frame read at time t_read. */
static int frame_push(run_state *r, float *data, size_t rows, size_t cols,
                      double t_read) {
  qs_image f = qs_image_wrap(data, 1, rows, cols);
  int rc = qs_esrrf_stream_push(r->s, &f);
  double t_done = now_s(), lat = t_done - t_read;
  if (!r->t_first) r->t_first = t_read;
  r->t_last = t_done;
  if (rc == QS_EINVAL && r->label)
    /* a batch command read in pieces refuses the stack as its whole
     * call would (NaN or infinite pixels), rather than skip a frame */
    return cli_fail("%s: %s; nothing written", r->label,
                    qs_esrrf_stream_error(r->s));
  if (rc == QS_EINVAL &&
      !strstr(qs_esrrf_stream_error(r->s), "after the end")) {
    /* a bad frame: skipped, the stream goes on */
    cli_note(r->c, "quicksilver: %s (frame skipped)\n",
             qs_esrrf_stream_error(r->s));
    return CLI_OK;
  }
  if (rc) return cli_fail("%s", qs_esrrf_stream_error(r->s));
  if (r->c->verbose)
    cli_note(r->c, "frame %llu: %.4f s\n",
             (unsigned long long)(qs_esrrf_stream_frames(r->s) - 1), lat);
  rc = lat_add(r, lat);
  if (!r->c->verbose) /* its lines per frame say as much */
    cli_progress_report(&r->prog, qs_esrrf_stream_frames(r->s), r->total);
  return rc ? rc : results_drain(r);
}

/* Raw frames on stdin until end of file or `limit` frames. */
static int read_stdin(run_state *r, size_t rows, size_t cols, int u16,
                      size_t limit) {
  size_t px = rows * cols, bytes = px * (u16 ? 2 : 4);
  float *f = malloc(px * sizeof *f);
  unsigned char *raw = malloc(bytes);
  int rc = f && raw ? CLI_OK : cli_fail("stream: out of memory");
  for (size_t n = 0; !rc && n < limit && !cli_interrupted(); n++) {
    size_t got = fread(raw, 1, bytes, stdin);
    double t = now_s();
    if (got < bytes) {
      if (ferror(stdin))
        rc = cli_fail("stream: reading stdin: %s", strerror(errno));
      else if (got)
        cli_note(r->c,
                 "quicksilver: %zu bytes at the end of stdin are not "
                 "a whole frame of %zu; ignored\n",
                 got, bytes);
      break;
    }
    if (u16)
      for (size_t i = 0; i < px; i++) {
        uint16_t v;
        memcpy(&v, raw + 2 * i, 2);
        f[i] = (float)v;
      }
    else
      memcpy(f, raw, bytes);
    rc = frame_push(r, f, rows, cols, t);
  }
  free(f);
  free(raw);
  return rc;
}

/* Pages read from a TIFF at a time (or the read budget, if smaller): a
 * large file that is already there is taken in pieces, so that the
 * stream's memory does not grow with the file (each piece is pushed, then
 * freed). */
#define STREAM_READ_BYTES ((size_t)64 << 20)

/* A TIFF that may still grow: new pages as they appear, at most
 * STREAM_READ_BYTES of them at a time. */
/* Frames of a stack of `pages` pages whose frame f is page f·step + chan. */
static size_t frames_in(size_t pages, size_t step, size_t chan) {
  return pages > chan ? (pages - chan - 1) / step + 1 : 0;
}

static int read_tiff(run_state *r, const char *path, size_t first,
                     size_t limit, size_t step, size_t chan, double poll,
                     double idle) {
  /* frames pushed: done; frame f is page f·step + chan (step: the
   * channels of a stack whose channel axis is the fastest, else 1) */
  size_t done = 0;
  double last_growth = now_s();
  char err[512] = "";
  int told = 0; /* "waiting" said since the last growth */
  tiff_info info;
  int known = 0; /* info holds pages not read yet: no need to look again */
  tiff_seq *seq = NULL; /* the file open at page first + done */
  while (done < limit && !cli_interrupted()) {
    int rc = QS_OK;
    if (!known || frames_in(info.pages, step, chan) <= first + done) {
      /* the pages known are read: the file is opened again for more (a
       * growing file's directory chain is read anew) */
      tiff_seq_close(seq);
      seq = NULL;
      rc = tiff_info_of(path, &info, err, sizeof err);
      known = !rc;
    }
    /* a file being written can be momentarily unreadable */
    size_t avail = known ? frames_in(info.pages, step, chan) : 0;
    if (!rc && avail > first + done) {
      size_t n = avail - first - done;
      if (n > limit - done) n = limit - done;
      size_t page = info.rows * info.cols * sizeof(float) * step;
      uint64_t bytes = STREAM_READ_BYTES, budget;
      if (!tiff_read_budget(&budget, err, sizeof err) && budget < bytes)
        bytes = budget; /* the pieces never over the read budget */
      size_t most = page ? (size_t)(bytes / page) : n;
      /* test seam: smaller pieces, so that a small file is read in several */
      const char *seam = getenv("QUICKSILVER_TEST_STREAM_READ_PAGES");
      if (seam && atoi(seam) > 0) most = (size_t)atoi(seam);
      if (n > (most ? most : 1)) n = most ? most : 1;
      qs_image pages;
      size_t at = (first + done) * step + chan, span = (n - 1) * step + 1;
      if (!seq) {
        rc = tiff_seq_open(path, at, &seq, err, sizeof err);
        if (rc == QS_EUNAVAIL) rc = QS_OK; /* one block: read whole pieces */
      }
      if (!rc)
        rc = seq ? tiff_seq_read(seq, span, &pages, err, sizeof err)
                 : tiff_read_pages(path, at, span, &pages, err, sizeof err);
      /* the next frame's page: the other channels' pages after the last */
      if (!rc && seq && step > 1 && tiff_seq_skip(seq, step - 1)) {
        tiff_seq_close(seq);
        seq = NULL;
      }
      if (rc) { /* opened again at the same page next time */
        tiff_seq_close(seq);
        seq = NULL;
        known = 0;
      }
      double t = now_s();
      for (size_t k = 0; !rc && k < n && !cli_interrupted(); k++) {
        int prc = frame_push(r, pages.data + k * step * pages.rows * pages.cols,
                             pages.rows, pages.cols, t);
        if (prc) {
          qs_image_free(&pages);
          tiff_seq_close(seq);
          return prc;
        }
        done++;
      }
      if (!rc) {
        qs_image_free(&pages);
        if (told) r->waited += now_s() - last_growth;
        last_growth = now_s();
        told = 0;
        continue;
      }
    }
    double quiet = now_s() - last_growth;
    if (quiet >= idle) {
      r->waited += quiet;
      if (rc && done == 0) return cli_fail("%s", err);
      if (rc) cli_note(r->c, "quicksilver: %s\n", err);
      if (told) cli_note(r->c, "stream: no new frame for %.1f s; done\n", idle);
      break;
    }
    /* a finished file and a slow camera look alike: say what we wait for */
    if (!told && idle > 0) {
      cli_note(r->c,
               "stream: %zu frame%s read from %s; waiting for more frames "
               "(ends after %.1f s without one: --idle)\n",
               done, done == 1 ? "" : "s", path, idle);
      told = 1;
    }
    sleep_s(poll);
  }
  tiff_seq_close(seq);
  return CLI_OK;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int summary(run_state *r) {
  /* from the first frame read to the last push: the idle wait of a TIFF
   * input at its end is not the stream's time */
  double wall = r->t_last - r->t_first;
  uint64_t frames = qs_esrrf_stream_frames(r->s);
  double lmin = 0, lmed = 0, l99 = 0;
  if (r->n_lat) {
    qsort(r->lat, r->n_lat, sizeof *r->lat, cmp_double);
    lmin = r->lat[0];
    lmed = r->lat[r->n_lat / 2];
    l99 = r->lat[(size_t)ceil(0.99 * (double)r->n_lat) - 1];
  }
  double fps = wall > 0 ? (double)frames / wall : 0;
  double total = now_s() - r->t_start;
  if (r->c->json) {
    cJSON *j = cJSON_CreateObject();
    if (r->label) { /* as `run --json` names them, and how it was read */
      cJSON_AddStringToObject(j, "method", "esrrf");
      cJSON_AddBoolToObject(j, "read_in_pieces", 1);
    }
    cJSON_AddStringToObject(j, "impl", qs_esrrf_stream_impl(r->s));
    cJSON_AddNumberToObject(j, "frames", (double)frames);
    cJSON_AddNumberToObject(j, "results", (double)r->n_res);
    cJSON_AddNumberToObject(j, "seconds", wall);
    cJSON_AddNumberToObject(j, "total_seconds", total);
    cJSON_AddNumberToObject(j, "waiting_seconds", r->waited);
    cJSON_AddNumberToObject(j, "frames_per_second", fps);
    cJSON_AddNumberToObject(j, "latency_min", lmin);
    cJSON_AddNumberToObject(j, "latency_median", lmed);
    cJSON_AddNumberToObject(j, "latency_p99", l99);
    return cli_json_out(j);
  }
  const char *impl =
      qs_esrrf_stream_impl(r->s)[0] ? qs_esrrf_stream_impl(r->s) : "nothing";
  if (r->label) { /* a finished stack: no frame waited for a result */
    cli_note(r->c,
             "%s: %llu frame%s read in pieces, %zu image%s with %s in %.3f "
             "s (%.2f frames/s)\n",
             r->label, (unsigned long long)frames, frames == 1 ? "" : "s",
             r->n_res, r->n_res == 1 ? "" : "s", impl, total, fps);
    return CLI_OK;
  }
  /* the frames' span (first read to last push) is the stream's work;
   * the whole command also waited for frames and wrote results */
  cli_note(r->c,
           "stream: %llu frame%s, %zu result%s; %.3f s from the first frame "
           "to the last with %s: %.2f frames/s; %.3f s in all, %.3f s of it "
           "waiting for frames; frame latency min %.4f s, median %.4f s, "
           "p99 %.4f s\n",
           (unsigned long long)frames, frames == 1 ? "" : "s", r->n_res,
           r->n_res == 1 ? "" : "s", wall, impl, fps, total, r->waited, lmin,
           lmed, l99);
  return CLI_OK;
}

/* The metadata of every result: the input's pixel size divided by the
 * magnification, the provenance (parameters, window, input; the
 * implementation once the first push chose it: stream_impl_note). */
static void stream_meta(run_state *r, const qs_method_desc *d,
                        const double *values, const tiff_info *in,
                        const char *name, const qs_esrrf_stream_options *o) {
  tiff_meta_plain(&r->meta, 1);
  double mag = 1;
  for (size_t i = 0; i < d->n_params; i++)
    if (!strcmp(d->params[i].name, "magnification")) mag = values[i];
  if (in->meta.pixel_x > 0 && mag > 0) {
    r->meta.pixel_x = in->meta.pixel_x / mag;
    r->meta.pixel_y = in->meta.pixel_y / mag;
    snprintf(r->meta.unit, sizeof r->meta.unit, "%s", in->meta.unit);
  }
  cJSON *j = prov_new(d, values, NULL, strcmp(name, "-") ? name : "stdin");
  if (j) { /* the window, not frames_per_timepoint, cuts the frames */
    cJSON_DeleteItemFromObject(cJSON_GetObjectItem(j, "params"),
                               "frames_per_timepoint");
    cJSON_AddNumberToObject(j, "window", (double)o->window);
    cJSON_AddBoolToObject(j, "sliding", o->sliding);
    if (o->sliding) cJSON_AddNumberToObject(j, "every", (double)o->every);
  }
  r->prov = j;
}

/* Whether leaf is a name --out-dir gives a result: esrrf_<6+ digits>.tif. */
static int numbered(const char *leaf) {
  size_t n = strlen(leaf), d = 0;
  if (strncmp(leaf, "esrrf_", 6) || n < 10 || strcmp(leaf + n - 4, ".tif"))
    return 0;
  for (size_t i = 6; i < n - 4; i++, d++)
    if (leaf[i] < '0' || leaf[i] > '9') return 0;
  return d >= 6;
}

/* Before any work: the input or -o named like a result inside --out-dir
 * (the stream would write over it). */
static int outdir_check(const char *dir, const char *in, const char *out,
                        char *err, size_t len) {
  const char *outs[3], *ins[1] = {in};
  char p[2][4096];
  size_t n = 0;
  const char *named[2] = {in, out};
  for (size_t k = 0; k < 2; k++) {
    if (!named[k]) continue;
    const char *slash = strrchr(named[k], '/'),
               *leaf = slash ? slash + 1 : named[k];
    if (!numbered(leaf)) continue;
    snprintf(p[k], sizeof p[k], "%s/%s", dir, leaf);
    outs[n++] = p[k];
  }
  if (out) outs[n++] = out;
  return outfile_check(outs, n, ins, in ? 1 : 0, err, len);
}

/* Reads a size_t option within [lo, hi], default def. */
static int opt_size(const args *a, const char *name, size_t lo, size_t hi,
                    size_t def, size_t *out) {
  const char *v = args_value(a, name);
  *out = def;
  if (v && args_size(v, lo, hi, out))
    return cli_usage("stream: --%s %s is not an integer in [%zu, %zu]", name,
                     v, lo, hi);
  return CLI_OK;
}

int cmd_stream(cli *c, int argc, char **argv) {
  qs_engine *e;
  if (cli_method_engine(c, argc, argv, &e)) return CLI_FAIL;
  const qs_method_desc *d = qs_method_find(e, "esrrf");
  if (!d) return cli_fail("stream: no esrrf method");
  args a;
  CLI_ARGS_OR_RETURN(
      cli_args(c, argc, argv,
               "stream IN.tif|- [-o OUT.tif] [--out-dir DIR] [--window N] "
               "[--sliding --every K] [--size RxC --dtype float32|uint16] "
               "[--PARAM VALUE ...]",
               stream_opts, d->params, d->n_params, &a));
  if (a.n_pos != 1) return cli_usage("stream: give one input (a TIFF or -)");
  const char *in = a.pos[0];
  size_t window, every, limit, poll_ms, rows = 0, cols = 0;
  if (opt_size(&a, "window", 1, (size_t)1 << 30, 100, &window) ||
      opt_size(&a, "every", 1, (size_t)1 << 30, 1, &every) ||
      opt_size(&a, "frames", 1, SIZE_MAX, SIZE_MAX, &limit) ||
      opt_size(&a, "poll-ms", 1, 3600000, 200, &poll_ms))
    return CLI_USAGE;
  const char *idle_s = args_value(&a, "idle");
  double idle = 10;
  if (idle_s && args_number(idle_s, 0, 1e9, &idle))
    return cli_usage("stream: --idle %s is not a number of seconds in "
                     "[0, 1e9]",
                     idle_s);
  const char *dtype = args_value(&a, "dtype");
  int u16 = dtype && !strcmp(dtype, "uint16");
  if (dtype && !u16 && strcmp(dtype, "float32"))
    return cli_usage("stream: --dtype %s is not float32 or uint16", dtype);
  tiff_info info;
  memset(&info, 0, sizeof info);
  if (!strcmp(in, "-")) {
    const char *size = args_value(&a, "size");
    size_t rc2[2], px;
    if (!size || args_dims(size, 2, rc2))
      return cli_usage("stream: raw input on stdin needs --size RxC%s%s%s",
                       size ? " (got \"" : "", size ? size : "",
                       size ? "\")" : "");
    rows = rc2[0];
    cols = rc2[1];
    /* a frame's bytes must be representable (read_stdin's buffer) */
    if (qs_image_pixels(1, rows, cols, &px) || px > SIZE_MAX / sizeof(float))
      return cli_usage("stream: --size %s: a frame of %zu x %zu pixels is "
                       "too large",
                       size, rows, cols);
    /* raw bytes do not say their type; a guess reads uint16 as float32 */
    if (!dtype)
      return cli_usage("stream: raw input on stdin needs --dtype float32 or "
                       "--dtype uint16");
  } else {
    char err[512];
    double t0 = now_s();
    /* the writer may not have written the first page yet */
    while (tiff_info_of(in, &info, err, sizeof err)) {
      if (now_s() - t0 >= idle) return cli_fail("%s", err);
      sleep_s((double)poll_ms * 1e-3);
    }
    if (info.meta.channels > 1)
      return cli_usage("stream: %s has %zu channels; a stream runs on one "
                       "channel (quicksilver esrrf runs each channel of a "
                       "finished stack)",
                       in, info.meta.channels);
    rows = info.rows;
    cols = info.cols;
  }
  stream_job j = {.in = in,
                  .out = args_value(&a, "output"),
                  .dir = args_value(&a, "out-dir"),
                  .window = window,
                  .every = every,
                  .limit = limit,
                  .rows = rows,
                  .cols = cols,
                  .sliding = args_value(&a, "sliding") != NULL,
                  .u16 = u16,
                  .poll = (double)poll_ms * 1e-3,
                  .idle = idle,
                  .params = a.params,
                  .n_params = a.n_params,
                  .impl = args_value(&a, "impl"),
                  .info = info};
  return stream_run(c, e, d, &j);
}

int stream_run(cli *c, qs_engine *e, const qs_method_desc *d,
               const stream_job *j) {
  const char *in = j->in, *out = j->out, *dir = j->dir;
  size_t rows = j->rows, cols = j->cols, limit = j->limit;
  const tiff_info info = j->info;
  run_state r = {.c = c, .t_start = now_s(), .label = j->label};
  if (!out && !dir) return cli_usage("stream: give -o OUT.tif or --out-dir");
  /* the input is never written: -o is checked against it (and its
   * directory for writing) before any work */
  char cerr[1024];
  const char *outs[1] = {out}, *ins[1] = {in};
  int crc = out ? outfile_check(outs, 1, ins, strcmp(in, "-") ? 1 : 0, cerr,
                                sizeof cerr)
                : QS_OK;
  if (crc)
    return crc == QS_EINVAL ? cli_usage("%s", cerr) : cli_fail("%s", cerr);
  int made;
  if (dir && (crc = outdir_make(dir, &made, cerr, sizeof cerr)))
    return crc == QS_EINVAL ? cli_usage("stream: --out-dir %s", cerr)
                            : cli_fail("stream: --out-dir %s", cerr);
  if (dir && access(dir, W_OK) != 0)
    return cli_fail("stream: --out-dir %s is not a writable directory", dir);
  const char *in_file = strcmp(in, "-") ? in : NULL;
  if (dir && (crc = outdir_check(dir, in_file, out, cerr, sizeof cerr)))
    return crc == QS_EINVAL ? cli_usage("stream: --out-dir: %s", cerr)
                            : cli_fail("stream: --out-dir: %s", cerr);
  /* exclusive for the whole stream: a second stream (or any writer) of
   * the same -o or --out-dir is refused before it reads a frame */
  char dslash[4096];
  int lock_out = 0, lock_dir = 0;
  if (dir) snprintf(dslash, sizeof dslash, "%s/", dir);
  if ((out && (crc = outfile_lock(out, &lock_out, cerr, sizeof cerr))) ||
      (dir && (crc = outfile_lock(dslash, &lock_dir, cerr, sizeof cerr)))) {
    outfile_unlock(lock_out);
    return cli_fail("stream: %s", cerr);
  }
  qs_esrrf_stream_options o = {.rows = rows,
                               .cols = cols,
                               .params = j->params,
                               .n_params = j->n_params,
                               .sliding = j->sliding,
                               .window = j->window,
                               .every = j->every,
                               .impl = j->impl};
  r.out = out;
  r.dir = dir;
  r.in = in_file;
  char err[512] = "";
  int rc = qs_esrrf_stream_open(e, &o, &r.s, err, sizeof err);
  if (rc) {
    outfile_unlock(lock_out);
    outfile_unlock(lock_dir);
    return rc == QS_EPARAM || rc == QS_EINVAL ? cli_usage("%s", err)
                                              : cli_fail("%s", err);
  }
  /* every result: the input's pixel size / M, and what made it */
  double values[QS_MAX_PARAMS];
  if (!qs_params_resolve(d->params, d->n_params, j->params, j->n_params,
                         values, err, sizeof err))
    stream_meta(&r, d, values, &info, in, &o);
  /* Ctrl-C ends the input as its end would: the results so far are
   * completed and written */
  r.total = limit < SIZE_MAX ? (uint64_t)limit : 0;
  cli_progress_begin(c, &r.prog, j->label ? j->label : "stream frames", NULL);
  rc = !strcmp(in, "-")
           ? read_stdin(&r, rows, cols, j->u16, limit)
           : read_tiff(&r, in, j->first, limit, j->step ? j->step : 1,
                       j->channel, j->poll, j->idle);
  int stopped = cli_progress_end(&r.prog);
  if (stopped && r.label) {
    /* a batch command read in pieces: Ctrl-C cancels it (its caller
     * says so and writes nothing), no image is completed */
  } else if (stopped) {
    cli_note(c, "stream: input ended by Ctrl-C after %llu frame%s\n",
             (unsigned long long)qs_esrrf_stream_frames(r.s),
             qs_esrrf_stream_frames(r.s) == 1 ? "" : "s");
  }
  if (!rc && !(stopped && r.label)) {
    if (qs_esrrf_stream_end(r.s))
      cli_note(c, "quicksilver: %s\n", qs_esrrf_stream_error(r.s));
    rc = results_drain(&r);
  }
  if (!rc && !(stopped && r.label) && !j->no_summary) rc = summary(&r);
  qs_esrrf_stream_close(r.s);
  cJSON_Delete(r.prov);
  outfile_unlock(lock_out);
  outfile_unlock(lock_dir);
  free(r.lat);
  return rc;
}
