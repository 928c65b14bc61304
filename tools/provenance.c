/* provenance.c — the provenance line of an output (see provenance.h). */
#include "provenance.h"

#include <stdio.h>
#include <string.h>

/* The name of path without its directories. */
static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

cJSON *prov_new(const qs_method_desc *d, const double *values,
                const char *impl, const char *input) {
  cJSON *j = cJSON_CreateObject();
  if (!j) return NULL;
  cJSON_AddStringToObject(j, "tool", "quicksilver");
  cJSON_AddStringToObject(j, "version", QS_VERSION);
  cJSON_AddStringToObject(j, "method", d->name);
  if (impl && *impl) cJSON_AddStringToObject(j, "impl", impl);
  cJSON *p = cJSON_AddObjectToObject(j, "params");
  for (size_t i = 0; p && i < d->n_params; i++) {
    const qs_param_def *pd = &d->params[i];
    if (pd->type == QS_PARAM_BOOL) {
      cJSON_AddBoolToObject(p, pd->name, values[i] != 0);
    } else if (pd->type == QS_PARAM_ENUM) {
      char text[64];
      qs_params_format(pd, values[i], text, sizeof text);
      cJSON_AddStringToObject(p, pd->name, text);
    } else {
      cJSON_AddNumberToObject(p, pd->name, values[i]);
    }
  }
  if (input && *input) cJSON_AddStringToObject(j, "input", base_name(input));
  return j;
}

void prov_inputs(cJSON *j, const char *const *inputs, size_t n) {
  cJSON *arr = j && n > 1 ? cJSON_AddArrayToObject(j, "inputs") : NULL;
  for (size_t k = 0; arr && k < n; k++)
    cJSON_AddItemToArray(arr, cJSON_CreateString(base_name(inputs[k])));
}

void prov_impl_set(const char *const *impls, size_t n, char *out, size_t len) {
  if (!len) return;
  out[0] = 0;
  size_t used = 0;
  for (size_t i = 0; i < n; i++)
    for (const char *p = impls[i]; p && *p;) {
      size_t k = strcspn(p, ",");
      /* already listed: ",name," within ",out," */
      int seen = 0;
      for (const char *q = out; !seen && *q;) {
        size_t m = strcspn(q, ",");
        seen = m == k && !strncmp(q, p, k);
        q += m + (q[m] == ',');
      }
      if (!seen && k && used + k + 1 < len) {
        used += (size_t)snprintf(out + used, len - used, "%s%.*s",
                                 used ? "," : "", (int)k, p);
      }
      p += k + (p[k] == ',');
    }
}

void prov_impl_each(cJSON *j, const char *key, const char *const *impls,
                    size_t n) {
  int same = 1;
  for (size_t i = 1; i < n; i++)
    same &= !strcmp(impls[i], impls[0]);
  cJSON *arr = j && !same ? cJSON_AddArrayToObject(j, key) : NULL;
  for (size_t i = 0; arr && i < n; i++)
    cJSON_AddItemToArray(arr, cJSON_CreateString(impls[i]));
}

int prov_text(cJSON *j, char *out, size_t len) {
  if (len) out[0] = 0;
  if (!j) return QS_ENOMEM;
  char *text = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  if (!text) return QS_ENOMEM;
  int rc = strlen(text) < len ? QS_OK : QS_EINVAL;
  if (!rc) memcpy(out, text, strlen(text) + 1);
  cJSON_free(text);
  return rc;
}
