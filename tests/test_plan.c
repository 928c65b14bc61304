/* test_plan.c — plans (qs_method_open, qs_plan_run, qs_plan_close): a plan's runs
 * give qs_method_run's bits for every built-in method; open plans the chosen
 * implementation once and its state reaches every run of the plan and
 * nothing else (one-shot calls, calibration slices); every run is recorded
 * like a call; shapes other than planned and misuse are refused with a
 * message. Outputs the caller gives (run_request.outputs_given) receive the
 * bits of allocated ones in place, are refused with a message when they
 * cannot hold them, and stay the caller's through failure and cancel. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "quicksilver_method.h"
#include "qs_test.h"

TestSuite(plan, .fini = qs_leak_check);

static qs_engine *open_engine(int calibrate) {
  qs_engine *e;
  qs_engine_options o = {.db_path = ":memory:", .no_calibration = !calibrate};
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  return e;
}

static float *noisy(size_t n) {
  float *px = malloc(n * sizeof *px);
  cr_assert(px);
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (size_t i = 0; i < n; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    px[i] = 100.0f + (float)(s % 4096) * 0.25f;
  }
  return px;
}

/* ---------------------------------------------- a method that counts */

typedef struct counted {
  int opens, closes, runs_with_state, runs_without;
  size_t opened_frames; /* the shape open saw */
} counted;

static counted *g; /* the test's counters (one test per process) */

static int cnt_open(const qs_method_call *c, void **state) {
  g->opens++;
  g->opened_frames = c->in[0].frames;
  cr_expect_null(c->in[0].data, "open sees shapes only");
  *state = g;
  return QS_OK;
}

static void cnt_close(void *state) {
  cr_expect_eq(state, g);
  g->closes++;
}

static int cnt_run(const qs_method_call *c) {
  if (c->state) {
    cr_expect_eq(c->state, g);
    g->runs_with_state++;
  } else {
    g->runs_without++;
  }
  size_t n = c->in[0].frames * c->in[0].rows * c->in[0].cols;
  for (size_t i = 0; i < n; i++) c->out[0].data[i] = 2 * c->in[0].data[i];
  return QS_OK;
}

static int cnt_shape(const qs_image *in, const double *p, qs_image *out,
                     char *err, size_t len) {
  (void)p, (void)err, (void)len;
  *out = in[0];
  out->data = NULL;
  return QS_OK;
}

static const qs_slot_def cnt_slots[] = {{"image", "any"}};
static const qs_impl_def cnt_impls[] = {
    {"serial", QS_IMPL_SERIAL, cnt_run, NULL, 1, QS_SCHED_STATIC, 0, cnt_open,
     cnt_close},
};
static const qs_method_desc cnt_desc = {
    .name = "counted",
    .doc = "doubles its input; counts its plans",
    .inputs = cnt_slots,
    .n_inputs = 1,
    .outputs = cnt_slots,
    .n_outputs = 1,
    .impls = cnt_impls,
    .n_impls = 1,
    .shape = cnt_shape,
    .tolerance = 0,
};

static int count_row(void *ctx, const qs_db_row *r) {
  (void)r;
  ++*(int *)ctx;
  return 0;
}

Test(plan, open_once_state_in_every_run_closed_at_close) {
  counted c = {0};
  g = &c;
  qs_engine *e = open_engine(0);
  cr_assert_eq(qs_method_register(e, &cnt_desc), QS_OK, "%s",
               qs_engine_error(e));
  qs_image shape = {.frames = 8, .rows = 4, .cols = 5};
  qs_run_request rq = {.inputs = &shape, .n_inputs = 1};
  qs_plan *p;
  cr_assert_eq(qs_method_open(e, "counted", &rq, &p), QS_OK, "%s",
               qs_engine_error(e));
  cr_expect_eq(c.opens, 1, "planned at open");
  cr_expect_eq(c.opened_frames, 8);
  cr_expect_str_eq(qs_plan_impl(p), "");
  float *px = noisy(8 * 20);
  for (size_t frames = 8; frames >= 1; frames /= 2) {
    qs_image in = qs_image_wrap(px, frames, 4, 5), out;
    qs_run_report rep;
    cr_assert_eq(qs_plan_run(p, &in, 1, &out, 1, &rep), QS_OK, "%s",
                 qs_engine_error(e));
    cr_expect_eq(out.frames, frames);
    for (size_t i = 0; i < frames * 20; i++)
      cr_expect_eq(out.data[i], 2 * px[i]);
    cr_expect_str_eq(rep.impl, "serial");
    qs_image_free(&out);
  }
  cr_expect_eq(c.opens, 1, "runs do not open again");
  cr_expect_eq(c.runs_with_state, 4);
  cr_expect_str_eq(qs_plan_impl(p), "serial");

  /* a one-shot call in between has no plan state */
  qs_image in = qs_image_wrap(px, 8, 4, 5), out;
  qs_run_request one = {.inputs = &in, .n_inputs = 1};
  cr_assert_eq(qs_method_run(e, "counted", &one, &out, 1, NULL), QS_OK);
  qs_image_free(&out);
  cr_expect_eq(c.runs_without, 1);

  /* every run recorded like a call */
  int rows = 0;
  qs_db_filter f = {.method = "counted"};
  cr_assert_eq(qs_engine_db_query(e, &f, count_row, &rows), QS_OK);
  cr_expect_eq(rows, 5, "4 plan runs and 1 call: %d rows", rows);

  cr_expect_eq(c.closes, 0);
  qs_plan_close(p);
  cr_expect_eq(c.closes, 1);
  free(px);
  qs_engine_close(e);
}

Test(plan, shapes_and_misuse_refused) {
  qs_engine *e = open_engine(0);
  qs_image shape = {.frames = 4, .rows = 16, .cols = 16};
  qs_param sm[] = {{"magnification_row", 2, NULL},
                   {"magnification_col", 2, NULL}};
  qs_run_request rq = {
      .inputs = &shape, .n_inputs = 1, .params = sm, .n_params = 2};
  qs_plan *p = (qs_plan *)&rq; /* must be cleared on failure */
  cr_expect_eq(qs_method_open(e, "no_such_method", &rq, &p), QS_ENOMETHOD);
  cr_expect_null(p);
  qs_param bad[] = {{"magnification_row", -1, NULL}};
  qs_run_request rb = {
      .inputs = &shape, .n_inputs = 1, .params = bad, .n_params = 1};
  cr_expect_eq(qs_method_open(e, "shift_magnify", &rb, &p), QS_EPARAM);
  cr_expect(strstr(qs_engine_error(e), "magnification_row"), "%s",
            qs_engine_error(e));
  cr_expect_eq(qs_method_open(e, "shift_magnify", NULL, &p), QS_EINVAL);
  cr_expect_eq(qs_method_open(e, "shift_magnify", &rq, NULL), QS_EINVAL);
  cr_expect_eq(qs_method_open(NULL, "shift_magnify", &rq, &p), QS_EINVAL);

  cr_assert_eq(qs_method_open(e, "shift_magnify", &rq, &p), QS_OK);
  float *px = noisy(8 * 16 * 16);
  qs_image out;
  qs_image wide = qs_image_wrap(px, 2, 16, 32);
  cr_expect_eq(qs_plan_run(p, &wide, 1, &out, 1, NULL), QS_ESHAPE);
  cr_expect(strstr(qs_engine_error(e), "planned"), "%s", qs_engine_error(e));
  qs_image more = qs_image_wrap(px, 8, 16, 16);
  cr_expect_eq(qs_plan_run(p, &more, 1, &out, 1, NULL), QS_ESHAPE);
  cr_expect_null(out.data);
  cr_expect_eq(qs_plan_run(p, &more, 2, &out, 1, NULL), QS_EINVAL);
  cr_expect_eq(qs_plan_run(NULL, &more, 1, &out, 1, NULL), QS_EINVAL);
  qs_image ok = qs_image_wrap(px, 3, 16, 16);
  cr_expect_eq(qs_plan_run(p, &ok, 1, &out, 1, NULL), QS_OK, "%s",
               qs_engine_error(e));
  cr_expect_eq(out.frames, 3);
  cr_expect_eq(out.rows, 32);
  qs_image_free(&out);
  qs_plan_close(p);
  qs_plan_close(NULL);
  free(px);
  qs_engine_close(e);
}

/* A plan's runs give qs_method_run's bits, implementation by implementation,
 * with calibration on (slices never see the plan's state). */
typedef struct mcase {
  const char *method;
  size_t n_in, n_out;
  size_t f, r, c;
  qs_param p[4];
  size_t n_p;
} mcase;

static void same_bits(const mcase *k, const char *impl) {
  qs_engine *e = open_engine(1);
  float *px[3];
  qs_image in[3], shape[3];
  for (size_t i = 0; i < k->n_in; i++) {
    size_t r = k->r, c = k->c;
    if (!strcmp(k->method, "rgc") && i < 2) r *= 2, c *= 2;
    px[i] = noisy(k->f * r * c);
    in[i] = qs_image_wrap(px[i], k->f, r, c);
    shape[i] = in[i];
    shape[i].data = NULL;
  }
  qs_run_request rq = {.inputs = shape,
                       .n_inputs = k->n_in,
                       .params = k->p,
                       .n_params = k->n_p,
                       .impl = impl};
  qs_plan *p;
  cr_assert_eq(qs_method_open(e, k->method, &rq, &p), QS_OK, "%s %s: %s",
               k->method, impl, qs_engine_error(e));
  qs_image a[2], b[2];
  for (int round = 0; round < 2; round++) {
    qs_run_report rep;
    cr_assert_eq(qs_plan_run(p, in, k->n_in, a, k->n_out, &rep), QS_OK,
                 "%s %s: %s", k->method, impl, qs_engine_error(e));
    rq.inputs = in;
    rq.impl = rep.impl; /* the agent's pick, run again as a call */
    cr_assert_eq(qs_method_run(e, k->method, &rq, b, k->n_out, NULL), QS_OK);
    for (size_t o = 0; o < k->n_out; o++) {
      size_t n = a[o].frames * a[o].rows * a[o].cols;
      cr_expect(!memcmp(a[o].data, b[o].data, n * sizeof(float)),
                "%s %s: output %zu differs", k->method, impl, o);
      qs_image_free(&a[o]);
      qs_image_free(&b[o]);
    }
  }
  qs_plan_close(p);
  for (size_t i = 0; i < k->n_in; i++) free(px[i]);
  qs_engine_close(e);
}

Test(plan, runs_give_method_run_bits) {
  const mcase cases[] = {
      {"shift_magnify", 1, 1, 3, 20, 24,
       {{"magnification_row", 3, NULL}, {"magnification_col", 2, NULL},
        {"shift_row", 0.25, NULL}},
       3},
      {"roberts_cross", 1, 2, 3, 20, 24, {{0}}, 0},
      {"rgc", 3, 1, 2, 20, 24, {{"magnification", 2, NULL}}, 1},
      {"esrrf", 1, 1, 6, 20, 24, {{"magnification", 3, NULL}}, 1},
  };
  const char *impls[] = {"serial", "threaded_guided", NULL};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (size_t j = 0; j < sizeof impls / sizeof impls[0]; j++)
      same_bits(&cases[i], impls[j]);
}

/* ------------------------------------------------ the caller's outputs */

/* Images of the output shapes of k filled with a pattern the run must
 * overwrite (the engine zeroes them first). */
static void given_outputs(const qs_image *alloc, size_t n, qs_image *out,
                          float **mem) {
  for (size_t o = 0; o < n; o++) {
    size_t px = alloc[o].frames * alloc[o].rows * alloc[o].cols;
    mem[o] = malloc(px * sizeof(float));
    cr_assert(mem[o]);
    for (size_t i = 0; i < px; i++) mem[o][i] = -12345.0f;
    out[o] = qs_image_wrap(mem[o], alloc[o].frames, alloc[o].rows,
                           alloc[o].cols);
  }
}

static void given_bits(const mcase *k, const char *impl) {
  qs_engine *e = open_engine(1);
  float *px[3], *mem[2];
  qs_image in[3];
  for (size_t i = 0; i < k->n_in; i++) {
    size_t r = k->r, c = k->c;
    if (!strcmp(k->method, "rgc") && i < 2) r *= 2, c *= 2;
    px[i] = noisy(k->f * r * c);
    in[i] = qs_image_wrap(px[i], k->f, r, c);
  }
  qs_run_request rq = {.inputs = in,
                       .n_inputs = k->n_in,
                       .params = k->p,
                       .n_params = k->n_p,
                       .impl = impl};
  qs_image a[2], b[2];
  qs_run_report rep;
  cr_assert_eq(qs_method_run(e, k->method, &rq, a, k->n_out, &rep), QS_OK,
               "%s %s: %s", k->method, impl, qs_engine_error(e));
  given_outputs(a, k->n_out, b, mem);
  rq.outputs_given = 1;
  rq.impl = rep.impl; /* the same implementation, into the caller's */
  for (int round = 0; round < 2; round++) {
    cr_assert_eq(qs_method_run(e, k->method, &rq, b, k->n_out, NULL), QS_OK,
                 "%s %s: %s", k->method, impl, qs_engine_error(e));
    for (size_t o = 0; o < k->n_out; o++) {
      cr_expect_eq(b[o].data, mem[o], "%s: written in place", k->method);
      size_t n = a[o].frames * a[o].rows * a[o].cols;
      cr_expect(!memcmp(a[o].data, mem[o], n * sizeof(float)),
                "%s %s: output %zu differs", k->method, rep.impl, o);
      mem[o][n / 2] = -1.0f; /* the next round overwrites it too */
    }
  }
  /* a plan that keeps the flag, on fewer frames than planned */
  qs_image shape[3];
  for (size_t i = 0; i < k->n_in; i++) {
    shape[i] = in[i];
    shape[i].data = NULL;
  }
  rq.inputs = shape;
  qs_plan *p;
  cr_assert_eq(qs_method_open(e, k->method, &rq, &p), QS_OK, "%s",
               qs_engine_error(e));
  qs_image few[3], c[2];
  for (size_t i = 0; i < k->n_in; i++) {
    few[i] = in[i];
    few[i].frames = 1;
  }
  for (size_t o = 0; o < k->n_out; o++) {
    c[o] = b[o];
    c[o].frames = 1; /* every output here has a frame per input frame */
  }
  cr_assert_eq(qs_plan_run(p, few, k->n_in, c, k->n_out, NULL), QS_OK,
               "%s: %s", k->method, qs_engine_error(e));
  qs_image d[2];
  qs_run_request one = {.inputs = few,
                        .n_inputs = k->n_in,
                        .params = k->p,
                        .n_params = k->n_p,
                        .impl = rep.impl};
  cr_assert_eq(qs_method_run(e, k->method, &one, d, k->n_out, NULL), QS_OK);
  for (size_t o = 0; o < k->n_out; o++) {
    cr_expect_eq(c[o].data, mem[o]);
    size_t n = d[o].frames * d[o].rows * d[o].cols;
    cr_expect(!memcmp(d[o].data, mem[o], n * sizeof(float)),
              "%s plan: output %zu differs", k->method, o);
    qs_image_free(&d[o]);
  }
  qs_plan_close(p);
  for (size_t o = 0; o < k->n_out; o++) {
    qs_image_free(&a[o]);
    qs_image_free(&b[o]); /* wrapped: the memory stays ours */
    free(mem[o]);
  }
  for (size_t i = 0; i < k->n_in; i++) free(px[i]);
  qs_engine_close(e);
}

Test(plan, given_outputs_take_the_bits_of_allocated_ones) {
  const mcase cases[] = {
      {"shift_magnify", 1, 1, 3, 20, 24,
       {{"magnification_row", 3, NULL}, {"magnification_col", 2, NULL}},
       2},
      {"roberts_cross", 1, 2, 3, 20, 24, {{0}}, 0},
      {"rgc", 3, 1, 2, 20, 24, {{"magnification", 2, NULL}}, 1},
      {"esrrf", 1, 1, 6, 20, 24,
       {{"magnification", 3, NULL}, {"temporal", 0, "none"}}, 2},
  };
  const char *impls[] = {"serial", "threaded_guided", NULL};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    for (size_t j = 0; j < sizeof impls / sizeof impls[0]; j++)
      given_bits(&cases[i], impls[j]);
}

Test(plan, given_outputs_refused_with_a_message) {
  qs_engine *e = open_engine(0);
  float *px = noisy(2 * 16 * 16), *o1 = noisy(2 * 16 * 16),
        *o2 = noisy(2 * 16 * 16), *keep = noisy(2 * 16 * 16);
  memcpy(keep, px, 2 * 16 * 16 * sizeof *keep);
  float first = o1[0];
  qs_image in = qs_image_wrap(px, 2, 16, 16);
  qs_run_request rq = {.inputs = &in, .n_inputs = 1, .outputs_given = 1};
  qs_image out[2] = {qs_image_wrap(NULL, 2, 16, 16),
                     qs_image_wrap(o2, 2, 16, 16)};
  cr_expect_eq(qs_method_run(e, "roberts_cross", &rq, out, 2, NULL),
               QS_EINVAL);
  cr_expect(strstr(qs_engine_error(e), "without memory"), "%s",
            qs_engine_error(e));
  out[0] = qs_image_wrap(o1, 2, 16, 15);
  cr_expect_eq(qs_method_run(e, "roberts_cross", &rq, out, 2, NULL),
               QS_ESHAPE);
  cr_expect(strstr(qs_engine_error(e), "output 0 given as 2 x 16 x 15, the "
                                       "call makes 2 x 16 x 16"),
            "%s", qs_engine_error(e));
  cr_expect_eq(out[0].data, o1, "a refused output stays as given");
  out[0] = qs_image_wrap(px + 16, 2, 16, 16); /* over the input's end */
  cr_expect_eq(qs_method_run(e, "roberts_cross", &rq, out, 2, NULL),
               QS_EINVAL);
  cr_expect(strstr(qs_engine_error(e), "output 0 overlaps input 0"), "%s",
            qs_engine_error(e));
  cr_expect(!memcmp(px, keep, 2 * 16 * 16 * sizeof *px), "input kept");
  out[0] = qs_image_wrap(o1, 2, 16, 16);
  out[1] = qs_image_wrap(o1 + 100, 2, 16, 16);
  cr_expect_eq(qs_method_run(e, "roberts_cross", &rq, out, 2, NULL),
               QS_EINVAL);
  cr_expect(strstr(qs_engine_error(e), "outputs 0 and 1 overlap"), "%s",
            qs_engine_error(e));
  cr_expect_eq(o1[0], first, "nothing written by a refused call");
  int rows = 0;
  qs_db_filter f = {.method = "roberts_cross"};
  cr_assert_eq(qs_engine_db_query(e, &f, count_row, &rows), QS_OK);
  cr_expect_eq(rows, 0, "refused calls recorded: %d rows", rows);
  free(px);
  free(o1);
  free(o2);
  free(keep);
  qs_engine_close(e);
}

/* A method that fails, or that runs until its progress hook cancels it. */
static int fail_run(const qs_method_call *c) {
  c->out[0].data[0] = 7.0f; /* wrote something, then failed */
  return QS_EFAIL;
}

static int slow_run(const qs_method_call *c) {
  for (int k = 0; k < 4000; k++) { /* at most 4 s */
    if (method_advance(c, 1, 4000)) return QS_ECANCELLED;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  return QS_OK;
}

static const qs_impl_def odd_impls[] = {
    {"serial", QS_IMPL_SERIAL, fail_run, NULL, 1, QS_SCHED_STATIC, 0, NULL,
     NULL},
    {"threaded", QS_IMPL_THREADED, slow_run, NULL, 1, QS_SCHED_STATIC, 0,
     NULL, NULL},
};
static const qs_method_desc odd_desc = {
    .name = "odd",
    .doc = "fails (serial) or runs until cancelled (threaded)",
    .inputs = cnt_slots,
    .n_inputs = 1,
    .outputs = cnt_slots,
    .n_outputs = 1,
    .impls = odd_impls,
    .n_impls = 2,
    .shape = cnt_shape,
    .tolerance = 0,
};

static int cancel_at_first(void *ctx, uint64_t done, uint64_t total) {
  (void)ctx, (void)done, (void)total;
  return 1;
}

Test(plan, given_outputs_stay_the_callers_through_failure_and_cancel) {
  qs_engine *e = open_engine(0);
  cr_assert_eq(qs_method_register(e, &odd_desc), QS_OK, "%s",
               qs_engine_error(e));
  float *px = noisy(64), *mem = noisy(64);
  qs_image in = qs_image_wrap(px, 1, 8, 8), out = qs_image_wrap(mem, 1, 8, 8);
  qs_run_request rq = {
      .inputs = &in, .n_inputs = 1, .impl = "serial", .outputs_given = 1};
  cr_expect_eq(qs_method_run(e, "odd", &rq, &out, 1, NULL), QS_EFAIL);
  cr_expect_eq(out.data, mem, "a failed call leaves the caller's output");
  cr_expect_eq(out.rows, 8);
  rq.impl = "threaded";
  rq.progress = cancel_at_first;
  cr_expect_eq(qs_method_run(e, "odd", &rq, &out, 1, NULL), QS_ECANCELLED);
  cr_expect_eq(out.data, mem, "a cancelled call leaves the caller's output");
  qs_image_free(&out); /* wrapped: frees nothing */
  free(px);
  free(mem); /* ours, never freed by the engine (ASan: no double free) */
  qs_engine_close(e);
}
