/* fused_avx2.c — `fused_avx2`: the vectorised RGC pass of fused_vec.h
 * compiled for AVX2 + FMA, eight lanes, explicit fused multiply-adds.
 *
 * The instruction set is selected for this file alone by the target
 * pragma below (GCC; Clang takes the same as a function attribute), so
 * the rest of the library keeps the baseline flags and runs on any x86-64.
 * Nothing here may run before esrrf_avx2_probe (fused_vec.c, baseline
 * code) has found both features on the CPU; the engine lists the
 * implementation only then. On other targets the file is a stub. */
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#define FV_AVX2 1
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma"))), \
                             apply_to = function)
#else
#pragma GCC target("avx2,fma")
#endif
#endif

#include "methods/esrrf/esrrf.h"
#include "methods/esrrf/fused.h"

#if FV_AVX2
#include <immintrin.h>

#define FV_LANES 8
#define FV_FMA(a, b, c) ((fv_f)_mm256_fmadd_ps((a), (b), (c)))

/* fused_cell's 1/|G| = (float)(1 / sqrt((double)|G|²)) for eight lanes:
 * the same correctly rounded double operations, four lanes at a time. */
static inline __m256 fv_inv_norm_avx2(__m256 g2) {
  __m256d one = _mm256_set1_pd(1.0);
  __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(g2));
  __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(g2, 1));
  lo = _mm256_div_pd(one, _mm256_sqrt_pd(lo));
  hi = _mm256_div_pd(one, _mm256_sqrt_pd(hi));
  return _mm256_set_m128(_mm256_cvtpd_ps(hi), _mm256_cvtpd_ps(lo));
}
#define FV_INV_NORM(g2) ((fv_f)fv_inv_norm_avx2((__m256)(g2)))
#include "methods/esrrf/fused_vec.h"

const fused_variant *fused_avx2_pass(void) { return &fv_variant; }

int esrrf_run_fused_avx2(const qs_method_call *c) {
  return fused_run(c, &fv_variant);
}

#if defined(__clang__)
#pragma clang attribute pop
#endif

#else

const fused_variant *fused_avx2_pass(void) { return NULL; }

int esrrf_run_fused_avx2(const qs_method_call *c) {
  return esrrf_avx2_probe(c, c->err, c->err_len);
}

#endif
