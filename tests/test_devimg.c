/* test_devimg.c — device images (quicksilver_image.h): push and pull give
 * the bits back and are counted; every implementation of every built-in
 * method gives the same bits on device images as on host images, the
 * OpenCL ones of the device moving nothing and the others pulled and
 * pushed once by the engine (the report says so); the eSRRF chain of
 * steps on device images moves its input up once and its maps down once
 * and gives the host steps' bits; the agent prices the moves; freed,
 * foreign and orphaned device images and NULLs get clear statuses; with
 * two devices, inputs on both are refused and an image run by the other
 * device's implementation is moved through the host, counted. (A
 * composite's steps are the agent's choice on each call: it agrees within
 * the method's tolerance.) Tests
 * that need an OpenCL device skip without one. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_clock.h"
#include "quicksilver_method.h"
#include "qs_test.h"

TestSuite(devimg, .fini = qs_leak_check);

static qs_engine *open_engine(void) {
  qs_engine *e;
  qs_engine_options o = {.db_path = ":memory:", .no_calibration = 1};
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  return e;
}

/* The first OpenCL device's name into out, or skips the test; returns
 * whether it is a GPU (a CPU device shares host memory: a host input's
 * upload moves nothing there). */
/* The engine's devices into d (4), or skips the test (closing e) when
 * fewer than `want` OpenCL devices are there. */
static void need_devices(qs_engine *e, qs_device_info *d, size_t want) {
  size_t n = 0;
  cr_assert_eq(qs_engine_devices(e, d, 4, &n), QS_OK);
  if (n < want + 1) {
    qs_engine_close(e);
    cr_skip_test("fewer than %zu OpenCL device(s)", want);
  }
}

static int need_device(qs_engine *e, char *out, size_t len) {
  qs_device_info d[4];
  need_devices(e, d, 1);
  snprintf(out, len, "%s", d[1].name);
  return d[1].gpu;
}

/* An engine with an OpenCL device (skips without one): the device's name
 * into dev (QS_NAME_MAX), its implementations' name "opencl:<dev>" into
 * impl (QS_NAME_MAX + 8), and *gpu (may be NULL) whether it is a GPU. */
static qs_engine *open_device(char *dev, char *impl, int *gpu) {
  qs_engine *e = open_engine();
  int g = need_device(e, dev, QS_NAME_MAX);
  snprintf(impl, QS_NAME_MAX + 8, "opencl:%s", dev);
  if (gpu) *gpu = g;
  return e;
}

static float *noisy(size_t n, uint64_t s) {
  float *px = malloc(n * sizeof *px);
  cr_assert(px);
  for (size_t i = 0; i < n; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    px[i] = 100.0f + (float)(s % 4096) * 0.25f;
  }
  return px;
}

static size_t bytes_of(const qs_image *m) {
  return m->frames * m->rows * m->cols * sizeof(float);
}

Test(devimg, push_pull_round_trip_counted) {
  qs_engine *e = open_engine();
  char dev[QS_NAME_MAX];
  need_device(e, dev, sizeof dev);
  float *px = noisy(3 * 17 * 19, 7);
  qs_image host = qs_image_wrap(px, 3, 17, 19), d, back;
  uint64_t up0, down0, up1, down1;
  cr_assert_eq(qs_engine_device_bytes(e, dev, &up0, &down0), QS_OK);
  cr_assert_eq(qs_image_push(e, &host, dev, &d), QS_OK, "%s",
               qs_engine_error(e));
  cr_expect_null(d.data);
  cr_expect_eq(d.frames, 3);
  cr_expect_eq(d.rows, 17);
  cr_expect_eq(d.cols, 19);
  cr_expect_str_eq(qs_image_device(&d), dev);
  cr_expect_str_eq(qs_image_device(&host), "");
  cr_assert_eq(qs_image_pull(e, &d, &back), QS_OK, "%s", qs_engine_error(e));
  cr_expect(!memcmp(back.data, px, bytes_of(&host)));
  cr_assert_eq(qs_engine_device_bytes(e, dev, &up1, &down1), QS_OK);
  cr_expect_eq(up1 - up0, bytes_of(&host));
  cr_expect_eq(down1 - down0, bytes_of(&host));
  /* "opencl:<slug>" and NULL name the same device */
  qs_image d2;
  char full[QS_NAME_MAX + 8];
  snprintf(full, sizeof full, "opencl:%s", dev);
  cr_expect_eq(qs_image_push(e, &host, full, &d2), QS_OK);
  qs_image_free(&d2);
  cr_expect_eq(qs_image_push(e, &host, NULL, &d2), QS_OK);
  qs_image_free(&d2);
  double bw = 0;
  cr_expect_eq(qs_engine_device_bandwidth(e, dev, &bw), QS_OK);
  cr_expect_gt(bw, 0);
  qs_image_free(&back);
  qs_image_free(&d);
  cr_expect_null(d.owner_);
  free(px);
  qs_engine_close(e);
}

/* One method, its inputs' shapes and parameters. */
typedef struct mcase {
  const char *method;
  size_t n_in;
  size_t shape[3][3];
  qs_param p[4];
  size_t n_p;
} mcase;

static const mcase cases[] = {
    {"shift_magnify", 1, {{3, 20, 24}}, {{"magnification_row", 3, NULL},
     {"magnification_col", 2, NULL}, {"shift_row", 0.25, NULL}}, 3},
    {"roberts_cross", 1, {{3, 20, 24}}, {{0}}, 0},
    {"rgc", 3, {{2, 40, 48}, {2, 40, 48}, {2, 20, 24}},
     {{"magnification", 2, NULL}}, 1},
    {"esrrf", 1, {{6, 20, 24}}, {{"magnification", 3, NULL}}, 1},
    {"decorr", 1, {{1, 32, 32}}, {{0}}, 0},
    {"frc", 2, {{1, 32, 32}, {1, 32, 32}}, {{0}}, 0},
    {"squirrel", 2, {{2, 16, 16}, {1, 32, 32}}, {{0}}, 0},
};

/* Every available implementation of k: forced on host inputs, then on
 * device inputs; the pulled outputs have the host run's bits, and the
 * report's moves are what the implementation's place implies. Returns how
 * many implementations ran natively on the device images. */
static int same_bits(qs_engine *e, const mcase *k, const char *dev) {
  const qs_method_desc *md = qs_method_find(e, k->method);
  cr_assert(md, "%s", k->method);
  size_t n_out = md->n_outputs, in_bytes = 0, out_bytes = 0;
  float *px[3];
  qs_image in[3], din[3];
  for (size_t i = 0; i < k->n_in; i++) {
    px[i] = noisy(k->shape[i][0] * k->shape[i][1] * k->shape[i][2], 11 + i);
    in[i] =
        qs_image_wrap(px[i], k->shape[i][0], k->shape[i][1], k->shape[i][2]);
    cr_assert_eq(qs_image_push(e, &in[i], dev, &din[i]), QS_OK);
    in_bytes += bytes_of(&in[i]);
  }
  qs_impl_info impls[QS_MAX_IMPLS];
  size_t n_impls;
  cr_assert_eq(qs_method_impls(e, k->method, impls, QS_MAX_IMPLS, &n_impls),
               QS_OK);
  int native = 0;
  char native_name[QS_NAME_MAX + 8];
  snprintf(native_name, sizeof native_name, "opencl:%s", dev);
  for (size_t j = 0; j < n_impls; j++) {
    if (!impls[j].available) continue;
    qs_run_request rq = {.inputs = in,
                         .n_inputs = k->n_in,
                         .params = k->p,
                         .n_params = k->n_p,
                         .impl = impls[j].name};
    qs_image h[QS_MAX_OUTPUTS], d[QS_MAX_OUTPUTS], back;
    qs_run_report rep;
    cr_assert_eq(qs_method_run(e, k->method, &rq, h, n_out, NULL), QS_OK,
                 "%s %s: %s", k->method, impls[j].name, qs_engine_error(e));
    rq.inputs = din;
    cr_assert_eq(qs_method_run(e, k->method, &rq, d, n_out, &rep), QS_OK,
                 "%s %s on device images: %s", k->method, impls[j].name,
                 qs_engine_error(e));
    cr_expect_str_eq(rep.impl, impls[j].name);
    out_bytes = 0;
    for (size_t o = 0; o < n_out; o++) {
      cr_expect_str_eq(qs_image_device(&d[o]), dev, "%s %s: output %zu",
                       k->method, impls[j].name, o);
      cr_assert_eq(qs_image_pull(e, &d[o], &back), QS_OK);
      if (impls[j].kind != QS_IMPL_COMPOSITE) {
        cr_expect(!memcmp(back.data, h[o].data, bytes_of(&h[o])),
                  "%s %s: output %zu differs on device images", k->method,
                  impls[j].name, o);
      } else { /* each call's steps are the agent's: within tolerance */
        double top = 0, diff = 0;
        for (size_t i = 0; i < bytes_of(&h[o]) / sizeof(float); i++) {
          double a = h[o].data[i], b = back.data[i];
          top = a > top ? a : -a > top ? -a : top;
          diff = a - b > diff ? a - b : b - a > diff ? b - a : diff;
        }
        cr_expect_leq(diff, md->tolerance * top, "%s %s: output %zu",
                      k->method, impls[j].name, o);
      }
      out_bytes += bytes_of(&h[o]);
      qs_image_free(&back);
      qs_image_free(&d[o]);
      qs_image_free(&h[o]);
    }
    int here = !strcmp(impls[j].name, native_name) &&
               strcmp(k->method, "esrrf"); /* eSRRF's chain takes host */
    native += here;
    cr_expect_eq(rep.bytes_pulled, here ? 0 : in_bytes, "%s %s: pulled %llu",
                 k->method, impls[j].name,
                 (unsigned long long)rep.bytes_pulled);
    cr_expect_eq(rep.bytes_pushed, here ? 0 : out_bytes,
                 "%s %s: pushed %llu", k->method, impls[j].name,
                 (unsigned long long)rep.bytes_pushed);
    if (here) { /* the buffers themselves: nothing crossed */
      cr_expect_eq(rep.bytes_up, 0, "%s: up %llu", k->method,
                   (unsigned long long)rep.bytes_up);
      cr_expect_eq(rep.bytes_down, 0);
    }
  }
  for (size_t i = 0; i < k->n_in; i++) {
    qs_image_free(&din[i]);
    free(px[i]);
  }
  return native;
}

Test(devimg, every_method_and_impl_same_bits_on_device_images) {
  qs_engine *e = open_engine();
  char dev[QS_NAME_MAX];
  need_device(e, dev, sizeof dev);
  int native = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    native += same_bits(e, &cases[i], dev);
  /* roberts_cross, shift_magnify and rgc ran on the buffers */
  cr_expect_eq(native, 3);
  qs_engine_close(e);
}

/* Host and device inputs mixed: outputs on the device, the native
 * implementation binds the device ones and uploads the host one. */
Test(devimg, mixed_host_and_device_inputs) {
  char dev[QS_NAME_MAX], impl[QS_NAME_MAX + 8];
  int gpu;
  qs_engine *e = open_device(dev, impl, &gpu);
  const mcase *k = &cases[2]; /* rgc */
  float *px[3];
  qs_image in[3], mix[3];
  for (size_t i = 0; i < 3; i++) {
    px[i] = noisy(k->shape[i][0] * k->shape[i][1] * k->shape[i][2], 3 + i);
    in[i] = mix[i] =
        qs_image_wrap(px[i], k->shape[i][0], k->shape[i][1], k->shape[i][2]);
  }
  cr_assert_eq(qs_image_push(e, &in[0], dev, &mix[0]), QS_OK);
  cr_assert_eq(qs_image_push(e, &in[1], dev, &mix[1]), QS_OK);
  qs_run_request rq = {.inputs = in,
                       .n_inputs = 3,
                       .params = k->p,
                       .n_params = k->n_p,
                       .impl = impl};
  qs_image h, d, back;
  qs_run_report rep;
  cr_assert_eq(qs_method_run(e, "rgc", &rq, &h, 1, NULL), QS_OK);
  rq.inputs = mix;
  cr_assert_eq(qs_method_run(e, "rgc", &rq, &d, 1, &rep), QS_OK, "%s",
               qs_engine_error(e));
  cr_expect_str_eq(qs_image_device(&d), dev);
  cr_expect_eq(rep.bytes_pulled, 0);
  cr_expect_eq(rep.bytes_up, gpu ? bytes_of(&in[2]) : 0, "up %llu",
               (unsigned long long)rep.bytes_up);
  cr_expect_eq(rep.bytes_down, 0);
  cr_assert_eq(qs_image_pull(e, &d, &back), QS_OK);
  cr_expect(!memcmp(back.data, h.data, bytes_of(&h)));
  qs_image_free(&back);
  qs_image_free(&d);
  qs_image_free(&h);
  qs_image_free(&mix[0]);
  qs_image_free(&mix[1]);
  for (size_t i = 0; i < 3; i++) free(px[i]);
  qs_engine_close(e);
}

/* The chained example: eSRRF's steps (shift_magnify of the image,
 * roberts_cross, shift_magnify of each gradient, rgc) on device images
 * move the input up once and the maps down once, and give the bits of the
 * same steps on host images; the maps are eSRRF's per-frame maps. */
static void chain(qs_engine *e, const qs_image *x, const char *impl, int mag,
                  qs_image *maps) {
  qs_param m1[] = {{"magnification_row", mag, NULL},
                   {"magnification_col", mag, NULL}};
  qs_param m2[] = {{"magnification_row", 2 * mag, NULL},
                   {"magnification_col", 2 * mag, NULL}};
  qs_param pr[] = {{"magnification", mag, NULL}};
  qs_image grad[2], rgc_in[3];
  qs_run_request rq = {
      .inputs = x, .n_inputs = 1, .params = m1, .n_params = 2, .impl = impl};
  cr_assert_eq(qs_method_run(e, "shift_magnify", &rq, &rgc_in[2], 1, NULL),
               QS_OK, "%s", qs_engine_error(e));
  rq = (qs_run_request){.inputs = x, .n_inputs = 1, .impl = impl};
  cr_assert_eq(qs_method_run(e, "roberts_cross", &rq, grad, 2, NULL), QS_OK);
  for (int i = 0; i < 2; i++) {
    rq = (qs_run_request){.inputs = &grad[i],
                          .n_inputs = 1,
                          .params = m2,
                          .n_params = 2,
                          .impl = impl};
    cr_assert_eq(qs_method_run(e, "shift_magnify", &rq, &rgc_in[i], 1, NULL),
                 QS_OK);
    qs_image_free(&grad[i]);
  }
  rq = (qs_run_request){.inputs = rgc_in,
                        .n_inputs = 3,
                        .params = pr,
                        .n_params = 1,
                        .impl = impl};
  cr_assert_eq(qs_method_run(e, "rgc", &rq, maps, 1, NULL), QS_OK);
  for (int i = 0; i < 3; i++)
    qs_image_free(&rgc_in[i]);
}

Test(devimg, esrrf_chain_on_device_moves_input_and_maps_once) {
  char dev[QS_NAME_MAX], impl[QS_NAME_MAX + 8];
  qs_engine *e = open_device(dev, impl, NULL);
  const int mag = 2;
  float *px = noisy(4 * 24 * 28, 99);
  qs_image x = qs_image_wrap(px, 4, 24, 28), hmaps, dx, dmaps, back;
  chain(e, &x, impl, mag, &hmaps);
  uint64_t up0, down0, up1, down1;
  cr_assert_eq(qs_engine_device_bytes(e, dev, &up0, &down0), QS_OK);
  cr_assert_eq(qs_image_push(e, &x, dev, &dx), QS_OK);
  chain(e, &dx, impl, mag, &dmaps);
  cr_expect_str_eq(qs_image_device(&dmaps), dev);
  cr_assert_eq(qs_image_pull(e, &dmaps, &back), QS_OK);
  cr_assert_eq(qs_engine_device_bytes(e, dev, &up1, &down1), QS_OK);
  cr_expect_eq(up1 - up0, bytes_of(&x), "up %llu",
               (unsigned long long)(up1 - up0));
  cr_expect_eq(down1 - down0, bytes_of(&hmaps), "down %llu",
               (unsigned long long)(down1 - down0));
  cr_expect(!memcmp(back.data, hmaps.data, bytes_of(&hmaps)),
            "device chain differs from the host chain");
  /* eSRRF's own per-frame maps, within its tolerance */
  qs_param ep[] = {{"magnification", mag, NULL},
                   {"temporal", 0, "none"},
                   {"macro_pixel_correction", 0, NULL}};
  qs_run_request rq = {.inputs = &x,
                       .n_inputs = 1,
                       .params = ep,
                       .n_params = 3,
                       .impl = "serial"};
  qs_image ref;
  cr_assert_eq(qs_method_run(e, "esrrf", &rq, &ref, 1, NULL), QS_OK, "%s",
               qs_engine_error(e));
  cr_assert_eq(ref.frames * ref.rows * ref.cols,
               back.frames * back.rows * back.cols);
  double top = 0, diff = 0;
  for (size_t i = 0; i < ref.frames * ref.rows * ref.cols; i++) {
    double a = ref.data[i], b = back.data[i];
    if (a < 0 ? -a > top : a > top) top = a < 0 ? -a : a;
    if ((a - b) * (a - b) > diff * diff) diff = a > b ? a - b : b - a;
  }
  cr_expect_gt(top, 0);
  cr_expect_leq(diff, 1e-4 * top, "max diff %g of %g", diff, top);
  qs_image_free(&ref);
  qs_image_free(&back);
  qs_image_free(&dmaps);
  qs_image_free(&dx);
  qs_image_free(&hmaps);
  free(px);
  qs_engine_close(e);
}

/* A CPU choice on device images: pulled once, pushed once, said so; the
 * agent prices those moves for CPU implementations and none for the
 * device's own. */
Test(devimg, cpu_choice_pulled_once_and_moves_priced) {
  char dev[QS_NAME_MAX], impl[QS_NAME_MAX + 8];
  qs_engine *e = open_device(dev, impl, NULL);
  float *px = noisy(2 * 64 * 64, 5);
  qs_image x = qs_image_wrap(px, 2, 64, 64), dx, out[2];
  cr_assert_eq(qs_image_push(e, &x, dev, &dx), QS_OK);
  qs_run_request rq = {.inputs = &dx, .n_inputs = 1, .impl = "cpu"};
  qs_run_report rep;
  cr_assert_eq(qs_method_run(e, "roberts_cross", &rq, out, 2, &rep), QS_OK,
               "%s", qs_engine_error(e));
  cr_expect_eq(rep.bytes_pulled, bytes_of(&x));
  cr_expect_eq(rep.bytes_pushed, 2 * bytes_of(&x));
  cr_expect_eq(rep.bytes_down, bytes_of(&x));
  cr_expect_eq(rep.bytes_up, 2 * bytes_of(&x));
  for (int i = 0; i < 2; i++)
    qs_image_free(&out[i]);
  rq.impl = NULL;
  cr_assert_eq(qs_method_estimate(e, "roberts_cross", &rq, &rep), QS_OK);
  int seen_cpu = 0, seen_dev = 0;
  for (size_t i = 0; i < rep.n_estimates; i++) {
    const qs_run_estimate *x_ = &rep.estimates[i];
    if (!strcmp(x_->impl, "serial")) {
      seen_cpu = 1;
      cr_expect_gt(x_->transfer_seconds, 0);
    }
    if (!strcmp(x_->impl, impl)) {
      seen_dev = 1;
      cr_expect_eq(x_->transfer_seconds, 0);
    }
  }
  cr_expect(seen_cpu && seen_dev);
  /* host inputs: nothing to price */
  rq.inputs = &x;
  cr_assert_eq(qs_method_estimate(e, "roberts_cross", &rq, &rep), QS_OK);
  for (size_t i = 0; i < rep.n_estimates; i++)
    cr_expect_eq(rep.estimates[i].transfer_seconds, 0);
  qs_image_free(&dx);
  free(px);
  qs_engine_close(e);
}

/* Plans take device images as inputs and give device outputs. */
Test(devimg, plan_runs_on_device_images) {
  char dev[QS_NAME_MAX], impl[QS_NAME_MAX + 8];
  qs_engine *e = open_device(dev, impl, NULL);
  float *px = noisy(3 * 20 * 24, 9);
  qs_image x = qs_image_wrap(px, 3, 20, 24), dx, h, d, back;
  qs_param p[] = {{"magnification_row", 2, NULL},
                  {"magnification_col", 2, NULL}};
  qs_run_request rq = {
      .inputs = &x, .n_inputs = 1, .params = p, .n_params = 2, .impl = impl};
  cr_assert_eq(qs_method_run(e, "shift_magnify", &rq, &h, 1, NULL), QS_OK);
  cr_assert_eq(qs_image_push(e, &x, dev, &dx), QS_OK);
  qs_plan *pl;
  rq.inputs = &dx;
  cr_assert_eq(qs_method_open(e, "shift_magnify", &rq, &pl), QS_OK, "%s",
               qs_engine_error(e));
  qs_run_report rep;
  cr_assert_eq(qs_plan_run(pl, &dx, 1, &d, 1, &rep), QS_OK, "%s",
               qs_engine_error(e));
  cr_expect_eq(rep.bytes_up + rep.bytes_down, 0);
  cr_assert_eq(qs_image_pull(e, &d, &back), QS_OK);
  cr_expect(!memcmp(back.data, h.data, bytes_of(&h)));
  qs_plan_close(pl);
  qs_image_free(&back);
  qs_image_free(&d);
  qs_image_free(&dx);
  qs_image_free(&h);
  free(px);
  qs_engine_close(e);
}

Test(devimg, freed_foreign_orphaned_and_null_refused) {
  qs_engine *e = open_engine(), *f = open_engine();
  char dev[QS_NAME_MAX];
  need_device(e, dev, sizeof dev);
  float *px = noisy(2 * 8 * 8, 1);
  qs_image x = qs_image_wrap(px, 2, 8, 8), d, copy, out[2], h;
  qs_run_request rq = {.inputs = &copy, .n_inputs = 1};

  /* a copy of a freed one */
  cr_assert_eq(qs_image_push(e, &x, dev, &d), QS_OK);
  copy = d;
  qs_image_free(&d);
  cr_expect_eq(qs_method_run(e, "roberts_cross", &rq, out, 2, NULL),
               QS_EINVAL);
  cr_expect(strstr(qs_engine_error(e), "freed"), "%s", qs_engine_error(e));
  cr_expect_null(out[0].data);
  cr_expect_null(out[0].owner_);
  cr_expect_eq(qs_image_pull(e, &copy, &h), QS_EINVAL);
  cr_expect_null(h.owner_);
  cr_expect_eq(
      qs_method_estimate(e, "roberts_cross", &rq, &(qs_run_report){0}),
      QS_EINVAL);
  qs_image again = copy; /* freeing a stale copy does nothing */
  qs_image_free(&again);
  cr_expect_null(again.owner_);

  /* another engine's */
  cr_assert_eq(qs_image_push(e, &x, dev, &d), QS_OK);
  copy = d;
  cr_expect_eq(qs_method_run(f, "roberts_cross", &rq, out, 2, NULL),
               QS_EINVAL);
  cr_expect(strstr(qs_engine_error(f), "another engine"), "%s",
            qs_engine_error(f));
  cr_expect_eq(qs_image_pull(f, &d, &h), QS_EINVAL);
  qs_plan *pl;
  cr_expect_eq(qs_method_open(f, "roberts_cross", &rq, &pl), QS_EINVAL);

  /* NULLs and misuse */
  cr_expect_eq(qs_image_push(NULL, &x, dev, &copy), QS_EINVAL);
  cr_expect_eq(qs_image_push(e, NULL, dev, &copy), QS_EINVAL);
  cr_expect_eq(qs_image_push(e, &x, dev, NULL), QS_EINVAL);
  cr_expect_eq(qs_image_push(e, &d, dev, &copy), QS_EINVAL);
  cr_expect(strstr(qs_engine_error(e), "device image already"), "%s",
            qs_engine_error(e));
  cr_expect_null(copy.owner_);
  cr_expect_eq(qs_image_push(e, &x, "no-such-device", &copy), QS_ENOIMPL);
  cr_expect_eq(qs_image_pull(NULL, &d, &h), QS_EINVAL);
  cr_expect_eq(qs_image_pull(e, NULL, &h), QS_EINVAL);
  cr_expect_eq(qs_image_pull(e, &d, NULL), QS_EINVAL);
  cr_expect_str_eq(qs_image_device(NULL), "");
  cr_expect_null(qs_image_cl_buffer(NULL, NULL));
  cr_expect_eq(qs_engine_device_bytes(NULL, dev, NULL, NULL), QS_EINVAL);
  cr_expect_eq(qs_engine_device_bytes(e, "no-such-device", NULL, NULL),
               QS_ENOIMPL);
  cr_expect_eq(qs_engine_device_bandwidth(e, dev, NULL), QS_EINVAL);
  qs_image_free(NULL);

  /* its engine closed under it: only qs_image_free is left, and safe */
  qs_engine_close(e);
  cr_expect_str_eq(qs_image_device(&d), "");
  cr_expect_eq(qs_image_pull(f, &d, &h), QS_EINVAL);
  qs_image_free(&d);
  cr_expect_null(d.owner_);
  qs_engine_close(f);
  free(px);
}

/* The agent's choice with the moves priced: a method whose CPU
 * implementation costs 1 ms and whose device one 1.5 ms (on the injected
 * clock) runs on the CPU for host input, and on the device for 16 MiB of
 * device input, where the CPU would add a pull and a push. */
static int cost_cpu(const qs_method_call *c) {
  (void)c;
  fake_now += 1000000;
  return QS_OK;
}

static int cost_dev(const qs_method_call *c) {
  /* it is handed its device's buffers, never host memory, for them */
  if (!c->in[0].data && !qs_image_cl_buffer(&c->in[0], c->device))
    return QS_EFAIL;
  fake_now += 1500000;
  return QS_OK;
}

static const qs_slot_def cost_slots[] = {{"image", "any"}};
static const qs_impl_def cost_impls[] = {
    {"serial", QS_IMPL_SERIAL, cost_cpu, NULL, 1, QS_SCHED_STATIC, 0, NULL,
     NULL, 0},
    {"opencl", QS_IMPL_OPENCL, cost_dev, NULL, 1, QS_SCHED_STATIC, 0, NULL,
     NULL, 1},
};
static const qs_method_desc cost_desc = {.name = "costed",
                                         .doc = "fixed costs",
                                         .inputs = cost_slots,
                                         .n_inputs = 1,
                                         .outputs = cost_slots,
                                         .n_outputs = 1,
                                         .impls = cost_impls,
                                         .n_impls = 2,
                                         .tolerance = 1};

Test(devimg, transfers_priced_in_the_choice) {
  qs_engine *e;
  qs_engine_options o = {.db_path = ":memory:",
                         .no_calibration = 1,
                         .clock_ns = fake_clock,
                         .seed = 1};
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  char dev[QS_NAME_MAX], impl[QS_NAME_MAX + 8];
  need_device(e, dev, sizeof dev);
  snprintf(impl, sizeof impl, "opencl:%s", dev);
  cr_assert_eq(qs_method_register(e, &cost_desc), QS_OK);
  input x = make_input(1, 1024, 4096); /* 16 MiB */
  qs_image out, dx;
  qs_run_request rq = {.inputs = &x.im, .n_inputs = 1};
  for (int i = 0; i < 8; i++) /* both timed on the key, closely */
    for (int k = 0; k < 2; k++) {
      rq.impl = k ? impl : "serial";
      cr_assert_eq(qs_method_run(e, "costed", &rq, &out, 1, NULL), QS_OK, "%s",
                   qs_engine_error(e));
      qs_image_free(&out);
    }
  qs_run_report rep;
  rq.impl = NULL;
  cr_assert_eq(qs_method_run(e, "costed", &rq, &out, 1, &rep), QS_OK);
  cr_expect_str_eq(rep.impl, "serial", "host input: %s (%s)", rep.impl,
                   rep.reason);
  qs_image_free(&out);
  cr_assert_eq(qs_image_push(e, &x.im, dev, &dx), QS_OK);
  rq.inputs = &dx;
  cr_assert_eq(qs_method_run(e, "costed", &rq, &out, 1, &rep), QS_OK, "%s",
               qs_engine_error(e));
  cr_expect_str_eq(rep.impl, impl, "device input: %s (%s)", rep.impl,
                   rep.reason);
  cr_expect_eq(rep.bytes_pulled + rep.bytes_pushed, 0);
  double t_cpu = -1;
  for (size_t i = 0; i < rep.n_estimates; i++)
    if (!strcmp(rep.estimates[i].impl, "serial"))
      t_cpu = rep.estimates[i].transfer_seconds;
  cr_expect_gt(t_cpu, 5e-4, "the CPU's moves priced at %g s", t_cpu);
  qs_image_free(&out);
  /* its run on the buffers (no transfers) is learnt apart from its runs
   * on host memory: one run on device input, eight on host input */
  for (int k = 0; k < 2; k++) {
    rq.inputs = k ? &x.im : &dx;
    cr_assert_eq(qs_method_estimate(e, "costed", &rq, &rep), QS_OK);
    for (size_t i = 0; i < rep.n_estimates; i++)
      if (!strcmp(rep.estimates[i].impl, impl)) {
        cr_expect_str_eq(rep.estimates[i].source, "history");
        cr_expect_eq(rep.estimates[i].runs, k ? 8 : 1);
      }
  }
  qs_image_free(&dx);
  free(x.px);
  qs_engine_close(e);
}

Test(devimg, without_opencl_push_is_unavailable) {
  qs_engine *e;
  qs_engine_options o = {.db_path = ":memory:", .no_opencl = 1};
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  float px[4] = {1, 2, 3, 4};
  qs_image x = qs_image_wrap(px, 1, 2, 2), d;
  cr_expect_eq(qs_image_push(e, &x, NULL, &d), QS_EUNAVAIL);
  cr_expect(strstr(qs_engine_error(e), "OpenCL"), "%s", qs_engine_error(e));
  cr_expect_null(d.owner_);
  qs_engine_close(e);
}

/* Two devices (PoCL shows two when POCL_DEVICES names its CPU driver
 * twice; skipped where the platform gives fewer): inputs on two devices
 * are refused with the reason, and an input on one device run by the
 * other device's implementation is moved through the host, the report
 * saying so, with the bits of the host call. */
static void two_pocl(void) { setenv("POCL_DEVICES", "pthread pthread", 1); }

Test(devimg, two_devices_refused_or_moved, .init = two_pocl) {
  qs_engine *e = open_engine();
  qs_device_info d[4];
  need_devices(e, d, 2);
  const char *d1 = d[1].name, *d2 = d[2].name;
  char impl2[QS_NAME_MAX + 8];
  snprintf(impl2, sizeof impl2, "opencl:%s", d2);
  const mcase *k = &cases[2]; /* rgc: three inputs */
  float *px[3];
  qs_image in[3], on[3];
  for (size_t i = 0; i < 3; i++) {
    px[i] = noisy(k->shape[i][0] * k->shape[i][1] * k->shape[i][2], 11 + i);
    in[i] = qs_image_wrap(px[i], k->shape[i][0], k->shape[i][1],
                          k->shape[i][2]);
  }
  cr_assert_eq(qs_image_push(e, &in[0], d1, &on[0]), QS_OK);
  cr_assert_eq(qs_image_push(e, &in[1], d2, &on[1]), QS_OK);
  on[2] = in[2];
  qs_run_request rq = {
      .inputs = on, .n_inputs = 3, .params = k->p, .n_params = k->n_p};
  qs_image out;
  cr_expect_eq(qs_method_run(e, "rgc", &rq, &out, 1, NULL), QS_EINVAL);
  cr_expect(strstr(qs_engine_error(e), "another device"), "%s",
            qs_engine_error(e));
  /* one device's image, the other's implementation: moved, counted */
  qs_image g[2], gh[2], back;
  qs_run_report rep;
  rq = (qs_run_request){.inputs = &on[0], .n_inputs = 1, .impl = impl2};
  cr_assert_eq(qs_method_run(e, "roberts_cross", &rq, g, 2, &rep), QS_OK,
               "%s", qs_engine_error(e));
  cr_expect_str_eq(rep.impl, impl2);
  cr_expect_eq(rep.bytes_pulled, bytes_of(&in[0]));
  cr_expect_eq(rep.bytes_pushed, 2 * bytes_of(&in[0]));
  cr_expect_str_eq(qs_image_device(&g[0]), d1, "outputs stay where the "
                                               "input was");
  rq.inputs = &in[0];
  cr_assert_eq(qs_method_run(e, "roberts_cross", &rq, gh, 2, NULL), QS_OK);
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(qs_image_pull(e, &g[i], &back), QS_OK);
    cr_expect(!memcmp(back.data, gh[i].data, bytes_of(&gh[i])),
              "gradient %d: the host call's bits", i);
    qs_image_free(&back);
    qs_image_free(&g[i]);
    qs_image_free(&gh[i]);
  }
  qs_image_free(&on[0]);
  qs_image_free(&on[1]);
  for (size_t i = 0; i < 3; i++) free(px[i]);
  qs_engine_close(e);
}

static int count_row(void *ctx, const qs_db_row *r) {
  (void)r;
  ++*(size_t *)ctx;
  return 0;
}

/* eSRRF refuses a device input holding a NaN or an infinity as it refuses
 * a host one, naming frame, row and column (the scan runs on the device),
 * gives no output and records nothing; a finite device input runs, and a
 * method that takes non-finite pixels (rgc) is not scanned. */
Test(devimg, nonfinite_device_input_refused_as_on_host) {
  char dev[QS_NAME_MAX], impl[QS_NAME_MAX + 8];
  qs_engine *e = open_device(dev, impl, NULL);
  size_t f = 4, r = 20, c = 24, px = r * c;
  float *pixels = noisy(f * px, 21);
  qs_image host = qs_image_wrap(pixels, f, r, c), d;
  qs_param p = {"magnification", 2, NULL};
  qs_run_request rq = {
      .inputs = &d, .n_inputs = 1, .params = &p, .n_params = 1};
  qs_image out = {0};
  const float bad[] = {NAN, INFINITY, -INFINITY};
  const size_t at[] = {2 * px + 5 * c + 7, f * px - 1, 0};
  for (int k = 0; k < 3; k++) {
    pixels[at[k]] = bad[k];
    cr_assert_eq(qs_image_push(e, &host, dev, &d), QS_OK);
    cr_expect_eq(qs_method_run(e, "esrrf", &rq, &out, 1, NULL), QS_EINVAL);
    char want[128];
    snprintf(want, sizeof want, "frame %zu has %g at row %zu, column %zu",
             at[k] / px, (double)bad[k], at[k] % px / c, at[k] % c);
    cr_expect(strstr(qs_engine_error(e), want), "%s (want \"%s\")",
              qs_engine_error(e), want);
    cr_expect_null(out.owner_, "no output");
    /* the host path refuses the same pixel */
    rq.inputs = &host;
    cr_expect_eq(qs_method_run(e, "esrrf", &rq, &out, 1, NULL), QS_EINVAL);
    cr_expect(strstr(qs_engine_error(e), want), "host: %s",
              qs_engine_error(e));
    rq.inputs = &d;
    qs_image_free(&d);
    pixels[at[k]] = 1;
  }
  size_t runs = 0;
  qs_db_filter all = {0};
  cr_assert_eq(qs_engine_db_query(e, &all, count_row, &runs), QS_OK);
  cr_expect_eq(runs, 0, "nothing recorded");
  cr_assert_eq(qs_image_push(e, &host, dev, &d), QS_OK);
  cr_expect_eq(qs_method_run(e, "esrrf", &rq, &out, 1, NULL), QS_OK, "%s",
               qs_engine_error(e));
  qs_image_free(&out);
  qs_image_free(&d);
  free(pixels);
  qs_engine_close(e);
}

/* Device outputs are not zeroed by the engine (an implementation that
 * runs on device images writes every pixel): with the device's free
 * buffers full of NaN first (a device image of each output's size pushed
 * and freed: its buffer is what the next output of that size gets), every
 * method's device run still gives the host run's bits. */
Test(devimg, device_outputs_written_whole_over_stale_buffers) {
  char dev[QS_NAME_MAX], impl[QS_NAME_MAX + 8];
  qs_engine *e = open_device(dev, impl, NULL);
  for (size_t m = 0; m < 3; m++) { /* shift_magnify, roberts_cross, rgc */
    const mcase *k = &cases[m];
    float *px[3];
    qs_image in[3], din[3], h[2], d[2];
    for (size_t i = 0; i < k->n_in; i++) {
      px[i] = noisy(k->shape[i][0] * k->shape[i][1] * k->shape[i][2], 31 + i);
      in[i] = qs_image_wrap(px[i], k->shape[i][0], k->shape[i][1],
                            k->shape[i][2]);
      cr_assert_eq(qs_image_push(e, &in[i], dev, &din[i]), QS_OK);
    }
    qs_run_request rq = {.inputs = in,
                         .n_inputs = k->n_in,
                         .params = k->p,
                         .n_params = k->n_p,
                         .impl = impl};
    size_t n_out = m == 1 ? 2 : 1;
    cr_assert_eq(qs_method_run(e, k->method, &rq, h, n_out, NULL), QS_OK);
    for (size_t o = 0; o < n_out; o++) {
      size_t n = bytes_of(&h[o]) / sizeof(float);
      float *nan_px = malloc(n * sizeof *nan_px);
      cr_assert(nan_px);
      for (size_t i = 0; i < n; i++) nan_px[i] = NAN;
      qs_image stale = qs_image_wrap(nan_px, h[o].frames, h[o].rows,
                                     h[o].cols), ds;
      cr_assert_eq(qs_image_push(e, &stale, dev, &ds), QS_OK);
      qs_image_free(&ds);
      free(nan_px);
    }
    rq.inputs = din;
    cr_assert_eq(qs_method_run(e, k->method, &rq, d, n_out, NULL), QS_OK,
                 "%s", qs_engine_error(e));
    for (size_t o = 0; o < n_out; o++) {
      qs_image back;
      cr_assert_eq(qs_image_pull(e, &d[o], &back), QS_OK);
      cr_expect(!memcmp(back.data, h[o].data, bytes_of(&h[o])),
                "%s output %zu: not the host run's bits", k->method, o);
      qs_image_free(&back);
      qs_image_free(&d[o]);
      qs_image_free(&h[o]);
    }
    for (size_t i = 0; i < k->n_in; i++) {
      qs_image_free(&din[i]);
      free(px[i]);
    }
  }
  qs_engine_close(e);
}
