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

/* The statistic is fixed when the program is built (methods/esrrf/cl_stat.c
 * builds one program per statistic): each kernel then holds only its
 * statistic's arithmetic, with no branch on it. Against a kind passed at
 * run time, the window's image took about 0.6 of the time and the fold
 * about half on PoCL (avg, 1280² maps). */
#ifndef STAT_KIND
#error "esrrf_stat.cl is built with -DSTAT_KIND=0 (avg), 1 (var) or 2 (tac2)"
#endif

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

/* CALL(i, m) for the work-item's STAT_LANES pixels from i in groups of m
 * = FIN_LANES (in a kernel with `plane`), the lane count a constant where
 * the group is full (all but a plane's last): fin_load and fin_store then
 * compile to plain vector accesses. With the count known only at run
 * time, a branch stayed in every access and the window's image kernel
 * ran at about a third of the speed on PoCL. */
#define FOR_GROUPS(CALL)                                                     \
  do {                                                                       \
    long i_ = (long)get_global_id(0) * STAT_LANES;                           \
    if (i_ + STAT_LANES <= plane) {                                          \
      CALL(i_, FIN_LANES);                                                   \
      CALL(i_ + FIN_LANES, FIN_LANES);                                       \
    } else {                                                                 \
      for (; i_ < plane; i_ += FIN_LANES)                                    \
        CALL(i_, (int)min((long)FIN_LANES, plane - i_));                     \
    }                                                                        \
  } while (0)

/* The window's kernels take RUN_GROUPS groups of FIN_LANES pixels per
 * work-item (the first `ng`, the last of
 * them `mlast` pixels wide) and go state by state, each state's run of
 * the work-item's pixels at once. With one group per work-item every
 * state read or written was a stream of 16-byte steps, and with ten
 * blocks (34 streams) a block's flip took 3.6 times what it took with
 * four. With runs of 16 groups, at 1280² maps and ten blocks on PoCL
 * (bench/window), the flip takes 6.6–9.7 ms instead of 16–22 (avg), 22–26
 * instead of 44–71 (var), 23–31 instead of 52–100 (tac2); the growth of
 * back 1.3–1.5 ms instead of 2.3–2.5 (avg); the update's image 1.4–1.8
 * instead of 1.7–2.0 (avg), 3.8–3.9 instead of 6.0 (var). 8 groups were
 * as good for avg but no better than 1 for var and tac2 (the device
 * compiler's register allocation). */
#define RUN_GROUPS 16

/* CALL(i, ng, mlast) for the work-item's run of RUN_GROUPS groups from
 * i (in a kernel with `plane`): all of them FIN_LANES wide (constants),
 * or at a plane's end the ng groups left, the last mlast wide. */
#define FOR_RUNS(CALL)                                                       \
  do {                                                                       \
    long i_ = (long)get_global_id(0) * RUN_GROUPS * FIN_LANES;              \
    if (i_ + RUN_GROUPS * FIN_LANES <= plane) {                             \
      CALL(i_, RUN_GROUPS, FIN_LANES);                                      \
    } else if (i_ < plane) {                                                 \
      long left_ = plane - i_;                                               \
      int ng_ = (int)((left_ + FIN_LANES - 1) / FIN_LANES);                  \
      CALL(i_, ng_, (int)(left_ - (ng_ - 1) * FIN_LANES));                   \
    }                                                                        \
  } while (0)

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
                         int n, int first, long plane, long offset,
                         long acc_offset) {
  const int kind = STAT_KIND;
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

/* The statistic of the n frames folded (stat_value), of the m pixels from
 * i. */
inline void stat_finish_at(__global const float *acc, __global float *out,
                           long i, int m, int n, long plane) {
  const int kind = STAT_KIND;
  __global const float *a = acc + i;
  finv dn = (finv)n, zero = 0;
  finv sy = kind == 0 ? fin_load(a, m) + fin_load(a + plane, m)
                      : fin_load(a + plane, m) + fin_load(a + 2 * plane, m);
  finv s1 = kind == 0 ? zero
                      : fin_load(a + 3 * plane, m) + fin_load(a + 4 * plane, m);
  finv last = kind == 2 ? fin_load(a + 5 * plane, m) : zero;
  fin_store(stat_value(kind, dn, sy, s1, last), out + i, m);
}

/* The statistic of the n frames folded, FIN_LANES pixels at a time. */
__kernel void esrrf_stat_finish(__global const float *acc,
                                __global float *out, int n, long plane) {
#define FINISH(I, M) stat_finish_at(acc, out, I, M, n, plane)
  FOR_GROUPS(FINISH);
#undef FINISH
}

/* A sliding window's statistic from states of `every`-frame blocks, in
 * one buffer: state b's slot s of pixel i at acc[(b·slots + s)·plane + i],
 * states 0 .. blocks − 1 the window's ring of blocks, state `blocks` (with
 * three blocks or more) the running merge `back` of the host's two stacks
 * (methods/esrrf/cl_stat.c, "sliding window"). A state is a block as
 * esrrf_fold left it (shifted by its first frame x0, compensated pairs
 * (s, c)) or, written here, the merge of consecutive blocks in the same
 * layout: x0 the oldest block's, each sum a float pair (hi, lo: about
 * 2^-48 of its value) in place of (s, c), and for tac2 `last` (the last
 * frame's y relative to that x0) rounded to one float: a 7th float would
 * cost every block a plane, and with it (kept as a pair, tried) the worst
 * tac2 error of tests/test_clwin.c against the double host fold stays the
 * same, 2.2e-7 of the peak: the float result and the blocks' float sums
 * dominate (the rounding of last enters the sums as last·d and μ·last,
 * 2^-24 of them).
 * Merge of A (older, x0_A) and B (newer, n_B frames, x0_B), with d = x0_B
 * − x0_A (exact in double): a frame of B has Y = y + d, so
 *   avg   S   = S_A + S_B
 *   var   Sy  = Sy_A + Sy_B + n_B·d
 *         Sq  = Sq_A + Sq_B + 2·d·Sy_B + n_B·d²
 *   tac2  Sy as var;
 *         P   = P_A + P_B + d·(2·Sy_B − last_B) + (n_B − 1)·d² + last_A·d
 *         last = last_B + d
 * (inside B, Σ (y_t + d)(y_{t+1} + d) over its n_B − 1 pairs adds
 * d·((Sy_B − last_B) + Sy_B) since B's first y is 0; the pair across the
 * boundary is (last_A)·(0 + d)). The result keeps A's shift, so a
 * window's first Y is 0 as stat_value wants. In double where the device
 * has fp64. */
inline void pair_store(finv v, __global float *p, long plane, int m) {
  float4 hi = convert_float4(v);
  fin_store(hi, p, m);
  fin_store(convert_float4(v - convert_finv(hi)), p + plane, m);
}

inline finv pair_load(__global const float *p, long plane, int m) {
  return fin_load(p, m) + fin_load(p + plane, m);
}

/* A state's sums from a into the variables X0, SY, S1, LAST (in a
 * kernel with `kind`, `plane` and `m`). Macros on named variables: with
 * functions taking the variables' addresses the device compiler (PoCL)
 * kept them in memory, and the kernel took 1.6 times as long. */
#define WS_LOAD(a, X0, SY, S1, LAST)                                         \
  do {                                                                       \
    if (kind == 0) {                                                         \
      SY = pair_load((a), plane, m);                                         \
    } else {                                                                 \
      X0 = fin_load((a), m);                                                 \
      SY = pair_load((a) + plane, plane, m);                                 \
      S1 = pair_load((a) + 3 * plane, plane, m);                             \
      if (kind == 2) LAST = fin_load((a) + 5 * plane, m);                    \
    }                                                                        \
  } while (0)

/* The sums X0 .. LAST of an older state merged with those of a newer one
 * (BX0 .. BLAST, NB frames), in the older one's shift. */
#define WS_MERGE(X0, SY, S1, LAST, BX0, BSY, BS1, BLAST, NB)                 \
  do {                                                                       \
    if (kind == 0) {                                                         \
      SY += (BSY);                                                           \
    } else {                                                                 \
      finv d_ = (BX0) - (X0), nb_ = (NB);                                    \
      if (kind == 1) {                                                       \
        S1 += (BS1) + 2 * d_ * (BSY) + nb_ * d_ * d_;                        \
      } else {                                                               \
        S1 += (BS1) + d_ * (2 * (BSY) - (BLAST)) + (nb_ - 1) * d_ * d_ +     \
              (LAST) * d_;                                                   \
        LAST = (BLAST) + d_;                                                 \
      }                                                                      \
      SY += (BSY) + nb_ * d_;                                                \
    }                                                                        \
  } while (0)

/* A state's sums into a; its shift x0 only `with_x0` (a merge into the
 * older state keeps the older's shift, which the state already holds:
 * one plane of var's five and tac2's six not written again). */
inline void ws_store(__global float *a, long plane, int kind, int m,
                     int with_x0, finv x0, finv sy, finv s1, finv last) {
  if (kind == 0) {
    pair_store(sy, a, plane, m);
    return;
  }
  if (with_x0) fin_store(convert_float4(x0), a, m); /* a float: exact */
  pair_store(sy, a + plane, plane, m);
  pair_store(s1, a + 3 * plane, plane, m);
  if (kind == 2) fin_store(convert_float4(last), a + 5 * plane, m);
}

/* Position j of a run of blocks from state r0 in the ring of `blocks`
 * (r0 < blocks, j < blocks): a compare instead of an integer division per
 * pixel group and block. */
inline int ring_at(int r0, int j, int blocks) {
  int b = r0 + j;
  return b < blocks ? b : b - blocks;
}

/* The sums of state A for the run's ng groups into the arrays x0, sy,
 * s1, last (of RUN_GROUPS), and state A's (NB frames, newer) merged into
 * them; in a function with ng, mlast, kind, plane and cx0 .. clast. */
#define RUN_LOAD(A)                                                          \
  for (int g = 0; g < ng; g++) {                                             \
    int m = g == ng - 1 ? mlast : FIN_LANES;                                 \
    x0[g] = sy[g] = s1[g] = last[g] = 0;                                     \
    WS_LOAD((A) + g * FIN_LANES, x0[g], sy[g], s1[g], last[g]);              \
  }
#define RUN_MERGE(A, NB)                                                     \
  for (int g = 0; g < ng; g++) {                                             \
    int m = g == ng - 1 ? mlast : FIN_LANES;                                 \
    WS_LOAD((A) + g * FIN_LANES, cx0, csy, cs1, clast);                      \
    WS_MERGE(x0[g], sy[g], s1[g], last[g], cx0, csy, cs1, clast, NB);        \
  }

/* The flip for the run of ng groups from i (FOR_RUNS). */
inline void window_flip_at(__global float *acc, __global float *out, long i,
                           int ng, int mlast, int every, long plane,
                           int blocks, int r0, int rn, int to_out) {
  const int kind = STAT_KIND;
  long slots = kind == 0 ? 2 : kind == 1 ? 5 : 6;
  __global float *base = acc + i;
  long step = slots * plane;
  finv k = (finv)every, n = k;
  finv x0[RUN_GROUPS], sy[RUN_GROUPS], s1[RUN_GROUPS], last[RUN_GROUPS];
  finv cx0 = 0, csy = 0, cs1 = 0, clast = 0;
  int b = ring_at(r0, rn - 1, blocks);
  RUN_LOAD(base + b * step);
  for (int j = rn - 2; j >= 0; j--) {
    b = ring_at(r0, j, blocks);
    for (int g = 0; g < ng; g++) {
      int m = g == ng - 1 ? mlast : FIN_LANES;
      __global float *a = base + b * step + g * FIN_LANES;
      WS_LOAD(a, cx0, csy, cs1, clast);
      WS_MERGE(cx0, csy, cs1, clast, x0[g], sy[g], s1[g], last[g], n);
      x0[g] = cx0, sy[g] = csy, s1[g] = cs1, last[g] = clast;
      ws_store(a, plane, kind, m, 0, cx0, csy, cs1, clast);
    }
    n += k;
  }
  for (int g = 0; to_out && g < ng; g++) {
    int m = g == ng - 1 ? mlast : FIN_LANES;
    fin_store(stat_value(kind, n, sy[g], s1[g], last[g]),
              out + i + g * FIN_LANES, m);
  }
}

/* back's growth over RUN_GROUPS groups of FIN_LANES pixels per
 * work-item (the first `ng`, the last `mlast` pixels wide), block by block
 * as the flip: back (back_n frames; none when 0) merged with the `grow`
 * blocks from state r0, written back. */
inline void window_grow_at(__global float *acc, long i, int ng, int mlast,
                           int every, long plane, int blocks, int back_n,
                           int r0, int grow) {
  const int kind = STAT_KIND;
  long slots = kind == 0 ? 2 : kind == 1 ? 5 : 6;
  __global float *base = acc + i, *back = base + blocks * slots * plane;
  long step = slots * plane;
  finv k = (finv)every;
  finv x0[RUN_GROUPS], sy[RUN_GROUPS], s1[RUN_GROUPS], last[RUN_GROUPS];
  finv cx0 = 0, csy = 0, cs1 = 0, clast = 0;
  /* an empty back becomes the first block */
  RUN_LOAD(back_n > 0 ? back : base + r0 * step);
  for (int j = back_n > 0 ? 0 : 1; j < grow; j++)
    RUN_MERGE(base + ring_at(r0, j, blocks) * step, k);
  for (int g = 0; g < ng; g++) {
    int m = g == ng - 1 ? mlast : FIN_LANES;
    ws_store(back + g * FIN_LANES, plane, kind, m, back_n == 0, x0[g], sy[g],
             s1[g], last[g]);
  }
}

/* back's growth (a step ahead of an update, or an update's first step):
 * back (back_n frames; none when 0) merged with the `grow` blocks from
 * state r0, written back; RUN_GROUPS·FIN_LANES pixels a work-item. The
 * window's kernels share one argument list (the host sets them the same
 * way); here f .. f2_n and rn, flip, to_out are not used. */
__kernel void esrrf_window_grow(__global float *acc, __global float *out,
                                int every, long plane, int blocks,
                                int f, int f_n, int f2, int f2_n, int back_n,
                                int r0, int rn, int grow, int flip,
                                int to_out) {
  (void)out, (void)f, (void)f_n, (void)f2, (void)f2_n, (void)rn;
  (void)flip, (void)to_out;
#define GROW(I, NG, MLAST)                                                   \
  window_grow_at(acc, I, NG, MLAST, every, plane, blocks, back_n, r0, grow)
  FOR_RUNS(GROW);
#undef GROW
}

/* The flip, RUN_GROUPS·FIN_LANES pixels a work-item: the rn blocks from
 * state r0 become in place their suffix merges (the block at j := the
 * merge of blocks j .. rn − 1; the newest stays itself), and with `to_out`
 * the merge of all goes to `out` as the statistic (f .. back_n and grow
 * not used). */
__kernel void esrrf_window_flip(__global float *acc, __global float *out,
                                int every, long plane, int blocks,
                                int f, int f_n, int f2, int f2_n, int back_n,
                                int r0, int rn, int grow, int flip,
                                int to_out) {
  (void)f, (void)f_n, (void)f2, (void)f2_n, (void)back_n, (void)grow;
  (void)flip;
#define FLIP(I, NG, MLAST)                                                   \
  window_flip_at(acc, out, I, NG, MLAST, every, plane, blocks, r0, rn, to_out)
  FOR_RUNS(FLIP);
#undef FLIP
}

/* An update's merge for the run of ng groups from i, read only: state f
 * (f_n frames), state f2 (f2_n frames; none when −1), back (back_n
 * frames; none when 0) and the rn blocks from state r0, merged in time
 * order, to `out` as the statistic. */
inline void window_image_at(__global const float *acc, __global float *out,
                            long i, int ng, int mlast, int every, long plane,
                            int blocks, int f, int f_n, int f2, int f2_n,
                            int back_n, int r0, int rn) {
  const int kind = STAT_KIND;
  long slots = kind == 0 ? 2 : kind == 1 ? 5 : 6;
  __global const float *base = acc + i;
  long step = slots * plane;
  finv k = (finv)every, n = (finv)f_n;
  finv x0[RUN_GROUPS], sy[RUN_GROUPS], s1[RUN_GROUPS], last[RUN_GROUPS];
  finv cx0 = 0, csy = 0, cs1 = 0, clast = 0;
  RUN_LOAD(base + f * step);
  if (f2 >= 0) {
    RUN_MERGE(base + f2 * step, (finv)f2_n);
    n += (finv)f2_n;
  }
  if (back_n > 0) {
    RUN_MERGE(base + blocks * step, (finv)back_n);
    n += (finv)back_n;
  }
  for (int j = 0; j < rn; j++) {
    RUN_MERGE(base + ring_at(r0, j, blocks) * step, k);
    n += k;
  }
  for (int g = 0; g < ng; g++) {
    int m = g == ng - 1 ? mlast : FIN_LANES;
    fin_store(stat_value(kind, n, sy[g], s1[g], last[g]),
              out + i + g * FIN_LANES, m);
  }
}

__kernel void esrrf_window_image(__global const float *acc,
                                 __global float *out, int every,
                                 long plane, int blocks, int f, int f_n,
                                 int f2, int f2_n, int back_n, int r0,
                                 int rn) {
#define IMAGE(I, NG, MLAST)                                                  \
  window_image_at(acc, out, I, NG, MLAST, every, plane, blocks, f, f_n, f2, \
                  f2_n, back_n, r0, rn)
  FOR_RUNS(IMAGE);
#undef IMAGE
}
