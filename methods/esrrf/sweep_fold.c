/* sweep_fold.c — the sweep's maps and AVG folds (sweep_fold.h): portable
 * C, and AVX2 and AVX-512F variants selected per function by a target
 * attribute (the rest of the library keeps the baseline flags), listed by
 * sweep_kernels_get only where the CPU runs them (the probes of the fused
 * eSRRF variants, fused_vec.c). Both vector variants are one body,
 * sweep_fold_vec.h, over the operations each defines.
 *
 * The vector map computes rgc_pow_whole's products for every lane (the
 * same double multiplications in the same order, so the same y), marks
 * the lanes rgc_pow_whole would send to pow (y near a float rounding
 * boundary or outside float's normal range but not below 2⁻¹⁵¹) and any
 * NaN, and recomputes those few with the scalar rgc_sens: every lane has
 * its bits. ±0 needs no pow: the products give +0, or −0 for an odd power
 * of −0, which is pow's (and rgc_pow's) answer. The fold converts the map
 * to double and adds, as temporal_add does, eight or four pixels at a
 * time; map_add does both with the map's lanes kept in registers. */
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

static void sf_map_add(const float *v, const float *img, float sens,
                       qs_esrrf_partial *a, qs_esrrf_partial *h, size_t b,
                       size_t e) {
  double *s = a->data, *t = h ? h->data : NULL;
  for (size_t i = b; i < e; i++) {
    float x = sf_one(v, img, sens, i);
    s[i] += x;
    if (t) t[i] += x;
  }
}

static const sweep_kernels sf_portable = {"portable", sf_map, sf_add,
                                          sf_map_add};

#if SF_X86
/* AVX2: four lanes, the masks as vectors. */
#define SF_TARGET SF_AVX2
#define SF_(f) f##_avx2
#define SF_LANES 4
#define sf_vf __m128
#define sf_vd __m256d
#define SF_LOADF _mm_loadu_ps
#define SF_STOREF _mm_storeu_ps
#define SF_MULF _mm_mul_ps
#define SF_LOADD _mm256_loadu_pd
#define SF_STORED _mm256_storeu_pd
#define SF_ADDD _mm256_add_pd
#define SF_MULD _mm256_mul_pd
#define SF_POS(x) _mm_andnot_ps(_mm_cmplt_ps(x, _mm_setzero_ps()), x)
#define SF_UP _mm256_cvtps_pd
#define SF_DOWN _mm256_cvtpd_ps
#define SF_FIX sf_fix_avx2

/* |low 29 bits − 2²⁸| < 32 as two signed comparisons of the difference;
 * ±0 and NaN as SF_FIX says through y's range (y = ±0 below 2^-151, NaN
 * in no range). */
SF_AVX2 static inline unsigned sf_fix_avx2(__m256d x, __m256d y, int n) {
  if (n == 2)
    return (unsigned)_mm256_movemask_pd(_mm256_cmp_pd(x, x, _CMP_UNORD_Q));
  __m256i low = _mm256_sub_epi64(
      _mm256_and_si256(_mm256_castpd_si256(y),
                       _mm256_set1_epi64x((INT64_C(1) << 29) - 1)),
      _mm256_set1_epi64x(INT64_C(1) << 28));
  __m256d edge = _mm256_castsi256_pd(
      _mm256_and_si256(_mm256_cmpgt_epi64(low, _mm256_set1_epi64x(-32)),
                       _mm256_cmpgt_epi64(_mm256_set1_epi64x(32), low)));
  __m256d ok = _mm256_or_pd(
      _mm256_and_pd(_mm256_cmp_pd(y, _mm256_set1_pd(0x1p-126), _CMP_GE_OQ),
                    _mm256_cmp_pd(y, _mm256_set1_pd(0x1p127), _CMP_LT_OQ)),
      _mm256_cmp_pd(y, _mm256_set1_pd(0x1p-151), _CMP_LT_OQ));
  return (unsigned)(_mm256_movemask_pd(edge) | (~_mm256_movemask_pd(ok) & 15));
}

#include "methods/esrrf/sweep_fold_vec.h"
static const sweep_kernels sf_avx2 = {"avx2", sf_map_avx2, sf_add_avx2,
                                      sf_map_add_avx2};
#undef SF_TARGET
#undef SF_
#undef SF_LANES
#undef sf_vf
#undef sf_vd
#undef SF_LOADF
#undef SF_STOREF
#undef SF_MULF
#undef SF_LOADD
#undef SF_STORED
#undef SF_ADDD
#undef SF_MULD
#undef SF_POS
#undef SF_UP
#undef SF_DOWN
#undef SF_FIX
#endif

#if SF_X512
/* AVX-512F: eight double lanes (from eight floats), the masks in mask
 * registers. */
#define SF_TARGET SF_AVX512
#define SF_(f) f##_avx512
#define SF_LANES 8
#define sf_vf __m256
#define sf_vd __m512d
#define SF_LOADF _mm256_loadu_ps
#define SF_STOREF _mm256_storeu_ps
#define SF_MULF _mm256_mul_ps
#define SF_LOADD _mm512_loadu_pd
#define SF_STORED _mm512_storeu_pd
#define SF_ADDD _mm512_add_pd
#define SF_MULD _mm512_mul_pd
#define SF_POS(x)                                                            \
  _mm256_andnot_ps(_mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ), x)
#define SF_UP _mm512_cvtps_pd
#define SF_DOWN _mm512_cvtpd_ps
#define SF_FIX sf_fix_avx512

/* |low 29 bits − 2²⁸| < 32 as (low − (2²⁸ − 31)) < 63, unsigned; the
 * rest as sf_fix_avx2. */
SF_AVX512 static inline unsigned sf_fix_avx512(__m512d x, __m512d y, int n) {
  if (n == 2) return _mm512_cmp_pd_mask(x, x, _CMP_UNORD_Q);
  __m512i low = _mm512_sub_epi64(
      _mm512_and_si512(_mm512_castpd_si512(y),
                       _mm512_set1_epi64((INT64_C(1) << 29) - 1)),
      _mm512_set1_epi64((INT64_C(1) << 28) - 31));
  __mmask8 edge = _mm512_cmplt_epu64_mask(low, _mm512_set1_epi64(63));
  __mmask8 ok = (_mm512_cmp_pd_mask(y, _mm512_set1_pd(0x1p-126), _CMP_GE_OQ) &
                 _mm512_cmp_pd_mask(y, _mm512_set1_pd(0x1p127), _CMP_LT_OQ)) |
                _mm512_cmp_pd_mask(y, _mm512_set1_pd(0x1p-151), _CMP_LT_OQ);
  return (__mmask8)(edge | ~ok);
}

#include "methods/esrrf/sweep_fold_vec.h"
static const sweep_kernels sf_avx512 = {"avx512", sf_map_avx512,
                                        sf_add_avx512, sf_map_add_avx512};
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
