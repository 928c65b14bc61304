/* pages.h — a range of pages of a TIFF stack, read without reading the
 * others, for the MPI layer (each rank reads only its share of the input).
 *
 * Interim: tools/tiff.h is to gain a page count and a page-range read; until
 * those are in main this small reader stands in for them and should be
 * replaced by them. It reads what tools/tiff.c reads for stacks of one
 * directory per page (8/16/32-bit integers, 32/64-bit floats, one sample,
 * stripped or tiled, any codec libtiff decodes), but not ImageJ's >4 GiB
 * single-directory stacks. Pixel bytes are only read for the pages asked
 * for; walking to page `first` reads the directories before it. */
#ifndef QS_MPI_PAGES_H
#define QS_MPI_PAGES_H

#include <stddef.h>
#include <stdint.h>

#include "quicksilver.h"

/* Pages (frames) of the stack at path and their size. All pages must have
 * the same size. QS_EIO / QS_EFORMAT with a message naming the file. */
int pages_count(const char *path, size_t *pages, size_t *rows, size_t *cols,
                char *err, size_t err_len);

/* Reads pages [first, first + count) into *img (allocated; the caller
 * frees it). *bytes_read (may be NULL) receives the stored bytes of the
 * pages read (their strips or tiles). */
int pages_read(const char *path, size_t first, size_t count, image *img,
               uint64_t *bytes_read, char *err, size_t err_len);

#endif
