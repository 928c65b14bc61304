/* env.c — see env.h. */
#include "env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "quicksilver.h"

int env_int(const char *var, const char *text, long lo, long hi, long *out,
            char *err, size_t err_len) {
  if (!text || !*text) return QS_OK;
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  while (*end == ' ' || *end == '\t') end++;
  if (end == text || *end || errno == ERANGE) {
    snprintf(err, err_len, "%s=\"%s\" is not an integer (expected %ld..%ld)",
             var, text, lo, hi);
    return QS_EENV;
  }
  *out = v < lo ? lo : (v > hi ? hi : v);
  return QS_OK;
}

int env_bool(const char *var, const char *text, int *out, char *err,
             size_t err_len) {
  static const char *const yes[] = {"1", "true", "yes", "on"};
  static const char *const no[] = {"0", "false", "no", "off"};
  if (!text || !*text) return QS_OK;
  for (size_t i = 0; i < 4; i++) {
    if (!strcasecmp(text, yes[i])) {
      *out = 1;
      return QS_OK;
    }
    if (!strcasecmp(text, no[i])) {
      *out = 0;
      return QS_OK;
    }
  }
  snprintf(err, err_len, "%s=\"%s\" is not a boolean (use 1/0, true/false)",
           var, text);
  return QS_EENV;
}
