/* cmd_bench.c — `quicksilver bench`: sweeps through qs_method_benchmark()
 * with progress on stderr, a summary on stdout, and CSV, JSON and SVG
 * files on request. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sweep.h"
#include "cli.h"
#include "outfile.h"
#include "svg.h"

/* What the progress line shows: the step under way (its place and name)
 * and, within it, the runs of its benchmark. Ctrl-C cancels the step
 * under way and ends the sweep, keeping the steps measured before it; a
 * second one ends the process as usual. */
typedef struct bench_ui {
  const cli *c;
  char line[160]; /* "[####....] 3/12 esrrf 1x256x256 m=2" */
  double start;   /* monotonic seconds at the sweep's start */
} bench_ui;

/* The step's benchmark's progress (runs done / total): the step's line
 * with them; nonzero once Ctrl-C was pressed. */
static int on_runs(void *ctx, uint64_t done, uint64_t total) {
  bench_ui *u = ctx;
  if (cli_interrupted()) return 1;
  if (!total || !u->line[0] || !u->c->tty || u->c->quiet) return 0;
  fprintf(stderr, "\r\033[K%s  run %llu/%llu %6.1f s", u->line,
          (unsigned long long)done, (unsigned long long)total,
          1e-9 * (double)qs_timer_ns() - u->start);
  fflush(stderr);
  return 0;
}

static void skipped(void *ctx, const sweep_step *st, double predicted,
                    double left) {
  const cli *c = ((const bench_ui *)ctx)->c;
  if (c->quiet) return;
  if (c->tty) fprintf(stderr, "\r\033[K");
  if (predicted >= 0)
    fprintf(stderr,
            "bench: skipped %s %zux%zux%zu%s%s: predicted %.1f s, %.1f s of "
            "the budget left\n",
            st->method->name, st->size.frames, st->size.rows, st->size.cols,
            st->params[0] ? " " : "", st->params, predicted, left);
  else
    fprintf(stderr,
            "bench: skipped %s %zux%zux%zu%s%s: more work than a step "
            "already past the budget\n",
            st->method->name, st->size.frames, st->size.rows, st->size.cols,
            st->params[0] ? " " : "", st->params);
}

static void progress(void *ctx, const sweep_step *st, size_t done,
                     size_t total, double elapsed) {
  bench_ui *u = ctx;
  const cli *c = u->c;
  u->line[0] = 0;
  if (c->quiet) return;
  if (!st) {
    if (c->tty) fprintf(stderr, "\r\033[K");
    fprintf(stderr, "bench: %zu of %zu step%s in %.1f s\n", done, total,
            total == 1 ? "" : "s", elapsed);
    return;
  }
  char what[200];
  snprintf(what, sizeof what, "%s %zux%zux%zu%s%s", st->method->name,
           st->size.frames, st->size.rows, st->size.cols,
           st->params[0] ? " " : "", st->params);
  if (!c->tty) {
    fprintf(stderr, "bench: step %zu/%zu %s (%.1f s)\n", done + 1, total, what,
            elapsed);
    return;
  }
  enum { BAR = 24 };
  char bar[BAR + 1];
  size_t fill = total ? done * BAR / total : 0;
  for (size_t i = 0; i < BAR; i++)
    bar[i] = i < fill ? '#' : '.';
  bar[BAR] = 0;
  snprintf(u->line, sizeof u->line, "[%s] %zu/%zu %.50s", bar, done + 1, total,
           what);
  fprintf(stderr, "\r\033[K%s %6.1f s", u->line, elapsed);
  fflush(stderr);
}

/* One line per (method, impl) for the plot: x = work, y = min seconds. */
static int write_svg(const sweep_result *r, const char *path, char *err,
                     size_t err_len) {
  size_t n = r->n ? r->n : 1;
  svg_series *s = calloc(n, sizeof *s);
  double *xs = malloc(n * sizeof *xs), *ys = malloc(n * sizeof *ys);
  char(*names)[2 * QS_NAME_MAX + 2] = calloc(n, sizeof *names);
  size_t ns = 0, used = 0;
  int rc = !s || !xs || !ys || !names ? QS_ENOMEM : QS_OK;
  for (size_t i = 0; !rc && i < r->n; i++) {
    char name[2 * QS_NAME_MAX + 2];
    snprintf(name, sizeof name, "%s/%s", r->rows[i].step.method->name,
             r->rows[i].entry.impl);
    size_t k = 0;
    while (k < ns && strcmp(names[k], name))
      k++;
    if (k < ns) continue;
    /* a new series: gather its points (rows are in step order, which is
     * work order) */
    memcpy(names[ns], name, sizeof name);
    s[ns] = (svg_series){names[ns], xs + used, ys + used, 0};
    for (size_t j = i; j < r->n; j++) {
      char other[2 * QS_NAME_MAX + 2];
      snprintf(other, sizeof other, "%s/%s", r->rows[j].step.method->name,
               r->rows[j].entry.impl);
      if (strcmp(other, name) || r->rows[j].entry.status) continue;
      xs[used] = r->rows[j].step.work;
      ys[used++] = r->rows[j].entry.min;
      s[ns].n++;
    }
    ns++;
  }
  if (!rc)
    rc = svg_loglog(path, "quicksilver bench: min time against work",
                    "work (method's measure: output pixels x cost)",
                    "seconds (min)", s, ns, err, err_len);
  else
    snprintf(err, err_len, "%s: out of memory", path);
  free(s), free(xs), free(ys), free(names);
  return rc;
}

int cmd_bench(cli *c, int argc, char **argv) {
  static const opt_def opts[] = {
      {"method", 0, "M,...",
       "methods to sweep (default: every one-input "
       "method)"},
      {"sizes", 0, "FxRxC,...", "input sizes (default: each method's grid)"},
      {"params", 0, "GRID",
       "parameter grid: a=1,2;b=3 is a product, "
       "'|' joins grids (default: each method's)"},
      {"impl", 0, "NAME|KIND,...", "implementations (default: all)"},
      {"repeats", 0, "N", "timed runs per implementation (default 5)"},
      {"warmup", 0, "N", "untimed runs first (default 1)"},
      {"budget", 0, "SECONDS",
       "skip each step predicted to pass this (said on stderr); end when "
       "it is spent"},
      {"csv", 0, "FILE", "every implementation's min and median as CSV"},
      {"json", 0, "FILE", "the same as JSON"},
      {"svg", 0, "FILE", "log-log plot of time against work"},
      {NULL, 0, NULL, NULL}};
  args a;
  CLI_ARGS_OR_RETURN(
      cli_args(c, argc, argv, "bench [options]", opts, NULL, 0, &a));
  if (a.n_pos) return cli_usage("bench: unexpected argument '%s'", a.pos[0]);
  bench_ui ui = {.c = c};
  sweep_options o = {.methods = args_value(&a, "method"),
                     .sizes = args_value(&a, "sizes"),
                     .params = args_value(&a, "params"),
                     .impls = args_value(&a, "impl"),
                     .warmup = 1,
                     .repeats = 5,
                     .progress = progress,
                     .skipped = skipped,
                     .ctx = &ui,
                     .run_progress = on_runs,
                     .run_ctx = &ui};
  size_t n;
  const char *t;
  if ((t = args_value(&a, "repeats"))) {
    if (args_size(t, 1, 100000, &n))
      return cli_usage("bench: --repeats: \"%s\" is not a count >= 1", t);
    o.repeats = (int)n;
  }
  if ((t = args_value(&a, "warmup"))) {
    if (args_size(t, 0, 100000, &n))
      return cli_usage("bench: --warmup: \"%s\" is not a count >= 0", t);
    o.warmup = (int)n;
  }
  if ((t = args_value(&a, "budget"))) {
    if (args_number(t, 0, HUGE_VAL, &o.budget) || !(o.budget > 0))
      return cli_usage("bench: --budget: \"%s\" is not seconds > 0", t);
  }
  /* The report files before the sweep: files, and three different ones. */
  const char *files[3];
  size_t n_files = 0;
  static const char *const kinds[] = {"csv", "json", "svg"};
  for (size_t k = 0; k < 3; k++)
    if ((t = args_value(&a, kinds[k]))) files[n_files++] = t;
  char bad[1024];
  int st0 = outfile_check(files, n_files, NULL, 0, bad, sizeof bad);
  if (st0) return st0 == QS_EINVAL ? cli_usage("bench: %s", bad)
                                   : cli_fail("bench: %s", bad);
  qs_engine *e;
  if (cli_engine(c, &e)) return CLI_FAIL;
  sweep_result r;
  char err[2048] = "";
  ui.start = 1e-9 * (double)qs_timer_ns();
  void (*previous)(int) = cli_interrupt_catch();
  int st = sweep_run(e, &o, &r, err, sizeof err);
  cli_interrupt_release(previous);
  cli_record_warn(c);
  if (st) {
    sweep_free(&r);
    return st == QS_ENOMEM || st == QS_EIO ? cli_fail("bench: %s", err)
                                           : cli_usage("bench: %s", err);
  }
  int rc = CLI_OK;
  const char *csv = args_value(&a, "csv"), *json = args_value(&a, "json"),
             *svg = args_value(&a, "svg");
  if (csv && sweep_csv(&r, csv, err, sizeof err)) rc = cli_fail("%s", err);
  if (json && sweep_json(&r, json, err, sizeof err)) rc = cli_fail("%s", err);
  if (svg && r.n && write_svg(&r, svg, err, sizeof err))
    rc = cli_fail("%s", err);
  printf("%-14s %-12s %-20s %-32s %4s %12s %12s %s\n", "method", "size",
         "params", "impl", "runs", "min s", "median s", "status");
  for (size_t i = 0; i < r.n; i++) {
    const sweep_row *w = &r.rows[i];
    char size[64];
    snprintf(size, sizeof size, "%zux%zux%zu", w->step.size.frames,
             w->step.size.rows, w->step.size.cols);
    printf("%-14s %-12s %-20s %-32s %4d %12.6f %12.6f %s\n",
           w->step.method->name, size,
           w->step.params[0] ? w->step.params : "-", w->entry.impl,
           w->entry.runs, w->entry.min, w->entry.median,
           qs_status_name(w->entry.status));
  }
  if (r.stopped && cli_interrupted())
    cli_note(c, "bench: interrupted after %zu of %zu step%s\n", r.steps_done,
             r.steps_total, r.steps_total == 1 ? "" : "s");
  else if (r.stopped)
    cli_note(c,
             "bench: %.1f s budget: %zu of %zu step%s run in %.1f s, %zu "
             "skipped as predicted past it\n",
             o.budget, r.steps_done, r.steps_total,
             r.steps_total == 1 ? "" : "s", r.seconds, r.steps_skipped);
  sweep_free(&r);
  return rc;
}
