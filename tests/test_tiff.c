/* test_tiff.c — TIFF reading and writing: every sample type in both byte
 * orders, tiled and compressed pages, the real ImageJ stacks against
 * hand-decoded bytes, ImageJ layout of what we write, and clean refusals
 * (not a TIFF, truncated, mixed page sizes, unwritable destination). */
#define _GNU_SOURCE /* memmem */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <tiffio.h>
#include <unistd.h>

#include "qs_test.h"
#include "provenance.h"
#include "tiff.h"

#define FUZZ_NO_MAIN
#include "fuzz/fuzz_tiff.c"
#include "fuzz/replay.h"

TestSuite(tiff, .fini = qs_leak_check);

static char dir[256];

static void dir_make(void) {
  snprintf(dir, sizeof dir, "/tmp/qs-tiff-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}

static void dir_remove(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_expect_eq(system(cmd), 0);
}

static const char *in_dir(const char *leaf) {
  static char p[2][320];
  static int k;
  k ^= 1;
  snprintf(p[k], sizeof p[k], "%s/%s", dir, leaf);
  return p[k];
}

/* The value written at (page, i) for each sample type: spans the type's
 * range, negatives for signed types. */
static double sample_value(uint16_t fmt, uint16_t bits, int page, int i) {
  double v = page * 40 + i * 2; /* 0 .. 148 */
  if (fmt == SAMPLEFORMAT_INT) v -= 100;
  if (fmt == SAMPLEFORMAT_IEEEFP) v = v * 0.25 - 7.5;
  if (bits == 16) v *= 200; /* beyond 8 bits */
  if (bits == 32 && fmt != SAMPLEFORMAT_IEEEFP) v *= 70000;
  return v;
}

static void put_sample(void *buf, uint16_t fmt, uint16_t bits, int i,
                       double v) {
  unsigned char *b = buf;
#define PUT_(T)                                                               \
  {                                                                           \
    T x = (T)v;                                                               \
    memcpy(b + i * sizeof x, &x, sizeof x);                                   \
  }
  if (fmt == SAMPLEFORMAT_IEEEFP && bits == 32)
    PUT_(float)
  else if (fmt == SAMPLEFORMAT_IEEEFP)
    PUT_(double)
  else if (fmt == SAMPLEFORMAT_INT && bits == 8)
    PUT_(int8_t)
  else if (fmt == SAMPLEFORMAT_INT && bits == 16)
    PUT_(int16_t)
  else if (fmt == SAMPLEFORMAT_INT)
    PUT_(int32_t)
  else if (bits == 8)
    PUT_(uint8_t)
  else if (bits == 16)
    PUT_(uint16_t)
  else
    PUT_(uint32_t)
#undef PUT_
}

enum { W = 7, H = 5, PAGES = 3 };

/* Writes a PAGES-page W x H file with libtiff; mode "wb"/"wl" picks the
 * byte order; tile and comp select layout and compression. */
static void write_libtiff(const char *path, const char *mode, uint16_t fmt,
                          uint16_t bits, int tiled, uint16_t comp) {
  TIFF *t = TIFFOpen(path, mode);
  cr_assert_not_null(t);
  int tw = 16, th = 16;
  unsigned char *buf = calloc((size_t)tw * th, 8);
  for (int p = 0; p < PAGES; p++) {
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, W);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, H);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, bits);
    TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, fmt);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
    TIFFSetField(t, TIFFTAG_COMPRESSION, comp);
    if (tiled) {
      TIFFSetField(t, TIFFTAG_TILEWIDTH, tw);
      TIFFSetField(t, TIFFTAG_TILELENGTH, th);
      memset(buf, 0, (size_t)tw * th * 8);
      for (int r = 0; r < H; r++)
        for (int c = 0; c < W; c++)
          put_sample(buf, fmt, bits, r * tw + c,
                     sample_value(fmt, bits, p, r * W + c));
      cr_assert_geq(TIFFWriteTile(t, buf, 0, 0, 0, 0), 0);
    } else {
      TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 2); /* several strips */
      for (int r = 0; r < H; r++) {
        for (int c = 0; c < W; c++)
          put_sample(buf, fmt, bits, c, sample_value(fmt, bits, p, r * W + c));
        cr_assert_eq(TIFFWriteScanline(t, buf, r, 0), 1);
      }
    }
    cr_assert(TIFFWriteDirectory(t));
  }
  TIFFClose(t);
  free(buf);
}

static void check_values(const qs_image *img, uint16_t fmt, uint16_t bits) {
  cr_assert_eq(img->frames, PAGES);
  cr_assert_eq(img->rows, H);
  cr_assert_eq(img->cols, W);
  for (int p = 0; p < PAGES; p++)
    for (int i = 0; i < W * H; i++)
      cr_assert_eq(img->data[p * W * H + i],
                   (float)sample_value(fmt, bits, p, i),
                   "fmt %u bits %u page %d pixel %d: %g", fmt, bits, p, i,
                   img->data[p * W * H + i]);
}

static const struct {
  uint16_t fmt, bits;
} types[] = {
    {SAMPLEFORMAT_UINT, 8},    {SAMPLEFORMAT_INT, 8},
    {SAMPLEFORMAT_UINT, 16},   {SAMPLEFORMAT_INT, 16},
    {SAMPLEFORMAT_UINT, 32},   {SAMPLEFORMAT_INT, 32},
    {SAMPLEFORMAT_IEEEFP, 32}, {SAMPLEFORMAT_IEEEFP, 64},
};

Test(tiff, every_sample_type_and_byte_order) {
  dir_make();
  char err[512];
  for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
    for (int big_endian = 0; big_endian < 2; big_endian++) {
      const char *path = in_dir("t.tif");
      write_libtiff(path, big_endian ? "wb" : "wl", types[k].fmt,
                    types[k].bits, 0, COMPRESSION_NONE);
      qs_image img;
      int rc = tiff_read(path, &img, err, sizeof err);
      cr_assert_eq(rc, QS_OK, "%s", err);
      check_values(&img, types[k].fmt, types[k].bits);
      qs_image_free(&img);
    }
  dir_remove();
}

Test(tiff, tiled_and_compressed_pages) {
  dir_make();
  char err[512];
  uint16_t comps[] = {COMPRESSION_NONE, COMPRESSION_LZW,
                      COMPRESSION_ADOBE_DEFLATE, COMPRESSION_PACKBITS};
  for (size_t c = 0; c < 4; c++)
    for (int tiled = 0; tiled < 2; tiled++) {
      const char *path = in_dir("c.tif");
      write_libtiff(path, "wb", SAMPLEFORMAT_UINT, 16, tiled, comps[c]);
      qs_image img;
      cr_assert_eq(tiff_read(path, &img, err, sizeof err), QS_OK, "%s", err);
      check_values(&img, SAMPLEFORMAT_UINT, 16);
      qs_image_free(&img);
    }
  dir_remove();
}

/* Hand decoding of a big-endian classic TIFF: the StripOffsets value of
 * page k, by walking the directory chain byte by byte. */
static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         p[3];
}
static uint16_t be16(const unsigned char *p) {
  return (uint16_t)(p[0] << 8 | p[1]);
}

static unsigned char *slurp(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s", path);
  fseek(f, 0, SEEK_END);
  *n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc(*n);
  cr_assert_eq(fread(b, 1, *n, f), *n);
  fclose(f);
  return b;
}

static void check_real(const char *leaf) {
  char path[512], err[512];
  snprintf(path, sizeof path, "%s/tests/data/real/%s", QS_SOURCE_ROOT, leaf);
  size_t n;
  unsigned char *b = slurp(path, &n);
  cr_assert_eq(b[0], 'M');
  cr_assert_eq(b[1], 'M');
  qs_image img;
  cr_assert_eq(tiff_read(path, &img, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(img.frames, 100);
  uint32_t ifd = be32(b + 4), w = 0, h = 0;
  for (size_t page = 0; ifd; page++) {
    uint16_t entries = be16(b + ifd);
    uint32_t strip = 0;
    for (uint16_t e = 0; e < entries; e++) {
      const unsigned char *en = b + ifd + 2 + 12 * e;
      uint16_t tag = be16(en), type = be16(en + 2);
      uint32_t v = type == 3 ? be16(en + 8) : be32(en + 8);
      if (tag == 256) w = v;
      if (tag == 257) h = v;
      if (tag == 273) strip = v;
    }
    cr_assert_eq(img.cols, w);
    cr_assert_eq(img.rows, h);
    size_t probes[][2] = {{0, 0}, {h / 2, w / 3}, {h - 1, w - 1}, {3, 7}};
    for (size_t k = 0; k < 4; k++) {
      size_t r = probes[k][0], c = probes[k][1];
      uint16_t raw = be16(b + strip + 2 * (r * w + c));
      cr_assert_eq(img.data[(page * h + r) * w + c], (float)raw,
                   "%s page %zu (%zu,%zu)", leaf, page, r, c);
    }
    ifd = be32(b + ifd + 2 + 12 * entries);
    cr_assert_lt(page, 100);
  }
  qs_image from_mem;
  cr_assert_eq(tiff_read_mem(b, n, leaf, &from_mem, err, sizeof err), QS_OK,
               "%s", err);
  cr_assert_eq(
      memcmp(from_mem.data, img.data,
             n < 1 ? 0 : img.frames * img.rows * img.cols * sizeof(float)),
      0);
  qs_image_free(&from_mem);
  qs_image_free(&img);
  free(b);
}

Test(tiff, real_big_endian_stacks) {
  check_real("musical_cardiomyoblast_mito_100f.tif");
  check_real("mssr_donuts_100f.tif");
}

static void expect_refused(const char *path, int status, const char *words) {
  char err[512] = "";
  qs_image img;
  int rc = tiff_read(path, &img, err, sizeof err);
  cr_assert_eq(rc, status, "%s: got %s (%s)", path, qs_status_name(rc), err);
  cr_assert_null(img.data);
  cr_assert_not_null(strstr(err, path), "message names the file: %s", err);
  if (words) cr_assert_not_null(strstr(err, words), "%s", err);
}

Test(tiff, truncated_and_foreign_files_refused) {
  dir_make();
  char src[512];
  snprintf(src, sizeof src, "%s/tests/data/real/mssr_donuts_100f.tif",
           QS_SOURCE_ROOT);
  size_t n;
  unsigned char *b = slurp(src, &n);
  size_t cuts[] = {n / 2, n - 100, 300, 9, 4};
  for (size_t k = 0; k < 5; k++) {
    const char *path = in_dir("cut.tif");
    FILE *f = fopen(path, "wb");
    fwrite(b, 1, cuts[k], f);
    fclose(f);
    expect_refused(path, QS_EFORMAT, NULL);
  }
  free(b);
  const char *txt = in_dir("notes.tif");
  FILE *f = fopen(txt, "w");
  fputs("these are not pixels\n", f);
  fclose(f);
  expect_refused(txt, QS_EFORMAT, "not a TIFF");
  expect_refused(in_dir("missing.tif"), QS_EIO, "No such file");
  expect_refused(dir, QS_EIO, "not a regular file");
  dir_remove();
}

/* Writes one zero page of w x h with spp samples of 16 bits. */
static void zero_page(TIFF *t, uint32_t w, uint32_t h, uint16_t spp) {
  uint16_t row[64] = {0};
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, w);
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, h);
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 16);
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, spp);
  TIFFSetField(t, TIFFTAG_PLANARCONFIG, PLANARCONFIG_CONTIG);
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC,
               spp == 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK);
  for (uint32_t r = 0; r < h; r++)
    TIFFWriteScanline(t, row, r, 0);
  TIFFWriteDirectory(t);
}

Test(tiff, pages_of_different_sizes_refused) {
  dir_make();
  const char *path = in_dir("mixed.tif");
  TIFF *t = TIFFOpen(path, "w");
  zero_page(t, 4, 3, 1);
  zero_page(t, 8, 3, 1);
  TIFFClose(t);
  expect_refused(path, QS_EFORMAT, "different sizes");
  dir_remove();
}

Test(tiff, rgb_refused) {
  dir_make();
  const char *path = in_dir("rgb.tif");
  TIFF *t = TIFFOpen(path, "w");
  zero_page(t, 4, 2, 3);
  TIFFClose(t);
  expect_refused(path, QS_EFORMAT, "samples per pixel");
  dir_remove();
}

/* What we write: libtiff reads it back exactly; the first page carries the
 * ImageJ description; page data is contiguous, as ImageJ requires. */
static void check_written(unsigned flags) {
  dir_make();
  qs_image img;
  cr_assert_eq(qs_image_alloc(&img, 4, 6, 9), QS_OK);
  for (size_t i = 0; i < 4 * 6 * 9; i++)
    img.data[i] = (float)sin((double)i) * 1000.0f;
  img.data[5] = NAN;
  const char *path = in_dir("out.tif");
  char err[512];
  cr_assert_eq(tiff_write_flags(path, &img, flags, err, sizeof err), QS_OK,
               "%s", err);
  qs_image back;
  cr_assert_eq(tiff_read(path, &back, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(back.frames, 4);
  cr_assert_eq(back.rows, 6);
  cr_assert_eq(back.cols, 9);
  cr_assert(isnan(back.data[5]));
  back.data[5] = img.data[5] = 0;
  cr_assert_eq(memcmp(back.data, img.data, 4 * 6 * 9 * sizeof(float)), 0);

  TIFF *t = TIFFOpen(path, "r");
  cr_assert_not_null(t);
  cr_assert_eq(TIFFIsBigTIFF(t) != 0, (flags & TIFF_BIG) != 0);
  const char *desc = NULL;
  cr_assert(TIFFGetField(t, TIFFTAG_IMAGEDESCRIPTION, &desc));
  cr_assert_not_null(strstr(desc, "ImageJ="), "%s", desc);
  cr_assert_not_null(strstr(desc, "\nimages=4\n"), "%s", desc);
  uint64_t first = TIFFGetStrileOffset(t, 0);
  for (tdir_t d = 1; d < 4; d++) {
    cr_assert(TIFFSetDirectory(t, d));
    cr_assert_eq(TIFFGetStrileOffset(t, 0), first + d * 6 * 9 * 4);
  }
  TIFFClose(t);
  qs_image_free(&back);
  qs_image_free(&img);
  dir_remove();
}

Test(tiff, written_stack_is_imagej_layout) { check_written(0); }
Test(tiff, written_bigtiff_reads_back) { check_written(TIFF_BIG); }

static size_t entries_in(const char *path) {
  DIR *d = opendir(path);
  cr_assert_not_null(d);
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d));)
    n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  return n;
}

Test(tiff, unwritable_destination_leaves_nothing) {
  dir_make();
  float px[4] = {1, 2, 3, 4};
  qs_image img = qs_image_wrap(px, 1, 2, 2);
  char err[512];
  int rc = tiff_write(in_dir("no/such/dir/out.tif"), &img, err, sizeof err);
  cr_assert_eq(rc, QS_EIO);
  cr_assert_not_null(strstr(err, "no/such/dir/out.tif"), "%s", err);
  /* A directory in the way: refused before anything is written. */
  const char *in_way = in_dir("taken.tif");
  cr_assert_eq(mkdir(in_way, 0755), 0);
  cr_assert_eq(tiff_write(in_way, &img, err, sizeof err), QS_EINVAL);
  cr_assert_not_null(strstr(err, "taken.tif is a directory"), "%s", err);
  cr_assert_eq(entries_in(dir), 1, "only the directory remains");
  dir_remove();
}

/* Inputs that once crashed or misled the reader (tests/fuzz/regress/tiff):
 * each must be refused cleanly or read, never crash. */
Test(tiff, fuzz_regressions_replayed) {
  char path[512], err[512];
  snprintf(path, sizeof path, "%s/tests/fuzz/regress/tiff", QS_SOURCE_ROOT);
  DIR *d = opendir(path);
  if (!d) cr_skip_test("no regression inputs in %s", path);
  size_t seen = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    char file[1024];
    snprintf(file, sizeof file, "%s/%s", path, e->d_name);
    qs_image img;
    int rc = tiff_read(file, &img, err, sizeof err);
    if (rc)
      cr_expect_neq(err[0], 0, "%s: a message", e->d_name);
    else
      cr_expect_gt(img.frames, 0);
    qs_image_free(&img);
    seen++;
  }
  closedir(d);
  cr_assert_gt(seen, 0);
}

Test(tiff, fuzz_inputs_replayed) {
  cr_assert_gt(replay_kind("tiff", tiff_one), 0);
}

/* ImageJ's stacks past 4 GiB have one directory announcing N images whose
 * pixels follow each other: made here from our own file (whose pages are
 * laid out that way) by keeping only the first directory. */
static void rewrite(const char *path, const unsigned char *b, size_t n) {
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f);
  cr_assert_eq(fwrite(b, 1, n, f), n);
  fclose(f);
}

Test(tiff, imagej_single_directory_stack) {
  dir_make();
  qs_image img;
  cr_assert_eq(qs_image_alloc(&img, 5, 3, 4), QS_OK);
  for (size_t i = 0; i < 5 * 3 * 4; i++)
    img.data[i] = (float)i - 7.5f;
  const char *path = in_dir("big.tif");
  char err[512];
  cr_assert_eq(tiff_write(path, &img, err, sizeof err), QS_OK, "%s", err);
  size_t n;
  unsigned char *b = slurp(path, &n);
  uint32_t ifd; /* written in host order */
  uint16_t entries;
  memcpy(&ifd, b + 4, 4);
  memcpy(&entries, b + ifd, 2);
  size_t end = ifd + 2 + 12 * (size_t)entries;
  memset(b + end, 0, 4); /* no next directory, and none kept */
  rewrite(path, b, end + 4);
  qs_image back;
  cr_assert_eq(tiff_read(path, &back, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(back.frames, 5);
  cr_assert_eq(memcmp(back.data, img.data, 5 * 3 * 4 * sizeof(float)), 0);
  qs_image_free(&back);
  /* a range of such a stack, and its page count */
  tiff_info info;
  cr_assert_eq(tiff_info_of(path, &info, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(info.pages, 5);
  cr_assert_eq(tiff_read_pages(path, 3, 2, &back, err, sizeof err), QS_OK,
               "%s", err);
  cr_assert_eq(back.frames, 2);
  cr_assert_eq(memcmp(back.data, img.data + 3 * 12, 2 * 12 * sizeof(float)),
               0);
  qs_image_free(&back);
  /* announcing more images than the file can hold: refused */
  char *images = memmem(b, n, "images=5", 8);
  cr_assert_not_null(images);
  images[7] = '9';
  rewrite(path, b, end + 4);
  expect_refused(path, QS_EFORMAT, "announces 9 images");
  free(b);
  qs_image_free(&img);
  dir_remove();
}

/* A sequence reads a stack in pieces through one open file: each piece
 * equals the same pages read whole (a written stack of many pages and a
 * compressed libtiff one), a page past the end fails, a first page past
 * the end is QS_EINVAL, and an ImageJ stack of one directory is left to
 * tiff_read_pages (QS_EUNAVAIL). */
Test(tiff, sequence_reads_pieces_in_order) {
  dir_make();
  char err[512];
  qs_image img, all, piece;
  cr_assert_eq(qs_image_alloc(&img, 23, 5, 7), QS_OK);
  for (size_t i = 0; i < 23 * 35; i++) img.data[i] = (float)i * 0.25f - 9;
  const char *path = in_dir("seq.tif");
  cr_assert_eq(tiff_write(path, &img, err, sizeof err), QS_OK, "%s", err);
  const size_t sizes[] = {1, 4, 7, 2, 5, 3}; /* 22 of the 23 pages */
  tiff_seq *s;
  cr_assert_eq(tiff_seq_open(path, 1, &s, err, sizeof err), QS_OK, "%s", err);
  size_t at = 1;
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    cr_assert_eq(tiff_seq_read(s, sizes[k], &piece, err, sizeof err), QS_OK,
                 "%s", err);
    cr_assert_eq(piece.frames, sizes[k]);
    cr_assert_eq(memcmp(piece.data, img.data + at * 35,
                        sizes[k] * 35 * sizeof(float)),
                 0, "pages [%zu, %zu)", at, at + sizes[k]);
    at += sizes[k];
    qs_image_free(&piece);
  }
  cr_assert_eq(at, 23);
  cr_assert_neq(tiff_seq_read(s, 1, &piece, err, sizeof err), QS_OK);
  cr_assert_null(piece.data);
  tiff_seq_close(s);
  cr_assert_eq(tiff_seq_open(path, 23, &s, err, sizeof err), QS_EINVAL);
  cr_assert_null(s);
  /* compressed pages written by libtiff */
  const char *lt = in_dir("lt.tif");
  write_libtiff(lt, "wl", SAMPLEFORMAT_UINT, 16, 0, COMPRESSION_ADOBE_DEFLATE);
  cr_assert_eq(tiff_read(lt, &all, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(tiff_seq_open(lt, 0, &s, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(tiff_seq_read(s, 2, &piece, err, sizeof err), QS_OK, "%s",
               err);
  cr_assert_eq(memcmp(piece.data, all.data, 2 * W * H * sizeof(float)), 0);
  qs_image_free(&piece);
  cr_assert_eq(tiff_seq_read(s, PAGES - 2, &piece, err, sizeof err), QS_OK,
               "%s", err);
  cr_assert_eq(memcmp(piece.data, all.data + 2 * W * H,
                      (PAGES - 2) * W * H * sizeof(float)),
               0);
  qs_image_free(&piece);
  qs_image_free(&all);
  tiff_seq_close(s);
  /* an ImageJ stack of one directory: its pages are one block */
  size_t n;
  unsigned char *b = slurp(path, &n);
  uint32_t ifd;
  uint16_t entries;
  memcpy(&ifd, b + 4, 4);
  memcpy(&entries, b + ifd, 2);
  size_t end = ifd + 2 + 12 * (size_t)entries;
  memset(b + end, 0, 4);
  rewrite(path, b, end + 4);
  free(b);
  cr_assert_eq(tiff_seq_open(path, 0, &s, err, sizeof err), QS_EUNAVAIL);
  cr_assert_null(s);
  qs_image_free(&img);
  dir_remove();
}

/* ------------------------------------------------- ranges and budgets */

/* The page count and a range of pages, without decoding the others: the
 * first page's compressed data is destroyed, which a full read reports and
 * a read of the later pages never sees. */
Test(tiff, page_count_and_range_read) {
  dir_make();
  const char *path = in_dir("r.tif");
  char err[512];
  write_libtiff(path, "wl", SAMPLEFORMAT_UINT, 16, 0,
                COMPRESSION_ADOBE_DEFLATE);
  tiff_info info;
  cr_assert_eq(tiff_info_of(path, &info, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(info.pages, PAGES);
  cr_assert_eq(info.rows, H);
  cr_assert_eq(info.cols, W);
  qs_image all, part;
  cr_assert_eq(tiff_read(path, &all, err, sizeof err), QS_OK, "%s", err);
  for (size_t first = 0; first < PAGES; first++)
    for (size_t count = 1; first + count <= PAGES; count++) {
      cr_assert_eq(tiff_read_pages(path, first, count, &part, err, sizeof err),
                   QS_OK, "%s", err);
      cr_assert_eq(part.frames, count);
      cr_assert_eq(memcmp(part.data, all.data + first * W * H,
                          count * W * H * sizeof(float)),
                   0, "pages [%zu, %zu)", first, first + count);
      qs_image_free(&part);
    }
  cr_assert_eq(tiff_read_pages(path, 1, SIZE_MAX, &part, err, sizeof err),
               QS_OK, "%s", err);
  cr_assert_eq(part.frames, PAGES - 1);
  qs_image_free(&part);
  cr_assert_eq(tiff_read_pages(path, PAGES, 1, &part, err, sizeof err),
               QS_EINVAL);
  cr_assert_not_null(strstr(err, "a stack of 3"), "%s", err);
  cr_assert_eq(tiff_read_pages(path, 2, 2, &part, err, sizeof err), QS_EINVAL);
  cr_assert_eq(tiff_read_pages(path, 0, 0, &part, err, sizeof err), QS_EINVAL);
  cr_assert_null(part.data);

  /* destroy page 0's deflate stream */
  TIFF *t = TIFFOpen(path, "r");
  cr_assert_not_null(t);
  uint64_t off = TIFFGetStrileOffset(t, 0), cnt = TIFFGetStrileByteCount(t, 0);
  TIFFClose(t);
  size_t n;
  unsigned char *b = slurp(path, &n);
  memset(b + off, 0xff, (size_t)cnt);
  FILE *f = fopen(path, "wb");
  cr_assert_eq(fwrite(b, 1, n, f), n);
  fclose(f);
  free(b);
  cr_assert_neq(tiff_read(path, &part, err, sizeof err), QS_OK,
                "a destroyed page 0 went unnoticed by a full read");
  cr_assert_eq(tiff_read_pages(path, 1, 2, &part, err, sizeof err), QS_OK,
               "%s", err);
  cr_assert_eq(memcmp(part.data, all.data + W * H, 2 * W * H * sizeof(float)),
               0);
  qs_image_free(&part);
  qs_image_free(&all);
  dir_remove();
}

/* A few KB of deflated zeros that claim tens of MB of pixels: refused by
 * the read budget before anything is allocated, naming the page at which
 * the total passes the budget and what that page claims. */
static void write_zeros(const char *path, uint32_t side, int pages) {
  TIFF *t = TIFFOpen(path, "w");
  cr_assert_not_null(t);
  unsigned char *row = calloc(side, 1);
  for (int p = 0; p < pages; p++) {
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, side);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, side);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 8);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(t, TIFFTAG_COMPRESSION, COMPRESSION_ADOBE_DEFLATE);
    TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, side);
    for (uint32_t r = 0; r < side; r++)
      cr_assert_eq(TIFFWriteScanline(t, row, r, 0), 1);
    cr_assert(TIFFWriteDirectory(t));
  }
  TIFFClose(t);
  free(row);
}

Test(tiff, decompression_bomb_refused_by_budget) {
  dir_make();
  const char *path = in_dir("bomb.tif");
  char err[512];
  write_zeros(path, 2048, 3); /* 3 pages of 16 MiB as floats */
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  cr_assert_lt(st.st_size, 1 << 20, "the bomb is small on disk");
  qs_image img;
  tiff_set_read_budget((uint64_t)40 << 20);
  cr_assert_eq(tiff_read(path, &img, err, sizeof err), QS_ENOMEM);
  cr_assert_null(img.data);
  cr_assert_not_null(strstr(err, "page 2 claims 2048x2048 pixels (16.0 MiB"),
                     "%s", err);
  cr_assert_not_null(strstr(err, "read budget of 40.0 MiB"), "%s", err);
  /* pages one at a time fit the same budget */
  cr_assert_eq(tiff_read_pages(path, 2, 1, &img, err, sizeof err), QS_OK,
               "%s", err);
  cr_assert_eq(img.frames, 1);
  cr_assert_eq(img.data[2048 * 2048 - 1], 0.0f);
  qs_image_free(&img);
  /* the environment knob, when no budget is set by the program */
  tiff_set_read_budget(0);
  setenv("QUICKSILVER_READ_BUDGET_MB", "20", 1);
  cr_assert_eq(tiff_read(path, &img, err, sizeof err), QS_ENOMEM);
  cr_assert_not_null(strstr(err, "page 1 claims"), "%s", err);
  setenv("QUICKSILVER_READ_BUDGET_MB", "lots", 1);
  cr_assert_eq(tiff_read(path, &img, err, sizeof err), QS_EENV);
  cr_assert_not_null(strstr(err, "QUICKSILVER_READ_BUDGET_MB"), "%s", err);
  setenv("QUICKSILVER_READ_BUDGET_MB", "64", 1);
  cr_assert_eq(tiff_read(path, &img, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(img.frames, 3);
  qs_image_free(&img);
  unsetenv("QUICKSILVER_READ_BUDGET_MB");
  uint64_t budget;
  cr_assert_eq(tiff_read_budget(&budget, err, sizeof err), QS_OK);
  cr_assert_geq(budget, (uint64_t)64 << 20, "the default is at least 64 MiB");
  dir_remove();
}

/* A FIFO is refused at once, not waited on. */
Test(tiff, fifo_refused_without_blocking, .timeout = 20) {
  dir_make();
  const char *path = in_dir("f.tif");
  cr_assert_eq(mkfifo(path, 0644), 0);
  qs_image img;
  char err[512];
  cr_assert_eq(tiff_read(path, &img, err, sizeof err), QS_EIO);
  cr_assert_not_null(strstr(err, "not a regular file"), "%s", err);
  tiff_info info;
  cr_assert_eq(tiff_info_of(path, &info, err, sizeof err), QS_EIO);
  dir_remove();
}

/* ------------------------------------------ stacks written in pieces */

static void fill(qs_image *img, size_t frames, size_t rows, size_t cols,
                 float scale) {
  cr_assert_eq(qs_image_alloc(img, frames, rows, cols), QS_OK);
  for (size_t i = 0; i < frames * rows * cols; i++)
    img->data[i] = (float)cos((double)i * 0.37) * scale + (float)(i % 7);
}

static unsigned char *slurp_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s", path);
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)len + 1);
  cr_assert_not_null(b);
  cr_assert_eq(fread(b, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  *n = (size_t)len;
  return b;
}

static void expect_same_file(const char *a, const char *b) {
  size_t na, nb;
  unsigned char *x = slurp_all(a, &na), *y = slurp_all(b, &nb);
  cr_assert_eq(na, nb, "%s is %zu bytes, %s %zu", a, na, b, nb);
  cr_assert_eq(memcmp(x, y, na), 0, "%s and %s differ", a, b);
  free(x);
  free(y);
}

/* Two handles on one stack (as two ranks): the creator and one that opens
 * the temporary by name write the pages out of order; before the commit
 * nothing is at the destination, after it the file is byte for byte
 * tiff_write's of the whole image. */
static void check_pieces(unsigned flags) {
  dir_make();
  qs_image img;
  fill(&img, 7, 5, 6, 300);
  char err[512];
  const char *whole = in_dir("whole.tif"), *out = in_dir("out.tif");
  cr_assert_eq(tiff_write_flags(whole, &img, flags, err, sizeof err), QS_OK,
               "%s", err);
  tiff_stack a, b;
  cr_assert_eq(tiff_stack_create(&a, out, 7, 5, 6, flags, err, sizeof err),
               QS_OK, "%s", err);
  struct stat st;
  cr_assert_neq(stat(out, &st), 0, "nothing at the destination yet");
  char tmp[400]; /* the name, kept past the commit that frees it */
  snprintf(tmp, sizeof tmp, "%s", tiff_stack_temp(&a));
  cr_assert_not_null(strstr(tmp, "out.tif.qs-tmp-"), "%s", tmp);
  cr_assert_eq(stat(tmp, &st), 0);
  cr_assert_eq(tiff_stack_open(&b, tmp, 7, 5, 6, flags, err, sizeof err),
               QS_OK, "%s", err);
  size_t plane = 5 * 6;
  cr_assert_eq(tiff_stack_write(&b, 5, 2, img.data + 5 * plane, err,
                                sizeof err), QS_OK, "%s", err);
  cr_assert_eq(tiff_stack_write(&a, 0, 2, img.data, err, sizeof err), QS_OK);
  cr_assert_eq(tiff_stack_write(&b, 3, 2, img.data + 3 * plane, err,
                                sizeof err), QS_OK);
  cr_assert_eq(tiff_stack_write(&a, 2, 1, img.data + 2 * plane, err,
                                sizeof err), QS_OK);
  float lo_a, hi_a, lo_b, hi_b;
  tiff_stack_range(&a, &lo_a, &hi_a);
  tiff_stack_range(&b, &lo_b, &hi_b);
  cr_assert_eq(tiff_stack_close(&b, err, sizeof err), QS_OK, "%s", err);
  cr_assert_neq(stat(out, &st), 0, "still nothing before the commit");
  cr_assert_eq(tiff_stack_commit(&a, lo_a < lo_b ? lo_a : lo_b,
                                 hi_a > hi_b ? hi_a : hi_b, err, sizeof err),
               QS_OK, "%s", err);
  cr_assert_neq(stat(tmp, &st), 0, "the temporary is renamed");
  expect_same_file(whole, out);
  qs_image back;
  cr_assert_eq(tiff_read(out, &back, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(back.frames, 7);
  cr_assert_eq(memcmp(back.data, img.data, 7 * plane * sizeof(float)), 0);
  qs_image_free(&back);
  qs_image_free(&img);
  cr_assert_eq(entries_in(dir), 2);
  dir_remove();
}

Test(tiff, stack_pieces_out_of_order_equal_a_whole_write) { check_pieces(0); }
Test(tiff, stack_pieces_bigtiff) { check_pieces(TIFF_BIG); }

Test(tiff, stack_bad_ranges_and_aborts_leave_nothing) {
  dir_make();
  qs_image img;
  fill(&img, 3, 4, 4, 1);
  char err[512];
  const char *out = in_dir("out.tif");
  tiff_stack a, b;
  cr_assert_eq(tiff_stack_create(&a, out, 3, 4, 4, 0, err, sizeof err), QS_OK);
  cr_assert_eq(tiff_stack_write(&a, 2, 2, img.data, err, sizeof err),
               QS_EINVAL);
  cr_assert_not_null(strstr(err, "pages [2, 4) asked of a stack of 3 pages"),
                     "%s", err);
  cr_assert_eq(tiff_stack_write(&a, 1, 0, img.data, err, sizeof err),
               QS_EINVAL);
  cr_assert_eq(tiff_stack_write(&a, SIZE_MAX, 2, img.data, err, sizeof err),
               QS_EINVAL);
  cr_assert_eq(tiff_stack_write(&a, 0, 1, NULL, err, sizeof err), QS_EINVAL);
  /* another layout than the temporary's */
  cr_assert_eq(tiff_stack_open(&b, tiff_stack_temp(&a), 4, 4, 4, 0, err,
                               sizeof err),
               QS_EFORMAT);
  cr_assert_not_null(strstr(err, "not the stack of 4 pages"), "%s", err);
  cr_assert_eq(tiff_stack_open(&b, in_dir("none"), 3, 4, 4, 0, err,
                               sizeof err),
               QS_EIO);
  cr_assert_eq(tiff_stack_open(&b, tiff_stack_temp(&a), 3, 4, 4, 0, err,
                               sizeof err),
               QS_OK, "%s", err);
  cr_assert_eq(tiff_stack_commit(&b, 0, 1, err, sizeof err), QS_EINVAL,
               "only the creator commits");
  tiff_stack_abort(&b);
  tiff_stack_abort(&a);
  cr_assert_eq(entries_in(dir), 0, "an aborted stack leaves nothing");
  /* an existing file at the destination survives an abort */
  cr_assert_eq(tiff_write(out, &img, err, sizeof err), QS_OK);
  size_t n0, n1;
  unsigned char *before = slurp_all(out, &n0);
  cr_assert_eq(tiff_stack_create(&a, out, 2, 8, 8, 0, err, sizeof err), QS_OK);
  tiff_stack_abort(&a);
  unsigned char *after = slurp_all(out, &n1);
  cr_assert_eq(n0, n1);
  cr_assert_eq(memcmp(before, after, n0), 0);
  cr_assert_eq(entries_in(dir), 1);
  cr_assert_eq(tiff_stack_create(&a, out, 0, 8, 8, 0, err, sizeof err),
               QS_EINVAL);
  free(before);
  free(after);
  qs_image_free(&img);
  dir_remove();
}

/* Appending page by page: after every append the stack reads back as the
 * pages so far, through our reader and through libtiff. */
Test(tiff, append_page_by_page) {
  dir_make();
  qs_image img;
  fill(&img, 9, 6, 5, 50);
  size_t plane = 6 * 5;
  char err[512];
  const char *out = in_dir("grow.tif");
  qs_image first = qs_image_wrap(img.data, 1, 6, 5);
  cr_assert_eq(tiff_write_flags(out, &first, TIFF_APPENDABLE, err, sizeof err),
               QS_OK, "%s", err);
  for (size_t k = 1; k < 9; k++) {
    /* the last two go in one call */
    size_t n = k == 7 ? 2 : 1;
    qs_image more = qs_image_wrap(img.data + k * plane, n, 6, 5);
    cr_assert_eq(tiff_append(out, &more, err, sizeof err), QS_OK, "%s", err);
    k += n - 1;
    qs_image back;
    cr_assert_eq(tiff_read(out, &back, err, sizeof err), QS_OK, "%s", err);
    cr_assert_eq(back.frames, k + 1);
    cr_assert_eq(memcmp(back.data, img.data, (k + 1) * plane * 4), 0);
    qs_image_free(&back);
    TIFF *t = TIFFOpen(out, "r");
    cr_assert_not_null(t);
    cr_assert_eq(TIFFNumberOfDirectories(t), k + 1);
    TIFFClose(t);
  }
  /* wrong size: refused, the stack unchanged */
  qs_image odd;
  fill(&odd, 1, 5, 6, 1);
  cr_assert_eq(tiff_append(out, &odd, err, sizeof err), QS_ESHAPE);
  cr_assert_not_null(strstr(err, "cannot append in place"), "%s", err);
  tiff_info info;
  cr_assert_eq(tiff_info_of(out, &info, err, sizeof err), QS_OK);
  cr_assert_eq(info.pages, 9);
  /* an ImageJ stack's page count would be contradicted: refused, the file
   * untouched; a single described page may grow */
  const char *ij = in_dir("ij.tif"), *one = in_dir("one.tif");
  qs_image three = qs_image_wrap(img.data, 3, 6, 5);
  cr_assert_eq(tiff_write(ij, &three, err, sizeof err), QS_OK);
  size_t n0, n1;
  unsigned char *before = slurp_all(ij, &n0);
  cr_assert_eq(tiff_append(ij, &first, err, sizeof err), QS_EFORMAT);
  cr_assert_not_null(strstr(err, "ImageJ"), "%s", err);
  unsigned char *after = slurp_all(ij, &n1);
  cr_assert(n0 == n1 && !memcmp(before, after, n0), "ij.tif was modified");
  free(before);
  free(after);
  cr_assert_eq(tiff_write(one, &first, err, sizeof err), QS_OK);
  cr_assert_eq(tiff_append(one, &first, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(tiff_info_of(one, &info, err, sizeof err), QS_OK);
  cr_assert_eq(info.pages, 2);
  /* foreign files */
  cr_assert_eq(tiff_append(in_dir("missing.tif"), &first, err, sizeof err),
               QS_EIO);
  /* float32 of the right size, but in several strips: not ours */
  const char *lib = in_dir("lib.tif");
  write_libtiff(lib, "w", SAMPLEFORMAT_IEEEFP, 32, 0, COMPRESSION_NONE);
  qs_image page;
  fill(&page, 1, H, W, 1);
  cr_assert_eq(tiff_append(lib, &page, err, sizeof err), QS_EFORMAT);
  cr_assert_not_null(strstr(err, "not one uncompressed strip"), "%s", err);
  qs_image_free(&page);
  qs_image_free(&odd);
  qs_image_free(&img);
  dir_remove();
}

/* A classic stack that would pass its size limit (4 GiB; lowered here) is
 * rewritten once as a BigTIFF holding every page, then grows in place. */
Test(tiff, append_past_the_classic_limit_turns_bigtiff) {
  dir_make();
  qs_image img;
  fill(&img, 6, 8, 8, 9);
  size_t plane = 64;
  char err[512];
  const char *out = in_dir("big.tif");
  qs_image two = qs_image_wrap(img.data, 2, 8, 8);
  cr_assert_eq(tiff_write_flags(out, &two, TIFF_APPENDABLE, err, sizeof err),
               QS_OK);
  struct stat st;
  cr_assert_eq(stat(out, &st), 0);
  tiff_set_classic_limit((uint64_t)st.st_size + 420); /* one more page */
  for (size_t k = 2; k < 6; k++) {
    qs_image more = qs_image_wrap(img.data + k * plane, 1, 8, 8);
    cr_assert_eq(tiff_append(out, &more, err, sizeof err), QS_OK, "%s", err);
    TIFF *t = TIFFOpen(out, "r");
    cr_assert_not_null(t);
    cr_assert_eq(TIFFIsBigTIFF(t) != 0, k >= 3, "page %zu", k);
    TIFFClose(t);
    qs_image back;
    cr_assert_eq(tiff_read(out, &back, err, sizeof err), QS_OK, "%s", err);
    cr_assert_eq(back.frames, k + 1);
    cr_assert_eq(memcmp(back.data, img.data, (k + 1) * plane * 4), 0);
    qs_image_free(&back);
  }
  tiff_set_classic_limit(0);
  cr_assert_eq(entries_in(dir), 1);
  qs_image_free(&img);
  dir_remove();
}

/* ------------------------------------------------ axes, units, provenance */

/* A C-channel, T-frame stack of 4 x 5 uint16 pages written by libtiff with
 * the given description and XResolution (0: none) / ResolutionUnit; page
 * p holds the value 1000 * (its channel) + (its frame) everywhere, the
 * channel being p % C (ImageJ's order) or p / T (OME's XYTCZ). */
static void write_axes(const char *path, const char *desc, int c_fast,
                       unsigned C, unsigned T, float xres, uint16_t unit) {
  TIFF *t = TIFFOpen(path, "w");
  cr_assert_not_null(t);
  uint16_t px[20];
  for (unsigned p = 0; p < C * T; p++) {
    unsigned c = c_fast ? p % C : p / T, f = c_fast ? p / C : p % T;
    for (int i = 0; i < 20; i++) px[i] = (uint16_t)(1000 * c + f);
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, 5);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, 4);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 16);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, 4);
    if (p == 0 && desc) TIFFSetField(t, TIFFTAG_IMAGEDESCRIPTION, desc);
    if (xres > 0) {
      TIFFSetField(t, TIFFTAG_XRESOLUTION, xres);
      TIFFSetField(t, TIFFTAG_YRESOLUTION, xres);
      TIFFSetField(t, TIFFTAG_RESOLUTIONUNIT, unit);
    }
    cr_assert_eq(TIFFWriteEncodedStrip(t, 0, px, sizeof px), sizeof px);
    cr_assert(TIFFWriteDirectory(t));
  }
  TIFFClose(t);
}

/* ImageJ's hyperstack: 2 channels x 50 frames, channel fastest, 0.1 um
 * pixels as ImageJ writes them (XResolution 10 per unit, unit=micron). */
Test(tiff, imagej_hyperstack_axes_and_pixel_size) {
  dir_make();
  const char *path = in_dir("tcyx.tif");
  write_axes(path,
             "ImageJ=1.54f\nimages=100\nchannels=2\nframes=50\n"
             "hyperstack=true\nmode=composite\nunit=micron\nloop=false\n",
             1, 2, 50, 10.0f, RESUNIT_NONE);
  tiff_info info;
  char err[512];
  cr_assert_eq(tiff_info_of(path, &info, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(info.pages, 100);
  cr_assert_eq(info.meta.channels, 2);
  cr_assert_eq(info.meta.slices, 1);
  cr_assert_eq(info.meta.frames, 50);
  cr_assert_str_eq(info.meta.order, "CZT");
  cr_assert_float_eq(info.meta.pixel_x, 0.1, 1e-7);
  cr_assert_float_eq(info.meta.pixel_y, 0.1, 1e-7);
  cr_assert_str_eq(info.meta.unit, "micron");
  /* the page of channel 1, frame 7 holds 1007 */
  size_t pg = tiff_meta_page(&info.meta, 1, 0, 7);
  cr_assert_eq(pg, 15);
  qs_image img;
  cr_assert_eq(tiff_read_pages(path, pg, 1, &img, err, sizeof err), QS_OK);
  cr_assert_eq(img.data[0], 1007.0f);
  qs_image_free(&img);
  /* ImageJ's other spelling of micrometres, and a centimetre resolution
   * without ImageJ's unit */
  write_axes(path, "ImageJ=1.54f\nimages=4\nslices=4\nunit=\\u00B5m\n", 1, 1,
             4, 4.0f, RESUNIT_NONE);
  cr_assert_eq(tiff_info_of(path, &info, err, sizeof err), QS_OK, "%s", err);
  cr_assert_str_eq(info.meta.unit, "micron");
  cr_assert_float_eq(info.meta.pixel_x, 0.25, 1e-7);
  cr_assert_eq(info.meta.channels, 1);
  cr_assert_eq(info.meta.slices, 4);
  write_axes(path, NULL, 1, 1, 3, 50000.0f, RESUNIT_CENTIMETER);
  cr_assert_eq(tiff_info_of(path, &info, err, sizeof err), QS_OK, "%s", err);
  cr_assert_float_eq(info.meta.pixel_x, 0.2, 1e-6);
  cr_assert_str_eq(info.meta.unit, "micron");
  cr_assert_eq(info.meta.frames, 3);
  /* no resolution, no description: nothing is known */
  write_axes(path, NULL, 1, 1, 3, 0, 0);
  cr_assert_eq(tiff_info_of(path, &info, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(info.meta.pixel_x, 0);
  cr_assert_str_eq(info.meta.unit, "");
  cr_assert_str_eq(info.meta.provenance, "");
  /* axes that do not make the pages: refused, naming them */
  write_axes(path, "ImageJ=1.54f\nimages=6\nchannels=4\nframes=2\n", 1, 2, 3,
             0, 0);
  cr_assert_eq(tiff_info_of(path, &info, err, sizeof err), QS_EFORMAT);
  cr_assert_not_null(strstr(err, "channels=4"), "%s", err);
  cr_assert_not_null(strstr(err, "frames=2"), "%s", err);
  /* counts whose product wraps around 2^64: refused, never trusted */
  write_axes(path,
             "ImageJ=1.54f\nimages=6\nchannels=4294967297\n"
             "slices=4294967297\nframes=1099511627776\n",
             1, 2, 3, 0, 0);
  cr_assert_eq(tiff_info_of(path, &info, err, sizeof err), QS_EFORMAT);
  dir_remove();
}

/* OME-TIFF: the first Pixels element's sizes, order and physical size. */
Test(tiff, ome_tiff_axes_and_pixel_size) {
  dir_make();
  const char *path = in_dir("ome.tif");
  write_axes(path,
             "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<OME "
             "xmlns=\"http://www.openmicroscopy.org/Schemas/OME/2016-06\">"
             "<Image ID=\"Image:0\"><Pixels ID=\"Pixels:0\" "
             "DimensionOrder=\"XYTCZ\" Type=\"uint16\" SizeX=\"5\" "
             "SizeY=\"4\" SizeC=\"3\" SizeZ=\"1\" SizeT=\"6\" "
             "PhysicalSizeX=\"65\" PhysicalSizeXUnit=\"nm\" "
             "PhysicalSizeY=\"65\" PhysicalSizeYUnit=\"nm\">"
             "<Channel ID=\"Channel:0:0\"/></Pixels></Image></OME>",
             0, 3, 6, 0, 0);
  tiff_info info;
  char err[512];
  cr_assert_eq(tiff_info_of(path, &info, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(info.meta.channels, 3);
  cr_assert_eq(info.meta.frames, 6);
  cr_assert_str_eq(info.meta.order, "TCZ");
  cr_assert_float_eq(info.meta.pixel_x, 65, 1e-9);
  cr_assert_str_eq(info.meta.unit, "nm");
  size_t pg = tiff_meta_page(&info.meta, 2, 0, 5);
  qs_image img;
  cr_assert_eq(tiff_read_pages(path, pg, 1, &img, err, sizeof err), QS_OK);
  cr_assert_eq(img.data[3], 2005.0f);
  qs_image_free(&img);
  dir_remove();
}

/* What tiff_write_meta writes, libtiff and our reader read back: a
 * 2-channel hyperstack in ImageJ's order, its pixel size as XResolution
 * with unit=, and the provenance line; appending keeps them, also
 * through the rewrite as a BigTIFF. */
Test(tiff, written_axes_pixel_size_and_provenance_read_back) {
  dir_make();
  qs_image img;
  fill(&img, 6, 4, 5, 3);
  tiff_meta m;
  tiff_meta_plain(&m, 6);
  m.channels = 2;
  m.frames = 3;
  m.pixel_x = m.pixel_y = 0.02;
  snprintf(m.unit, sizeof m.unit, "micron");
  snprintf(m.provenance, sizeof m.provenance,
           "{\"method\":\"esrrf\",\"impl\":\"serial\"}");
  const char *path = in_dir("hs.tif");
  char err[512];
  cr_assert_eq(tiff_write_meta(path, &img, 0, &m, err, sizeof err), QS_OK,
               "%s", err);
  tiff_info info;
  cr_assert_eq(tiff_info_of(path, &info, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(info.meta.channels, 2);
  cr_assert_eq(info.meta.frames, 3);
  cr_assert_float_eq(info.meta.pixel_x, 0.02, 1e-9);
  cr_assert_str_eq(info.meta.unit, "micron");
  cr_assert_str_eq(info.meta.provenance, m.provenance);
  TIFF *t = TIFFOpen(path, "r");
  cr_assert_not_null(t);
  float xr = 0;
  uint16_t ru = 0;
  const char *desc = NULL;
  cr_assert(TIFFGetField(t, TIFFTAG_XRESOLUTION, &xr));
  cr_assert(TIFFGetField(t, TIFFTAG_RESOLUTIONUNIT, &ru));
  cr_assert(TIFFGetField(t, TIFFTAG_IMAGEDESCRIPTION, &desc));
  cr_assert_float_eq(xr, 50.0f, 1e-4);
  cr_assert_eq(ru, RESUNIT_NONE);
  cr_assert_not_null(strstr(desc, "\nhyperstack=true\n"), "%s", desc);
  TIFFClose(t);
  /* axes that do not make the pages: refused, nothing written */
  m.frames = 4;
  cr_assert_eq(tiff_write_meta(in_dir("bad.tif"), &img, 0, &m, err,
                               sizeof err),
               QS_EINVAL);
  cr_assert_not_null(strstr(err, "frames=4"), "%s", err);
  cr_assert_eq(access(in_dir("bad.tif"), F_OK), -1);
  /* an appendable stack keeps the unit and provenance as it grows, also
   * when it turns BigTIFF */
  tiff_meta_plain(&m, 1);
  m.pixel_x = m.pixel_y = 0.013;
  snprintf(m.unit, sizeof m.unit, "micron");
  snprintf(m.provenance, sizeof m.provenance, "{\"stream\":true}");
  const char *grow = in_dir("grow.tif");
  qs_image one = qs_image_wrap(img.data, 1, 4, 5);
  cr_assert_eq(tiff_write_meta(grow, &one, TIFF_APPENDABLE, &m, err,
                               sizeof err),
               QS_OK, "%s", err);
  struct stat st;
  cr_assert_eq(stat(grow, &st), 0);
  tiff_set_classic_limit((uint64_t)st.st_size + 250);
  for (int k = 0; k < 3; k++) {
    cr_assert_eq(tiff_append(grow, &one, err, sizeof err), QS_OK, "%s", err);
    cr_assert_eq(tiff_info_of(grow, &info, err, sizeof err), QS_OK, "%s",
                 err);
    cr_assert_eq(info.pages, (size_t)k + 2);
    cr_assert_float_eq(info.meta.pixel_x, 0.013, 1e-7);
    cr_assert_str_eq(info.meta.provenance, "{\"stream\":true}");
  }
  t = TIFFOpen(grow, "r");
  cr_assert(TIFFIsBigTIFF(t));
  TIFFClose(t);
  tiff_set_classic_limit(0);
  qs_image_free(&img);
  dir_remove();
}

/* The implementations of several runs of one output (channels, MPI
 * ranks): the set lists each name once, in the order first met, names
 * that only share a prefix apart, nothing cut in the middle of a name;
 * the per-run list appears only when the runs differ. */
Test(provenance, implementation_set_and_per_run_list) {
  const char *runs[] = {"fused_avx2", "serial,fused_avx2", "", "fused",
                        "threaded,serial"};
  char set[64];
  prov_impl_set(runs, 5, set, sizeof set);
  cr_assert_str_eq(set, "fused_avx2,serial,fused,threaded");
  prov_impl_set(runs, 5, set, 12); /* "fused_avx2" and its NUL fit */
  cr_assert_str_eq(set, "fused_avx2");
  prov_impl_set(runs + 2, 1, set, sizeof set);
  cr_assert_str_eq(set, "");
  const char *same[] = {"serial", "serial", "serial"};
  cJSON *j = cJSON_CreateObject();
  prov_impl_each(j, "impl_per_rank", same, 3);
  cr_assert_null(cJSON_GetObjectItem(j, "impl_per_rank"));
  prov_impl_each(j, "impl_per_rank", runs, 5);
  cJSON *a = cJSON_GetObjectItem(j, "impl_per_rank");
  cr_assert_eq(cJSON_GetArraySize(a), 5);
  cr_assert_str_eq(cJSON_GetArrayItem(a, 1)->valuestring, "serial,fused_avx2");
  cr_assert_str_eq(cJSON_GetArrayItem(a, 2)->valuestring, "");
  const char *inputs[] = {"/data/a.tif", "b.tif"};
  prov_inputs(j, inputs, 1); /* one input: "input" says it */
  cr_assert_null(cJSON_GetObjectItem(j, "inputs"));
  prov_inputs(j, inputs, 2);
  a = cJSON_GetObjectItem(j, "inputs");
  cr_assert_str_eq(cJSON_GetArrayItem(a, 0)->valuestring, "a.tif");
  cr_assert_str_eq(cJSON_GetArrayItem(a, 1)->valuestring, "b.tif");
  cJSON_Delete(j);
}
