/* cmd_stream.h — the live stream's run once its arguments are known
 * (cmd_stream.c): `quicksilver stream`, and `run esrrf` on an input too
 * large to read whole (cmd_run.c), which streams it in pieces. */
#ifndef QS_CMD_STREAM_H
#define QS_CMD_STREAM_H

#include <stddef.h>

#include "cli.h"
#include "tiff.h"

typedef struct stream_job {
  const char *in;          /* a TIFF path, or "-" (raw frames on stdin) */
  const char *out, *dir;   /* -o (results appended), --out-dir */
  size_t window, every;    /* frames per timepoint or sliding window; K */
  size_t first;            /* a TIFF input's first frame to read */
  size_t step, channel;    /* a TIFF input whose channel axis is the
                              fastest: frame f is page f·step + channel
                              (step 0 or 1: every page a frame) */
  size_t limit;            /* frames to read at most (SIZE_MAX: all) */
  size_t rows, cols;       /* the frames' size */
  int sliding, u16;        /* a sliding window; stdin frames are uint16 */
  double poll, idle;       /* TIFF input: seconds between looks; seconds
                              without a new page that end the input */
  const qs_param *params;  /* eSRRF's parameters */
  size_t n_params;
  const char *impl;        /* NULL: the engine's choice */
  tiff_info info;          /* a TIFF input's */
  int no_summary;          /* print no summary (its caller reports) */
  const char *label;       /* NULL: `stream`; else the batch command (e.g.
                              "run esrrf") whose input is read in pieces:
                              its summary, not the stream's latencies */
} stream_job;

/* Streams j's input through eSRRF on engine e (d: its method) and writes
 * the results: a CLI status, with every message printed. */
int stream_run(cli *c, qs_engine *e, const qs_method_desc *d,
               const stream_job *j);

#endif
