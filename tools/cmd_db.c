/* cmd_db.c — `quicksilver db`: inspect and maintain the timing store
 * through the engine's public store calls (engine_db_*). A damaged store
 * still opens an engine (which then records nothing), so it can be checked
 * and moved aside. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sys/stat.h>

#include "cli.h"
#include "outfile.h"

static void stamp_text(double stamp, char *buf, size_t len) {
  time_t t = (time_t)stamp;
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static cJSON *row_json(const qs_db_row *r) {
  cJSON *j = cJSON_CreateObject();
  char when[32];
  stamp_text(r->stamp, when, sizeof when);
  cJSON_AddNumberToObject(j, "id", (double)r->id);
  cJSON_AddStringToObject(j, "time", when);
  cJSON_AddStringToObject(j, "method", r->method);
  cJSON_AddStringToObject(j, "impl", r->impl);
  cJSON_AddNumberToObject(j, "impl_version", r->impl_version);
  cJSON_AddStringToObject(j, "device", r->device);
  cJSON_AddStringToObject(j, "key", r->key);
  cJSON_AddNumberToObject(j, "work", r->work);
  cJSON *p = cJSON_Parse(r->params);
  if (p)
    cJSON_AddItemToObject(j, "params", p);
  else
    cJSON_AddStringToObject(j, "params", r->params);
  cJSON_AddNumberToObject(j, "wall", r->wall);
  cJSON_AddNumberToObject(j, "device_seconds", r->device_seconds);
  cJSON_AddNumberToObject(j, "once_seconds", r->once_seconds);
  cJSON_AddStringToObject(j, "status", qs_status_name(r->status));
  cJSON_AddStringToObject(j, "error", r->error);
  return j;
}

/* ------------------------------------------------------------ commands */

typedef struct db_ctx {
  cli *c;
  args *a;
  const char *path;
  qs_engine *e;
  cJSON *arr;   /* --json: the array being filled */
  size_t count; /* entries printed */
  const char *last_method, *last_key;
  int slices;         /* best: list calibration-slice keys too (--all) */
  size_t hidden;      /* best: slice keys left out */
  char prev[2][4096]; /* method and key of the previous stats group */
} db_ctx;

static int db_filter_of(const args *a, qs_db_filter *f) {
  *f = (qs_db_filter){args_value(a, "method"), args_value(a, "impl"),
                      args_value(a, "device"), args_value(a, "key"), 0};
  const char *lim = args_value(a, "limit");
  if (lim && args_size(lim, 1, (size_t)1 << 40, &f->limit))
    return cli_usage("db: --limit: \"%s\" is not a positive count", lim);
  return CLI_OK;
}

static int list_row(void *ctx, const qs_db_row *r) {
  db_ctx *d = ctx;
  d->count++;
  if (d->arr) {
    cJSON_AddItemToArray(d->arr, row_json(r));
    return 0;
  }
  char when[32];
  stamp_text(r->stamp, when, sizeof when);
  printf("%-6lld %s  %-14s %-26s %12.6f s  %-8s %s\n", (long long)r->id, when,
         r->method, r->impl, r->wall, qs_status_name(r->status), r->key);
  if (d->c->verbose && r->error[0]) printf("       error: %s\n", r->error);
  return 0;
}

/* Runs one engine_db_* listing into stdout (text or the JSON array). */
static int db_listing(db_ctx *d, int rc) {
  if (rc) {
    cJSON_Delete(d->arr);
    return cli_fail("db: %s", qs_engine_error(d->e));
  }
  if (d->arr) return cli_json_out(d->arr);
  if (!d->count && !d->hidden)
    fprintf(stderr, "quicksilver: db: no runs recorded\n");
  return CLI_OK;
}

static int db_list(db_ctx *d) {
  qs_db_filter f;
  int rc = db_filter_of(d->a, &f);
  if (rc) return rc;
  d->arr = d->c->json ? cJSON_CreateArray() : NULL;
  return db_listing(d, qs_engine_db_query(d->e, &f, list_row, d));
}

static int stat_group(void *ctx, const qs_db_stat *g) {
  db_ctx *d = ctx;
  d->count++;
  if (d->arr) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "method", g->method);
    cJSON_AddStringToObject(o, "key", g->key);
    cJSON_AddStringToObject(o, "impl", g->impl);
    cJSON_AddStringToObject(o, "device", g->device);
    cJSON_AddNumberToObject(o, "count", (double)g->count);
    cJSON_AddNumberToObject(o, "failed", (double)g->failed);
    if (g->count) {
      cJSON_AddNumberToObject(o, "min", g->min);
      cJSON_AddNumberToObject(o, "median", g->median);
      cJSON_AddNumberToObject(o, "fast_mean", g->fast_mean);
    }
    cJSON_AddItemToArray(d->arr, o);
    return 0;
  }
  if (strcmp(d->prev[0], g->method) || strcmp(d->prev[1], g->key)) {
    printf("%s  %s\n", g->method, g->key);
    snprintf(d->prev[0], sizeof d->prev[0], "%s", g->method);
    snprintf(d->prev[1], sizeof d->prev[1], "%s", g->key);
  }
  if (g->count)
    printf("  %-28s n=%-4zu min %.6f  median %.6f  fast-half mean "
           "%.6f s%s\n",
           g->impl, g->count, g->min, g->median, g->fast_mean,
           g->failed ? "  (+failures)" : "");
  else
    printf("  %-28s n=0    %zu failed (%s)\n", g->impl, g->failed,
           qs_status_name(g->status));
  return 0;
}

static int db_stats(db_ctx *d) {
  qs_db_filter f;
  int rc = db_filter_of(d->a, &f);
  if (rc) return rc;
  d->arr = d->c->json ? cJSON_CreateArray() : NULL;
  return db_listing(d, qs_engine_db_stats(d->e, &f, stat_group, d));
}

/* The index of the estimate in state `state` (-1: none). */
static long estimate_in(const qs_run_report *r, const char *state) {
  for (size_t k = 0; k < r->n_estimates && k < QS_MAX_ESTIMATES; k++)
    if (!strcmp(r->estimates[k].state, state)) return (long)k;
  return -1;
}

/* A ratio of seconds `other / best` in words: "1.39x slower" when other
 * takes longer, "0.72x the time" when it is predicted faster (only a
 * candidate not yet timed on the key can be: a model's prediction). */
static void ratio_words(double ratio, char *buf, size_t len) {
  if (ratio >= 1)
    snprintf(buf, len, "%.2fx slower", ratio);
  else
    snprintf(buf, len, "%.2fx the time", ratio);
}

/* Per (method, key): the best known by the engine's own rule (the
 * estimate agent_choose's verdict calls "best": the best timed on the
 * key; with none timed there, its choice) and, when the next call would
 * try another one (exploration, verification: state "next"), which one
 * and why. Keys calibration recorded on slices of a call's input are not
 * keys the caller ran: they are counted and left out unless --all. */
static int best_key(void *ctx, const char *method, const char *key,
                    const qs_run_report *r) {
  db_ctx *d = ctx;
  if (!d->slices && qs_db_key_is_slice(key)) {
    d->hidden++;
    return 0;
  }
  d->count++;
  long pick = -1;
  for (size_t k = 0; k < r->n_estimates; k++)
    if (!strcmp(r->estimates[k].impl, r->impl)) pick = (long)k;
  long best = estimate_in(r, "best");
  long next = estimate_in(r, "next");
  if (best < 0) best = pick, next = -1; /* nothing timed on the key */
  if (d->arr) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "method", method);
    cJSON_AddStringToObject(o, "key", key);
    cJSON_AddBoolToObject(o, "slice", qs_db_key_is_slice(key));
    if (best >= 0) {
      cJSON_AddStringToObject(o, "impl", r->estimates[best].impl);
      cJSON_AddNumberToObject(o, "seconds", r->estimates[best].seconds);
    } else {
      cJSON_AddNullToObject(o, "impl");
    }
    cJSON_AddStringToObject(o, "reason", best == pick ? r->reason : "history");
    if (next >= 0) {
      cJSON_AddStringToObject(o, "next", r->estimates[next].impl);
      cJSON_AddStringToObject(o, "next_reason", r->reason);
    } else {
      cJSON_AddNullToObject(o, "next");
    }
    cJSON_AddItemToObject(o, "estimates", cli_estimates_json(r));
    cJSON_AddItemToArray(d->arr, o);
    return 0;
  }
  printf("%s  %s\n", method, key);
  if (best < 0) {
    printf("  no usable implementation recorded here\n");
    return 0;
  }
  const qs_run_estimate *b = &r->estimates[best];
  long runner = -1;
  for (size_t k = 0; k < r->n_estimates; k++)
    if ((long)k != best && r->estimates[k].seconds >= 0 &&
        (runner < 0 || r->estimates[k].seconds < r->estimates[runner].seconds))
      runner = (long)k;
  printf("  -> %s: %.4g s (%s, %d run%s)", b->impl, b->seconds,
         best == pick ? r->reason : "history", b->runs,
         b->runs == 1 ? "" : "s");
  if (runner >= 0 && b->seconds > 0) {
    char words[64];
    const qs_run_estimate *x = &r->estimates[runner];
    ratio_words(x->seconds / b->seconds, words, sizeof words);
    printf("; next best %s is %s (%s)", x->impl, words, x->source);
  }
  printf("\n");
  if (next >= 0 && r->estimates[next].optimistic >= 0)
    printf("     the next call tries %s (%s): it could take %.4g s at "
           "best\n",
           r->estimates[next].impl, r->reason, r->estimates[next].optimistic);
  if (d->c->verbose)
    for (size_t k = 0; k < r->n_estimates; k++)
      printf("     %-28s %-12s %d %s\n", r->estimates[k].impl,
             r->estimates[k].source, r->estimates[k].runs,
             r->estimates[k].state);
  return 0;
}

static int db_best(db_ctx *d) {
  qs_db_filter f;
  int rc = db_filter_of(d->a, &f);
  if (rc) return rc;
  d->arr = d->c->json ? cJSON_CreateArray() : NULL;
  d->slices = args_value(d->a, "all") != NULL;
  rc = db_listing(d, qs_engine_db_best(d->e, &f, best_key, d));
  if (d->hidden)
    fprintf(stderr,
            "quicksilver: db best: %zu calibration-slice key%s hidden "
            "(--all shows them)\n",
            d->hidden, d->hidden == 1 ? "" : "s");
  return rc;
}

static int db_file_op(db_ctx *d, const char *verb) {
  if (d->a->n_pos != 2)
    return cli_usage("db %s: needs one FILE argument", verb);
  const char *file = d->a->pos[1];
  if (!strcmp(verb, "export")) {
    /* the output guards of every command; the store is an input here
     * (":memory:" is no file) */
    struct stat st;
    const char *outs[1] = {file}, *ins[1] = {d->path};
    size_t n_in = d->path && stat(d->path, &st) == 0 ? 1 : 0;
    char err[1024];
    int rc = outfile_check(outs, 1, ins, n_in, err, sizeof err);
    if (rc == QS_EINVAL)
      return cli_usage("db export: %s%s", err,
                       n_in && strstr(err, "is the input")
                           ? " (the timing store)"
                           : "");
    if (rc) return cli_fail("db export: %s", err);
    if (qs_engine_db_export(d->e, file))
      return cli_fail("%s", qs_engine_error(d->e));
    cli_note(d->c, "db: exported %s to %s\n", d->path, file);
    return CLI_OK;
  }
  size_t added = 0, skipped = 0, rejected = 0;
  int rc = qs_engine_db_import(d->e, file, &added, &skipped, &rejected);
  const char *err = qs_engine_error(d->e);
  if (d->c->json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "added", (double)added);
    cJSON_AddNumberToObject(j, "skipped", (double)skipped);
    cJSON_AddNumberToObject(j, "rejected", (double)rejected);
    cJSON_AddStringToObject(j, "status", qs_status_name(rc));
    if (rc) cJSON_AddStringToObject(j, "error", err);
    cli_json_out(j);
  } else {
    printf("added %zu, skipped %zu, rejected %zu\n", added, skipped, rejected);
  }
  if (rc) return cli_fail("%s (nothing was imported)", err);
  return CLI_OK;
}

static int db_prune(db_ctx *d) {
  const char *keep_t = args_value(d->a, "keep"),
             *days_t = args_value(d->a, "older-than");
  size_t keep = 0;
  double days = 0;
  if (keep_t && args_size(keep_t, 1, (size_t)1 << 40, &keep))
    return cli_usage("db prune: --keep: \"%s\" is not a positive count",
                     keep_t);
  if (days_t) {
    if (args_number(days_t, 0, HUGE_VAL, &days) || !(days > 0))
      return cli_usage("db prune: --older-than: \"%s\" is not a number of "
                       "days > 0",
                       days_t);
  }
  if (!keep_t && !days_t)
    return cli_usage("db prune: give --keep N and/or --older-than DAYS");
  size_t removed = 0;
  if (qs_engine_db_prune(d->e, keep, days, &removed))
    return cli_fail("%s", qs_engine_error(d->e));
  printf("removed %zu run%s\n", removed, removed == 1 ? "" : "s");
  return CLI_OK;
}

static int db_forget(db_ctx *d) {
  qs_db_filter f;
  int rc = db_filter_of(d->a, &f);
  if (rc) return rc;
  int all = args_value(d->a, "all") != NULL;
  if (!f.method && !f.impl && !f.device && !f.key && !all)
    return cli_usage("db forget: give --method, --impl, --device or --key "
                     "(or --all to forget every run)");
  size_t removed = 0;
  if (qs_engine_db_forget(d->e, &f, &removed))
    return cli_fail("%s", qs_engine_error(d->e));
  printf("removed %zu run%s\n", removed, removed == 1 ? "" : "s");
  return CLI_OK;
}

static int db_check_moved(db_ctx *d, const char *why) {
  char moved[1200], err[1024];
  if (!args_value(d->a, "move-aside"))
    return cli_fail("%s\n  the store is damaged; move it aside (a new one "
                    "starts on the next run) with:\n    quicksilver --db "
                    "'%s' db check --move-aside",
                    why, d->path);
  if (qs_engine_db_move_aside(d->path, moved, sizeof moved, err, sizeof err))
    return cli_fail("%s", err);
  printf("moved the damaged store %s to %s\n", d->path, moved);
  return CLI_OK;
}

static const char *sub_at(const void *ctx, size_t i) {
  return ((const char *const *)ctx)[i];
}

int cmd_db(cli *c, int argc, char **argv) {
  static const opt_def opts[] = {
      {"method", 0, "M", "only runs of this method"},
      {"impl", 0, "I", "only runs of this implementation"},
      {"device", 0, "D", "only runs on this device fingerprint"},
      {"key", 0, "KEY", "only runs of this key"},
      {"limit", 0, "N", "at most N runs (list)"},
      {"keep", 0, "N", "prune: keep the newest N runs per key"},
      {"older-than", 0, "DAYS", "prune: drop runs older than DAYS"},
      {"all", 0, NULL, "forget: every run; best: calibration-slice keys too"},
      {"move-aside", 0, NULL, "check: move a damaged store aside"},
      {NULL, 0, NULL, NULL}};
  static const char *const subs[] = {"path",   "list",   "show",   "stats",
                                     "best",   "export", "import", "prune",
                                     "forget", "check"};
  const size_t n_subs = sizeof subs / sizeof subs[0];
  args a;
  CLI_ARGS_OR_RETURN(cli_args(
      c, argc, argv,
      "db path|list|show KEY|stats|best|export FILE|import FILE|prune "
      "[--keep N] [--older-than DAYS]|forget [--method M] [--impl I] "
      "[--device D]|check [--move-aside]",
      opts, NULL, 0, &a));
  if (!a.n_pos)
    return cli_usage("db: which subcommand? (path, list, show, "
                     "stats, best, export, import, prune, "
                     "forget, check)");
  const char *sub = a.pos[0];
  /* Python's Engine.db_rows: the same listing under its other name */
  if (!strcmp(sub, "rows")) sub = a.pos[0] = "list";
  size_t k = 0;
  while (k < n_subs && strcmp(subs[k], sub))
    k++;
  if (k == n_subs) {
    const char *near = qs_name_nearest(sub, sub_at, subs, n_subs);
    if (near)
      return cli_usage("db: unknown subcommand '%s' (did you mean '%s'?)", sub,
                       near);
    return cli_usage("db: unknown subcommand '%s'", sub);
  }
  /* The engine resolves the path (--db, $QUICKSILVER_DB, cache). `best`
   * needs the OpenCL devices and the pool's thread count: both are part of
   * the fingerprints its rows are matched against. */
  int best = !strcmp(sub, "best");
  qs_engine_options eo = {.db_path = c->db,
                          .no_opencl = !best || c->no_opencl,
                          .threads = best ? c->threads : 1};
  qs_engine *e = NULL;
  int open_rc = qs_engine_open(&e, &eo);
  if (!e) return cli_fail("out of memory");
  char path[4096];
  snprintf(path, sizeof path, "%s", qs_engine_db_path(e));
  db_ctx d = {.c = c, .a = &a, .path = path, .e = e};
  int rc = CLI_OK;
  size_t want_pos =
      !strcmp(sub, "show") || !strcmp(sub, "export") || !strcmp(sub, "import")
          ? 2
          : 1;
  if (!strcmp(sub, "path")) {
    printf("%s\n", path);
  } else if (a.n_pos != want_pos) {
    rc = cli_usage("db %s: %s", sub,
                   a.n_pos < want_pos ? "missing argument"
                                      : "unexpected argument");
  } else if (!strcmp(sub, "check") && open_rc && open_rc != QS_ECORRUPT) {
    rc = cli_fail("%s", qs_engine_error(e));
  } else if (!strcmp(sub, "check")) {
    if (qs_engine_db_check(e)) {
      char why[2048];
      snprintf(why, sizeof why, "%s", qs_engine_error(e));
      qs_engine_close(e); /* the store must be closed to be moved */
      return db_check_moved(&d, why);
    }
    printf("ok: %s passes SQLite's integrity check\n", path);
  } else if (open_rc == QS_ECORRUPT) {
    rc = cli_fail("%s\n  run 'quicksilver db check' for what to do",
                  qs_engine_error(e));
  } else if (open_rc) {
    rc = cli_fail("%s", qs_engine_error(e));
  } else if (!strcmp(sub, "list")) {
    rc = db_list(&d);
  } else if (!strcmp(sub, "show")) {
    a.opts[a.n_opts < ARGS_MAX ? a.n_opts : ARGS_MAX - 1] =
        (opt_hit){&opts[3], a.pos[1]};
    if (a.n_opts < ARGS_MAX) a.n_opts++;
    rc = db_list(&d);
  } else if (!strcmp(sub, "stats")) {
    rc = db_stats(&d);
  } else if (best) {
    rc = db_best(&d);
  } else if (!strcmp(sub, "export") || !strcmp(sub, "import")) {
    rc = db_file_op(&d, sub);
  } else if (!strcmp(sub, "prune")) {
    rc = db_prune(&d);
  } else {
    rc = db_forget(&d);
  }
  qs_engine_close(e);
  return rc;
}
