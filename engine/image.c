/* image.c — float32 (frames, rows, cols) images: wrapping caller memory,
 * aligned allocation, overflow-checked sizes. */
#include <stdlib.h>
#include <string.h>

#include "quicksilver.h"

int image_pixels(size_t frames, size_t rows, size_t cols, size_t *n) {
  *n = 0;
  if (frames == 0 || rows == 0 || cols == 0) return QS_OK;
  if (rows > QS_MAX_PIXELS / cols) return QS_EOVERFLOW;
  size_t rc = rows * cols;
  if (frames > QS_MAX_PIXELS / rc) return QS_EOVERFLOW;
  *n = frames * rc;
  return QS_OK;
}

image image_wrap(float *data, size_t frames, size_t rows, size_t cols) {
  image img = {data, frames, rows, cols, NULL};
  return img;
}

int image_alloc_raw(image *img, size_t frames, size_t rows, size_t cols) {
  image empty = {0};
  *img = empty;
  size_t n;
  int rc = image_pixels(frames, rows, cols, &n);
  if (rc) return rc;
  if (n == 0) return QS_EINVAL;
  /* 64-byte alignment; round the byte count up to a multiple of 64 as
   * aligned_alloc requires. n <= 2^36 so this cannot overflow. */
  size_t bytes = (n * sizeof(float) + 63) & ~(size_t)63;
  float *p = aligned_alloc(64, bytes);
  if (!p) return QS_ENOMEM;
  img->data = p;
  img->frames = frames;
  img->rows = rows;
  img->cols = cols;
  img->owner_ = p;
  return QS_OK;
}

int image_alloc(image *img, size_t frames, size_t rows, size_t cols) {
  int rc = image_alloc_raw(img, frames, rows, cols);
  if (!rc) memset(img->data, 0, frames * rows * cols * sizeof(float));
  return rc;
}

void image_free(image *img) {
  if (!img) return;
  free(img->owner_);
  image empty = {0};
  *img = empty;
}
