/* fuzz_stream.c — libFuzzer harness for the parameter and live-stream
 * surfaces of the public C API: the input chooses the stream's options
 * (frame size, window, sliding, every, max_pending up to SIZE_MAX, a count
 * of parameters with no array), the eSRRF parameters as text and as values,
 * and the pixels of the frames pushed (NaN and infinity included). The
 * stream is pushed, popped, given back, ended and closed; the same
 * parameters go through qs_params_resolve and a small qs_method_run. Any status
 * is fine; a crash, a sanitizer report or a failure without a message is
 * not.
 *
 * Layout: byte 0 rows, 1 cols, 2 window, 3 every, 4 flags (1 sliding,
 * 2 n_params without params, 4 max_pending SIZE_MAX, 8 push after end),
 * 5 max_pending, 6 frames a push; then text up to a NUL: parameters, one
 * a line, "name=text" or "name:number"; the rest: float32 pixels,
 * cycled. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "quicksilver.h"
#include "quicksilver_esrrf.h"

static qs_engine *stream_fuzz_engine(void) {
  static qs_engine *e;
  if (!e) {
    qs_engine_options o = {.db_path = ":memory:",
                           .no_opencl = 1,
                           .threads = 1,
                           .no_calibration = 1,
                           .seed = 1};
    if (qs_engine_open(&e, &o) != QS_OK) {
      qs_engine_close(e);
      e = NULL;
    }
  }
  return e;
}

/* Parameters from "name=text" / "name:number" lines of t (modified). */
static size_t stream_fuzz_params(char *t, qs_param *p, size_t max) {
  size_t n = 0;
  for (char *line = t; line && *line && n < max;) {
    char *nl = strchr(line, '\n');
    if (nl) *nl = '\0';
    char *eq = strchr(line, '='), *colon = strchr(line, ':');
    if (eq && (!colon || eq < colon)) {
      *eq = '\0';
      p[n++] = (qs_param){line, 0, eq + 1};
    } else if (colon) {
      *colon = '\0';
      p[n++] = (qs_param){line, strtod(colon + 1, NULL), NULL};
    }
    line = nl ? nl + 1 : NULL;
  }
  return n;
}

static void stream_fuzz_check(int rc, const char *msg) {
  if (rc != QS_OK && (!msg || !msg[0])) __builtin_trap();
}

static int stream_one(const uint8_t *data, size_t size) {
  qs_engine *e = stream_fuzz_engine();
  if (!e || size < 7) return 0;
  size_t rows = 1 + data[0] % 8, cols = 1 + data[1] % 8;
  size_t window = data[2] % 6, every = data[3] % 4, per = 1 + data[6] % 4;
  unsigned flags = data[4];
  size_t max_pending = flags & 4 ? SIZE_MAX : data[5] % 8;
  const uint8_t *rest = data + 7;
  size_t left = size - 7;
  const uint8_t *nul = memchr(rest, 0, left);
  size_t tlen = nul ? (size_t)(nul - rest) : left;
  char *text = malloc(tlen + 1);
  if (!text) return 0;
  memcpy(text, rest, tlen);
  text[tlen] = '\0';
  qs_param p[QS_MAX_PARAMS];
  size_t n_p = stream_fuzz_params(text, p, QS_MAX_PARAMS);
  /* magnifications past 4 only make the run slow, not different */
  for (size_t i = 0; i < n_p; i++)
    if (!strcmp(p[i].name, "magnification") && !p[i].text && p[i].value > 4)
      p[i].value = 4;
  const uint8_t *px = nul ? nul + 1 : rest + left;
  size_t n_px = (size_t)(rest + left - px) / 4;
  size_t frame = rows * cols, count = per * frame;
  float *f = malloc(count * sizeof *f);
  if (!f) {
    free(text);
    return 0;
  }
  for (size_t i = 0; i < count; i++) {
    f[i] = 100.0f + (float)(i % 13);
    if (n_px) memcpy(&f[i], px + 4 * (i % n_px), 4);
  }

  /* the parameter tables */
  double v[QS_MAX_PARAMS];
  char err[512] = "";
  const qs_method_desc *d = qs_method_find(e, "esrrf");
  if (d) {
    int rc = qs_params_resolve(d->params, d->n_params, flags & 2 ? NULL : p,
                               n_p, v, err, sizeof err);
    stream_fuzz_check(rc, err);
    for (size_t i = 0; i < d->n_params; i++) {
      char buf[64];
      qs_params_format(&d->params[i], rc ? d->params[i].def : v[i], buf,
                       sizeof buf);
    }
  }
  /* a small batch call with the same parameters and pixels */
  qs_image in = qs_image_wrap(f, per, rows, cols), out[1];
  qs_run_request rq = {.inputs = &in,
                       .n_inputs = 1,
                       .params = flags & 2 ? NULL : p,
                       .n_params = n_p,
                       .impl = "serial"};
  int rc = qs_method_run(e, "esrrf", &rq, out, 1, NULL);
  stream_fuzz_check(rc, qs_engine_error(e));
  if (!rc) qs_image_free(&out[0]);

  /* the stream */
  qs_esrrf_stream_options o = {.rows = rows,
                               .cols = cols,
                               .params = flags & 2 ? NULL : p,
                               .n_params = n_p,
                               .sliding = flags & 1,
                               .window = window,
                               .every = every,
                               .impl = "serial",
                               .max_pending = max_pending};
  qs_esrrf_stream *s = NULL;
  rc = qs_esrrf_stream_open(e, &o, &s, err, sizeof err);
  stream_fuzz_check(rc, err);
  if (!rc) {
    for (int k = 0; k < 3; k++) {
      qs_image fr = qs_image_wrap(f, per, rows, cols);
      rc = qs_esrrf_stream_push(s, &fr);
      stream_fuzz_check(rc, qs_esrrf_stream_error(s));
      qs_image r;
      qs_esrrf_stream_result info;
      int got = 1;
      while (qs_esrrf_stream_pop(s, &r, &info, &got) == QS_OK && got)
        if (qs_esrrf_stream_give(s, &r)) qs_image_free(&r);
    }
    rc = qs_esrrf_stream_end(s);
    stream_fuzz_check(rc, qs_esrrf_stream_error(s));
    if (flags & 8) {
      qs_image fr = qs_image_wrap(f, 1, rows, cols);
      if (qs_esrrf_stream_push(s, &fr) == QS_OK) __builtin_trap();
    }
    qs_image r;
    int got = 1;
    while (qs_esrrf_stream_pop(s, &r, NULL, &got) == QS_OK && got)
      qs_image_free(&r);
    uint64_t up;
    qs_esrrf_stream_transfers(s, NULL, NULL);
    qs_esrrf_stream_transfers(s, &up, NULL);
    (void)qs_esrrf_stream_frames(s);
    (void)qs_esrrf_stream_impl(s);
  }
  qs_esrrf_stream_close(s);
  free(f);
  free(text);
  return 0;
}

/* The tests include this file with FUZZ_NO_MAIN to replay the corpus and
 * the regression inputs through the same function. */
#ifndef FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return stream_one(data, size);
}
#endif
