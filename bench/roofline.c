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
 * Run it on a quiet machine; it prints the load average it started with. */
#define _GNU_SOURCE /* syscall, for perf_event_open */
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
/* 12 independent 8-wide FMA chains: 192 flops per iteration. */
__attribute__((target("avx2,fma"))) static float fma_loop(long iters) {
  __m256 m = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
#define INIT(k) __m256 a##k = _mm256_set1_ps((float)(k));
#define STEP(k) a##k = _mm256_fmadd_ps(a##k, m, b);
#define SUM(k) s = _mm256_add_ps(s, a##k);
  CHAINS(INIT)
  for (long i = 0; i < iters; i++) {
    CHAINS(STEP)
  }
  __m256 s = _mm256_setzero_ps();
  CHAINS(SUM)
  float out[8];
  _mm256_storeu_ps(out, s);
  return out[0];
#undef INIT
#undef STEP
#undef SUM
}

/* The same with 16-wide AVX-512F FMAs: 384 flops per iteration (built
 * where the compiler has AVX-512, as methods/esrrf/fused_avx512.c). */
#if (defined(__clang__) || __GNUC__ >= 5) && !defined(QS_NO_AVX512)
#define ROOF_AVX512 1
__attribute__((target("avx512f"))) static float fma512_loop(long iters) {
  __m512 m = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
#define INIT(k) __m512 a##k = _mm512_set1_ps((float)(k));
#define STEP(k) a##k = _mm512_fmadd_ps(a##k, m, b);
#define SUM(k) s = _mm512_add_ps(s, a##k);
  CHAINS(INIT)
  for (long i = 0; i < iters; i++) {
    CHAINS(STEP)
  }
  __m512 s = _mm512_setzero_ps();
  CHAINS(SUM)
  float out[16];
  _mm512_storeu_ps(out, s);
  return out[0];
#undef INIT
#undef STEP
#undef SUM
}
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
      pool_for(p, 0, 64, SCHED_DYNAMIC, 1, empty_body, NULL);
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
  range_fn fn;
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
  range_fn fn;
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

static int bench_for(const method_call *c, size_t b, size_t e, range_fn body,
                     void *ctx) {
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
static double rgc_pass_seconds(const fused_variant *pass, const image *in,
                               const double *p, int threads, int repeats,
                               bench_ctx *stages) {
  image out;
  image shaped = {0};
  char err[256];
  if (method_esrrf.shape(in, p, &shaped, err, sizeof err) ||
      image_alloc(&out, shaped.frames, shaped.rows, shaped.cols))
    return 0;
  bench_ctx h = {NULL};
  if (threads > 1 && pool_create(&h.pool, threads)) h.pool = NULL;
  method_call c = {.in = in, .n_in = 1, .out = &out, .n_out = 1, .p = p,
                   .threads = h.pool ? threads : 1,
                   .sched = SCHED_DYNAMIC, .chunk = 4,
                   .parallel_for = bench_for, .err = err,
                   .err_len = sizeof err, .engine_ = &h};
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
  image_free(&out);
  return best;
}

/* ------------------------------------------------- temporal statistics */

typedef struct stat_job {
  esrrf_partial *t;
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

static int pool_call_for(const method_call *c, size_t b, size_t e,
                         range_fn body, void *ctx) {
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
  esrrf_partial t;
  float *map = malloc(px * sizeof *map), *out = malloc(px * sizeof *out);
  pool *pl = NULL;
  if (threads > 1 && pool_create(&pl, threads)) pl = NULL;
  if (!map || !out || esrrf_partial_init(&t, kind, rows_m, cols_m)) {
    free(map);
    free(out);
    if (pl) pool_destroy(pl);
    return;
  }
  for (size_t i = 0; i < px; i++) map[i] = 100 + (float)(i * 37 % 1001) / 7;
  method_call c = {.threads = pl ? threads : 1, .sched = SCHED_STATIC,
                   .parallel_for = pool_call_for, .engine_ = pl};
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
  esrrf_partial_free(&t);
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
  if (repeats < 1 || repeats > 100) repeats = 5;
  g_start = now();
  double load[3] = {0};
  FILE *la = fopen("/proc/loadavg", "r");
  if (la) {
    if (fscanf(la, "%lf %lf %lf", &load[0], &load[1], &load[2]) != 3)
      load[0] = -1;
    fclose(la);
  }

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

  image in;
  char err[512];
  progress("the input (%s) and its samples", kind);
  if (bench_input(kind, frames, rows, cols, &in, err, sizeof err)) {
    fprintf(stderr, "input %s: %s\n", kind, err);
    return 1;
  }
  double px = (double)in.frames * (double)in.rows * (double)in.cols * mag *
              mag;
  double samples =
      (double)in.frames *
      samples_per_frame((int)in.rows, (int)in.cols, (int)mag, radius);
  printf("work: %s %zu x %zu x %zu, M %g, r %g: %.0f output px, %.0f "
         "samples (%.2f per px), %.3g flops by the model (%g per sample)\n",
         kind, in.frames, in.rows, in.cols, mag, radius, px, samples,
         samples / px, samples * MODEL_FLOPS, MODEL_FLOPS);

  engine_options o = {.db_path = ":memory:", .seed = 1};
  engine *e = NULL;
  if (engine_open(&e, &o)) {
    fprintf(stderr, "engine_open: %s\n", e ? engine_error(e) : "");
    engine_close(e);
    image_free(&in);
    return 1;
  }
  /* the implementations: the list given, or every available one */
  char names[32][64];
  int n = 0;
  if (impls) {
    if (strcmp(impls, "-")) n = bench_impl_list(impls, names, 32);
  } else {
    impl_info info[QS_MAX_ESTIMATES];
    size_t ni = 0;
    method_impls(e, "esrrf", info, QS_MAX_ESTIMATES, &ni);
    for (size_t i = 0; i < ni && i < QS_MAX_ESTIMATES && n < 31; i++)
      if (info[i].available && strcmp(info[i].name, "composed") &&
          strncmp(info[i].name, "threaded_", 9))
        snprintf(names[n++], sizeof names[0], "%.63s", info[i].name);
    snprintf(names[n++], sizeof names[0], "auto");
  }
  param pp[] = {{"magnification", mag, NULL}, {"radius", radius, NULL}};
  double best[32] = {0};
  char chosen[32][64] = {{0}};
  for (int r = -1; r < repeats; r++)
    for (int i = 0; i < n; i++) {
      run_request rq = {.inputs = &in, .n_inputs = 1, .params = pp,
                        .n_params = 2,
                        .impl = strcmp(names[i], "auto") ? names[i] : NULL};
      run_report rep;
      image out;
      progress("whole call %s, run %d of %d", names[i], r + 2, repeats + 1);
      double t0 = now();
      if (method_run(e, "esrrf", &rq, &out, 1, &rep)) {
        fprintf(stderr, "esrrf %s: %s\n", names[i], engine_error(e));
        continue;
      }
      double t = now() - t0;
      image_free(&out);
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
                   (4 + 16 * (double)esrrf_partial_slots(st));
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
  engine_close(e);
  image_free(&in);
  return 0;
}
