/* push.c — one qs_esrrf_stream_push traced (tests/walk/walk.py): a stream of
 * timepoints of 2 frames on 24 x 20 frames (M 2), its first timepoint
 * pushed untraced (the first push chooses the implementation and opens
 * the plan's state), then the next two frames: the first of them pushed
 * untraced, the one that completes the timepoint traced.
 *
 *   push TRACE_FILE [IMPL]   (IMPL: as run_request.impl; default the
 *                             engine's choice, calibration off) */
#include <stdio.h>
#include <stdlib.h>

#include "quicksilver.h"
#if __has_include("quicksilver_esrrf.h")
#include "quicksilver_esrrf.h" /* before it, the stream was in quicksilver.h */
#endif

void walk_begin(void);
int walk_end(const char *path);

int main(int argc, char **argv) {
  if (argc < 2) return fprintf(stderr, "usage: push TRACE [IMPL]\n"), 2;
  qs_engine_options eo = {.db_path = ":memory:",
                          .no_opencl = 1,
                          .no_calibration = 1,
                          .seed = 1,
                          .threads = 2};
  qs_engine *e = NULL;
  if (qs_engine_open(&e, &eo)) return fprintf(stderr, "qs_engine_open\n"), 1;
  qs_param p[] = {{"magnification", 2, NULL}};
  qs_esrrf_stream_options o = {.rows = 24,
                               .cols = 20,
                               .params = p,
                               .n_params = 1,
                               .window = 2,
                               .impl = argc > 2 ? argv[2] : NULL};
  qs_esrrf_stream *s = NULL;
  char err[512];
  if (qs_esrrf_stream_open(e, &o, &s, err, sizeof err))
    return fprintf(stderr, "%s\n", err), 1;
  static float px[24 * 20];
  for (int i = 0; i < 24 * 20; i++)
    px[i] = 100.0f + (float)((i * 37) % 50);
  qs_image f = qs_image_wrap(px, 1, 24, 20);
  int rc = 0;
  for (int k = 0; k < 3 && !rc; k++)
    rc = qs_esrrf_stream_push(s, &f);
  if (!rc) {
    walk_begin();
    rc = qs_esrrf_stream_push(s, &f);
    if (walk_end(argv[1])) rc = rc ? rc : 1;
  }
  if (rc)
    fprintf(stderr, "push: %s\n", qs_esrrf_stream_error(s));
  else
    printf("%s\n", qs_esrrf_stream_impl(s));
  qs_esrrf_stream_close(s);
  qs_engine_close(e);
  return rc != 0;
}
