/* sweep_fold_vec.h — the body of one vector variant of sweep_fold.h,
 * included by sweep_fold.c once per instruction set after it defines:
 *
 *   SF_TARGET       the function attribute that selects the set
 *   SF_(name)       the variant's name for a function (name ## _avx2 ...)
 *   SF_LANES        pixels per step (4 or 8)
 *   sf_vf, sf_vd    the vector types of SF_LANES floats and doubles
 *   SF_LOADF(p), SF_STOREF(p, v), SF_MULF(a, b), SF_LOADD(p),
 *   SF_STORED(p, v), SF_ADDD(a, b), SF_MULD(a, b)
 *   SF_POS(x)       x with its negative lanes +0 (−0 and NaN kept)
 *   SF_UP(x), SF_DOWN(y)   floats to doubles and back (round to nearest)
 *   SF_FIX(xd, y, n)  an unsigned bit per lane, set at least for NaN x
 *                   and, for n > 2, the lanes rgc_pow_whole sends to pow
 *                   (y within 32 double ulps of a float rounding boundary
 *                   or outside [2^-126, 2^127), not below 2^-151); a
 *                   marked lane is only recomputed, so one more costs
 *                   time, not bits. x = ±0 gives y = ±0, a safe lane.
 *
 * sf_one, sf_whole, sf_map, sf_add and sf_map_add (sweep_fold.c) are the
 * portable definitions the lanes reproduce. */

/* The lanes of the map at i with the power n (1: none) known at compile
 * time: every lane through rgc_pow_whole's products, and the lanes that
 * needs pow marked in *fix (rgc_pow_whole's order of products). */
static inline __attribute__((always_inline)) SF_TARGET sf_vf
SF_(sf_lanes)(const float *v, const float *img, int n, size_t i,
              unsigned *fix) {
  sf_vf x = SF_POS(SF_LOADF(v + i)), r = x;
  *fix = 0;
  if (n > 1) {
    sf_vd xd = SF_UP(x), x2 = SF_MULD(xd, xd), x4 = SF_MULD(x2, x2), y;
    switch (n) {
    case 2: y = x2; break;
    case 3: y = SF_MULD(x2, xd); break;
    case 4: y = x4; break;
    case 5: y = SF_MULD(x4, xd); break;
    case 6: y = SF_MULD(x4, x2); break;
    case 7: y = SF_MULD(SF_MULD(x4, x2), xd); break;
    default: y = SF_MULD(x4, x4); break;
    }
    *fix = SF_FIX(xd, y, n);
    r = SF_DOWN(y);
  }
  return img ? SF_MULF(r, SF_LOADF(img + i)) : r;
}

/* The map with the power n: the lanes, then the marked ones by sf_one. */
static inline __attribute__((always_inline)) SF_TARGET void
SF_(sf_pow)(const float *v, const float *img, float sens, int n, size_t len,
            float *out) {
  size_t i = 0;
  for (; i + SF_LANES <= len; i += SF_LANES) {
    unsigned fix;
    SF_STOREF(out + i, SF_(sf_lanes)(v, img, n, i, &fix));
    for (; fix; fix &= fix - 1) {
      size_t l = i + (size_t)__builtin_ctz(fix);
      out[l] = sf_one(v, img, sens, l);
    }
  }
  for (; i < len; i++) out[i] = sf_one(v, img, sens, i);
}

/* map_add with the power n: the lanes (the marked ones patched through a
 * buffer), widened and added as sf_add adds them. */
static inline __attribute__((always_inline)) SF_TARGET void
SF_(sf_pow_add)(const float *v, const float *img, float sens, int n,
                double *s, double *t, size_t b, size_t e) {
  size_t i = b;
  for (; i + SF_LANES <= e; i += SF_LANES) {
    unsigned fix;
    sf_vf r = SF_(sf_lanes)(v, img, n, i, &fix);
    if (fix) {
      float buf[SF_LANES];
      SF_STOREF(buf, r);
      for (; fix; fix &= fix - 1) {
        unsigned l = (unsigned)__builtin_ctz(fix);
        buf[l] = sf_one(v, img, sens, i + l);
      }
      r = SF_LOADF(buf);
    }
    sf_vd d = SF_UP(r);
    SF_STORED(s + i, SF_ADDD(SF_LOADD(s + i), d));
    if (t) SF_STORED(t + i, SF_ADDD(SF_LOADD(t + i), d));
  }
  for (; i < e; i++) {
    float x = sf_one(v, img, sens, i);
    s[i] += x;
    if (t) t[i] += x;
  }
}

SF_TARGET static void SF_(sf_map)(const float *v, const float *img,
                                  float sens, size_t n, float *out) {
  switch (sf_whole(sens)) {
  case 1: SF_(sf_pow)(v, img, sens, 1, n, out); break;
  case 2: SF_(sf_pow)(v, img, sens, 2, n, out); break;
  case 3: SF_(sf_pow)(v, img, sens, 3, n, out); break;
  case 4: SF_(sf_pow)(v, img, sens, 4, n, out); break;
  case 5: SF_(sf_pow)(v, img, sens, 5, n, out); break;
  case 6: SF_(sf_pow)(v, img, sens, 6, n, out); break;
  case 7: SF_(sf_pow)(v, img, sens, 7, n, out); break;
  case 8: SF_(sf_pow)(v, img, sens, 8, n, out); break;
  default: sf_map(v, img, sens, n, out); break;
  }
}

SF_TARGET static void SF_(sf_add)(qs_esrrf_partial *a, qs_esrrf_partial *h,
                                  const float *x, size_t b, size_t e) {
  double *s = a->data, *t = h ? h->data : NULL;
  size_t i = b;
  for (; i + SF_LANES <= e; i += SF_LANES) {
    sf_vd d = SF_UP(SF_LOADF(x + i));
    SF_STORED(s + i, SF_ADDD(SF_LOADD(s + i), d));
    if (t) SF_STORED(t + i, SF_ADDD(SF_LOADD(t + i), d));
  }
  if (i < e) sf_add(a, h, x, i, e);
}

SF_TARGET static void SF_(sf_map_add)(const float *v, const float *img,
                                      float sens, qs_esrrf_partial *a,
                                      qs_esrrf_partial *h, size_t b,
                                      size_t e) {
  double *s = a->data, *t = h ? h->data : NULL;
  switch (sf_whole(sens)) {
  case 1: SF_(sf_pow_add)(v, img, sens, 1, s, t, b, e); break;
  case 2: SF_(sf_pow_add)(v, img, sens, 2, s, t, b, e); break;
  case 3: SF_(sf_pow_add)(v, img, sens, 3, s, t, b, e); break;
  case 4: SF_(sf_pow_add)(v, img, sens, 4, s, t, b, e); break;
  case 5: SF_(sf_pow_add)(v, img, sens, 5, s, t, b, e); break;
  case 6: SF_(sf_pow_add)(v, img, sens, 6, s, t, b, e); break;
  case 7: SF_(sf_pow_add)(v, img, sens, 7, s, t, b, e); break;
  case 8: SF_(sf_pow_add)(v, img, sens, 8, s, t, b, e); break;
  default: sf_map_add(v, img, sens, a, h, b, e); break;
  }
}
