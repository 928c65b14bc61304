/* fuzz_tiff.c — libFuzzer harness for the TIFF reader: any bytes must give
 * an image or a clean refusal with a message, never a crash, a leak or an
 * allocation the file cannot justify; its shape and metadata read alone
 * must be consistent. */
#include <stddef.h>
#include <stdint.h>

#include "tiff.h"

static int tiff_one(const uint8_t *data, size_t size) {
  qs_image img;
  char err[512];
  /* A fixed read budget: what an input may make the reader allocate does
   * not depend on the machine's free memory. */
  tiff_set_read_budget((uint64_t)256 << 20);
  if (tiff_read_mem(data, size, "fuzz.tif", &img, err, sizeof err) == QS_OK) {
    volatile float sink = img.data[img.frames * img.rows * img.cols - 1];
    (void)sink;
    qs_image_free(&img);
  } else if (!err[0]) {
    __builtin_trap(); /* a refusal must say why */
  }
  /* the shape and metadata (the description's axes, resolution and
   * provenance are untrusted text): axes that make the pages, every page
   * they name inside the stack */
  tiff_info info;
  err[0] = 0;
  if (tiff_info_mem(data, size, "fuzz.tif", &info, err, sizeof err) ==
      QS_OK) {
    const tiff_meta *m = &info.meta;
    if (!m->channels || !m->slices || !m->frames ||
        m->channels * m->slices * m->frames != info.pages ||
        tiff_meta_page(m, m->channels - 1, m->slices - 1, m->frames - 1) >=
            info.pages ||
        (m->pixel_x > 0 && !m->unit[0]))
      __builtin_trap();
  } else if (!err[0]) {
    __builtin_trap();
  }
  return 0;
}

/* The tests include this file with FUZZ_NO_MAIN to replay the corpus and
 * the regression inputs through the same function. */
#ifndef FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return tiff_one(data, size);
}
#endif
