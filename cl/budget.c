/* budget.c — how many frames of a batch fit on a device, decided up front
 * from its limits instead of by retrying allocations. Pure arithmetic on a
 * cldev_info, so it is available (and testable) without OpenCL. */
#include <stdio.h>

#include "cl/clrt.h"

/* Share of global memory left to the driver and to other users of the
 * device (PoCL reports a quarter of host memory; GPUs reserve some too). */
#define HEADROOM_PERCENT 10

static uint64_t add_sat(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

int cl_budget_frames(const cldev_info *dev, const size_t *per_frame,
                     const size_t *fixed, size_t n_buffers, size_t wanted,
                     size_t *frames, char *err, size_t err_len) {
  if (frames) *frames = 0;
  if (!dev || !frames || wanted == 0 || (n_buffers && !per_frame)) {
    if (err && err_len)
      snprintf(err, err_len, "cl_budget_frames: %s",
               wanted == 0 ? "wanted frames must be at least 1"
                           : "missing device or buffer sizes");
    return QS_EINVAL;
  }
  uint64_t usable = dev->global_mem - dev->global_mem / 100 * HEADROOM_PERCENT;
  uint64_t fits = wanted, sum_fixed = 0, sum_frame = 0, one = 0;
  size_t worst = 0; /* the buffer that needs most for one frame */
  int too_big = 0;
  for (size_t i = 0; i < n_buffers; i++) {
    uint64_t f = fixed ? fixed[i] : 0, p = per_frame[i];
    uint64_t need = add_sat(f, p);
    if (need > one) {
      one = need;
      worst = i;
    }
    sum_fixed = add_sat(sum_fixed, f);
    sum_frame = add_sat(sum_frame, p);
    if (need > dev->max_alloc) {
      too_big = 1;
      continue;
    }
    if (p && (dev->max_alloc - f) / p < fits) fits = (dev->max_alloc - f) / p;
  }
  uint64_t total = add_sat(sum_fixed, sum_frame);
  if (too_big || total > usable) {
    if (err && err_len)
      snprintf(err, err_len,
               "one frame needs %.1f MiB in %zu buffers (largest: buffer %zu, "
               "%.1f MiB) but device %s offers %.1f MiB of global memory "
               "(%.1f MiB usable after %d%% headroom) and at most %.1f MiB "
               "per buffer",
               mib(total), n_buffers, worst, mib(one),
               dev->slug[0] ? dev->slug : "(unnamed)", mib(dev->global_mem),
               mib(usable), HEADROOM_PERCENT, mib(dev->max_alloc));
    return QS_EDEVMEM;
  }
  if (sum_frame && (usable - sum_fixed) / sum_frame < fits)
    fits = (usable - sum_fixed) / sum_frame;
  *frames = (size_t)fits;
  return QS_OK;
}
