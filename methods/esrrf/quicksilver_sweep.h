/*
 * quicksilver_sweep.h — choosing eSRRF's radius and sensitivity with
 * evidence: one call sweeps a grid of parameters over one stack and scores
 * every point by fidelity and resolution, as NanoPyx 2.1.5's
 * ParameterSweep (run_esrrf_parameter_sweep) and NanoJ-eSRRF do:
 *
 *   reconstruction  eSRRF of the stack at the point (temporal statistic
 *                   over all frames; no macro-pixel correction unless
 *                   asked, as NanoPyx's sweep);
 *   RSP, RSE        SQUIRREL (method "squirrel") of the reconstruction
 *                   against the stack's mean;
 *   FRC             the FIRE resolution (method "frc", NanoPyx's 1/7
 *                   threshold; in reconstruction pixels, 0 when the curve
 *                   never crosses) between the reconstructions of the odd
 *                   frames (1, 3, ...) and of the even frames (0, 2, ...);
 *   QnR             2·RSP·nFRC / (RSP + nFRC), nFRC the FRC map of the
 *                   temporal order through NanoPyx's logistic rescaling
 *                   over its own range (so QnR compares points within one
 *                   sweep only).
 *
 * What the points share is computed once: per batch of frames the ×M
 * intensity is made once for every point; per radius the convergence is
 * made once, as eSRRF's per-frame maps (temporal none, sensitivity 1, no
 * intensity weighting: its fused paths make the gradients on the fly), and
 * each sensitivity takes its power and the intensity from it (eSRRF's own
 * order of operations: bit-identical to eSRRF run with the implementation
 * forced for every step; with the engine's choices within the vector
 * paths' 1e-6, whose fused ×M intensity is float); every frame's
 * map folds into three statistics per point (all, odd, even frames) in the
 * same pass, in tiles of pixels whose statistics stay in cache over a
 * batch of frames. The scores of a group of radii take one SQUIRREL call
 * for all its reconstructions (the stack's mean, its interpolation and
 * its transform made once). Each step runs through qs_method_run, so the
 * engine chooses, times and records it like any call (or runs the
 * implementation the options force).
 *
 * Memory: three statistics per point of R·M·C·M pixels in double (1, 2 or
 * 4 per pixel for avg, var, tac2); when the points would take more than
 * memory_mb, the radii are taken in groups, one pass over the frames per
 * group. Plus one batch of frames through the steps, which write into the
 * sweep's own buffers (a radius's convergence and the ×M images: 8·R·M·C·M
 * bytes a frame, and what the chosen eSRRF implementation needs inside its
 * call; each radius's batch folds as soon as it is made), a group's
 * reconstructions and SQUIRREL's
 * (empty) maps of them (8·R·M·C·M bytes a point) and, if asked, each
 * point's reconstruction.
 *
 * Compiles as C11 and C++; the library never prints. */
#ifndef QUICKSILVER_SWEEP_H
#define QUICKSILVER_SWEEP_H

#include "quicksilver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What to sweep. Zero-initialised fields mean the defaults given. */
typedef struct qs_esrrf_sweep_options {
  const double *radii;         /* > 0 each (rgc's range); at least one */
  size_t n_radii;
  const double *sensitivities; /* >= 0 each; at least one */
  size_t n_sensitivities;
  const int *temporal;         /* eSRRF's statistics (0 avg, 1 var, 2
                                  tac2); NULL: avg only */
  size_t n_temporal;
  int magnification;           /* 0: 5 */
  int no_intensity_weighting;  /* nonzero: RGC without the intensity */
  int macro_pixel_correction;  /* nonzero: corrected reconstructions
                                  (NanoPyx's sweep has none) */
  int no_rsp;                  /* nonzero: no SQUIRREL (RSP, RSE: NaN) */
  int no_frc;                  /* nonzero: no FRC (FRC: NaN; 1 frame ok) */
  int keep_images;             /* nonzero: each point's reconstruction */
  const char *impl;            /* as run_request.impl for every step
                                  (NULL: the engine chooses each) */
  long memory_mb;              /* the statistics' bound (0: 1024) */
  /* Called with the work done and its total in frames × radii (each
   * radius counts the stack's frames as its convergences are made): after
   * each radius's step and from within every step (as run_request's hook,
   * the step's share of its frames included); a nonzero return stops the
   * sweep with QS_ECANCELLED. NULL: none. */
  qs_progress_fn progress;
  void *progress_ctx;
} qs_esrrf_sweep_options;

/* One point of the grid. */
typedef struct qs_esrrf_sweep_point {
  double radius, sensitivity;
  int temporal;
  double rsp, rse, sigma; /* SQUIRREL; sigma in reconstruction pixels */
  double frc;             /* FIRE resolution, reconstruction pixels */
  double qnr;
  qs_image recon; /* keep_images: (1, R·M, C·M); else empty */
} qs_esrrf_sweep_point;

#define QS_SWEEP_IMPL_MAX 128

/* The points, temporal outermost, then sensitivity, then radius: point
 * ((t · S) + s) · R + r, as NanoPyx's QnR[s, r] for each statistic. */
typedef struct qs_esrrf_sweep_result {
  size_t n_points, n_radii, n_sensitivities, n_temporal;
  qs_esrrf_sweep_point *points;
  size_t passes;          /* passes over the frames (radius groups) */
  /* The implementations eSRRF's steps ran (their convergences), distinct,
   * in the order first met, comma-separated: what made the points, for
   * their provenance. */
  char impl[QS_SWEEP_IMPL_MAX];
} qs_esrrf_sweep_result;

/* Sweeps the options' grid over `stack` (F × R × C) on e. On failure the
 * result is empty and err (may be NULL) names the field at fault:
 * QS_EPARAM for an empty list, a value out of range or a bad
 * magnification; QS_ESHAPE for a stack of fewer than 2 frames when FRC
 * is asked (odd and even frames), or too small for FRC; QS_EINVAL for a
 * NaN or infinite pixel; QS_ENOMEM; a step's own status with its message;
 * QS_ECANCELLED when progress cancelled. *out is written only on
 * success. */
QS_API int qs_esrrf_sweep(qs_engine *e, const qs_image *stack,
                          const qs_esrrf_sweep_options *o,
                          qs_esrrf_sweep_result *out, char *err,
                          size_t err_len);

/* Frees the points and their images; empties *r (safe on an empty one). */
QS_API void qs_esrrf_sweep_free(qs_esrrf_sweep_result *r);

/* NanoPyx's QnR of n points (rsp[i], frc[i]) into qnr: the logistic
 * rescaling of frc over its finite range, then 2·RSP·nFRC / (RSP + nFRC)
 * (0 where that is 0/0 or not finite). */
QS_API void qs_esrrf_sweep_qnr(const double *rsp, const double *frc, size_t n,
                               double *qnr);

#ifdef __cplusplus
}
#endif

#endif /* QUICKSILVER_SWEEP_H */
