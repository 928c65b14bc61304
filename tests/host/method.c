/* method.c — a host program's own method, as the README's "Adding a
 * method" shows it, built against the installed quicksilver_method.h:
 * "scale" multiplies every pixel by a parameter, with a serial and a
 * threaded implementation (one run function: the schedule tells them
 * apart) that report progress, planned through a plan and run once
 * without one. Prints "scale <impl>: <sum>" for each and exits 0 when both
 * outputs are right. */
#include <quicksilver_method.h>
#include <stdio.h>
#include <stdlib.h>

enum { P_FACTOR, N_PARAMS };

typedef struct job {
  const qs_method_call *c;
  float factor;
} job;

/* Rows [b, e) of every frame flattened. */
static int scale_rows(void *ctx, size_t b, size_t e, int worker) {
  const job *j = ctx;
  const qs_image *in = &j->c->in[0];
  (void)worker;
  for (size_t i = b * in->cols; i < e * in->cols; i++)
    j->c->out[0].data[i] = in->data[i] * j->factor;
  return method_advance(j->c, e - b, in->frames * in->rows) ? QS_ECANCELLED
                                                            : QS_OK;
}

static int scale_run(const qs_method_call *c) {
  job j = {c, (float)c->p[P_FACTOR]};
  return c->parallel_for(c, 0, c->in[0].frames * c->in[0].rows, scale_rows,
                         &j);
}

static int scale_shape(const qs_image *in, const double *p, qs_image *out,
                       char *err, size_t len) {
  (void)p, (void)err, (void)len;
  *out = (qs_image){
      .frames = in[0].frames, .rows = in[0].rows, .cols = in[0].cols};
  return QS_OK;
}

static const qs_slot_def slots[] = {{"image", "any stack"}};
static const qs_param_def params[N_PARAMS] = {
    [P_FACTOR] = {.name = "factor",
                  .type = QS_PARAM_FLOAT,
                  .def = 2,
                  .min = -1e6,
                  .max = 1e6,
                  .doc = "the multiplier"},
};
static const qs_impl_def impls[] = {
    {.name = "serial", .kind = QS_IMPL_SERIAL, .run = scale_run, .version = 1},
    {.name = "threaded",
     .kind = QS_IMPL_THREADED,
     .run = scale_run,
     .version = 1,
     .sched = QS_SCHED_DYNAMIC,
     .chunk = 8},
};
static const qs_method_desc scale = {
    .name = "scale",
    .doc = "every pixel times a factor",
    .inputs = slots,
    .n_inputs = 1,
    .outputs = slots,
    .n_outputs = 1,
    .params = params,
    .n_params = N_PARAMS,
    .impls = impls,
    .n_impls = 2,
    .shape = scale_shape,
    .tolerance = 0,
};

static int check(const qs_image *out, const char *impl) {
  double sum = 0;
  for (size_t i = 0; i < out->frames * out->rows * out->cols; i++)
    sum += out->data[i];
  printf("scale %s: %.0f\n", impl, sum);
  return sum == 3.0 * 4 * 64 * 64 ? 0 : 1; /* every pixel 1 x 3 */
}

int main(void) {
  qs_engine *e;
  if (qs_engine_open(&e, NULL) || qs_method_register(e, &scale)) {
    fprintf(stderr, "%s\n", qs_engine_error(e));
    qs_engine_close(e);
    return 1;
  }
  float *px = malloc(4 * 64 * 64 * sizeof *px);
  if (!px) return 1;
  for (size_t i = 0; i < 4 * 64 * 64; i++) px[i] = 1;
  qs_image in = qs_image_wrap(px, 4, 64, 64), out;
  qs_param p[] = {{"factor", 3, NULL}};
  qs_run_request rq = {
      .inputs = &in, .n_inputs = 1, .params = p, .n_params = 1};
  qs_run_report rep;
  qs_plan *pl;
  int bad = qs_method_open(e, "scale", &rq, &pl) ||
            qs_plan_run(pl, &in, 1, &out, 1, &rep);
  if (!bad) bad = check(&out, rep.impl);
  qs_image_free(&out);
  qs_plan_close(pl);
  rq.impl = "serial";
  if (!bad) bad = qs_method_run(e, "scale", &rq, &out, 1, &rep);
  if (!bad) bad = check(&out, rep.impl);
  if (bad) fprintf(stderr, "scale: %s\n", qs_engine_error(e));
  qs_image_free(&out);
  free(px);
  qs_engine_close(e);
  return bad;
}
