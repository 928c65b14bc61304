/* prep.c — validation of a call: the method, the inputs' shapes, the
 * parameters, the outputs' shapes, the key and the work; and the caller's
 * selection of implementations (names and kinds). */
#include <stdio.h>
#include <string.h>

#include <cJSON.h>

#include "internal.h"

static int shape_ok(qs_engine *e, const qs_method_desc *d, const char *what,
                    const char *slot, const qs_image *im) {
  size_t n;
  if (!im->frames || !im->rows || !im->cols)
    return engine_fail(e, QS_ESHAPE, "method %s: %s %s is empty (%zux%zux%zu)",
                       d->name, what, slot, im->frames, im->rows, im->cols);
  if (qs_image_pixels(im->frames, im->rows, im->cols, &n))
    return engine_fail(e, QS_EOVERFLOW, "method %s: %s %s is too large "
                       "(%zux%zux%zu)", d->name, what, slot, im->frames,
                       im->rows, im->cols);
  return QS_OK;
}

/* Output shapes of the method for these inputs and parameters. */
static int shapes_of(qs_engine *e, const qs_method_desc *d, const qs_image *in,
                     const double *p, qs_image *shape) {
  char msg[512] = "";
  memset(shape, 0, d->n_outputs * sizeof *shape);
  if (d->shape) {
    int rc = d->shape(in, p, shape, msg, sizeof msg);
    if (rc)
      return engine_fail(e, rc, "method %s: %s", d->name,
                         msg[0] ? msg : qs_status_message(rc));
  } else {
    for (size_t i = 0; i < d->n_outputs; i++)
      shape[i] = (qs_image){NULL, in[0].frames, in[0].rows, in[0].cols, NULL};
  }
  for (size_t i = 0; i < d->n_outputs; i++) {
    int rc = shape_ok(e, d, "output", d->outputs[i].name, &shape[i]);
    if (rc) return rc;
  }
  return QS_OK;
}

/* "method M: input I", for messages. */
static void input_what(const qs_method_desc *d, size_t i, char *buf,
                       size_t len) {
  snprintf(buf, len, "method %s: input %s", d->name, d->inputs[i].name);
}

int prep_call(qs_engine *e, const char *method, const qs_run_request *rq,
              size_t n_outputs, int shapes_only, prep *pr) {
  pr->m = NULL;
  pr->json = NULL;
  pr->key[0] = '\0';
  pr->dev = NULL;
  pr->pulled = 0;
  pr->bytes_pulled = pr->bytes_pushed = 0;
  mstate *m = registry_find(e, method);
  if (!m) return registry_unknown(e, method);
  const qs_method_desc *d = m->desc;
  if (!rq) return engine_fail(e, QS_EINVAL, "method %s: no request", d->name);
  if (rq->n_inputs != d->n_inputs || (rq->n_inputs && !rq->inputs))
    return engine_fail(e, QS_ESHAPE,
                       "method %s takes %zu input(s) (first: %s), %zu given",
                       d->name, d->n_inputs, d->inputs[0].name,
                       rq->inputs ? rq->n_inputs : 0);
  for (size_t i = 0; i < d->n_inputs; i++) {
    int rc = shape_ok(e, d, "input", d->inputs[i].name, &rq->inputs[i]);
    char what[160];
    input_what(d, i, what, sizeof what);
    void *dev = NULL;
    if (!rc) rc = devimg_check(e, &rq->inputs[i], what, &dev);
    if (!rc && dev && pr->dev && dev != pr->dev)
      rc = engine_fail(e, QS_EINVAL,
                       "%s is on another device than the "
                       "inputs before it (move it with qs_image_pull and "
                       "qs_image_push)",
                       what);
    if (dev) pr->dev = dev;
    if (!rc && !dev && !rq->inputs[i].data && !shapes_only)
      rc = engine_fail(e, QS_EINVAL, "%s has no data", what);
    if (rc) return rc;
  }
  if (n_outputs != d->n_outputs || d->n_outputs > QS_MAX_OUTPUTS)
    return engine_fail(e, QS_EINVAL,
                       "method %s gives %zu output(s), room for %zu given",
                       d->name, d->n_outputs, n_outputs);
  char msg[512] = "";
  /* params NULL with n_params > 0 is refused there, never read */
  int rc = qs_params_resolve(d->params, d->n_params, rq->params, rq->n_params,
                             pr->p, msg, sizeof msg);
  if (rc) return engine_fail(e, rc, "method %s: %s", d->name, msg);
  rc = shapes_of(e, d, rq->inputs, pr->p, pr->shape);
  if (rc) return rc;
  /* a device input's pixels, which the shape rule does not see */
  for (size_t i = 0; d->finite_inputs && pr->dev && !shapes_only &&
                     i < d->n_inputs;
       i++) {
    char what[160];
    input_what(d, i, what, sizeof what);
    if ((rc = devimg_finite(e, &rq->inputs[i], what))) return rc;
  }
  if (key_text(d, rq->inputs, pr->p, pr->key, sizeof pr->key))
    return engine_fail(e, QS_EOVERFLOW, "method %s: key longer than %d bytes",
                       d->name, QS_KEY_MAX);
  if (pr->dev &&
      snprintf(pr->key_dev, sizeof pr->key_dev, "%s" KEY_DEVICE_MARK,
               pr->key) >= (int)sizeof pr->key_dev)
    return engine_fail(e, QS_EOVERFLOW, "method %s: key longer than %d bytes",
                       d->name, QS_KEY_MAX);
  pr->m = m;
  pr->in = rq->inputs;
  pr->n_in = rq->n_inputs;
  pr->work = key_work(d, rq->inputs, pr->p, pr->shape);
  return QS_OK;
}

void prep_done(prep *pr) {
  devcall_done(pr);
  cJSON_free(pr->json);
  pr->json = NULL;
}

static const char *rimpl_name_at(const void *ctx, size_t i) {
  return ((const rimpl *)ctx)[i].name;
}

int impl_select(qs_engine *e, const mstate *m, const char *text,
                unsigned char *mask, int *exact) {
  memset(mask, 0, m->n_impls);
  *exact = 0;
  const char *s = text;
  size_t words = 0;
  while (*s) {
    size_t len = strcspn(s, ",");
    char w[QS_NAME_MAX];
    snprintf(w, sizeof w, "%.*s", (int)(len < sizeof w ? len : sizeof w - 1),
             s);
    int hit = 0;
    for (size_t i = 0; i < m->n_impls; i++) {
      qs_impl_kind k = m->impls[i].def->kind;
      if (!strcmp(w, m->impls[i].name) || !strcmp(w, qs_impl_kind_name(k)) ||
          (!strcmp(w, "cpu") && k != QS_IMPL_OPENCL)) {
        mask[i] = 1;
        hit = 1;
        if (!strcmp(w, m->impls[i].name)) *exact = 1;
      }
    }
    if (!hit) {
      const char *near =
          qs_name_nearest(w, rimpl_name_at, m->impls, m->n_impls);
      return engine_fail(e, QS_ENOIMPL,
                         "method %s has no implementation or kind \"%s\"%s%s%s",
                         m->desc->name, w, near ? " (did you mean " : "",
                         near ? near : "", near ? "?)" : "");
    }
    words++;
    s += len;
    if (*s == ',') s++;
  }
  if (words != 1) *exact = 0;
  return QS_OK;
}
