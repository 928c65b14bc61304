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
 * Besides the pixels, a read reports the stack's axes, pixel size and
 * provenance (tiff_meta, through tiff_info_of).
 *
 * Writing: float32, one page per frame, in ImageJ's stack layout (the
 * pixel data of all pages contiguous, an ImageJ description on the first
 * page, with the axes, unit and provenance of tiff_write_meta, and the
 * resolution tags) so ImageJ opens it as a stack or hyperstack with its
 * pixel size; BigTIFF when the file would pass 4 GiB. The file appears whole or not at all (outfile.h). The layout is
 * fixed by the page count and size alone (tiff_stack below), so several
 * processes can write the pages of one file, each its own, and a stack can
 * grow in place (tiff_append). */
#ifndef QS_TIFF_H
#define QS_TIFF_H

#include <stddef.h>
#include <stdint.h>

#include "outfile.h"
#include "quicksilver.h"

/* Reads the TIFF at path into *img (allocated with qs_image_alloc; the caller
 * frees it with qs_image_free). On failure *img is empty and the status is
 * QS_EIO (cannot open or read), QS_EFORMAT (not a TIFF, truncated,
 * unsupported or inconsistent pages), QS_EOVERFLOW or QS_ENOMEM; err names
 * the file. */
int tiff_read(const char *path, qs_image *img, char *err, size_t err_len);

/* Pages [first, first + count) of the stack at path into *img (count
 * frames); the pixel data of the other pages is not read (their
 * directories are, to check the stack). count SIZE_MAX: to the last page.
 * A range past the last page: QS_EINVAL with the page count in err. */
int tiff_read_pages(const char *path, size_t first, size_t count,
                    qs_image *img, char *err, size_t err_len);

/* Pages read in order through one open file, for a reader that takes a
 * long stack a piece at a time: tiff_read_pages finds its first page by
 * walking the directories from the first (and checks every page of the
 * file), so n pieces of a stack of P pages cost n·P directory reads; a
 * sequence walks to `first` once and then reads on. tiff_seq_open:
 * QS_EUNAVAIL (no message) for an ImageJ stack of one directory, whose
 * pages are one block (read those with tiff_read_pages), QS_EINVAL when
 * there is no page `first`. tiff_seq_read: the next n pages into *img,
 * each checked as tiff_read_pages checks them (the size of page 0, the
 * read budget); a page that is not there yet fails (QS_EFORMAT), and the
 * sequence should then be closed and opened again at the same page. */
typedef struct tiff_seq tiff_seq;
int tiff_seq_open(const char *path, size_t first, tiff_seq **s, char *err,
                  size_t err_len);
int tiff_seq_read(tiff_seq *s, size_t n, qs_image *img, char *err,
                  size_t err_len);
/* Moves the sequence k pages on without reading them (QS_EFORMAT past
 * the last page). */
int tiff_seq_skip(tiff_seq *s, size_t k);
void tiff_seq_close(tiff_seq *s);

/* What a stack says about itself beside its pixels, read from its first
 * page and written by tiff_write_meta.
 *
 * Axes: the pages of an ImageJ hyperstack (channels=, slices=, frames= in
 * its description) or of an OME-TIFF (SizeC, SizeZ, SizeT and
 * DimensionOrder of its first Pixels element) are channels x slices x
 * frames, in `order` from the fastest-varying axis ("CZT": ImageJ's
 * order; OME's DimensionOrder without its XY). A plain stack is
 * 1 x 1 x pages, order "CZT". Counts that do not multiply to the page
 * count are refused (QS_EFORMAT naming the axes).
 *
 * Pixel size: pixel_x and pixel_y (along columns and rows) in `unit`
 * ("micron" for every spelling of micrometres: um, µm, ImageJ's \u00B5m;
 * also "nm", "mm", "cm", "inch" or what the file says), from XResolution
 * and YResolution (pixels per unit) with ResolutionUnit or ImageJ's
 * unit=, or OME's PhysicalSizeX/Y; 0 and "" when the file does not say.
 *
 * Provenance: the JSON text of a "quicksilver=" line in the description
 * (what made the file: see provenance.h), "" when there is none. */
#define TIFF_PROV_MAX 1536
typedef struct tiff_meta {
  size_t channels, slices, frames;
  char order[4];
  double pixel_x, pixel_y;
  char unit[16];
  char provenance[TIFF_PROV_MAX];
} tiff_meta;

/* A plain stack's metadata: pages frames of one channel, no pixel size. */
void tiff_meta_plain(tiff_meta *m, size_t pages);

/* The page holding channel c, slice z, frame t of a stack of meta m. */
size_t tiff_meta_page(const tiff_meta *m, size_t c, size_t z, size_t t);

/* The shape of the stack at path without reading pixel data: pages (the
 * frames tiff_read would give), rows and columns, and its metadata.
 * Errors as tiff_read. */
typedef struct tiff_info {
  size_t pages, rows, cols;
  tiff_meta meta;
} tiff_info;
int tiff_info_of(const char *path, tiff_info *info, char *err,
                 size_t err_len);

/* Channel c's frames [first, first + count) (count cut at the end) of a
 * stack read whole (all: every page) with metadata m, into *out: its one
 * sequence, its frames, or its slices when it has no frames axis.
 * QS_EINVAL when first is past the end; QS_ENOMEM. */
int tiff_channel(const qs_image *all, const tiff_meta *m, size_t c,
                 size_t first, size_t count, qs_image *out);

/* The pixel size of an output of rows x cols made from the stacks
 * in[0..n): that of the first input that has one, scaled by the ratio of
 * sizes (an image magnified M times has pixels M times smaller), with its
 * unit, into m (its other fields untouched); none when no input has one. */
void tiff_meta_scaled(tiff_meta *m, const tiff_info *in, size_t n,
                      size_t rows, size_t cols);

/* The read budget in bytes of float32 pixels one read may produce:
 * QUICKSILVER_READ_BUDGET_MB (MiB) when set, else three quarters of the
 * memory available now (MemAvailable), at least 64 MiB; a read over it is
 * refused with QS_ENOMEM naming the page at which it passes the budget and
 * the size that page claims. QS_EENV for a malformed variable.
 * tiff_set_read_budget(bytes) overrides both (0: back to them); tests and
 * fuzzers use it. */
int tiff_read_budget(uint64_t *bytes, char *err, size_t err_len);

/* b bytes as "12.3 MiB" (B, KiB, MiB, GiB, TiB) into buf; returns buf. */
const char *tiff_size_text(uint64_t b, char *buf, size_t len);
void tiff_set_read_budget(uint64_t bytes);

/* The same from memory; `name` is used in messages. */
int tiff_read_mem(const void *data, size_t size, const char *name,
                  qs_image *img, char *err, size_t err_len);
int tiff_info_mem(const void *data, size_t size, const char *name,
                  tiff_info *info, char *err, size_t err_len);

/* Flags of tiff_write_flags and tiff_stack_*. */
#define TIFF_BIG 1u /* BigTIFF even when a classic TIFF would do */
/* No ImageJ description (whose page count an append would contradict):
 * a plain multi-page TIFF that tiff_append can grow. */
#define TIFF_APPENDABLE 2u

/* Writes img (frames >= 1) as a float32 multi-page TIFF at path. QS_EIO
 * with a message naming path on failure, and then no file is left behind
 * (an existing file at path is untouched). */
int tiff_write(const char *path, const qs_image *img, char *err,
               size_t err_len);
int tiff_write_flags(const char *path, const qs_image *img, unsigned flags,
                     char *err, size_t err_len);
/* tiff_write_flags with metadata (NULL: none). The description names
 * channels, frames and hyperstack=true when m->channels > 1 (img's frames
 * are then the pages in m's order, which must be "CZT" and multiply to
 * img->frames, else QS_EINVAL); unit= when a pixel size is known, with
 * XResolution/YResolution = 1 / pixel size and ResolutionUnit none (as
 * ImageJ writes them); the provenance as a "quicksilver=" line. With
 * TIFF_APPENDABLE the description leaves out the page count and the
 * axes, which appending would contradict. */
int tiff_write_meta(const char *path, const qs_image *img, unsigned flags,
                    const tiff_meta *m, char *err, size_t err_len);

/* A stack written in pieces, by one process or several (MPI ranks on a
 * shared filesystem), in the layout tiff_write gives (the bytes are the
 * same as tiff_write's of the whole image):
 *  - one process creates it (tiff_stack_create): a temporary file beside
 *    path (outfile.h) of the stack's full size, with its header and every
 *    page's directory already written; every page's data offset follows
 *    from its index;
 *  - the others open that temporary by name (tiff_stack_temp, passed on;
 *    tiff_stack_open with the same pages, rows, cols and flags, checked
 *    against the file's size);
 *  - any of them writes pages [first, first + count) (tiff_stack_write:
 *    pwrite at their offsets, in any order, no page written twice);
 *  - the others close (tiff_stack_close: its status is whether their
 *    pages reached the file), and once every process has succeeded the
 *    creator commits (tiff_stack_commit: the ImageJ description with the
 *    range lo..hi of all pages, the min/max of every process's
 *    tiff_stack_range, then the rename over path); on any failure it
 *    aborts instead (tiff_stack_abort: the temporary is removed, nothing
 *    appears at path, an existing file there is untouched).
 * Pages never written read as zeros. Statuses: QS_EINVAL for an empty or
 * oversized stack or a range outside it (the message names the range and
 * the page count), QS_EFORMAT for a temporary of another layout, QS_EIO
 * for the filesystem's refusals; messages name the destination (the
 * creator) or the temporary (the others). The fields are private. */
typedef struct tiff_stack {
  size_t pages, rows, cols;
  int big, described, owner, fd;
  uint64_t head, data_off, page_bytes, ifd_base, slot, size;
  outfile out; /* the creator's temporary */
  char *tmp;   /* the others': its name */
  float lo, hi; /* of the values written through this handle */
  tiff_meta meta; /* the creator's, written at commit (tiff_stack_describe) */
} tiff_stack;

int tiff_stack_create(tiff_stack *s, const char *path, size_t pages,
                      size_t rows, size_t cols, unsigned flags, char *err,
                      size_t err_len);
const char *tiff_stack_temp(const tiff_stack *s);
int tiff_stack_open(tiff_stack *s, const char *tmp, size_t pages, size_t rows,
                    size_t cols, unsigned flags, char *err, size_t err_len);
int tiff_stack_write(tiff_stack *s, size_t first, size_t count,
                     const float *pixels, char *err, size_t err_len);
/* The least and greatest value written through s (NaN ignored; +inf and
 * -inf when nothing was written). */
void tiff_stack_range(const tiff_stack *s, float *lo, float *hi);
int tiff_stack_close(tiff_stack *s, char *err, size_t err_len);
int tiff_stack_commit(tiff_stack *s, float lo, float hi, char *err,
                      size_t err_len);
/* The creator's metadata for the description its commit writes (copied;
 * see tiff_write_meta). QS_EINVAL when m's axes do not fit the stack. */
int tiff_stack_describe(tiff_stack *s, const tiff_meta *m, char *err,
                        size_t err_len);
void tiff_stack_abort(tiff_stack *s);

/* Appends img's frames as pages at the end of the stack at path, in
 * place: each page's data and directory are written past the end and made
 * durable (fdatasync), then linked from the previous last directory's
 * next field by one aligned 4-byte (BigTIFF: 8-byte) write, made durable
 * in turn; a reader, or the file after a crash, has the stack without the
 * page or with it whole, never a torn page. One appender at a time. The
 * stack must be what this file writes (float32, one strip a page, the
 * host's byte order) without an ImageJ page count: written with
 * TIFF_APPENDABLE (or a single page). A classic TIFF that would pass
 * 4 GiB is rewritten once as a BigTIFF, whole, through a temporary and a
 * rename. Statuses: QS_EFORMAT (not such a stack), QS_ESHAPE (pages of
 * another size), QS_EIO; pages appended before a failure stay. */
int tiff_append(const char *path, const qs_image *img, char *err,
                size_t err_len);
/* Tests: the size past which tiff_append turns a classic file into a
 * BigTIFF (0: 4 GiB, the format's own limit). */
void tiff_set_classic_limit(uint64_t bytes);

#endif
