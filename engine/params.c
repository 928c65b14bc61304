/* params.c — typed parameters: parsing text by declared type, range checks,
 * defaults and the caller's overrides, canonical formatting. The dispatcher,
 * the key, the JSON of the store and the CLI flags all go through here, so a
 * value means the same thing everywhere. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

/* The idx-th choice of "a|b|c" into buf; 0 when idx is past the end. */
static int choice_at(const char *choices, size_t idx, char *buf, size_t len) {
  const char *s = choices ? choices : "";
  for (size_t i = 0;; i++) {
    const char *bar = strchr(s, '|');
    size_t n = bar ? (size_t)(bar - s) : strlen(s);
    if (i == idx) {
      if (n >= len) n = len - 1;
      memcpy(buf, s, n);
      buf[n] = '\0';
      return 1;
    }
    if (!bar) return 0;
    s = bar + 1;
  }
}

static size_t choice_count(const char *choices) {
  if (!choices || !*choices) return 0;
  size_t n = 1;
  for (const char *s = choices; *s; s++) n += *s == '|';
  return n;
}

/* A number for people to read: integers (up to 2^53) as integers, other
 * values in the shortest form that reads back as the same double ("0.1",
 * not "0.10000000000000001"; "2147483647", not "2.14748e+09"). Canonical:
 * one text per double. */
static int num_format(char *buf, size_t len, double v) {
  if (isfinite(v) && v == floor(v) && fabs(v) <= 9007199254740992.0)
    return snprintf(buf, len, "%.0f", v);
  char t[40];
  for (int digits = 1; digits <= 17; digits++) {
    snprintf(t, sizeof t, "%.*g", digits, v);
    if (strtod(t, NULL) == v) break;
  }
  return snprintf(buf, len, "%s", t);
}

int qs_params_format(const qs_param_def *d, double v, char *buf, size_t len) {
  char name[QS_NAME_MAX];
  if (!buf || !len) return 0;
  if (!d) return snprintf(buf, len, "%s", "");
  switch (d->type) {
  case QS_PARAM_INT:
    return snprintf(buf, len, "%.0f", v);
  case QS_PARAM_BOOL:
    return snprintf(buf, len, "%s", v != 0 ? "true" : "false");
  case QS_PARAM_ENUM:
    if (v >= 0 && choice_at(d->choices, (size_t)v, name, sizeof name))
      return snprintf(buf, len, "%s", name);
    return snprintf(buf, len, "%.0f", v);
  case QS_PARAM_FLOAT:
  default:
    return num_format(buf, len, v);
  }
}

int qs_params_check(const qs_param_def *d, double v, char *err,
                    size_t err_len) {
  char a[40], lo[40], hi[40];
  if (!d) return snprintf(err, err_len, "no parameter definition"), QS_EINVAL;
  num_format(a, sizeof a, v);
  if (!isfinite(v)) {
    snprintf(err, err_len, "parameter %s: %s is not a finite number", d->name,
             a);
    return QS_EPARAM;
  }
  if (d->type != QS_PARAM_FLOAT && v != floor(v)) {
    snprintf(err, err_len, "parameter %s: %s is not an integer", d->name, a);
    return QS_EPARAM;
  }
  if (d->type == QS_PARAM_BOOL && v != 0 && v != 1) {
    snprintf(err, err_len, "parameter %s: %s is not a boolean (0 or 1)",
             d->name, a);
    return QS_EPARAM;
  }
  if (d->type == QS_PARAM_ENUM) {
    size_t n = choice_count(d->choices);
    if (v < 0 || v >= (double)n) {
      snprintf(err, err_len, "parameter %s: index %s is not one of %s",
               d->name, a, d->choices ? d->choices : "(no choices)");
      return QS_EPARAM;
    }
  }
  if ((d->type == QS_PARAM_INT || d->type == QS_PARAM_FLOAT) &&
      d->min < d->max) {
    int lo_bad = (d->flags & QS_PARAM_MIN_OPEN) ? v <= d->min : v < d->min;
    int hi_bad = (d->flags & QS_PARAM_MAX_OPEN) ? v >= d->max : v > d->max;
    if (lo_bad || hi_bad) {
      num_format(lo, sizeof lo, d->min);
      num_format(hi, sizeof hi, d->max);
      snprintf(err, err_len, "parameter %s: %s is outside %c%s, %s%c", d->name,
               a, (d->flags & QS_PARAM_MIN_OPEN) ? '(' : '[', lo, hi,
               (d->flags & QS_PARAM_MAX_OPEN) ? ')' : ']');
      return QS_EPARAM;
    }
  }
  return QS_OK;
}

int qs_params_parse(const qs_param_def *d, const char *text, double *value,
                    char *err, size_t err_len) {
  static const char *const yes[] = {"1", "true", "yes", "on"};
  static const char *const no[] = {"0", "false", "no", "off"};
  const char *t = text ? text : "";
  char *end = NULL;
  double v = NAN;
  if (!d || !value)
    return snprintf(err, err_len,
                    "qs_params_parse: no definition or no value"),
           QS_EINVAL;
  /* Numbers strictly as written: a sign, digits, a point and an exponent
   * (strtod alone also takes leading spaces and hex: " 5", "0x10"). */
  int plain = 1;
  for (const char *p = t; plain && *p; p++)
    plain = strchr("0123456789+-.eE", *p) != NULL;
  switch (d->type) {
  case QS_PARAM_INT: {
    errno = 0;
    long long i = strtoll(t, &end, 10);
    if (end == t || *end || errno == ERANGE) break;
    v = (double)i;
    break;
  }
  case QS_PARAM_FLOAT:
    errno = 0;
    v = strtod(t, &end);
    if (end == t || *end || errno == ERANGE) v = NAN;
    break;
  case QS_PARAM_BOOL:
    for (size_t i = 0; i < 4; i++) {
      if (!strcasecmp(t, yes[i])) v = 1;
      if (!strcasecmp(t, no[i])) v = 0;
    }
    break;
  case QS_PARAM_ENUM: {
    char name[QS_NAME_MAX];
    /* Any case: NanoPyx spells the temporal statistics AVG, VAR, TAC2. */
    for (size_t i = 0; choice_at(d->choices, i, name, sizeof name); i++)
      if (!strcasecmp(name, t)) v = (double)i;
    if (isnan(v)) {
      snprintf(err, err_len, "parameter %s: \"%s\" is not one of %s",
               d->name, t, d->choices ? d->choices : "(no choices)");
      return QS_EPARAM;
    }
    break;
  }
  }
  if (!plain && (d->type == QS_PARAM_INT || d->type == QS_PARAM_FLOAT))
    v = NAN;
  if (isnan(v)) {
    static const char *const what[] = {"an integer", "a number",
                                       "a boolean (true/false/1/0)", "?"};
    snprintf(err, err_len, "parameter %s: \"%s\" is not %s", d->name, t,
             what[d->type <= QS_PARAM_BOOL ? d->type : 3]);
    return QS_EPARAM;
  }
  int rc = qs_params_check(d, v, err, err_len);
  if (!rc) *value = v;
  return rc;
}

/* Levenshtein distance of two names (SIZE_MAX past 63 characters). */
static size_t name_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63) return (size_t)-1;
  size_t row[64];
  for (size_t j = 0; j <= lb; j++) row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      if (up + 1 < best) best = up + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

const char *qs_name_nearest(const char *name,
                            const char *(*at)(const void *, size_t),
                            const void *ctx, size_t n) {
  const char *best = NULL;
  size_t best_d = (size_t)-1;
  if (!name || !at) return NULL;
  for (size_t i = 0; i < n; i++) {
    const char *c = at(ctx, i);
    size_t dist = name_distance(name, c);
    if (dist < best_d) best_d = dist, best = c;
  }
  size_t limit = strlen(name) / 3 > 2 ? strlen(name) / 3 : 2;
  return best_d <= limit ? best : NULL;
}

static const char *def_name_at(const void *ctx, size_t i) {
  return ((const qs_param_def *)ctx)[i].name;
}

int qs_params_resolve(const qs_param_def *defs, size_t n,
                      const qs_param *given, size_t n_given, double *values,
                      char *err, size_t err_len) {
  if (n > QS_MAX_PARAMS) {
    snprintf(err, err_len, "%zu parameters declared (at most %d)", n,
             QS_MAX_PARAMS);
    return QS_EPARAM;
  }
  if ((n && (!defs || !values)) || (n_given && !given)) {
    snprintf(err, err_len, "%s", n_given && !given
                                     ? "parameters: a count with no array"
                                     : "parameters: no definitions or values");
    return QS_EINVAL;
  }
  unsigned char seen[QS_MAX_PARAMS] = {0};
  for (size_t i = 0; i < n; i++) values[i] = defs[i].def;
  for (size_t g = 0; g < n_given; g++) {
    const char *name = given[g].name ? given[g].name : "";
    size_t i = 0;
    while (i < n && strcmp(defs[i].name, name)) i++;
    if (i == n) {
      const char *near = qs_name_nearest(name, def_name_at, defs, n);
      snprintf(err, err_len, "unknown parameter \"%s\"%s%s%s", name,
               near ? " (did you mean " : "", near ? near : "",
               near ? "?)" : "");
      return QS_EPARAM;
    }
    if (seen[i]++) {
      snprintf(err, err_len, "parameter %s given twice", name);
      return QS_EPARAM;
    }
    int rc = given[g].text
                 ? qs_params_parse(&defs[i], given[g].text, &values[i], err,
                                   err_len)
                 : qs_params_check(&defs[i], given[g].value, err, err_len);
    if (rc) return rc;
    if (!given[g].text) values[i] = given[g].value;
  }
  return QS_OK;
}
