/* tiff.c — TIFF stacks in (libtiff) and out (ImageJ's layout, written
 * here: libtiff interleaves every page's directory with its pixel data,
 * while ImageJ reads a stack described as "images=N" as N pages of
 * contiguous data from the first page's offset and ignores the rest). */
#include "tiff.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <tiffio.h>
#include <unistd.h>

#include "outfile.h"

/* ------------------------------------------------------------- reading */

/* One open source: a file (through its descriptor) or a memory buffer. */
typedef struct reader {
  const char *name;
  char msg[512];            /* libtiff's first error, "" if none */
  uint64_t size;            /* bytes in the file */
  const unsigned char *mem; /* memory source, else NULL */
  uint64_t pos;
  size_t first, count; /* pages wanted: [first, first + count) */
  tiff_info *info;     /* info only (no pixel data), else NULL */
} reader;

static int on_error(TIFF *t, void *user, const char *module, const char *fmt,
                    va_list ap) {
  (void)t;
  (void)module;
  reader *r = user;
  if (!r->msg[0]) vsnprintf(r->msg, sizeof r->msg, fmt, ap);
  return 1; /* handled: libtiff prints nothing */
}

static int on_warning(TIFF *t, void *user, const char *module, const char *fmt,
                      va_list ap) {
  (void)t, (void)user, (void)module, (void)fmt, (void)ap;
  return 1;
}

static tmsize_t mem_read(thandle_t h, void *buf, tmsize_t n) {
  reader *r = h;
  uint64_t left = r->pos < r->size ? r->size - r->pos : 0;
  uint64_t k = (uint64_t)n < left ? (uint64_t)n : left;
  if (k) memcpy(buf, r->mem + r->pos, (size_t)k);
  r->pos += k;
  return (tmsize_t)k;
}

static tmsize_t mem_write(thandle_t h, void *buf, tmsize_t n) {
  (void)h, (void)buf, (void)n;
  return -1;
}

/* Offsets are unsigned; SEEK_CUR/SEEK_END deltas wrap as libtiff intends. */
static toff_t mem_seek(thandle_t h, toff_t off, int whence) {
  reader *r = h;
  uint64_t base = whence == SEEK_SET   ? 0
                  : whence == SEEK_CUR ? r->pos
                                       : r->size;
  r->pos = base + off;
  return r->pos;
}

static int mem_close(thandle_t h) {
  (void)h;
  return 0;
}

static toff_t mem_size(thandle_t h) { return ((reader *)h)->size; }

static int mem_map(thandle_t h, void **base, toff_t *size) {
  (void)h, (void)base, (void)size;
  return 0;
}

static void mem_unmap(thandle_t h, void *base, toff_t size) {
  (void)h, (void)base, (void)size;
}

typedef void (*conv_fn)(const unsigned char *src, float *dst, size_t n);

#define CONV_(fname, T)                                                       \
  static void fname(const unsigned char *s, float *d, size_t n) {             \
    for (size_t i = 0; i < n; i++) {                                          \
      T v;                                                                    \
      memcpy(&v, s + i * sizeof v, sizeof v);                                 \
      d[i] = (float)v;                                                        \
    }                                                                         \
  }
CONV_(conv_u8, uint8_t)
CONV_(conv_i8, int8_t)
CONV_(conv_u16, uint16_t)
CONV_(conv_i16, int16_t)
CONV_(conv_u32, uint32_t)
CONV_(conv_i32, int32_t)
CONV_(conv_f32, float)
#undef CONV_

/* Doubles beyond float's range become infinities (a plain cast is
 * undefined there). */
static void conv_f64(const unsigned char *s, float *d, size_t n) {
  for (size_t i = 0; i < n; i++) {
    double v;
    memcpy(&v, s + i * sizeof v, sizeof v);
    d[i] = v > FLT_MAX ? INFINITY : v < -FLT_MAX ? -INFINITY : (float)v;
  }
}

static const struct {
  uint16_t fmt, bits;
  conv_fn fn;
} convs[] = {
    {SAMPLEFORMAT_UINT, 8, conv_u8},     {SAMPLEFORMAT_INT, 8, conv_i8},
    {SAMPLEFORMAT_UINT, 16, conv_u16},   {SAMPLEFORMAT_INT, 16, conv_i16},
    {SAMPLEFORMAT_UINT, 32, conv_u32},   {SAMPLEFORMAT_INT, 32, conv_i32},
    {SAMPLEFORMAT_IEEEFP, 32, conv_f32}, {SAMPLEFORMAT_IEEEFP, 64, conv_f64},
};

/* What one page holds, as far as reading it needs. */
typedef struct page {
  uint32_t w, h;
  size_t bytes;   /* per sample */
  uint64_t stored; /* bytes of all its strips or tiles in the file */
  conv_fn conv;
} page;

/* No codec libtiff ships expands data by more than about 4096 times; past
 * that (with 1 MiB of slack for tiny pages) a header lies about its sizes. */
static int plausible(uint64_t decoded, uint64_t stored) {
  return decoded <= 4096 * stored + ((uint64_t)1 << 20);
}

/* Writes "<file>: <what>[ (libtiff: <msg>)]" into err; returns status. */
static int read_fail(const reader *r, int status, char *err, size_t err_len,
                     const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int read_fail(const reader *r, int status, char *err, size_t err_len,
                     const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  if (r->msg[0])
    snprintf(err, err_len, "%s: %s (libtiff: %s)", r->name, what, r->msg);
  else
    snprintf(err, err_len, "%s: %s", r->name, what);
  return status;
}

/* Checks the current directory (page `k`) and fills *p: one sample per
 * pixel of a supported type, every strip or tile inside the file, and no
 * more pixels than the stored bytes can plausibly hold (so a forged header
 * cannot make us allocate gigabytes). */
static int page_probe(TIFF *t, reader *r, unsigned k, page *p, char *err,
                      size_t err_len) {
  uint32_t w = 0, h = 0;
  uint16_t spp = 1, bits = 1, fmt = SAMPLEFORMAT_UINT, comp = 1;
  if (!TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w) ||
      !TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h) || w == 0 || h == 0)
    return read_fail(r, QS_EFORMAT, err, err_len, "page %u has no image size",
                     k);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &fmt);
  TIFFGetFieldDefaulted(t, TIFFTAG_COMPRESSION, &comp);
  if (spp != 1)
    return read_fail(r, QS_EFORMAT, err, err_len,
                     "page %u has %u samples per pixel; only single-channel "
                     "images are read",
                     k, (unsigned)spp);
  p->conv = NULL;
  for (size_t i = 0; i < sizeof convs / sizeof convs[0]; i++)
    if (convs[i].fmt == fmt && convs[i].bits == bits) p->conv = convs[i].fn;
  if (!p->conv)
    return read_fail(r, QS_EFORMAT, err, err_len,
                     "page %u has %u-bit samples of format %u; supported: "
                     "8/16/32-bit integers and 32/64-bit floats",
                     k, (unsigned)bits, (unsigned)fmt);
  p->w = w;
  p->h = h;
  p->bytes = bits / 8u;

  uint32_t n = TIFFIsTiled(t) ? TIFFNumberOfTiles(t) : TIFFNumberOfStrips(t);
  if (n == 0)
    return read_fail(r, QS_EFORMAT, err, err_len, "page %u has no data", k);
  uint64_t stored = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t off = TIFFGetStrileOffset(t, i);
    uint64_t cnt = TIFFGetStrileByteCount(t, i);
    if (off > r->size || cnt > r->size - off)
      return read_fail(r, QS_EFORMAT, err, err_len,
                       "truncated: page %u's data ends past the file's %llu "
                       "bytes",
                       k, (unsigned long long)r->size);
    stored += cnt;
  }
  if (stored > r->size) stored = r->size; /* overlapping strips */
  p->stored = stored;
  uint64_t raw = (uint64_t)w * h * p->bytes;
  if (comp == COMPRESSION_NONE && stored < raw)
    return read_fail(r, QS_EFORMAT, err, err_len,
                     "truncated: page %u stores %llu of its %llu bytes", k,
                     (unsigned long long)stored, (unsigned long long)raw);
  if (comp != COMPRESSION_NONE && !plausible(raw, stored))
    return read_fail(r, QS_EFORMAT, err, err_len,
                     "page %u claims %ux%u pixels from %llu stored bytes", k,
                     (unsigned)w, (unsigned)h, (unsigned long long)stored);
  return QS_OK;
}

/* Decodes the current directory into dst (h * w floats). */
static int page_read(TIFF *t, reader *r, unsigned k, const page *p, float *dst,
                     char *err, size_t err_len) {
  int tiled = TIFFIsTiled(t);
  uint32_t tw = p->w, th = 1;
  if (tiled) {
    TIFFGetField(t, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(t, TIFFTAG_TILELENGTH, &th);
  } else {
    TIFFGetFieldDefaulted(t, TIFFTAG_ROWSPERSTRIP, &th);
    if (th > p->h) th = p->h;
  }
  if (tw == 0 || th == 0)
    return read_fail(r, QS_EFORMAT, err, err_len,
                     "page %u has an empty tile or strip", k);
  tmsize_t cap = tiled ? TIFFTileSize(t) : TIFFStripSize(t);
  uint64_t need = (uint64_t)tw * th * p->bytes;
  if (cap <= 0 || (uint64_t)cap < need)
    return read_fail(r, QS_EFORMAT, err, err_len,
                     "page %u has an inconsistent strip or tile layout", k);
  /* Tiles may overhang the image, so their size is not bounded by the
   * page's; bound it by what the stored bytes can decode to. */
  if (!plausible((uint64_t)cap, p->stored))
    return read_fail(r, QS_EFORMAT, err, err_len,
                     "page %u claims %ux%u tiles from %llu stored bytes", k,
                     (unsigned)tw, (unsigned)th,
                     (unsigned long long)p->stored);
  unsigned char *buf = malloc((size_t)cap);
  if (!buf)
    return read_fail(r, QS_ENOMEM, err, err_len, "out of memory on page %u",
                     k);
  int rc = QS_OK;
  for (uint32_t y = 0; y < p->h && !rc; y += th) {
    uint32_t rows = p->h - y < th ? p->h - y : th;
    for (uint32_t x = 0; x < p->w && !rc; x += tw) {
      uint32_t cols = p->w - x < tw ? p->w - x : tw;
      tmsize_t got;
      if (tiled) {
        got = TIFFReadTile(t, buf, x, y, 0, 0);
        if (got >= 0 && (uint64_t)got < need) got = -1;
      } else {
        tmsize_t want = (tmsize_t)((uint64_t)rows * p->w * p->bytes);
        got = TIFFReadEncodedStrip(t, TIFFComputeStrip(t, y, 0), buf, want);
        if (got >= 0 && got < want) got = -1;
      }
      if (got < 0) {
        rc = read_fail(r, QS_EFORMAT, err, err_len,
                       "cannot decode page %u at row %u", k, (unsigned)y);
        break;
      }
      for (uint32_t i = 0; i < rows; i++)
        p->conv(buf + (size_t)i * tw * p->bytes,
                dst + (size_t)(y + i) * p->w + x, cols);
    }
  }
  free(buf);
  return rc;
}

/* ImageJ announces its page count in the description; fewer pages means
 * a cut file (or a >4 GiB ImageJ stack, whose later pages have no
 * directory). 0 when not an ImageJ file. */
static unsigned long imagej_images(TIFF *t) {
  const char *desc = NULL;
  if (!TIFFGetField(t, TIFFTAG_IMAGEDESCRIPTION, &desc) || !desc ||
      strncmp(desc, "ImageJ=", 7) != 0)
    return 0;
  const char *s = strstr(desc, "\nimages=");
  return s ? strtoul(s + 8, NULL, 10) : 0;
}

/* bytes [off, off + n) of the source into buf; 0 on success */
static int raw_read(TIFF *t, const reader *r, uint64_t off, void *buf,
                    size_t n) {
  if (off > r->size || n > r->size - off) return -1;
  if (r->mem) {
    memcpy(buf, r->mem + off, n);
    return 0;
  }
  for (size_t done = 0; done < n;) {
    ssize_t k = pread(TIFFFileno(t), (char *)buf + done, n - done,
                      (off_t)(off + done));
    if (k <= 0) return -1;
    done += (size_t)k;
  }
  return 0;
}

/* ------------------------------------------------------------ budget */

static uint64_t budget_set; /* tiff_set_read_budget; 0: default */

void tiff_set_read_budget(uint64_t bytes) { budget_set = bytes; }

/* MemAvailable of /proc/meminfo in bytes, 0 if unknown. */
static uint64_t mem_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  char line[128];
  unsigned long long kb = 0;
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
  if (f) fclose(f);
  return (uint64_t)kb * 1024;
}

int tiff_read_budget(uint64_t *bytes, char *err, size_t err_len) {
  if (budget_set) return *bytes = budget_set, QS_OK;
  const char *v = getenv("QUICKSILVER_READ_BUDGET_MB");
  if (v && *v) {
    char *end;
    errno = 0;
    unsigned long long mb = strtoull(v, &end, 10);
    if (end == v || *end || errno || mb == 0 || mb > ((uint64_t)1 << 40)) {
      snprintf(err, err_len,
               "QUICKSILVER_READ_BUDGET_MB: \"%s\" is not a number of MiB "
               "in [1, 2^40]",
               v);
      return QS_EENV;
    }
    return *bytes = (uint64_t)mb << 20, QS_OK;
  }
  /* What the machine can hold now, less a quarter for the outputs and
   * the method's scratch; never under 64 MiB. */
  uint64_t avail = mem_available() / 4 * 3;
  if (avail == 0) {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
    avail = pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size / 2 : 0;
  }
  *bytes = avail > ((uint64_t)64 << 20) ? avail : (uint64_t)64 << 20;
  return QS_OK;
}

/* "12.3 MiB" style sizes for messages. */
static const char *human(uint64_t b, char *buf, size_t len) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)b;
  int u = 0;
  while (v >= 1024 && u < 4) v /= 1024, u++;
  snprintf(buf, len, u ? "%.1f %s" : "%.0f %s", v, unit[u]);
  return buf;
}

/* The decoded pages [r->first, r->first + count) of w x h pixels must fit
 * the read budget: refused otherwise, naming the page at which the total
 * passes it and what that page claims. */
static int budget_check(reader *r, uint32_t w, uint32_t h, size_t count,
                        char *err, size_t err_len) {
  uint64_t budget;
  int rc = tiff_read_budget(&budget, err, err_len);
  if (rc) return rc;
  uint64_t per = (uint64_t)w * h * sizeof(float);
  if (per == 0 || (uint64_t)count <= budget / per) return QS_OK;
  size_t k = (size_t)(budget / per); /* pages that fit */
  char a[32], b[32], c[32];
  return read_fail(r, QS_ENOMEM, err, err_len,
                   "page %zu claims %ux%u pixels (%s decoded), which takes "
                   "the %zu pages read to %s, over the read budget of %s "
                   "(QUICKSILVER_READ_BUDGET_MB raises it)",
                   r->first + k, (unsigned)h, (unsigned)w,
                   human(per, a, sizeof a), count,
                   human(per * count, b, sizeof b),
                   human(budget, c, sizeof c));
}

/* Pages [first, first + count) of n must exist. */
static int range_check(reader *r, size_t n, char *err, size_t err_len) {
  if (r->count == SIZE_MAX) r->count = r->first < n ? n - r->first : 0;
  if (r->count == 0 || r->first >= n || r->count > n - r->first)
    return read_fail(r, QS_EINVAL, err, err_len,
                     "pages [%zu, %zu) asked of a stack of %zu", r->first,
                     r->first + r->count, n);
  return QS_OK;
}

/* ImageJ writes stacks past 4 GiB with a single directory: the other
 * pages' pixels follow the first page's back to back, uncompressed. Reads
 * `pages` of them when the first page is laid out that way and the file
 * holds them all. */
static int read_imagej_big(TIFF *t, reader *r, const page *first,
                           unsigned long pages, image *img, char *err,
                           size_t err_len) {
  uint16_t comp = COMPRESSION_NONE;
  TIFFGetFieldDefaulted(t, TIFFTAG_COMPRESSION, &comp);
  uint64_t page_bytes = (uint64_t)first->w * first->h * first->bytes;
  uint64_t off = TIFFGetStrileOffset(t, 0), next = off;
  int contiguous = comp == COMPRESSION_NONE && !TIFFIsTiled(t);
  for (uint32_t i = 0; contiguous && i < TIFFNumberOfStrips(t); i++) {
    contiguous = TIFFGetStrileOffset(t, i) == next;
    next += TIFFGetStrileByteCount(t, i);
  }
  if (!contiguous)
    return read_fail(r, QS_EFORMAT, err, err_len,
                     "ImageJ announces %lu images in one directory, but its "
                     "pixel data is not one contiguous uncompressed block",
                     pages);
  uint64_t held = off <= r->size ? (r->size - off) / page_bytes : 0;
  if (held < pages)
    return read_fail(r, QS_EFORMAT, err, err_len,
                     "truncated: ImageJ announces %lu images, the file "
                     "holds %llu",
                     pages, (unsigned long long)held);
  if (r->info) {
    *r->info = (tiff_info){pages, first->h, first->w};
    return QS_OK;
  }
  int rc = range_check(r, pages, err, err_len);
  if (!rc) rc = budget_check(r, first->w, first->h, r->count, err, err_len);
  if (rc) return rc;
  rc = image_alloc(img, r->count, first->h, first->w);
  if (rc)
    return read_fail(r, rc, err, err_len, "%zu pages of %ux%u pixels: %s",
                     r->count, (unsigned)first->h, (unsigned)first->w,
                     status_message(rc));
  unsigned char *buf = malloc((size_t)page_bytes);
  size_t plane = (size_t)first->w * first->h;
  if (!buf) rc = read_fail(r, QS_ENOMEM, err, err_len, "out of memory");
  for (size_t j = 0; !rc && j < r->count; j++) {
    size_t k = r->first + j;
    if (raw_read(t, r, off + k * page_bytes, buf, (size_t)page_bytes)) {
      rc = read_fail(r, QS_EIO, err, err_len, "cannot read page %zu", k);
      break;
    }
    if (TIFFIsByteSwapped(t) && first->bytes == 2)
      TIFFSwabArrayOfShort((uint16_t *)(void *)buf, (tmsize_t)plane);
    if (TIFFIsByteSwapped(t) && first->bytes == 4)
      TIFFSwabArrayOfLong((uint32_t *)(void *)buf, (tmsize_t)plane);
    if (TIFFIsByteSwapped(t) && first->bytes == 8)
      TIFFSwabArrayOfLong8((uint64_t *)(void *)buf, (tmsize_t)plane);
    first->conv(buf, img->data + j * plane, plane);
  }
  free(buf);
  if (rc) image_free(img);
  return rc;
}

static int read_all(TIFF *t, reader *r, image *img, char *err,
                    size_t err_len) {
  tdir_t n = TIFFNumberOfDirectories(t);
  if (r->msg[0] || n == 0)
    return read_fail(r, QS_EFORMAT, err, err_len,
                     "malformed or truncated TIFF directory chain");
  page first, p;
  for (tdir_t d = 0; d < n; d++) {
    if (d > 0 && !TIFFReadDirectory(t))
      return read_fail(r, QS_EFORMAT, err, err_len, "cannot read page %u",
                       (unsigned)d);
    int rc = page_probe(t, r, (unsigned)d, d ? &p : &first, err, err_len);
    if (rc) return rc;
    if (d == 0) {
      unsigned long announced = imagej_images(t);
      if (announced > n && n == 1)
        return read_imagej_big(t, r, &first, announced, img, err, err_len);
      if (announced > n)
        return read_fail(r, QS_EFORMAT, err, err_len,
                         "truncated: ImageJ announces %lu images, the file "
                         "holds %u pages",
                         announced, (unsigned)n);
    } else if (p.w != first.w || p.h != first.h) {
      return read_fail(r, QS_EFORMAT, err, err_len,
                       "pages of different sizes: page 0 is %ux%u, page %u "
                       "is %ux%u (rows x cols)",
                       (unsigned)first.h, (unsigned)first.w, (unsigned)d,
                       (unsigned)p.h, (unsigned)p.w);
    }
  }
  if (r->info) {
    if (r->msg[0])
      return read_fail(r, QS_EFORMAT, err, err_len, "malformed TIFF");
    *r->info = (tiff_info){n, first.h, first.w};
    return QS_OK;
  }
  int rc = range_check(r, n, err, err_len);
  if (!rc) rc = budget_check(r, first.w, first.h, r->count, err, err_len);
  if (rc) return rc;
  rc = image_alloc(img, r->count, first.h, first.w);
  if (rc)
    return read_fail(r, rc, err, err_len, "%zu pages of %ux%u pixels: %s",
                     r->count, (unsigned)first.h, (unsigned)first.w,
                     status_message(rc));
  size_t plane = (size_t)first.w * first.h;
  size_t end = r->first + r->count;
  for (tdir_t d = 0; d < end && !rc; d++) {
    /* sequential reads: TIFFSetDirectory(d) would walk the chain anew;
     * the directories before the range are read, their pixels are not */
    int at = d ? TIFFReadDirectory(t) : TIFFSetDirectory(t, 0);
    if (!at || page_probe(t, r, d, &p, err, err_len)) {
      rc = read_fail(r, QS_EFORMAT, err, err_len, "cannot read page %u",
                     (unsigned)d);
      break;
    }
    if (d >= r->first)
      rc = page_read(t, r, (unsigned)d, &p, img->data + (d - r->first) * plane,
                     err, err_len);
  }
  if (!rc && r->msg[0])
    rc = read_fail(r, QS_EFORMAT, err, err_len, "malformed TIFF");
  if (rc) image_free(img);
  return rc;
}

static int is_tiff_magic(const unsigned char *b) {
  return (b[0] == 'I' && b[1] == 'I' && (b[2] == 42 || b[2] == 43) &&
          b[3] == 0) ||
         (b[0] == 'M' && b[1] == 'M' && b[2] == 0 &&
          (b[3] == 42 || b[3] == 43));
}

static TIFFOpenOptions *open_options(reader *r) {
  TIFFOpenOptions *o = TIFFOpenOptionsAlloc();
  if (!o) return NULL;
  TIFFOpenOptionsSetErrorHandlerExtR(o, on_error, r);
  TIFFOpenOptionsSetWarningHandlerExtR(o, on_warning, r);
  /* One strip or tile buffer never needs more. */
  TIFFOpenOptionsSetMaxSingleMemAlloc(o, (tmsize_t)1 << 30);
  return o;
}

int tiff_read_mem(const void *data, size_t size, const char *name, image *img,
                  char *err, size_t err_len) {
  image empty = {0};
  *img = empty;
  reader r = {.name = name, .size = size, .mem = data, .count = SIZE_MAX};
  if (size < 8 || !is_tiff_magic(data))
    return read_fail(&r, QS_EFORMAT, err, err_len, "not a TIFF file");
  TIFFOpenOptions *o = open_options(&r);
  if (!o) return read_fail(&r, QS_ENOMEM, err, err_len, "out of memory");
  TIFF *t = TIFFClientOpenExt(name, "rm", &r, mem_read, mem_write, mem_seek,
                              mem_close, mem_size, mem_map, mem_unmap, o);
  TIFFOpenOptionsFree(o);
  if (!t) return read_fail(&r, QS_EFORMAT, err, err_len, "cannot open TIFF");
  int rc = read_all(t, &r, img, err, err_len);
  TIFFClose(t);
  return rc;
}

/* Reads pages [r->first, r->first + r->count) of the file, or only its
 * shape when r->info is set. */
static int read_file(reader *r, image *img, char *err, size_t err_len) {
  /* Without blocking: opening a FIFO for reading would wait for a writer
   * forever; it is refused below as not a regular file. */
  int fd = open(r->name, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int rc = read_fail(r, QS_EIO, err, err_len, "cannot read: %s",
                       fd < 0 ? strerror(errno) : "not a regular file");
    if (fd >= 0) close(fd);
    return rc;
  }
  r->size = (uint64_t)st.st_size;
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  unsigned char magic[4];
  if (pread(fd, magic, 4, 0) != 4 || r->size < 8 || !is_tiff_magic(magic)) {
    close(fd);
    return read_fail(r, QS_EFORMAT, err, err_len, "not a TIFF file");
  }
  TIFFOpenOptions *o = open_options(r);
  if (!o) {
    close(fd);
    return read_fail(r, QS_ENOMEM, err, err_len, "out of memory");
  }
  TIFF *t = TIFFFdOpenExt(fd, r->name, "r", o);
  TIFFOpenOptionsFree(o);
  if (!t) {
    close(fd);
    return read_fail(r, QS_EFORMAT, err, err_len, "cannot open TIFF");
  }
  int rc = read_all(t, r, img, err, err_len);
  TIFFClose(t); /* closes fd */
  return rc;
}

int tiff_read(const char *path, image *img, char *err, size_t err_len) {
  return tiff_read_pages(path, 0, SIZE_MAX, img, err, err_len);
}

int tiff_read_pages(const char *path, size_t first, size_t count, image *img,
                    char *err, size_t err_len) {
  image empty = {0};
  *img = empty;
  reader r = {.name = path, .first = first, .count = count};
  if (count == 0)
    return read_fail(&r, QS_EINVAL, err, err_len, "no pages asked for");
  return read_file(&r, img, err, err_len);
}

int tiff_info_of(const char *path, tiff_info *info, char *err,
                 size_t err_len) {
  tiff_info none = {0, 0, 0};
  *info = none;
  reader r = {.name = path, .count = SIZE_MAX, .info = info};
  image unused = {0};
  return read_file(&r, &unused, err, err_len);
}

/* ------------------------------------------------------------- writing */

enum { T_ASCII = 2, T_SHORT = 3, T_LONG = 4, T_LONG8 = 16 };

/* One directory entry in the host's byte order (which the header
 * declares); the value is left-justified in its field. */
static unsigned char *ifd_entry(unsigned char *p, int big, uint16_t tag,
                                uint16_t type, uint64_t count,
                                uint64_t value) {
  size_t vsize = type == T_SHORT   ? 2
                 : type == T_LONG  ? 4
                 : type == T_LONG8 ? 8
                 : big             ? 8
                                   : 4;
  size_t head = big ? 12 : 8, field = big ? 8 : 4;
  memcpy(p, &tag, 2);
  memcpy(p + 2, &type, 2);
  if (big) {
    memcpy(p + 4, &count, 8);
  } else {
    uint32_t c = (uint32_t)count;
    memcpy(p + 4, &c, 4);
  }
  memset(p + head, 0, field);
  uint16_t v16 = (uint16_t)value;
  uint32_t v32 = (uint32_t)value;
  memcpy(p + head,
         vsize == 2   ? (void *)&v16
         : vsize == 4 ? (void *)&v32
                      : (void *)&value,
         vsize);
  return p + head + field;
}

/* The directory of one page; returns its size in bytes. */
static size_t ifd_build(unsigned char *buf, int big, const image *img,
                        uint64_t data_off, uint64_t desc_off, size_t desc_len,
                        uint64_t next) {
  uint64_t page_bytes = (uint64_t)img->rows * img->cols * 4;
  uint16_t off_type = big ? T_LONG8 : T_LONG;
  uint64_t n = desc_len ? 12 : 11;
  unsigned char *p = buf;
  if (big) {
    memcpy(p, &n, 8);
    p += 8;
  } else {
    uint16_t n16 = (uint16_t)n;
    memcpy(p, &n16, 2);
    p += 2;
  }
  p = ifd_entry(p, big, 254, T_LONG, 1, 0); /* NewSubfileType */
  p = ifd_entry(p, big, 256, T_LONG, 1, img->cols);
  p = ifd_entry(p, big, 257, T_LONG, 1, img->rows);
  p = ifd_entry(p, big, 258, T_SHORT, 1, 32); /* BitsPerSample */
  p = ifd_entry(p, big, 259, T_SHORT, 1, 1);  /* no compression */
  p = ifd_entry(p, big, 262, T_SHORT, 1, 1);  /* black is zero */
  if (desc_len) p = ifd_entry(p, big, 270, T_ASCII, desc_len, desc_off);
  p = ifd_entry(p, big, 273, off_type, 1, data_off);
  p = ifd_entry(p, big, 277, T_SHORT, 1, 1); /* SamplesPerPixel */
  p = ifd_entry(p, big, 278, T_LONG, 1, img->rows);
  p = ifd_entry(p, big, 279, off_type, 1, page_bytes);
  p = ifd_entry(p, big, 339, T_SHORT, 1, 3); /* IEEE float */
  if (big) {
    memcpy(p, &next, 8);
    p += 8;
  } else {
    uint32_t n32 = (uint32_t)next;
    memcpy(p, &n32, 4);
    p += 4;
  }
  return (size_t)(p - buf);
}

int tiff_write(const char *path, const image *img, char *err, size_t err_len) {
  return tiff_write_flags(path, img, 0, err, err_len);
}

int tiff_write_flags(const char *path, const image *img, unsigned flags,
                     char *err, size_t err_len) {
  size_t n;
  if (!img || !img->data ||
      image_pixels(img->frames, img->rows, img->cols, &n) || n == 0 ||
      img->rows > UINT32_MAX || img->cols > UINT32_MAX) {
    snprintf(err, err_len, "%s: nothing to write (empty or oversized image)",
             path);
    return QS_EINVAL;
  }
  float lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < n; i++) {
    float v = img->data[i];
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (!(lo <= hi)) lo = hi = 0; /* no finite value */
  char desc[256];
  if (img->frames > 1)
    snprintf(desc, sizeof desc,
             "ImageJ=1.11a\nimages=%zu\nslices=%zu\nloop=false\n"
             "min=%.9g\nmax=%.9g\n",
             img->frames, img->frames, (double)lo, (double)hi);
  else
    snprintf(desc, sizeof desc, "ImageJ=1.11a\nmin=%.9g\nmax=%.9g\n",
             (double)lo, (double)hi);
  size_t desc_len = strlen(desc) + 1;

  uint64_t data_bytes = (uint64_t)n * 4;
  uint64_t classic_end =
      8 + desc_len + 8 + data_bytes + 150 + (uint64_t)(img->frames - 1) * 138;
  int big = (flags & TIFF_BIG) || classic_end > UINT32_MAX;
  uint64_t head = big ? 16 : 8;
  uint64_t data_off = (head + desc_len + 7) & ~(uint64_t)7;
  uint64_t ifd_off = data_off + data_bytes;
  size_t ifd0 = big ? 256 : 150, ifdn = big ? 236 : 138;

  outfile o;
  int rc = outfile_open(&o, path, err, err_len);
  if (rc) return rc;
  unsigned char hdr[16] = {0}, pad[8] = {0};
  uint16_t order = 0x4949; /* "II" or "MM": the host's own order */
  {
    const uint16_t probe = 1;
    unsigned char b;
    memcpy(&b, &probe, 1);
    if (!b) order = 0x4d4d;
  }
  uint16_t magic = big ? 43 : 42;
  memcpy(hdr, &order, 2);
  memcpy(hdr + 2, &magic, 2);
  if (big) {
    uint16_t eight = 8, zero = 0;
    memcpy(hdr + 4, &eight, 2);
    memcpy(hdr + 6, &zero, 2);
    memcpy(hdr + 8, &ifd_off, 8);
  } else {
    uint32_t off32 = (uint32_t)ifd_off;
    memcpy(hdr + 4, &off32, 4);
  }
  int ok = fwrite(hdr, 1, head, o.f) == head &&
           fwrite(desc, 1, desc_len, o.f) == desc_len &&
           fwrite(pad, 1, data_off - head - desc_len, o.f) ==
               data_off - head - desc_len;
  size_t plane = img->rows * img->cols;
  for (size_t f = 0; ok && f < img->frames; f++)
    ok = fwrite(img->data + f * plane, sizeof(float), plane, o.f) == plane;
  unsigned char ifd[256];
  uint64_t at = ifd_off;
  for (size_t f = 0; ok && f < img->frames; f++) {
    size_t this_size = f ? ifdn : ifd0;
    uint64_t next = f + 1 < img->frames ? at + this_size : 0;
    size_t len = ifd_build(ifd, big, img, data_off + f * plane * 4, head,
                           f ? 0 : desc_len, next);
    ok = fwrite(ifd, 1, len, o.f) == len;
    at += len;
  }
  if (!ok) {
    snprintf(err, err_len, "%s: cannot write: %s", path, strerror(errno));
    outfile_abort(&o);
    return QS_EIO;
  }
  return outfile_commit(&o, err, err_len);
}
