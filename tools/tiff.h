/* tiff.h — TIFF stacks in and out of engine images.
 *
 * Reading (libtiff): 8/16/32-bit unsigned and signed integers, 32/64-bit
 * floats, one sample per pixel, stripped or tiled, any compression libtiff
 * decodes, either byte order; every page becomes one frame of a float32
 * image. Files that are not TIFF, are truncated, or whose pages differ in
 * size are refused with a message naming the file; libtiff's own messages
 * are captured into that message, never printed.
 *
 * Writing: float32, one page per frame, in ImageJ's stack layout (the
 * pixel data of all pages contiguous, an ImageJ description on the first
 * page) so ImageJ opens it as a stack; BigTIFF when the file would pass
 * 4 GiB. The file appears whole or not at all (outfile.h). */
#ifndef QS_TIFF_H
#define QS_TIFF_H

#include <stddef.h>

#include "quicksilver.h"

/* Reads the TIFF at path into *img (allocated with image_alloc; the caller
 * frees it with image_free). On failure *img is empty and the status is
 * QS_EIO (cannot open or read), QS_EFORMAT (not a TIFF, truncated,
 * unsupported or inconsistent pages), QS_EOVERFLOW or QS_ENOMEM; err names
 * the file. */
int tiff_read(const char *path, image *img, char *err, size_t err_len);

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
