/* args.h — command-line parsing for every quicksilver command.
 *
 * Each command declares its options in a table (opt_def); a method's (or
 * the simulator's) parameters become flags derived from its param_def table:
 * `frames_per_timepoint` -> `--frames-per-timepoint VALUE`, booleans taking
 * true/false. `--name=value` and `--name value` are both accepted, `-o X`
 * for options with a short name, and `--` ends the options. An unknown flag
 * is an error that names it and suggests the nearest valid one.
 *
 * Parsing keeps pointers into argv and into the tables, never copies: the
 * result lives as long as they do. Values are not interpreted here (the
 * parameter's declared type is, by qs_params_parse / qs_params_resolve). */
#ifndef QS_ARGS_H
#define QS_ARGS_H

#include <stddef.h>

#include "quicksilver.h"

typedef struct opt_def {
  const char *name; /* long name, without dashes: "output" */
  char short_name;  /* 'o', or 0 */
  const char *meta; /* value placeholder ("FILE"); NULL: a switch */
  const char *doc;
} opt_def;

#define ARGS_MAX 128

/* One option occurrence; value is NULL for switches. */
typedef struct opt_hit {
  const opt_def *def;
  const char *value;
} opt_hit;

typedef struct args {
  const char *pos[ARGS_MAX]; /* positional arguments, in order */
  size_t n_pos;
  opt_hit opts[ARGS_MAX]; /* options, in order, repeats kept */
  size_t n_opts;
  qs_param params[QS_MAX_PARAMS]; /* parameter flags: name from the table,
                                  text from argv */
  size_t n_params;
} args;

/* Parses argv[0..argc) against the option tables (n_tables of them, looked
 * up in order, each ended by an entry with name NULL) and the parameter
 * table defs[0..n_defs) (may be NULL). QS_EINVAL on an unknown flag, a
 * missing value, a parameter given twice or too many arguments, with a
 * message naming the flag (and the nearest valid one). */
int args_parse(int argc, char **argv, const opt_def *const *tables,
               size_t n_tables, const qs_param_def *defs, size_t n_defs,
               args *a, char *err, size_t err_len);

/* The last value of option `name` (NULL if absent); for switches, a
 * non-NULL pointer to "" when given. */
const char *args_value(const args *a, const char *name);

/* Number of times option `name` was given. */
size_t args_count(const args *a, const char *name);

/* The flag spelling of a parameter name ("frames-per-timepoint") into buf. */
void args_flag_of(const char *param_name, char *buf, size_t len);

/* Number parsing for every option (strict: the whole text, no spaces, no
 * sign where none is meant; QS_EINVAL otherwise, the caller names the
 * option):
 * args_size   a non-negative decimal integer within [lo, hi];
 * args_number a finite decimal number within [lo, hi] ("abc", "5s",
 *             "nan", "inf", "0x10", "1e999" refused);
 * args_dims   n positive integers joined by 'x' ("16x16", "4x16x16";
 *             "16x16junk", "-1x5", "16x" refused). */
int args_size(const char *text, size_t lo, size_t hi, size_t *out);
int args_number(const char *text, double lo, double hi, double *out);
int args_dims(const char *text, size_t n, size_t *out);

#endif
