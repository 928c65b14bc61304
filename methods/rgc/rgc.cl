/* rgc.cl — radial gradient convergence, one work-item per output pixel:
 * global (cols·M, rows·M, frames in the batch). The math is math/rgc.h,
 * the same code the C implementations run, in the device's float (the
 * reference's GPU precision). Unlike the reference, every pixel is
 * written: the margins come back as zeros, not as whatever the device
 * memory held.
 *
 * The gradients are laid out as an rgc_grid the host describes: the
 * reference's ×2M images (the rgc method) or the compact half-pixel grid
 * (eSRRF's chained path), g_plane floats per frame. */
#include "methods/rgc/rgc_math.h"

__kernel void rgc(__global const float *gx, __global const float *gy,
                  __global const float *img, __global float *out,
                  int n_frames, int mag, float fwhm, float tss, float tso,
                  float sens, int margin, int weight, int step,
                  float limit_r, float limit_c, float clamp_r, float clamp_c,
                  long width, long g_plane) {
  int x = (int)get_global_id(0), y = (int)get_global_id(1);
  int f = (int)get_global_id(2);
  if (f >= n_frames) return;
  int cols_m = (int)get_global_size(0), rows_m = (int)get_global_size(1);
  long at = ((long)f * rows_m + y) * cols_m + x;
  if (y < margin || y >= rows_m - margin || x < margin ||
      x >= cols_m - margin) {
    out[at] = 0.0f;
    return;
  }
  rgc_grid g;
  g.step = step;
  g.limit_r = limit_r;
  g.limit_c = limit_c;
  g.clamp_r = clamp_r;
  g.clamp_c = clamp_c;
  g.width = width;
  rgc_consts k = rgc_consts_set(fwhm, tss, tso, sens, mag);
  float v = rgc_pixel(x, y, gx + f * g_plane, gy + f * g_plane, g, cols_m,
                      rows_m, k);
  out[at] = weight ? v * img[at] : v;
}
