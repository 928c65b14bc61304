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
typedef double4 finv;
#define convert_finv convert_double4
#else
typedef float4 finv;
#define convert_finv convert_float4
#endif

/* Every kernel here works on STAT_LANES consecutive pixels per work-item
 * (CL_STAT_LANES in methods/esrrf/cl_stat.h; global: the plane in groups
 * of lanes, rounded up), as explicit vectors: a work-item's loop over
 * the maps is then a loop of vector loads of consecutive pixels, where
 * one pixel per work-item made the device compiler walk the maps one
 * pixel at a time, a plane apart (its vectoriser takes the innermost
 * loop, the maps'). Lane by lane the arithmetic is the scalar formulas'
 * (contraction off, fma only where written), so the bits do not depend on
 * the lanes. The last group of a plane that is not a multiple of the
 * lanes loads its missing lanes as 0 and stores only its own. The
 * finishing kernels, in double, take their work-item's pixels as two
 * vectors of 4 (FIN_LANES): a vector of 8 doubles is wider than the
 * registers of a device without AVX-512, whose compiler then warns at
 * every call that passes one. */
#define STAT_LANES 8
typedef float8 statv;

inline statv stat_load(__global const float *p, int m) {
  if (m == STAT_LANES) return vload8(0, p);
  float t[STAT_LANES];
  for (int j = 0; j < STAT_LANES; j++)
    t[j] = j < m ? p[j] : 0.0f;
  return vload8(0, t);
}

inline void stat_store(statv v, __global float *p, int m) {
  if (m == STAT_LANES) {
    vstore8(v, 0, p);
    return;
  }
  float t[STAT_LANES];
  vstore8(v, 0, t);
  for (int j = 0; j < m; j++)
    p[j] = t[j];
}

#define FIN_LANES 4

/* m (<= FIN_LANES) pixels from p as finv, the missing lanes 0. */
inline finv fin_load(__global const float *p, int m) {
  if (m == FIN_LANES) return convert_finv(vload4(0, p));
  float t[FIN_LANES];
  for (int j = 0; j < FIN_LANES; j++)
    t[j] = j < m ? p[j] : 0.0f;
  return convert_finv(vload4(0, t));
}

inline void fin_store(float4 v, __global float *p, int m) {
  if (m == FIN_LANES) {
    vstore4(v, 0, p);
    return;
  }
  float t[FIN_LANES];
  vstore4(v, 0, t);
  for (int j = 0; j < m; j++)
    p[j] = t[j];
}

/* s + c += v, with c collecting the exact rounding error of s + v. */
inline void csum(statv *s, statv *c, statv v) {
  statv t = *s + v, bp = t - *s;
  *c += (*s - (t - bp)) + (v - bp);
  *s = t;
}

/* s + c += a·b with the product's rounding error too (fma gives it
 * exactly): a shift by an unlucky first map (a blink) makes the products
 * large, and their roundings would otherwise add up over the frames. */
inline void cprod(statv *s, statv *c, statv a, statv b) {
  statv p = a * b;
  csum(s, c, p);
  *c += fma(a, b, -p);
}

/* Folds maps[0 .. n) (planes of `plane` floats from float `offset` of
 * maps, time order) into the statistic of pixels i .. i + STAT_LANES − 1
 * (the state from float `acc_offset` of acc), whose timepoint already has
 * `first` frames (0: the first of these maps starts it). */
__kernel void esrrf_fold(__global const float *maps, __global float *acc,
                         int n, int first, int kind, long plane,
                         long offset, long acc_offset) {
  long i = (long)get_global_id(0) * STAT_LANES;
  if (i >= plane || n <= 0) return;
  int m = (int)min((long)STAT_LANES, plane - i);
  maps += offset + i;
  __global float *a = acc + acc_offset + i;
  const statv zero = 0.0f;
  statv x0 = zero, s0 = zero, c0 = zero, s1 = zero, c1 = zero, last = zero;
  if (first == 0) {
    if (kind) x0 = stat_load(maps, m);
  } else {
    if (kind) x0 = stat_load(a, m);
    s0 = stat_load(a + (kind != 0) * plane, m);
    c0 = stat_load(a + (1 + (kind != 0)) * plane, m);
    if (kind) {
      s1 = stat_load(a + 3 * plane, m);
      c1 = stat_load(a + 4 * plane, m);
    }
    if (kind == 2) last = stat_load(a + 5 * plane, m);
  }
  for (int k = 0; k < n; k++) {
    statv x = stat_load(maps + k * plane, m);
    if (kind == 0) {
      csum(&s0, &c0, x);
      continue;
    }
    statv y = x - x0;
    csum(&s0, &c0, y);
    if (kind == 1) {
      cprod(&s1, &c1, y, y);
    } else {
      if (first + k > 0) cprod(&s1, &c1, last, y);
      last = y;
    }
  }
  if (kind == 0) {
    stat_store(s0, a, m);
    stat_store(c0, a + plane, m);
    return;
  }
  stat_store(x0, a, m);
  stat_store(s0, a + plane, m);
  stat_store(c0, a + 2 * plane, m);
  stat_store(s1, a + 3 * plane, m);
  stat_store(c1, a + 4 * plane, m);
  if (kind == 2) stat_store(last, a + 5 * plane, m);
}

/* The statistic of n frames from its combined sums (the formulas of
 * methods/esrrf/temporal.c): avg the mean of s = Σ x; var the population
 * variance from sy = Σ y, s1 = Σ y²; tac2 the lag-1 autocovariance about
 * the mean over n − 1 from sy, s1 = Σ y_t·y_{t+1} and `last` (the last
 * frame's y), where y_t = x_t − x_0 so that the first frame's y is 0:
 * Σ_{t<n−1} (y_t − μ)(y_{t+1} − μ) = s1 − μ·(2·sy − last) + (n − 1)·μ². */
inline float4 stat_value(int kind, finv dn, finv sy, finv s1, finv last) {
  if (kind == 0) return convert_float4(sy / dn);
  finv mu = sy / dn;
  if (kind == 1) {
    finv v = s1 / dn - mu * mu;
    return convert_float4(select((finv)0, v, v > 0));
  }
  finv s = s1 - mu * (2 * sy - last) + (dn - 1) * mu * mu;
  return convert_float4(s / (dn - 1));
}

/* The statistic of the n frames folded (stat_value), FIN_LANES pixels at
 * a time. */
__kernel void esrrf_stat_finish(__global const float *acc,
                                __global float *out, int n, int kind,
                                long plane) {
  for (long i = (long)get_global_id(0) * STAT_LANES,
            e = min(i + STAT_LANES, plane);
       i < e; i += FIN_LANES) {
    int m = (int)min((long)FIN_LANES, e - i);
    __global const float *a = acc + i;
    finv dn = (finv)n, zero = 0;
    finv sy = kind == 0 ? fin_load(a, m) + fin_load(a + plane, m)
                        : fin_load(a + plane, m) + fin_load(a + 2 * plane, m);
    finv s1 = kind == 0 ? zero
                        : fin_load(a + 3 * plane, m) +
                              fin_load(a + 4 * plane, m);
    finv last = kind == 2 ? fin_load(a + 5 * plane, m) : zero;
    fin_store(stat_value(kind, dn, sy, s1, last), out + i, m);
  }
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
 * once per update; then stat_value over n = blocks·every.
 * mode 0: all the blocks into out. mode 1 (prepare, blocks >= 2): the
 * blocks but the newest into the running sums in `pre` (slot s of pixel
 * i at pre[s·plane + i]: Sy as a float pair hi, lo, then x0, Sq or P as a
 * pair, last + d as a pair; avg only Sy), nothing into out. mode 2: the
 * sums in pre, then the newest block, into out: an update whose older
 * blocks were combined while the newest was still filling reads two
 * states instead of `blocks`. A pair keeps a double to about 2^-48 of its
 * value (hi its float rounding, lo the rest), so modes 1 + 2 agree with
 * mode 0 to far below the float result's rounding, not to its bits. */
inline void pair_store(finv v, __global float *p, long plane, int m) {
  float4 hi = convert_float4(v);
  fin_store(hi, p, m);
  fin_store(convert_float4(v - convert_finv(hi)), p + plane, m);
}

inline finv pair_load(__global const float *p, long plane, int m) {
  return fin_load(p, m) + fin_load(p + plane, m);
}

__kernel void esrrf_window_finish(__global const float *acc,
                                  __global float *out, int every, int kind,
                                  long plane, int blocks, int oldest,
                                  __global float *pre, int mode) {
  long slots = kind == 0 ? 2 : kind == 1 ? 5 : 6;
  for (long i = (long)get_global_id(0) * STAT_LANES,
            e = min(i + STAT_LANES, plane);
       i < e; i += FIN_LANES) {
    int m = (int)min((long)FIN_LANES, e - i);
    finv k = (finv)every, x0 = 0, sy = 0, s1 = 0, prev = 0;
    __global float *pr = pre + i;
    int j0 = mode == 2 ? blocks - 1 : 0, j1 = mode == 1 ? blocks - 1 : blocks;
    if (mode == 2) {
      sy = pair_load(pr, plane, m);
      if (kind) {
        x0 = fin_load(pr + 2 * plane, m);
        s1 = pair_load(pr + 3 * plane, plane, m);
      }
      if (kind == 2) prev = pair_load(pr + 5 * plane, plane, m);
    }
    for (int j = j0; j < j1; j++) {
      int b = oldest + j < blocks ? oldest + j : oldest + j - blocks;
      __global const float *a = acc + (long)b * slots * plane + i;
      if (kind == 0) {
        sy += fin_load(a, m) + fin_load(a + plane, m);
        continue;
      }
      finv xb = fin_load(a, m);
      if (j == 0) x0 = xb;
      finv d = xb - x0;
      finv syb = fin_load(a + plane, m) + fin_load(a + 2 * plane, m);
      finv s1b = fin_load(a + 3 * plane, m) + fin_load(a + 4 * plane, m);
      sy += syb + k * d;
      if (kind == 1) {
        s1 += s1b + 2 * d * syb + k * d * d;
        continue;
      }
      finv lb = fin_load(a + 5 * plane, m);
      s1 += s1b + d * (2 * syb - lb) + (k - 1) * d * d;
      if (j > 0) s1 += prev * d;
      prev = lb + d;
    }
    if (mode != 1) {
      fin_store(stat_value(kind, k * (finv)blocks, sy, s1, prev), out + i,
                m);
      continue;
    }
    pair_store(sy, pr, plane, m);
    if (kind) {
      fin_store(convert_float4(x0), pr + 2 * plane, m);
      pair_store(s1, pr + 3 * plane, plane, m);
    }
    if (kind == 2) pair_store(prev, pr + 5 * plane, plane, m);
  }
}
