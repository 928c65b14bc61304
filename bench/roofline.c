/* roofline.c — eSRRF against this machine's own limits. Measured, never
 * asserted.
 *
 *   roofline [FRAMES ROWS COLS [MAG [RADIUS [REPEATS [INPUT [IMPLS
 *            [PASSES]]]]]]]
 *
 * defaults 20 256 256 5 1.5 5 sim; INPUT is `sim` (quicksilver simulate's
 * defaults: blinking emitters, camera offset 100, background, shot and read
 * noise), `spots` (noiseless, bench/esrrf's old input) or a TIFF stack
 * (its first FRAMES frames; ROWS COLS 0 take its size). IMPLS is a comma
 * list of esrrf implementations (default: every available CPU one, opencl
 * ones and auto; `-`: none). PASSES is a comma list of the RGC passes to
 * time alone (fused, fused_vec, fused_avx2, fused_avx512; default all).
 * Progress goes to stderr as each step starts; the report to stdout.
 *
 * 1. The machine: the core clock from the CPU's cycle counter over the
 *    thread's CPU time (perf_event_open; not printed where there is no
 *    counter), single-precision FMA throughput with the widest vectors
 *    the CPU and the build have (AVX-512F 16-wide, else AVX2 8-wide, with
 *    twelve independent accumulators; else SSE multiply+add), said by
 *    name, on one core and on all cores (with AVX-512, the AVX2 peak
 *    too, for reference), and a stream triad a = b + s·c over
 *    arrays far beyond the caches (bytes: 12 per element, write-allocate
 *    not counted).
 * 2. The work, counted exactly: every output pixel inside the margins of
 *    every frame visits the window taps in bounds with 0 < d <= tSO; that
 *    count is the samples. Model (fused_vec.h): 15 flops per sample
 *    (a multiply-add counted as two); per output pixel n_c samples, 4 bytes
 *    written and (×M intensity) 4 read, the grid and tables from L1/L2;
 *    the rest of a call (Roberts cross, Catmull-Rom grid and ×M image,
 *    temporal fold) is O(R·C) + O(R·M·C·M) streaming work.
 * 3. Per implementation, whole calls through the engine (one warm-up, then
 *    REPEATS interleaved across implementations, min taken): output pixels
 *    per second, samples per second, cycles per sample per core, GFLOP/s by
 *    the model and percent of the all-core peak.
 * 4. The RGC pass alone (the part the vector work targets: a variant's
 *    per-frame work after the Roberts cross, i.e. the half-pixel grid and
 *    the pass over the output rows) for the scalar fused and the vector
 *    passes, on one thread and on all cores, against the peak of as many
 *    cores, with the CPU seconds the pass took over all threads (robust to
 *    other load: equal CPU seconds on one and on all cores mean the work
 *    itself scales, and a wall-time shortfall is threads not running or
 *    waiting); and where the time of those calls goes,
 *    loop by loop (each parallel loop's wall time, its bodies' time per
 *    worker and the rest: hand-over, waking, the wait for the last chunk),
 *    with the cost of an empty parallel loop measured alone.
 * 5. The temporal statistics alone (methods/esrrf/temporal.c: the
 *    streaming part of a call), per statistic on the output plane of the
 *    shape, one thread and all cores: the fold of one frame (seconds, and
 *    GB/s against the triad by the bytes it must move per pixel: the map
 *    read, 4, plus the double state read and written, 16·slots) and, once
 *    per timepoint, the result and the macro-pixel correction
 *    (temporal_mpc_on); compare with section 3's whole call.
 *
 * OpenCL mode:
 *
 *   roofline opencl [DEVICE [FRAMES ROWS COLS [MAG [RADIUS [REPEATS
 *                   [INPUT [TEMPORAL]]]]]]]
 *
 * (DEVICE: a device slug or part of one, `-` for the first GPU, else the
 * first device; defaults as above, TEMPORAL avg.) The device's own FP32
 * FMA peak and copy bandwidth from two small kernels (cl_measure), then
 * eSRRF forced onto that device (warm-up, then REPEATS runs), every
 * kernel launch's device time read from its event, and per kernel the
 * work by the written model (cl_model): achieved GFLOP/s and GB/s and
 * their percentages of the measured peak and copy bandwidth. On PoCL it
 * runs like on any device.
 *
 * Run it on a quiet machine; it prints the load average it started with. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* syscall, for perf_event_open */
#endif
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__linux__)
#include <errno.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "bench/input.h"
#include "engine/pool.h"
#include "methods/esrrf/fused.h"
#include "methods/esrrf/temporal.h"
#include "methods/methods.h"
#include "quicksilver.h"
#include "quicksilver_esrrf.h"

#define MODEL_FLOPS 15.0

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* A progress line on stderr (the report is stdout): what runs now, with
 * the seconds since the start. */
static double g_start;
static void progress(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "roofline %7.1f s: ", now() - g_start);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* ------------------------------------------------------------ machine */

typedef struct peak_job {
  long iters;
  int isa;
  double flops;
  float sink;
  pthread_barrier_t *bar;
} peak_job;

/* The instruction sets the peak loops use, widest last. */
enum { ISA_SSE, ISA_AVX2, ISA_AVX512 };
static const char *const ISA_NAME[] = {"SSE mul+add 4-wide",
                                       "AVX2 FMA 8-wide",
                                       "AVX-512F FMA 16-wide"};

/* Twelve independent chains, named so that they live in registers (an
 * array indexed in a loop ends up in memory at -O2). */
#define CHAINS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
/* The loop `name`: twelve independent FMA chains of the vector type VT
 * (WIDTH floats, intrinsics of prefix P: both defined around each use),
 * 24·WIDTH flops per iteration, compiled for the instruction sets `isa`. */
#define PASTE_(a, b) a##b
#define PASTE(a, b) PASTE_(a, b)
#define PI(op) PASTE(P, op) /* P's intrinsic op */
#define FMA_LOOP(name, isa, WIDTH)                                           \
  __attribute__((target(isa))) static float name(long iters) {              \
    VT m = PI(_set1_ps)(0.999999f), b = PI(_set1_ps)(1e-7f);                  \
    CHAINS(FMA_INIT)                                                         \
    for (long i = 0; i < iters; i++) {                                       \
      CHAINS(FMA_STEP)                                                       \
    }                                                                        \
    VT s = PI(_setzero_ps)();                                                 \
    CHAINS(FMA_SUM)                                                          \
    float out[WIDTH];                                                        \
    PI(_storeu_ps)(out, s);                                                   \
    return out[0];                                                           \
  }
#define FMA_INIT(k) VT a##k = PI(_set1_ps)((float)(k));
#define FMA_STEP(k) a##k = PI(_fmadd_ps)(a##k, m, b);
#define FMA_SUM(k) s = PI(_add_ps)(s, a##k);

/* 8-wide AVX2 FMAs: 192 flops per iteration. */
#define VT __m256
#define P _mm256
FMA_LOOP(fma_loop, "avx2,fma", 8)
#undef VT
#undef P

/* 16-wide AVX-512F FMAs: 384 flops per iteration (built where the
 * compiler has AVX-512, as methods/esrrf/fused_avx512.c). */
#if (defined(__clang__) || __GNUC__ >= 5) && !defined(QS_NO_AVX512)
#define ROOF_AVX512 1
#define VT __m512
#define P _mm512
FMA_LOOP(fma512_loop, "avx512f", 16)
#undef VT
#undef P
#endif
#endif

/* The widest loop this build and CPU can run. */
static int widest_isa(void) {
#if defined(__x86_64__) && defined(__GNUC__)
  __builtin_cpu_init();
#if ROOF_AVX512
  if (__builtin_cpu_supports("avx512f")) return ISA_AVX512;
#endif
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return ISA_AVX2;
#endif
  return ISA_SSE;
}

/* 12 independent 4-wide multiply and add chains: 96 flops per iteration
 * (the baseline's best, no FMA). */
typedef float v4 __attribute__((vector_size(16)));
static float muladd_loop(long iters) {
  v4 m = {0}, b = {0};
  m += 0.999999f;
  b += 1e-7f;
#define INIT(k) v4 a##k = (v4){0} + (float)(k);
#define STEP(k) a##k = a##k * m + b;
#define SUM(k) s += a##k;
  CHAINS(INIT)
  for (long i = 0; i < iters; i++) {
    CHAINS(STEP)
  }
  v4 s = {0};
  CHAINS(SUM)
  return s[0];
#undef INIT
#undef STEP
#undef SUM
}

static void *peak_thread(void *arg) {
  peak_job *j = arg;
  pthread_barrier_wait(j->bar);
#if defined(__x86_64__) && defined(__GNUC__)
#if ROOF_AVX512
  if (j->isa == ISA_AVX512) {
    j->sink = fma512_loop(j->iters);
    j->flops = 384.0 * (double)j->iters;
    return NULL;
  }
#endif
  if (j->isa == ISA_AVX2) {
    j->sink = fma_loop(j->iters);
    j->flops = 192.0 * (double)j->iters;
    return NULL;
  }
#endif
  j->sink = muladd_loop(j->iters);
  j->flops = 96.0 * (double)j->iters;
  return NULL;
}

/* GFLOP/s of `threads` threads each running the throughput loop of isa. */
static double peak_gflops(int threads, int isa) {
  double best = 0;
  for (int rep = 0; rep < 3; rep++) {
    pthread_t th[256];
    peak_job jobs[256];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)threads + 1);
    for (int t = 0; t < threads; t++) {
      jobs[t] = (peak_job){.iters = 20000000, .isa = isa, .bar = &bar};
      pthread_create(&th[t], NULL, peak_thread, &jobs[t]);
    }
    pthread_barrier_wait(&bar);
    double t0 = now(), flops = 0;
    for (int t = 0; t < threads; t++) {
      pthread_join(th[t], NULL);
      flops += jobs[t].flops + (jobs[t].sink == 12345.f);
    }
    double g = flops / (now() - t0) / 1e9;
    pthread_barrier_destroy(&bar);
    if (g > best) best = g;
  }
  return best;
}

/* The core clock in GHz while this thread runs the peak loop of isa: the
 * CPU's cycle counter (user cycles of this thread, perf_event_open) over
 * the thread's own CPU time, so other load on the machine does not bias
 * it. 0, and why, where the kernel gives no cycle counter (a container
 * or VM without one, perf_event_paranoid > 2): then no clock is printed
 * rather than a guess (a chain of dependent adds, the former method, is
 * folded by the renamer of recent cores and read 19 GHz on a 2.6 GHz
 * Xeon). */
static double clock_ghz(int isa, char *why, size_t why_len) {
#if defined(__linux__)
  struct perf_event_attr a;
  memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_HARDWARE;
  a.config = PERF_COUNT_HW_CPU_CYCLES;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
  if (fd < 0) {
    snprintf(why, why_len, "no cycle counter: perf_event_open: %s",
             strerror(errno));
    return 0;
  }
  double best = 0;
  for (int rep = 0; rep < 3; rep++) {
    struct timespec c0, c1;
    uint64_t n0 = 0, n1 = 0;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    if (read(fd, &n0, sizeof n0) != sizeof n0) break;
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, 1);
    peak_job j = {.iters = 5000000, .isa = isa, .bar = &bar};
    peak_thread(&j);
    pthread_barrier_destroy(&bar);
    if (read(fd, &n1, sizeof n1) != sizeof n1) break;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    double sec = (double)(c1.tv_sec - c0.tv_sec) +
                 (double)(c1.tv_nsec - c0.tv_nsec) * 1e-9;
    double g = sec > 0 ? (double)(n1 - n0) / sec / 1e9 : 0;
    if (g > best) best = g;
  }
  close(fd);
  if (best <= 0) snprintf(why, why_len, "the cycle counter reads nothing");
  return best;
#else
  snprintf(why, why_len, "no cycle counter on this system");
  (void)isa;
  return 0;
#endif
}

typedef struct triad_job {
  float *a, *b, *c;
  size_t n;
  pthread_barrier_t *bar;
} triad_job;

static void *triad_thread(void *arg) {
  triad_job *j = arg;
  pthread_barrier_wait(j->bar);
  for (size_t i = 0; i < j->n; i++) j->a[i] = j->b[i] + 3.0f * j->c[i];
  return NULL;
}

/* Triad GB/s over 3 arrays of n floats split among `threads` threads. */
static double triad_gbs(int threads, size_t n) {
  float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b),
        *c = malloc(n * sizeof *c);
  if (!a || !b || !c) {
    free(a);
    free(b);
    free(c);
    return 0;
  }
  for (size_t i = 0; i < n; i++) a[i] = b[i] = c[i] = (float)(i & 7);
  double best = 0;
  for (int rep = 0; rep < 5; rep++) {
    pthread_t th[256];
    triad_job jobs[256];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, (unsigned)threads + 1);
    size_t per = n / (size_t)threads;
    for (int t = 0; t < threads; t++) {
      size_t o = (size_t)t * per;
      jobs[t] = (triad_job){a + o, b + o, c + o,
                            t == threads - 1 ? n - o : per, &bar};
      pthread_create(&th[t], NULL, triad_thread, &jobs[t]);
    }
    pthread_barrier_wait(&bar);
    double t0 = now();
    for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
    double g = 12.0 * (double)n / (now() - t0) / 1e9;
    pthread_barrier_destroy(&bar);
    if (g > best) best = g;
  }
  free(a);
  free(b);
  free(c);
  return best;
}

static int empty_body(void *ctx, size_t b, size_t e, int worker) {
  (void)ctx;
  (void)b;
  (void)e;
  (void)worker;
  return QS_OK;
}

/* Microseconds per pool_for with an empty body on `threads` threads, back
 * to back (min over rounds): the cost of a parallel loop's hand-over
 * alone, waking the sleeping workers included. */
static double dispatch_us(int threads) {
  pool *p = NULL;
  if (threads < 2 || pool_create(&p, threads)) return 0;
  double best = 0;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = now();
    for (int k = 0; k < 1000; k++)
      pool_for(p, 0, 64, QS_SCHED_DYNAMIC, 1, empty_body, NULL);
    double us = (now() - t0) * 1e3;
    if (rep == 0 || us < best) best = us;
  }
  pool_destroy(p);
  return best;
}

/* ---------------------------------------------------------------- work */

/* Samples of one frame: window taps in bounds with 0 < d <= tSO, over the
 * output pixels inside the margins (the reference's loop, counted). */
static double samples_per_frame(int rows, int cols, int mag, double radius) {
  rgc_consts k = rgc_consts_make(radius, mag, 1);
  int rm = rows * mag, cm = cols * mag, margin = rgc_margin(k.fwhm, mag);
  int win = k.end - k.start;
  float *dx = malloc((size_t)cm * (size_t)win * sizeof *dx);
  if (!dx) return 0;
  for (int x = 0; x < cm; x++) {
    float c = rgc_center(x, mag);
    int b = (int)(RGC_GM * c);
    for (int i = 0; i < win; i++) {
      float v = (float)(b + k.start + i) / RGC_GM;
      dx[(size_t)x * (size_t)win + (size_t)i] =
          0 < v && v <= cm - 1 ? v - c : NAN;
    }
  }
  double n = 0;
  for (int y = margin; y < rm - margin; y++) {
    float c = rgc_center(y, mag);
    int b = (int)(RGC_GM * c);
    for (int j = 0; j < win; j++) {
      float v = (float)(b + k.start + j) / RGC_GM;
      if (!(0 < v && v <= rm - 1)) continue;
      float dy = v - c;
      for (int x = margin; x < cm - margin; x++)
        for (int i = 0; i < win; i++) {
          float ddx = dx[(size_t)x * (size_t)win + (size_t)i];
          if (isnan(ddx)) continue;
          float d = sqrtf(ddx * ddx + dy * dy);
          n += d != 0 && d <= k.tso;
        }
    }
  }
  free(dx);
  return n;
}

/* ------------------------------------------------------- the RGC pass */

typedef struct timed {
  const fused_variant *real;
  fused_variant wrap;
  const pool *pool;
  double seconds, cpu; /* wall and CPU seconds (all threads) of the pass */
} timed;

static timed *g_timed; /* the one being measured (single-threaded bench) */

static int timed_plan(fused *s) { return g_timed->real->plan(s); }
static void timed_done(fused *s) { g_timed->real->done(s); }
static int timed_frame(fused *s) {
  double t0 = now();
  int64_t c0 = pool_cpu_ns(g_timed->pool);
  int rc = g_timed->real->frame(s);
  g_timed->seconds += now() - t0;
  g_timed->cpu += (double)(pool_cpu_ns(g_timed->pool) - c0) * 1e-9;
  return rc;
}

/* Where the time of a call goes, per parallel loop of the call (told
 * apart by body and index count, in order of first use): wall seconds of
 * the loop, and seconds inside bodies per worker. threads·wall − busy is
 * what the threads spent not working: waking up, waiting for the last
 * chunk, the pool's hand-over. */
#define MAX_STAGES 8
#define MAX_WORKERS 64
typedef struct stage {
  qs_range_fn fn;
  size_t span;
  long calls;
  double wall, busy[MAX_WORKERS];
} stage;

typedef struct bench_ctx {
  pool *pool;
  stage st[MAX_STAGES];
  int n_st;
  double cpu; /* CPU seconds of the timed pass */
} bench_ctx;

typedef struct timed_body {
  qs_range_fn fn;
  void *ctx;
  stage *st;
} timed_body;

static int timed_range(void *ctx, size_t b, size_t e, int worker) {
  const timed_body *t = ctx;
  double t0 = now();
  int rc = t->fn(t->ctx, b, e, worker);
  if (worker < MAX_WORKERS) t->st->busy[worker] += now() - t0;
  return rc;
}

static int bench_for(const qs_method_call *c, size_t b, size_t e,
                     qs_range_fn body, void *ctx) {
  bench_ctx *h = c->engine_;
  stage *st = NULL;
  for (int k = 0; k < h->n_st && !st; k++)
    if (h->st[k].fn == body && h->st[k].span == e - b) st = &h->st[k];
  if (!st && h->n_st < MAX_STAGES) {
    st = &h->st[h->n_st++];
    *st = (stage){.fn = body, .span = e - b};
  }
  if (!st) return h->pool ? pool_for(h->pool, b, e, c->sched, c->chunk,
                                     body, ctx)
                          : body(ctx, b, e, 0);
  timed_body t = {body, ctx, st};
  double t0 = now();
  int rc = b >= e ? QS_OK
       : h->pool ? pool_for(h->pool, b, e, c->sched, c->chunk, timed_range, &t)
                 : timed_range(&t, b, e, 0);
  st->wall += now() - t0;
  st->calls++;
  return rc;
}

/* The stages of the last measured call. */
static void print_stages(const bench_ctx *h, int threads) {
  printf("      the pass: %.4f s CPU over all threads (the CPU time per "
         "unit of work: compare across thread counts)\n", h->cpu);
  for (int k = 0; k < h->n_st; k++) {
    const stage *s = &h->st[k];
    double busy = 0, hi = 0;
    for (int w = 0; w < threads && w < MAX_WORKERS; w++) {
      busy += s->busy[w];
      if (s->busy[w] > hi) hi = s->busy[w];
    }
    printf("      loop %d (%zu indices) x%ld: wall %8.4f s, %6.1f us/loop, "
           "busy %8.4f s (max worker %8.4f), idle %5.1f %%\n",
           k, s->span, s->calls, s->wall, 1e6 * s->wall / (double)s->calls,
           busy, hi, 100 * (1 - busy / (s->wall * threads)));
  }
}

/* Seconds of the RGC pass of `pass` over the whole stack (min of
 * repeats), on `threads` threads (1: inline). */
static double rgc_pass_seconds(const fused_variant *pass, const qs_image *in,
                               const double *p, int threads, int repeats,
                               bench_ctx *stages) {
  qs_image out;
  qs_image shaped = {0};
  char err[256];
  if (method_esrrf.shape(in, p, &shaped, err, sizeof err) ||
      qs_image_alloc(&out, shaped.frames, shaped.rows, shaped.cols))
    return 0;
  bench_ctx h = {NULL};
  if (threads > 1 && pool_create(&h.pool, threads)) h.pool = NULL;
  qs_method_call c = {.in = in,
                      .n_in = 1,
                      .out = &out,
                      .n_out = 1,
                      .p = p,
                      .threads = h.pool ? threads : 1,
                      .sched = QS_SCHED_DYNAMIC,
                      .chunk = 4,
                      .parallel_for = bench_for,
                      .err = err,
                      .err_len = sizeof err,
                      .engine_ = &h};
  timed t = {.real = pass, .pool = h.pool,
             .wrap = {timed_plan, timed_frame, timed_done, pass->intensity}};
  g_timed = &t;
  double best = 0;
  bench_ctx keep = h;
  for (int r = -1; r < repeats; r++) {
    t.seconds = t.cpu = 0;
    h.n_st = 0;
    if (fused_run(&c, &t.wrap)) break;
    if (r >= 0 && (best == 0 || t.seconds < best)) {
      best = t.seconds;
      keep = h;
      keep.cpu = t.cpu;
    }
  }
  if (stages) *stages = keep;
  if (h.pool) pool_destroy(h.pool);
  qs_image_free(&out);
  return best;
}

/* ------------------------------------------------- temporal statistics */

typedef struct stat_job {
  qs_esrrf_partial *t;
  const float *map;
  float *out;
  uint64_t n;
  size_t cols;
} stat_job;

static int stat_add_rows(void *ctx, size_t b, size_t e, int worker) {
  const stat_job *j = ctx;
  (void)worker;
  temporal_add(j->t, j->map, j->n, b * j->cols, e * j->cols);
  return 0;
}

static int stat_result_rows(void *ctx, size_t b, size_t e, int worker) {
  const stat_job *j = ctx;
  (void)worker;
  temporal_result(j->t, j->out, b * j->cols, e * j->cols);
  return 0;
}

static int pool_call_for(const qs_method_call *c, size_t b, size_t e,
                         qs_range_fn body, void *ctx) {
  pool *pl = c->engine_;
  return pl ? pool_for(pl, b, e, c->sched, c->chunk, body, ctx)
            : body(ctx, b, e, 0);
}

/* Section 5 for one statistic on `threads` threads: seconds of the fold
 * of all frames, per frame, of the timepoint's result and of its
 * macro-pixel correction (each the min over repeats). */
static void stat_seconds(int kind, size_t rows_m, size_t cols_m, int mag,
                         size_t frames, int threads, int repeats,
                         double *fold, double *result, double *mpc) {
  *fold = *result = *mpc = 0;
  size_t px = rows_m * cols_m;
  qs_esrrf_partial t;
  float *map = malloc(px * sizeof *map), *out = malloc(px * sizeof *out);
  pool *pl = NULL;
  if (threads > 1 && pool_create(&pl, threads)) pl = NULL;
  if (!map || !out || qs_esrrf_partial_init(&t, kind, rows_m, cols_m)) {
    free(map);
    free(out);
    if (pl) pool_destroy(pl);
    return;
  }
  for (size_t i = 0; i < px; i++) map[i] = 100 + (float)(i * 37 % 1001) / 7;
  qs_method_call c = {.threads = pl ? threads : 1,
                      .sched = QS_SCHED_STATIC,
                      .parallel_for = pool_call_for,
                      .engine_ = pl};
  stat_job j = {.t = &t, .map = map, .out = out, .cols = cols_m};
  for (int r = -1; r < repeats; r++) {
    double t0 = now();
    for (size_t f = 0; f < frames; f++) {
      j.n = f;
      pool_call_for(&c, 0, rows_m, stat_add_rows, &j);
      t.n = f + 1;
    }
    double dt = (now() - t0) / (double)frames;
    if (r >= 0 && (*fold == 0 || dt < *fold)) *fold = dt;
    t0 = now();
    pool_call_for(&c, 0, rows_m, stat_result_rows, &j);
    double t1 = now();
    temporal_mpc_on(&c, out, rows_m, cols_m, mag);
    double t2 = now();
    if (r >= 0 && (*result == 0 || t1 - t0 < *result)) *result = t1 - t0;
    if (r >= 0 && (*mpc == 0 || t2 - t1 < *mpc)) *mpc = t2 - t1;
  }
  qs_esrrf_partial_free(&t);
  free(map);
  free(out);
  if (pl) pool_destroy(pl);
}

/* -------------------------------------------------------------- report */

typedef struct machine {
  double ghz, peak1, peakn, bw1, bwn;
  int cores;
} machine;

static void row(const char *name, double sec, int threads, double px,
                double samples, const machine *m) {
  double peak = threads > 1 ? m->peakn : m->peak1;
  double gflops = samples * MODEL_FLOPS / sec / 1e9;
  char cyc[32] = "     - cyc/smp";
  if (m->ghz > 0)
    snprintf(cyc, sizeof cyc, "%6.2f cyc/smp",
             sec * m->ghz * 1e9 * threads / samples);
  printf("  %-34s %3d  %9.4f s  %8.2f Mpx/s  %8.1f Msmp/s  %s  "
         "%7.2f GFLOP/s  %5.1f %% peak\n",
         name, threads, sec, px / sec / 1e6, samples / sec / 1e6, cyc, gflops,
         100 * gflops / peak);
}


/* The 1, 5 and 15 minute load averages (-1 first where unreadable). */
static void read_load(double load[3]) {
  load[0] = load[1] = load[2] = 0;
  FILE *la = fopen("/proc/loadavg", "r");
  if (!la) return;
  if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
    load[0] = -1;
  fclose(la);
}

/* The input (bench/input.h's kind) into *in and an engine on an
 * in-memory store into *e; 1 with a message on stderr if either fails
 * (nothing left to free). */
static int open_work(const char *kind, size_t frames, size_t rows, size_t cols,
                     qs_image *in, qs_engine **e) {
  char err[512];
  progress("the input (%s) and its samples", kind);
  if (bench_input(kind, frames, rows, cols, in, err, sizeof err)) {
    fprintf(stderr, "input %s: %s\n", kind, err);
    return 1;
  }
  qs_engine_options o = {.db_path = ":memory:", .seed = 1};
  *e = NULL;
  if (qs_engine_open(e, &o)) {
    fprintf(stderr, "qs_engine_open: %s\n", *e ? qs_engine_error(*e) : "");
    qs_engine_close(*e);
    qs_image_free(in);
    return 1;
  }
  return 0;
}

/* ------------------------------------------------------- OpenCL mode */

#if QS_HAVE_OPENCL
#include <dlfcn.h>

#include "cl/clrt.h"
#include "methods/esrrf/cl_stat.h"

/* Every kernel launch of the library goes through this definition (the
 * bench links the static library, whose calls bind to it; the real one is
 * the next in the search order): it keeps each launch's event, so that
 * the device's own start and end of every eSRRF kernel can be read after
 * the call, by kernel name. */
#define CL_MAX_EVENTS 65536
static struct {
  cl_event ev[CL_MAX_EVENTS];
  cl_kernel k[CL_MAX_EVENTS];
  size_t n, lost;
  int on;
} g_launch;

typedef cl_int (*enqueue_fn)(cl_command_queue, cl_kernel, cl_uint,
                             const size_t *, const size_t *, const size_t *,
                             cl_uint, const cl_event *, cl_event *);

CL_API_ENTRY cl_int CL_API_CALL clEnqueueNDRangeKernel(
    cl_command_queue q, cl_kernel k, cl_uint dim, const size_t *off,
    const size_t *gws, const size_t *lws, cl_uint nw, const cl_event *wl,
    cl_event *ev) {
  static enqueue_fn real;
  if (!real) {
    void *f = dlsym(RTLD_NEXT, "clEnqueueNDRangeKernel");
    memcpy(&real, &f, sizeof real);
    if (!real) return CL_INVALID_OPERATION;
  }
  cl_event mine = NULL;
  cl_int rc = real(q, k, dim, off, gws, lws, nw, wl, ev ? ev : &mine);
  cl_event got = ev ? (rc == CL_SUCCESS ? *ev : NULL) : mine;
  if (rc != CL_SUCCESS || !got) return rc;
  if (g_launch.on && g_launch.n < CL_MAX_EVENTS) {
    if (ev) clRetainEvent(got); /* the caller releases its own */
    clRetainKernel(k);
    g_launch.ev[g_launch.n] = got;
    g_launch.k[g_launch.n++] = k;
  } else {
    g_launch.lost += g_launch.on;
    if (!ev) clReleaseEvent(got);
  }
  return rc;
}

/* Device seconds per kernel name of the launches kept since the last
 * call, and how many launches; releases them. */
#define CL_KERNELS 12
typedef struct kstat {
  char name[64];
  double sec;
  long launches;
} kstat;

static int launches_take(kstat *ks, int max) {
  int n = 0;
  for (size_t i = 0; i < g_launch.n; i++) {
    char name[64] = "";
    clGetKernelInfo(g_launch.k[i], CL_KERNEL_FUNCTION_NAME, sizeof name,
                    name, NULL);
    clWaitForEvents(1, &g_launch.ev[i]);
    double t = cl_event_seconds(g_launch.ev[i]);
    int j = 0;
    while (j < n && strcmp(ks[j].name, name)) j++;
    if (j == n && n < max) {
      ks[n] = (kstat){.launches = 0};
      snprintf(ks[n++].name, sizeof ks[0].name, "%s", name);
    }
    if (j < n) {
      ks[j].sec += t;
      ks[j].launches++;
    }
    clReleaseEvent(g_launch.ev[i]);
    clReleaseKernel(g_launch.k[i]);
  }
  g_launch.n = 0;
  return n;
}

/* The device's limits, measured with two small kernels. peak: 8
 * independent FMA chains per work-item of the device's native float vector
 * width W (a GPU's is 1; a CPU device's, e.g. PoCL's, its SIMD width,
 * which its compiler does not find across work-items in a loop like this):
 * 16·W flops per step, the grid grown until a launch takes >= 50 ms;
 * copy: float4 loads and stores
 * between two buffers (bytes read + written). Both the best of 5 by the
 * launch's events. */
static const char *const ROOF_CL =
    "#define FMA_STEP(a) a = fma(a, m, b)\n"
    "__kernel void roof_fma(__global float *out, float mm, float bb, int n) "
    "{\n"
    "  VT m = mm, b = bb, x = (VT)((float)get_global_id(0) * 1e-9f);\n"
    "  VT a0 = x, a1 = x + 1, a2 = x + 2, a3 = x + 3, a4 = x + 4,\n"
    "     a5 = x + 5, a6 = x + 6, a7 = x + 7;\n"
    "  for (int i = 0; i < n; i++) {\n"
    "    FMA_STEP(a0); FMA_STEP(a1); FMA_STEP(a2); FMA_STEP(a3);\n"
    "    FMA_STEP(a4); FMA_STEP(a5); FMA_STEP(a6); FMA_STEP(a7);\n"
    "  }\n"
    "  VT s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));\n"
    "  float t = 0;\n"
    "  for (int k = 0; k < W; k++) t += ((float *)&s)[k];\n"
    "  out[get_global_id(0)] = t;\n"
    "}\n"
    "__kernel void roof_copy(__global const float4 *a, __global float4 *b) "
    "{\n"
    "  size_t i = get_global_id(0);\n"
    "  b[i] = a[i];\n"
    "}\n";

typedef struct cl_peak {
  double gflops, gbs;
  int width; /* floats per chain (the native vector width) */
} cl_peak;

/* Runs kernel k over `global` items 5 times; the least device seconds. */
static double cl_best(cl_command_queue q, cl_kernel k, size_t global) {
  double best = 0;
  for (int r = 0; r < 5; r++) {
    cl_event ev = NULL;
    int was = g_launch.on;
    g_launch.on = 0;
    cl_int rc = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL,
                                       &ev);
    g_launch.on = was;
    if (rc != CL_SUCCESS) return 0;
    clWaitForEvents(1, &ev);
    double t = cl_event_seconds(ev);
    clReleaseEvent(ev);
    if (t > 0 && (best == 0 || t < best)) best = t;
  }
  return best;
}

static int cl_measure(cldev *d, cl_peak *pk, char *err, size_t len) {
  cl_context ctx;
  cl_command_queue q;
  cl_program prog;
  int rc = cldev_queue(d, &ctx, &q, err, len);
  cl_uint w = 1;
  clGetDeviceInfo(cldev_id(d), CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT, sizeof w,
                  &w, NULL);
  if (w != 2 && w != 4 && w != 8 && w != 16) w = 1;
  char opt[64];
  snprintf(opt, sizeof opt, "-DW=%u -DVT=float%.0u", w, w > 1 ? w : 0);
  pk->width = (int)w;
  if (!rc)
    rc = cldev_program_text(d, "roofline", ROOF_CL, opt, &prog, NULL, err,
                            len);
  if (rc) return rc;
  const cldev_info *info = cldev_about(d);
  cl_int e = CL_SUCCESS;
  cl_kernel kf = clCreateKernel(prog, "roof_fma", &e);
  cl_kernel kc = e == CL_SUCCESS ? clCreateKernel(prog, "roof_copy", &e)
                                 : NULL;
  /* the copy: 256 MiB a buffer on a GPU, 64 MiB on others (host memory),
   * within the largest allocation */
  size_t bytes = info->is_gpu ? (size_t)256 << 20 : (size_t)64 << 20;
  if (info->max_alloc && bytes > info->max_alloc / 2)
    bytes = (size_t)(info->max_alloc / 2) & ~(size_t)63;
  size_t items = (size_t)info->compute_units * 1024;
  if (items < 4096) items = 4096;
  cl_mem out = NULL, a = NULL, b = NULL;
  if (e == CL_SUCCESS)
    rc = cldev_buffer(d, CL_MEM_READ_WRITE, ((size_t)64 << 20), NULL,
                      "roofline out", &out, err, len);
  if (!rc && e == CL_SUCCESS)
    rc = cldev_buffer(d, CL_MEM_READ_WRITE, bytes, NULL, "roofline a", &a,
                      err, len);
  if (!rc && e == CL_SUCCESS)
    rc = cldev_buffer(d, CL_MEM_READ_WRITE, bytes, NULL, "roofline b", &b,
                      err, len);
  if (!rc && e == CL_SUCCESS) {
    float m = 0.999999f, bb = 1e-7f;
    cl_int n = 1024;
    e |= clSetKernelArg(kf, 0, sizeof out, &out);
    e |= clSetKernelArg(kf, 1, sizeof m, &m);
    e |= clSetKernelArg(kf, 2, sizeof bb, &bb);
    e |= clSetKernelArg(kf, 3, sizeof n, &n);
    e |= clSetKernelArg(kc, 0, sizeof a, &a);
    e |= clSetKernelArg(kc, 1, sizeof b, &b);
    /* fill a once (its contents do not matter, only that it is there) */
    float zero = 0;
    if (e == CL_SUCCESS)
      e = clEnqueueFillBuffer(q, a, &zero, sizeof zero, 0, bytes, 0, NULL,
                              NULL);
    clFinish(q);
  }
  if (!rc && e == CL_SUCCESS) {
    double t = 0;
    /* grow the grid (at most 64 MiB of outputs) until a launch is long
     * enough to time */
    while ((t = cl_best(q, kf, items)) > 0 && t < 0.05 &&
           items * 2 <= ((size_t)16 << 20))
      items *= 2;
    pk->gflops = t > 0 ? (double)items * 1024 * 16 * w / t / 1e9 : 0;
    double tc = cl_best(q, kc, bytes / 16);
    pk->gbs = tc > 0 ? 2.0 * (double)bytes / tc / 1e9 : 0;
    progress("peak kernel: %zu work-items x 1024 steps of 8 x %u-wide "
             "FMAs, %.4f s; copy %zu MiB, %.4f s", items, w, t, bytes >> 20,
             tc);
  }
  if (e != CL_SUCCESS && !rc)
    rc = cl_status(e, "running the roofline kernels", err, len);
  if (kf) clReleaseKernel(kf);
  if (kc) clReleaseKernel(kc);
  cldev_release(d, out);
  cldev_release(d, a);
  cldev_release(d, b);
  return rc;
}

/* The written work model of eSRRF's device kernels
 * (methods/esrrf/esrrf.cl, esrrf_stat.cl) for one call of F frames of
 * R x C at magnification M:
 * flops counting a multiply-add as two, bytes each kernel must move to or
 * from device memory at least (every input read once, every output
 * written once; re-reads that caches serve are not counted, so bytes/s
 * is a lower bound on the traffic).
 *   esrrf_gvsum  per (grid row, input column), (2R+1)·C: 4 row taps, each
 *                both Roberts gradients (3 flops each) and two
 *                multiply-adds: 40 flops; reads the frame (4·R·C), writes
 *                two planes (8·(2R+1)·C).
 *   esrrf_grid   per grid slot, (2R+1)·(2C+1): 4 column taps of both
 *                planes (16) and the unit vector (|G|², 1/|G|, two
 *                products: 7): 23 flops; reads 8·(2R+1)·C, writes
 *                8·(2R+1)·(2C+1).
 *   esrrf_magv   per (output row, input column), R·M·C: 4 taps, 8 flops;
 *                reads 4·R·C, writes 4·R·M·C.
 *   esrrf_rgc    per sample (counted exactly, as the CPU's section 2):
 *                15 flops (fused_vec.h's model, which esrrf.cl shares);
 *                per output pixel the intensity's 4 taps and the finish,
 *                10; reads the grid (8·(2R+1)·(2C+1)) and the intensity
 *                column sums (4·R·M·C), writes the map (4·R·M·C·M).
 *   esrrf_fold   per map pixel: a compensated sum (4 flops), for VAR and
 *                TAC2 a difference and a compensated product (+8); reads
 *                each map (4), reads and writes the state once a launch
 *                (8·slots a pixel).
 *   esrrf_stat_finish  per output pixel and timepoint: 8 flops; reads the
 *                state (4·slots), writes the image (4). */
typedef struct kmodel {
  const char *name;
  double flops, bytes;
} kmodel;

static void cl_model(const char *name, long launches, double F, double R,
                     double C, double M, double samples, int stat,
                     double *flops, double *bytes) {
  double plane = R * M * C * M, slots = (double)cl_stat_slots(stat);
  *flops = *bytes = 0;
  if (!strcmp(name, "esrrf_gvsum")) {
    *flops = F * (2 * R + 1) * C * 40;
    *bytes = F * (4 * R * C + 8 * (2 * R + 1) * C);
  } else if (!strcmp(name, "esrrf_grid")) {
    *flops = F * (2 * R + 1) * (2 * C + 1) * 23;
    *bytes = F * (8 * (2 * R + 1) * C + 8 * (2 * R + 1) * (2 * C + 1));
  } else if (!strcmp(name, "esrrf_magv")) {
    *flops = F * R * M * C * 8;
    *bytes = F * (4 * R * C + 4 * R * M * C);
  } else if (!strcmp(name, "esrrf_rgc")) {
    *flops = samples * MODEL_FLOPS + F * plane * 10;
    *bytes = F * (8 * (2 * R + 1) * (2 * C + 1) + 4 * R * M * C + 4 * plane);
  } else if (!strcmp(name, "esrrf_fold")) {
    *flops = F * plane * (stat == TEMPORAL_AVG ? 4 : 12);
    *bytes = F * plane * 4 + (double)launches * plane * 8 * slots;
  } else if (!strcmp(name, "esrrf_stat_finish")) {
    *flops = (double)launches * plane * 8;
    *bytes = (double)launches * plane * (4 * slots + 4);
  }
}

/* roofline opencl [DEVICE [FRAMES ROWS COLS [MAG [RADIUS [REPEATS [INPUT
 * [TEMPORAL]]]]]]]: DEVICE a device slug or part of one (default: the
 * first GPU, else the first device). */
static int cl_main(int argc, char **argv) {
  const char *want = argc > 1 && strcmp(argv[1], "-") ? argv[1] : NULL;
  size_t frames = argc > 2 ? strtoul(argv[2], NULL, 10) : 20;
  size_t rows = argc > 3 ? strtoul(argv[3], NULL, 10) : 256;
  size_t cols = argc > 4 ? strtoul(argv[4], NULL, 10) : 256;
  double mag = argc > 5 ? atof(argv[5]) : 5;
  double radius = argc > 6 ? atof(argv[6]) : 1.5;
  int repeats = argc > 7 ? atoi(argv[7]) : 5;
  const char *kind = argc > 8 ? argv[8] : "sim";
  const char *temporal = argc > 9 ? argv[9] : "avg";
  if (repeats < 1 || repeats > 100) repeats = 5;
  int stat = !strcmp(temporal, "var")    ? TEMPORAL_VAR
             : !strcmp(temporal, "tac2") ? TEMPORAL_TAC2
                                         : TEMPORAL_AVG;
  char err[512] = "";
  clrt *rt = NULL;
  if (clrt_open(&rt, 0, NULL, err, sizeof err)) {
    fprintf(stderr, "roofline opencl: %s\n", err);
    return 1;
  }
  cldev *d = NULL;
  for (size_t i = 0; i < clrt_count(rt) && !d; i++) {
    const cldev_info *inf = cldev_about(clrt_device(rt, i));
    if (want ? strstr(inf->slug, want) != NULL : inf->is_gpu)
      d = clrt_device(rt, i);
  }
  if (!d && !want && clrt_count(rt)) d = clrt_device(rt, 0);
  if (!d) {
    fprintf(stderr, "roofline opencl: no device%s%s (%s)\n",
            want ? " matching " : "", want ? want : "",
            clrt_count(rt) ? "see `quicksilver devices`" : clrt_why(rt));
    clrt_close(rt);
    return 1;
  }
  const cldev_info *info = cldev_about(d);
  double load[3];
  read_load(load);
  printf("device: opencl:%s (%s, %s; %s, %u compute units, %u MHz, %.1f "
         "GiB), load %.2f %.2f %.2f\n",
         info->slug, info->name, info->platform, info->is_gpu ? "GPU" : "not a GPU",
         info->compute_units, info->clock_mhz,
         (double)info->global_mem / (1 << 30), load[0], load[1], load[2]);
  progress("the device's FP32 FMA peak and copy bandwidth");
  cl_peak pk = {0};
  if (cl_measure(d, &pk, err, sizeof err)) {
    fprintf(stderr, "roofline opencl: %s\n", err);
    clrt_close(rt);
    return 1;
  }
  printf("  peak FP32 FMA: %.1f GFLOP/s (%d-wide chains); copy: %.1f GB/s "
         "(read + written; best of 5 by events)\n", pk.gflops, pk.width,
         pk.gbs);
  clrt_close(rt);

  qs_image in;
  qs_engine *e;
  if (open_work(kind, frames, rows, cols, &in, &e)) return 1;
  double samples = (double)in.frames *
                   samples_per_frame((int)in.rows, (int)in.cols, (int)mag,
                                     radius);
  printf("work: %s %zu x %zu x %zu, M %g, r %g, %s: %.0f samples\n", kind,
         in.frames, in.rows, in.cols, mag, radius, temporal, samples);
  char impl[96];
  snprintf(impl, sizeof impl, "opencl:%s", info->slug);
  qs_param pp[] = {{"magnification", mag, NULL},
                   {"radius", radius, NULL},
                   {"temporal", 0, temporal}};
  kstat best[CL_KERNELS];
  int nb = 0;
  double best_dev = 0, best_wall = 0;
  for (int r = -1; r < repeats; r++) {
    progress("esrrf on %s, run %d of %d", impl, r + 2, repeats + 1);
    qs_run_request rq = {.inputs = &in,
                         .n_inputs = 1,
                         .params = pp,
                         .n_params = 3,
                         .impl = impl};
    qs_run_report rep;
    qs_image out;
    g_launch.on = 1;
    double t0 = now();
    int rc = qs_method_run(e, "esrrf", &rq, &out, 1, &rep);
    double wall = now() - t0;
    g_launch.on = 0;
    kstat ks[CL_KERNELS];
    int n = launches_take(ks, CL_KERNELS);
    if (rc) {
      fprintf(stderr, "esrrf %s: %s\n", impl, qs_engine_error(e));
      break;
    }
    qs_image_free(&out);
    double dev = 0;
    for (int k = 0; k < n; k++) dev += ks[k].sec;
    if (r >= 0 && (best_dev == 0 || dev < best_dev)) {
      best_dev = dev;
      best_wall = wall;
      nb = n;
      memcpy(best, ks, sizeof ks);
    }
  }
  if (g_launch.lost)
    printf("  (%zu launches past the bench's table were not timed)\n",
           g_launch.lost);
  printf("esrrf on %s, the run with the least kernel time of %d: wall %.4f "
         "s, kernels %.4f s (%.1f frames/s by the kernels)\n",
         impl, repeats, best_wall, best_dev,
         best_dev > 0 ? (double)in.frames / best_dev : 0);
  printf("  %-18s %8s %10s %10s %9s %8s %9s %8s\n", "kernel", "launches",
         "seconds", "GFLOP", "GFLOP/s", "% peak", "GB/s", "% copy");
  for (int k = 0; k < nb; k++) {
    double fl, by;
    cl_model(best[k].name, best[k].launches, (double)in.frames,
             (double)in.rows, (double)in.cols, mag, samples, stat, &fl, &by);
    double s = best[k].sec;
    if (fl <= 0 && by <= 0) {
      printf("  %-18s %8ld %10.5f %10s (no model)\n", best[k].name,
             best[k].launches, s, "-");
      continue;
    }
    double gf = s > 0 ? fl / s / 1e9 : 0, gb = s > 0 ? by / s / 1e9 : 0;
    printf("  %-18s %8ld %10.5f %10.3f %9.1f %7.1f%% %9.1f %7.1f%%\n",
           best[k].name, best[k].launches, s, fl / 1e9, gf,
           pk.gflops > 0 ? 100 * gf / pk.gflops : 0, gb,
           pk.gbs > 0 ? 100 * gb / pk.gbs : 0);
  }
  qs_engine_close(e);
  qs_image_free(&in);
  return 0;
}
#endif

int main(int argc, char **argv) {
  size_t frames = argc > 1 ? strtoul(argv[1], NULL, 10) : 20;
  size_t rows = argc > 2 ? strtoul(argv[2], NULL, 10) : 256;
  size_t cols = argc > 3 ? strtoul(argv[3], NULL, 10) : 256;
  double mag = argc > 4 ? atof(argv[4]) : 5, radius = argc > 5 ? atof(argv[5])
                                                            : 1.5;
  int repeats = argc > 6 ? atoi(argv[6]) : 5;
  const char *kind = argc > 7 ? argv[7] : "sim";
  const char *impls = argc > 8 ? argv[8] : NULL;
  const char *pass_list =
      argc > 9 ? argv[9] : "fused,fused_vec,fused_avx2,fused_avx512";
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc > 1 && !strcmp(argv[1], "opencl")) {
    g_start = now();
#if QS_HAVE_OPENCL
    return cl_main(argc - 1, argv + 1);
#else
    fprintf(stderr, "roofline opencl: this build has no OpenCL\n");
    return 1;
#endif
  }
  if (repeats < 1 || repeats > 100) repeats = 5;
  g_start = now();
  double load[3];
  read_load(load);

  machine m = {.cores = pool_cores()};
  int isa = widest_isa();
  char why_clock[160] = "";
  progress("the machine: clock, %s peak on 1 and %d cores, triad",
           ISA_NAME[isa], m.cores);
  m.ghz = clock_ghz(isa, why_clock, sizeof why_clock);
  m.peak1 = peak_gflops(1, isa);
  m.peakn = peak_gflops(m.cores, isa);
  double avx2_1 = isa > ISA_AVX2 ? peak_gflops(1, ISA_AVX2) : 0;
  m.bw1 = triad_gbs(1, (size_t)1 << 24);
  m.bwn = triad_gbs(m.cores, (size_t)1 << 24);
  printf("machine: load %.2f %.2f %.2f, %d cores, ", load[0], load[1],
         load[2], m.cores);
  if (m.ghz > 0)
    printf("clock %.2f GHz (cycle counter over thread CPU time, under the "
           "peak loop)\n", m.ghz);
  else
    printf("clock not measured (%s)\n", why_clock);
  printf("  peak SP (%s, the widest this CPU and build have): %.1f GFLOP/s 1 "
         "core", ISA_NAME[isa], m.peak1);
  if (m.ghz > 0) printf(" (%.1f flop/cycle)", m.peak1 / m.ghz);
  printf(", %.1f GFLOP/s %d cores; %% of peak below is of this\n", m.peakn,
         m.cores);
  if (avx2_1 > 0)
    printf("  (%s: %.1f GFLOP/s 1 core, %.2fx less)\n", ISA_NAME[ISA_AVX2],
           avx2_1, m.peak1 / avx2_1);
  printf("  triad: %.1f GB/s 1 core, %.1f GB/s %d cores\n", m.bw1, m.bwn,
         m.cores);
  printf("  pool: %.1f us per empty parallel loop on %d threads\n",
         dispatch_us(m.cores), m.cores);

  qs_image in;
  qs_engine *e;
  if (open_work(kind, frames, rows, cols, &in, &e)) return 1;
  double px = (double)in.frames * (double)in.rows * (double)in.cols * mag *
              mag;
  double samples =
      (double)in.frames *
      samples_per_frame((int)in.rows, (int)in.cols, (int)mag, radius);
  printf("work: %s %zu x %zu x %zu, M %g, r %g: %.0f output px, %.0f "
         "samples (%.2f per px), %.3g flops by the model (%g per sample)\n",
         kind, in.frames, in.rows, in.cols, mag, radius, px, samples,
         samples / px, samples * MODEL_FLOPS, MODEL_FLOPS);

  /* the implementations: the list given, or every available one */
  char names[32][64];
  int n = 0;
  if (impls) {
    if (strcmp(impls, "-")) n = bench_impl_list(impls, names, 32);
  } else {
    qs_impl_info info[QS_MAX_ESTIMATES];
    size_t ni = 0;
    qs_method_impls(e, "esrrf", info, QS_MAX_ESTIMATES, &ni);
    for (size_t i = 0; i < ni && i < QS_MAX_ESTIMATES && n < 31; i++)
      if (info[i].available && strcmp(info[i].name, "composed") &&
          strncmp(info[i].name, "threaded_", 9))
        snprintf(names[n++], sizeof names[0], "%.63s", info[i].name);
    snprintf(names[n++], sizeof names[0], "auto");
  }
  qs_param pp[] = {{"magnification", mag, NULL}, {"radius", radius, NULL}};
  double best[32] = {0};
  char chosen[32][64] = {{0}};
  for (int r = -1; r < repeats; r++)
    for (int i = 0; i < n; i++) {
      qs_run_request rq = {.inputs = &in,
                           .n_inputs = 1,
                           .params = pp,
                           .n_params = 2,
                           .impl = strcmp(names[i], "auto") ? names[i] : NULL};
      qs_run_report rep;
      qs_image out;
      progress("whole call %s, run %d of %d", names[i], r + 2, repeats + 1);
      double t0 = now();
      if (qs_method_run(e, "esrrf", &rq, &out, 1, &rep)) {
        fprintf(stderr, "esrrf %s: %s\n", names[i], qs_engine_error(e));
        continue;
      }
      double t = now() - t0;
      qs_image_free(&out);
      snprintf(chosen[i], sizeof chosen[0], "%.63s", rep.impl);
      if (r >= 0 && (best[i] == 0 || t < best[i])) best[i] = t;
    }
  printf("whole calls (min of %d, interleaved; model flops over the call's "
         "time):\n  %-34s %3s\n",
         repeats, "implementation", "thr");
  for (int i = 0; i < n; i++) {
    if (best[i] == 0) continue;
    char label[160];
    snprintf(label, sizeof label, "%.63s%s%.63s", names[i],
             strcmp(names[i], "auto") ? "" : " -> ",
             strcmp(names[i], "auto") ? "" : chosen[i]);
    int thr = strcmp(names[i], "serial") ? m.cores : 1;
    row(label, best[i], thr, px, samples, &m);
  }

  /* The RGC pass alone. */
  double p[16];
  for (size_t k = 0; k < method_esrrf.n_params; k++)
    p[k] = method_esrrf.params[k].def;
  p[P_MAG] = mag;
  p[P_RADIUS] = radius;
  struct {
    const char *name, *key;
    const fused_variant *pass;
  } passes[] = {{"fused (scalar)", "fused", &fused_scalar_pass},
                {"fused_vec", "fused_vec", fused_vec_pass()},
                {"fused_avx2", "fused_avx2",
                 isa >= ISA_AVX2 ? fused_avx2_pass() : NULL},
                {"fused_avx512", "fused_avx512",
                 isa >= ISA_AVX512 ? fused_avx512_pass() : NULL}};
  printf("RGC pass alone (min of %d; %% of the peak of as many cores):\n",
         repeats);
  for (size_t k = 0; k < sizeof passes / sizeof *passes; k++) {
    if (!passes[k].pass || !bench_in_list(pass_list, passes[k].key))
      continue;
    int thr[2] = {1, m.cores};
    for (int t = 0; t < 2; t++) {
      bench_ctx st;
      progress("the RGC pass of %s on %d thread(s), %d runs", passes[k].key,
               thr[t], repeats + 1);
      double s =
          rgc_pass_seconds(passes[k].pass, &in, p, thr[t], repeats, &st);
      if (s > 0) row(passes[k].name, s, thr[t], px, samples, &m);
      if (s > 0) print_stages(&st, thr[t]);
    }
  }

  /* The temporal statistics alone. */
  size_t rows_m = in.rows * (size_t)mag, cols_m = in.cols * (size_t)mag;
  static const char *const stat_names[] = {"avg", "var", "tac2"};
  printf("temporal statistics alone on %zu x %zu (min of %d; fold: per "
         "frame over the %zu frames, GB/s by the bytes it must move; "
         "result and correction: once per timepoint):\n",
         rows_m, cols_m, repeats, in.frames);
  for (int st = TEMPORAL_AVG; st < TEMPORAL_NONE; st++) {
    double bytes = (double)(rows_m * cols_m) *
                   (4 + 16 * (double)qs_esrrf_partial_slots(st));
    int thr[2] = {1, m.cores};
    for (int k = 0; k < 2; k++) {
      double fold, res, mpc;
      progress("temporal %s on %d thread(s)", stat_names[st], thr[k]);
      stat_seconds(st, rows_m, cols_m, (int)mag, in.frames, thr[k],
                   repeats, &fold, &res, &mpc);
      if (fold <= 0) continue;
      double bw = thr[k] > 1 ? m.bwn : m.bw1;
      printf("  %-5s %3d  fold %8.3f ms/frame  %6.2f GB/s  %5.1f %% triad"
             "   result %7.3f ms  correction %7.3f ms\n",
             stat_names[st], thr[k], 1e3 * fold, bytes / fold / 1e9,
             100 * bytes / fold / 1e9 / bw, 1e3 * res, 1e3 * mpc);
    }
  }
  qs_engine_close(e);
  qs_image_free(&in);
  return 0;
}
