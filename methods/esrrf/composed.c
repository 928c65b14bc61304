/* composed.c — eSRRF's `composed` implementation: the reference chain with
 * every step dispatched through the engine (c->step), so the agent picks
 * each step's implementation by itself (NanoPyx's "let the engine choose
 * for each granular method"). Its output is whatever those choices give,
 * within the steps' tolerances of serial.
 *
 * Frames go through the steps a batch at a time (at most a timepoint and
 * COMPOSED_BATCH_BYTES of intermediates), so memory stays bounded. */
#include <stdio.h>
#include <string.h>

#include "methods/esrrf/esrrf.h"

#define COMPOSED_BATCH_BYTES ((size_t)64 << 20)

typedef struct composed {
  const qs_method_call *c;
  esrrf_geom g;
} composed;

/* Runs one step; out receives n_out engine-allocated images. */
static int composed_step(const composed *s, const char *method,
                         const qs_image *in, size_t n_in, const qs_param *p,
                         size_t n_p, qs_image *out, size_t n_out) {
  return s->c->step(s->c, method, NULL, in, n_in, p, n_p, out, n_out);
}

static int composed_maps(void *state, size_t f0, size_t n, float *dst) {
  composed *s = state;
  const esrrf_geom *g = &s->g;
  size_t px = (size_t)g->rows * (size_t)g->cols;
  qs_image batch = qs_image_wrap(s->c->in[0].data + f0 * px, n,
                                 (size_t)g->rows, (size_t)g->cols);
  qs_param m1[] = {{"magnification_row", g->mag, NULL},
                   {"magnification_col", g->mag, NULL}};
  qs_param m2[] = {{"magnification_row", 2 * g->mag, NULL},
                   {"magnification_col", 2 * g->mag, NULL}};
  qs_param pr[] = {{"magnification", g->mag, NULL},
                   {"radius", s->c->p[P_RADIUS], NULL},
                   {"sensitivity", s->c->p[P_SENS], NULL},
                   {"intensity_weighting", g->weight, NULL}};
  qs_image grad[2], rgc_in[3], maps;
  memset(grad, 0, sizeof grad);
  memset(rgc_in, 0, sizeof rgc_in);
  memset(&maps, 0, sizeof maps);
  int rc = composed_step(s, "shift_magnify", &batch, 1, m1, 2, &rgc_in[2], 1);
  if (!rc) rc = composed_step(s, "roberts_cross", &batch, 1, NULL, 0, grad, 2);
  for (int i = 0; !rc && i < 2; i++)
    rc = composed_step(s, "shift_magnify", &grad[i], 1, m2, 2, &rgc_in[i], 1);
  for (int i = 0; i < 2; i++)
    qs_image_free(&grad[i]);
  if (!rc) rc = composed_step(s, "rgc", rgc_in, 3, pr, 4, &maps, 1);
  for (int i = 0; i < 3; i++)
    qs_image_free(&rgc_in[i]);
  if (!rc) memcpy(dst, maps.data, n * g->plane * sizeof(float));
  qs_image_free(&maps);
  return rc;
}

int esrrf_run_composed(const qs_method_call *c) {
  composed s = {.c = c};
  esrrf_geom_of(c, &s.g);
  if (!c->step) {
    snprintf(c->err, c->err_len,
             "esrrf: composed needs the engine to run its steps");
    return QS_EUNAVAIL;
  }
  /* per frame: ×M image, 2 gradients, 2 ×2M gradients, the map */
  size_t frame = (2 * (size_t)s.g.rows * (size_t)s.g.cols + 10 * s.g.plane) *
                 sizeof(float);
  size_t batch = COMPOSED_BATCH_BYTES / frame ? COMPOSED_BATCH_BYTES / frame
                                              : 1;
  return esrrf_drive(c, &s.g, batch, composed_maps, &s);
}
