/* key.c — the identity of a call for the timing store: the canonical key
 * text (method, input shapes, every parameter value in table order), the
 * same marked as a calibration slice's, the scalar work used to compare
 * keys, and the parameters as JSON. */
#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int key_text(const qs_method_desc *d, const qs_image *in, const double *p,
             char *buf, size_t len) {
  size_t at = 0;
  int n = snprintf(buf, len, "%s(", d->name);
  for (size_t i = 0; n >= 0 && i < d->n_inputs; i++) {
    at += (size_t)n;
    n = snprintf(buf + (at < len ? at : len), at < len ? len - at : 0,
                 "%s%zux%zux%zu", i ? "," : "", in[i].frames, in[i].rows,
                 in[i].cols);
  }
  for (size_t i = 0; n >= 0 && i < d->n_params; i++) {
    char v[64];
    qs_params_format(&d->params[i], p[i], v, sizeof v);
    at += (size_t)n;
    n = snprintf(buf + (at < len ? at : len), at < len ? len - at : 0,
                 "%s%s=%s", i || d->n_inputs ? ";" : "", d->params[i].name,
                 v);
  }
  if (n < 0) return QS_EINVAL;
  at += (size_t)n;
  n = snprintf(buf + (at < len ? at : len), at < len ? len - at : 0, ")");
  at += (size_t)n;
  return at < len ? QS_OK : QS_EOVERFLOW;
}

int key_slice_text(const qs_method_desc *d, const qs_image *in,
                   const double *p, char *buf, size_t len) {
  int rc = key_text(d, in, p, buf, len);
  size_t at = rc ? 0 : strlen(buf);
  if (!rc && len - at <= strlen(KEY_SLICE_MARK)) rc = QS_EOVERFLOW;
  if (!rc) memcpy(buf + at, KEY_SLICE_MARK, sizeof KEY_SLICE_MARK);
  return rc;
}

/* A caller's key always ends in ')': only a slice's ends in the mark. */
int qs_db_key_is_slice(const char *key) {
  size_t n = key ? strlen(key) : 0, m = strlen(")" KEY_SLICE_MARK);
  return n > m && !strcmp(key + n - m, ")" KEY_SLICE_MARK);
}

double key_work(const qs_method_desc *d, const qs_image *in, const double *p,
                const qs_image *out) {
  if (d->work) return d->work(in, p);
  double w = 0;
  for (size_t i = 0; i < d->n_outputs; i++)
    w += (double)out[i].frames * (double)out[i].rows * (double)out[i].cols;
  return w;
}

char *key_json(const qs_method_desc *d, const double *p) {
  cJSON *o = cJSON_CreateObject();
  for (size_t i = 0; o && i < d->n_params; i++) {
    const qs_param_def *pd = &d->params[i];
    cJSON *v;
    if (pd->type == QS_PARAM_BOOL) {
      v = cJSON_CreateBool(p[i] != 0);
    } else if (pd->type == QS_PARAM_ENUM) {
      char s[QS_NAME_MAX];
      qs_params_format(pd, p[i], s, sizeof s);
      v = cJSON_CreateString(s);
    } else {
      v = cJSON_CreateNumber(p[i]);
    }
    if (!v || !cJSON_AddItemToObject(o, pd->name, v)) {
      cJSON_Delete(v);
      cJSON_Delete(o);
      return NULL;
    }
  }
  char *s = o ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  return s;
}
