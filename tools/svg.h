/* svg.h — a small SVG writer for log-log line plots (benchmark time against
 * work, one line per implementation) and heat maps (a parameter sweep's
 * scores over its grid). */
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

/* A heat map of values[y · nx + x] (NaN: a grey cell) with the row and
 * column labels ylab[y], xlab[x] and each cell's value printed, colours
 * from dark (low) to bright (high) over the finite range; the highest
 * cell is outlined. Whole or not at all; QS_EIO naming path. */
int svg_heatmap(const char *path, const char *title, const char *xlabel,
                const char *ylabel, const char *const *xlab, size_t nx,
                const char *const *ylab, size_t ny, const double *values,
                char *err, size_t err_len);

#endif
