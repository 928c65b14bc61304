/* fields.c — the one declaration of a run row and a device row as columns
 * and JSON members. Binding, reading, export and import all loop over these
 * tables, so a new column is one line here plus a migration. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store_int.h"

#define RUN_FIELD(name, type, req)                                            \
  { #name, type, offsetof(run_row, name), req }
/* Order = RUN_COLS = parameter order of ST_INSERT and ST_EXISTS. */
const field run_fields[] = {
    RUN_FIELD(stamp, FIELD_REAL, 0),  RUN_FIELD(method, FIELD_TEXT, 1),
    RUN_FIELD(impl, FIELD_TEXT, 1),   RUN_FIELD(impl_version, FIELD_INT, 0),
    RUN_FIELD(device, FIELD_TEXT, 1), RUN_FIELD(key, FIELD_TEXT, 1),
    RUN_FIELD(work, FIELD_REAL, 0),   RUN_FIELD(params, FIELD_TEXT, 0),
    RUN_FIELD(wall, FIELD_REAL, 0),   RUN_FIELD(device_s, FIELD_REAL, 0),
    RUN_FIELD(once_s, FIELD_REAL, 0), RUN_FIELD(status, FIELD_INT, 0),
    RUN_FIELD(error, FIELD_TEXT, 0),
};
const size_t n_run_fields = sizeof run_fields / sizeof run_fields[0];

#define DEVICE_FIELD(name, type, req)                                         \
  { #name, type, offsetof(device_row, name), req }
/* Order = DEVICE_COLS. */
const field device_fields[] = {
    DEVICE_FIELD(fingerprint, FIELD_TEXT, 1),
    DEVICE_FIELD(name, FIELD_TEXT, 0),
    DEVICE_FIELD(info, FIELD_TEXT, 0),
    DEVICE_FIELD(first_seen, FIELD_REAL, 0),
    DEVICE_FIELD(last_seen, FIELD_REAL, 0),
};
const size_t n_device_fields = sizeof device_fields / sizeof device_fields[0];

static const char **text_at(const void *obj, const field *f) {
  return (const char **)(void *)((char *)(uintptr_t)obj + f->off);
}
static double *real_at(const void *obj, const field *f) {
  return (double *)(void *)((char *)(uintptr_t)obj + f->off);
}
static int *int_at(const void *obj, const field *f) {
  return (int *)(void *)((char *)(uintptr_t)obj + f->off);
}

int fields_bind(sqlite3_stmt *st, const field *f, size_t n, const void *obj) {
  int top = sqlite3_bind_parameter_count(st);
  for (size_t i = 0; i < n && (int)i < top; i++) {
    int rc, at = (int)i + 1;
    switch (f[i].type) {
    case FIELD_REAL:
      rc = sqlite3_bind_double(st, at, *real_at(obj, f + i));
      break;
    case FIELD_INT:
      rc = sqlite3_bind_int(st, at, *int_at(obj, f + i));
      break;
    default: {
      /* Optional texts are stored as "" so that columns stay NOT NULL. */
      const char *t = *text_at(obj, f + i);
      rc = sqlite3_bind_text(st, at, t ? t : "", -1, SQLITE_STATIC);
    }
    }
    if (rc != SQLITE_OK) return rc;
  }
  return SQLITE_OK;
}

void fields_read(sqlite3_stmt *st, const field *f, size_t n, void *obj) {
  for (size_t i = 0; i < n; i++) {
    int col = (int)i;
    switch (f[i].type) {
    case FIELD_REAL:
      *real_at(obj, f + i) = sqlite3_column_double(st, col);
      break;
    case FIELD_INT:
      *int_at(obj, f + i) = sqlite3_column_int(st, col);
      break;
    default: {
      const unsigned char *t = sqlite3_column_text(st, col);
      *text_at(obj, f + i) = t ? (const char *)t : "";
    }
    }
  }
}

/* The shortest decimal text that reads back as exactly x (finite). cJSON's
 * own printer accepts a last-bit difference, which would make an exported
 * row differ from the stored one. */
static cJSON *real_json(double x) {
  char text[40];
  for (int digits = 15; digits <= 17; digits++) {
    snprintf(text, sizeof text, "%.*g", digits, x);
    if (strtod(text, NULL) == x) break;
  }
  return cJSON_CreateRaw(text);
}

cJSON *fields_json(const field *f, size_t n, const void *obj) {
  cJSON *o = cJSON_CreateObject();
  for (size_t i = 0; o && i < n; i++) {
    cJSON *v;
    switch (f[i].type) {
    case FIELD_REAL:
      v = real_json(*real_at(obj, f + i));
      break;
    case FIELD_INT:
      v = cJSON_CreateNumber(*int_at(obj, f + i));
      break;
    default: {
      const char *t = *text_at(obj, f + i);
      v = cJSON_CreateString(t ? t : "");
    }
    }
    if (!v || !cJSON_AddItemToObject(o, f[i].name, v)) {
      cJSON_Delete(v);
      cJSON_Delete(o);
      o = NULL;
    }
  }
  return o;
}

int fields_parse(const field *f, size_t n, const cJSON *o, void *obj,
                 char *why, size_t why_len) {
  if (!cJSON_IsObject(o)) {
    snprintf(why, why_len, "not a JSON object");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, f[i].name);
    const char *want = f[i].type == FIELD_TEXT ? "a string" : "a number";
    int ok = f[i].type == FIELD_TEXT ? cJSON_IsString(v) : cJSON_IsNumber(v);
    if (ok && f[i].type == FIELD_INT)
      ok = v->valuedouble == floor(v->valuedouble) &&
           fabs(v->valuedouble) <= 2147483647.0;
    if (!ok) {
      if (f[i].type == FIELD_INT) want = "an integer";
      snprintf(why, why_len, "\"%s\" %s (must be %s)", f[i].name,
               v ? "has the wrong type" : "is missing", want);
      return -1;
    }
    switch (f[i].type) {
    case FIELD_REAL:
      *real_at(obj, f + i) = v->valuedouble;
      break;
    case FIELD_INT:
      *int_at(obj, f + i) = (int)v->valuedouble;
      break;
    default:
      *text_at(obj, f + i) = v->valuestring;
    }
  }
  return fields_check(f, n, obj, why, why_len);
}

int fields_check(const field *f, size_t n, const void *obj, char *why,
                 size_t why_len) {
  for (size_t i = 0; i < n; i++) {
    const char *t;
    switch (f[i].type) {
    case FIELD_REAL:
      if (!isfinite(*real_at(obj, f + i))) {
        snprintf(why, why_len, "\"%s\" is not a finite number", f[i].name);
        return -1;
      }
      break;
    case FIELD_TEXT:
      t = *text_at(obj, f + i);
      if (f[i].required && (!t || !*t)) {
        snprintf(why, why_len, "\"%s\" is missing or empty", f[i].name);
        return -1;
      }
      break;
    default:
      break;
    }
  }
  return 0;
}
