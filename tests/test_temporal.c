/* test_temporal.c — eSRRF's temporal statistics (methods/esrrf/temporal.c)
 * against their per-pixel definitions, bit for bit: the fold, merge and
 * result loops are written for the vectoriser (whole groups of pixels,
 * then the rest), which must change no bit of any pixel on any range;
 * the macro-pixel correction on the pool must equal the serial one bit
 * for bit whatever the split and order of its ranges. The definitions
 * below are one pixel at a time, in the order of operations the library
 * documents (temporal.h, quicksilver.h's esrrf_partial). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "methods/esrrf/temporal.h"
#include "qs_test.h"

TestSuite(temporal, .fini = qs_leak_check);

/* ------------------------------------------------------------ inputs */

static uint64_t rng_state;

static double rng_unit(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* Values of every sign and a wide range of magnitudes, with exact zeros
 * and repeats: what makes a changed order of operations show in the last
 * bits. */
static void fill(float *x, size_t n) {
  static const double scale[] = {1e-3, 1, 7, 300, 4e4};
  for (size_t i = 0; i < n; i++) {
    double u = rng_unit();
    if (u < 0.05)
      x[i] = 0;
    else if (u < 0.1 && i > 0)
      x[i] = x[i - 1];
    else
      x[i] = (float)((rng_unit() - 0.3) * scale[(size_t)(u * 5) % 5]);
  }
}

/* ------------------------------------------- per-pixel definitions */

/* Frame n (0-based) of value v added to pixel state m. */
static void def_add(int kind, double *m, double v, uint64_t n) {
  if (kind == TEMPORAL_AVG) {
    m[0] = n == 0 ? v : m[0] + v;
  } else if (kind == TEMPORAL_VAR) {
    if (n == 0) {
      m[0] = v;
      m[1] = 0;
      return;
    }
    double delta = v - m[0];
    m[0] = m[0] + delta / (double)(n + 1);
    m[1] = m[1] + delta * (v - m[0]);
  } else {
    if (n == 0) {
      m[0] = v;
      m[1] = m[2] = m[3] = 0;
      return;
    }
    double y = v - m[0];
    m[1] = m[1] + y;
    m[2] = m[2] + m[3] * y;
    m[3] = y;
  }
}

static void def_merge(int kind, double *m, const double *q, double na,
                      double nb) {
  double n = na + nb;
  if (kind == TEMPORAL_AVG) {
    m[0] = m[0] + q[0];
  } else if (kind == TEMPORAL_VAR) {
    double delta = q[0] - m[0];
    m[0] = m[0] + delta * (nb / n);
    m[1] = m[1] + (q[1] + delta * delta * (na * nb / n));
  } else {
    double d = q[0] - m[0];
    m[2] = m[2] +
           (m[3] * d + q[2] + d * (2 * q[1] - q[3]) + (nb - 1) * d * d);
    m[1] = m[1] + (q[1] + nb * d);
    m[3] = q[3] + d;
  }
}

static float def_result(int kind, const double *m, double n) {
  if (kind == TEMPORAL_AVG) return (float)(m[0] / n);
  if (kind == TEMPORAL_VAR) return (float)(m[1] / n);
  double mu = m[1] / n;
  double s = m[2] - mu * (2 * m[1] - m[3]) + (n - 1) * mu * mu;
  return (float)(s / (n - 1));
}

/* ------------------------------------------------------------- fold */

#define PX 37 /* odd: every range below ends in a partial group */
#define FRAMES 9

/* Ranges that split [0, PX) at points that are not multiples of any
 * vector width, plus empty and one-pixel ranges. */
static const size_t CUTS[] = {0, 0, 1, 6, 6, 19, 30, PX};
#define N_CUTS (sizeof CUTS / sizeof *CUTS)

static void add_in_pieces(qs_esrrf_partial *p, const float *x, uint64_t n) {
  for (size_t c = 0; c + 1 < N_CUTS; c++)
    temporal_add(p, x, n, CUTS[c], CUTS[c + 1]);
}

static void expect_same_bits(const void *got, const void *want, size_t bytes,
                             const char *what, int kind, size_t at) {
  cr_assert(memcmp(got, want, bytes) == 0, "%s, statistic %d, step %zu: "
            "the bits differ from the per-pixel definition", what, kind, at);
}

Test(temporal, fold_and_result_equal_the_definition_bit_for_bit) {
  for (int kind = TEMPORAL_AVG; kind < TEMPORAL_NONE; kind++) {
    rng_state = 0x9e3779b97f4a7c15u + (uint64_t)kind;
    size_t k = qs_esrrf_partial_slots(kind);
    qs_esrrf_partial p;
    cr_assert_eq(qs_esrrf_partial_init(&p, kind, 1, PX), QS_OK);
    double ref[PX * 4];
    float x[PX], out[PX], want[PX];
    for (uint64_t n = 0; n < FRAMES; n++) {
      fill(x, PX);
      add_in_pieces(&p, x, n);
      p.n = n + 1;
      for (size_t i = 0; i < PX; i++) def_add(kind, ref + i * k, x[i], n);
      expect_same_bits(p.data, ref, PX * k * sizeof(double), "fold", kind,
                       (size_t)n);
      if (kind == TEMPORAL_TAC2 && n == 0) continue;
      memset(out, 0xff, sizeof out);
      for (size_t c = 0; c + 1 < N_CUTS; c++)
        temporal_result(&p, out, CUTS[c], CUTS[c + 1]);
      for (size_t i = 0; i < PX; i++)
        want[i] = def_result(kind, ref + i * k, (double)(n + 1));
      expect_same_bits(out, want, sizeof out, "result", kind, (size_t)n);
    }
    qs_esrrf_partial_free(&p);
  }
}

Test(temporal, merge_equals_the_definition_bit_for_bit) {
  for (int kind = TEMPORAL_AVG; kind < TEMPORAL_NONE; kind++)
    for (uint64_t split = 2; split < FRAMES - 1; split += 3) {
      rng_state = 0x2545f4914f6cdd1du + split + (uint64_t)kind;
      size_t k = qs_esrrf_partial_slots(kind);
      qs_esrrf_partial a, b;
      cr_assert_eq(qs_esrrf_partial_init(&a, kind, 1, PX), QS_OK);
      cr_assert_eq(qs_esrrf_partial_init(&b, kind, 1, PX), QS_OK);
      float x[PX];
      for (uint64_t f = 0; f < FRAMES; f++) {
        fill(x, PX);
        qs_esrrf_partial *to = f < split ? &a : &b;
        cr_assert_eq(qs_esrrf_partial_add(to, x, 1), QS_OK);
      }
      double ref[PX * 4];
      memcpy(ref, a.data, PX * k * sizeof(double));
      for (size_t i = 0; i < PX; i++)
        def_merge(kind, ref + i * k, b.data + i * k, (double)a.n,
                  (double)b.n);
      for (size_t c = 0; c + 1 < N_CUTS; c++)
        temporal_merge(&a, &b, CUTS[c], CUTS[c + 1]);
      expect_same_bits(a.data, ref, PX * k * sizeof(double), "merge", kind,
                       (size_t)split);
      qs_esrrf_partial_free(&a);
      qs_esrrf_partial_free(&b);
    }
}

Test(temporal, a_partial_is_not_merged_into_itself) {
  qs_esrrf_partial p;
  float x[PX];
  rng_state = 7;
  fill(x, PX);
  cr_assert_eq(qs_esrrf_partial_init(&p, TEMPORAL_VAR, 1, PX), QS_OK);
  cr_assert_eq(qs_esrrf_partial_add(&p, x, 1), QS_OK);
  double before[2 * PX];
  memcpy(before, p.data, sizeof before);
  cr_expect_eq(qs_esrrf_partial_merge(&p, &p), QS_EINVAL);
  cr_expect_eq(p.n, 1);
  cr_expect(memcmp(before, p.data, sizeof before) == 0);
  qs_esrrf_partial_free(&p);
}

/* ------------------------------------------- macro-pixel correction */

/* The definition: phase sums in map order (macro-pixel rows, columns),
 * each term divided by the number of macro-pixels, summed in float; a
 * pixel divided by its phase's mean unless that mean is 0. */
static void def_mpc(float *map, size_t rows_m, size_t cols_m, size_t m) {
  float corr[TEMPORAL_MAX_MAG * TEMPORAL_MAX_MAG] = {0};
  size_t rows = rows_m / m, cols = cols_m / m;
  float blocks = (float)(int)(rows * cols);
  for (size_t ry = 0; ry < rows; ry++)
    for (size_t rx = 0; rx < cols; rx++)
      for (size_t y = 0; y < m; y++)
        for (size_t x = 0; x < m; x++)
          corr[y * m + x] += map[(ry * m + y) * cols_m + rx * m + x] / blocks;
  for (size_t y = 0; y < rows_m; y++)
    for (size_t x = 0; x < cols_m; x++) {
      float c = corr[(y % m) * m + x % m];
      if (c != 0) map[y * cols_m + x] /= c;
    }
}

typedef int (*pool_for)(const qs_method_call *c, size_t b, size_t e,
                        qs_range_fn body, void *ctx);

/* Pools that run a loop's items in a different split and order than the
 * serial loop: one item at a time from the last, or two uneven halves with
 * the second first. */
static int for_reversed(const qs_method_call *c, size_t b, size_t e,
                        qs_range_fn body, void *ctx) {
  (void)c;
  for (size_t i = e; i > b; i--) {
    int rc = body(ctx, i - 1, i, (int)(i % 2));
    if (rc) return rc;
  }
  return 0;
}

static int for_halves(const qs_method_call *c, size_t b, size_t e,
                      qs_range_fn body, void *ctx) {
  (void)c;
  size_t mid = b + (e - b) / 3;
  int rc = body(ctx, mid, e, 1);
  return rc ? rc : body(ctx, b, mid, 0);
}

Test(temporal, mpc_equals_the_definition_serial_and_on_any_split) {
  static const int mags[] = {1, 2, 3, 5, 8, 13};
  static const size_t shape[][2] = {{1, 1}, {3, 7}, {6, 2}, {5, 11}};
  pool_for pools[] = {for_reversed, for_halves};
  for (size_t mi = 0; mi < sizeof mags / sizeof *mags; mi++)
    for (size_t si = 0; si < sizeof shape / sizeof *shape; si++) {
      size_t m = (size_t)mags[mi];
      size_t rows_m = shape[si][0] * m, cols_m = shape[si][1] * m;
      size_t px = rows_m * cols_m;
      float *in = malloc(px * sizeof *in), *want = malloc(px * sizeof *in),
            *got = malloc(px * sizeof *in);
      cr_assert(in && want && got);
      rng_state = 0xabcdef12345u + mi * 31 + si;
      fill(in, px);
      /* Where there are two phases, phase (0, 1) gets mean exactly 0
       * from non-zero pixels (v, −v in consecutive macro-pixels, a last
       * odd one 0): those pixels must be left as they are. */
      if (m > 1) {
        size_t k = 0, count = px / (m * m);
        float v = 0;
        for (size_t y = 0; y < rows_m; y += m)
          for (size_t x = 1; x < cols_m; x += m, k++) {
            v = k % 2 ? -v : k + 1 == count ? 0 : 1.5f + (float)k;
            in[y * cols_m + x] = v;
          }
      }
      memcpy(want, in, px * sizeof *in);
      def_mpc(want, rows_m, cols_m, m);
      memcpy(got, in, px * sizeof *in);
      temporal_mpc(got, rows_m, cols_m, (int)m);
      cr_assert(memcmp(got, want, px * sizeof *in) == 0,
                "mpc M %zu, %zu x %zu: serial differs from the definition",
                m, rows_m, cols_m);
      for (size_t k = 0; k < 2; k++) {
        qs_method_call c = {.threads = 2, .parallel_for = pools[k]};
        memcpy(got, in, px * sizeof *in);
        cr_assert_eq(temporal_mpc_on(&c, got, rows_m, cols_m, (int)m), 0);
        cr_assert(memcmp(got, want, px * sizeof *in) == 0,
                  "mpc M %zu, %zu x %zu, pool %zu: differs from serial", m,
                  rows_m, cols_m, k);
      }
      /* from a source into another image (a device's mapped result into
       * the caller's): the same bits, the source untouched; serially (no
       * call) and on a pool; magnification 0 copies */
      float *src = malloc(px * sizeof *in);
      cr_assert(src);
      for (size_t k = 0; k < 3; k++) {
        qs_method_call c = {.threads = 2, .parallel_for = pools[k % 2]};
        memcpy(src, in, px * sizeof *in);
        memset(got, 0xff, px * sizeof *in); /* NaN: a pixel left unwritten */
        cr_assert_eq(temporal_mpc_from(k < 2 ? &c : NULL, src, got, rows_m,
                                       cols_m, (int)m),
                     0);
        cr_assert(memcmp(got, want, px * sizeof *in) == 0 &&
                      memcmp(src, in, px * sizeof *in) == 0,
                  "mpc M %zu, %zu x %zu into another image (%zu): differs "
                  "or changed its source",
                  m, rows_m, cols_m, k);
        memset(got, 0xff, px * sizeof *in);
        cr_assert_eq(temporal_mpc_from(k < 2 ? &c : NULL, src, got, rows_m,
                                       cols_m, 0),
                     0);
        cr_assert(memcmp(got, in, px * sizeof *in) == 0,
                  "magnification 0 is not a copy (%zu x %zu)", rows_m,
                  cols_m);
      }
      free(src);
      free(in);
      free(want);
      free(got);
    }
}

/* ------------------------------------------------- several partials */

/* Enough pixels for several of temporal_window's tiles (1024 pixels),
 * cut at points that are not multiples of a tile or of any vector width,
 * and ranges across a tile's end. */
#define WPX 2601
static const size_t WCUTS[] = {0, 0, 1, 3, 1000, 1027, 2048, 2049, WPX};
#define N_WCUTS (sizeof WCUTS / sizeof *WCUTS)
#define MAX_PARTS 6

/* n partials of `kind` over WPX pixels, part j holding 1 + (j·5 + seed) %
 * 3 frames (uneven runs), the frames filled from the test's generator. */
static void make_parts(int kind, qs_esrrf_partial *p, size_t n,
                       uint64_t seed) {
  float x[WPX];
  rng_state = 0x853c49e6748fea9bu + seed * 977 + (uint64_t)kind;
  for (size_t j = 0; j < n; j++) {
    cr_assert_eq(qs_esrrf_partial_init(&p[j], kind, 1, WPX), QS_OK);
    size_t frames = 1 + (j * 5 + seed) % 3;
    for (size_t f = 0; f < frames; f++) {
      fill(x, WPX);
      cr_assert_eq(qs_esrrf_partial_add(&p[j], x, 1), QS_OK);
    }
  }
}

static void free_parts(qs_esrrf_partial *p, size_t n) {
  for (size_t j = 0; j < n; j++)
    qs_esrrf_partial_free(&p[j]);
}

/* The sequential reference: the parts merged one after another into an
 * empty partial with the public call, then the statistic. */
static void sequential_window(int kind, const qs_esrrf_partial *p, size_t n,
                              float *want) {
  qs_esrrf_partial m;
  cr_assert_eq(qs_esrrf_partial_init(&m, kind, 1, WPX), QS_OK);
  for (size_t j = 0; j < n; j++)
    cr_assert_eq(qs_esrrf_partial_merge(&m, &p[j]), QS_OK);
  cr_assert_eq(qs_esrrf_partial_finish(&m, 1, 0, want), QS_OK);
  qs_esrrf_partial_free(&m);
}

/* temporal_window on uneven ranges gives the bits of the sequential
 * merges (one part: its own result; two: one merge) and of the per-pixel
 * definition, and changes no part. */
Test(temporal, window_equals_the_sequential_merges_bit_for_bit) {
  for (int kind = TEMPORAL_AVG; kind < TEMPORAL_NONE; kind++)
    for (size_t n = 1; n <= MAX_PARTS; n++) {
      size_t k = qs_esrrf_partial_slots(kind);
      qs_esrrf_partial p[MAX_PARTS];
      const qs_esrrf_partial *order[MAX_PARTS];
      make_parts(kind, p, n, n);
      uint64_t total = 0;
      for (size_t j = 0; j < n; j++) {
        order[j] = &p[j];
        total += p[j].n;
      }
      if (kind == TEMPORAL_TAC2 && total < 2) {
        free_parts(p, n);
        continue;
      }
      double *before = malloc(n * WPX * k * sizeof *before);
      cr_assert_not_null(before);
      for (size_t j = 0; j < n; j++)
        memcpy(before + j * WPX * k, p[j].data, WPX * k * sizeof(double));
      float got[WPX], want[WPX], def[WPX];
      memset(got, 0xff, sizeof got);
      for (size_t c = 0; c + 1 < N_WCUTS; c++)
        temporal_window(order, n, got, WCUTS[c], WCUTS[c + 1]);
      sequential_window(kind, p, n, want);
      expect_same_bits(got, want, sizeof got, "window vs merges", kind, n);
      for (size_t i = 0; i < WPX; i++) {
        double m[4];
        memcpy(m, p[0].data + i * k, k * sizeof *m);
        double na = (double)p[0].n;
        for (size_t j = 1; j < n; j++) {
          def_merge(kind, m, p[j].data + i * k, na, (double)p[j].n);
          na += (double)p[j].n;
        }
        def[i] = def_result(kind, m, na);
      }
      expect_same_bits(got, def, sizeof got, "window vs definition", kind, n);
      for (size_t j = 0; j < n; j++)
        cr_expect(memcmp(before + j * WPX * k, p[j].data,
                         WPX * k * sizeof(double)) == 0,
                  "statistic %d, %zu parts: part %zu changed", kind, n, j);
      free(before);
      free_parts(p, n);
    }
}

/* temporal_suffixes on uneven ranges: every part j >= 1 becomes its
 * suffix by the per-pixel definition (merged from the newest back), bit
 * for bit; part 0 is unchanged; the statistic of all the parts is within
 * rounding of the sequential merges (their bits for one or two parts,
 * where the orders coincide); and a window taken from a suffix and the
 * merge of newer parts (the stream's two stacks) is too. */
Test(temporal, suffixes_equal_the_definition_and_the_window) {
  for (int kind = TEMPORAL_AVG; kind < TEMPORAL_NONE; kind++)
    for (size_t n = 1; n <= MAX_PARTS; n++) {
      size_t k = qs_esrrf_partial_slots(kind);
      qs_esrrf_partial p[MAX_PARTS];
      qs_esrrf_partial *parts[MAX_PARTS];
      make_parts(kind, p, n, 7 + n);
      uint64_t total = 0;
      for (size_t j = 0; j < n; j++) {
        parts[j] = &p[j];
        total += p[j].n;
      }
      if (kind == TEMPORAL_TAC2 && total < 2) {
        free_parts(p, n);
        continue;
      }
      double *ref = malloc(n * WPX * k * sizeof *ref);
      cr_assert_not_null(ref);
      for (size_t j = 0; j < n; j++)
        memcpy(ref + j * WPX * k, p[j].data, WPX * k * sizeof(double));
      uint64_t cnt[MAX_PARTS + 1] = {0}; /* cnt[j]: frames of suffix j */
      for (size_t j = n; j-- > 0;) cnt[j] = cnt[j + 1] + p[j].n;
      for (size_t j = n - 1; j-- > 1;)
        for (size_t i = 0; i < WPX; i++)
          def_merge(kind, ref + (j * WPX + i) * k,
                    ref + ((j + 1) * WPX + i) * k, (double)p[j].n,
                    (double)cnt[j + 1]);
      float got[WPX], want[WPX];
      memset(got, 0xff, sizeof got);
      sequential_window(kind, p, n, want);
      for (size_t c = N_WCUTS - 1; c > 0; c--) /* ranges in any order */
        temporal_suffixes(parts, n, got, WCUTS[c - 1], WCUTS[c]);
      for (size_t j = 0; j < n; j++) {
        cr_expect(memcmp(ref + j * WPX * k, p[j].data,
                         WPX * k * sizeof(double)) == 0,
                  "statistic %d, %zu parts: part %zu is not its %s", kind,
                  n, j, j ? "suffix" : "original");
        if (j) p[j].n = cnt[j];
      }
      float peak = 0;
      for (size_t i = 0; i < WPX; i++)
        if (fabsf(want[i]) > peak) peak = fabsf(want[i]);
      cr_assert_gt(peak, 0);
      if (n <= 2)
        expect_same_bits(got, want, sizeof got, "suffixes' window", kind, n);
      for (size_t i = 0; i < WPX; i++)
        cr_assert_leq(fabsf(got[i] - want[i]), 1e-6f * peak,
                      "statistic %d, %zu parts, pixel %zu: %.9g, merges "
                      "%.9g", kind, n, i, got[i], want[i]);
      /* the window of suffix 1 and a newer part (part 0's frames moved
       * to the end: a block in place of the oldest) */
      if (n >= 2 && !(kind == TEMPORAL_TAC2 && p[1].n + p[0].n < 2)) {
        const qs_esrrf_partial *two[2] = {&p[1], &p[0]};
        temporal_window(two, 2, got, 0, WPX);
        qs_esrrf_partial m;
        cr_assert_eq(qs_esrrf_partial_init(&m, kind, 1, WPX), QS_OK);
        cr_assert_eq(qs_esrrf_partial_merge(&m, &p[1]), QS_OK);
        cr_assert_eq(qs_esrrf_partial_merge(&m, &p[0]), QS_OK);
        cr_assert_eq(qs_esrrf_partial_finish(&m, 1, 0, want), QS_OK);
        expect_same_bits(got, want, sizeof got, "suffix + newer", kind, n);
        qs_esrrf_partial_free(&m);
      }
      free(ref);
      free_parts(p, n);
    }
}

/* ------------------------------------- the stream's two stacks, whole */

/* A live stream's sliding window of 10 frames updated every 2 (five host
 * blocks: the window taken from the two stacks through two flips and
 * every count of new blocks between them) and of 3 updated every 1 (blocks
 * of one frame): every result within 1e-6 of the peak of a batch eSRRF
 * of exactly its window's frames, for every statistic, macro-pixel
 * correction on. */
static void stream_windows_match_batch(qs_engine *e, const qs_image *st,
                                       size_t window, size_t every) {
  size_t px = st->rows * st->cols;
  for (int t = TEMPORAL_AVG; t < TEMPORAL_NONE; t++) {
    qs_param p[7] = {
        {"magnification", 2, NULL},         {"radius", 1.5, NULL},
        {"sensitivity", 1, NULL},           {"intensity_weighting", 1, NULL},
        {"frames_per_timepoint", 0, NULL},  {"temporal", t, NULL},
        {"macro_pixel_correction", 1, NULL}};
    qs_esrrf_stream_options o = {.rows = st->rows,
                                 .cols = st->cols,
                                 .params = p,
                                 .n_params = 7,
                                 .sliding = 1,
                                 .window = window,
                                 .every = every,
                                 .impl = "fused",
                                 .max_pending = 2};
    qs_esrrf_stream *s;
    char err[512] = "";
    cr_assert_eq(qs_esrrf_stream_open(e, &o, &s, err, sizeof err), QS_OK, "%s",
                 err);
    size_t results = 0;
    for (size_t f = 0; f < st->frames; f++) {
      qs_image one = qs_image_wrap(st->data + f * px, 1, st->rows, st->cols);
      cr_assert_eq(qs_esrrf_stream_push(s, &one), QS_OK, "%s",
                   qs_esrrf_stream_error(s));
      qs_image got;
      qs_esrrf_stream_result info;
      int have;
      cr_assert_eq(qs_esrrf_stream_pop(s, &got, &info, &have), QS_OK);
      cr_assert_eq(have, f + 1 >= window && (f + 1) % every == 0,
                   "frame %zu", f);
      if (!have) continue;
      cr_assert_eq(info.first, f + 1 - window);
      qs_image in = qs_image_wrap(st->data + info.first * px, window, st->rows,
                                  st->cols);
      qs_run_request rq = {.inputs = &in,
                           .n_inputs = 1,
                           .params = p,
                           .n_params = 7,
                           .impl = "fused"};
      qs_image ref;
      cr_assert_eq(qs_method_run(e, "esrrf", &rq, &ref, 1, NULL), QS_OK, "%s",
                   qs_engine_error(e));
      cr_assert_eq(ref.rows * ref.cols, got.rows * got.cols);
      double diff = 0, peak = 0;
      for (size_t i = 0; i < ref.rows * ref.cols; i++) {
        double d = fabs((double)got.data[i] - (double)ref.data[i]);
        if (!(d <= diff)) diff = d;
        if (fabs((double)ref.data[i]) > peak) peak = fabs((double)ref.data[i]);
      }
      cr_assert_gt(peak, 0);
      cr_expect_leq(diff, 1e-6 * peak,
                    "window %zu every %zu, temporal %d, result %zu: %.3g of "
                    "%.3g", window, every, t, results, diff, peak);
      results++;
      qs_image_free(&ref);
      qs_image_free(&got);
    }
    cr_expect_eq(results, (st->frames - window) / every + 1);
    qs_esrrf_stream_close(s);
  }
}

Test(temporal, stream_windows_from_two_stacks_equal_the_batch) {
  qs_engine *e;
  qs_engine_options eo = {
      .db_path = ":memory:", .threads = 2, .seed = 1, .no_opencl = 1};
  cr_assert_eq(qs_engine_open(&e, &eo), QS_OK);
  qs_image st;
  cr_assert_eq(qs_image_alloc(&st, 25, 7, 6), QS_OK);
  rng_state = 0x51afd7ed558ccd1du;
  for (size_t i = 0; i < 25 * 7 * 6; i++)
    st.data[i] = (float)(200 + 50 * rng_unit());
  stream_windows_match_batch(e, &st, 10, 2);
  stream_windows_match_batch(e, &st, 3, 1);
  qs_image_free(&st);
  qs_engine_close(e);
}
