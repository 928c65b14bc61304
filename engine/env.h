/* env.h — parsing of the QUICKSILVER_* environment knobs: clamped numbers,
 * strict booleans, and a clear message naming the variable for garbage. */
#ifndef QS_ENV_H
#define QS_ENV_H

#include <stddef.h>

/* Parses `text` (the value of variable `var`) as a decimal integer and
 * clamps it to [lo, hi]. NULL or "" leaves *out unchanged and returns
 * QS_OK. Garbage (letters, trailing junk, overflow) returns QS_EENV with a
 * message in err naming var and the value. */
int env_int(const char *var, const char *text, long lo, long hi, long *out,
            char *err, size_t err_len);

/* Parses 1/0, true/false, yes/no, on/off (any case). NULL or "" leaves *out
 * unchanged. Anything else returns QS_EENV with a message. */
int env_bool(const char *var, const char *text, int *out, char *err,
             size_t err_len);

#endif
