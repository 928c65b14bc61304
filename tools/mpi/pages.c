/* pages.c — a page range of a TIFF stack (see pages.h; interim until
 * tools/tiff.h reads page ranges). */
#include "pages.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>

typedef struct src {
  const char *path;
  char msg[256]; /* libtiff's first error */
} src;

static int on_error(TIFF *t, void *user, const char *module, const char *fmt,
                    va_list ap) {
  (void)t, (void)module;
  src *s = user;
  if (!s->msg[0]) vsnprintf(s->msg, sizeof s->msg, fmt, ap);
  return 1;
}

static int on_warning(TIFF *t, void *user, const char *module, const char *fmt,
                      va_list ap) {
  (void)t, (void)user, (void)module, (void)fmt, (void)ap;
  return 1;
}

static int fail(const src *s, int status, char *err, size_t err_len,
                const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int fail(const src *s, int status, char *err, size_t err_len,
                const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  snprintf(err, err_len, "%s: %s%s%s%s", s->path, what,
           s->msg[0] ? " (libtiff: " : "", s->msg, s->msg[0] ? ")" : "");
  return status;
}

static TIFF *open_tiff(src *s, char *err, size_t err_len) {
  TIFFOpenOptions *o = TIFFOpenOptionsAlloc();
  if (!o) {
    fail(s, QS_ENOMEM, err, err_len, "out of memory");
    return NULL;
  }
  TIFFOpenOptionsSetErrorHandlerExtR(o, on_error, s);
  TIFFOpenOptionsSetWarningHandlerExtR(o, on_warning, s);
  TIFFOpenOptionsSetMaxSingleMemAlloc(o, (tmsize_t)1 << 30);
  TIFF *t = TIFFOpenExt(s->path, "r", o);
  TIFFOpenOptionsFree(o);
  if (!t) fail(s, QS_EIO, err, err_len, "cannot open as TIFF");
  return t;
}

/* Sample layout of the current directory: bytes per sample and a code
 * (format * 100 + bits) that convert() knows; 0 if unsupported. */
static int layout(TIFF *t, uint32_t *w, uint32_t *h, int *code) {
  uint16_t spp = 1, bits = 1, fmt = SAMPLEFORMAT_UINT;
  if (!TIFFGetField(t, TIFFTAG_IMAGEWIDTH, w) ||
      !TIFFGetField(t, TIFFTAG_IMAGELENGTH, h) || !*w || !*h)
    return -1;
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bits);
  TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &fmt);
  *code = fmt * 100 + bits;
  static const int ok[] = {108, 116, 132, 208, 216, 232, 332, 364};
  for (size_t i = 0; spp == 1 && i < sizeof ok / sizeof ok[0]; i++)
    if (ok[i] == *code) return 0;
  return -2;
}

static float convert(const unsigned char *p, int code) {
  union {
    uint8_t u8;
    int8_t i8;
    uint16_t u16;
    int16_t i16;
    uint32_t u32;
    int32_t i32;
    float f;
    double d;
  } v;
  memcpy(&v, p, (size_t)(code % 100) / 8);
  switch (code) {
  case 108: return v.u8;
  case 208: return v.i8;
  case 116: return v.u16;
  case 216: return v.i16;
  case 132: return (float)v.u32;
  case 232: return (float)v.i32;
  case 332: return v.f;
  default:
    return v.d > FLT_MAX ? INFINITY : v.d < -FLT_MAX ? -INFINITY : (float)v.d;
  }
}

/* Decodes the current directory (w × h, sample code) into dst. */
static int read_page(TIFF *t, const src *s, size_t k, uint32_t w, uint32_t h,
                     int code, float *dst, uint64_t *stored, char *err,
                     size_t err_len) {
  int tiled = TIFFIsTiled(t);
  uint32_t tw = w, th = 1;
  if (tiled) {
    TIFFGetField(t, TIFFTAG_TILEWIDTH, &tw);
    TIFFGetField(t, TIFFTAG_TILELENGTH, &th);
  } else {
    TIFFGetFieldDefaulted(t, TIFFTAG_ROWSPERSTRIP, &th);
    if (th > h) th = h;
  }
  size_t bps = (size_t)(code % 100) / 8;
  tmsize_t cap = tiled ? TIFFTileSize(t) : TIFFStripSize(t);
  if (!tw || !th || cap <= 0 || (uint64_t)cap < (uint64_t)tw * th * bps)
    return fail(s, QS_EFORMAT, err, err_len,
                "page %zu has an inconsistent strip or tile layout", k);
  uint32_t n = tiled ? TIFFNumberOfTiles(t) : TIFFNumberOfStrips(t);
  for (uint32_t i = 0; i < n; i++) *stored += TIFFGetStrileByteCount(t, i);
  unsigned char *buf = malloc((size_t)cap);
  if (!buf) return fail(s, QS_ENOMEM, err, err_len, "out of memory");
  int rc = QS_OK;
  for (uint32_t y = 0; y < h && !rc; y += th)
    for (uint32_t x = 0; x < w && !rc; x += tw) {
      uint32_t rows = h - y < th ? h - y : th, cols = w - x < tw ? w - x : tw;
      tmsize_t want = tiled ? cap : (tmsize_t)((uint64_t)rows * w * bps);
      tmsize_t got =
          tiled ? TIFFReadTile(t, buf, x, y, 0, 0)
                : TIFFReadEncodedStrip(t, TIFFComputeStrip(t, y, 0), buf, want);
      if (got < want) {
        rc = fail(s, QS_EFORMAT, err, err_len,
                  "cannot decode page %zu at row %u", k, (unsigned)y);
        break;
      }
      for (uint32_t r = 0; r < rows; r++)
        for (uint32_t c = 0; c < cols; c++)
          dst[(size_t)(y + r) * w + x + c] =
              convert(buf + ((size_t)r * tw + c) * bps, code);
    }
  free(buf);
  return rc;
}

int pages_count(const char *path, size_t *pages, size_t *rows, size_t *cols,
                char *err, size_t err_len) {
  src s = {.path = path};
  *pages = *rows = *cols = 0;
  TIFF *t = open_tiff(&s, err, err_len);
  if (!t) return QS_EIO;
  uint32_t w0 = 0, h0 = 0, w, h;
  int code, rc = QS_OK;
  size_t n = 0;
  do {
    if (layout(t, &w, &h, &code)) {
      rc = fail(&s, QS_EFORMAT, err, err_len,
                "page %zu: no size, or not one sample of 8/16/32-bit "
                "integers or 32/64-bit floats",
                n);
      break;
    }
    if (n == 0) w0 = w, h0 = h;
    if (w != w0 || h != h0) {
      rc = fail(&s, QS_EFORMAT, err, err_len,
                "pages of different sizes: page 0 is %ux%u, page %zu is "
                "%ux%u (rows x cols)",
                (unsigned)h0, (unsigned)w0, n, (unsigned)h, (unsigned)w);
      break;
    }
    n++;
  } while (TIFFReadDirectory(t));
  if (!rc && s.msg[0])
    rc = fail(&s, QS_EFORMAT, err, err_len, "malformed directory chain");
  TIFFClose(t);
  if (rc) return rc;
  *pages = n;
  *rows = h0;
  *cols = w0;
  return QS_OK;
}

int pages_read(const char *path, size_t first, size_t count, image *img,
               uint64_t *bytes_read, char *err, size_t err_len) {
  src s = {.path = path};
  image empty = {0};
  *img = empty;
  uint64_t stored = 0;
  if (count == 0 || first > UINT32_MAX - count)
    return fail(&s, QS_EINVAL, err, err_len, "no pages to read");
  TIFF *t = open_tiff(&s, err, err_len);
  if (!t) return QS_EIO;
  int rc = QS_OK;
  if (!TIFFSetDirectory(t, (tdir_t)first))
    rc = fail(&s, QS_EFORMAT, err, err_len, "has no page %zu", first);
  size_t plane = 0;
  for (size_t k = 0; !rc && k < count; k++) {
    uint32_t w, h;
    int code;
    if (k > 0 && !TIFFReadDirectory(t)) {
      rc = fail(&s, QS_EFORMAT, err, err_len, "has no page %zu", first + k);
      break;
    }
    if (layout(t, &w, &h, &code)) {
      rc = fail(&s, QS_EFORMAT, err, err_len, "page %zu is unsupported",
                first + k);
      break;
    }
    if (k == 0) {
      rc = image_alloc(img, count, h, w);
      if (rc) {
        rc = fail(&s, rc, err, err_len, "%zu pages of %ux%u: %s", count,
                  (unsigned)h, (unsigned)w, status_message(rc));
        break;
      }
      plane = (size_t)w * h;
    } else if (w != img->cols || h != img->rows) {
      rc = fail(&s, QS_EFORMAT, err, err_len, "page %zu differs in size",
                first + k);
      break;
    }
    rc = read_page(t, &s, first + k, w, h, code, img->data + k * plane,
                   &stored, err, err_len);
  }
  TIFFClose(t);
  if (rc) image_free(img);
  if (bytes_read) *bytes_read = rc ? 0 : stored;
  return rc;
}
