/* host.c — a host program as users write it, built by tools/test-installed
 * against the installed library with `pkg-config quicksilver`: one
 * qs_method_run() of a built-in method, the engine choosing the
 * implementation. Prints "<impl> (<reason>): <frames>x<rows>x<cols>". */
#include <quicksilver.h>
#include <stdio.h>

int main(void) {
  qs_engine *e;
  if (qs_engine_open(&e, NULL)) { /* NULL: defaults and QUICKSILVER_* knobs */
    fprintf(stderr, "%s\n", qs_engine_error(e));
    qs_engine_close(e);
    return 1;
  }
  float px[16 * 16];
  for (int i = 0; i < 16 * 16; i++) px[i] = (float)(i % 16);
  qs_image in = qs_image_wrap(px, 1, 16, 16), out;
  qs_param p[] = {{"magnification_row", 2, NULL},
                  {"magnification_col", 0, "2"}};
  qs_run_request rq = {
      .inputs = &in, .n_inputs = 1, .params = p, .n_params = 2};
  qs_run_report rep;
  int rc = qs_method_run(e, "shift_magnify", &rq, &out, 1, &rep);
  if (rc)
    fprintf(stderr, "%s: %s\n", qs_status_name(rc), qs_engine_error(e));
  else
    printf("%s (%s): %zux%zux%zu\n", rep.impl, rep.reason, out.frames,
           out.rows, out.cols);
  qs_image_free(&out);
  qs_engine_close(e);
  return rc != 0;
}
