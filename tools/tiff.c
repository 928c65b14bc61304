/* tiff.c — TIFF stacks in (libtiff) and out (ImageJ's layout, written
 * here: libtiff interleaves every page's directory with its pixel data,
 * while ImageJ reads a stack described as "images=N" as N pages of
 * contiguous data from the first page's offset and ignores the rest). */
#include "tiff.h"

#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <signal.h>
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
/* "<name>: <lead><what>[ (libtiff: <lib>)]" into err; returns status. */
static int fail_v(char *err, size_t err_len, int status, const char *name,
                  const char *lead, const char *lib, const char *fmt,
                  va_list ap) {
  char what[512];
  vsnprintf(what, sizeof what, fmt, ap);
  if (lib && lib[0])
    snprintf(err, err_len, "%s: %s%s (libtiff: %s)", name, lead, what, lib);
  else
    snprintf(err, err_len, "%s: %s%s", name, lead, what);
  return status;
}

static int read_fail(const reader *r, int status, char *err, size_t err_len,
                     const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fail_v(err, err_len, status, r->name, "", r->msg, fmt, ap);
  va_end(ap);
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

/* ------------------------------------------------------------ metadata */

void tiff_meta_plain(tiff_meta *m, size_t pages) {
  memset(m, 0, sizeof *m);
  m->channels = m->slices = 1;
  m->frames = pages ? pages : 1;
  memcpy(m->order, "CZT", 4);
}

void tiff_meta_scaled(tiff_meta *m, const tiff_info *in, size_t n,
                      size_t rows, size_t cols) {
  for (size_t k = 0; k < n && rows && cols; k++) {
    const tiff_meta *im = &in[k].meta;
    if (!(im->pixel_x > 0)) continue;
    m->pixel_x = im->pixel_x * (double)in[k].cols / (double)cols;
    m->pixel_y = im->pixel_y * (double)in[k].rows / (double)rows;
    snprintf(m->unit, sizeof m->unit, "%s", im->unit);
    return;
  }
}

size_t tiff_meta_page(const tiff_meta *m, size_t c, size_t z, size_t t) {
  size_t pg = 0, stride = 1;
  for (int i = 0; i < 3; i++) {
    char a = m->order[i];
    size_t at = a == 'C' ? c : a == 'Z' ? z : t;
    size_t n = a == 'C' ? m->channels : a == 'Z' ? m->slices : m->frames;
    pg += at * stride;
    stride *= n;
  }
  return pg;
}

/* The text after "\n<key>=" (or "<key>=" at the start) of an ImageJ
 * description, up to the end of its line, into buf; 0 when absent. */
static int ij_value(const char *desc, const char *key, char *buf,
                    size_t len) {
  size_t k = strlen(key);
  for (const char *p = desc; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : p)
    if (!strncmp(p, key, k) && p[k] == '=') {
      size_t n = strcspn(p + k + 1, "\r\n");
      if (n >= len) n = len - 1;
      memcpy(buf, p + k + 1, n);
      buf[n] = 0;
      return 1;
    }
  return 0;
}

/* The value of XML attribute `name` within [el, end), into buf. */
static int xml_attr(const char *el, const char *end, const char *name,
                    char *buf, size_t len) {
  size_t k = strlen(name);
  for (const char *p = el; p && p < end; p++) {
    p = strstr(p, name);
    if (!p || p >= end) return 0;
    if ((p[-1] == ' ' || p[-1] == '\n' || p[-1] == '\t' || p[-1] == '\r') &&
        p[k] == '=' && (p[k + 1] == '"' || p[k + 1] == '\'')) {
      const char *v = p + k + 2, *q = strchr(v, p[k + 1]);
      if (!q || q > end) return 0;
      size_t n = (size_t)(q - v) < len ? (size_t)(q - v) : len - 1;
      memcpy(buf, v, n);
      buf[n] = 0;
      return 1;
    }
  }
  return 0;
}

/* A unit's one spelling: every way of writing micrometres becomes
 * "micron" (ImageJ's); other units are kept as written (printable ASCII,
 * at most 15 characters), anything else is no unit. */
static void unit_norm(const char *in, char *out, size_t len) {
  static const char *const micron[] = {
      "micron", "microns", "um", "\xc2\xb5m", "\xb5m", "\\u00B5m",
      "\\u00b5m", "\xce\xbcm", "micrometer", "micrometre"};
  out[0] = 0;
  for (size_t i = 0; i < sizeof micron / sizeof micron[0]; i++)
    if (!strcmp(in, micron[i])) {
      snprintf(out, len, "micron");
      return;
    }
  size_t n = strlen(in);
  if (!n || n >= len || n >= 16) return;
  for (size_t i = 0; i < n; i++)
    if (in[i] < 0x21 || in[i] > 0x7e) return;
  memcpy(out, in, n + 1);
}

/* A positive size in [1, 2^40], or 0. */
static size_t count_of(const char *text) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(text, &end, 10);
  return end != text && !*end && !errno && v >= 1 && v <= (1ull << 40)
             ? (size_t)v
             : 0;
}

/* Axes, pixel size and provenance from a first page's description and
 * resolution (xr, yr pixels per unit, 0 when absent; ResolutionUnit ru)
 * into *m (see tiff_meta); pages is the stack's page count. QS_EFORMAT
 * with what is wrong in why when the axes do not fit. */
static int meta_parse(const char *desc, float xr, float yr, uint16_t ru,
                      size_t pages, tiff_meta *m, char *why, size_t why_len) {
  tiff_meta_plain(m, pages);
  char v[64], unit[64] = "";
  size_t c = 1, z = 1, f = 1;
  int have_z = 0, have_t = 0, axes = 0;
  const char *kind = "";
  if (!strncmp(desc, "ImageJ=", 7)) {
    kind = "ImageJ";
    if (ij_value(desc, "channels", v, sizeof v)) c = count_of(v), axes = 1;
    if (ij_value(desc, "slices", v, sizeof v)) z = count_of(v), have_z = 1;
    if (ij_value(desc, "frames", v, sizeof v)) f = count_of(v), have_t = 1;
    if (ij_value(desc, "unit", v, sizeof v)) snprintf(unit, sizeof unit, "%s", v);
    axes |= have_z || have_t;
  } else if (strstr(desc, "<OME") && strstr(desc, "<Pixels")) {
    kind = "OME-TIFF";
    const char *el = strstr(desc, "<Pixels"), *end = strchr(el, '>');
    if (!end) end = el + strlen(el);
    char order[16] = "XYCZT";
    xml_attr(el, end, "DimensionOrder", order, sizeof order);
    if (strlen(order) != 5 || strncmp(order, "XY", 2) ||
        !strchr(order + 2, 'C') || !strchr(order + 2, 'Z') ||
        !strchr(order + 2, 'T'))
      return snprintf(why, why_len,
                      "OME-XML DimensionOrder \"%s\" is not XY followed by "
                      "C, Z and T",
                      order),
             QS_EFORMAT;
    memcpy(m->order, order + 2, 4);
    c = xml_attr(el, end, "SizeC", v, sizeof v) ? count_of(v) : 1;
    z = xml_attr(el, end, "SizeZ", v, sizeof v) ? count_of(v) : 1;
    f = xml_attr(el, end, "SizeT", v, sizeof v) ? count_of(v) : 1;
    have_z = have_t = axes = 1;
    if (xml_attr(el, end, "PhysicalSizeX", v, sizeof v)) {
      m->pixel_x = strtod(v, NULL);
      m->pixel_y = xml_attr(el, end, "PhysicalSizeY", v, sizeof v)
                       ? strtod(v, NULL)
                       : m->pixel_x;
      if (!xml_attr(el, end, "PhysicalSizeXUnit", unit, sizeof unit))
        snprintf(unit, sizeof unit, "um");
      if (!(m->pixel_x > 0) || !(m->pixel_y > 0) ||
          !isfinite(m->pixel_x) || !isfinite(m->pixel_y))
        m->pixel_x = m->pixel_y = 0;
    }
  }
  if (axes) {
    /* ImageJ may leave out the axis that holds the rest; products are
     * formed only below the page count, so none can wrap around */
    int fit = c && z && f && z <= pages / c && f <= pages / (c * z);
    if (!(fit && c * z * f == pages) && c && z && f) {
      if (!have_t && z <= pages / c && pages % (c * z) == 0)
        f = pages / (c * z);
      else if (!have_z && f <= pages / c && pages % (c * f) == 0)
        z = pages / (c * f);
      fit = z <= pages / c && f <= pages / (c * z);
    }
    if (!c || !z || !f || !fit || c * z * f != pages)
      return snprintf(why, why_len,
                      "its %s axes (channels=%zu, slices=%zu, frames=%zu) "
                      "do not make its %zu pages",
                      kind, c, z, f, pages),
             QS_EFORMAT;
    m->channels = c;
    m->slices = z;
    m->frames = f;
  }
  /* Resolution tags: pixels per unit; ImageJ's unit= names the unit when
   * ResolutionUnit is none, else centimetres or inches. */
  int have_res = xr > 0 && isfinite(xr);
  if (!(yr > 0) || !isfinite(yr)) yr = xr;
  if (!m->pixel_x && have_res) {
    if (unit[0] && ru == RESUNIT_NONE) {
      m->pixel_x = 1.0 / xr, m->pixel_y = 1.0 / yr;
    } else if (ru == RESUNIT_CENTIMETER) {
      m->pixel_x = 1e4 / xr, m->pixel_y = 1e4 / yr;
      snprintf(unit, sizeof unit, "micron");
    } else if (ru == RESUNIT_INCH && !unit[0] && xr != 72 && xr != 1) {
      m->pixel_x = 25400.0 / xr, m->pixel_y = 25400.0 / yr;
      snprintf(unit, sizeof unit, "micron");
    }
  }
  if (m->pixel_x) {
    unit_norm(unit, m->unit, sizeof m->unit);
    if (!m->unit[0]) m->pixel_x = m->pixel_y = 0;
  }
  /* what made the file, when this tool did */
  static const char prov_key[] = "\nquicksilver=";
  const char *p = strstr(desc, prov_key);
  if (p) {
    p += sizeof prov_key - 1;
    size_t n = strcspn(p, "\r\n");
    if (n >= sizeof m->provenance) n = sizeof m->provenance - 1;
    memcpy(m->provenance, p, n);
    m->provenance[n] = 0;
  }
  return QS_OK;
}

/* meta_parse of the current directory of t. */
static int meta_read(TIFF *t, reader *r, size_t pages, tiff_meta *m,
                     char *err, size_t err_len) {
  const char *desc = NULL;
  if (!TIFFGetField(t, TIFFTAG_IMAGEDESCRIPTION, &desc) || !desc) desc = "";
  float xr = 0, yr = 0;
  uint16_t ru = RESUNIT_INCH;
  if (!TIFFGetField(t, TIFFTAG_XRESOLUTION, &xr)) xr = 0;
  if (!TIFFGetField(t, TIFFTAG_YRESOLUTION, &yr)) yr = 0;
  TIFFGetFieldDefaulted(t, TIFFTAG_RESOLUTIONUNIT, &ru);
  char why[256];
  if (meta_parse(desc, xr, yr, ru, pages, m, why, sizeof why))
    return read_fail(r, QS_EFORMAT, err, err_len, "%s", why);
  return QS_OK;
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

const char *tiff_size_text(uint64_t b, char *buf, size_t len) {
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
                   tiff_size_text(per, a, sizeof a), count,
                   tiff_size_text(per * count, b, sizeof b),
                   tiff_size_text(budget, c, sizeof c));
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
                           unsigned long pages, qs_image *img, char *err,
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
    r->info->pages = pages;
    r->info->rows = first->h;
    r->info->cols = first->w;
    TIFFSetDirectory(t, 0);
    return meta_read(t, r, pages, &r->info->meta, err, err_len);
  }
  int rc = range_check(r, pages, err, err_len);
  if (!rc) rc = budget_check(r, first->w, first->h, r->count, err, err_len);
  if (rc) return rc;
  rc = qs_image_alloc(img, r->count, first->h, first->w);
  if (rc)
    return read_fail(r, rc, err, err_len, "%zu pages of %ux%u pixels: %s",
                     r->count, (unsigned)first->h, (unsigned)first->w,
                     qs_status_message(rc));
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
  if (rc) qs_image_free(img);
  return rc;
}

/* Page k (p) must have page 0's size (first): QS_EFORMAT naming both. */
static int same_size(reader *r, const page *first, const page *p, unsigned k,
                     char *err, size_t err_len) {
  if (p->w == first->w && p->h == first->h) return QS_OK;
  return read_fail(r, QS_EFORMAT, err, err_len,
                   "pages of different sizes: page 0 is %ux%u, page %u is "
                   "%ux%u (rows x cols)",
                   (unsigned)first->h, (unsigned)first->w, k, (unsigned)p->h,
                   (unsigned)p->w);
}

/* Test seam: the process stops itself after a read's first page, so that
 * a test can change the file while it is being read. */
static void read_seam(void) {
  const char *stop = getenv("QUICKSILVER_TEST_READ_STOP");
  if (stop && !strcmp(stop, "1")) raise(SIGSTOP);
}

static int read_all(TIFF *t, reader *r, qs_image *img, char *err,
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
    } else if ((rc = same_size(r, &first, &p, (unsigned)d, err, err_len))) {
      return rc;
    }
  }
  if (r->info) {
    if (r->msg[0])
      return read_fail(r, QS_EFORMAT, err, err_len, "malformed TIFF");
    r->info->pages = n;
    r->info->rows = first.h;
    r->info->cols = first.w;
    if (!TIFFSetDirectory(t, 0))
      return read_fail(r, QS_EFORMAT, err, err_len, "cannot read page 0");
    return meta_read(t, r, n, &r->info->meta, err, err_len);
  }
  int rc = range_check(r, n, err, err_len);
  if (!rc) rc = budget_check(r, first.w, first.h, r->count, err, err_len);
  if (rc) return rc;
  rc = qs_image_alloc(img, r->count, first.h, first.w);
  if (rc)
    return read_fail(r, rc, err, err_len, "%zu pages of %ux%u pixels: %s",
                     r->count, (unsigned)first.h, (unsigned)first.w,
                     qs_status_message(rc));
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
    if (!rc && d == r->first) read_seam();
  }
  if (!rc && r->msg[0])
    rc = read_fail(r, QS_EFORMAT, err, err_len, "malformed TIFF");
  if (rc) qs_image_free(img);
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

/* Reads the memory source r (its pages, or its shape when r->info). */
static int read_mem(reader *r, qs_image *img, char *err, size_t err_len) {
  if (r->size < 8 || !is_tiff_magic(r->mem))
    return read_fail(r, QS_EFORMAT, err, err_len, "not a TIFF file");
  TIFFOpenOptions *o = open_options(r);
  if (!o) return read_fail(r, QS_ENOMEM, err, err_len, "out of memory");
  TIFF *t = TIFFClientOpenExt(r->name, "rm", r, mem_read, mem_write, mem_seek,
                              mem_close, mem_size, mem_map, mem_unmap, o);
  TIFFOpenOptionsFree(o);
  if (!t) return read_fail(r, QS_EFORMAT, err, err_len, "cannot open TIFF");
  int rc = read_all(t, r, img, err, err_len);
  TIFFClose(t);
  return rc;
}

int tiff_read_mem(const void *data, size_t size, const char *name,
                  qs_image *img, char *err, size_t err_len) {
  qs_image empty = {0};
  *img = empty;
  reader r = {.name = name, .size = size, .mem = data, .count = SIZE_MAX};
  return read_mem(&r, img, err, err_len);
}

int tiff_info_mem(const void *data, size_t size, const char *name,
                  tiff_info *info, char *err, size_t err_len) {
  memset(info, 0, sizeof *info);
  reader r = {.name = name, .size = size, .mem = data, .count = SIZE_MAX,
              .info = info};
  qs_image unused = {0};
  return read_mem(&r, &unused, err, err_len);
}

/* Reads pages [r->first, r->first + r->count) of the file, or only its
 * shape when r->info is set. */
/* Opens r->name as a TIFF into *t (r->size set): a regular file only,
 * read with read(), never mapped. */
static int open_file(reader *r, TIFF **t, char *err, size_t err_len) {
  *t = NULL;
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
  /* "m": libtiff reads with read() instead of mapping the file: a mapped
   * file's pages count in the process's memory beside the image they are
   * decoded into (twice the input at the peak), and a file another
   * program truncates while it is mapped ends the process with SIGBUS
   * where a read only fails */
  *t = TIFFFdOpenExt(fd, r->name, "rm", o);
  TIFFOpenOptionsFree(o);
  if (!*t) {
    close(fd);
    return read_fail(r, QS_EFORMAT, err, err_len, "cannot open TIFF");
  }
  return QS_OK;
}

static int read_file(reader *r, qs_image *img, char *err, size_t err_len) {
  TIFF *t;
  int rc = open_file(r, &t, err, err_len);
  if (rc) return rc;
  rc = read_all(t, r, img, err, err_len);
  TIFFClose(t); /* closes fd */
  return rc;
}

/* ------------------------------------------------------ sequential reads */

struct tiff_seq {
  reader r;    /* libtiff's handlers keep its address */
  TIFF *t;
  page first;  /* page 0's */
  size_t next; /* the page the next read starts at */
  int fresh;   /* t is on page `next` already (read it, do not advance) */
};

void tiff_seq_close(tiff_seq *s) {
  if (!s) return;
  if (s->t) TIFFClose(s->t);
  free(s);
}

int tiff_seq_open(const char *path, size_t first, tiff_seq **out, char *err,
                  size_t err_len) {
  *out = NULL;
  tiff_seq *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, err_len, "%s: out of memory", path);
    return QS_ENOMEM;
  }
  s->r.name = path;
  s->r.count = SIZE_MAX;
  int rc = open_file(&s->r, &s->t, err, err_len);
  if (!rc && !TIFFSetDirectory(s->t, 0))
    rc = read_fail(&s->r, QS_EFORMAT, err, err_len, "cannot read page 0");
  if (!rc) rc = page_probe(s->t, &s->r, 0, &s->first, err, err_len);
  /* an ImageJ stack of one directory keeps its pages as one block, which
   * tiff_read_pages reads without walking pages */
  if (!rc && imagej_images(s->t) > 1 && TIFFNumberOfDirectories(s->t) == 1)
    rc = QS_EUNAVAIL;
  if (!rc && (first > (size_t)UINT32_MAX - 1 ||
              !TIFFSetDirectory(s->t, (tdir_t)first)))
    rc = read_fail(&s->r, QS_EINVAL, err, err_len, "no page %zu", first);
  if (rc) {
    tiff_seq_close(s);
    return rc;
  }
  s->next = first;
  s->fresh = 1;
  *out = s;
  return QS_OK;
}

int tiff_seq_skip(tiff_seq *s, size_t k) {
  if (k == 0) return QS_OK;
  if (!s->fresh && !TIFFReadDirectory(s->t)) return QS_EFORMAT;
  s->fresh = 1; /* on page next */
  for (size_t i = 0; i < k; i++)
    if (!TIFFReadDirectory(s->t)) return QS_EFORMAT;
  s->next += k;
  return QS_OK;
}

int tiff_seq_read(tiff_seq *s, size_t n, qs_image *img, char *err,
                  size_t err_len) {
  qs_image empty = {0};
  *img = empty;
  reader *r = &s->r;
  r->first = s->next; /* for the budget's message */
  int rc = n ? budget_check(r, s->first.w, s->first.h, n, err, err_len)
             : read_fail(r, QS_EINVAL, err, err_len, "no pages asked for");
  if (!rc && (rc = qs_image_alloc(img, n, s->first.h, s->first.w)))
    return read_fail(r, rc, err, err_len, "%zu pages of %ux%u pixels: %s", n,
                     (unsigned)s->first.h, (unsigned)s->first.w,
                     qs_status_message(rc));
  size_t plane = (size_t)s->first.w * s->first.h;
  for (size_t j = 0; !rc && j < n; j++) {
    unsigned k = (unsigned)s->next;
    page p;
    if (!s->fresh && !TIFFReadDirectory(s->t)) {
      rc = read_fail(r, QS_EFORMAT, err, err_len, "cannot read page %u", k);
      break;
    }
    s->fresh = 0;
    rc = page_probe(s->t, r, k, &p, err, err_len);
    if (!rc) rc = same_size(r, &s->first, &p, k, err, err_len);
    if (!rc) rc = page_read(s->t, r, k, &p, img->data + j * plane, err,
                            err_len);
    if (!rc) s->next++;
    if (!rc && j == 0) read_seam();
  }
  if (!rc && r->msg[0])
    rc = read_fail(r, QS_EFORMAT, err, err_len, "malformed TIFF");
  if (rc) qs_image_free(img);
  return rc;
}

int tiff_read(const char *path, qs_image *img, char *err, size_t err_len) {
  return tiff_read_pages(path, 0, SIZE_MAX, img, err, err_len);
}

int tiff_read_pages(const char *path, size_t first, size_t count,
                    qs_image *img, char *err, size_t err_len) {
  qs_image empty = {0};
  *img = empty;
  reader r = {.name = path, .first = first, .count = count};
  if (count == 0)
    return read_fail(&r, QS_EINVAL, err, err_len, "no pages asked for");
  return read_file(&r, img, err, err_len);
}

int tiff_info_of(const char *path, tiff_info *info, char *err,
                 size_t err_len) {
  memset(info, 0, sizeof *info);
  reader r = {.name = path, .count = SIZE_MAX, .info = info};
  qs_image unused = {0};
  return read_file(&r, &unused, err, err_len);
}

/* ------------------------------------------------------------- writing */

enum { T_ASCII = 2, T_SHORT = 3, T_LONG = 4, T_RATIONAL = 5, T_LONG8 = 16 };

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

/* Where a described first page keeps its resolution: XResolution and
 * YResolution as rationals (numerator, denominator) in the host's order,
 * inline in a BigTIFF's 8-byte field, else at res_off and res_off + 8. */
typedef struct res_tags {
  uint32_t x[2], y[2];
  uint64_t off;
} res_tags;

/* A rational's entry value: its offset (classic) or its 8 bytes (BigTIFF). */
static uint64_t rational_value(int big, const uint32_t v[2], uint64_t off) {
  uint64_t inline_v;
  memcpy(&inline_v, v, 8);
  return big ? inline_v : off;
}

/* The directory of one page; returns its size in bytes. A described page
 * (desc_len > 0) carries the description and the resolution tags res. */
static size_t ifd_build(unsigned char *buf, int big, size_t rows, size_t cols,
                        uint64_t data_off, uint64_t desc_off, size_t desc_len,
                        const res_tags *res, uint64_t next) {
  uint64_t page_bytes = (uint64_t)rows * cols * 4;
  uint16_t off_type = big ? T_LONG8 : T_LONG;
  uint64_t n = desc_len ? 15 : 11;
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
  p = ifd_entry(p, big, 256, T_LONG, 1, cols);
  p = ifd_entry(p, big, 257, T_LONG, 1, rows);
  p = ifd_entry(p, big, 258, T_SHORT, 1, 32); /* BitsPerSample */
  p = ifd_entry(p, big, 259, T_SHORT, 1, 1);  /* no compression */
  p = ifd_entry(p, big, 262, T_SHORT, 1, 1);  /* black is zero */
  if (desc_len) p = ifd_entry(p, big, 270, T_ASCII, desc_len, desc_off);
  p = ifd_entry(p, big, 273, off_type, 1, data_off);
  p = ifd_entry(p, big, 277, T_SHORT, 1, 1); /* SamplesPerPixel */
  p = ifd_entry(p, big, 278, T_LONG, 1, rows);
  p = ifd_entry(p, big, 279, off_type, 1, page_bytes);
  if (desc_len) {
    p = ifd_entry(p, big, 282, T_RATIONAL, 1,
                  rational_value(big, res->x, res->off));
    p = ifd_entry(p, big, 283, T_RATIONAL, 1,
                  rational_value(big, res->y, res->off + 8));
    p = ifd_entry(p, big, 296, T_SHORT, 1, 1); /* ResolutionUnit: none */
  }
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

/* ------------------------------------------------ the fixed stack layout
 *
 * Where everything of a stack lies follows from (pages, rows, cols, flags)
 * alone, so that any process can write any page without asking anyone:
 *   the header (8 bytes; BigTIFF 16);
 *   DESC_ROOM bytes for the ImageJ description (written at commit, once
 *   the range of the values is known), its last 16 the two resolution
 *   rationals of a classic TIFF;
 *   the pixel data of every page, contiguous from data_off (8-aligned), as
 *   ImageJ reads a stack;
 *   one directory slot of `slot` bytes per page from ifd_base (8-aligned).
 *   Directory k lies at ifd_base + k * slot + ifd_shift: the shift puts
 *   its next-directory field on a 4-byte boundary (BigTIFF: 8), so that
 *   linking a page appended later (tiff_append) is one aligned write. */
#define DESC_ROOM 2048
#define DESC_MAX (DESC_ROOM - 16)

static uint64_t round8(uint64_t v) { return (v + 7) & ~(uint64_t)7; }

/* Bytes of a directory of n entries, its next field included. */
static uint64_t ifd_bytes(int big, unsigned n) {
  return big ? 8 + 20 * (uint64_t)n + 8 : 2 + 12 * (uint64_t)n + 4;
}

/* Offset from an 8-aligned address at which a directory of n entries has
 * its next field aligned (classic: 2 + 2 + 12n is a multiple of 4;
 * BigTIFF: 8 + 20n is one of 8 when n is even, else 4 more). */
static unsigned ifd_shift(int big, unsigned n) {
  return big ? (n % 2 ? 4u : 0u) : 2u;
}

/* Entries of directory k: the first page's carry the description and
 * the resolution. */
static unsigned ifd_entries(size_t k) { return k == 0 ? 15u : 11u; }

static uint64_t ifd_at(const tiff_stack *s, size_t k) {
  return s->ifd_base + k * s->slot + ifd_shift(s->big, ifd_entries(k));
}

static uint64_t page_at(const tiff_stack *s, size_t k) {
  return s->data_off + k * s->page_bytes;
}

/* Fills the layout fields of s; QS_EINVAL for an empty or oversized
 * stack. Classic TIFF unless asked for BigTIFF or the file would pass
 * 4 GiB. */
static int layout(tiff_stack *s, size_t pages, size_t rows, size_t cols,
                  unsigned flags) {
  size_t n;
  if (!pages || !rows || !cols || rows > UINT32_MAX || cols > UINT32_MAX ||
      qs_image_pixels(pages, rows, cols, &n) || n > ((size_t)1 << 58))
    return QS_EINVAL;
  s->pages = pages;
  s->rows = rows;
  s->cols = cols;
  /* an appendable stack's description counts no pages */
  s->described = !(flags & TIFF_APPENDABLE);
  s->page_bytes = (uint64_t)rows * cols * 4;
  for (int big = (flags & TIFF_BIG) != 0; big < 2; big++) {
    s->big = big;
    s->head = big ? 16 : 8;
    s->data_off = round8(s->head + DESC_ROOM);
    s->ifd_base = round8(s->data_off + pages * s->page_bytes);
    s->slot = round8(ifd_bytes(big, 15) + 4);
    s->size = s->ifd_base + pages * s->slot;
    if (big || s->size <= UINT32_MAX) break;
  }
  return QS_OK;
}

/* "II" or "MM": files are written in the host's own byte order. */
static uint16_t host_order(void) {
  const uint16_t probe = 1;
  unsigned char b;
  memcpy(&b, &probe, 1);
  return b ? 0x4949 : 0x4d4d;
}

static int pwrite_all(int fd, const void *buf, size_t n, uint64_t off) {
  for (size_t done = 0; done < n;) {
    ssize_t k = pwrite(fd, (const char *)buf + done, n - done,
                       (off_t)(off + done));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    done += (size_t)k;
  }
  return 0;
}

static int pread_all(int fd, void *buf, size_t n, uint64_t off) {
  for (size_t done = 0; done < n;) {
    ssize_t k = pread(fd, (char *)buf + done, n - done, (off_t)(off + done));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      if (k == 0) errno = EIO; /* shorter than it claims */
      return -1;
    }
    done += (size_t)k;
  }
  return 0;
}

/* The name messages give: the destination for the creator, the temporary
 * for the others (they are not told the destination). */
static const char *stack_name(const tiff_stack *s) {
  return s->owner ? s->out.path : s->tmp ? s->tmp : "(closed stack)";
}

static void stack_clear(tiff_stack *s) {
  memset(s, 0, sizeof *s);
  s->fd = -1;
  s->lo = INFINITY;
  s->hi = -INFINITY;
  tiff_meta_plain(&s->meta, 1);
}

/* Directory k as the layout has it, into buf (DESC_ROOM at most; desc_len
 * is page 0's description length, 1 before commit: an empty string; res
 * its resolution). */
static size_t stack_ifd(const tiff_stack *s, size_t k, size_t desc_len,
                        const res_tags *res, unsigned char *buf) {
  size_t described = k == 0 ? desc_len : 0;
  uint64_t next = k + 1 < s->pages ? ifd_at(s, k + 1) : 0;
  return ifd_build(buf, s->big, s->rows, s->cols, page_at(s, k), s->head,
                   described, res, next);
}

/* A rational near v > 0 (v <= 0: 1/1): the denominator as large as keeps
 * the numerator in 32 bits, at most 10^6. */
static void rational_of(double v, uint32_t out[2]) {
  out[0] = out[1] = 1;
  if (!(v > 0) || !isfinite(v) || v >= 4e9) return;
  double den = 1e6;
  while (den > 1 && v * den >= 4e9) den /= 10;
  double num = floor(v * den + 0.5);
  if (num < 1) num = 1;
  out[0] = (uint32_t)num;
  out[1] = (uint32_t)den;
}

/* The resolution of a stack of meta m (pixels per unit; 1/1 unknown). */
static res_tags stack_res(const tiff_stack *s, const tiff_meta *m) {
  res_tags r = {.off = s->head + DESC_MAX};
  rational_of(m && m->pixel_x > 0 ? 1.0 / m->pixel_x : 0, r.x);
  rational_of(m && m->pixel_y > 0 ? 1.0 / m->pixel_y : 0, r.y);
  return r;
}

/* Header, empty description and every directory of a created stack;
 * the pixel data stays a hole until pages are written. */
static int stack_frame(tiff_stack *s) {
  if (ftruncate(s->fd, (off_t)s->size) != 0) return -1;
  unsigned char hdr[16] = {0};
  uint16_t order = host_order(), magic = s->big ? 43 : 42;
  uint64_t first = ifd_at(s, 0);
  memcpy(hdr, &order, 2);
  memcpy(hdr + 2, &magic, 2);
  if (s->big) {
    uint16_t eight = 8;
    memcpy(hdr + 4, &eight, 2);
    memcpy(hdr + 8, &first, 8);
  } else {
    uint32_t f32 = (uint32_t)first;
    memcpy(hdr + 4, &f32, 4);
  }
  if (pwrite_all(s->fd, hdr, (size_t)s->head, 0)) return -1;
  /* directories in batches of up to 4096 slots, one write each */
  size_t batch = s->pages < 4096 ? s->pages : 4096;
  unsigned char *buf = malloc((size_t)(batch * s->slot));
  if (!buf) return errno = ENOMEM, -1;
  int bad = 0;
  for (size_t k0 = 0; !bad && k0 < s->pages; k0 += batch) {
    size_t n = s->pages - k0 < batch ? s->pages - k0 : batch;
    memset(buf, 0, (size_t)(n * s->slot));
    res_tags res = stack_res(s, NULL);
    for (size_t k = k0; k < k0 + n; k++)
      stack_ifd(s, k, 1, &res,
                buf + (ifd_at(s, k) - s->ifd_base - k0 * s->slot));
    bad = pwrite_all(s->fd, buf, (size_t)(n * s->slot),
                     s->ifd_base + k0 * s->slot);
  }
  free(buf);
  return bad ? -1 : 0;
}

int tiff_stack_create(tiff_stack *s, const char *path, size_t pages,
                      size_t rows, size_t cols, unsigned flags, char *err,
                      size_t err_len) {
  stack_clear(s);
  if (layout(s, pages, rows, cols, flags)) {
    snprintf(err, err_len, "%s: nothing to write (empty or oversized stack)",
             path);
    return QS_EINVAL;
  }
  int rc = outfile_open(&s->out, path, err, err_len);
  if (rc) return rc;
  s->owner = 1;
  s->fd = fileno(s->out.f);
  if (stack_frame(s)) {
    snprintf(err, err_len, "%s: cannot write: %s", path, strerror(errno));
    tiff_stack_abort(s);
    return QS_EIO;
  }
  return QS_OK;
}

const char *tiff_stack_temp(const tiff_stack *s) {
  return s->owner ? s->out.tmp : s->tmp;
}

int tiff_stack_open(tiff_stack *s, const char *tmp, size_t pages, size_t rows,
                    size_t cols, unsigned flags, char *err, size_t err_len) {
  stack_clear(s);
  if (layout(s, pages, rows, cols, flags)) {
    snprintf(err, err_len, "%s: empty or oversized stack", tmp);
    return QS_EINVAL;
  }
  s->tmp = malloc(strlen(tmp) + 1);
  if (!s->tmp) {
    snprintf(err, err_len, "%s: out of memory", tmp);
    return QS_ENOMEM;
  }
  strcpy(s->tmp, tmp);
  s->fd = open(tmp, O_WRONLY | O_CLOEXEC);
  struct stat st;
  int rc = QS_OK;
  if (s->fd < 0 || fstat(s->fd, &st) != 0) {
    snprintf(err, err_len, "%s: cannot open: %s", tmp, strerror(errno));
    rc = QS_EIO;
  } else if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != s->size) {
    snprintf(err, err_len,
             "%s: not the stack of %zu pages of %zux%zu laid out by "
             "tiff_stack_create (%llu bytes, expected %llu)",
             tmp, pages, rows, cols, (unsigned long long)st.st_size,
             (unsigned long long)s->size);
    rc = QS_EFORMAT;
  }
  if (rc) tiff_stack_abort(s);
  return rc;
}

int tiff_stack_write(tiff_stack *s, size_t first, size_t count,
                     const float *pixels, char *err, size_t err_len) {
  if (s->fd < 0) {
    snprintf(err, err_len, "tiff_stack_write: the stack is not open");
    return QS_EINVAL;
  }
  if (!count || first > s->pages || count > s->pages - first || !pixels) {
    snprintf(err, err_len,
             "%s: pages [%zu, %zu) asked of a stack of %zu pages%s",
             stack_name(s), first, first + count, s->pages,
             pixels ? "" : " (no pixels)");
    return QS_EINVAL;
  }
  size_t n = count * s->rows * s->cols;
  float lo = s->lo, hi = s->hi;
  for (size_t i = 0; i < n; i++) {
    float v = pixels[i];
    if (v < lo) lo = v;
    if (v > hi) hi = v;
  }
  if (pwrite_all(s->fd, pixels, n * sizeof(float), page_at(s, first))) {
    snprintf(err, err_len, "%s: cannot write pages [%zu, %zu): %s",
             stack_name(s), first, first + count, strerror(errno));
    return QS_EIO;
  }
  s->lo = lo;
  s->hi = hi;
  return QS_OK;
}

void tiff_stack_range(const tiff_stack *s, float *lo, float *hi) {
  *lo = s->lo;
  *hi = s->hi;
}

int tiff_stack_close(tiff_stack *s, char *err, size_t err_len) {
  if (s->owner) {
    snprintf(err, err_len, "%s: the creator commits or aborts its stack",
             stack_name(s));
    return QS_EINVAL;
  }
  int rc = QS_OK;
  if (s->fd >= 0 && close(s->fd) != 0) {
    snprintf(err, err_len, "%s: cannot write: %s", stack_name(s),
             strerror(errno));
    rc = QS_EIO;
  }
  free(s->tmp);
  stack_clear(s);
  return rc;
}

/* The ImageJ description of s, its values within [lo, hi]: the page
 * count and axes (not for an appendable stack), the unit, the range, the
 * provenance (left out when it would not fit DESC_MAX). */
static void describe(const tiff_stack *s, float lo, float hi, char *desc,
                     size_t len) {
  const tiff_meta *m = &s->meta;
  if (!(lo <= hi)) lo = hi = 0; /* no value compares */
  size_t n = (size_t)snprintf(desc, len, "ImageJ=1.11a\n");
  if (s->described && m->channels > 1)
    n += (size_t)snprintf(desc + n, len - n,
                          "images=%zu\nchannels=%zu\nslices=%zu\nframes=%zu\n"
                          "hyperstack=true\nmode=grayscale\n",
                          s->pages, m->channels, m->slices, m->frames);
  else if (s->described && s->pages > 1)
    n += (size_t)snprintf(desc + n, len - n, "images=%zu\nslices=%zu\n",
                          s->pages, s->pages);
  if (m->pixel_x > 0 && m->unit[0])
    n += (size_t)snprintf(desc + n, len - n, "unit=%s\n", m->unit);
  if (s->described && s->pages > 1)
    n += (size_t)snprintf(desc + n, len - n, "loop=false\n");
  if (s->described)
    n += (size_t)snprintf(desc + n, len - n, "min=%.9g\nmax=%.9g\n",
                          (double)lo, (double)hi);
  if (m->provenance[0] && n + strlen(m->provenance) + 14 < len)
    snprintf(desc + n, len - n, "quicksilver=%s\n", m->provenance);
}

int tiff_stack_describe(tiff_stack *s, const tiff_meta *m, char *err,
                        size_t err_len) {
  if (!m) {
    tiff_meta_plain(&s->meta, s->pages);
    return QS_OK;
  }
  if (m->channels > 1 &&
      (strcmp(m->order, "CZT") ||
       m->channels * m->slices * m->frames != s->pages)) {
    snprintf(err, err_len,
             "%s: axes channels=%zu, slices=%zu, frames=%zu in order %.3s do "
             "not describe %zu pages in ImageJ's order (CZT)",
             stack_name(s), m->channels, m->slices, m->frames, m->order,
             s->pages);
    return QS_EINVAL;
  }
  s->meta = *m;
  for (char *c = s->meta.provenance; *c; c++)
    if (*c == '\n' || *c == '\r') *c = ' '; /* one line */
  return QS_OK;
}

int tiff_stack_commit(tiff_stack *s, float lo, float hi, char *err,
                      size_t err_len) {
  if (!s->owner) {
    snprintf(err, err_len, "%s: only the stack's creator commits it",
             stack_name(s));
    return QS_EINVAL;
  }
  char desc[DESC_MAX];
  describe(s, lo, hi, desc, sizeof desc);
  size_t desc_len = strlen(desc) + 1;
  unsigned char ifd[512];
  res_tags res = stack_res(s, &s->meta);
  size_t len = stack_ifd(s, 0, desc_len, &res, ifd);
  int bad = pwrite_all(s->fd, desc, desc_len, s->head) ||
            pwrite_all(s->fd, ifd, len, ifd_at(s, 0)) ||
            (!s->big && (pwrite_all(s->fd, res.x, 8, res.off) ||
                         pwrite_all(s->fd, res.y, 8, res.off + 8)));
  if (bad) {
    snprintf(err, err_len, "%s: cannot write: %s", stack_name(s),
             strerror(errno));
    tiff_stack_abort(s);
    return QS_EIO;
  }
  int rc = outfile_commit(&s->out, err, err_len);
  stack_clear(s);
  return rc;
}

void tiff_stack_abort(tiff_stack *s) {
  if (s->owner)
    outfile_abort(&s->out);
  else if (s->fd >= 0)
    close(s->fd);
  free(s->tmp);
  stack_clear(s);
}

int tiff_write(const char *path, const qs_image *img, char *err,
               size_t err_len) {
  return tiff_write_flags(path, img, 0, err, err_len);
}

int tiff_write_flags(const char *path, const qs_image *img, unsigned flags,
                     char *err, size_t err_len) {
  return tiff_write_meta(path, img, flags, NULL, err, err_len);
}

int tiff_write_meta(const char *path, const qs_image *img, unsigned flags,
                    const tiff_meta *m, char *err, size_t err_len) {
  size_t n;
  if (!img || !img->data ||
      qs_image_pixels(img->frames, img->rows, img->cols, &n) || n == 0 ||
      img->rows > UINT32_MAX || img->cols > UINT32_MAX) {
    snprintf(err, err_len, "%s: nothing to write (empty or oversized image)",
             path);
    return QS_EINVAL;
  }
  tiff_stack s;
  int rc = tiff_stack_create(&s, path, img->frames, img->rows, img->cols,
                             flags, err, err_len);
  if (!rc) rc = tiff_stack_describe(&s, m, err, err_len);
  if (!rc) rc = tiff_stack_write(&s, 0, img->frames, img->data, err, err_len);
  if (rc) {
    tiff_stack_abort(&s);
    return rc;
  }
  return tiff_stack_commit(&s, s.lo, s.hi, err, err_len);
}

/* ---------------------------------------------------- in-place append */

/* What appending needs of an existing stack, from its own directories. */
typedef struct chain {
  int big;
  uint64_t size;    /* bytes in the file */
  uint64_t link;    /* position of the last directory's next field */
  uint64_t *offs;   /* every page's pixel data offset */
  size_t pages, cap;
  char desc[DESC_ROOM + 1]; /* the first page's description, "" if none */
  float xr, yr;             /* its resolution, 0 if none */
} chain;

/* A RATIONAL entry's value (count 1) of the file open as fd; 0 if it
 * cannot be read. */
static float entry_rational(int fd, const unsigned char *e, int big,
                            uint64_t size) {
  uint32_t v[2] = {0, 1};
  if (big) {
    memcpy(v, e + 12, 8);
  } else {
    uint32_t at;
    memcpy(&at, e + 8, 4);
    if ((uint64_t)at + 8 > size || pread_all(fd, v, 8, at)) return 0;
  }
  return v[1] ? (float)((double)v[0] / v[1]) : 0;
}

/* Adds a page's data offset; -1 without memory. */
static int chain_push(chain *ch, uint64_t off) {
  if (ch->pages == ch->cap) {
    size_t cap = ch->cap ? 2 * ch->cap : 64;
    uint64_t *p = realloc(ch->offs, cap * sizeof *p);
    if (!p) return -1;
    ch->offs = p;
    ch->cap = cap;
  }
  ch->offs[ch->pages++] = off;
  return 0;
}

/* The value of a one-count SHORT, LONG or LONG8 entry, or UINT64_MAX. */
static uint64_t entry_value(const unsigned char *e, int big) {
  uint16_t type;
  uint64_t count = 0, v = 0;
  memcpy(&type, e + 2, 2);
  if (big)
    memcpy(&count, e + 4, 8);
  else {
    uint32_t c32;
    memcpy(&c32, e + 4, 4);
    count = c32;
  }
  const unsigned char *val = e + (big ? 12 : 8);
  if (count != 1) return UINT64_MAX;
  if (type == T_SHORT) {
    uint16_t x;
    memcpy(&x, val, 2);
    v = x;
  } else if (type == T_LONG) {
    uint32_t x;
    memcpy(&x, val, 4);
    v = x;
  } else if (type == T_LONG8 && big) {
    memcpy(&v, val, 8);
  } else {
    v = UINT64_MAX;
  }
  return v;
}

static int append_fail(char *err, size_t err_len, int status, const char *path,
                       const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int append_fail(char *err, size_t err_len, int status, const char *path,
                       const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fail_v(err, err_len, status, path, "cannot append in place: ", NULL, fmt,
         ap);
  va_end(ap);
  return status;
}

/* Walks the directories of the stack open as fd: every page must be one
 * uncompressed strip of rows x cols float32 samples in the host's byte
 * order (what this file writes); directories strictly ascending (so a
 * loop cannot hold us); no ImageJ page count in a description (appending
 * would contradict it); the last next field aligned. */
static int chain_walk(int fd, const char *path, size_t rows, size_t cols,
                      chain *ch, char *err, size_t err_len) {
  unsigned char hdr[16];
  uint16_t order, magic;
  if (pread_all(fd, hdr, 8, 0))
    return append_fail(err, err_len, QS_EFORMAT, path, "not a TIFF file");
  memcpy(&order, hdr, 2);
  memcpy(&magic, hdr + 2, 2);
  if (order != host_order() || (magic != 42 && magic != 43))
    return append_fail(err, err_len, QS_EFORMAT, path,
                       "not a TIFF in this machine's byte order");
  ch->big = magic == 43;
  uint64_t off = 0;
  if (ch->big) {
    if (pread_all(fd, hdr + 8, 8, 8))
      return append_fail(err, err_len, QS_EFORMAT, path, "truncated header");
    memcpy(&off, hdr + 8, 8);
  } else {
    uint32_t o32;
    memcpy(&o32, hdr + 4, 4);
    off = o32;
  }
  size_t esize = ch->big ? 20 : 12, nsize = ch->big ? 8 : 4;
  uint64_t prev = 0, want = (uint64_t)rows * cols * 4;
  unsigned char buf[8 + 64 * 20 + 8];
  while (off) {
    uint64_t n = 0;
    size_t csize = ch->big ? 8 : 2;
    if (off <= prev || off > ch->size || csize > ch->size - off ||
        pread_all(fd, buf, csize, off))
      return append_fail(err, err_len, QS_EFORMAT, path,
                         "directory %zu at %llu is out of order or outside "
                         "the file",
                         ch->pages, (unsigned long long)off);
    if (ch->big)
      memcpy(&n, buf, 8);
    else {
      uint16_t n16;
      memcpy(&n16, buf, 2);
      n = n16;
    }
    size_t body = (size_t)n * esize + nsize;
    if (n == 0 || n > 64 || body > ch->size - off - csize ||
        pread_all(fd, buf + csize, body, off + csize))
      return append_fail(err, err_len, QS_EFORMAT, path,
                         "directory %zu is malformed", ch->pages);
    uint64_t w = 0, h = 0, bits = 1, fmt = 1, comp = 1, spp = 1,
             strip = UINT64_MAX, bytes = 0;
    for (uint64_t i = 0; i < n; i++) {
      const unsigned char *e = buf + csize + i * esize;
      uint16_t tag;
      memcpy(&tag, e, 2);
      uint64_t v = tag == 270 ? 0 : entry_value(e, ch->big);
      if (!ch->pages && (tag == 282 || tag == 283)) {
        float rv = entry_rational(fd, e, ch->big, ch->size);
        *(tag == 282 ? &ch->xr : &ch->yr) = rv;
      }
      if (tag == 256) w = v;
      if (tag == 257) h = v;
      if (tag == 258) bits = v;
      if (tag == 259) comp = v;
      if (tag == 273) strip = v;
      if (tag == 277) spp = v;
      if (tag == 279) bytes = v;
      if (tag == 339) fmt = v;
      if (tag == 270) { /* the description: ImageJ's page count? */
        char text[DESC_ROOM + 1] = "";
        uint64_t cnt = 0, at = 0;
        if (ch->big) {
          memcpy(&cnt, e + 4, 8);
          memcpy(&at, e + 12, 8);
        } else {
          uint32_t c32, a32;
          memcpy(&c32, e + 4, 4);
          memcpy(&a32, e + 8, 4);
          cnt = c32, at = a32;
        }
        size_t k = cnt < DESC_ROOM ? (size_t)cnt : DESC_ROOM;
        if (cnt <= nsize) memcpy(text, e + (ch->big ? 12 : 8), k);
        else if (at > ch->size || k > ch->size - at || pread_all(fd, text, k, at))
          k = 0;
        text[k] = 0;
        if (!ch->pages) memcpy(ch->desc, text, k + 1);
        if (strstr(text, "images="))
          return append_fail(err, err_len, QS_EFORMAT, path,
                             "its description counts the stack's images "
                             "(an ImageJ stack); write it with "
                             "TIFF_APPENDABLE");
      }
    }
    if (w != cols || h != rows || bits != 32 || fmt != 3 || comp != 1 ||
        spp != 1 || strip == UINT64_MAX || bytes != want || strip > ch->size ||
        want > ch->size - strip)
      return append_fail(err, err_len,
                         w != cols || h != rows ? QS_ESHAPE : QS_EFORMAT, path,
                         "page %zu is not one uncompressed strip of %zux%zu "
                         "float32 values (it is %llux%llu, %llu-bit format "
                         "%llu, compression %llu)",
                         ch->pages, rows, cols, (unsigned long long)h,
                         (unsigned long long)w, (unsigned long long)bits,
                         (unsigned long long)fmt, (unsigned long long)comp);
    if (chain_push(ch, strip))
      return append_fail(err, err_len, QS_ENOMEM, path, "out of memory");
    ch->link = off + csize + (uint64_t)n * esize;
    prev = off;
    if (ch->big)
      memcpy(&off, buf + csize + n * esize, 8);
    else {
      uint32_t o32;
      memcpy(&o32, buf + csize + n * esize, 4);
      off = o32;
    }
  }
  if (!ch->pages)
    return append_fail(err, err_len, QS_EFORMAT, path, "no pages");
  if (ch->link % nsize)
    return append_fail(err, err_len, QS_EFORMAT, path,
                       "its last directory's link at %llu is not aligned for "
                       "a single write (not written by this writer)",
                       (unsigned long long)ch->link);
  return QS_OK;
}

/* A classic stack that would pass 4 GiB: rewritten whole as an appendable
 * BigTIFF (old pages copied one at a time, then the new ones) and renamed
 * over the old file, once. */
static int append_as_big(int fd, const char *path, const chain *ch,
                         const qs_image *img, char *err, size_t err_len) {
  tiff_stack s;
  int rc = tiff_stack_create(&s, path, ch->pages + img->frames, img->rows,
                             img->cols, TIFF_BIG | TIFF_APPENDABLE, err,
                             err_len);
  if (rc) return rc;
  /* the unit, pixel size and provenance go with the pages */
  tiff_meta m;
  char why[256];
  if (!meta_parse(ch->desc, ch->xr, ch->yr, RESUNIT_NONE, s.pages, &m, why,
                  sizeof why))
    rc = tiff_stack_describe(&s, &m, err, err_len);
  float *px = malloc((size_t)s.page_bytes);
  if (!px) rc = append_fail(err, err_len, QS_ENOMEM, path, "out of memory");
  for (size_t k = 0; !rc && k < ch->pages; k++) {
    if (pread_all(fd, px, (size_t)s.page_bytes, ch->offs[k]))
      rc = append_fail(err, err_len, QS_EIO, path, "cannot read page %zu: %s",
                       k, strerror(errno));
    if (!rc) rc = tiff_stack_write(&s, k, 1, px, err, err_len);
  }
  free(px);
  if (!rc)
    rc = tiff_stack_write(&s, ch->pages, img->frames, img->data, err, err_len);
  if (rc) {
    tiff_stack_abort(&s);
    return rc;
  }
  return tiff_stack_commit(&s, 0, 0, err, err_len);
}

static uint64_t classic_limit = UINT32_MAX;

void tiff_set_classic_limit(uint64_t bytes) {
  classic_limit = bytes && bytes < UINT32_MAX ? bytes : UINT32_MAX;
}

int tiff_append(const char *path, const qs_image *img, char *err,
                size_t err_len) {
  size_t n;
  if (!img || !img->data ||
      qs_image_pixels(img->frames, img->rows, img->cols, &n) || n == 0)
    return append_fail(err, err_len, QS_EINVAL, path, "nothing to append");
  int fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
  struct stat st;
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int rc = append_fail(err, err_len, QS_EIO, path, "%s",
                         fd < 0 ? strerror(errno) : "not a regular file");
    if (fd >= 0) close(fd);
    return rc;
  }
  chain ch = {.size = (uint64_t)st.st_size};
  int rc = chain_walk(fd, path, img->rows, img->cols, &ch, err, err_len);
  uint64_t page_bytes = (uint64_t)img->rows * img->cols * 4;
  size_t esize = ch.big ? 20 : 12, nsize = ch.big ? 8 : 4;
  uint64_t end = ch.size;
  for (size_t f = 0; !rc && f < img->frames; f++) {
    uint64_t data = round8(end);
    uint64_t ifd = round8(data + page_bytes) + ifd_shift(ch.big, 11);
    uint64_t ifd_end = ifd + ifd_bytes(ch.big, 11);
    if (!ch.big && ifd_end > classic_limit) {
      if (f) { /* the pages so far are in; the rest go through a rewrite */
        qs_image rest = qs_image_wrap(img->data + f * img->rows * img->cols,
                                      img->frames - f, img->rows, img->cols);
        rc = append_as_big(fd, path, &ch, &rest, err, err_len);
      } else {
        rc = append_as_big(fd, path, &ch, img, err, err_len);
      }
      break;
    }
    /* 1. the page and its directory past the end, made durable;
     * 2. the previous last directory's link: one aligned write, durable.
     * A reader sees the chain end before the page or after it, never a
     * page whose bytes are still on their way. */
    unsigned char dir[256];
    size_t len =
        ifd_build(dir, ch.big, img->rows, img->cols, data, 0, 0, NULL, 0);
    const float *px = img->data + f * img->rows * img->cols;
    if (pwrite_all(fd, px, (size_t)page_bytes, data) ||
        pwrite_all(fd, dir, len, ifd) || fdatasync(fd)) {
      rc = append_fail(err, err_len, QS_EIO, path, "writing page %zu: %s",
                       ch.pages, strerror(errno));
      break;
    }
    unsigned char link[8];
    uint32_t l32 = (uint32_t)ifd;
    memcpy(link, ch.big ? (void *)&ifd : (void *)&l32, nsize);
    if (pwrite(fd, link, nsize, (off_t)ch.link) != (ssize_t)nsize ||
        fdatasync(fd)) {
      rc = append_fail(err, err_len, QS_EIO, path, "linking page %zu: %s",
                       ch.pages, strerror(errno));
      break;
    }
    if (chain_push(&ch, data)) { /* kept for a later BigTIFF rewrite */
      rc = append_fail(err, err_len, QS_ENOMEM, path, "out of memory");
      break;
    }
    ch.link = ifd + (ch.big ? 8 : 2) + 11 * esize;
    end = ifd_end;
  }
  free(ch.offs);
  if (close(fd) != 0 && !rc)
    rc = append_fail(err, err_len, QS_EIO, path, "%s", strerror(errno));
  return rc;
}

int tiff_channel(const qs_image *all, const tiff_meta *m, size_t c,
                 size_t first, size_t count, qs_image *out) {
  size_t seq = m->slices > 1 ? m->slices : m->frames;
  if (first >= seq) return QS_EINVAL;
  if (count > seq - first) count = seq - first;
  int rc = qs_image_alloc(out, count, all->rows, all->cols);
  size_t plane = all->rows * all->cols;
  for (size_t s = 0; !rc && s < count; s++) {
    size_t z = m->slices > 1 ? first + s : 0, t = m->slices > 1 ? 0 : first + s;
    memcpy(out->data + s * plane,
           all->data + tiff_meta_page(m, c, z, t) * plane,
           plane * sizeof(float));
  }
  return rc;
}
