/* fused_avx512.c — `fused_avx512`: the vectorised RGC pass of fused_vec.h
 * compiled for AVX-512F, sixteen lanes, explicit fused multiply-adds, and
 * the lane masks (inward gradients, the disk edge, the border lanes whose
 * taps fall outside the image) in mask registers: a masked sum is one
 * masked add, where the other builds AND the term with a mask vector first.
 *
 * The instruction set is selected for this file alone by the target
 * pragma below (GCC; Clang takes the same as a function attribute), so
 * the rest of the library keeps the baseline flags and runs on any x86-64.
 * Only AVX-512F is used (no BW, DQ or VL): the probe asks the CPU for
 * exactly that, with AVX2 and FMA, which the pragma also enables, and the
 * OS's support for the 512-bit state (GCC's and Clang's CPU test check
 * it). Nothing here may run before esrrf_avx512_probe (fused_vec.c,
 * baseline code) has succeeded; the engine lists the implementation only
 * then. On other targets and on compilers without AVX-512 (GCC before 5,
 * or QS_NO_AVX512 defined) the file is a stub whose entry points return
 * the probe's reason. */
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__) &&   \
    !defined(QS_NO_AVX512) && (defined(__clang__) || __GNUC__ >= 5)
#define FV_AVX512 1
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma"))), \
                             apply_to = function)
#else
#pragma GCC target("avx512f,avx2,fma")
#endif
#endif

#include "methods/esrrf/esrrf.h"
#include "methods/esrrf/fused.h"

#if FV_AVX512
#include <immintrin.h>

#define FV_LANES 16
#define FV_GROUPS 4
#define FV_FMA(a, b, c) ((fv_f)_mm512_fmadd_ps((a), (b), (c)))
/* The candidate loop's grid and offset vectors stay in registers: GCC
 * would fold their loads into each instruction using them, loading each
 * twice, and its 512-bit loads (most across two cache lines) are what
 * limits that loop on two load ports. */
#define FV_PIN(v) __asm__("" : "+v"(v))

/* The lane masks in mask registers (fused_vec.h's FV_MASK contract):
 * comparisons as the vector extensions make them (ordered, except !=). */
#define FV_MASK 1
typedef __mmask16 fv_m;
#define FV_ALL ((fv_m)0xffff)
#define FV_CMP(a, b, op) _mm512_cmp_ps_mask((__m512)(a), (__m512)(b), op)
#define FV_LT(a, b) FV_CMP(a, b, _CMP_LT_OQ)
#define FV_LE(a, b) FV_CMP(a, b, _CMP_LE_OQ)
#define FV_GE(a, b) FV_CMP(a, b, _CMP_GE_OQ)
#define FV_NE(a, b) FV_CMP(a, b, _CMP_NEQ_UQ)
#define FV_AND(a, b) ((fv_m)((a) & (b)))
#define FV_ADD_IF(acc, m, v)                                                 \
  ((fv_f)_mm512_mask_add_ps((__m512)(acc), (m), (__m512)(acc), (__m512)(v)))
#define FV_SELECT(m, a, b)                                                   \
  ((fv_f)_mm512_mask_blend_ps((m), (__m512)(b), (__m512)(a)))

/* fused_cell's 1/|G| = (float)(1 / sqrt((double)|G|²)) for sixteen lanes:
 * the same correctly rounded double operations, eight lanes at a time. */
static inline __m512 fv_inv_norm_avx512(__m512 g2) {
  __m512d one = _mm512_set1_pd(1.0);
  __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(g2));
  __m512d hi = _mm512_cvtps_pd(
      _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(g2), 1)));
  __m256 l = _mm512_cvtpd_ps(_mm512_div_pd(one, _mm512_sqrt_pd(lo)));
  __m256 h = _mm512_cvtpd_ps(_mm512_div_pd(one, _mm512_sqrt_pd(hi)));
  return _mm512_castpd_ps(_mm512_insertf64x4(
      _mm512_castpd256_pd512(_mm256_castps_pd(l)), _mm256_castps_pd(h), 1));
}
#define FV_INV_NORM(g2) ((fv_f)fv_inv_norm_avx512((__m512)(g2)))

/* fused_vec.h's FV_SPLIT in one permutation: even lanes to the low half,
 * odd lanes to the high half, two 8-float stores. */
static inline void fv_split_avx512(__m512 v, float *even, float *odd) {
  const __m512i idx = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5,
                                        7, 9, 11, 13, 15);
  __m512d p = _mm512_castps_pd(_mm512_permutexvar_ps(idx, v));
  _mm256_storeu_ps(even, _mm256_castpd_ps(_mm512_castpd512_pd256(p)));
  _mm256_storeu_ps(odd, _mm256_castpd_ps(_mm512_extractf64x4_pd(p, 1)));
}
#define FV_SPLIT(v, even, odd) fv_split_avx512((__m512)(v), even, odd)
#include "methods/esrrf/fused_vec.h"

const fused_variant *fused_avx512_pass(void) { return &fv_variant; }

int esrrf_run_fused_avx512(const qs_method_call *c) {
  return fused_run(c, &fv_variant);
}

#if defined(__clang__)
#pragma clang attribute pop
#endif

#else

const fused_variant *fused_avx512_pass(void) { return NULL; }

int esrrf_run_fused_avx512(const qs_method_call *c) {
  return esrrf_avx512_probe(c, c->err, c->err_len);
}

#endif
