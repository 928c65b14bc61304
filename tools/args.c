/* args.c — option and parameter-flag parsing (see args.h). Suggestions use
 * the engine's nearest-name rule, so a misspelt flag and a misspelt
 * parameter in the library are answered alike. */
#include "args.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


void args_flag_of(const char *param_name, char *buf, size_t len) {
  size_t i = 0;
  for (; param_name[i] && i + 1 < len; i++)
    buf[i] = param_name[i] == '_' ? '-' : param_name[i];
  if (len) buf[i] = 0;
}

/* Every valid flag name, for suggestions: options then parameters. */
typedef struct flag_set {
  const opt_def *const *tables;
  size_t n_tables;
  const qs_param_def *defs;
  size_t n_defs;
  char flags[QS_MAX_PARAMS][QS_NAME_MAX]; /* parameter flag spellings */
} flag_set;

static size_t table_len(const opt_def *t) {
  size_t n = 0;
  while (t[n].name)
    n++;
  return n;
}

static const char *flag_at(const void *ctx, size_t i) {
  flag_set *f = (flag_set *)ctx;
  for (size_t t = 0; t < f->n_tables; t++) {
    size_t n = table_len(f->tables[t]);
    if (i < n) return f->tables[t][i].name;
    i -= n;
  }
  return f->flags[i];
}

static size_t flag_count(const flag_set *f) {
  size_t n = f->n_defs;
  for (size_t t = 0; t < f->n_tables; t++)
    n += table_len(f->tables[t]);
  return n;
}

/* Names `what` as unknown, with the nearest valid flag when close. */
static int unknown(const flag_set *f, const char *dashes, const char *what,
                   size_t len, char *err, size_t err_len) {
  char word[QS_NAME_MAX];
  snprintf(word, sizeof word, "%.*s", (int)(len < 63 ? len : 63), what);
  const char *near = qs_name_nearest(word, flag_at, f, flag_count(f));
  if (near)
    snprintf(err, err_len, "unknown option %s%s (did you mean --%s?)", dashes,
             word, near);
  else
    snprintf(err, err_len, "unknown option %s%s", dashes, word);
  return QS_EINVAL;
}

static const opt_def *find_long(const flag_set *f, const char *name,
                                size_t len) {
  for (size_t t = 0; t < f->n_tables; t++)
    for (const opt_def *o = f->tables[t]; o->name; o++)
      if (strlen(o->name) == len && !strncmp(o->name, name, len)) return o;
  return NULL;
}

static const opt_def *find_short(const flag_set *f, char c) {
  for (size_t t = 0; t < f->n_tables; t++)
    for (const opt_def *o = f->tables[t]; o->name; o++)
      if (o->short_name && o->short_name == c) return o;
  return NULL;
}

/* The parameter whose flag spelling is name[0..len), or -1. */
static long find_param(const flag_set *f, const char *name, size_t len) {
  for (size_t i = 0; i < f->n_defs; i++)
    if (strlen(f->flags[i]) == len && !strncmp(f->flags[i], name, len))
      return (long)i;
  return -1;
}

int args_parse(int argc, char **argv, const opt_def *const *tables,
               size_t n_tables, const qs_param_def *defs, size_t n_defs,
               args *a, char *err, size_t err_len) {
  flag_set f = {tables, n_tables, defs, defs ? n_defs : 0, {{0}}};
  if (f.n_defs > QS_MAX_PARAMS) f.n_defs = QS_MAX_PARAMS;
  for (size_t i = 0; i < f.n_defs; i++)
    args_flag_of(defs[i].name, f.flags[i], sizeof f.flags[i]);
  a->n_pos = a->n_opts = a->n_params = 0;
  int options_done = 0;
  for (int i = 0; i < argc; i++) {
    const char *s = argv[i] ? argv[i] : "";
    if (options_done || s[0] != '-' || !s[1]) {
      if (a->n_pos == ARGS_MAX) {
        snprintf(err, err_len, "too many arguments (at most %d)", ARGS_MAX);
        return QS_EINVAL;
      }
      a->pos[a->n_pos++] = s;
      continue;
    }
    if (!strcmp(s, "--")) {
      options_done = 1;
      continue;
    }
    const char *name, *value = NULL, *dashes;
    size_t len;
    const opt_def *o;
    long p = -1;
    if (s[1] == '-') {
      dashes = "--";
      name = s + 2;
      const char *eq = strchr(name, '=');
      len = eq ? (size_t)(eq - name) : strlen(name);
      if (eq) value = eq + 1;
      o = find_long(&f, name, len);
      if (!o) p = find_param(&f, name, len);
    } else {
      dashes = "-";
      name = s + 1;
      len = 1;
      o = find_short(&f, s[1]);
      if (o && s[2]) value = s + 2; /* -oFILE */
      if (!o) len = strlen(name);
    }
    if (!o && p < 0) return unknown(&f, dashes, name, len, err, err_len);
    int wants = p >= 0 || o->meta;
    if (!wants && value) {
      snprintf(err, err_len, "option %s%.*s takes no value", dashes, (int)len,
               name);
      return QS_EINVAL;
    }
    if (wants && !value) {
      if (i + 1 >= argc || !argv[i + 1]) {
        snprintf(err, err_len, "option %s%.*s needs a value%s%s", dashes,
                 (int)len, name, o ? " " : "", o ? o->meta : "");
        return QS_EINVAL;
      }
      value = argv[++i];
    }
    if (o) {
      if (a->n_opts == ARGS_MAX) {
        snprintf(err, err_len, "too many options (at most %d)", ARGS_MAX);
        return QS_EINVAL;
      }
      a->opts[a->n_opts].def = o;
      a->opts[a->n_opts++].value = value ? value : "";
      continue;
    }
    for (size_t k = 0; k < a->n_params; k++)
      if (a->params[k].name == defs[p].name) {
        snprintf(err, err_len, "option --%.*s given twice", (int)len, name);
        return QS_EINVAL;
      }
    if (a->n_params == QS_MAX_PARAMS) {
      snprintf(err, err_len, "too many parameters");
      return QS_EINVAL;
    }
    qs_param *q = &a->params[a->n_params++];
    q->name = defs[p].name;
    q->value = 0;
    q->text = value;
  }
  return QS_OK;
}

const char *args_value(const args *a, const char *name) {
  const char *v = NULL;
  for (size_t i = 0; i < a->n_opts; i++)
    if (!strcmp(a->opts[i].def->name, name)) v = a->opts[i].value;
  return v;
}

size_t args_count(const args *a, const char *name) {
  size_t n = 0;
  for (size_t i = 0; i < a->n_opts; i++)
    n += !strcmp(a->opts[i].def->name, name);
  return n;
}

/* Decimal digits at *s into *v (past the end in *s), refusing a sign,
 * spaces and overflow: strtoull alone takes " 5", "+5" and "-5". */
static int digits(const char **s, unsigned long long *v) {
  if (**s < '0' || **s > '9') return QS_EINVAL;
  errno = 0;
  char *end;
  *v = strtoull(*s, &end, 10);
  if (errno) return QS_EINVAL;
  *s = end;
  return QS_OK;
}

int args_size(const char *text, size_t lo, size_t hi, size_t *out) {
  unsigned long long v;
  if (!text || digits(&text, &v) || *text || v < lo || v > hi ||
      v > SIZE_MAX)
    return QS_EINVAL;
  *out = (size_t)v;
  return QS_OK;
}

int args_number(const char *text, double lo, double hi, double *out) {
  /* strtod also takes leading spaces, "nan", "inf" and hex floats */
  if (!text || !((*text >= '0' && *text <= '9') || *text == '.' ||
                 ((*text == '-' || *text == '+') && text[1] &&
                  ((text[1] >= '0' && text[1] <= '9') || text[1] == '.'))))
    return QS_EINVAL;
  for (const char *p = text; *p; p++)
    if (*p == 'x' || *p == 'X') return QS_EINVAL;
  errno = 0;
  char *end;
  double v = strtod(text, &end);
  if (end == text || *end || errno == ERANGE || !isfinite(v) || v < lo ||
      v > hi)
    return QS_EINVAL;
  *out = v;
  return QS_OK;
}

int args_dims(const char *text, size_t n, size_t *out) {
  for (size_t k = 0; k < n; k++) {
    unsigned long long v;
    if (!text || digits(&text, &v) || v == 0 || v > SIZE_MAX)
      return QS_EINVAL;
    out[k] = (size_t)v;
    if (k + 1 < n && *text != 'x' && *text != 'X') return QS_EINVAL;
    if (k + 1 < n) text++;
  }
  return *text ? QS_EINVAL : QS_OK;
}
