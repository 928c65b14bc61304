/* stream.h — the live stream's internals that tests read. Internal to the
 * library. */
#ifndef QS_ESRRF_STREAM_H
#define QS_ESRRF_STREAM_H

#include <stdint.h>

#include "quicksilver.h"

/* Bytes the stream's calls moved to and from an OpenCL device so far (the
 * run_report counters of its pushes, and the download of a short last
 * timepoint finished on the device at esrrf_stream_end). */
void esrrf_stream_transfers(const esrrf_stream *s, uint64_t *up,
                            uint64_t *down);

#endif
