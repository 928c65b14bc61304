/* esrrf_stat.cl — eSRRF's temporal statistics accumulated on the device
 * (host file methods/esrrf/cl_stat.c), so that only the input frames go up
 * and only each timepoint's image comes down.
 *
 * Scheme (float, what any device runs fast): values shifted by the
 * timepoint's first map, y_t = x_t − x_0, and every running sum kept as a
 * compensated pair (s, c) by Knuth's branch-free TwoSum, products with
 * their exact rounding error (fma), so a sum over 10^4 frames is about as
 * good as one rounding of its value:
 *   avg   [S, c]            Σ x_t
 *   var   [x0, Sy, c, Sq, c] Σ y_t, Σ y_t²
 *   tac2  [x0, Sy, c, P, c, y_last] Σ y_t, Σ y_t·y_{t+1}
 * Slot s of pixel i lives at acc[s·plane + i] (coalesced). The finish
 * combines the sums in double where the device has it (once per
 * timepoint, so its speed on a GPU does not matter), else in float.
 * Contraction off: the compensation terms must be the exact rounding
 * errors, and the bits must not depend on the device compiler's choices. */
#pragma OPENCL FP_CONTRACT OFF

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double fin_t;
#else
typedef float fin_t;
#endif

/* s + c += v, with c collecting the exact rounding error of s + v. */
inline void csum(float *s, float *c, float v) {
  float t = *s + v, bp = t - *s;
  *c += (*s - (t - bp)) + (v - bp);
  *s = t;
}

/* s + c += a·b with the product's rounding error too (fma gives it
 * exactly): a shift by an unlucky first map (a blink) makes the products
 * large, and their roundings would otherwise add up over the frames. */
inline void cprod(float *s, float *c, float a, float b) {
  float p = a * b;
  csum(s, c, p);
  *c += fma(a, b, -p);
}

/* Folds maps[0 .. n) (planes of `plane` floats from float `offset` of
 * maps, time order) into the statistic of pixel i, whose timepoint already
 * has `first` frames (0: the first of these maps starts it). global: plane
 * rounded up. */
__kernel void esrrf_fold(__global const float *maps, __global float *acc,
                         int n, int first, int kind, long plane,
                         long offset) {
  long i = (long)get_global_id(0);
  if (i >= plane || n <= 0) return;
  maps += offset;
  __global float *a = acc + i;
  float x0, s0, c0, s1, c1, last;
  if (first == 0) {
    x0 = kind == 0 ? 0.0f : maps[i];
    s0 = c0 = s1 = c1 = last = 0.0f;
  } else {
    x0 = kind == 0 ? 0.0f : a[0];
    s0 = a[(kind != 0) * plane];
    c0 = a[(1 + (kind != 0)) * plane];
    s1 = kind ? a[3 * plane] : 0.0f;
    c1 = kind ? a[4 * plane] : 0.0f;
    last = kind == 2 ? a[5 * plane] : 0.0f;
  }
  for (int k = 0; k < n; k++) {
    float x = maps[k * plane + i];
    if (kind == 0) {
      csum(&s0, &c0, x);
      continue;
    }
    float y = x - x0;
    csum(&s0, &c0, y);
    if (kind == 1) {
      cprod(&s1, &c1, y, y);
    } else {
      if (first + k > 0) cprod(&s1, &c1, last, y);
      last = y;
    }
  }
  if (kind == 0) {
    a[0] = s0;
    a[plane] = c0;
    return;
  }
  a[0] = x0;
  a[plane] = s0;
  a[2 * plane] = c0;
  a[3 * plane] = s1;
  a[4 * plane] = c1;
  if (kind == 2) a[5 * plane] = last;
}

/* The statistic of the n frames folded: avg the mean, var the population
 * variance, tac2 the lag-1 autocovariance about the mean over n − 1 (the
 * formulas of methods/esrrf/temporal.c). */
__kernel void esrrf_stat_finish(__global const float *acc,
                                __global float *out, int n, int kind,
                                long plane) {
  long i = (long)get_global_id(0);
  if (i >= plane) return;
  __global const float *a = acc + i;
  fin_t dn = (fin_t)n;
  if (kind == 0) {
    out[i] = (float)(((fin_t)a[0] + (fin_t)a[plane]) / dn);
    return;
  }
  fin_t sy = (fin_t)a[plane] + (fin_t)a[2 * plane];
  fin_t s1 = (fin_t)a[3 * plane] + (fin_t)a[4 * plane];
  fin_t mu = sy / dn;
  if (kind == 1) {
    fin_t v = s1 / dn - mu * mu;
    out[i] = (float)(v > 0 ? v : 0);
    return;
  }
  fin_t last = (fin_t)a[5 * plane];
  fin_t s = s1 - mu * (2 * sy - last) + (dn - 1) * mu * mu;
  out[i] = (float)(s / (dn - 1));
}
