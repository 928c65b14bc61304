/* devimg.c — images that live on an OpenCL device (quicksilver_image.h):
 * push, pull and release; the engine's list of its live ones, which is how
 * a freed or foreign device image is told without reading it; and a
 * call's side of them for the dispatcher: the device of its inputs, the
 * inputs pulled once for an implementation of another place, device
 * outputs, pushes back, and the seconds those moves would cost (what the
 * agent adds to an estimate). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl/clrt.h"
#include "internal.h"

/* What a device image's owner_ points to. */
struct devimg {
  void (*release)(
      void *self); /* first member: qs_image_free's way (image.c) */
  qs_engine *e;    /* NULL once its engine closed */
  cldev *dev;                  /* NULL once its engine closed */
  char name[48];               /* the device's slug */
#if QS_HAVE_OPENCL
  cl_mem mem;
#endif
  size_t bytes;
  int dead;                    /* freed, kept in the engine's grave */
  devimg *prev, *next;         /* the engine's list, or its grave */
};

/* Records of freed device images the engine keeps (their buffers
 * released) before it frees them: while kept, their addresses cannot be
 * reused by a new device image, so a stale copy of a freed one is told
 * from a live one, and freeing such a copy again does nothing. */
#define DEVIMG_GRAVE 256

/* Bytes of an image's pixels (shapes checked by the caller). */
static size_t img_bytes(const qs_image *img) {
  return img->frames * img->rows * img->cols * sizeof(float);
}

/* The record of a device image of this engine, found by address alone
 * (nothing is read from an image that is not on the list). */
static devimg *devimg_find(const qs_engine *e, const qs_image *img) {
  if (!img || img->data || !img->owner_) return NULL;
  for (devimg *d = e->devimgs; d; d = d->next)
    if ((void *)d == img->owner_) return d;
  return NULL;
}

int devimg_check(qs_engine *e, const qs_image *img, const char *what,
                 void **dev) {
  *dev = NULL;
  if (!img || img->data || !img->owner_) return QS_OK;
  devimg *d = devimg_find(e, img);
  if (!d)
    return engine_fail(e, QS_EINVAL, "%s is a device image that was freed, "
                                     "or of another engine", what);
  *dev = d->dev;
  return QS_OK;
}

static void devimg_unlink(devimg *d) {
  if (d->prev) d->prev->next = d->next;
  else if (d->e) d->e->devimgs = d->next;
  if (d->next) d->next->prev = d->prev;
  d->prev = d->next = NULL;
}

/* qs_image_free of a device image: the buffer released, the record kept in
 * the grave while the engine is open (the oldest beyond DEVIMG_GRAVE
 * freed), else freed. */
static void devimg_release(void *self) {
  devimg *d = self;
  if (d->dead) return; /* a stale copy freed again */
  qs_engine *e = d->e;
  if (!e) {
    free(d);
    return;
  }
  devimg_unlink(d);
#if QS_HAVE_OPENCL
  /* cldev_release wants nothing queued on it (a zeroing may be) */
  cl_context ctx;
  cl_command_queue q;
  if (cldev_queue(d->dev, &ctx, &q, NULL, 0) == QS_OK) clFinish(q);
  cldev_release(d->dev, d->mem);
  d->mem = NULL;
#endif
  d->dead = 1;
  d->next = e->grave;
  if (d->next) d->next->prev = d;
  e->grave = d;
  if (!e->grave_tail) e->grave_tail = d;
  if (++e->n_grave > DEVIMG_GRAVE) {
    devimg *old = e->grave_tail;
    e->grave_tail = old->prev;
    e->grave_tail->next = NULL;
    e->n_grave--;
    free(old);
  }
}

void devimg_close_all(qs_engine *e) {
  while (e->grave) {
    devimg *d = e->grave;
    e->grave = d->next;
    free(d);
  }
  e->grave_tail = NULL;
  e->n_grave = 0;
  while (e->devimgs) {
    devimg *d = e->devimgs;
    devimg_unlink(d);
#if QS_HAVE_OPENCL
    cldev_release(d->dev, d->mem);
    d->mem = NULL;
#endif
    d->e = NULL;
    d->dev = NULL;
  }
}

const char *qs_image_device(const qs_image *img) {
  if (!img || img->data || !img->owner_) return "";
  const devimg *d = img->owner_;
  return d->e && !d->dead ? d->name : "";
}

void *qs_image_cl_buffer(const qs_image *img, const void *device) {
  if (!img || img->data || !img->owner_ || !device) return NULL;
  const devimg *d = img->owner_;
#if QS_HAVE_OPENCL
  return d->e && !d->dead && d->dev == device ? (void *)d->mem : NULL;
#else
  (void)d;
  return NULL;
#endif
}

/* The device named `name` ("<slug>", "opencl:<slug>"; NULL or "opencl":
 * the first). */
static int dev_named(qs_engine *e, const char *name, cldev **out) {
  *out = NULL;
  size_t n = clrt_count(e->cl);
  if (!n)
    return engine_fail(e, QS_EUNAVAIL, "no OpenCL device: %s",
                       qs_engine_opencl_why(e));
  if (!name || !*name || !strcmp(name, "opencl")) {
    *out = clrt_device(e->cl, 0);
    return QS_OK;
  }
  const char *slug = strncmp(name, "opencl:", 7) ? name : name + 7;
  for (size_t i = 0; i < n; i++)
    if (!strcmp(cldev_about(clrt_device(e->cl, i))->slug, slug)) {
      *out = clrt_device(e->cl, i);
      return QS_OK;
    }
  return engine_fail(e, QS_ENOIMPL, "no OpenCL device \"%s\" (first: %s)",
                     name, cldev_about(clrt_device(e->cl, 0))->slug);
}

#if QS_HAVE_OPENCL
/* A new device image of the shape on d, its buffer's contents undefined. */
static int devimg_new(qs_engine *e, cldev *d, size_t frames, size_t rows,
                      size_t cols, qs_image *out) {
  *out = (qs_image){0};
  size_t n;
  int rc = qs_image_pixels(frames, rows, cols, &n);
  if (!rc && !n) rc = QS_EINVAL;
  if (rc)
    return engine_fail(e, rc, "device image of %zu x %zu x %zu", frames,
                       rows, cols);
  devimg *r = calloc(1, sizeof *r);
  if (!r) return engine_fail(e, QS_ENOMEM, "device image: out of memory");
  r->bytes = n * sizeof(float);
  rc = cldev_buffer(d, CL_MEM_READ_WRITE, r->bytes, NULL, "device image",
                    &r->mem, e->err, sizeof e->err);
  if (rc) {
    free(r);
    return rc;
  }
  r->release = devimg_release;
  r->e = e;
  r->dev = d;
  snprintf(r->name, sizeof r->name, "%s", cldev_about(d)->slug);
  r->next = e->devimgs;
  if (r->next) r->next->prev = r;
  e->devimgs = r;
  *out = (qs_image){NULL, frames, rows, cols, r};
  return QS_OK;
}

/* One blocking copy between host memory and a device image's buffer,
 * timed for the device's bandwidth and counted. */
static int devimg_copy(qs_engine *e, devimg *r, float *host, int up) {
  cl_context ctx;
  cl_command_queue q;
  int rc = cldev_queue(r->dev, &ctx, &q, e->err, sizeof e->err);
  if (rc) return rc;
  int64_t t0 = qs_timer_ns();
  cl_int c = up ? clEnqueueWriteBuffer(q, r->mem, CL_TRUE, 0, r->bytes, host,
                                       0, NULL, NULL)
                : clEnqueueReadBuffer(q, r->mem, CL_TRUE, 0, r->bytes, host,
                                      0, NULL, NULL);
  rc = cl_status(c, up ? "pushing a device image" : "pulling a device image",
                 e->err, sizeof e->err);
  if (rc) return rc;
  cldev_rate_note(r->dev, r->bytes, (double)(qs_timer_ns() - t0) * 1e-9);
  cldev_transfer(r->dev, up ? r->bytes : 0, up ? 0 : r->bytes);
  return QS_OK;
}

int devimg_zero(qs_engine *e, qs_image *img) {
  devimg *r = devimg_find(e, img);
  if (!r) return QS_OK;
  cl_context ctx;
  cl_command_queue q;
  int rc = cldev_queue(r->dev, &ctx, &q, e->err, sizeof e->err);
  float zero = 0;
  /* queued, not waited for: the queue is in order, so every later use of
   * the buffer (a kernel, a copy, a release) comes after it */
  if (!rc)
    rc = cl_status(clEnqueueFillBuffer(q, r->mem, &zero, sizeof zero, 0,
                                       r->bytes, 0, NULL, NULL),
                   "zeroing a device image", e->err, sizeof e->err);
  return rc;
}

/* The scan for devimg_finite: each of the FIN_GROUPS work-groups of
 * FIN_LOCAL items strides over the pixels (neighbouring items read
 * neighbouring pixels), each item keeping the first NaN or infinity of
 * its stride (its smallest), the group the least of its items'. One
 * global size for every image, so a runtime that compiles per size
 * (PoCL) compiles once. */
#define FIN_GROUPS 64
#define FIN_LOCAL 64
static const char fin_src[] =
    "__kernel void qs_first_nonfinite(__global const float *x, ulong n,\n"
    "                                 __global ulong *first,\n"
    "                                 __local ulong *m) {\n"
    "  size_t l = get_local_id(0), stride = get_global_size(0);\n"
    "  ulong f = n;\n"
    "  for (ulong i = get_global_id(0); i < n; i += stride)\n"
    "    if (!isfinite(x[i])) { f = i; break; }\n"
    "  m[l] = f;\n"
    "  barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  for (size_t s = get_local_size(0) / 2; s > 0; s /= 2) {\n"
    "    if (l < s && m[l + s] < m[l]) m[l] = m[l + s];\n"
    "    barrier(CLK_LOCAL_MEM_FENCE);\n"
    "  }\n"
    "  if (l == 0) first[get_group_id(0)] = m[0];\n"
    "}\n";

int devimg_finite(qs_engine *e, const qs_image *img, const char *what) {
  devimg *r = devimg_find(e, img);
  if (!r) return QS_OK;
  cl_context ctx;
  cl_command_queue q;
  cl_program prog;
  cl_kernel k = NULL;
  cl_mem first = NULL;
  cl_ulong n = r->bytes / sizeof(float), got[FIN_GROUPS];
  int rc = cldev_queue(r->dev, &ctx, &q, e->err, sizeof e->err);
  if (!rc)
    rc = cldev_program_text(r->dev, "the NaN scan", fin_src, "", &prog,
                            NULL, e->err, sizeof e->err);
  if (!rc) rc = cldev_buffer(r->dev, CL_MEM_WRITE_ONLY, sizeof got, NULL,
                             "the NaN scan", &first, e->err, sizeof e->err);
  if (!rc) {
    cl_int c;
    k = clCreateKernel(prog, "qs_first_nonfinite", &c);
    rc = cl_status(c, "the NaN scan's kernel", e->err, sizeof e->err);
  }
  if (!rc) {
    size_t global = FIN_GROUPS * FIN_LOCAL, local = FIN_LOCAL;
    cl_int c = clSetKernelArg(k, 0, sizeof r->mem, &r->mem);
    c |= clSetKernelArg(k, 1, sizeof n, &n);
    c |= clSetKernelArg(k, 2, sizeof first, &first);
    c |= clSetKernelArg(k, 3, FIN_LOCAL * sizeof(cl_ulong), NULL);
    if (c == CL_SUCCESS)
      c = clEnqueueNDRangeKernel(q, k, 1, NULL, &global, &local, 0, NULL,
                                 NULL);
    if (c == CL_SUCCESS)
      c = clEnqueueReadBuffer(q, first, CL_TRUE, 0, sizeof got, got, 0, NULL,
                              NULL);
    rc = cl_status(c, "the NaN scan", e->err, sizeof e->err);
  }
  cl_ulong at = n;
  for (size_t g = 0; !rc && g < FIN_GROUPS; g++)
    if (got[g] < at) at = got[g];
  float v = 0;
  if (!rc && at < n)
    rc = cl_status(clEnqueueReadBuffer(q, r->mem, CL_TRUE,
                                       (size_t)at * sizeof v, sizeof v, &v, 0,
                                       NULL, NULL),
                   "the NaN scan", e->err, sizeof e->err);
  if (!rc) cldev_transfer(r->dev, 0, sizeof got + (at < n ? sizeof v : 0));
  if (k) clReleaseKernel(k);
  cldev_release(r->dev, first);
  if (rc || at == n) return rc;
  size_t px = img->rows * img->cols, i = (size_t)at;
  return engine_fail(e, QS_EINVAL,
                     "%s: frame %zu has %g at row %zu, column %zu (a device "
                     "image): the method refuses NaN and infinite pixels; "
                     "nothing was computed",
                     what, i / px, (double)v, i % px / img->cols,
                     i % img->cols);
}
#else
int devimg_zero(qs_engine *e, qs_image *img) {
  (void)e;
  (void)img;
  return QS_OK;
}

int devimg_finite(qs_engine *e, const qs_image *img, const char *what) {
  (void)e;
  (void)img;
  (void)what;
  return QS_OK;
}
#endif

int qs_image_push(qs_engine *e, const qs_image *host, const char *device,
                  qs_image *dev) {
  if (dev) *dev = (qs_image){0};
  if (!e) return QS_EINVAL;
  if (!host || !dev)
    return engine_fail(e, QS_EINVAL, "qs_image_push: %s is NULL",
                       !host ? "the host image" : "dev");
  if (!host->data)
    return engine_fail(e, QS_EINVAL, "qs_image_push: the image %s",
                       host->owner_ ? "is a device image already"
                                    : "has no data");
  cldev *d;
  int rc = dev_named(e, device, &d);
  if (rc) return rc;
#if QS_HAVE_OPENCL
  rc = devimg_new(e, d, host->frames, host->rows, host->cols, dev);
  if (!rc) rc = devimg_copy(e, dev->owner_, host->data, 1);
  if (rc) qs_image_free(dev);
  return rc;
#else
  return engine_fail(e, QS_EUNAVAIL, "qs_image_push: no OpenCL");
#endif
}

int qs_image_pull(qs_engine *e, const qs_image *dev, qs_image *host) {
  if (host) *host = (qs_image){0};
  if (!e) return QS_EINVAL;
  if (!dev || !host)
    return engine_fail(e, QS_EINVAL, "qs_image_pull: %s is NULL",
                       !dev ? "the device image" : "host");
  void *d;
  int rc = devimg_check(e, dev, "qs_image_pull: the image", &d);
  if (rc) return rc;
  if (!d && !dev->data)
    return engine_fail(e, QS_EINVAL, "qs_image_pull: the image has no data");
  rc = qs_image_alloc(host, dev->frames, dev->rows, dev->cols);
  if (rc)
    return engine_fail(e, rc, "qs_image_pull: cannot allocate %zu x %zu x %zu",
                       dev->frames, dev->rows, dev->cols);
  if (!d) {
    memcpy(host->data, dev->data, img_bytes(dev));
    return QS_OK;
  }
#if QS_HAVE_OPENCL
  rc = devimg_copy(e, dev->owner_, host->data, 0);
#endif
  if (rc) qs_image_free(host);
  return rc;
}

int qs_engine_device_bytes(qs_engine *e, const char *device, uint64_t *up,
                           uint64_t *down) {
  if (up) *up = 0;
  if (down) *down = 0;
  if (!e) return QS_EINVAL;
  cldev *d;
  int rc = dev_named(e, device, &d);
  if (rc) return rc;
  uint64_t u, w;
  cldev_transfers(d, &u, &w);
  if (up) *up = u;
  if (down) *down = w;
  return QS_OK;
}

/* Bytes of the probe that measures a device's bandwidth when no copy has
 * been timed yet: large enough that a copy's fixed cost is a small part. */
#define PROBE_BYTES ((size_t)4 << 20)

/* Bytes per second to and from d: the timed copies so far, else a probe
 * (one push and one pull of PROBE_BYTES); 0 if it cannot be measured. */
static double dev_rate(qs_engine *e, cldev *d) {
  double r = cldev_rate(d);
  if (r > 0) return r;
#if QS_HAVE_OPENCL
  qs_image host, dev;
  char keep[QS_ERR_MAX];
  memcpy(keep, e->err, sizeof keep); /* a probe's failure is nobody's */
  if (qs_image_alloc(&host, 1, 1, PROBE_BYTES / sizeof(float)) == QS_OK) {
    if (devimg_new(e, d, 1, 1, PROBE_BYTES / sizeof(float), &dev) == QS_OK) {
      if (!devimg_copy(e, dev.owner_, host.data, 1))
        devimg_copy(e, dev.owner_, host.data, 0);
      qs_image_free(&dev);
    }
    qs_image_free(&host);
  }
  memcpy(e->err, keep, sizeof keep);
  r = cldev_rate(d);
#endif
  return r;
}

int qs_engine_device_bandwidth(qs_engine *e, const char *device,
                               double *bytes_per_second) {
  if (bytes_per_second) *bytes_per_second = 0;
  if (!e) return QS_EINVAL;
  if (!bytes_per_second)
    return engine_fail(e, QS_EINVAL, "qs_engine_device_bandwidth: NULL");
  cldev *d;
  int rc = dev_named(e, device, &d);
  if (rc) return rc;
  *bytes_per_second = dev_rate(e, d);
  return *bytes_per_second > 0
             ? QS_OK
             : engine_fail(e, QS_ECL, "device %s: bandwidth not measured",
                           cldev_about(d)->slug);
}

/* ------------------------------------------------- a call (dispatch.c) */

int devcall_native(const prep *pr, const rimpl *r) {
  return pr->dev && r->def->kind == QS_IMPL_OPENCL && r->device == pr->dev &&
         r->def->device_images;
}

const char *devcall_key(const prep *pr, const rimpl *r) {
  return devcall_native(pr, r) ? pr->key_dev : pr->key;
}

int devcall_pull(qs_engine *e, prep *pr) {
  if (pr->pulled) return QS_OK;
  for (size_t i = 0; i < pr->n_in; i++) {
    if (pr->in[i].data) {
      pr->host_in[i] = pr->in[i];
      pr->host_in[i].owner_ = NULL; /* shared, never freed here */
      continue;
    }
    int rc = qs_image_pull(e, &pr->in[i], &pr->host_in[i]);
    if (rc) {
      for (size_t k = 0; k < i; k++)
        if (pr->host_in[k].owner_) qs_image_free(&pr->host_in[k]);
      return rc;
    }
    pr->bytes_pulled += img_bytes(&pr->in[i]);
  }
  pr->pulled = 1;
  return QS_OK;
}

void devcall_done(prep *pr) {
  if (!pr->pulled) return;
  for (size_t i = 0; i < pr->n_in; i++)
    if (pr->host_in[i].owner_) qs_image_free(&pr->host_in[i]);
  pr->pulled = 0;
}

int devcall_outputs(qs_engine *e, prep *pr, qs_image *out, size_t n) {
#if QS_HAVE_OPENCL
  for (size_t i = 0; i < n; i++) {
    int rc = devimg_new(e, pr->dev, pr->shape[i].frames, pr->shape[i].rows,
                        pr->shape[i].cols, &out[i]);
    /* not zeroed: an implementation that runs on them writes every pixel
     * (impl_def.device_images), any other's outputs are pushed whole */
    if (rc) {
      outputs_free(out, i + 1);
      return rc;
    }
  }
  return QS_OK;
#else
  (void)pr;
  (void)out;
  (void)n;
  return engine_fail(e, QS_EUNAVAIL, "device outputs: no OpenCL");
#endif
}

int devcall_push(qs_engine *e, prep *pr, const qs_image *host, qs_image *dev,
                 size_t n) {
#if QS_HAVE_OPENCL
  for (size_t i = 0; i < n; i++) {
    devimg *r = devimg_find(e, &dev[i]);
    if (!r) return engine_fail(e, QS_EINVAL, "output %zu: not a device "
                                             "image", i);
    int rc = devimg_copy(e, r, host[i].data, 1);
    if (rc) return rc;
    pr->bytes_pushed += r->bytes;
  }
  return QS_OK;
#else
  (void)pr;
  (void)host;
  (void)dev;
  (void)n;
  return engine_fail(e, QS_EUNAVAIL, "device outputs: no OpenCL");
#endif
}

double devcall_transfer(qs_engine *e, const prep *pr, const rimpl *r) {
  if (!pr->dev || devcall_native(pr, r)) return 0;
  double bytes = 0;
  for (size_t i = 0; !pr->pulled && i < pr->n_in; i++)
    if (!pr->in[i].data) bytes += (double)img_bytes(&pr->in[i]);
  for (size_t i = 0; i < pr->m->desc->n_outputs; i++)
    bytes += (double)img_bytes(&pr->shape[i]);
  double rate = dev_rate(e, pr->dev);
  return rate > 0 ? bytes / rate : 0;
}
