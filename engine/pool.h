/* pool.h — the engine's thread pool: OpenMP-like parallel loops over index
 * ranges with static, dynamic and guided schedules.
 *
 * One pool per engine, created once. The calling thread takes part in every
 * loop as worker 0. A pool_for called from inside a body (any pool) runs
 * inline on the calling thread, so nesting never deadlocks. Loops from
 * several outside threads on one pool run one after another. */
#ifndef QS_POOL_H
#define QS_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "quicksilver_method.h"

typedef struct pool pool;

/* Creates a pool that runs loops on `threads` threads in all (the caller
 * plus threads - 1 workers); threads is clamped to [1, QS_MAX_THREADS]. */
int pool_create(pool **p, int threads);
void pool_destroy(pool *p);
int pool_threads(const pool *p);

/* Runs body over [begin, end) in chunks handed out by `sched`:
 *  QS_SCHED_STATIC, chunk 0: one contiguous, even block per thread;
 *  QS_SCHED_STATIC, chunk c: chunks of c dealt round robin;
 *  QS_SCHED_DYNAMIC: chunks of max(c, 1) from a shared counter;
 *  QS_SCHED_GUIDED: remaining / (2 * threads) per grab, at least max(c, 1).
 * A body returning nonzero stops the handing out of further chunks; the
 * first such value is returned once every running body has finished. */
int pool_for(pool *p, size_t begin, size_t end, qs_schedule sched,
             size_t chunk, qs_range_fn body, void *ctx);

/* Number of online cores (at least 1). */
int pool_cores(void);

/* CPU nanoseconds used so far by the calling thread and the pool's
 * workers, and by the whole process: their difference over a run is what
 * other threads of the process (an OpenCL runtime's) took meanwhile. */
int64_t pool_cpu_ns(const pool *p);
int64_t pool_process_cpu_ns(void);

#endif
