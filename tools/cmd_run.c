/* cmd_run.c — `methods`, `run` and `esrrf`: the method tables drive the
 * flags, the help and the listing; qs_method_run does the work. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cmd_stream.h"
#include "outfile.h"
#include "provenance.h"
#include "tiff.h"

/* The method called `name`, or a usage error suggesting the nearest. */
static int method_lookup(qs_engine *e, const char *name,
                         const qs_method_desc **d) {
  *d = qs_method_find(e, name);
  if (*d) return CLI_OK;
  const char *near = qs_method_nearest_name(e, name);
  if (near)
    return cli_usage("unknown method '%s' (did you mean '%s'?)", name, near);
  return cli_usage("unknown method '%s' (see quicksilver methods)", name);
}

static cJSON *param_json(const qs_param_def *d) {
  static const char *const types[] = {"int", "float", "bool", "enum"};
  cJSON *j = cJSON_CreateObject();
  char text[64], flag[QS_NAME_MAX + 2] = "--";
  args_flag_of(d->name, flag + 2, sizeof flag - 2);
  qs_params_format(d, d->def, text, sizeof text);
  cJSON_AddStringToObject(j, "name", d->name);
  cJSON_AddStringToObject(j, "flag", flag);
  cJSON_AddStringToObject(j, "type", types[d->type]);
  cJSON_AddStringToObject(j, "default", text);
  if ((d->type == QS_PARAM_INT || d->type == QS_PARAM_FLOAT) &&
      d->min < d->max) {
    cJSON_AddNumberToObject(j, "min", d->min);
    cJSON_AddNumberToObject(j, "max", d->max);
    cJSON_AddBoolToObject(j, "min_open", (d->flags & QS_PARAM_MIN_OPEN) != 0);
    cJSON_AddBoolToObject(j, "max_open", (d->flags & QS_PARAM_MAX_OPEN) != 0);
  }
  if (d->type == QS_PARAM_ENUM)
    cJSON_AddStringToObject(j, "choices", d->choices ? d->choices : "");
  cJSON_AddStringToObject(j, "doc", d->doc ? d->doc : "");
  return j;
}

/* One method: parameters and implementations (with availability). */
static int method_show(cli *c, qs_engine *e, const qs_method_desc *d,
                       cJSON *arr) {
  qs_impl_info info[QS_MAX_ESTIMATES];
  size_t n = 0;
  if (qs_method_impls(e, d->name, info, QS_MAX_ESTIMATES, &n))
    return cli_fail("%s", qs_engine_error(e));
  if (n > QS_MAX_ESTIMATES) n = QS_MAX_ESTIMATES;
  if (arr) {
    cJSON *m = cJSON_CreateObject(), *p, *im, *slots;
    cJSON_AddStringToObject(m, "name", d->name);
    cJSON_AddStringToObject(m, "doc", d->doc ? d->doc : "");
    slots = cJSON_AddArrayToObject(m, "inputs");
    for (size_t i = 0; i < d->n_inputs; i++)
      cJSON_AddItemToArray(slots, cJSON_CreateString(d->inputs[i].name));
    slots = cJSON_AddArrayToObject(m, "outputs");
    for (size_t i = 0; i < d->n_outputs; i++)
      cJSON_AddItemToArray(slots, cJSON_CreateString(d->outputs[i].name));
    p = cJSON_AddArrayToObject(m, "params");
    for (size_t i = 0; i < d->n_params; i++)
      cJSON_AddItemToArray(p, param_json(&d->params[i]));
    im = cJSON_AddArrayToObject(m, "impls");
    for (size_t i = 0; i < n; i++) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "name", info[i].name);
      cJSON_AddStringToObject(o, "kind", qs_impl_kind_name(info[i].kind));
      cJSON_AddNumberToObject(o, "version", info[i].version);
      cJSON_AddBoolToObject(o, "available", info[i].available);
      if (!info[i].available) cJSON_AddStringToObject(o, "why", info[i].why);
      cJSON_AddStringToObject(o, "device", info[i].device);
      cJSON_AddItemToArray(im, o);
    }
    cJSON_AddItemToArray(arr, m);
    return CLI_OK;
  }
  printf("%s — %s\n", d->name, d->doc ? d->doc : "");
  printf("inputs: ");
  for (size_t i = 0; i < d->n_inputs; i++)
    printf("%s%s", i ? ", " : "", d->inputs[i].name);
  printf("; outputs: ");
  for (size_t i = 0; i < d->n_outputs; i++)
    printf("%s%s", i ? ", " : "", d->outputs[i].name);
  printf("\n");
  cli_params_help(stdout, d->params, d->n_params);
  printf("implementations:\n");
  int w = 28; /* as wide as the longest name (a device's is long) */
  for (size_t i = 0; i < n; i++)
    if ((int)strlen(info[i].name) > w) w = (int)strlen(info[i].name);
  for (size_t i = 0; i < n; i++)
    printf("  %-*s %-10s %s%s\n", w, info[i].name,
           qs_impl_kind_name(info[i].kind),
           info[i].available ? "available" : "unavailable: ",
           info[i].available ? "" : info[i].why);
  (void)c;
  return CLI_OK;
}

int cmd_methods(cli *c, int argc, char **argv) {
  args a;
  CLI_ARGS_OR_RETURN(
      cli_args(c, argc, argv, "methods [NAME] [--json]", NULL, NULL, 0, &a));
  if (a.n_pos > 1) return cli_usage("methods: at most one NAME");
  qs_engine *e;
  if (cli_engine(c, &e)) return CLI_FAIL;
  cJSON *arr = c->json ? cJSON_CreateArray() : NULL;
  int rc = CLI_OK;
  if (a.n_pos) {
    const qs_method_desc *d;
    rc = method_lookup(e, a.pos[0], &d);
    if (!rc) rc = method_show(c, e, d, arr);
  } else if (arr) {
    for (size_t i = 0; !rc && i < qs_method_count(e); i++)
      rc = method_show(c, e, qs_method_at(e, i), arr);
  } else {
    for (size_t i = 0; i < qs_method_count(e); i++)
      printf("%-16s %s\n", qs_method_at(e, i)->name, qs_method_at(e, i)->doc);
    printf("\n'quicksilver methods NAME' shows parameters and "
           "implementations.\n");
  }
  if (arr && rc)
    cJSON_Delete(arr);
  else if (arr)
    rc = cli_json_out(arr);
  return rc;
}

/* ------------------------------------------------------------------ run */

static const opt_def run_opts[] = {
    {"output", 'o', "FILE", "output TIFF (once per output of the method)"},
    {"impl", 0, "NAME|KIND",
     "force an implementation (name, or serial, "
     "threaded, opencl, cpu, composite)"},
    {"explain", 0, NULL, "show the agent's estimate per implementation"},
    {"frames", 0, "FIRST:END",
     "read only frames [FIRST, END) of each input (END omitted: to the "
     "last); the other pages are not decoded"},
    {"dry-run", 0, NULL,
     "show what would run and every estimate; run nothing, write nothing"},
    {NULL, 0, NULL, NULL}};

/* --frames FIRST:END into a page range (count SIZE_MAX: to the last). */
static int frames_parse(const char *t, size_t *first, size_t *count) {
  *first = 0;
  *count = SIZE_MAX;
  if (!t) return CLI_OK;
  const char *colon = strchr(t, ':');
  char head[32];
  size_t end = 0;
  if (!colon || (size_t)(colon - t) >= sizeof head) goto bad;
  memcpy(head, t, (size_t)(colon - t));
  head[colon - t] = '\0';
  if (args_size(head, 0, SIZE_MAX - 1, first)) goto bad;
  if (colon[1] && (args_size(colon + 1, 1, SIZE_MAX - 1, &end) ||
                   end <= *first))
    goto bad;
  if (colon[1]) *count = end - *first;
  return CLI_OK;
bad:
  return cli_usage("--frames: \"%s\" is not FIRST:END with FIRST < END "
                   "(frames counted from 0; END may be left out)",
                   t);
}

static cJSON *report_json(const char *method, const qs_run_report *r) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "method", method);
  cJSON_AddStringToObject(j, "impl", r->impl);
  cJSON_AddStringToObject(j, "reason", r->reason);
  cJSON_AddNumberToObject(j, "seconds", r->seconds);
  cJSON_AddNumberToObject(j, "device_seconds", r->device_seconds);
  cJSON_AddNumberToObject(j, "once_seconds", r->once_seconds);
  cJSON_AddNumberToObject(j, "bytes_up", (double)r->bytes_up);
  cJSON_AddNumberToObject(j, "bytes_down", (double)r->bytes_down);
  cJSON_AddNumberToObject(j, "calibration_seconds", r->calibration_seconds);
  cJSON_AddNumberToObject(j, "load_seconds", r->load_seconds);
  cJSON_AddNumberToObject(j, "fallbacks", r->fallbacks);
  cJSON_AddItemToObject(j, "estimates", cli_estimates_json(r));
  return j;
}

/* The selection rule's verdict in words (README: how the engine
 * chooses). */
static const char *explain_state(const char *s) {
  static const char *const says[][2] = {
      {"best", "best timed on this input"},
      {"next", "tried now: could beat the best"},
      {"promising", "could beat the best: tried after the next"},
      {"costly", "could beat the best, but a try costs more than it saves"},
      {"hopeless", "no longer tried: cannot beat the best"},
      {"second", "could beat the best: a second slice size first"},
      {"cold", "not timed yet: calibration (within its budget) first"},
      {"waiting", "not timed yet: its one-time costs in this process wait "
                  "for the calibration budget"},
      {"outclassed", "not tried: another schedule of its code, timed or "
                     "stopped, shows it cannot beat the best"},
      {"stopped", "no longer tried: its slice run, stopped at calibration's "
                  "time limit, shows it cannot beat the best"},
      {"retry", "not timed yet: its slice run was stopped short; it runs "
                "again when the budget covers what settles it"},
      {"unmeasured", "no input timed yet to compare with"},
      {"forced", "forced"},
      {"not_selected", "not selected (--impl)"},
      {"unavailable", "unavailable here"},
      {"failed", "failed recently: skipped for a while"},
      {"mismatch", "its output disagreed: never chosen"},
      {"device_memory", "out of device memory at this size"},
  };
  for (size_t i = 0; i < sizeof says / sizeof *says; i++)
    if (!strcmp(s, says[i][0])) return says[i][1];
  return s;
}

static void report_text(const cli *c, const char *method,
                        const qs_run_report *r, int explain, int dry) {
  if (dry)
    cli_note(c, "%s: would run %s (%s)%s", method, r->impl[0] ? r->impl : "-",
             r->reason,
             strcmp(r->reason, "calibration")
                 ? ""
                 : " after calibrating the implementations without timings");
  else
    cli_note(c, "%s: %s in %.4f s (%s)", method, r->impl, r->seconds,
             r->reason);
  /* calibration may time the untried implementations on slices and yet
   * leave the choice to another one's history: say which */
  if (r->calibration_seconds > 0 && !strcmp(r->reason, "calibration"))
    cli_note(c, ", %.4f s calibrating", r->calibration_seconds);
  else if (r->calibration_seconds > 0)
    cli_note(c, ", %.4f s timing untried implementations on slices",
             r->calibration_seconds);
  if (r->bytes_up || r->bytes_down)
    cli_note(c, ", %.4f s on the device, %.1f MB up, %.1f MB down",
             r->device_seconds, (double)r->bytes_up * 1e-6,
             (double)r->bytes_down * 1e-6);
  if (r->fallbacks)
    cli_note(c, ", after %d failed implementation%s", r->fallbacks,
             r->fallbacks > 1 ? "s" : "");
  cli_note(c, "\n");
  if (!explain) return;
  /* the names' column as wide as the longest (a device's name is long) */
  int w = 28;
  for (size_t i = 0; i < r->n_estimates && i < QS_MAX_ESTIMATES; i++)
    if ((int)strlen(r->estimates[i].impl) > w)
      w = (int)strlen(r->estimates[i].impl);
  cli_note(c, "  %-*s %12s  %-12s %4s  %12s  %s\n", w, "implementation",
           "estimate", "source", "runs", "at best", "rule");
  for (size_t i = 0; i < r->n_estimates && i < QS_MAX_ESTIMATES; i++) {
    const qs_run_estimate *e = &r->estimates[i];
    char est[32] = "unknown", low[32] = "-";
    if (e->seconds >= 0) snprintf(est, sizeof est, "%.6f s", e->seconds);
    if (e->optimistic > 0) snprintf(low, sizeof low, "%.6f s", e->optimistic);
    else if (e->optimistic == 0) snprintf(low, sizeof low, "any");
    cli_note(c, "  %-*s %12s  %-12s %4d  %12s  %s%s\n", w, e->impl, est,
             e->source, e->runs, low, explain_state(e->state),
             strcmp(e->impl, r->impl) ? "" : dry ? "  <- would run" : "  <- ran");
  }
}

/* The inputs of one run, by channel: in[c * n_in + k] is channel c of
 * input k, its frames the stack's one sequence (its frames, or its slices
 * when it has no frames axis) within [first, first + count). */
typedef struct inputs {
  size_t n_in, channels;
  qs_image *in;
  tiff_info info[16];
} inputs;

static void inputs_free(inputs *x) {
  for (size_t i = 0; x->in && i < x->n_in * x->channels; i++)
    qs_image_free(&x->in[i]);
  free(x->in);
  x->in = NULL;
}

/* Reads the method's inputs: each input's axes first. Channels are never
 * mixed: a stack of C channels gives C runs (every input must have the
 * same C); a stack with both slices and frames is refused naming them,
 * as is a frame range past the end. Returns a CLI status (printed). */
static int inputs_read(const char *label, char **paths, size_t n_in,
                       size_t first, size_t count, inputs *x) {
  char err[1024];
  memset(x, 0, sizeof *x);
  x->n_in = n_in;
  for (size_t k = 0; k < n_in; k++) {
    const tiff_meta *m = &x->info[k].meta;
    if (tiff_info_of(paths[k], &x->info[k], err, sizeof err))
      return cli_fail("%s", err);
    if (m->slices > 1 && m->frames > 1)
      return cli_usage("%s: %s has %zu channel%s x %zu slices (Z) x %zu "
                       "frames (T); a method runs on one sequence of frames "
                       "per channel: split the stack by slice first",
                       label, paths[k], m->channels,
                       m->channels == 1 ? "" : "s", m->slices, m->frames);
    if (k && m->channels != x->info[0].meta.channels)
      return cli_usage("%s: %s has %zu channel%s and %s %zu: inputs of one "
                       "run must have the same channels",
                       label, paths[0], x->info[0].meta.channels,
                       x->info[0].meta.channels == 1 ? "" : "s", paths[k],
                       m->channels);
  }
  x->channels = n_in ? x->info[0].meta.channels : 1;
  x->in = calloc(x->channels * (n_in ? n_in : 1), sizeof *x->in);
  if (!x->in) return cli_fail("%s: out of memory", label);
  for (size_t k = 0; k < n_in; k++) {
    int rc;
    if (x->channels == 1) {
      rc = tiff_read_pages(paths[k], first, count, &x->in[k], err,
                           sizeof err);
      if (rc) return rc == QS_EINVAL ? cli_usage("%s", err)
                                     : cli_fail("%s", err);
      continue;
    }
    qs_image all;
    if ((rc = tiff_read(paths[k], &all, err, sizeof err)))
      return cli_fail("%s", err);
    for (size_t c = 0; !rc && c < x->channels; c++)
      rc = tiff_channel(&all, &x->info[k].meta, c, first, count,
                        &x->in[c * n_in + k]);
    qs_image_free(&all);
    if (rc == QS_EINVAL)
      return cli_usage("%s: frame %zu asked of %s, whose channels have %zu",
                       label, first, paths[k],
                       x->info[k].meta.slices > 1 ? x->info[k].meta.slices
                                                  : x->info[k].meta.frames);
    if (rc) return cli_fail("%s: out of memory", label);
  }
  return CLI_OK;
}

/* The metadata of output `out` of channel 0 (of C, all the same shape):
 * the channel axis kept, the pixel size of the first input that has one
 * scaled by the ratio of sizes (an image magnified M times has pixels M
 * times smaller), and the provenance `prov`. */
static void output_meta(const inputs *x, const qs_image *out, size_t C,
                        const char *prov, tiff_meta *m) {
  tiff_meta_plain(m, out->frames * C);
  if (C > 1) {
    m->channels = C;
    m->frames = out->frames;
  }
  tiff_meta_scaled(m, x->info, x->n_in, out->rows, out->cols);
  snprintf(m->provenance, sizeof m->provenance, "%s", prov);
}

/* Writes output k of every channel as one stack, channel fastest (ImageJ's
 * hyperstack order). */
static int output_write(const char *path, qs_image *const *outs, size_t C,
                        const tiff_meta *m, char *err, size_t err_len) {
  if (C == 1) return tiff_write_meta(path, outs[0], 0, m, err, err_len);
  const qs_image *o = outs[0];
  qs_image all;
  int rc = qs_image_alloc(&all, o->frames * C, o->rows, o->cols);
  if (rc) return snprintf(err, err_len, "%s: out of memory", path), rc;
  size_t plane = o->rows * o->cols;
  for (size_t c = 0; c < C; c++)
    for (size_t f = 0; f < o->frames; f++)
      memcpy(all.data + (f * C + c) * plane, outs[c]->data + f * plane,
             plane * sizeof(float));
  rc = tiff_write_meta(path, &all, 0, m, err, err_len);
  qs_image_free(&all);
  return rc;
}

/* The provenance of a run: its parameters and inputs, and the
 * implementation of each channel (one name when they agree). */
static void run_provenance(const qs_method_desc *d, const double *values,
                           char **paths, size_t n_in, const qs_run_report *rep,
                           size_t C, char *out, size_t len) {
  const char *impls[64];
  char set[256];
  for (size_t c = 0; c < C && c < 64; c++) impls[c] = rep[c].impl;
  prov_impl_set(impls, C < 64 ? C : 64, set, sizeof set);
  cJSON *j = prov_new(d, values, set, n_in ? paths[0] : NULL);
  prov_inputs(j, (const char *const *)paths, n_in);
  if (j && C > 1) cJSON_AddNumberToObject(j, "channels", (double)C);
  prov_impl_each(j, "impl_per_channel", impls, C < 64 ? C : 64);
  prov_text(j, out, len);
}

/* The index of parameter `name` of d, or -1. */
static int param_at(const qs_method_desc *d, const char *name) {
  for (size_t i = 0; i < d->n_params; i++)
    if (!strcmp(d->params[i].name, name)) return (int)i;
  return -1;
}

/* The channels' image stacks at paths[0..C) (the same timepoints each)
 * as one hyperstack at out, channel fastest, with the first's pixel size
 * and provenance (the channel count and each channel's implementation
 * added). A CLI status, printed. */
static int channels_join(const char *label, char (*paths)[4096], size_t C,
                         const char *out) {
  char err[1024];
  qs_image img[64] = {{0}}, *imgs[64];
  tiff_info info;
  int rc = tiff_info_of(paths[0], &info, err, sizeof err);
  for (size_t ch = 0; !rc && ch < C; ch++) {
    imgs[ch] = &img[ch];
    rc = tiff_read(paths[ch], &img[ch], err, sizeof err);
    if (!rc && (img[ch].frames != img[0].frames ||
                img[ch].rows != img[0].rows || img[ch].cols != img[0].cols))
      rc = (snprintf(err, sizeof err, "channel %zu's images differ in shape",
                     ch),
            QS_EFORMAT);
  }
  if (!rc) {
    tiff_meta m = info.meta;
    m.channels = C;
    m.slices = 1;
    m.frames = img[0].frames;
    snprintf(m.order, sizeof m.order, "CZT");
    cJSON *j = cJSON_Parse(info.meta.provenance);
    const char *impls[64];
    tiff_info ci;
    char buf[64][64];
    for (size_t ch = 0; j && ch < C; ch++) {
      impls[ch] = "";
      if (!tiff_info_of(paths[ch], &ci, err, sizeof err)) {
        cJSON *p = cJSON_Parse(ci.meta.provenance);
        const cJSON *im = p ? cJSON_GetObjectItem(p, "impl") : NULL;
        snprintf(buf[ch], sizeof buf[ch], "%s",
                 cJSON_IsString(im) ? im->valuestring : "");
        impls[ch] = buf[ch];
        cJSON_Delete(p);
      }
    }
    if (j) {
      char set[256];
      prov_impl_set(impls, C, set, sizeof set);
      cJSON_DeleteItemFromObject(j, "impl");
      cJSON_AddStringToObject(j, "impl", set);
      cJSON_AddNumberToObject(j, "channels", (double)C);
      prov_impl_each(j, "impl_per_channel", impls, C);
      prov_text(j, m.provenance, sizeof m.provenance);
    }
    rc = output_write(out, imgs, C, &m, err, sizeof err);
  }
  for (size_t ch = 0; ch < C; ch++) qs_image_free(&img[ch]);
  return rc ? cli_fail("%s: %s", label, err) : CLI_OK;
}

/* eSRRF on an input whose frames [first, first + count) do not fit the
 * read budget: read in pieces and folded as the live stream folds them
 * (cmd_stream.h), a window of frames_per_timepoint frames (all: the
 * frames asked for), which gives the whole call's images (the stream's
 * results are the batch call's); several channels one after the other,
 * joined into the run's hyperstack at the end. *taken: 0 when the input
 * fits, or cannot be streamed (temporal none, which has an image per
 * frame; channels that are not the fastest axis, or slices): the whole
 * read then says why it is refused. */
static int esrrf_in_pieces(cli *c, qs_engine *e, const qs_method_desc *d,
                           const char *label, const args *a,
                           const double *values, const char *out,
                           size_t first, size_t count, int *taken) {
  *taken = 0;
  char err[1024], sz[2][32];
  tiff_info info;
  uint64_t budget;
  if (strcmp(d->name, "esrrf") || a->n_pos != 1 ||
      tiff_info_of(a->pos[0], &info, err, sizeof err) ||
      tiff_read_budget(&budget, err, sizeof err))
    return CLI_OK;
  /* several channels: only with the channel axis the fastest (ImageJ's
   * order) and no slices, where a frame's channels are consecutive pages */
  size_t C = info.meta.channels ? info.meta.channels : 1;
  size_t all = C > 1 ? info.pages / C : info.pages;
  if (first >= all) return CLI_OK;
  size_t frames = all - first < count ? all - first : count;
  uint64_t per = (uint64_t)info.rows * info.cols * sizeof(float);
  uint64_t read = per * (C > 1 ? info.pages : frames); /* the whole read */
  int t = param_at(d, "temporal"), f = param_at(d, "frames_per_timepoint");
  double none = -1;
  if (t >= 0) qs_params_parse(&d->params[t], "none", &none, err, sizeof err);
  if (per == 0 || read <= budget || t < 0 || f < 0 || values[t] == none ||
      (C > 1 && (info.meta.order[0] != 'C' || info.meta.slices > 1 ||
                 C > 64)))
    return CLI_OK;
  *taken = 1;
  size_t fpt = (size_t)values[f], window = fpt ? fpt : frames;
  cli_note(c,
           "%s: %s decodes to %s, over the read budget of %s: read in "
           "pieces and folded as the live stream folds, %zu frame%s per "
           "timepoint%s (the whole call's images)\n",
           label, a->pos[0], tiff_size_text(read, sz[0], 32),
           tiff_size_text(budget, sz[1], 32), window, window == 1 ? "" : "s",
           C > 1 ? ", a channel at a time" : "");
  /* the images go to a temporary beside OUT, renamed over it only when
   * every piece is done: a failed or cancelled run writes nothing, as the
   * whole call does (the stream would keep the images made so far);
   * several channels go to one temporary each first (OUT's temporary
   * name and ".c" with the channel: swept with it after a crash) */
  outfile o;
  int rc = outfile_open(&o, out, err, sizeof err);
  if (rc) return cli_fail("%s: %s", label, err);
  char chan[64][4096];
  for (size_t ch = 0; ch < C; ch++)
    snprintf(chan[ch], sizeof chan[ch], C > 1 ? "%s.c%zu" : "%s", o.tmp, ch);
  size_t made = 0;
  for (size_t ch = 0; rc == CLI_OK && ch < C && !cli_interrupted(); ch++) {
    char what[128];
    snprintf(what, sizeof what, C > 1 ? "%s (channel %zu)" : "%s", label, ch);
    stream_job j = {.in = a->pos[0],
                    .out = chan[ch],
                    .window = window,
                    .every = 1,
                    .first = first,
                    .step = C,
                    .channel = ch,
                    .limit = frames,
                    .rows = info.rows,
                    .cols = info.cols,
                    .poll = 0.2,
                    .idle = 0,
                    .params = a->params,
                    .n_params = a->n_params,
                    .impl = args_value(a, "impl"),
                    .info = info,
                    .no_summary = C > 1 && c->json, /* one JSON object */
                    .label = what};
    rc = stream_run(c, e, d, &j);
    made = ch + 1;
  }
  if (!cli_interrupted() && rc == CLI_OK && C > 1)
    rc = channels_join(label, chan, C, o.tmp);
  for (size_t ch = 0; C > 1 && ch < made; ch++) unlink(chan[ch]);
  if (cli_interrupted()) {
    outfile_abort(&o);
    cli_fail("%s: cancelled (Ctrl-C); nothing written", label);
    return CLI_INTERRUPTED;
  }
  if (rc != CLI_OK) {
    outfile_abort(&o);
    return rc;
  }
  if (outfile_commit(&o, err, sizeof err))
    return cli_fail("%s: %s", label, err);
  if (C > 1 && c->json) { /* the channels' summaries as one object */
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "method", "esrrf");
    cJSON_AddBoolToObject(j, "read_in_pieces", 1);
    cJSON_AddNumberToObject(j, "channels", (double)C);
    cJSON_AddNumberToObject(j, "frames", (double)frames);
    return cli_json_out(j);
  }
  return CLI_OK;
}

/* argv[0] names the method; argv[1..] are inputs and options. */
static int run_method(cli *c, const char *label, const char *name, int argc,
                      char **argv) {
  qs_engine *e;
  if (cli_method_engine(c, argc, argv, &e)) return CLI_FAIL;
  const qs_method_desc *d;
  int rc = method_lookup(e, name, &d);
  if (rc) return rc;
  char synopsis[256];
  snprintf(synopsis, sizeof synopsis,
           "%s IN.tif%s -o OUT.tif [--PARAM VALUE ...] [--impl NAME|KIND] "
           "[--explain] [--dry-run] [--frames FIRST:END]",
           label, d->n_inputs > 1 ? " [IN2.tif ...]" : "");
  args a;
  CLI_ARGS_OR_RETURN(
      cli_args(c, argc, argv, synopsis, run_opts, d->params, d->n_params, &a));
  double values[QS_MAX_PARAMS];
  char err[2048];
  if (qs_params_resolve(d->params, d->n_params, a.params, a.n_params, values,
                        err, sizeof err))
    return cli_usage("%s: %s", label, err);
  if (a.n_pos != d->n_inputs)
    return cli_usage("%s: %s takes %zu input file%s (%s%s), got %zu", label,
                     d->name, d->n_inputs, d->n_inputs == 1 ? "" : "s",
                     d->n_inputs ? d->inputs[0].name : "",
                     d->n_inputs > 1 ? ", ..." : "", a.n_pos);
  size_t n_out = args_count(&a, "output");
  int dry = args_value(&a, "dry-run") != NULL;
  if ((n_out == 0 && !dry) || n_out > d->n_outputs)
    return d->n_outputs > 1
               ? cli_usage("%s: give -o FILE 1 to %zu times", label,
                           d->n_outputs)
               : cli_usage("%s: give -o FILE once", label);
  const char *outs[QS_MAX_ESTIMATES];
  for (size_t i = 0, k = 0; i < a.n_opts; i++)
    if (!strcmp(a.opts[i].def->name, "output") && k < QS_MAX_ESTIMATES)
      outs[k++] = a.opts[i].value;
  /* Before any work: no output may be an input, be named twice, or be
   * anything but a regular file or a new name; inputs must be regular
   * files (a FIFO would block the read forever). */
  rc = outfile_check(outs, n_out, (const char *const *)a.pos, a.n_pos, err,
                     sizeof err);
  if (rc == QS_EINVAL) return cli_usage("%s: %s", label, err);
  if (rc) return cli_fail("%s: %s", label, err);

  size_t first, count;
  if ((rc = frames_parse(args_value(&a, "frames"), &first, &count)))
    return rc;

  if (!dry && !args_value(&a, "explain") && n_out == 1) {
    int taken;
    rc = esrrf_in_pieces(c, e, d, label, &a, values, outs[0], first, count,
                         &taken);
    if (taken) return rc;
  }
  if (d->n_inputs > 16 || d->n_outputs > 16)
    return cli_fail("%s: too many inputs or outputs", d->name);
  inputs x;
  rc = inputs_read(label, (char **)a.pos, d->n_inputs, first, count, &x);
  size_t C = x.channels ? x.channels : 1;
  qs_image *out = calloc(C * d->n_outputs, sizeof *out);
  qs_run_report *rep = calloc(C, sizeof *rep);
  if (!rc && (!out || !rep)) rc = cli_fail("%s: out of memory", label);
  for (size_t ch = 0; !rc && ch < C; ch++) {
    qs_run_request rq = {.inputs = x.in + ch * d->n_inputs,
                         .n_inputs = d->n_inputs,
                         .params = a.params,
                         .n_params = a.n_params,
                         .impl = args_value(&a, "impl")};
    char what[96];
    snprintf(what, sizeof what, C > 1 ? "%s (channel %zu)" : "%s", d->name,
             ch);
    cli_progress prog;
    if (!dry) cli_progress_begin(c, &prog, what, &rq);
    int st = dry ? qs_method_estimate(e, d->name, &rq, &rep[ch])
                 : qs_method_run(e, d->name, &rq, out + ch * d->n_outputs,
                                 d->n_outputs, &rep[ch]);
    int stopped = !dry && cli_progress_end(&prog);
    if (rep[ch].record_status) cli_record_warn(c);
    if (st == QS_ECANCELLED && stopped) {
      cli_fail("%s: cancelled (Ctrl-C); nothing written", label);
      rc = CLI_INTERRUPTED;
    } else if (st) {
      rc = cli_status_exit(st);
      if (C > 1)
        cli_fail("%s: channel %zu: %s", label, ch, qs_engine_error(e));
      else
        cli_fail("%s: %s", label, qs_engine_error(e));
    }
    if (dry) break; /* every channel is the same call */
  }
  if (rc) goto done;
  if (dry) {
    if (c->json) {
      cJSON *j = report_json(d->name, &rep[0]);
      cJSON_AddBoolToObject(j, "dry_run", 1);
      rc = cli_json_out(j);
    } else {
      report_text(c, d->name, &rep[0], 1, 1);
    }
    goto done;
  }
  char prov[TIFF_PROV_MAX];
  run_provenance(d, values, (char **)a.pos, d->n_inputs, rep, C, prov,
                 sizeof prov);
  tiff_meta meta[16];
  for (size_t k = 0; k < n_out; k++) {
    qs_image *per[64] = {NULL};
    if (C > 64) {
      rc = cli_fail("%s: more than 64 channels", label);
      goto done;
    }
    for (size_t ch = 0; ch < C; ch++) {
      per[ch] = &out[ch * d->n_outputs + k];
      if (per[ch]->frames != per[0]->frames)
        rc = cli_fail("%s: channels gave %zu and %zu frames", label,
                      per[0]->frames, per[ch]->frames);
    }
    output_meta(&x, per[0], C, prov, &meta[k]);
    if (rc || output_write(outs[k], per, C, &meta[k], err, sizeof err)) {
      rc = rc ? rc : cli_fail("%s", err);
      goto done;
    }
  }
  if (c->json) {
    cJSON *j = report_json(d->name, &rep[0]),
          *o = cJSON_AddArrayToObject(j, "outputs");
    for (size_t k = 0; k < n_out; k++) {
      cJSON *f = cJSON_CreateObject(), *sh = cJSON_AddArrayToObject(f, "shape");
      cJSON_AddStringToObject(f, "path", outs[k]);
      if (C > 1)
        cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)C));
      cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)out[k].frames));
      cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)out[k].rows));
      cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)out[k].cols));
      cJSON_AddStringToObject(f, "axes", C > 1 ? "CTYX" : "TYX");
      if (meta[k].pixel_x > 0) {
        cJSON_AddNumberToObject(f, "pixel_size", meta[k].pixel_x);
        cJSON_AddStringToObject(f, "unit", meta[k].unit);
      }
      cJSON_AddItemToArray(o, f);
    }
    if (C > 1) {
      cJSON *chs = cJSON_AddArrayToObject(j, "channels");
      for (size_t ch = 0; ch < C; ch++)
        cJSON_AddItemToArray(chs, report_json(d->name, &rep[ch]));
    }
    cJSON_AddItemToObject(j, "provenance", cJSON_Parse(prov));
    rc = cli_json_out(j);
  } else {
    for (size_t ch = 0; ch < C; ch++) {
      char what[96];
      snprintf(what, sizeof what, C > 1 ? "%s (channel %zu)" : "%s", d->name,
               ch);
      report_text(c, what, &rep[ch], args_value(&a, "explain") != NULL, 0);
    }
    for (size_t k = 0; k < n_out; k++) {
      char px[96] = "";
      if (meta[k].pixel_x > 0)
        snprintf(px, sizeof px, ", pixel %.6g %s", meta[k].pixel_x,
                 meta[k].unit);
      if (C > 1)
        cli_note(c, "  %s: %zu channels x %zux%zux%zu%s -> %s\n",
                 d->outputs[k].name, C, out[k].frames, out[k].rows,
                 out[k].cols, px, outs[k]);
      else
        cli_note(c, "  %s: %zux%zux%zu%s -> %s\n", d->outputs[k].name,
                 out[k].frames, out[k].rows, out[k].cols, px, outs[k]);
    }
  }
done:
  inputs_free(&x);
  for (size_t k = 0; out && k < C * d->n_outputs; k++)
    qs_image_free(&out[k]);
  free(out);
  free(rep);
  return rc;
}

int cmd_run(cli *c, int argc, char **argv) {
  if (argc < 2 || argv[1][0] == '-') {
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
      cli_help(stdout,
               "run METHOD IN.tif [IN2.tif ...] -o OUT.tif [-o "
               "OUT2.tif] [--PARAM VALUE ...] [--impl NAME|KIND] "
               "[--explain] [--dry-run]\n(quicksilver run METHOD --help lists "
               "METHOD's parameters)",
               run_opts, NULL, 0);
      return CLI_OK;
    }
    return cli_usage("run: name the METHOD first (see quicksilver methods)");
  }
  char label[96];
  snprintf(label, sizeof label, "run %s", argv[1]);
  return run_method(c, label, argv[1], argc - 1, argv + 1);
}

int cmd_esrrf(cli *c, int argc, char **argv) {
  for (int i = 1; i < argc && strcmp(argv[i], "--"); i++)
    if (!strcmp(argv[i], "--stream")) return cmd_stream(c, argc, argv);
  return run_method(c, "esrrf", "esrrf", argc, argv);
}
