/* esrrf.cl — eSRRF's chain on the device without the ×2M gradient images
 * (the host file is methods/esrrf/opencl.c). RGC reads the ×2M Catmull-Rom
 * gradients only at half-pixel positions, so esrrf_grid computes exactly
 * those samples from the raw frames, Roberts cross included (4·(2R+1)·(2C+1)
 * bytes per gradient and frame instead of 4·(2RM)·(2CM)), which rgc.cl's
 * kernel then reads as an rgc_grid_half. The per-pixel math is the C
 * code's: math/roberts.h, math/catmull_rom.h. */
#include "math/catmull_rom.h"
#include "math/roberts.h"

/* Grid point (b, a) of frame f: the ×2M Catmull-Rom samples of both
 * Roberts gradients at half-pixel index (a, b), the last row/column at the
 * reference's clamped index. global (2·cols + 1, 2·rows + 1, frames). The
 * sums run in cr_apply's order over gradients computed where the taps
 * fall. */
__kernel void esrrf_grid(__global const float *in, __global float *gx,
                         __global float *gy, int n_frames, int rows, int cols,
                         int mag) {
  int b = (int)get_global_id(0), a = (int)get_global_id(1);
  int f = (int)get_global_id(2);
  if (f >= n_frames) return;
  int gw = (int)get_global_size(0), gh = (int)get_global_size(1);
  const __global float *img = in + (long)f * rows * cols;
  float m2 = (float)(2 * mag);
  cr_taps rt, ct;
  if (a < gh - 1)
    cr_taps_half(a, rows, &rt);
  else
    cr_taps_at(cr_source(2 * rows * mag - 1, m2, 0.0f), rows, &rt);
  if (b < gw - 1)
    cr_taps_half(b, cols, &ct);
  else
    cr_taps_at(cr_source(2 * cols * mag - 1, m2, 0.0f), cols, &ct);
  QS_ACC qc = 0, qr = 0;
  for (int j = 0; j < ct.n; j++) {
    QS_ACC pc = 0, pr = 0;
    for (int i = 0; i < rt.n; i++) {
      float gc, gr;
      rc_at(img, cols, rt.first + i, ct.first + j, &gc, &gr);
      pc = pc + (QS_ACC)gc * rt.w[i];
      pr = pr + (QS_ACC)gr * rt.w[i];
    }
    qc = qc + pc * ct.w[j];
    qr = qr + pr * ct.w[j];
  }
  long at = ((long)f * gh + a) * gw + b;
  gx[at] = (float)qc;
  gy[at] = (float)qr;
}
