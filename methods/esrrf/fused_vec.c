/* fused_vec.c — `fused_vec`: the vectorised RGC pass of fused_vec.h
 * compiled with the build's baseline flags (SSE2 on x86-64, whatever the
 * target offers elsewhere), four lanes, no fused multiply-add: the variant
 * every CPU can run. Also the probes of `fused_avx2` and `fused_avx512`,
 * which must themselves be baseline code since they run on CPUs without
 * those instruction sets. */
#include <stdio.h>

#define FV_LANES 4
#include "methods/esrrf/fused_vec.h"

const fused_variant *fused_vec_pass(void) { return &fv_variant; }

int esrrf_run_fused_vec(const qs_method_call *c) {
  return fused_run(c, &fv_variant);
}

int fused_avx2_probe(const char *portable, char *why, size_t why_len) {
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return QS_OK;
  snprintf(why, why_len, "this CPU does not report AVX2 and FMA "
                         "(%s is the portable variant)", portable);
#else
  snprintf(why, why_len, "AVX2 + FMA code is built for x86 targets only "
                         "(%s is the portable variant)", portable);
#endif
  return QS_EUNAVAIL;
}

int esrrf_avx2_probe(const qs_method_call *c, char *why, size_t why_len) {
  (void)c;
  return fused_avx2_probe("fused_vec", why, why_len);
}

int fused_avx512_probe(const char *avx2, const char *portable, char *why,
                       size_t why_len) {
  char fallback[160];
  const char *best = portable;
  if (!fused_avx2_probe(portable, fallback, sizeof fallback)) best = avx2;
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
  __builtin_cpu_init();
  /* the CPU test first: the pass is built code for AVX-512 */
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx2") ||
      !__builtin_cpu_supports("fma")) {
    snprintf(why, why_len, "this CPU does not report AVX-512F (with AVX2 "
                           "and FMA) or its OS does not keep the 512-bit "
                           "registers (%s is the fastest variant here)",
             best);
    return QS_EUNAVAIL;
  }
  if (fused_avx512_pass()) return QS_OK;
  snprintf(why, why_len, "this build has no AVX-512 code (its compiler "
                         "lacks AVX-512 or QS_NO_AVX512 was set; %s is the "
                         "fastest variant here)", best);
#else
  snprintf(why, why_len, "AVX-512 code is built for x86 targets only (%s is "
                         "the fastest variant here)", best);
#endif
  return QS_EUNAVAIL;
}

int esrrf_avx512_probe(const qs_method_call *c, char *why, size_t why_len) {
  (void)c;
  return fused_avx512_probe("fused_avx2", "fused_vec", why, why_len);
}
