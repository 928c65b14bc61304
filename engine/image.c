/* image.c — float32 (frames, rows, cols) images: wrapping caller memory,
 * aligned allocation, overflow-checked sizes; qs_image_free of a device image
 * hands it to the record that holds it (devimg.c). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MADV_HUGEPAGE */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "quicksilver.h"

int qs_image_pixels(size_t frames, size_t rows, size_t cols, size_t *n) {
  if (!n) return QS_EINVAL;
  *n = 0;
  if (frames == 0 || rows == 0 || cols == 0) return QS_OK;
  if (rows > QS_MAX_PIXELS / cols) return QS_EOVERFLOW;
  size_t rc = rows * cols;
  if (frames > QS_MAX_PIXELS / rc) return QS_EOVERFLOW;
  *n = frames * rc;
  return QS_OK;
}

qs_image qs_image_wrap(float *data, size_t frames, size_t rows, size_t cols) {
  qs_image img = {data, frames, rows, cols, NULL};
  return img;
}

/* What an owned image holds: the block, and how to give it back. Its
 * first member is NULL; a device image's record (devimg.c) has there the
 * function that releases it, which qs_image_free calls instead. */
typedef struct block {
  void (*release)(void *self);
  void *base;
  size_t len; /* mapped length; 0 for a heap block */
} block;

/* Outputs of 4 MiB and more are mapped directly, aligned to 2 MiB and
 * marked for transparent huge pages: they come zeroed from the kernel and
 * are first touched by whoever writes them (the threads of a run), and a
 * 2 MiB page costs one fault where 4 KiB pages cost 512 (writing a fresh
 * 80 MiB output takes about a third of the time here). */
#define HUGE_MIN ((size_t)4 << 20)
#define HUGE_ALIGN ((size_t)2 << 20)

static void *map_zeroed(size_t bytes, block *b) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  size_t len = bytes + HUGE_ALIGN;
  void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return NULL;
  madvise(m, len, MADV_HUGEPAGE); /* advice only: failure is harmless */
  b->base = m;
  b->len = len;
  uintptr_t at = ((uintptr_t)m + HUGE_ALIGN - 1) & ~(uintptr_t)(HUGE_ALIGN - 1);
  return (unsigned char *)m + (at - (uintptr_t)m);
#else
  (void)bytes;
  (void)b;
  return NULL;
#endif
}

int qs_image_alloc(qs_image *img, size_t frames, size_t rows, size_t cols) {
  qs_image empty = {0};
  if (!img) return QS_EINVAL;
  *img = empty;
  size_t n;
  int rc = qs_image_pixels(frames, rows, cols, &n);
  if (rc) return rc;
  if (n == 0) return QS_EINVAL;
  block *b = malloc(sizeof *b);
  if (!b) return QS_ENOMEM;
  b->release = NULL;
  /* n <= 2^36, so no byte count below overflows. */
  size_t bytes = n * sizeof(float);
  void *data = bytes >= HUGE_MIN ? map_zeroed(bytes, b) : NULL;
  if (!data) {
    /* calloc: zeroed, and a large block straight from the kernel is not
     * written here at all. 64 extra bytes give the 64-byte alignment. */
    unsigned char *base = calloc(bytes + 64, 1);
    if (!base) {
      free(b);
      return QS_ENOMEM;
    }
    b->base = base;
    b->len = 0;
    uintptr_t at = ((uintptr_t)base + 63) & ~(uintptr_t)63;
    data = base + (at - (uintptr_t)base);
  }
  img->data = data;
  img->frames = frames;
  img->rows = rows;
  img->cols = cols;
  img->owner_ = b;
  return QS_OK;
}

void qs_image_free(qs_image *img) {
  if (!img) return;
  void (**release)(void *) = img->owner_;
  if (release && *release) { /* a device image's record (devimg.c) */
    (*release)(img->owner_);
    *img = (qs_image){0};
    return;
  }
  block *b = img->owner_;
  if (b && b->len) munmap(b->base, b->len);
  if (b && !b->len) free(b->base);
  free(b);
  qs_image empty = {0};
  *img = empty;
}
