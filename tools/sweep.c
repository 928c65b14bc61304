/* sweep.c — benchmark sweeps over methods, sizes and parameter variants
 * (see sweep.h). */
#include "sweep.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "outfile.h"
#include "simulate.h"

/* The grids of the methods issues; other methods get DEFAULT_SIZES and
 * their parameters' defaults. Data, not code: a method added here needs
 * no other change. */
#define DEFAULT_SIZES "1x64x64,10x256x256,100x256x256,10x1024x1024"
static const struct {
  const char *method, *sizes, *params;
} grids[] = {
    {"shift_magnify", DEFAULT_SIZES,
     "magnification_row=2;magnification_col=2|"
     "magnification_row=5;magnification_col=5"},
    {"roberts_cross", DEFAULT_SIZES, ""},
    {"esrrf", "100x64x64,500x64x64,10x256x256,2x1024x1024",
     "magnification=5;radius=1.5"},
};

int sweep_sizes(const char *text, sweep_size *out, size_t max, size_t *n,
                char *err, size_t err_len) {
  *n = 0;
  const char *s = text;
  while (*s) {
    size_t len = strcspn(s, ",");
    size_t d[3] = {0, 0, 0};
    char one[64];
    snprintf(one, sizeof one, "%.*s", (int)(len < 63 ? len : 63), s);
    size_t px;
    if (len > 63 || args_dims(one, 3, d) ||
        qs_image_pixels(d[0], d[1], d[2], &px)) {
      snprintf(err, err_len, "size \"%s\" is not FRAMESxROWSxCOLS", one);
      return QS_EINVAL;
    }
    if (*n == max) {
      snprintf(err, err_len, "more than %zu sizes", max);
      return QS_EINVAL;
    }
    out[(*n)++] = (sweep_size){d[0], d[1], d[2]};
    s += len + (s[len] == ',');
  }
  if (!*n) {
    snprintf(err, err_len, "no sizes given");
    return QS_EINVAL;
  }
  return QS_OK;
}

/* Variants of a "name=v1,v2;name2=v3" grid, as the cartesian product, for
 * the parameters the method declares (others are ignored: a grid may span
 * several methods). Each variant is "name=v;name2=v" text. */
static int product_of(const qs_method_desc *d, const char *grid,
                      char out[][128], size_t *n, char *err, size_t err_len) {
  *n = 1;
  out[0][0] = 0;
  const char *s = grid ? grid : "";
  while (*s) {
    size_t len = strcspn(s, ";");
    const char *eq = memchr(s, '=', len);
    if (!eq) {
      snprintf(err, err_len, "parameter grid \"%.*s\" is not NAME=V1,V2",
               (int)len, s);
      return QS_EINVAL;
    }
    size_t nlen = (size_t)(eq - s);
    int declared = 0;
    for (size_t i = 0; i < d->n_params; i++)
      declared |= strlen(d->params[i].name) == nlen &&
                  !strncmp(d->params[i].name, s, nlen);
    if (declared) {
      char prev[SWEEP_MAX_VARIANTS][128];
      size_t n_prev = *n;
      memcpy(prev, out, sizeof prev[0] * n_prev);
      *n = 0;
      const char *v = eq + 1, *end = s + len;
      while (v < end) {
        size_t vlen = strcspn(v, ",;");
        if ((size_t)(end - v) < vlen) vlen = (size_t)(end - v);
        for (size_t k = 0; k < n_prev; k++) {
          if (*n == SWEEP_MAX_VARIANTS) {
            snprintf(err, err_len, "more than %d parameter variants",
                     SWEEP_MAX_VARIANTS);
            return QS_EINVAL;
          }
          int w = snprintf(out[(*n)++], 128, "%s%s%.*s=%.*s", prev[k],
                           prev[k][0] ? ";" : "", (int)nlen, s, (int)vlen, v);
          if (w >= 128) {
            snprintf(err, err_len, "parameter variant too long");
            return QS_EINVAL;
          }
        }
        v += vlen + 1;
      }
      if (!*n) {
        snprintf(err, err_len, "parameter grid \"%.*s\" has no values",
                 (int)len, s);
        return QS_EINVAL;
      }
    }
    s += len + (s[len] == ';');
  }
  return QS_OK;
}

/* Grids separated by '|' give their variants one after the other
 * ("a=2;b=2|a=5;b=5" pairs values where a product would not). */
static int variants_of(const qs_method_desc *d, const char *grid,
                       char out[][128], size_t *n, char *err, size_t err_len) {
  *n = 0;
  const char *s = grid ? grid : "";
  do {
    size_t len = strcspn(s, "|"), k;
    char piece[512], part[SWEEP_MAX_VARIANTS][128];
    snprintf(piece, sizeof piece, "%.*s", (int)(len < 511 ? len : 511), s);
    int rc = product_of(d, piece, part, &k, err, err_len);
    if (rc) return rc;
    for (size_t i = 0; i < k; i++) {
      int dup = 0;
      for (size_t j = 0; j < *n; j++)
        dup |= !strcmp(out[j], part[i]);
      if (dup) continue;
      if (*n == SWEEP_MAX_VARIANTS) {
        snprintf(err, err_len, "more than %d parameter variants",
                 SWEEP_MAX_VARIANTS);
        return QS_EINVAL;
      }
      memcpy(out[(*n)++], part[i], 128);
    }
    s += len + (s[len] == '|');
  } while (*s);
  return QS_OK;
}

/* Splits a variant's text into params (pointing into buf, which it
 * modifies). */
static size_t variant_params(char *buf, qs_param *p, size_t max) {
  size_t n = 0;
  for (char *s = buf; *s && n < max;) {
    char *semi = strchr(s, ';'), *eq = strchr(s, '=');
    if (semi) *semi = 0;
    if (eq) {
      *eq = 0;
      p[n++] = (qs_param){s, 0, eq + 1};
    }
    if (!semi) break;
    s = semi + 1;
  }
  return n;
}

/* Work of a step from the method's own measure (or its output pixels). */
static int step_work(const qs_method_desc *d, sweep_step *st, char *err,
                     size_t err_len) {
  char buf[128];
  qs_param p[QS_MAX_PARAMS];
  double v[QS_MAX_PARAMS];
  snprintf(buf, sizeof buf, "%s", st->params);
  size_t np = variant_params(buf, p, QS_MAX_PARAMS);
  int rc = qs_params_resolve(d->params, d->n_params, p, np, v, err, err_len);
  if (rc) return rc;
  /* dimensions only: no pixels (a shape rule reads the pixels it is given,
   * eSRRF's NaN check, so none may be pretended) */
  qs_image in =
      qs_image_wrap(NULL, st->size.frames, st->size.rows, st->size.cols);
  qs_image out[16];
  if (d->n_outputs > 16) return QS_EINVAL;
  for (size_t k = 0; k < d->n_outputs; k++)
    out[k] = in;
  if (d->shape && (rc = d->shape(&in, v, out, err, err_len))) return rc;
  st->work = d->work ? d->work(&in, v)
                     : (double)out[0].frames * out[0].rows * out[0].cols;
  return QS_OK;
}

static int step_cmp(const void *a, const void *b) {
  double x = ((const sweep_step *)a)->work, y = ((const sweep_step *)b)->work;
  return (x > y) - (x < y);
}

/* The grid: steps of every method, size and variant, least work first. */
static int steps_build(qs_engine *e, const sweep_options *o, sweep_step **out,
                       size_t *n, char *err, size_t err_len) {
  const qs_method_desc *ms[SWEEP_MAX_METHODS];
  size_t nm = 0;
  if (o->methods) {
    for (const char *s = o->methods; *s;) {
      size_t len = strcspn(s, ",");
      char name[QS_NAME_MAX];
      snprintf(name, sizeof name, "%.*s", (int)(len < 63 ? len : 63), s);
      const qs_method_desc *d = qs_method_find(e, name);
      if (!d) {
        snprintf(err, err_len, "unknown method \"%s\"", name);
        return QS_ENOMETHOD;
      }
      if (d->n_inputs != 1) {
        snprintf(err, err_len,
                 "%s takes %zu inputs; the sweep simulates "
                 "one input stack per size",
                 name, d->n_inputs);
        return QS_EINVAL;
      }
      if (nm < SWEEP_MAX_METHODS) ms[nm++] = d;
      s += len + (s[len] == ',');
    }
  } else {
    for (size_t i = 0; i < qs_method_count(e) && nm < SWEEP_MAX_METHODS; i++)
      if (qs_method_at(e, i)->n_inputs == 1) ms[nm++] = qs_method_at(e, i);
  }
  size_t cap = nm * SWEEP_MAX_SIZES * SWEEP_MAX_VARIANTS;
  sweep_step *st = calloc(cap ? cap : 1, sizeof *st);
  if (!st) return QS_ENOMEM;
  *n = 0;
  for (size_t m = 0; m < nm; m++) {
    const char *sizes = o->sizes, *grid = o->params;
    for (size_t g = 0; g < sizeof grids / sizeof grids[0]; g++)
      if (!strcmp(grids[g].method, ms[m]->name)) {
        if (!sizes) sizes = grids[g].sizes;
        if (!grid) grid = grids[g].params;
      }
    sweep_size sz[SWEEP_MAX_SIZES];
    size_t ns, nv;
    char var[SWEEP_MAX_VARIANTS][128];
    int rc = sweep_sizes(sizes ? sizes : DEFAULT_SIZES, sz, SWEEP_MAX_SIZES,
                         &ns, err, err_len);
    if (!rc) rc = variants_of(ms[m], grid, var, &nv, err, err_len);
    for (size_t i = 0; !rc && i < ns; i++)
      for (size_t k = 0; !rc && k < nv; k++) {
        sweep_step *s = &st[(*n)++];
        s->method = ms[m];
        s->size = sz[i];
        memcpy(s->params, var[k], sizeof s->params);
        rc = step_work(ms[m], s, err, err_len);
      }
    if (rc) {
      free(st);
      return rc;
    }
  }
  qsort(st, *n, sizeof *st, step_cmp);
  *out = st;
  return QS_OK;
}

/* Simulated inputs, one per distinct size, kept for the whole sweep. */
typedef struct input_cache {
  sweep_size size[SWEEP_MAX_SIZES * SWEEP_MAX_METHODS];
  qs_image img[SWEEP_MAX_SIZES * SWEEP_MAX_METHODS];
  size_t n;
} input_cache;

static int input_for(input_cache *c, sweep_size s, const qs_image **out,
                     char *err, size_t err_len) {
  for (size_t i = 0; i < c->n; i++)
    if (!memcmp(&c->size[i], &s, sizeof s)) {
      *out = &c->img[i];
      return QS_OK;
    }
  if (c->n == sizeof c->img / sizeof c->img[0]) return QS_ENOMEM;
  double v[SIM_N];
  for (int i = 0; i < SIM_N; i++)
    v[i] = sim_params[i].def;
  v[SIM_FRAMES] = (double)s.frames;
  v[SIM_ROWS] = (double)s.rows;
  v[SIM_COLS] = (double)s.cols;
  /* the default density: 30 emitters per 64 x 64 pixels */
  v[SIM_EMITTERS] = ceil(30.0 * (double)(s.rows * s.cols) / 4096.0);
  int rc = simulate(v, &c->img[c->n], NULL, err, err_len);
  if (rc) return rc;
  c->size[c->n] = s;
  *out = &c->img[c->n++];
  return QS_OK;
}

static int rows_add(sweep_result *r, const sweep_step *st,
                    const qs_bench_entry *be) {
  if (r->n == r->cap) {
    size_t cap = r->cap ? 2 * r->cap : 64;
    sweep_row *p = realloc(r->rows, cap * sizeof *p);
    if (!p) return QS_ENOMEM;
    r->rows = p;
    r->cap = cap;
  }
  r->rows[r->n].step = *st;
  r->rows[r->n++].entry = *be;
  return QS_OK;
}

/* An estimate that counts: the implementation can run. */
static int est_usable(const qs_run_estimate *x) {
  return !strcmp(x->source, "history") || !strcmp(x->source, "model") ||
         !strcmp(x->source, "scaled") || !strcmp(x->source, "none");
}

/* Whether the benchmark runs implementation `name` of kind `kind`: every
 * one without a selection, else those named or of a kind named in the
 * comma-separated `impls` ("cpu": every kind but OpenCL). */
static int impl_selected(const char *impls, const char *name,
                         qs_impl_kind kind) {
  if (!impls) return 1;
  const char *k = qs_impl_kind_name(kind);
  for (const char *t = impls; *t;) {
    size_t n = strcspn(t, ",");
    if ((strlen(name) == n && !strncmp(t, name, n)) ||
        (strlen(k) == n && !strncmp(t, k, n)) ||
        (n == 3 && !strncmp(t, "cpu", 3) && strcmp(k, "opencl")))
      return 1;
    t += n + (t[n] == ',');
  }
  return 0;
}

/* Seconds the benchmark of step st on `in` is predicted to take, each
 * implementation it runs `runs` times: the engine's steady estimate where
 * it has one; for the others, one frame (two where one is refused) run
 * with that implementation, scaled to the step's frames. */
static double step_predict(qs_engine *e, const sweep_step *st,
                           const qs_image *in, qs_param *p, size_t np,
                           const char *impls, int runs) {
  qs_run_request rq = {
      .inputs = in, .n_inputs = 1, .params = p, .n_params = np};
  qs_run_report rep;
  qs_impl_info info[QS_MAX_ESTIMATES];
  size_t n_info = 0;
  memset(&rep, 0, sizeof rep);
  if (qs_method_estimate(e, st->method->name, &rq, &rep) ||
      qs_method_impls(e, st->method->name, info, QS_MAX_ESTIMATES, &n_info))
    return 0;
  double total = 0;
  for (size_t k = 0; k < rep.n_estimates && k < QS_MAX_ESTIMATES; k++) {
    const qs_run_estimate *x = &rep.estimates[k];
    qs_impl_kind kind = QS_IMPL_KIND_COUNT;
    for (size_t i = 0; i < n_info && i < QS_MAX_ESTIMATES; i++)
      if (!strcmp(info[i].name, x->impl)) kind = info[i].kind;
    if (!est_usable(x) || !impl_selected(impls, x->impl, kind)) continue;
    if (x->seconds >= 0) {
      total += x->seconds * runs;
      continue;
    }
    qs_image out[8] = {{0}};
    int rc = QS_EINVAL;
    size_t nf = 1;
    double t = 0;
    for (; rc && nf <= 2 && nf <= in->frames && st->method->n_outputs <= 8;
         nf++) {
      qs_image probe = qs_image_wrap(in->data, nf, in->rows, in->cols);
      qs_run_request one = rq;
      one.inputs = &probe;
      one.impl = x->impl;
      qs_run_report r1;
      memset(&r1, 0, sizeof r1);
      rc = qs_method_run(e, st->method->name, &one, out, st->method->n_outputs,
                         &r1);
      /* steady time: a build or a first launch is not paid per run */
      t = r1.seconds - r1.once_seconds > 0 ? r1.seconds - r1.once_seconds
                                           : r1.seconds;
      for (size_t j = 0; j < 8; j++)
        qs_image_free(&out[j]);
    }
    if (!rc) total += t / (double)(nf - 1) * (double)in->frames * runs;
  }
  return total;
}

int sweep_run(qs_engine *e, const sweep_options *o, sweep_result *r, char *err,
              size_t err_len) {
  memset(r, 0, sizeof *r);
  sweep_step *steps = NULL;
  size_t n = 0;
  int rc = steps_build(e, o, &steps, &n, err, err_len);
  if (rc) return rc;
  r->steps_total = n;
  r->threads = qs_engine_threads(e);
  input_cache *cache = calloc(1, sizeof *cache);
  if (!cache) {
    free(steps);
    return QS_ENOMEM;
  }
  int64_t t0 = qs_timer_ns();
  /* Steady seconds per unit of work of each method's latest step: a
   * step's cost is predicted from it (one-time costs such as OpenCL
   * builds left out, so they do not inflate the prediction). */
  const qs_method_desc *rated[SWEEP_MAX_METHODS];
  double rate[SWEEP_MAX_METHODS];
  /* per method, the least work of a step skipped for the budget: steps of
   * more work are skipped without another prediction */
  double over[SWEEP_MAX_METHODS];
  const qs_method_desc *over_m[SWEEP_MAX_METHODS];
  size_t n_rated = 0, n_over = 0;
  int runs = (o->warmup > 0 ? o->warmup : 0) + (o->repeats > 0 ? o->repeats : 1);
  for (size_t i = 0; i < n && !rc; i++) {
    double elapsed = (double)(qs_timer_ns() - t0) * 1e-9, predicted = -1;
    if ((o->budget > 0 && elapsed >= o->budget) ||
        (o->run_progress && o->run_progress(o->run_ctx, 0, 0))) {
      r->stopped = 1;
      break;
    }
    size_t m = 0, v = 0;
    while (m < n_rated && rated[m] != steps[i].method)
      m++;
    while (v < n_over && over_m[v] != steps[i].method)
      v++;
    if (m < n_rated) predicted = rate[m] * steps[i].work;
    if (o->budget > 0 && v < n_over && steps[i].work >= over[v]) {
      r->steps_skipped++;
      if (o->skipped) o->skipped(o->ctx, &steps[i], -1, o->budget - elapsed);
      continue;
    }
    const qs_image *in;
    int64_t s0 = qs_timer_ns(); /* input simulation included */
    rc = input_for(cache, steps[i].size, &in, err, err_len);
    if (rc) break;
    char buf[128];
    qs_param p[QS_MAX_PARAMS];
    snprintf(buf, sizeof buf, "%s", steps[i].params);
    size_t np = variant_params(buf, p, QS_MAX_PARAMS);
    /* a step that cannot finish within what is left of the budget is
     * skipped (and said), not begun: the budget stops no step halfway */
    if (o->budget > 0 && predicted < 0)
      predicted = step_predict(e, &steps[i], in, p, np, o->impls, runs);
    elapsed = (double)(qs_timer_ns() - t0) * 1e-9;
    if (o->budget > 0 && elapsed + predicted > o->budget) {
      r->steps_skipped++;
      if (v == n_over && n_over < SWEEP_MAX_METHODS) {
        over_m[n_over] = steps[i].method;
        over[n_over++] = steps[i].work;
      }
      if (o->skipped)
        o->skipped(o->ctx, &steps[i], predicted, o->budget - elapsed);
      continue;
    }
    if (o->progress) o->progress(o->ctx, &steps[i], i, n, elapsed);
    qs_run_request rq = {.inputs = in,
                         .n_inputs = 1,
                         .params = p,
                         .n_params = np,
                         .progress = o->run_progress,
                         .progress_ctx = o->run_ctx};
    qs_bench_result br;
    memset(&br, 0, sizeof br);
    int st = qs_method_benchmark(e, steps[i].method->name, &rq, o->impls,
                                 o->warmup, o->repeats, &br);
    if (st == QS_ECANCELLED) {
      r->stopped = 1;
      break;
    }
    if (st) {
      qs_bench_entry failed = {.status = st};
      snprintf(failed.impl, sizeof failed.impl, "%s",
               o->impls ? o->impls : "all");
      rc = rows_add(r, &steps[i], &failed);
    }
    for (size_t k = 0; !rc && k < br.n && k < QS_MAX_ESTIMATES; k++)
      rc = rows_add(r, &steps[i], &br.entries[k]);
    double steady = 0;
    for (size_t k = 0; k < br.n && k < QS_MAX_ESTIMATES; k++)
      if (br.entries[k].runs > 0)
        steady += (o->warmup + o->repeats) * br.entries[k].median;
    if (st || steady <= 0) steady = (double)(qs_timer_ns() - s0) * 1e-9;
    if (m == n_rated && n_rated < SWEEP_MAX_METHODS)
      rated[n_rated++] = steps[i].method;
    if (m < n_rated && steps[i].work > 0) rate[m] = steady / steps[i].work;
    r->steps_done++;
  }
  if (r->steps_skipped) r->stopped = 1;
  r->seconds = (double)(qs_timer_ns() - t0) * 1e-9;
  if (o->progress) o->progress(o->ctx, NULL, r->steps_done, n, r->seconds);
  for (size_t i = 0; i < cache->n; i++)
    qs_image_free(&cache->img[i]);
  free(cache);
  free(steps);
  if (rc == QS_ENOMEM && !err[0]) snprintf(err, err_len, "out of memory");
  return rc;
}

void sweep_free(sweep_result *r) {
  free(r->rows);
  memset(r, 0, sizeof *r);
}

int sweep_csv(const sweep_result *r, const char *path, char *err,
              size_t err_len) {
  outfile o;
  int rc = outfile_open(&o, path, err, err_len);
  if (rc) return rc;
  fprintf(o.f, "method,frames,rows,cols,params,work,impl,status,runs,"
               "min_s,median_s,fast_mean_s,once_s,max_rel_diff\n");
  for (size_t i = 0; i < r->n; i++) {
    const sweep_row *w = &r->rows[i];
    const qs_bench_entry *b = &w->entry;
    fprintf(o.f,
            "%s,%zu,%zu,%zu,\"%s\",%.17g,%s,%s,%d,%.9g,%.9g,%.9g,%.9g,"
            "%.3g\n",
            w->step.method->name, w->step.size.frames, w->step.size.rows,
            w->step.size.cols, w->step.params, w->step.work, b->impl,
            qs_status_name(b->status), b->runs, b->min, b->median,
            b->fast_mean, b->once_seconds, b->max_rel_diff);
  }
  return outfile_commit(&o, err, err_len);
}

static void add_num(cJSON *j, const char *k, double v) {
  if (isfinite(v))
    cJSON_AddNumberToObject(j, k, v);
  else
    cJSON_AddNullToObject(j, k);
}

int sweep_json(const sweep_result *r, const char *path, char *err,
               size_t err_len) {
  cJSON *doc = cJSON_CreateObject();
  cJSON_AddStringToObject(doc, "version", QS_VERSION);
  cJSON_AddNumberToObject(doc, "threads", r->threads);
  cJSON_AddNumberToObject(doc, "steps_done", (double)r->steps_done);
  cJSON_AddNumberToObject(doc, "steps_total", (double)r->steps_total);
  cJSON_AddBoolToObject(doc, "stopped_by_budget", r->stopped);
  cJSON_AddNumberToObject(doc, "steps_skipped", (double)r->steps_skipped);
  cJSON_AddNumberToObject(doc, "seconds", r->seconds);
  cJSON *rows = cJSON_AddArrayToObject(doc, "rows");
  for (size_t i = 0; i < r->n; i++) {
    const sweep_row *w = &r->rows[i];
    cJSON *o = cJSON_CreateObject(), *sz = cJSON_AddArrayToObject(o, "size");
    cJSON_AddStringToObject(o, "method", w->step.method->name);
    cJSON_AddItemToArray(sz, cJSON_CreateNumber((double)w->step.size.frames));
    cJSON_AddItemToArray(sz, cJSON_CreateNumber((double)w->step.size.rows));
    cJSON_AddItemToArray(sz, cJSON_CreateNumber((double)w->step.size.cols));
    cJSON_AddStringToObject(o, "params", w->step.params);
    add_num(o, "work", w->step.work);
    cJSON_AddStringToObject(o, "impl", w->entry.impl);
    cJSON_AddStringToObject(o, "status", qs_status_name(w->entry.status));
    cJSON_AddNumberToObject(o, "runs", w->entry.runs);
    add_num(o, "min", w->entry.min);
    add_num(o, "median", w->entry.median);
    add_num(o, "fast_mean", w->entry.fast_mean);
    add_num(o, "once_seconds", w->entry.once_seconds);
    add_num(o, "max_rel_diff", w->entry.max_rel_diff);
    cJSON_AddItemToArray(rows, o);
  }
  char *text = cJSON_Print(doc);
  cJSON_Delete(doc);
  if (!text) {
    snprintf(err, err_len, "%s: out of memory", path);
    return QS_ENOMEM;
  }
  outfile o;
  int rc = outfile_open(&o, path, err, err_len);
  if (!rc) {
    fputs(text, o.f);
    fputc('\n', o.f);
    rc = outfile_commit(&o, err, err_len);
  }
  cJSON_free(text);
  return rc;
}
