/* dbapi.c — the timing store through the public API (engine_db_*): what
 * `quicksilver db` and the bindings read and maintain, without reaching
 * into db/. `best` asks the dispatcher's own choice rule. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "db/store.h"
#include "internal.h"

/* The store, or the status qs_engine_open met opening it. */
static int need_store(qs_engine *e) {
  if (e->store) return engine_flush(e);
  if (e->store_status)
    return engine_fail(e, e->store_status, "%s", e->store_err);
  return engine_fail(e, QS_EDB, "no timing store is open");
}

/* Rows were removed or added behind the history cache: read it again on
 * the next run of each method. */
static void history_reset(qs_engine *e) {
  for (size_t i = 0; i < e->n_methods; i++) {
    mstate *m = &e->methods[i];
    hist_free(m);
    m->loaded = 0;
    for (size_t k = 0; k < m->n_impls; k++) m->impls[k].gen++;
  }
}

static store_filter filter_of(const qs_db_filter *f) {
  store_filter s = {0};
  if (f) s = (store_filter){f->method, f->impl, f->device, f->key, f->limit};
  return s;
}

/* ------------------------------------------------------------------ rows */

typedef struct row_ctx {
  qs_db_row_fn fn;
  void *ctx;
  int stop; /* the callback's nonzero return */
} row_ctx;

static int row_pass(void *ctx, const run_row *r) {
  row_ctx *c = ctx;
  qs_db_row d = {.id = r->id,
                 .stamp = r->stamp,
                 .method = r->method,
                 .impl = r->impl,
                 .impl_version = r->impl_version,
                 .device = r->device,
                 .key = r->key,
                 .work = r->work,
                 .params = r->params,
                 .wall = r->wall,
                 .device_seconds = r->device_s,
                 .once_seconds = r->once_s,
                 .status = r->status,
                 .error = r->error};
  return c->stop = c->fn(c->ctx, &d);
}

int qs_engine_db_query(qs_engine *e, const qs_db_filter *f, qs_db_row_fn fn,
                       void *ctx) {
  if (!e || !fn) return QS_EINVAL;
  int rc = need_store(e);
  if (rc) return rc;
  store_filter sf = filter_of(f);
  row_ctx c = {fn, ctx, 0};
  char msg[512] = "";
  rc = store_query(e->store, &sf, row_pass, &c, msg, sizeof msg);
  if (c.stop) return c.stop;
  return rc ? engine_fail(e, rc, "%s", msg) : QS_OK;
}

/* ----------------------------------------------------------------- stats */

/* A copy of the rows' grouping fields and walls. */
typedef struct srow {
  char *method, *key, *impl, *device;
  int64_t id;
  double wall;
  int status;
} srow;

typedef struct srows {
  srow *r;
  size_t n, cap;
  int oom;
} srows;

static char *dup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static int srow_add(void *ctx, const run_row *r) {
  srows *s = ctx;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 256;
    srow *p = realloc(s->r, cap * sizeof *p);
    if (!p) return s->oom = 1;
    s->r = p;
    s->cap = cap;
  }
  srow *d = &s->r[s->n++];
  *d = (srow){dup(r->method), dup(r->key), dup(r->impl), dup(r->device),
              r->id, r->wall, r->status};
  if (!d->method || !d->key || !d->impl || !d->device) s->oom = 1;
  return s->oom;
}

static void srows_free(srows *s) {
  for (size_t i = 0; i < s->n; i++)
    free(s->r[i].method), free(s->r[i].key), free(s->r[i].impl),
        free(s->r[i].device);
  free(s->r);
}

/* method, key, impl, device, then newest first */
static int srow_cmp(const void *pa, const void *pb) {
  const srow *a = pa, *b = pb;
  int c = strcmp(a->method, b->method);
  if (!c) c = strcmp(a->key, b->key);
  if (!c) c = strcmp(a->impl, b->impl);
  if (!c) c = strcmp(a->device, b->device);
  if (!c) c = (a->id < b->id) - (a->id > b->id);
  return c;
}

static int same_group(const srow *a, const srow *b) {
  return !strcmp(a->method, b->method) && !strcmp(a->key, b->key) &&
         !strcmp(a->impl, b->impl) && !strcmp(a->device, b->device);
}

int qs_engine_db_stats(qs_engine *e, const qs_db_filter *f, qs_db_stat_fn fn,
                       void *ctx) {
  if (!e || !fn) return QS_EINVAL;
  int rc = need_store(e);
  if (rc) return rc;
  store_filter sf = filter_of(f);
  sf.limit = 0;
  srows s = {0};
  char msg[512] = "";
  rc = store_query(e->store, &sf, srow_add, &s, msg, sizeof msg);
  double *walls = malloc((s.n ? s.n : 1) * sizeof *walls);
  if (s.oom || !walls) {
    rc = engine_fail(e, QS_ENOMEM, "out of memory reading the store");
  } else if (rc) {
    rc = engine_fail(e, rc, "%s", msg);
  } else {
    qsort(s.r, s.n, sizeof *s.r, srow_cmp);
    for (size_t i = 0, j; !rc && i < s.n; i = j) {
      qs_db_stat st = {
          s.r[i].method, s.r[i].key, s.r[i].impl, s.r[i].device, 0, 0, 0, 0, 0,
          QS_OK};
      for (j = i; j < s.n && same_group(&s.r[i], &s.r[j]); j++) {
        if (s.r[j].status == QS_OK) {
          walls[st.count++] = s.r[j].wall;
        } else {
          if (!st.failed) st.status = s.r[j].status; /* newest first */
          st.failed++;
        }
      }
      qs_stats x;
      if (st.count && !qs_stats_of(walls, st.count, &x))
        st.min = x.min, st.median = x.median, st.fast_mean = x.fast_mean;
      rc = fn(ctx, &st);
    }
  }
  free(walls);
  srows_free(&s);
  return rc;
}

/* ------------------------------------------------------------------ best */

/* Parameter values of a key from the row's JSON (names of the method's
 * table; numbers, booleans or enum names), defaults for the rest. */
static void params_of_json(const qs_method_desc *d, const char *json,
                           double *p) {
  for (size_t i = 0; i < d->n_params; i++) p[i] = d->params[i].def;
  cJSON *j = json ? cJSON_Parse(json) : NULL;
  for (size_t i = 0; j && i < d->n_params; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, d->params[i].name);
    double x;
    if (cJSON_IsNumber(v))
      x = v->valuedouble;
    else if (cJSON_IsBool(v))
      x = cJSON_IsTrue(v);
    else if (!cJSON_IsString(v) ||
             qs_params_parse(&d->params[i], v->valuestring, &x, NULL, 0))
      continue;
    if (!qs_params_check(&d->params[i], x, NULL, 0)) p[i] = x;
  }
  cJSON_Delete(j);
}

/* The newest params JSON of a key, for the probes. */
typedef struct json_ctx {
  char *json;
} json_ctx;

static int json_first(void *ctx, const run_row *r) {
  json_ctx *c = ctx;
  c->json = dup(r->params);
  return 1;
}

static int best_of_method(qs_engine *e, mstate *m, const char *key,
                          qs_db_best_fn fn, void *ctx) {
  int rc = hist_load(e, m);
  if (rc) return rc;
  /* distinct keys, oldest first (m->all is newest first) */
  size_t n = 0;
  for (hist *h = m->all; h; h = h->sibling) n++;
  const hist **keys = malloc((n ? n : 1) * sizeof *keys);
  if (!keys) return engine_fail(e, QS_ENOMEM, "out of memory");
  size_t k = 0;
  for (hist *h = m->all; h; h = h->sibling) {
    int seen = (key && strcmp(h->key, key)) != 0;
    for (size_t i = 0; !seen && i < k; i++) seen = !strcmp(keys[i]->key, h->key);
    if (!seen) keys[k++] = h;
  }
  qs_run_report *rep = malloc(sizeof *rep);
  if (!rep) {
    free(keys);
    return engine_fail(e, QS_ENOMEM, "out of memory");
  }
  for (size_t i = k; !rc && i-- > 0;) {
    json_ctx jc = {NULL};
    store_filter sf = {.method = m->desc->name, .key = keys[i]->key,
                       .limit = 1};
    store_query(e->store, &sf, json_first, &jc, NULL, 0);
    double p[QS_MAX_PARAMS];
    params_of_json(m->desc, jc.json, p);
    free(jc.json);
    rc = choose_for_key(e, m, keys[i]->key, keys[i]->work, p, rep);
    if (!rc) rc = fn(ctx, m->desc->name, keys[i]->key, rep);
  }
  free(rep);
  free(keys);
  return rc;
}

int qs_engine_db_best(qs_engine *e, const qs_db_filter *f, qs_db_best_fn fn,
                      void *ctx) {
  if (!e || !fn) return QS_EINVAL;
  int rc = need_store(e);
  if (rc) return rc;
  const char *method = f ? f->method : NULL, *key = f ? f->key : NULL;
  if (method && !registry_find(e, method)) return registry_unknown(e, method);
  for (size_t i = 0; !rc && i < e->n_methods; i++) {
    mstate *m = &e->methods[i];
    if (method && strcmp(method, m->desc->name)) continue;
    rc = best_of_method(e, m, key, fn, ctx);
  }
  return rc;
}

/* ----------------------------------------------------------- maintenance */

int qs_engine_db_export(qs_engine *e, const char *path) {
  if (!e || !path) return QS_EINVAL;
  int rc = need_store(e);
  char msg[1024] = "";
  if (!rc) rc = store_export(e->store, path, msg, sizeof msg);
  return rc ? engine_fail(e, rc, "%s", msg[0] ? msg : e->err) : QS_OK;
}

int qs_engine_db_import(qs_engine *e, const char *path, size_t *added,
                        size_t *skipped, size_t *rejected) {
  size_t a = 0, s = 0, r = 0;
  if (!e || !path) return QS_EINVAL;
  int rc = need_store(e);
  char msg[1024] = "";
  if (!rc) rc = store_import(e->store, path, &a, &s, &r, msg, sizeof msg);
  if (added) *added = a;
  if (skipped) *skipped = s;
  if (rejected) *rejected = r;
  if (a) history_reset(e);
  return rc ? engine_fail(e, rc, "%s", msg[0] ? msg : e->err) : QS_OK;
}

int qs_engine_db_prune(qs_engine *e, size_t keep, double older_than_days,
                       size_t *removed) {
  size_t n = 0;
  if (!e) return QS_EINVAL;
  int rc = need_store(e);
  char msg[1024] = "";
  if (!rc) rc = store_prune(e->store, keep, older_than_days, &n, msg,
                            sizeof msg);
  if (removed) *removed = n;
  if (n) history_reset(e);
  return rc ? engine_fail(e, rc, "%s", msg[0] ? msg : e->err) : QS_OK;
}

int qs_engine_db_forget(qs_engine *e, const qs_db_filter *f, size_t *removed) {
  size_t n = 0;
  if (!e) return QS_EINVAL;
  int rc = need_store(e);
  store_filter sf = filter_of(f);
  char msg[1024] = "";
  if (!rc) rc = store_forget(e->store, &sf, &n, msg, sizeof msg);
  if (removed) *removed = n;
  if (n) history_reset(e);
  return rc ? engine_fail(e, rc, "%s", msg[0] ? msg : e->err) : QS_OK;
}

int qs_engine_db_check(qs_engine *e) {
  if (!e) return QS_EINVAL;
  int rc = need_store(e);
  char msg[1024] = "";
  if (!rc) rc = store_check(e->store, msg, sizeof msg);
  return rc ? engine_fail(e, rc, "%s", msg[0] ? msg : e->err) : QS_OK;
}

int qs_engine_db_move_aside(const char *path, char *moved, size_t moved_len,
                            char *err, size_t err_len) {
  if (!path) return QS_EINVAL;
  return store_move_aside(path, moved, moved_len, err, err_len);
}

int qs_engine_db_remove(const char *path, char *err, size_t err_len) {
  if (!path) return QS_EINVAL;
  return store_unlink(path, err, err_len);
}
