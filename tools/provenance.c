/* provenance.c — the provenance line of an output (see provenance.h). */
#include "provenance.h"

#include <stdio.h>
#include <string.h>

cJSON *prov_new(const method_desc *d, const double *values, const char *impl,
                const char *input) {
  cJSON *j = cJSON_CreateObject();
  if (!j) return NULL;
  cJSON_AddStringToObject(j, "tool", "quicksilver");
  cJSON_AddStringToObject(j, "version", QS_VERSION);
  cJSON_AddStringToObject(j, "method", d->name);
  if (impl && *impl) cJSON_AddStringToObject(j, "impl", impl);
  cJSON *p = cJSON_AddObjectToObject(j, "params");
  for (size_t i = 0; p && i < d->n_params; i++) {
    const param_def *pd = &d->params[i];
    if (pd->type == PARAM_BOOL) {
      cJSON_AddBoolToObject(p, pd->name, values[i] != 0);
    } else if (pd->type == PARAM_ENUM) {
      char text[64];
      params_format(pd, values[i], text, sizeof text);
      cJSON_AddStringToObject(p, pd->name, text);
    } else {
      cJSON_AddNumberToObject(p, pd->name, values[i]);
    }
  }
  if (input && *input) {
    const char *slash = strrchr(input, '/');
    cJSON_AddStringToObject(j, "input", slash ? slash + 1 : input);
  }
  return j;
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
