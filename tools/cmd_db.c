/* cmd_db.c — `quicksilver db`: inspect and maintain the timing store. The
 * store is opened directly (not through an engine) so that a damaged file
 * can still be checked and moved aside. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent.h"
#include "cli.h"
#include "db/store.h"
#include "internal.h" /* name_nearest */
#include "timer.h"

/* --------------------------------------------------- rows held in memory */

typedef struct row {
  int64_t id;
  double stamp, work, wall, device_s, once_s;
  int status, impl_version;
  char *method, *impl, *device, *key, *params, *error;
} row;

typedef struct rows {
  row *r;
  size_t n, cap;
  int oom;
} rows;

static char *dup(const char *s) {
  size_t n = strlen(s ? s : "") + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s ? s : "", n);
  return d;
}

static int rows_add(void *ctx, const run_row *r) {
  rows *rs = ctx;
  if (rs->n == rs->cap) {
    size_t cap = rs->cap ? 2 * rs->cap : 256;
    row *p = realloc(rs->r, cap * sizeof *p);
    if (!p) return rs->oom = 1;
    rs->r = p;
    rs->cap = cap;
  }
  row *d = &rs->r[rs->n];
  *d = (row){r->id,          r->stamp,     r->work,        r->wall,
             r->device_s,    r->once_s,    r->status,      r->impl_version,
             dup(r->method), dup(r->impl), dup(r->device), dup(r->key),
             dup(r->params), dup(r->error)};
  rs->n++;
  if (!d->method || !d->impl || !d->device || !d->key || !d->params ||
      !d->error)
    return rs->oom = 1;
  return 0;
}

static void rows_free(rows *rs) {
  for (size_t i = 0; i < rs->n; i++) {
    row *r = &rs->r[i];
    free(r->method), free(r->impl), free(r->device), free(r->key);
    free(r->params), free(r->error);
  }
  free(rs->r);
}

/* Orders by method, key, impl, device, then newest first. */
static int row_cmp(const void *pa, const void *pb) {
  const row *a = pa, *b = pb;
  int c = strcmp(a->method, b->method);
  if (!c) c = strcmp(a->key, b->key);
  if (!c) c = strcmp(a->impl, b->impl);
  if (!c) c = strcmp(a->device, b->device);
  if (!c) c = (a->id < b->id) - (a->id > b->id);
  return c;
}

static int same_group(const row *a, const row *b, int with_impl) {
  return !strcmp(a->method, b->method) && !strcmp(a->key, b->key) &&
         (!with_impl ||
          (!strcmp(a->impl, b->impl) && !strcmp(a->device, b->device)));
}

static void stamp_text(double stamp, char *buf, size_t len) {
  time_t t = (time_t)stamp;
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static cJSON *row_json(const row *r) {
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
  cJSON_AddNumberToObject(j, "device_seconds", r->device_s);
  cJSON_AddNumberToObject(j, "once_seconds", r->once_s);
  cJSON_AddStringToObject(j, "status", status_name(r->status));
  cJSON_AddStringToObject(j, "error", r->error);
  return j;
}

/* ------------------------------------------------------------ commands */

typedef struct db_ctx {
  cli *c;
  args *a;
  const char *path;
  store *s;
} db_ctx;

static int db_filter(const args *a, store_filter *f) {
  *f = (store_filter){args_value(a, "method"), args_value(a, "impl"),
                      args_value(a, "device"), args_value(a, "key"), 0};
  const char *lim = args_value(a, "limit");
  if (lim && args_size(lim, 1, (size_t)1 << 40, &f->limit))
    return cli_usage("db: --limit: \"%s\" is not a positive count", lim);
  return CLI_OK;
}

/* The rows the command's filter options select, newest first, or (sorted)
 * grouped by method, key, impl and device. */
static int db_load(db_ctx *d, rows *rs, int sorted) {
  char err[1024];
  store_filter f;
  *rs = (rows){0};
  int rc = db_filter(d->a, &f);
  if (rc) return rc;
  rc = store_query(d->s, &f, rows_add, rs, err, sizeof err);
  if (rs->oom || rc) {
    rows_free(rs);
    return rc ? cli_fail("%s", err)
              : cli_fail("db: out of memory reading the store");
  }
  if (sorted) qsort(rs->r, rs->n, sizeof *rs->r, row_cmp);
  return CLI_OK;
}

static int db_list(db_ctx *d) {
  rows rs;
  int rc = db_load(d, &rs, 0);
  if (rc) return rc;
  if (d->c->json) {
    cJSON *arr = cJSON_CreateArray();
    for (size_t i = 0; i < rs.n; i++)
      cJSON_AddItemToArray(arr, row_json(&rs.r[i]));
    rows_free(&rs);
    return cli_json_out(arr);
  }
  for (size_t i = 0; i < rs.n; i++) {
    const row *r = &rs.r[i];
    char when[32];
    stamp_text(r->stamp, when, sizeof when);
    printf("%-6lld %s  %-14s %-26s %12.6f s  %-8s %s\n", (long long)r->id,
           when, r->method, r->impl, r->wall, status_name(r->status), r->key);
    if (d->c->verbose && r->error[0]) printf("       error: %s\n", r->error);
  }
  if (!rs.n) fprintf(stderr, "quicksilver: db: no runs recorded\n");
  rows_free(&rs);
  return CLI_OK;
}

/* Summary of one (method, key, impl, device) group: walls of successful
 * runs only. */
typedef struct group_stats {
  size_t ok, failed;
  stats st;
} group_stats;

static group_stats group_of(const row *r, size_t n, double *scratch) {
  group_stats g = {0};
  for (size_t i = 0; i < n; i++) {
    if (r[i].status == QS_OK)
      scratch[g.ok++] = r[i].wall;
    else
      g.failed++;
  }
  if (g.ok) stats_of(scratch, g.ok, &g.st);
  return g;
}

static int db_stats(db_ctx *d) {
  rows rs;
  int rc = db_load(d, &rs, 1);
  if (rc) return rc;
  double *scratch = malloc((rs.n ? rs.n : 1) * sizeof *scratch);
  cJSON *arr = d->c->json ? cJSON_CreateArray() : NULL;
  for (size_t i = 0, j; scratch && i < rs.n; i = j) {
    for (j = i + 1; j < rs.n && same_group(&rs.r[i], &rs.r[j], 1); j++) {
    }
    group_stats g = group_of(rs.r + i, j - i, scratch);
    const row *r = &rs.r[i];
    if (arr) {
      cJSON *o = cJSON_CreateObject();
      cJSON_AddStringToObject(o, "method", r->method);
      cJSON_AddStringToObject(o, "key", r->key);
      cJSON_AddStringToObject(o, "impl", r->impl);
      cJSON_AddStringToObject(o, "device", r->device);
      cJSON_AddNumberToObject(o, "count", (double)g.ok);
      cJSON_AddNumberToObject(o, "failed", (double)g.failed);
      if (g.ok) {
        cJSON_AddNumberToObject(o, "min", g.st.min);
        cJSON_AddNumberToObject(o, "median", g.st.median);
        cJSON_AddNumberToObject(o, "fast_mean", g.st.fast_mean);
      }
      cJSON_AddItemToArray(arr, o);
      continue;
    }
    if (i == 0 || !same_group(&rs.r[i - 1], r, 0))
      printf("%s  %s\n", r->method, r->key);
    if (g.ok)
      printf("  %-28s n=%-4zu min %.6f  median %.6f  fast-half mean "
             "%.6f s%s\n",
             r->impl, g.ok, g.st.min, g.st.median, g.st.fast_mean,
             g.failed ? "  (+failures)" : "");
    else
      printf("  %-28s n=0    %zu failed (%s)\n", r->impl, g.failed,
             status_name(r->status));
  }
  rows_free(&rs);
  if (!scratch) {
    cJSON_Delete(arr);
    return cli_fail("db: out of memory");
  }
  free(scratch);
  return arr ? cli_json_out(arr) : CLI_OK;
}

/* Per (method, key): the implementation the agent would choose from the
 * recorded history of that exact key, and its estimate for every one. */
static int db_best(db_ctx *d) {
  rows rs;
  int rc = db_load(d, &rs, 1);
  if (rc) return rc;
  size_t n = rs.n ? rs.n : 1;
  double *walls = malloc(n * sizeof *walls);
  agent_cand *cand = malloc(n * sizeof *cand);
  const row **first = malloc(n * sizeof *first);
  double *secs = malloc(n * sizeof *secs);
  int *src = malloc(n * sizeof *src);
  cJSON *arr = d->c->json ? cJSON_CreateArray() : NULL;
  for (size_t i = 0, j; walls && cand && first && secs && src && i < rs.n;
       i = j) {
    for (j = i + 1; j < rs.n && same_group(&rs.r[i], &rs.r[j], 0); j++) {
    }
    /* candidates: one per (impl, device), walls oldest first */
    size_t nc = 0, used = 0;
    for (size_t k = i, m; k < j; k = m) {
      for (m = k + 1; m < j && same_group(&rs.r[k], &rs.r[m], 1); m++) {
      }
      size_t start = used;
      int mismatch = 0;
      for (size_t q = m; q-- > k;) {
        if (rs.r[q].status == QS_EMISMATCH) mismatch = 1;
        if (rs.r[q].status == QS_OK) walls[used++] = rs.r[q].wall;
      }
      cand[nc] = (agent_cand){.kind = IMPL_SERIAL,
                              .excluded = mismatch        ? "mismatch"
                                          : used == start ? "failed"
                                                          : NULL,
                              .walls = walls + start,
                              .n_walls = used - start};
      first[nc++] = &rs.r[k];
    }
    uint64_t rng = 1;
    const char *reason = "none";
    long pick =
        agent_choose(cand, nc, rs.r[i].work, 0, &rng, &reason, secs, src);
    const row *r = &rs.r[i];
    if (arr) {
      cJSON *o = cJSON_CreateObject(), *est;
      cJSON_AddStringToObject(o, "method", r->method);
      cJSON_AddStringToObject(o, "key", r->key);
      if (pick >= 0) {
        cJSON_AddStringToObject(o, "impl", first[pick]->impl);
        cJSON_AddStringToObject(o, "device", first[pick]->device);
        cJSON_AddNumberToObject(o, "seconds", secs[pick]);
      } else {
        cJSON_AddNullToObject(o, "impl");
      }
      cJSON_AddStringToObject(o, "reason", reason);
      est = cJSON_AddArrayToObject(o, "estimates");
      for (size_t k = 0; k < nc; k++) {
        cJSON *e = cJSON_CreateObject();
        cJSON_AddStringToObject(e, "impl", first[k]->impl);
        if (secs[k] >= 0)
          cJSON_AddNumberToObject(e, "seconds", secs[k]);
        else
          cJSON_AddNullToObject(e, "seconds");
        cJSON_AddNumberToObject(e, "runs", (double)cand[k].n_walls);
        if (cand[k].excluded)
          cJSON_AddStringToObject(e, "excluded", cand[k].excluded);
        cJSON_AddItemToArray(est, e);
      }
      cJSON_AddItemToArray(arr, o);
      continue;
    }
    printf("%s  %s\n", r->method, r->key);
    if (pick < 0) {
      printf("  no usable implementation recorded\n");
      continue;
    }
    double runner = INFINITY;
    for (size_t k = 0; k < nc; k++)
      if ((long)k != pick && secs[k] >= 0 && secs[k] < runner)
        runner = secs[k];
    printf("  -> %s: %.4g s, fast-half mean of its newest %zu runs (%s)",
           first[pick]->impl, secs[pick],
           cand[pick].n_walls < AGENT_WINDOW ? cand[pick].n_walls
                                             : (size_t)AGENT_WINDOW,
           reason);
    if (isfinite(runner) && secs[pick] > 0)
      printf("; next best is %.2fx slower", runner / secs[pick]);
    printf("\n");
    if (d->c->verbose)
      for (size_t k = 0; k < nc; k++)
        printf("     %-28s %s\n", first[k]->impl,
               cand[k].excluded ? cand[k].excluded : "");
  }
  int oom = !walls || !cand || !first || !secs || !src;
  free(walls), free(cand), free(first), free(secs), free(src);
  rows_free(&rs);
  if (oom) {
    cJSON_Delete(arr);
    return cli_fail("db: out of memory");
  }
  return arr ? cli_json_out(arr) : CLI_OK;
}

static int db_file_op(db_ctx *d, const char *verb) {
  char err[1024];
  if (d->a->n_pos != 2)
    return cli_usage("db %s: needs one FILE argument", verb);
  const char *file = d->a->pos[1];
  if (!strcmp(verb, "export")) {
    if (store_export(d->s, file, err, sizeof err)) return cli_fail("%s", err);
    cli_note(d->c, "db: exported %s to %s\n", d->path, file);
    return CLI_OK;
  }
  size_t added = 0, skipped = 0, rejected = 0;
  int rc =
      store_import(d->s, file, &added, &skipped, &rejected, err, sizeof err);
  if (d->c->json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "added", (double)added);
    cJSON_AddNumberToObject(j, "skipped", (double)skipped);
    cJSON_AddNumberToObject(j, "rejected", (double)rejected);
    cJSON_AddStringToObject(j, "status", status_name(rc));
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
    char *end;
    days = strtod(days_t, &end);
    if (*end || !(days > 0))
      return cli_usage("db prune: --older-than: \"%s\" is not a number of "
                       "days > 0",
                       days_t);
  }
  if (!keep_t && !days_t)
    return cli_usage("db prune: give --keep N and/or --older-than DAYS");
  size_t removed = 0;
  char err[1024];
  if (store_prune(d->s, keep, days, &removed, err, sizeof err))
    return cli_fail("%s", err);
  printf("removed %zu runs\n", removed);
  return CLI_OK;
}

static int db_forget(db_ctx *d) {
  store_filter f;
  int rc = db_filter(d->a, &f);
  if (rc) return rc;
  int all = args_value(d->a, "all") != NULL;
  if (!f.method && !f.impl && !f.device && !f.key && !all)
    return cli_usage("db forget: give --method, --impl, --device or --key "
                     "(or --all to forget every run)");
  size_t removed = 0;
  char err[1024];
  if (store_forget(d->s, &f, &removed, err, sizeof err))
    return cli_fail("%s", err);
  printf("removed %zu runs\n", removed);
  return CLI_OK;
}

static int db_check_moved(db_ctx *d, const char *why) {
  char moved[1200], err[1024];
  if (!args_value(d->a, "move-aside"))
    return cli_fail("%s\n  the store is damaged; move it aside (a new one "
                    "starts on the next run) with:\n    quicksilver --db "
                    "'%s' db check --move-aside",
                    why, d->path);
  if (store_move_aside(d->path, moved, sizeof moved, err, sizeof err))
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
      {"all", 0, NULL, "forget: every run"},
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
  size_t k = 0;
  while (k < n_subs && strcmp(subs[k], sub))
    k++;
  if (k == n_subs) {
    const char *near = name_nearest(sub, sub_at, subs, n_subs);
    if (near)
      return cli_usage("db: unknown subcommand '%s' (did you mean '%s'?)", sub,
                       near);
    return cli_usage("db: unknown subcommand '%s'", sub);
  }
  /* The path as the engine resolves it (--db, $QUICKSILVER_DB, cache). */
  engine_options eo = {.db_path = c->db, .no_opencl = 1, .threads = 1};
  engine *e = NULL;
  engine_open(&e, &eo);
  if (!e) return cli_fail("out of memory");
  char path[4096];
  snprintf(path, sizeof path, "%s", engine_db_path(e));
  engine_close(e);
  db_ctx d = {c, &a, path, NULL};
  if (!strcmp(sub, "path")) {
    printf("%s\n", path);
    return CLI_OK;
  }
  size_t want_pos =
      !strcmp(sub, "show") || !strcmp(sub, "export") || !strcmp(sub, "import")
          ? 2
          : 1;
  if (a.n_pos != want_pos)
    return cli_usage("db %s: %s", sub,
                     a.n_pos < want_pos ? "missing argument"
                                        : "unexpected argument");
  char err[1024];
  int rc = store_open(&d.s, path, err, sizeof err);
  if (rc == QS_ECORRUPT && !strcmp(sub, "check"))
    return db_check_moved(&d, err);
  if (rc) {
    if (rc == QS_ECORRUPT)
      return cli_fail("%s\n  run 'quicksilver db check' for what to do", err);
    return cli_fail("%s", err);
  }
  if (!strcmp(sub, "list"))
    rc = db_list(&d);
  else if (!strcmp(sub, "show")) {
    a.opts[a.n_opts < ARGS_MAX ? a.n_opts : ARGS_MAX - 1] =
        (opt_hit){&opts[3], a.pos[1]};
    if (a.n_opts < ARGS_MAX) a.n_opts++;
    rc = db_list(&d);
  } else if (!strcmp(sub, "stats"))
    rc = db_stats(&d);
  else if (!strcmp(sub, "best"))
    rc = db_best(&d);
  else if (!strcmp(sub, "export") || !strcmp(sub, "import"))
    rc = db_file_op(&d, sub);
  else if (!strcmp(sub, "prune"))
    rc = db_prune(&d);
  else if (!strcmp(sub, "forget"))
    rc = db_forget(&d);
  else if (store_check(d.s, err, sizeof err)) {
    store_close(d.s);
    d.s = NULL;
    return db_check_moved(&d, err);
  } else {
    printf("ok: %s passes SQLite's integrity check\n", path);
  }
  store_close(d.s);
  return rc;
}
