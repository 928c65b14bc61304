/* fingerprint.c — the names a device's timings are stored under: the
 * stable fingerprint and the first scheme's, kept to find old rows (see
 * clrt.h). Pure functions of the device's info: tests feed them devices
 * that report other memory sizes. */
#include <stdio.h>

#include "cache.h"
#include "clrt.h"

static uint64_t hash_num(uint64_t h, uint64_t v) {
  char text[24];
  snprintf(text, sizeof text, "%llu", (unsigned long long)v);
  return hash_str(h, text);
}

static void hex(uint64_t h, char out[17]) {
  snprintf(out, 17, "%016llx", (unsigned long long)h);
}

/* floor(log2(v)), 0 for v <= 1. */
static unsigned log2_floor(uint64_t v) {
  unsigned k = 0;
  while (v > 1) v >>= 1, k++;
  return k;
}

void cl_fingerprint(const cldev_info *in, char out[17]) {
  /* "v2": never equal to a first-scheme name of the same device */
  uint64_t h = hash_str(in->ident, "v2");
  h = hash_num(h, in->compute_units);
  h = hash_num(h, in->max_work_group);
  h = hash_str(h, in->fp64 ? "fp64" : "no-fp64");
  if (!in->shares_host_cores) {
    h = hash_num(h, in->clock_mhz);
    h = hash_num(h, log2_floor(in->max_alloc));
  }
  hex(h, out);
}

void cl_fingerprint_v1(const cldev_info *in, uint64_t global_mem,
                       uint64_t max_alloc, char out[17]) {
  /* as the first scheme hashed them: decimal texts, in this order */
  uint64_t h = hash_num(in->ident, in->compute_units);
  if (in->is_gpu) h = hash_num(h, in->clock_mhz);
  h = hash_num(h, global_mem);
  h = hash_num(h, max_alloc);
  h = hash_num(h, in->max_work_group);
  h = hash_str(h, in->fp64 ? "fp64" : "no-fp64");
  hex(h, out);
}
