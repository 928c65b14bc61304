/* tiff.h — TIFF stacks in and out of engine images.
 *
 * Reading (libtiff): 8/16/32-bit unsigned and signed integers, 32/64-bit
 * floats, one sample per pixel, stripped or tiled, any compression libtiff
 * decodes, either byte order; every page becomes one frame of a float32
 * image. Files that are not TIFF, are truncated, or whose pages differ in
 * size are refused with a message naming the file; libtiff's own messages
 * are captured into that message, never printed. Only regular files are
 * read (a FIFO is refused without blocking).
 *
 * Decompression bombs: what a read may allocate for pixels is bounded by a
 * budget (tiff_read_budget) checked against the sizes the pages claim
 * before anything is allocated; a compressed page may also not claim more
 * than about 4096 times its stored bytes.
 *
 * Writing: float32, one page per frame, in ImageJ's stack layout (the
 * pixel data of all pages contiguous, an ImageJ description on the first
 * page) so ImageJ opens it as a stack; BigTIFF when the file would pass
 * 4 GiB. The file appears whole or not at all (outfile.h). */
#ifndef QS_TIFF_H
#define QS_TIFF_H

#include <stddef.h>
#include <stdint.h>

#include "quicksilver.h"

/* Reads the TIFF at path into *img (allocated with image_alloc; the caller
 * frees it with image_free). On failure *img is empty and the status is
 * QS_EIO (cannot open or read), QS_EFORMAT (not a TIFF, truncated,
 * unsupported or inconsistent pages), QS_EOVERFLOW or QS_ENOMEM; err names
 * the file. */
int tiff_read(const char *path, image *img, char *err, size_t err_len);

/* Pages [first, first + count) of the stack at path into *img (count
 * frames); the pixel data of the other pages is not read (their
 * directories are, to check the stack). count SIZE_MAX: to the last page.
 * A range past the last page: QS_EINVAL with the page count in err. */
int tiff_read_pages(const char *path, size_t first, size_t count, image *img,
                    char *err, size_t err_len);

/* The shape of the stack at path without reading pixel data: pages (the
 * frames tiff_read would give), rows and columns. Errors as tiff_read. */
typedef struct tiff_info {
  size_t pages, rows, cols;
} tiff_info;
int tiff_info_of(const char *path, tiff_info *info, char *err,
                 size_t err_len);

/* The read budget in bytes of float32 pixels one read may produce:
 * QUICKSILVER_READ_BUDGET_MB (MiB) when set, else three quarters of the
 * memory available now (MemAvailable), at least 64 MiB; a read over it is
 * refused with QS_ENOMEM naming the page at which it passes the budget and
 * the size that page claims. QS_EENV for a malformed variable.
 * tiff_set_read_budget(bytes) overrides both (0: back to them); tests and
 * fuzzers use it. */
int tiff_read_budget(uint64_t *bytes, char *err, size_t err_len);
void tiff_set_read_budget(uint64_t bytes);

/* The same from memory; `name` is used in messages. */
int tiff_read_mem(const void *data, size_t size, const char *name, image *img,
                  char *err, size_t err_len);

/* Flags of tiff_write_flags. */
#define TIFF_BIG 1u /* BigTIFF even when a classic TIFF would do */

/* Writes img (frames >= 1) as a float32 multi-page TIFF at path. QS_EIO
 * with a message naming path on failure, and then no file is left behind
 * (an existing file at path is untouched). */
int tiff_write(const char *path, const image *img, char *err, size_t err_len);
int tiff_write_flags(const char *path, const image *img, unsigned flags,
                     char *err, size_t err_len);

#endif
