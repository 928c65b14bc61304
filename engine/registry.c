/* registry.c — the engine's methods: the built-in table plus the ones host
 * programs register, each with its implementations expanded as this engine
 * runs them (one OpenCL implementation per device) and their availability.
 * The method listing calls of the public API live here too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "builtin.h"
#include "codehash.h"
#include "cl/clrt.h"
#include "internal.h"

/* Checks what the dispatcher relies on, so a bad descriptor fails at
 * registration with a message instead of misbehaving in a run. */
static int desc_check(qs_engine *e, const qs_method_desc *d) {
  char msg[256];
  if (!d || !d->name || !*d->name || strlen(d->name) >= QS_NAME_MAX)
    return engine_fail(e, QS_EINVAL, "method descriptor: missing or too long "
                                     "name");
  if (d->n_params > QS_MAX_PARAMS || (d->n_params && !d->params))
    return engine_fail(e, QS_EINVAL,
                       "method %s: bad parameter table (%zu parameters, at "
                       "most %d)",
                       d->name, d->n_params, QS_MAX_PARAMS);
  if (d->n_impls == 0 || !d->impls)
    return engine_fail(e, QS_EINVAL, "method %s: no implementations",
                       d->name);
  if (d->n_inputs == 0 || !d->inputs || (d->n_outputs && !d->outputs))
    return engine_fail(e, QS_EINVAL, "method %s: bad input/output slots",
                       d->name);
  if (d->n_inputs > QS_MAX_INPUTS || d->n_outputs > QS_MAX_OUTPUTS)
    return engine_fail(e, QS_EINVAL,
                       "method %s: %zu inputs and %zu outputs (at most %d "
                       "and %d)",
                       d->name, d->n_inputs, d->n_outputs, QS_MAX_INPUTS,
                       QS_MAX_OUTPUTS);
  for (size_t i = 0; i < d->n_params; i++) {
    if (!d->params[i].name)
      return engine_fail(e, QS_EINVAL, "method %s: parameter %zu has no name",
                         d->name, i);
    if (qs_params_check(&d->params[i], d->params[i].def, msg, sizeof msg))
      return engine_fail(e, QS_EINVAL, "method %s: default of %s", d->name,
                         msg);
  }
  for (size_t i = 0; i < d->n_impls; i++) {
    const qs_impl_def *x = &d->impls[i];
    if (!x->name || !*x->name || !x->run || strlen(x->name) >= 32 ||
        (unsigned)x->kind > QS_IMPL_COMPOSITE)
      return engine_fail(e, QS_EINVAL,
                         "method %s: implementation %zu needs a short name, "
                         "a kind and a run function",
                         d->name, i);
    for (size_t j = 0; j < i; j++)
      if (!strcmp(x->name, d->impls[j].name))
        return engine_fail(e, QS_EINVAL,
                           "method %s: implementation %s declared twice",
                           d->name, x->name);
  }
  return QS_OK;
}

/* The version rows of an implementation are recorded and matched under:
 * for a built-in method, its declared version mixed with the build-time
 * hash of the method's code (codehash.py), so that changed code never
 * meets its old timings even when nobody bumps the number; for a host
 * program's method, the declared version. Always >= 0. */
static int version_of(const qs_impl_def *x, int builtin, const char *method) {
  if (!builtin) return x->version;
  uint32_t h = 0;
  for (size_t i = 0; code_hashes[i].method; i++)
    if (!strcmp(code_hashes[i].method, method)) h = code_hashes[i].hash;
  if (!h) return x->version;
  return (int)(((uint32_t)x->version * 2654435761u ^ h) & 0x7fffffffu);
}

int registry_add(qs_engine *e, const qs_method_desc *d, int builtin) {
  int rc = desc_check(e, d);
  if (rc) return rc;
  if (registry_find(e, d->name))
    return engine_fail(e, QS_EEXISTS, "method %s is already registered",
                       d->name);
  size_t devices = e->cl ? clrt_count(e->cl) : 0, n = 0;
  for (size_t i = 0; i < d->n_impls; i++)
    n += d->impls[i].kind == QS_IMPL_OPENCL && devices ? devices : 1;
  if (n > QS_MAX_IMPLS)
    return engine_fail(e, QS_EINVAL,
                       "method %s: %zu implementations here (at most %d)",
                       d->name, n, QS_MAX_IMPLS);
  if (e->n_methods == e->cap_methods) {
    size_t cap = e->cap_methods ? e->cap_methods * 2 : 16;
    mstate *p = realloc(e->methods, cap * sizeof *p);
    if (!p) return engine_fail(e, QS_ENOMEM, "out of memory");
    e->methods = p;
    e->cap_methods = cap;
  }
  rimpl *r = calloc(n, sizeof *r);
  if (!r) return engine_fail(e, QS_ENOMEM, "out of memory");
  size_t k = 0;
  for (size_t i = 0; i < d->n_impls; i++) {
    const qs_impl_def *x = &d->impls[i];
    if (x->kind != QS_IMPL_OPENCL) {
      r[k] = (rimpl){.def = x, .devfp = e->cpu_fp, .oom_work = INFINITY,
                     .gen = 1, .version = version_of(x, builtin, d->name)};
      snprintf(r[k].name, sizeof r[k].name, "%s", x->name);
      k++;
      continue;
    }
    if (!devices) {
      r[k] = (rimpl){.def = x, .devfp = "none", .oom_work = INFINITY,
                     .gen = 1, .version = version_of(x, builtin, d->name)};
      snprintf(r[k].name, sizeof r[k].name, "%s", x->name);
      snprintf(r[k].why, sizeof r[k].why, "no OpenCL device: %s",
               e->cl ? clrt_why(e->cl) : "OpenCL runtime not started");
      k++;
      continue;
    }
    for (size_t j = 0; j < devices; j++, k++) {
      cldev *dev = clrt_device(e->cl, j);
      const cldev_info *info = cldev_about(dev);
      r[k] = (rimpl){.def = x, .device = dev, .devfp = info->fingerprint,
                     .oom_work = INFINITY, .gen = 1,
                     .version = version_of(x, builtin, d->name)};
      snprintf(r[k].name, sizeof r[k].name, "%s:%s", x->name, info->slug);
    }
  }
  e->methods[e->n_methods++] = (mstate){.desc = d, .impls = r, .n_impls = n};
  return QS_OK;
}

void registry_free(qs_engine *e) {
  for (size_t i = 0; i < e->n_methods; i++) {
    hist_free(&e->methods[i]);
    free(e->methods[i].impls);
  }
  free(e->methods);
  e->methods = NULL;
  e->n_methods = e->cap_methods = 0;
}

mstate *registry_find(qs_engine *e, const char *name) {
  if (!e || !name) return NULL;
  for (size_t i = 0; i < e->n_methods; i++)
    if (!strcmp(e->methods[i].desc->name, name)) return &e->methods[i];
  return NULL;
}

int registry_usable(const rimpl *r, const qs_method_call *c, char *why,
                    size_t why_len) {
  if (r->why[0]) {
    snprintf(why, why_len, "%s", r->why);
    return 0;
  }
  why[0] = '\0';
  if (r->def->probe && r->def->probe(c, why, why_len)) {
    if (!why[0]) snprintf(why, why_len, "its probe refused this call");
    return 0;
  }
  return 1;
}

int qs_method_register(qs_engine *e, const qs_method_desc *desc) {
  if (!e) return QS_EINVAL;
  if (!e->pool) /* qs_engine_open failed before the engine could run */
    return engine_fail(e, QS_EINVAL, "qs_method_register: engine not open");
  return registry_add(e, desc, 0);
}

size_t qs_method_count(const qs_engine *e) { return e ? e->n_methods : 0; }

const qs_method_desc *qs_method_at(const qs_engine *e, size_t i) {
  return e && i < e->n_methods ? e->methods[i].desc : NULL;
}

const qs_method_desc *qs_method_find(const qs_engine *e, const char *name) {
  mstate *m = registry_find((qs_engine *)e, name);
  return m ? m->desc : NULL;
}

static const char *method_name_at(const void *ctx, size_t i) {
  return ((const mstate *)ctx)[i].desc->name;
}

const char *qs_method_nearest_name(const qs_engine *e, const char *name) {
  if (!e || !name) return NULL;
  return qs_name_nearest(name, method_name_at, e->methods, e->n_methods);
}

int registry_unknown(qs_engine *e, const char *name) {
  const char *near = qs_name_nearest(name ? name : "", method_name_at,
                                     e->methods, e->n_methods);
  return engine_fail(e, QS_ENOMETHOD, "unknown method \"%s\"%s%s%s",
                     name ? name : "(null)", near ? " (did you mean " : "",
                     near ? near : "", near ? "?)" : "");
}

int qs_method_impls(qs_engine *e, const char *method, qs_impl_info *out,
                    size_t max, size_t *n) {
  if (!e) return QS_EINVAL;
  if (n) *n = 0;
  if (max && !out)
    return engine_fail(e, QS_EINVAL,
                       "qs_method_impls: no array for %zu entries", max);
  mstate *m = registry_find(e, method);
  if (!m) return registry_unknown(e, method);
  double p[QS_MAX_PARAMS];
  for (size_t i = 0; i < m->desc->n_params; i++) p[i] = m->desc->params[i].def;
  for (size_t i = 0; i < m->n_impls && i < max; i++) {
    const rimpl *r = &m->impls[i];
    qs_method_call c;
    call_init(e, r, &c, NULL, 0, NULL, 0, p, NULL, 0);
    qs_impl_info *o = &out[i];
    memset(o, 0, sizeof *o);
    snprintf(o->name, sizeof o->name, "%s", r->name);
    o->kind = r->def->kind;
    o->version = r->version;
    o->available = registry_usable(r, &c, o->why, sizeof o->why);
    snprintf(o->device, sizeof o->device, "%s", r->devfp);
  }
  if (n) *n = m->n_impls;
  return QS_OK;
}

int registry_builtins(qs_engine *e) {
  for (size_t i = 0; builtin_methods[i]; i++) {
    int rc = registry_add(e, builtin_methods[i], 1);
    if (rc) return rc;
  }
  return QS_OK;
}
