/* temporal.c — frame-by-frame temporal statistics in double, their exact
 * merge, the macro-pixel correction (see temporal.h for the definitions),
 * and the public esrrf_partial calls built on them. */
#include <stdlib.h>
#include <string.h>

#include "quicksilver.h"
#include "temporal.h"

size_t qs_esrrf_partial_slots(int temporal) {
  static const size_t slots[] = {1, 2, 4};
  return temporal >= TEMPORAL_AVG && temporal < TEMPORAL_NONE
             ? slots[temporal]
             : 0;
}

/* The loops below are written for the auto-vectoriser of the build's -O2
 * (GCC's "very cheap" cost model since GCC 12), which vectorises a loop
 * only when the vector code replaces the scalar loop whole: no runtime
 * alias check and no scalar epilogue. So every range runs as a whole
 * number of TEMPORAL_VF-pixel groups and then the few pixels left
 * (TEMPORAL_GROUPS), arrays of one type that never overlap are restrict
 * parameters (partials never overlap: qs_esrrf_partial_merge refuses a
 * partial merged into itself), and frame 0 starts the statistic in a loop
 * of its own instead of a select per pixel. Vectorising changes no bit:
 * every pixel gets the same IEEE double operations in the same order (the
 * build contracts nothing to FMA), several pixels at a time.
 * tests/test_temporal.c holds the per-pixel definitions and compares bit
 * for bit. With GCC 12 every add and merge loop and the avg result
 * vectorise (check: -fopt-info-vec); the var and tac2 results do not. */
#define TEMPORAL_VF 4

/* Runs the statement after e (using size_t i) for i in [b, e): first the
 * whole groups of TEMPORAL_VF as a loop of groups around a loop of
 * exactly TEMPORAL_VF pixels (a count the vectoriser sees is a multiple
 * of the vector width: a flat loop to a masked count is taken only in
 * some contexts), then the rest. */
#define TEMPORAL_GROUPS(i, b, e, ...)                                    \
  do {                                                                  \
    size_t tg_b = (b), tg_e = (e);                                      \
    size_t tg_n = (tg_e - tg_b) / TEMPORAL_VF;                          \
    for (size_t tg_k = 0; tg_k < tg_n; tg_k++)                          \
      for (size_t tg_l = 0; tg_l < TEMPORAL_VF; tg_l++) {               \
        size_t i = tg_b + tg_k * TEMPORAL_VF + tg_l;                    \
        __VA_ARGS__;                                                    \
      }                                                                 \
    for (size_t i = tg_b + tg_n * TEMPORAL_VF; i < tg_e; i++) {         \
      __VA_ARGS__;                                                      \
    }                                                                   \
  } while (0)

void temporal_add(qs_esrrf_partial *p, const float *x_, uint64_t n,
                  size_t begin, size_t end) {
  double *restrict a = p->data;
  const float *restrict x = x_;
  switch ((temporal_kind)p->temporal) {
  case TEMPORAL_AVG: /* a: sum */
    if (n == 0)
      TEMPORAL_GROUPS(i, begin, end, a[i] = x[i]);
    else
      TEMPORAL_GROUPS(i, begin, end, a[i] += x[i]);
    break;
  case TEMPORAL_VAR: /* a: mean, sum of squared deviations */
    if (n == 0) {
      TEMPORAL_GROUPS(i, begin, end, {
        a[2 * i] = x[i];
        a[2 * i + 1] = 0;
      });
    } else {
      double count = (double)(n + 1);
      TEMPORAL_GROUPS(i, begin, end, {
        double v = x[i], delta = v - a[2 * i];
        double mean = a[2 * i] + delta / count;
        a[2 * i] = mean;
        a[2 * i + 1] += delta * (v - mean);
      });
    }
    break;
  case TEMPORAL_TAC2: /* a: x_0, Σ y_t, Σ y_t·y_{t+1}, y_last */
    if (n == 0) {
      TEMPORAL_GROUPS(i, begin, end, {
        a[4 * i] = x[i];
        a[4 * i + 1] = a[4 * i + 2] = a[4 * i + 3] = 0;
      });
    } else {
      TEMPORAL_GROUPS(i, begin, end, {
        double y = (double)x[i] - a[4 * i];
        a[4 * i + 1] += y;
        a[4 * i + 2] += a[4 * i + 3] * y;
        a[4 * i + 3] = y;
      });
    }
    break;
  case TEMPORAL_NONE:
    break;
  }
}

/* The merge and result loops take their arrays as restrict parameters,
 * the form in which the vectoriser trusts that they do not overlap. */
static void merge_avg(double *restrict a, const double *restrict b,
                      size_t begin, size_t end) {
  TEMPORAL_GROUPS(i, begin, end, a[i] += b[i]);
}

/* Chan et al.: pairwise update of mean and M2; wb = nb / n,
 * wab = na·nb / n. */
static void merge_var(double *restrict a, const double *restrict b,
                      double wb, double wab, size_t begin, size_t end) {
  TEMPORAL_GROUPS(i, begin, end, {
    double delta = b[2 * i] - a[2 * i];
    a[2 * i] += delta * wb;
    a[2 * i + 1] += b[2 * i + 1] + delta * delta * wab;
  });
}

/* next's values shifted by d = x0_b − x0_a: y'_t = y_t + d, so
 *   Σ y' = Σ y + nb·d,
 *   Σ y'_t·y'_{t+1} = Σ y_t·y_{t+1} + d·(2·Σy − y_last) + (nb − 1)·d²
 * (y_0 = 0 in next), plus the product across the boundary,
 * y_last_a·y'_0 = y_last_a·d. */
static void merge_tac2(double *restrict a, const double *restrict b,
                       double nb, size_t begin, size_t end) {
  TEMPORAL_GROUPS(i, begin, end, {
    double d = b[4 * i] - a[4 * i];
    a[4 * i + 2] += a[4 * i + 3] * d + b[4 * i + 2] +
                    d * (2 * b[4 * i + 1] - b[4 * i + 3]) +
                    (nb - 1) * d * d;
    a[4 * i + 1] += b[4 * i + 1] + nb * d;
    a[4 * i + 3] = b[4 * i + 3] + d;
  });
}

void temporal_merge(qs_esrrf_partial *into, const qs_esrrf_partial *next,
                    size_t begin, size_t end) {
  double na = (double)into->n, nb = (double)next->n, n = na + nb;
  switch ((temporal_kind)into->temporal) {
  case TEMPORAL_AVG:
    merge_avg(into->data, next->data, begin, end);
    break;
  case TEMPORAL_VAR:
    merge_var(into->data, next->data, nb / n, na * nb / n, begin, end);
    break;
  case TEMPORAL_TAC2:
    merge_tac2(into->data, next->data, nb, begin, end);
    break;
  case TEMPORAL_NONE:
    break;
  }
}

static void result_avg(const double *restrict a, float *restrict out,
                       double dn, size_t begin, size_t end) {
  TEMPORAL_GROUPS(i, begin, end, out[i] = (float)(a[i] / dn));
}

/* The var and tac2 results skip slot 0 (a load group with a gap, which
 * the vectoriser takes only with an epilogue): plain loops, once per
 * timepoint. */
static void result_var(const double *restrict a, float *restrict out,
                       double dn, size_t begin, size_t end) {
  for (size_t i = begin; i < end; i++) out[i] = (float)(a[2 * i + 1] / dn);
}

/* Σ_{t<n-1}(y_t − μ)(y_{t+1} − μ) = P − μ(2S − y_0 − y_last) + (n−1)μ²
 * with y_0 = 0. */
static void result_tac2(const double *restrict a, float *restrict out,
                        double dn, size_t begin, size_t end) {
  for (size_t i = begin; i < end; i++) {
    double mu = a[4 * i + 1] / dn;
    double s = a[4 * i + 2] - mu * (2 * a[4 * i + 1] - a[4 * i + 3]) +
               (dn - 1) * mu * mu;
    out[i] = (float)(s / (dn - 1));
  }
}

void temporal_result(const qs_esrrf_partial *p, float *out, size_t begin,
                     size_t end) {
  double dn = (double)p->n;
  switch ((temporal_kind)p->temporal) {
  case TEMPORAL_AVG:
    result_avg(p->data, out, dn, begin, end);
    break;
  case TEMPORAL_VAR:
    result_var(p->data, out, dn, begin, end);
    break;
  case TEMPORAL_TAC2:
    result_tac2(p->data, out, dn, begin, end);
    break;
  case TEMPORAL_NONE:
    break;
  }
}

/* ------------------------------------------------ several partials */

/* Pixels per tile of the one-pass merges below: the merge's state for a
 * tile (at most 4 slots of doubles: 32 KiB) stays in L1 or L2 while each
 * part's tile (8 KiB or more, long enough runs for the prefetcher across
 * many parts) is read once into it. */
#define TEMPORAL_TILE 1024

/* The state of part (slots k) from pixel b on. */
static const double *part_at(const qs_esrrf_partial *p, size_t k, size_t b) {
  return p->data + b * k;
}

/* The merge loops of temporal_merge on `m` pixels of a and b, already
 * offset to the tile; na, nb the frame counts before the merge. */
static void merge_tile(temporal_kind kind, double *restrict a,
                       const double *restrict b, double na, double nb,
                       size_t m) {
  double n = na + nb;
  switch (kind) {
  case TEMPORAL_AVG:
    merge_avg(a, b, 0, m);
    break;
  case TEMPORAL_VAR:
    merge_var(a, b, nb / n, na * nb / n, 0, m);
    break;
  case TEMPORAL_TAC2:
    merge_tac2(a, b, nb, 0, m);
    break;
  case TEMPORAL_NONE:
    break;
  }
}

static void result_tile(temporal_kind kind, const double *restrict a,
                        float *restrict out, double dn, size_t m) {
  switch (kind) {
  case TEMPORAL_AVG:
    result_avg(a, out, dn, 0, m);
    break;
  case TEMPORAL_VAR:
    result_var(a, out, dn, 0, m);
    break;
  case TEMPORAL_TAC2:
    result_tac2(a, out, dn, 0, m);
    break;
  case TEMPORAL_NONE:
    break;
  }
}

void temporal_window(const qs_esrrf_partial *const *parts, size_t n,
                     float *out, size_t begin, size_t end) {
  temporal_kind kind = (temporal_kind)parts[0]->temporal;
  size_t k = qs_esrrf_partial_slots(kind);
  double acc[TEMPORAL_TILE * 4];
  for (size_t b = begin; b < end; b += TEMPORAL_TILE) {
    size_t m = end - b < TEMPORAL_TILE ? end - b : TEMPORAL_TILE;
    memcpy(acc, part_at(parts[0], k, b), m * k * sizeof *acc);
    double na = (double)parts[0]->n;
    for (size_t j = 1; j < n; j++) {
      double nb = (double)parts[j]->n;
      merge_tile(kind, acc, part_at(parts[j], k, b), na, nb, m);
      na += nb;
    }
    result_tile(kind, acc, out + b, na, m);
  }
}

void temporal_suffixes(qs_esrrf_partial *const *parts, size_t n, float *out,
                       size_t begin, size_t end) {
  temporal_kind kind = (temporal_kind)parts[0]->temporal;
  size_t k = qs_esrrf_partial_slots(kind);
  double acc[TEMPORAL_TILE * 4];
  for (size_t b = begin; b < end; b += TEMPORAL_TILE) {
    size_t m = end - b < TEMPORAL_TILE ? end - b : TEMPORAL_TILE;
    double nb = (double)parts[n - 1]->n; /* frames of the suffix j + 1 */
    for (size_t j = n - 1; j-- > 1;) {
      double na = (double)parts[j]->n;
      merge_tile(kind, parts[j]->data + b * k, part_at(parts[j + 1], k, b),
                 na, nb, m);
      nb += na;
    }
    memcpy(acc, part_at(parts[0], k, b), m * k * sizeof *acc);
    double na = (double)parts[0]->n;
    if (n > 1) merge_tile(kind, acc, part_at(parts[1], k, b), na, nb, m);
    result_tile(kind, acc, out + b, n > 1 ? na + nb : na, m);
  }
}

/* ------------------------------------------- macro-pixel correction */

/* Macro-pixel columns per block: the correction's divisions run
 * TEMPORAL_PAT macro-pixels (mag·TEMPORAL_PAT floats) at a time in loops
 * the vectoriser takes whole (the count a multiple of the vector width);
 * the additions of the sums stay one phase at a time in map order. */
#define TEMPORAL_PAT 8

/* The correction's division in explicit vectors of MPC_LANES floats,
 * which the compiler's vectoriser left scalar (src and dst may be one
 * image): lane by lane the scalar division, so the same bits. At 1280²
 * and M 5 the correction of an image into another went from 3.3 to 2.2 ms
 * on one thread here (bench/window). */
#define MPC_LANES 4
typedef float mpc_vec __attribute__((vector_size(4 * MPC_LANES)));
_Static_assert(TEMPORAL_PAT % MPC_LANES == 0,
               "a block of macro-pixels fills whole vectors");

/* temporal_mpc's phase sums for the phase rows [y0, y1): each phase's
 * terms in the order of the whole map (macro-pixel rows, then columns),
 * which is the serial order whatever the split of phase rows. */
void temporal_mpc_sums(const float *map, size_t rows_m, size_t cols_m,
                       int mag, size_t y0, size_t y1, float *corr) {
  size_t m = (size_t)mag, rows = rows_m / m, w = m * TEMPORAL_PAT;
  float blocks = (float)(int)(rows * (cols_m / m));
  float q[TEMPORAL_MAX_MAG * TEMPORAL_PAT];
  for (size_t y = y0; y < y1; y++) {
    float acc[TEMPORAL_MAX_MAG] = {0};
    for (size_t ry = 0; ry < rows; ry++) {
      const float *row = map + (ry * m + y) * cols_m;
      for (size_t b = 0; b < cols_m; b += w) {
        size_t n = cols_m - b < w ? cols_m - b : w; /* a multiple of m */
        if (n == w)
          for (size_t j = 0; j < w; j++) q[j] = row[b + j] / blocks;
        else
          for (size_t j = 0; j < n; j++) q[j] = row[b + j] / blocks;
        for (size_t k = 0; k < n; k += m)
          for (size_t x = 0; x < m; x++) acc[x] += q[k + x];
      }
    }
    memcpy(corr + y * m, acc, m * sizeof *acc);
  }
}

/* Rows [r0, r1) of src divided by their phase row's divisors repeated
 * over a block, into the same rows of dst (may be src). */
void temporal_mpc_divide(const float *src, float *dst, size_t cols_m, int mag,
                         const float *corr, size_t r0, size_t r1) {
  size_t m = (size_t)mag, w = m * TEMPORAL_PAT;
  float pat[TEMPORAL_MAX_MAG * TEMPORAL_PAT];
  size_t have = (size_t)-1; /* the phase row pat holds */
  for (size_t r = r0; r < r1; r++) {
    if (r % m != have) {
      /* x / 1 is x exactly (a quiet NaN stays itself): dividing by 1
       * where the mean is 0 leaves those pixels as skipping them did,
       * without a branch per pixel. */
      have = r % m;
      for (size_t j = 0; j < w; j++) {
        float c = corr[have * m + j % m];
        pat[j] = c != 0 ? c : 1;
      }
    }
    const float *row = src + r * cols_m;
    float *to = dst + r * cols_m;
    size_t b = 0;
    for (; b + w <= cols_m; b += w)
      for (size_t j = 0; j < w; j += MPC_LANES) {
        mpc_vec v, d;
        memcpy(&v, row + b + j, sizeof v);
        memcpy(&d, pat + j, sizeof d);
        v /= d;
        memcpy(to + b + j, &v, sizeof v);
      }
    for (size_t j = 0; b + j < cols_m; j++) to[b + j] = row[b + j] / pat[j];
  }
}

void temporal_mpc(float *map, size_t rows_m, size_t cols_m, int mag) {
  float corr[TEMPORAL_MAX_MAG * TEMPORAL_MAX_MAG];
  temporal_mpc_sums(map, rows_m, cols_m, mag, 0, (size_t)mag, corr);
  temporal_mpc_divide(map, map, cols_m, mag, corr, 0, rows_m);
}

typedef struct mpc_job {
  const float *src;
  float *map;
  size_t rows_m, cols_m;
  int mag;
  float corr[TEMPORAL_MAX_MAG * TEMPORAL_MAX_MAG];
} mpc_job;

static int mpc_sums_rows(void *ctx, size_t b, size_t e, int worker) {
  mpc_job *j = ctx;
  (void)worker;
  temporal_mpc_sums(j->src, j->rows_m, j->cols_m, j->mag, b, e, j->corr);
  return 0;
}

static int mpc_divide_rows(void *ctx, size_t b, size_t e, int worker) {
  mpc_job *j = ctx;
  (void)worker;
  temporal_mpc_divide(j->src, j->map, j->cols_m, j->mag, j->corr, b, e);
  return 0;
}

static int copy_rows(void *ctx, size_t b, size_t e, int worker) {
  mpc_job *j = ctx;
  (void)worker;
  memcpy(j->map + b * j->cols_m, j->src + b * j->cols_m,
         (e - b) * j->cols_m * sizeof(float));
  return 0;
}

int temporal_mpc_into(temporal_for_fn run, const void *env, const float *src,
                      float *dst, size_t rows_m, size_t cols_m, int mag) {
  mpc_job j = {.src = src, .map = dst, .rows_m = rows_m, .cols_m = cols_m,
               .mag = mag};
  if (!mag) return run(env, 0, rows_m, copy_rows, &j);
  int rc = run(env, 0, (size_t)mag, mpc_sums_rows, &j);
  if (!rc) rc = run(env, 0, rows_m, mpc_divide_rows, &j);
  return rc;
}

int temporal_mpc_with(temporal_for_fn run, const void *env, float *map,
                      size_t rows_m, size_t cols_m, int mag) {
  return temporal_mpc_into(run, env, map, map, rows_m, cols_m, mag);
}

static int call_for(const void *env, size_t b, size_t e, qs_range_fn body,
                    void *ctx) {
  const qs_method_call *c = env;
  return c->parallel_for(c, b, e, body, ctx);
}

int temporal_mpc_on(const qs_method_call *c, float *map, size_t rows_m,
                    size_t cols_m, int mag) {
  return temporal_mpc_with(call_for, c, map, rows_m, cols_m, mag);
}

static int serial_for(const void *env, size_t b, size_t e, qs_range_fn body,
                      void *ctx) {
  (void)env;
  return b < e ? body(ctx, b, e, 0) : 0;
}

int temporal_mpc_from(const qs_method_call *c, const float *src, float *dst,
                      size_t rows_m, size_t cols_m, int mag) {
  return temporal_mpc_into(c ? call_for : serial_for, c, src, dst, rows_m,
                           cols_m, mag);
}

/* ------------------------------------------------------- public partial */

int qs_esrrf_partial_init(qs_esrrf_partial *p, int temporal, size_t rows,
                          size_t cols) {
  if (!p) return QS_EINVAL;
  memset(p, 0, sizeof *p);
  size_t k = qs_esrrf_partial_slots(temporal), px;
  if (k == 0 || rows == 0 || cols == 0) return QS_EINVAL;
  if (qs_image_pixels(1, rows, cols, &px) ||
      px > (size_t)-1 / (k * sizeof(double)))
    return QS_EOVERFLOW;
  p->data = malloc(px * k * sizeof(double));
  if (!p->data) return QS_ENOMEM;
  p->temporal = temporal;
  p->rows = rows;
  p->cols = cols;
  return QS_OK;
}

void qs_esrrf_partial_free(qs_esrrf_partial *p) {
  if (!p) return;
  free(p->data);
  memset(p, 0, sizeof *p);
}

void qs_esrrf_partial_reset(qs_esrrf_partial *p) {
  if (p) p->n = 0;
}

int qs_esrrf_partial_add(qs_esrrf_partial *p, const float *maps,
                         size_t count) {
  if (!p || !p->data || (!maps && count)) return QS_EINVAL;
  size_t px = p->rows * p->cols;
  for (size_t k = 0; k < count; k++, p->n++)
    temporal_add(p, maps + k * px, p->n, 0, px);
  return QS_OK;
}

int qs_esrrf_partial_merge(qs_esrrf_partial *into,
                           const qs_esrrf_partial *next) {
  if (!into || !next || !into->data || !next->data ||
      into->data == next->data || into->temporal != next->temporal ||
      into->rows != next->rows || into->cols != next->cols)
    return QS_EINVAL;
  size_t px = into->rows * into->cols;
  if (next->n == 0) return QS_OK;
  if (into->n == 0)
    memcpy(into->data, next->data,
           px * qs_esrrf_partial_slots(into->temporal) * sizeof(double));
  else
    temporal_merge(into, next, 0, px);
  into->n += next->n;
  return QS_OK;
}

int temporal_finishable(const qs_esrrf_partial *p, int mag, int mpc) {
  if (!p || !p->data || p->n == 0 ||
      (p->temporal == TEMPORAL_TAC2 && p->n < 2))
    return QS_EINVAL;
  if (mpc && (mag < 1 || mag > TEMPORAL_MAX_MAG || p->rows % (size_t)mag ||
              p->cols % (size_t)mag))
    return QS_EINVAL;
  return QS_OK;
}

int qs_esrrf_partial_finish(const qs_esrrf_partial *p, int mag, int mpc,
                            float *out) {
  if (!out || temporal_finishable(p, mag, mpc)) return QS_EINVAL;
  temporal_result(p, out, 0, p->rows * p->cols);
  if (mpc) temporal_mpc(out, p->rows, p->cols, mag);
  return QS_OK;
}
