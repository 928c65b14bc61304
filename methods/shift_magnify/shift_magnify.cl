/* shift_magnify.cl — Catmull-Rom shift and magnify, one work-item per
 * output pixel: global (out cols, out rows, frames in the batch). The math
 * is math/catmull_rom.h, the same code the C implementations run, in the
 * device's float (the reference's GPU precision). */
#include "methods/shift_magnify/catmull_rom.h"

__kernel void shift_magnify(__global const float *in, __global float *out,
                            int n_frames, int rows, int cols, float shift_row,
                            float shift_col, float mag_row, float mag_col) {
  int j = (int)get_global_id(0), i = (int)get_global_id(1);
  int f = (int)get_global_id(2);
  if (f >= n_frames) return;
  int orows = (int)get_global_size(1), ocols = (int)get_global_size(0);
  const __global float *img = in + (long)f * rows * cols;
  float r = cr_source(i, mag_row, shift_row);
  float c = cr_source(j, mag_col, shift_col);
  out[((long)f * orows + i) * ocols + j] = cr_sample(img, r, c, rows, cols);
}
