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
 * Slot s of pixel i lives at acc[s·plane + i] (coalesced), from float
 * `acc_offset` of the buffer (a sliding window keeps several such states
 * in one buffer). The finish combines the sums in double where the device
 * has it (once per timepoint, so its speed on a GPU does not matter), else
 * in float.
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
 * maps, time order) into the statistic of pixel i (the state from float
 * `acc_offset` of acc), whose timepoint already has `first` frames (0: the
 * first of these maps starts it). global: plane rounded up. */
__kernel void esrrf_fold(__global const float *maps, __global float *acc,
                         int n, int first, int kind, long plane,
                         long offset, long acc_offset) {
  long i = (long)get_global_id(0);
  if (i >= plane || n <= 0) return;
  maps += offset;
  __global float *a = acc + acc_offset + i;
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

/* The statistic of n frames from its combined sums (the formulas of
 * methods/esrrf/temporal.c): avg the mean of s = Σ x; var the population
 * variance from sy = Σ y, s1 = Σ y²; tac2 the lag-1 autocovariance about
 * the mean over n − 1 from sy, s1 = Σ y_t·y_{t+1} and `last` (the last
 * frame's y), where y_t = x_t − x_0 so that the first frame's y is 0:
 * Σ_{t<n−1} (y_t − μ)(y_{t+1} − μ) = s1 − μ·(2·sy − last) + (n − 1)·μ². */
inline float stat_value(int kind, fin_t dn, fin_t sy, fin_t s1, fin_t last) {
  if (kind == 0) return (float)(sy / dn);
  fin_t mu = sy / dn;
  if (kind == 1) {
    fin_t v = s1 / dn - mu * mu;
    return (float)(v > 0 ? v : 0);
  }
  fin_t s = s1 - mu * (2 * sy - last) + (dn - 1) * mu * mu;
  return (float)(s / (dn - 1));
}

/* The statistic of the n frames folded (stat_value). */
__kernel void esrrf_stat_finish(__global const float *acc,
                                __global float *out, int n, int kind,
                                long plane) {
  long i = (long)get_global_id(0);
  if (i >= plane) return;
  __global const float *a = acc + i;
  if (kind == 0) {
    out[i] = stat_value(0, (fin_t)n, (fin_t)a[0] + (fin_t)a[plane], 0, 0);
    return;
  }
  fin_t sy = (fin_t)a[plane] + (fin_t)a[2 * plane];
  fin_t s1 = (fin_t)a[3 * plane] + (fin_t)a[4 * plane];
  out[i] = stat_value(kind, (fin_t)n, sy, s1,
                      kind == 2 ? (fin_t)a[5 * plane] : 0);
}

/* A sliding window's statistic from `blocks` block states of `every`
 * frames each (block b's slot s of pixel i at acc[(b·slots + s)·plane +
 * i], each block folded by esrrf_fold with its own shift x0_b, the
 * block's first frame), combined in time order from block `oldest`
 * (wrapping) into the sums of the whole window shifted by the oldest
 * block's x0, X0. With d_b = x0_b − X0 (exact in double) and K = every,
 * a frame of block b has Y = y + d_b, so per block (sums in its own
 * shift, y = 0 at its first frame):
 *   avg   S   = Σ_b S_b
 *   var   Sy  = Σ_b (Sy_b + K·d_b)
 *         Sq  = Σ_b (Sq_b + 2·d_b·Sy_b + K·d_b²)
 *   tac2  Sy as var;
 *         P   = Σ_b [P_b + d_b·(2·Sy_b − last_b) + (K − 1)·d_b²]
 *               + Σ_{b not newest} (last_b + d_b)·d_{b+1}
 *         last = last_newest + d_newest
 * (inside a block Σ (y_t + d)(y_{t+1} + d) over its K − 1 pairs adds
 * d·(Σ_{t<K−1} y_t + Σ_{t>0} y_t) = d·((Sy_b − last_b) + Sy_b); the pair
 * across a block boundary is (last_b + d_b)·(0 + d_{b+1})). The window's
 * first Y is 0 as stat_value wants. In double where the device has it,
 * once per update; then stat_value over n = blocks·every. */
__kernel void esrrf_window_finish(__global const float *acc,
                                  __global float *out, int every, int kind,
                                  long plane, int blocks, int oldest) {
  long i = (long)get_global_id(0);
  if (i >= plane) return;
  long slots = kind == 0 ? 2 : kind == 1 ? 5 : 6;
  fin_t k = (fin_t)every, x0 = 0, sy = 0, s1 = 0, last = 0, prev = 0;
  for (int j = 0; j < blocks; j++) {
    int b = oldest + j < blocks ? oldest + j : oldest + j - blocks;
    __global const float *a = acc + (long)b * slots * plane + i;
    if (kind == 0) {
      sy += (fin_t)a[0] + (fin_t)a[plane];
      continue;
    }
    if (j == 0) x0 = (fin_t)a[0];
    fin_t d = (fin_t)a[0] - x0;
    fin_t syb = (fin_t)a[plane] + (fin_t)a[2 * plane];
    fin_t s1b = (fin_t)a[3 * plane] + (fin_t)a[4 * plane];
    sy += syb + k * d;
    if (kind == 1) {
      s1 += s1b + 2 * d * syb + k * d * d;
      continue;
    }
    fin_t lb = (fin_t)a[5 * plane];
    s1 += s1b + d * (2 * syb - lb) + (k - 1) * d * d;
    if (j > 0) s1 += prev * d;
    prev = lb + d;
  }
  out[i] = stat_value(kind, k * (fin_t)blocks, sy, s1, prev);
}
