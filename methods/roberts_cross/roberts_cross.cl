/* roberts_cross.cl — Roberts-cross gradients, one work-item per pixel:
 * global (cols, rows, frames in the batch). The stencil is math/roberts.h,
 * the same code the C implementations run. */
#include "methods/roberts_cross/roberts.h"

__kernel void roberts_cross(__global const float *in, __global float *gcol,
                            __global float *grow, int n_frames) {
  int c = (int)get_global_id(0), r = (int)get_global_id(1);
  int f = (int)get_global_id(2);
  if (f >= n_frames) return;
  int rows = (int)get_global_size(1), cols = (int)get_global_size(0);
  long at = ((long)f * rows + r) * cols + c;
  float gc, gr;
  rc_at(in + (long)f * rows * cols, cols, r, c, &gc, &gr);
  gcol[at] = gc;
  grow[at] = gr;
}
