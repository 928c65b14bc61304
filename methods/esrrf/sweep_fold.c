/* sweep_fold.c — the sweep's maps and AVG folds (sweep_fold.h): portable
 * C, and AVX2 and AVX-512F variants selected per function by a target
 * attribute (the rest of the library keeps the baseline flags), listed by
 * sweep_kernels_get only where the CPU runs them (the probes of the fused
 * eSRRF variants, fused_vec.c).
 *
 * The vector map computes rgc_pow_whole's products for every lane (the
 * same double multiplications in the same order, so the same y), marks
 * the lanes rgc_pow_whole would send to pow (y near a float rounding
 * boundary or outside float's normal range, for x != ±0) and any NaN, and
 * recomputes those few with the scalar rgc_sens: every lane has its bits.
 * ±0 needs no pow: the products give +0, or −0 for an odd power of −0,
 * which is pow's (and rgc_pow's) answer. The fold converts the map to
 * double and adds, as temporal_add does, eight or four pixels at a time. */
#include <stdint.h>

#include "methods/esrrf/fused.h"
#include "methods/esrrf/sweep_fold.h"
#include "methods/esrrf/temporal.h"
#include "methods/rgc/rgc_math.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define SF_X86 1
#include <immintrin.h>
#define SF_AVX2 __attribute__((target("avx2")))
#if !defined(QS_NO_AVX512) && (defined(__clang__) || __GNUC__ >= 5)
#define SF_X512 1
#define SF_AVX512 __attribute__((target("avx512f")))
#endif
#endif

/* One pixel of the map: the portable definition. */
static inline float sf_one(const float *v, const float *img, float sens,
                           size_t i) {
  float x = rgc_sens(v[i], sens);
  return img ? x * img[i] : x;
}

/* The power the vector maps take for sens: 1 for none (sens <= 1), n for
 * a whole n in [2, 8] (rgc_pow_whole's), 0 for pow's. */
static int sf_whole(float sens) {
  if (!(sens > 1)) return 1;
  return sens <= 8 && sens == (float)(int)sens ? (int)sens : 0;
}

static void sf_map(const float *v, const float *img, float sens, size_t n,
                   float *out) {
  if (!(sens > 1)) { /* no power: a loop the compiler vectorises */
    for (size_t i = 0; i < n; i++) {
      float x = v[i] < 0 ? 0 : v[i];
      out[i] = img ? x * img[i] : x;
    }
    return;
  }
  for (size_t i = 0; i < n; i++) out[i] = sf_one(v, img, sens, i);
}

/* Any frame number but 0 (which starts a statistic over) adds to a sum. */
static void sf_add(qs_esrrf_partial *a, qs_esrrf_partial *h, const float *x,
                   size_t b, size_t e) {
  temporal_add(a, x, 1, b, e);
  if (h) temporal_add(h, x, 1, b, e);
}

static const sweep_kernels sf_portable = {"portable", sf_map, sf_add};

#if SF_X86
/* rgc_pow_whole's products, y = x^n for n in [2, 8], in its order. */
#define SF_PROD(mul, x, n, y)                                                \
  do {                                                                       \
    __typeof__(x) x2_ = mul(x, x), x4_ = mul(x2_, x2_);                      \
    switch (n) {                                                             \
    case 2: y = x2_; break;                                                  \
    case 3: y = mul(x2_, x); break;                                          \
    case 4: y = x4_; break;                                                  \
    case 5: y = mul(x4_, x); break;                                          \
    case 6: y = mul(x4_, x2_); break;                                        \
    case 7: y = mul(mul(x4_, x2_), x); break;                                \
    default: y = mul(x4_, x4_); break;                                       \
    }                                                                        \
  } while (0)

/* Eight lanes (sf_map's contract) with the power n known at compile time:
 * the lanes marked in `fix` are recomputed by sf_one. */
static inline __attribute__((always_inline)) SF_AVX2 void
sf_pow_avx2(const float *v, const float *img, float sens, int n, size_t len,
            float *out) {
  const __m128 z = _mm_setzero_ps();
  const __m256d dz = _mm256_setzero_pd(), lo = _mm256_set1_pd(0x1p-126),
                hi = _mm256_set1_pd(0x1p127);
  const __m256i m29 = _mm256_set1_epi64x((INT64_C(1) << 29) - 1),
                mid = _mm256_set1_epi64x(INT64_C(1) << 28),
                lo32 = _mm256_set1_epi64x(-32), hi32 = _mm256_set1_epi64x(32);
  size_t i = 0;
  for (; i + 4 <= len; i += 4) {
    __m128 x = _mm_loadu_ps(v + i), r;
    x = _mm_andnot_ps(_mm_cmplt_ps(x, z), x); /* negatives to +0 */
    int fix = 0;
    if (n == 1) {
      r = x;
    } else {
      __m256d xd = _mm256_cvtps_pd(x), y;
      SF_PROD(_mm256_mul_pd, xd, n, y);
      __m256d bad = _mm256_cmp_pd(xd, xd, _CMP_UNORD_Q);
      if (n > 2) {
        __m256i low =
            _mm256_sub_epi64(_mm256_and_si256(_mm256_castpd_si256(y), m29),
                             mid);
        __m256d edge = _mm256_castsi256_pd(_mm256_and_si256(
            _mm256_cmpgt_epi64(low, lo32), _mm256_cmpgt_epi64(hi32, low)));
        __m256d ok = _mm256_and_pd(_mm256_cmp_pd(y, lo, _CMP_GE_OQ),
                                   _mm256_cmp_pd(y, hi, _CMP_LT_OQ));
        __m256d nz = _mm256_cmp_pd(xd, dz, _CMP_NEQ_UQ);
        bad = _mm256_and_pd(nz, _mm256_or_pd(edge, _mm256_andnot_pd(ok, nz)));
      }
      fix = _mm256_movemask_pd(bad);
      r = _mm256_cvtpd_ps(y);
    }
    if (img) r = _mm_mul_ps(r, _mm_loadu_ps(img + i));
    _mm_storeu_ps(out + i, r);
    for (; fix; fix &= fix - 1)
      out[i + (size_t)__builtin_ctz((unsigned)fix)] =
          sf_one(v, img, sens, i + (size_t)__builtin_ctz((unsigned)fix));
  }
  for (; i < len; i++) out[i] = sf_one(v, img, sens, i);
}

SF_AVX2 static void sf_map_avx2(const float *v, const float *img,
                                float sens, size_t n, float *out) {
  switch (sf_whole(sens)) {
  case 1: sf_pow_avx2(v, img, sens, 1, n, out); break;
  case 2: sf_pow_avx2(v, img, sens, 2, n, out); break;
  case 3: sf_pow_avx2(v, img, sens, 3, n, out); break;
  case 4: sf_pow_avx2(v, img, sens, 4, n, out); break;
  case 5: sf_pow_avx2(v, img, sens, 5, n, out); break;
  case 6: sf_pow_avx2(v, img, sens, 6, n, out); break;
  case 7: sf_pow_avx2(v, img, sens, 7, n, out); break;
  case 8: sf_pow_avx2(v, img, sens, 8, n, out); break;
  default: sf_map(v, img, sens, n, out); break;
  }
}

SF_AVX2 static void sf_add_avx2(qs_esrrf_partial *a, qs_esrrf_partial *h,
                                const float *x, size_t b, size_t e) {
  double *s = a->data, *t = h ? h->data : NULL;
  size_t i = b;
  for (; i + 4 <= e; i += 4) {
    __m256d d = _mm256_cvtps_pd(_mm_loadu_ps(x + i));
    _mm256_storeu_pd(s + i, _mm256_add_pd(_mm256_loadu_pd(s + i), d));
    if (t) _mm256_storeu_pd(t + i, _mm256_add_pd(_mm256_loadu_pd(t + i), d));
  }
  if (i < e) sf_add(a, h, x, i, e);
}

static const sweep_kernels sf_avx2 = {"avx2", sf_map_avx2, sf_add_avx2};
#endif

#if SF_X512
/* sf_pow_avx2 with eight double lanes and mask registers. */
static inline __attribute__((always_inline)) SF_AVX512 void
sf_pow_avx512(const float *v, const float *img, float sens, int n,
              size_t len, float *out) {
  const __m256 z = _mm256_setzero_ps();
  const __m512d dz = _mm512_setzero_pd(), lo = _mm512_set1_pd(0x1p-126),
                hi = _mm512_set1_pd(0x1p127);
  const __m512i m29 = _mm512_set1_epi64((INT64_C(1) << 29) - 1),
                off = _mm512_set1_epi64((INT64_C(1) << 28) - 31),
                width = _mm512_set1_epi64(63);
  size_t i = 0;
  for (; i + 8 <= len; i += 8) {
    __m256 x = _mm256_loadu_ps(v + i), r;
    x = _mm256_andnot_ps(_mm256_cmp_ps(x, z, _CMP_LT_OQ), x);
    unsigned fix = 0;
    if (n == 1) {
      r = x;
    } else {
      __m512d xd = _mm512_cvtps_pd(x), y;
      SF_PROD(_mm512_mul_pd, xd, n, y);
      __mmask8 bad = _mm512_cmp_pd_mask(xd, xd, _CMP_UNORD_Q);
      if (n > 2) {
        /* |low 29 bits − 2²⁸| < 32, as (low − (2²⁸ − 31)) < 63 unsigned */
        __m512i low = _mm512_sub_epi64(
            _mm512_and_si512(_mm512_castpd_si512(y), m29), off);
        __mmask8 ok = _mm512_cmp_pd_mask(y, lo, _CMP_GE_OQ) &
                      _mm512_cmp_pd_mask(y, hi, _CMP_LT_OQ);
        __mmask8 nz = _mm512_cmp_pd_mask(xd, dz, _CMP_NEQ_UQ);
        bad = nz & (_mm512_cmplt_epu64_mask(low, width) | (__mmask8)~ok);
      }
      fix = bad;
      r = _mm512_cvtpd_ps(y);
    }
    if (img) r = _mm256_mul_ps(r, _mm256_loadu_ps(img + i));
    _mm256_storeu_ps(out + i, r);
    for (; fix; fix &= fix - 1)
      out[i + (size_t)__builtin_ctz(fix)] =
          sf_one(v, img, sens, i + (size_t)__builtin_ctz(fix));
  }
  for (; i < len; i++) out[i] = sf_one(v, img, sens, i);
}

SF_AVX512 static void sf_map_avx512(const float *v, const float *img,
                                    float sens, size_t n, float *out) {
  switch (sf_whole(sens)) {
  case 1: sf_pow_avx512(v, img, sens, 1, n, out); break;
  case 2: sf_pow_avx512(v, img, sens, 2, n, out); break;
  case 3: sf_pow_avx512(v, img, sens, 3, n, out); break;
  case 4: sf_pow_avx512(v, img, sens, 4, n, out); break;
  case 5: sf_pow_avx512(v, img, sens, 5, n, out); break;
  case 6: sf_pow_avx512(v, img, sens, 6, n, out); break;
  case 7: sf_pow_avx512(v, img, sens, 7, n, out); break;
  case 8: sf_pow_avx512(v, img, sens, 8, n, out); break;
  default: sf_map(v, img, sens, n, out); break;
  }
}

SF_AVX512 static void sf_add_avx512(qs_esrrf_partial *a, qs_esrrf_partial *h,
                                    const float *x, size_t b, size_t e) {
  double *s = a->data, *t = h ? h->data : NULL;
  size_t i = b;
  for (; i + 8 <= e; i += 8) {
    __m512d d = _mm512_cvtps_pd(_mm256_loadu_ps(x + i));
    _mm512_storeu_pd(s + i, _mm512_add_pd(_mm512_loadu_pd(s + i), d));
    if (t) _mm512_storeu_pd(t + i, _mm512_add_pd(_mm512_loadu_pd(t + i), d));
  }
  if (i < e) sf_add(a, h, x, i, e);
}

static const sweep_kernels sf_avx512 = {"avx512", sf_map_avx512,
                                        sf_add_avx512};
#endif

const sweep_kernels *sweep_kernels_get(int which) {
  char why[256];
  switch (which) {
  case SWEEP_PORTABLE: return &sf_portable;
#if SF_X86
  case SWEEP_AVX2:
    return fused_avx2_probe("", why, sizeof why) ? NULL : &sf_avx2;
#endif
#if SF_X512
  case SWEEP_AVX512:
    return fused_avx512_probe("", "", why, sizeof why) ? NULL : &sf_avx512;
#endif
  default: return NULL;
  }
}

const sweep_kernels *sweep_kernels_best(void) {
  for (int w = SWEEP_VARIANTS - 1; w > 0; w--)
    if (sweep_kernels_get(w)) return sweep_kernels_get(w);
  return &sf_portable;
}
