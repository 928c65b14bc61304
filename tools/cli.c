/* cli.c — the helpers the commands share (see cli.h). */
#include "cli.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const opt_def cli_globals[] = {
    {"db", 0, "PATH",
     "timing store (default: $QUICKSILVER_DB, else the "
     "user's cache directory)"},
    {"threads", 0, "N",
     "threads of the pool (default: $QUICKSILVER_THREADS, else all cores; "
     "0: all cores)"},
    {"no-opencl", 0, NULL, "no OpenCL devices"},
    {"quiet", 'q', NULL, "no report on stderr"},
    {"verbose", 'v', NULL, "more detail on stderr"},
    {"json", 0, NULL, "results as JSON on stdout"},
    {"help", 'h', NULL, "this help"},
    {NULL, 0, NULL, NULL},
};

static void vmessage(const char *fmt, va_list ap) {
  fputs("quicksilver: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
}

int cli_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage(fmt, ap);
  va_end(ap);
  return CLI_FAIL;
}

int cli_usage(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vmessage(fmt, ap);
  va_end(ap);
  return CLI_USAGE;
}

int cli_status_exit(int status) {
  return status == QS_EPARAM || status == QS_ENOMETHOD ||
                 status == QS_ENOIMPL || status == QS_ESHAPE
             ? CLI_USAGE
         : status ? CLI_FAIL
                  : CLI_OK;
}

void cli_note(const cli *c, const char *fmt, ...) {
  if (c->quiet) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
}

int cli_json_out(cJSON *j) {
  char *text = j ? cJSON_Print(j) : NULL;
  cJSON_Delete(j);
  if (!text) return cli_fail("out of memory while writing JSON");
  puts(text);
  cJSON_free(text);
  return fflush(stdout) ? cli_fail("cannot write to stdout") : CLI_OK;
}

void cli_params_help(FILE *f, const qs_param_def *defs, size_t n_defs) {
  static const char *const types[] = {"INT", "NUMBER", "true|false", "NAME"};
  if (n_defs) fprintf(f, "parameters:\n");
  for (size_t i = 0; i < n_defs; i++) {
    const qs_param_def *d = &defs[i];
    char flag[QS_NAME_MAX], left[128], def[64], range[96] = "";
    args_flag_of(d->name, flag, sizeof flag);
    snprintf(left, sizeof left, "--%s %s", flag,
             d->type == QS_PARAM_ENUM ? d->choices : types[d->type]);
    qs_params_format(d, d->def, def, sizeof def);
    if ((d->type == QS_PARAM_INT || d->type == QS_PARAM_FLOAT) &&
        d->min < d->max) {
      char lo[40], hi[40];
      qs_params_format(d, d->min, lo, sizeof lo);
      qs_params_format(d, d->max, hi, sizeof hi);
      snprintf(range, sizeof range, ", range %s%s, %s%s",
               d->flags & QS_PARAM_MIN_OPEN ? "(" : "[", lo, hi,
               d->flags & QS_PARAM_MAX_OPEN ? ")" : "]");
    }
    fprintf(f, "  %-30s %s (default %s%s)\n", left, d->doc, def, range);
  }
}

void cli_help(FILE *f, const char *synopsis, const opt_def *opts,
              const qs_param_def *defs, size_t n_defs) {
  fprintf(f, "usage: quicksilver %s\n", synopsis);
  const opt_def *tables[] = {opts, cli_globals};
  for (int t = 0; t < 2; t++) {
    if (!tables[t] || !tables[t]->name) continue;
    fprintf(f, t ? "global options:\n" : "options:\n");
    for (const opt_def *o = tables[t]; o->name; o++) {
      char left[96], shrt[8] = "    ";
      if (o->short_name) snprintf(shrt, sizeof shrt, "-%c, ", o->short_name);
      snprintf(left, sizeof left, "%s--%s%s%s", shrt, o->name,
               o->meta ? " " : "", o->meta ? o->meta : "");
      fprintf(f, "  %-30s %s\n", left, o->doc);
    }
  }
  cli_params_help(f, defs, n_defs);
}

int cli_args(cli *c, int argc, char **argv, const char *synopsis,
             const opt_def *opts, const qs_param_def *defs, size_t n_defs,
             args *a) {
  static const opt_def none[] = {{NULL, 0, NULL, NULL}};
  const opt_def *tables[] = {opts ? opts : none, cli_globals};
  char err[512];
  if (args_parse(argc - 1, argv + 1, tables, 2, defs, n_defs, a, err,
                 sizeof err))
    return cli_usage("%s: %s (see quicksilver %s --help)", argv[0], err,
                     argv[0]);
  int rc = cli_apply(c, a);
  if (rc == CLI_DONE) cli_help(stdout, synopsis, opts, defs, n_defs);
  return rc;
}

/* --threads N; 0 means every online core, as QUICKSILVER_THREADS=0 does
 * (the engine's own 0 would defer to that variable instead). */
static int threads_of(size_t n) { return n ? (int)n : qs_engine_cores(); }

int cli_apply(cli *c, const args *a) {
  for (size_t i = 0; i < a->n_opts; i++) {
    const opt_def *o = a->opts[i].def;
    const char *v = a->opts[i].value;
    if (o < cli_globals ||
        o >= cli_globals + sizeof cli_globals / sizeof cli_globals[0])
      continue;
    if (!strcmp(o->name, "help")) return CLI_DONE;
    if (!strcmp(o->name, "db")) c->db = v;
    if (!strcmp(o->name, "no-opencl")) c->no_opencl = 1;
    if (!strcmp(o->name, "quiet")) c->quiet = 1;
    if (!strcmp(o->name, "verbose")) c->verbose = 1;
    if (!strcmp(o->name, "json")) c->json = 1;
    if (!strcmp(o->name, "threads")) {
      size_t n;
      if (args_size(v, 0, QS_MAX_THREADS, &n))
        return cli_usage("--threads: \"%s\" is not a thread count in "
                         "[0, %d] (0: all cores)",
                         v, QS_MAX_THREADS);
      c->threads = threads_of(n);
    }
  }
  return CLI_OK;
}

void cli_prescan(cli *c, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--db") || !strcmp(argv[i], "--threads")) {
      if (i + 1 >= argc) break;
    }
    const char *s = argv[i];
    if (!strcmp(s, "--")) break;
    if (!strcmp(s, "--no-opencl"))
      c->no_opencl = 1;
    else if (!strcmp(s, "-q") || !strcmp(s, "--quiet"))
      c->quiet = 1;
    else if (!strcmp(s, "-v") || !strcmp(s, "--verbose"))
      c->verbose = 1;
    else if (!strncmp(s, "--db=", 5))
      c->db = s + 5;
    else if (!strcmp(s, "--db") && i + 1 < argc)
      c->db = argv[++i];
    else if (!strcmp(s, "--threads") && i + 1 < argc) {
      size_t n;
      if (!args_size(argv[++i], 0, QS_MAX_THREADS, &n))
        c->threads = threads_of(n);
    }
  }
}

void cli_record_warn(cli *c) {
  char msg[1024];
  if (c->store_warned || !c->e ||
      !qs_engine_record_status(c->e, msg, sizeof msg))
    return;
  c->store_warned = 1;
  if (!c->quiet)
    fprintf(stderr,
            "quicksilver: warning: %s\nquicksilver: warning: running "
            "without recording timings\n",
            msg);
}

int cli_engine(cli *c, qs_engine **e) {
  if (!c->e) {
    qs_engine_options o = {
        .db_path = c->db, .threads = c->threads, .no_opencl = c->no_opencl};
    int rc = qs_engine_open(&c->e, &o);
    /* A store that cannot be used (damaged, newer schema, unwritable
     * place) leaves an engine that runs methods without recording them:
     * say so, and go on. */
    int store_only = rc == QS_ECORRUPT || rc == QS_ESCHEMA || rc == QS_EIO ||
                     rc == QS_EDB || rc == QS_EBUSY || rc == QS_EFORMAT;
    if (rc && store_only && c->e && qs_method_count(c->e) > 0) rc = QS_OK;
    if (!rc) cli_record_warn(c);
    /* Without HOME or XDG_CACHE_HOME there is no default place: the store
     * lives in memory, and that must not pass unnoticed. */
    const char *env_db = getenv("QUICKSILVER_DB");
    if (!rc && !c->quiet && !strcmp(qs_engine_db_path(c->e), ":memory:") &&
        !(c->db && !strcmp(c->db, ":memory:")) &&
        !(env_db && !strcmp(env_db, ":memory:")))
      fprintf(stderr,
              "quicksilver: warning: neither HOME nor XDG_CACHE_HOME is set "
              "and no store was named (--db, QUICKSILVER_DB): timings are "
              "kept in memory and lost at exit\n");
    if (rc) {
      cli_fail("%s", c->e ? qs_engine_error(c->e) : qs_status_message(rc));
      qs_engine_close(c->e);
      c->e = NULL;
      return CLI_FAIL;
    }
  }
  *e = c->e;
  return CLI_OK;
}

int cli_method_engine(cli *c, int argc, char **argv, qs_engine **e) {
  cli_prescan(c, argc, argv);
  for (int i = 1; i < argc; i++)
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      c->db = ":memory:";
      c->no_opencl = 1;
    }
  return cli_engine(c, e);
}

cJSON *cli_estimates_json(const qs_run_report *r) {
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; i < r->n_estimates && i < QS_MAX_ESTIMATES; i++) {
    const qs_run_estimate *x = &r->estimates[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "impl", x->impl);
    if (x->seconds >= 0)
      cJSON_AddNumberToObject(o, "seconds", x->seconds);
    else
      cJSON_AddNullToObject(o, "seconds");
    cJSON_AddStringToObject(o, "source", x->source);
    cJSON_AddNumberToObject(o, "runs", x->runs);
    if (x->optimistic >= 0)
      cJSON_AddNumberToObject(o, "optimistic", x->optimistic);
    else
      cJSON_AddNullToObject(o, "optimistic");
    cJSON_AddStringToObject(o, "state", x->state);
    cJSON_AddItemToArray(arr, o);
  }
  return arr;
}

/* ------------------------------------------------ progress and Ctrl-C */

static volatile sig_atomic_t interrupted;
static void (*before)(int); /* SIGINT's disposition before the catch */

static void on_interrupt(int sig) {
  interrupted = 1;
  /* a second Ctrl-C ends the process as it would have (outfile.h's
   * cleanup of temporaries, or the default) */
  signal(sig, before == SIG_ERR || before == SIG_IGN ? SIG_DFL : before);
}

void (*cli_interrupt_catch(void))(int) {
  interrupted = 0;
  before = signal(SIGINT, SIG_DFL);
  signal(SIGINT, on_interrupt);
  return before;
}

void cli_interrupt_release(void (*old)(int)) {
  signal(SIGINT, old == SIG_ERR ? SIG_DFL : old);
}

int cli_interrupted(void) { return interrupted != 0; }

static double mono_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int cli_progress_report(cli_progress *p, uint64_t done, uint64_t total) {
  if (interrupted) return 1;
  const cli *c = p->c;
  double t = mono_s();
  /* a call under a second needs no progress line */
  if (!c->tty || c->quiet || c->json || t - p->t0 < 1.0 ||
      t - p->drawn < 0.2)
    return 0;
  p->drawn = t;
  if (total)
    fprintf(stderr, "\r\033[K%s: %3.0f%% (%llu/%llu) %.1f s", p->what,
            100.0 * (double)done / (double)total, (unsigned long long)done,
            (unsigned long long)total, t - p->t0);
  else if (done)
    fprintf(stderr, "\r\033[K%s: %llu, %.1f s", p->what,
            (unsigned long long)done, t - p->t0);
  else
    fprintf(stderr, "\r\033[K%s: %.1f s", p->what, t - p->t0);
  return 0;
}

static int on_progress(void *ctx, uint64_t done, uint64_t total) {
  return cli_progress_report(ctx, done, total);
}

void cli_progress_begin(const cli *c, cli_progress *p, const char *what,
                        qs_run_request *rq) {
  *p = (cli_progress){.c = c, .what = what, .t0 = mono_s()};
  p->old = cli_interrupt_catch();
  if (rq) {
    rq->progress = on_progress;
    rq->progress_ctx = p;
  }
}

int cli_progress_end(cli_progress *p) {
  cli_interrupt_release(p->old);
  if (p->drawn) fprintf(stderr, "\r\033[K");
  return interrupted != 0;
}
