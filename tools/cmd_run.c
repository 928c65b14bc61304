/* cmd_run.c — `methods`, `run` and `esrrf`: the method tables drive the
 * flags, the help and the listing; method_run does the work. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "outfile.h"
#include "tiff.h"

/* The method called `name`, or a usage error suggesting the nearest. */
static int method_lookup(engine *e, const char *name, const method_desc **d) {
  *d = method_find(e, name);
  if (*d) return CLI_OK;
  const char *near = method_nearest_name(e, name);
  if (near)
    return cli_usage("unknown method '%s' (did you mean '%s'?)", name, near);
  return cli_usage("unknown method '%s' (see quicksilver methods)", name);
}

static cJSON *param_json(const param_def *d) {
  static const char *const types[] = {"int", "float", "bool", "enum"};
  cJSON *j = cJSON_CreateObject();
  char text[64], flag[QS_NAME_MAX + 2] = "--";
  args_flag_of(d->name, flag + 2, sizeof flag - 2);
  params_format(d, d->def, text, sizeof text);
  cJSON_AddStringToObject(j, "name", d->name);
  cJSON_AddStringToObject(j, "flag", flag);
  cJSON_AddStringToObject(j, "type", types[d->type]);
  cJSON_AddStringToObject(j, "default", text);
  if ((d->type == PARAM_INT || d->type == PARAM_FLOAT) && d->min < d->max) {
    cJSON_AddNumberToObject(j, "min", d->min);
    cJSON_AddNumberToObject(j, "max", d->max);
    cJSON_AddBoolToObject(j, "min_open", (d->flags & PARAM_MIN_OPEN) != 0);
    cJSON_AddBoolToObject(j, "max_open", (d->flags & PARAM_MAX_OPEN) != 0);
  }
  if (d->type == PARAM_ENUM)
    cJSON_AddStringToObject(j, "choices", d->choices ? d->choices : "");
  cJSON_AddStringToObject(j, "doc", d->doc ? d->doc : "");
  return j;
}

/* One method: parameters and implementations (with availability). */
static int method_show(cli *c, engine *e, const method_desc *d, cJSON *arr) {
  impl_info info[QS_MAX_ESTIMATES];
  size_t n = 0;
  if (method_impls(e, d->name, info, QS_MAX_ESTIMATES, &n))
    return cli_fail("%s", engine_error(e));
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
      cJSON_AddStringToObject(o, "kind", impl_kind_name(info[i].kind));
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
  for (size_t i = 0; i < n; i++)
    printf("  %-28s %-10s %s%s\n", info[i].name, impl_kind_name(info[i].kind),
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
  engine *e;
  if (cli_engine(c, &e)) return CLI_FAIL;
  cJSON *arr = c->json ? cJSON_CreateArray() : NULL;
  int rc = CLI_OK;
  if (a.n_pos) {
    const method_desc *d;
    rc = method_lookup(e, a.pos[0], &d);
    if (!rc) rc = method_show(c, e, d, arr);
  } else if (arr) {
    for (size_t i = 0; !rc && i < method_count(e); i++)
      rc = method_show(c, e, method_at(e, i), arr);
  } else {
    for (size_t i = 0; i < method_count(e); i++)
      printf("%-16s %s\n", method_at(e, i)->name, method_at(e, i)->doc);
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

static cJSON *report_json(const char *method, const run_report *r) {
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
  cJSON_AddNumberToObject(j, "fallbacks", r->fallbacks);
  cJSON_AddItemToObject(j, "estimates", cli_estimates_json(r));
  return j;
}

static void report_text(const cli *c, const char *method, const run_report *r,
                        int explain, int dry) {
  if (dry)
    cli_note(c, "%s: would run %s (%s)%s", method, r->impl[0] ? r->impl : "-",
             r->reason,
             strcmp(r->reason, "calibration")
                 ? ""
                 : " after calibrating the implementations without timings");
  else
    cli_note(c, "%s: %s in %.4f s (%s)", method, r->impl, r->seconds,
             r->reason);
  if (r->calibration_seconds > 0)
    cli_note(c, ", %.4f s calibrating", r->calibration_seconds);
  if (r->bytes_up || r->bytes_down)
    cli_note(c, ", %.4f s on the device, %.1f MB up, %.1f MB down",
             r->device_seconds, (double)r->bytes_up * 1e-6,
             (double)r->bytes_down * 1e-6);
  if (r->fallbacks)
    cli_note(c, ", after %d failed implementation%s", r->fallbacks,
             r->fallbacks > 1 ? "s" : "");
  cli_note(c, "\n");
  if (!explain) return;
  cli_note(c, "  %-28s %12s  %-12s %s\n", "implementation", "estimate",
           "source", "runs");
  for (size_t i = 0; i < r->n_estimates && i < QS_MAX_ESTIMATES; i++) {
    const run_estimate *e = &r->estimates[i];
    char est[32] = "unknown";
    if (e->seconds >= 0) snprintf(est, sizeof est, "%.6f s", e->seconds);
    cli_note(c, "  %-28s %12s  %-12s %d%s\n", e->impl, est, e->source, e->runs,
             strcmp(e->impl, r->impl) ? "" : dry ? "  <- would run" : "  <- ran");
  }
}

/* argv[0] names the method; argv[1..] are inputs and options. */
static int run_method(cli *c, const char *label, const char *name, int argc,
                      char **argv) {
  engine *e;
  if (cli_method_engine(c, argc, argv, &e)) return CLI_FAIL;
  const method_desc *d;
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
  if (params_resolve(d->params, d->n_params, a.params, a.n_params, values, err,
                     sizeof err))
    return cli_usage("%s: %s", label, err);
  if (a.n_pos != d->n_inputs)
    return cli_usage("%s: %s takes %zu input file%s (%s%s), got %zu", label,
                     d->name, d->n_inputs, d->n_inputs == 1 ? "" : "s",
                     d->n_inputs ? d->inputs[0].name : "",
                     d->n_inputs > 1 ? ", ..." : "", a.n_pos);
  size_t n_out = args_count(&a, "output");
  int dry = args_value(&a, "dry-run") != NULL;
  if ((n_out == 0 && !dry) || n_out > d->n_outputs)
    return cli_usage("%s: give -o FILE %s%zu time%s", label,
                     d->n_outputs > 1 ? "1 to " : "", d->n_outputs,
                     d->n_outputs > 1 ? "s" : "");
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

  image in[16] = {{0}}, out[16] = {{0}};
  if (d->n_inputs > 16 || d->n_outputs > 16)
    return cli_fail("%s: too many inputs or outputs", d->name);
  for (size_t k = 0; k < d->n_inputs; k++)
    if ((rc = tiff_read_pages(a.pos[k], first, count, &in[k], err,
                              sizeof err))) {
      rc = rc == QS_EINVAL ? cli_usage("%s", err) : cli_fail("%s", err);
      goto done;
    }
  run_request rq = {.inputs = in,
                    .n_inputs = d->n_inputs,
                    .params = a.params,
                    .n_params = a.n_params,
                    .impl = args_value(&a, "impl")};
  run_report rep;
  memset(&rep, 0, sizeof rep);
  int st = dry ? method_estimate(e, d->name, &rq, &rep)
               : method_run(e, d->name, &rq, out, d->n_outputs, &rep);
  if (rep.record_status) cli_record_warn(c);
  if (st) {
    rc = cli_status_exit(st);
    cli_fail("%s: %s", label, engine_error(e));
    goto done;
  }
  if (dry) {
    if (c->json) {
      cJSON *j = report_json(d->name, &rep);
      cJSON_AddBoolToObject(j, "dry_run", 1);
      rc = cli_json_out(j);
    } else {
      report_text(c, d->name, &rep, 1, 1);
    }
    goto done;
  }
  for (size_t k = 0; k < n_out; k++)
    if (tiff_write(outs[k], &out[k], err, sizeof err)) {
      rc = cli_fail("%s", err);
      goto done;
    }
  if (c->json) {
    cJSON *j = report_json(d->name, &rep),
          *o = cJSON_AddArrayToObject(j, "outputs");
    for (size_t k = 0; k < n_out; k++) {
      cJSON *f = cJSON_CreateObject(), *s = cJSON_AddArrayToObject(f, "shape");
      cJSON_AddStringToObject(f, "path", outs[k]);
      cJSON_AddItemToArray(s, cJSON_CreateNumber((double)out[k].frames));
      cJSON_AddItemToArray(s, cJSON_CreateNumber((double)out[k].rows));
      cJSON_AddItemToArray(s, cJSON_CreateNumber((double)out[k].cols));
      cJSON_AddItemToArray(o, f);
    }
    rc = cli_json_out(j);
  } else {
    report_text(c, d->name, &rep, args_value(&a, "explain") != NULL, 0);
    for (size_t k = 0; k < n_out; k++)
      cli_note(c, "  %s: %zux%zux%zu -> %s\n", d->outputs[k].name,
               out[k].frames, out[k].rows, out[k].cols, outs[k]);
  }
done:
  for (size_t k = 0; k < 16; k++)
    image_free(&in[k]), image_free(&out[k]);
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
