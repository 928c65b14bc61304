/* interpose.c — a host program that defines a function of the library's
 * name (qs_image_pixels, which the engine calls while validating every call),
 * linked against the shared library as users link it. The library binds
 * its own calls to its own functions (-Bsymbolic-functions), so the host's
 * function serves the host and the engine keeps working. Prints TAP. */
#include <stdio.h>

#include "quicksilver.h"

static int host_calls;

/* The host's own qs_image_pixels, with another meaning. */
int qs_image_pixels(size_t frames, size_t rows, size_t cols, size_t *n) {
  host_calls++;
  *n = frames + rows + cols;
  return 99;
}

int main(void) {
  qs_engine_options o = {.db_path = ":memory:", .no_opencl = 1};
  qs_engine *e = NULL;
  int rc = qs_engine_open(&e, &o);
  float px[4 * 6] = {0};
  qs_image in = qs_image_wrap(px, 1, 4, 6), out = {0};
  qs_run_request rq = {.inputs = &in, .n_inputs = 1, .impl = "serial"};
  if (!rc) rc = qs_method_run(e, "shift_magnify", &rq, &out, 1, NULL);
  printf("1..3\n");
  printf("%s 1 - the engine runs a method (%s)\n", rc ? "not ok" : "ok",
         e ? qs_engine_error(e) : "no engine");
  printf("%s 2 - with its own qs_image_pixels (output %zux%zu)\n",
         out.rows == 8 && out.cols == 12 ? "ok" : "not ok", out.rows,
         out.cols);
  size_t n = 0;
  int mine = qs_image_pixels(2, 3, 4, &n);
  printf("%s 3 - the host's qs_image_pixels is the host's\n",
         mine == 99 && n == 9 && host_calls == 1 ? "ok" : "not ok");
  qs_image_free(&out);
  qs_engine_close(e);
  return 0;
}
