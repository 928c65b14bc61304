/* svg.h — a small SVG writer for log-log line plots (benchmark time against
 * work, one line per implementation). */
#ifndef QS_SVG_H
#define QS_SVG_H

#include <stddef.h>

typedef struct svg_series {
  const char *name;
  const double *x, *y; /* n points; non-positive values are left out */
  size_t n;
} svg_series;

/* Writes the plot to path, whole or not at all. QS_EINVAL when no series
 * has a positive point; QS_EIO naming path when it cannot be written. */
int svg_loglog(const char *path, const char *title, const char *xlabel,
               const char *ylabel, const svg_series *s, size_t n, char *err,
               size_t err_len);

#endif
