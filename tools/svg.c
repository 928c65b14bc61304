/* svg.c — log-log line plots and heat maps as SVG (see svg.h). */
#include "svg.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "outfile.h"
#include "quicksilver.h"

enum { W = 900, H = 560, LEFT = 80, RIGHT = 300, TOP = 50, BOTTOM = 60 };

static const char *const palette[] = {
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b",
    "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#000000", "#aec7e8"};

static void text_escaped(FILE *f, const char *s) {
  for (; *s; s++) {
    if (*s == '<')
      fputs("&lt;", f);
    else if (*s == '>')
      fputs("&gt;", f);
    else if (*s == '&')
      fputs("&amp;", f);
    else if (*s == '"')
      fputs("&quot;", f);
    else
      fputc(*s, f);
  }
}

/* Decades covering [lo, hi] (positive), at least one. */
static void decades(double lo, double hi, double *a, double *b) {
  *a = floor(log10(lo));
  *b = ceil(log10(hi));
  if (*b <= *a) *b = *a + 1;
}

int svg_loglog(const char *path, const char *title, const char *xlabel,
               const char *ylabel, const svg_series *s, size_t n, char *err,
               size_t err_len) {
  double x0 = INFINITY, x1 = 0, y0 = INFINITY, y1 = 0;
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; k < s[i].n; k++) {
      double x = s[i].x[k], y = s[i].y[k];
      if (!(x > 0 && y > 0) || !isfinite(x) || !isfinite(y)) continue;
      x0 = fmin(x0, x), x1 = fmax(x1, x), y0 = fmin(y0, y), y1 = fmax(y1, y);
    }
  if (!(x1 > 0)) {
    snprintf(err, err_len, "%s: nothing to plot (no positive timing)", path);
    return QS_EINVAL;
  }
  double xa, xb, ya, yb;
  decades(x0, x1, &xa, &xb);
  decades(y0, y1, &ya, &yb);
  double pw = W - LEFT - RIGHT, ph = H - TOP - BOTTOM;
#define PX(v) (LEFT + (log10(v) - xa) / (xb - xa) * pw)
#define PY(v) (TOP + ph - (log10(v) - ya) / (yb - ya) * ph)
  outfile o;
  int rc = outfile_open(&o, path, err, err_len);
  if (rc) return rc;
  FILE *f = o.f;
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
          "height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
          W, H);
  fprintf(f, "<text x=\"%d\" y=\"28\" font-size=\"16\">", LEFT);
  text_escaped(f, title);
  fprintf(f, "</text>\n");
  for (double d = xa; d <= xb; d++) { /* vertical grid and labels */
    double x = LEFT + (d - xa) / (xb - xa) * pw;
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#ddd\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
            "text-anchor=\"middle\">1e%g</text>\n",
            x, TOP, x, TOP + ph, x, TOP + ph + 18, d);
  }
  for (double d = ya; d <= yb; d++) {
    double y = TOP + ph - (d - ya) / (yb - ya) * ph;
    fprintf(f,
            "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#ddd\"/>\n<text x=\"%d\" y=\"%.1f\" "
            "text-anchor=\"end\">1e%g s</text>\n",
            LEFT, y, LEFT + pw, y, LEFT - 6, y + 4, d);
  }
  fprintf(f,
          "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%.1f\" "
          "fill=\"none\" stroke=\"#333\"/>\n",
          LEFT, TOP, pw, ph);
  fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">",
          LEFT + pw / 2, H - 15);
  text_escaped(f, xlabel);
  fprintf(f,
          "</text>\n<text transform=\"translate(18,%.1f) rotate(-90)\" "
          "text-anchor=\"middle\">",
          TOP + ph / 2);
  text_escaped(f, ylabel);
  fprintf(f, "</text>\n");
  for (size_t i = 0; i < n; i++) {
    const char *col = palette[i % (sizeof palette / sizeof palette[0])];
    const char *dash = i >= sizeof palette / sizeof palette[0]
                           ? " stroke-dasharray=\"5,3\""
                           : "";
    fprintf(f,
            "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\"%s "
            "points=\"",
            col, dash);
    for (size_t k = 0; k < s[i].n; k++)
      if (s[i].x[k] > 0 && s[i].y[k] > 0 && isfinite(s[i].y[k]))
        fprintf(f, "%.1f,%.1f ", PX(s[i].x[k]), PY(s[i].y[k]));
    fprintf(f, "\"/>\n");
    for (size_t k = 0; k < s[i].n; k++)
      if (s[i].x[k] > 0 && s[i].y[k] > 0 && isfinite(s[i].y[k]))
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n",
                PX(s[i].x[k]), PY(s[i].y[k]), col);
    double ly = TOP + 10 + 18.0 * (double)i;
    fprintf(f,
            "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"%s\" stroke-width=\"2\"%s/>\n<text x=\"%.1f\" "
            "y=\"%.1f\">",
            LEFT + pw + 14, ly, LEFT + pw + 40, ly, col, dash, LEFT + pw + 46,
            ly + 4);
    text_escaped(f, s[i].name);
    fprintf(f, "</text>\n");
  }
#undef PX
#undef PY
  fprintf(f, "</svg>\n");
  return outfile_commit(&o, err, err_len);
}

/* A colour of the viridis-like ramp at t in [0, 1]. */
static void ramp(double t, int rgb[3]) {
  static const int stops[5][3] = {{68, 1, 84},
                                  {59, 82, 139},
                                  {33, 145, 140},
                                  {94, 201, 98},
                                  {253, 231, 37}};
  t = t < 0 ? 0 : t > 1 ? 1 : t;
  double p = t * 4;
  int i = p >= 4 ? 3 : (int)p;
  double f = p - i;
  for (int k = 0; k < 3; k++)
    rgb[k] = (int)(stops[i][k] + f * (stops[i + 1][k] - stops[i][k]) + 0.5);
}

int svg_heatmap(const char *path, const char *title, const char *xlabel,
                const char *ylabel, const char *const *xlab, size_t nx,
                const char *const *ylab, size_t ny, const double *values,
                char *err, size_t err_len) {
  enum { CELL = 64, ML = 110, MT = 60, MB = 60 };
  double lo = INFINITY, hi = -INFINITY;
  size_t best = (size_t)-1;
  for (size_t i = 0; i < nx * ny; i++)
    if (isfinite(values[i])) {
      lo = fmin(lo, values[i]);
      if (values[i] > hi) best = i;
      hi = fmax(hi, values[i]);
    }
  outfile o;
  int rc = outfile_open(&o, path, err, err_len);
  if (rc) return rc;
  FILE *f = o.f;
  int w = ML + CELL * (int)nx + 40, h = MT + CELL * (int)ny + MB;
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
          "height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n"
          "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
          "<text x=\"%d\" y=\"28\" font-size=\"16\">",
          w, h, ML);
  text_escaped(f, title);
  fprintf(f, "</text>\n");
  for (size_t y = 0; y < ny; y++)
    for (size_t x = 0; x < nx; x++) {
      double v = values[y * nx + x];
      int rgb[3] = {200, 200, 200};
      if (isfinite(v)) ramp(hi > lo ? (v - lo) / (hi - lo) : 1, rgb);
      int cx = ML + CELL * (int)x, cy = MT + CELL * (int)y;
      fprintf(f,
              "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
              "fill=\"rgb(%d,%d,%d)\"%s/>\n",
              cx, cy, CELL, CELL, rgb[0], rgb[1], rgb[2],
              y * nx + x == best ? " stroke=\"red\" stroke-width=\"3\"" : "");
      fprintf(f,
              "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
              "fill=\"%s\">%.3g</text>\n",
              cx + CELL / 2, cy + CELL / 2 + 4,
              rgb[0] + rgb[1] + rgb[2] > 380 ? "black" : "white", v);
    }
  for (size_t x = 0; x < nx; x++) {
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
            ML + CELL * (int)x + CELL / 2, MT + CELL * (int)ny + 18);
    text_escaped(f, xlab[x]);
    fprintf(f, "</text>\n");
  }
  for (size_t y = 0; y < ny; y++) {
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", ML - 8,
            MT + CELL * (int)y + CELL / 2 + 4);
    text_escaped(f, ylab[y]);
    fprintf(f, "</text>\n");
  }
  fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">",
          ML + CELL * (int)nx / 2, h - 15);
  text_escaped(f, xlabel);
  fprintf(f,
          "</text>\n<text transform=\"translate(24,%d) rotate(-90)\" "
          "text-anchor=\"middle\">",
          MT + CELL * (int)ny / 2);
  text_escaped(f, ylabel);
  fprintf(f, "</text>\n</svg>\n");
  return outfile_commit(&o, err, err_len);
}
