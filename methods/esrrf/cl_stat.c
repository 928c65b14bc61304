/* cl_stat.c — eSRRF's temporal statistics in device buffers (cl_stat.h). */
#include "qs_config.h"

#if QS_HAVE_OPENCL
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/timer.h"
#include "methods/esrrf/cl_stat.h"

/* The program of statistic `kind` (esrrf_stat.cl built with STAT_KIND:
 * kernels specialised to it), with exact division in the finish (the bits
 * must not depend on the device's division; no contractions, the kernel
 * also says so). Built once per device and statistic (clrt's cache). */
static int stat_program(cldev *d, int kind, cl_program *prog, double *once_s,
                        char *err, size_t err_len) {
  char opts[96];
  snprintf(opts, sizeof opts,
           "-cl-fp32-correctly-rounded-divide-sqrt -DSTAT_KIND=%d", kind);
  return cldev_program(d, "esrrf_stat.cl", opts, prog, once_s, err, err_len);
}

size_t cl_stat_slots(int kind) {
  static const size_t slots[] = {2, 5, 6};
  return kind >= 0 && kind <= 2 ? slots[kind] : 0;
}

size_t cl_stat_bytes(int kind, size_t plane) {
  return (cl_stat_slots(kind) + 1) * plane * sizeof(float);
}

/* Work-items of a kernel of `lanes` pixels each for maps of `plane`
 * pixels, rounded up to a multiple of 64. */
static size_t cl_stat_global(size_t plane, size_t lanes) {
  return ((plane + lanes - 1) / lanes + 63) / 64 * 64;
}

/* Program, the fold and the finishing kernel `finish_name`, an
 * accumulator buffer of acc_floats floats (named acc_name in messages and
 * to the runtime's fault hook) and a result of plane floats,
 * with the arguments both kernels share set: the fold's acc, kind, plane
 * and accumulator offset (0), the finish's acc, out, kind and plane (its
 * arguments 0, 1, 3, 4). The build's seconds go to *once_s. */
static int stat_setup(cldev *d, int kind, size_t plane, size_t acc_floats,
                      const char *acc_name, const char *finish_name, cl_kernel *fold,
                      cl_kernel *finish, cl_mem *acc, cl_mem *res,
                      double *once_s, char *err, size_t err_len) {
  cl_program prog;
  cl_int e = CL_SUCCESS;
  int rc = stat_program(d, kind, &prog, once_s, err, err_len);
  if (!rc) {
    *fold = clCreateKernel(prog, "esrrf_fold", &e);
    rc = cl_status(e, "esrrf_fold", err, err_len);
  }
  if (!rc) {
    *finish = clCreateKernel(prog, finish_name, &e);
    rc = cl_status(e, finish_name, err, err_len);
  }
  if (!rc)
    rc = cldev_buffer(d, CL_MEM_READ_WRITE, acc_floats * sizeof(float), NULL,
                      acc_name, acc, err, err_len);
  if (!rc)
    rc = cldev_buffer(d, CL_MEM_WRITE_ONLY, plane * sizeof(float), NULL,
                      "timepoint image", res, err, err_len);
  cl_long pl = (cl_long)plane, zero = 0;
  if (!rc) {
    e = clSetKernelArg(*fold, 1, sizeof *acc, acc);
    e |= clSetKernelArg(*fold, 4, sizeof pl, &pl);
    e |= clSetKernelArg(*fold, 6, sizeof zero, &zero);
    e |= clSetKernelArg(*finish, 0, sizeof *acc, acc);
    e |= clSetKernelArg(*finish, 1, sizeof *res, res);
    e |= clSetKernelArg(*finish, 3, sizeof pl, &pl);
    rc = cl_status(e, "setting the statistic's arguments", err, err_len);
  }
  return rc;
}

int cl_stat_open(cl_stat *st, cldev *d, int kind, size_t plane, char *err,
                 size_t err_len) {
  memset(st, 0, sizeof *st);
  st->dev = d;
  st->kind = kind;
  st->plane = plane;
  st->global = cl_stat_global(plane, CL_STAT_LANES);
  if (!cl_stat_slots(kind) || !plane) {
    snprintf(err, err_len, "device statistic: no statistic %d", kind);
    return QS_EINVAL;
  }
  return stat_setup(d, kind, plane, cl_stat_slots(kind) * plane,
                    "temporal accumulators",
                    "esrrf_stat_finish", &st->fold, &st->finish, &st->acc,
                    &st->res, &st->once_s, err, err_len);
}

static void release_all(cldev *d, cl_kernel *fold, cl_kernel *finish,
                        cl_mem *acc, cl_mem *res) {
  if (*fold) clReleaseKernel(*fold);
  if (*finish) clReleaseKernel(*finish);
  cldev_release(d, *acc);
  cldev_release(d, *res);
  *fold = *finish = NULL;
  *acc = *res = NULL;
}

void cl_stat_close(cl_stat *st) {
  release_all(st->dev, &st->fold, &st->finish, &st->acc, &st->res);
}

/* Runs kernel k (of statistic `kind`'s program) over `global` work-items
 * on dev after `wait`. Without `keep` it waits for it and books its device
 * time in *dev_s; with `keep` the kernel's event goes to *keep (the caller
 * books and releases it: cl_event_seconds) and only a first launch
 * (compilation for its size, booked in *once_s as one-time cost) is
 * waited for. */
static int stat_launch(cldev *dev, int kind, const size_t *global,
                       double *dev_s, double *once_s, cl_command_queue q,
                       cl_kernel k, const char *name, cl_event wait,
                       cl_event *keep, char *err, size_t err_len) {
  cl_event ev = NULL;
  /* each statistic's program is its own: so is its first launch */
  char key[64];
  snprintf(key, sizeof key, "%s/%d", name, kind);
  int first = cldev_first_launch(dev, key, global, 1);
  int64_t t0 = qs_timer_ns();
  int rc =
      cl_status(clEnqueueNDRangeKernel(q, k, 1, NULL, global, NULL,
                                       wait ? 1 : 0, wait ? &wait : NULL, &ev),
                name, err, err_len);
  if (!rc && (first || !keep))
    rc = cl_status(clWaitForEvents(1, &ev), name, err, err_len);
  if (!rc && keep) {
    double wall = (double)(qs_timer_ns() - t0) * 1e-9;
    if (first && wall > cl_event_seconds(ev))
      *once_s += wall - cl_event_seconds(ev);
    *keep = ev;
    return QS_OK;
  }
  if (ev) {
    double run = cl_event_seconds(ev),
           wall = (double)(qs_timer_ns() - t0) * 1e-9;
    *dev_s += run;
    if (first && wall > run) *once_s += wall - run;
    clReleaseEvent(ev);
  }
  return rc;
}

/* The fold's arguments for n maps at `at` maps into `maps` (planes of
 * `plane` floats), into the state at float acc_off of the accumulators,
 * which already holds frames when `first` is nonzero. */
static int fold_args(cl_kernel fold, cl_mem maps, size_t plane, size_t at,
                     size_t n, int first, size_t acc_off, char *err,
                     size_t err_len) {
  cl_int cn = (cl_int)n, cf = first != 0;
  cl_long off = (cl_long)(at * plane), ao = (cl_long)acc_off;
  cl_int e = clSetKernelArg(fold, 0, sizeof maps, &maps);
  e |= clSetKernelArg(fold, 2, sizeof cn, &cn);
  e |= clSetKernelArg(fold, 3, sizeof cf, &cf);
  e |= clSetKernelArg(fold, 5, sizeof off, &off);
  e |= clSetKernelArg(fold, 6, sizeof ao, &ao);
  return cl_status(e, "setting the fold's arguments", err, err_len);
}

/* The finished image `res` (plane floats) into out by take(ctx, img, out)
 * on the mapped buffer (a copy when take is NULL): one blocking map for
 * reading, counted by cldev_transfer as a download, its device time booked
 * in *dev_s. On a device in host memory (PoCL) the map copies nothing and
 * take's pass is the only one over the image (a read into out, then a
 * correction in place, made two: 4.5 ms of a 26 MB result here); on a
 * discrete device the map is the download. The unmap is queued (the next
 * command on q comes after it). */
static int take_image(cldev *dev, cl_command_queue q, cl_mem res, size_t plane,
                      cl_image_fn take, void *ctx, float *out, double *dev_s,
                      char *err, size_t err_len) {
  cl_event ev = NULL;
  cl_int e = CL_SUCCESS;
  size_t bytes = plane * sizeof(float);
  const float *img = clEnqueueMapBuffer(q, res, CL_TRUE, CL_MAP_READ, 0, bytes,
                                        0, NULL, &ev, &e);
  int rc = cl_status(e, "reading the timepoint image", err, err_len);
  if (!rc) {
    cldev_transfer(dev, 0, bytes);
    if (take)
      rc = take(ctx, img, out);
    else
      memcpy(out, img, bytes);
  }
  if (img) {
    int urc = cl_status(
        clEnqueueUnmapMemObject(q, res, (void *)img, 0, NULL, NULL),
        "releasing the timepoint image", err, err_len);
    if (!rc) rc = urc;
  }
  if (ev) {
    *dev_s += cl_event_seconds(ev);
    clReleaseEvent(ev);
  }
  return rc;
}

int cl_stat_fold(cl_stat *st, cl_command_queue q, cl_mem maps, size_t n,
                 cl_event wait, char *err, size_t err_len) {
  return cl_stat_fold_at(st, q, maps, 0, n, wait, NULL, err, err_len);
}

int cl_stat_fold_at(cl_stat *st, cl_command_queue q, cl_mem maps, size_t at,
                    size_t n, cl_event wait, cl_event *keep, char *err,
                    size_t err_len) {
  if (keep) *keep = NULL;
  if (n == 0) return QS_OK;
  int rc =
      fold_args(st->fold, maps, st->plane, at, n, st->n > 0, 0, err, err_len);
  if (!rc)
    rc = stat_launch(st->dev, st->kind, &st->global, &st->dev_s, &st->once_s,
                     q, st->fold, "esrrf_fold", wait, keep, err, err_len);
  if (!rc) st->n += n;
  return rc;
}

int cl_stat_finish(cl_stat *st, cl_command_queue q, float *out, char *err,
                   size_t err_len) {
  return cl_stat_finish_with(st, q, NULL, NULL, out, err, err_len);
}

int cl_stat_finish_with(cl_stat *st, cl_command_queue q, cl_image_fn take,
                        void *ctx, float *out, char *err, size_t err_len) {
  if (st->n == 0 || (st->kind == 2 && st->n < 2)) {
    snprintf(err, err_len,
             "device statistic: %llu frame(s) folded, too few to finish",
             (unsigned long long)st->n);
    return QS_EINVAL;
  }
  cl_int cn = (cl_int)st->n;
  int rc = cl_status(clSetKernelArg(st->finish, 2, sizeof cn, &cn),
                     "setting the finish's arguments", err, err_len);
  if (!rc)
    rc =
        stat_launch(st->dev, st->kind, &st->global, &st->dev_s, &st->once_s, q,
                    st->finish, "esrrf_stat_finish", NULL, NULL, err, err_len);
  if (!rc)
    rc = take_image(st->dev, q, st->res, st->plane, take, ctx, out,
                    &st->dev_s, err, err_len);
  st->n = 0;
  return rc;
}

/* ------------------------------------------------ sliding window */

size_t cl_window_back_slots(int kind, size_t blocks) {
  return blocks < 3 ? 0 : cl_stat_slots(kind);
}

size_t cl_window_bytes(int kind, size_t plane, size_t blocks) {
  size_t slots = cl_stat_slots(kind),
         back = cl_window_back_slots(kind, blocks);
  size_t room = plane ? SIZE_MAX / sizeof(float) / plane : 0; /* planes */
  if (!slots || room < 1 + back || blocks > (room - 1 - back) / slots)
    return 0;
  return (blocks * slots + 1 + back) * plane * sizeof(float);
}

int cl_window_open(cl_window *w, cldev *d, int kind, size_t plane,
                   size_t blocks, size_t every, char *err, size_t err_len) {
  memset(w, 0, sizeof *w);
  w->dev = d;
  w->kind = kind;
  w->plane = plane;
  w->blocks = blocks;
  w->every = every;
  w->global = cl_stat_global(plane, CL_STAT_LANES);
  w->run_global = cl_stat_global(plane, CL_RUN_LANES);
  if (!cl_stat_slots(kind) || !plane || !blocks || !every ||
      every > INT32_MAX || blocks > INT32_MAX / every ||
      (kind == 2 && blocks * every < 2) ||
      !cl_window_bytes(kind, plane, blocks)) {
    snprintf(err, err_len,
             "device window: statistic %d over %zu block(s) of %zu frame(s) "
             "of %zu pixels is not possible",
             kind, blocks, every, plane);
    return QS_EINVAL;
  }
  w->count = calloc(blocks, sizeof *w->count);
  w->id = calloc(blocks, sizeof *w->id);
  w->hi = calloc(blocks, sizeof *w->hi);
  if (!w->count || !w->id || !w->hi) {
    snprintf(err, err_len, "device window: no memory for %zu blocks", blocks);
    return QS_ENOMEM;
  }
  size_t slots = cl_stat_slots(kind);
  int rc = stat_setup(
      d, kind, plane,
      (blocks * slots + cl_window_back_slots(kind, blocks)) * plane,
      "sliding window's block statistics", "esrrf_window_image", &w->fold,
      &w->image, &w->acc, &w->res, &w->once_s, err, err_len);
  /* the flip and back's growth (the program is the device's, built) */
  cl_program prog;
  cl_int e = CL_SUCCESS;
  cl_long pl = (cl_long)plane;
  if (!rc) rc = stat_program(d, kind, &prog, &w->once_s, err, err_len);
  static const char *const names[2] = {"esrrf_window_flip",
                                       "esrrf_window_grow"};
  cl_kernel *ks[2] = {&w->flip, &w->grow};
  for (int j = 0; j < 2 && !rc; j++) {
    *ks[j] = clCreateKernel(prog, names[j], &e);
    rc = cl_status(e, names[j], err, err_len);
    if (rc) break;
    e = clSetKernelArg(*ks[j], 0, sizeof w->acc, &w->acc);
    e |= clSetKernelArg(*ks[j], 1, sizeof w->res, &w->res);
    e |= clSetKernelArg(*ks[j], 3, sizeof pl, &pl);
    rc = cl_status(e, "setting the window's arguments", err, err_len);
  }
  return rc;
}

void cl_window_close(cl_window *w) {
  release_all(w->dev, &w->fold, &w->image, &w->acc, &w->res);
  if (w->flip) clReleaseKernel(w->flip);
  if (w->grow) clReleaseKernel(w->grow);
  w->flip = w->grow = NULL;
  free(w->count);
  free(w->id);
  free(w->hi);
  w->count = NULL;
  w->id = w->hi = NULL;
}

int cl_window_fold_at(cl_window *w, cl_command_queue q, cl_mem maps, size_t at,
                      size_t n, size_t b, size_t first, cl_event wait,
                      cl_event *keep, char *err, size_t err_len) {
  if (keep) *keep = NULL;
  if (!w->count || b >= w->blocks || (first && first != w->count[b]) ||
      first > w->every || n > w->every - first) {
    snprintf(err, err_len,
             "device window: cannot fold %zu frame(s) into block %zu of %zu "
             "after %zu frame(s) (it holds %zu of %zu)",
             n, b, w->blocks, first,
             w->count && b < w->blocks ? w->count[b] : (size_t)0, w->every);
    return QS_EINVAL;
  }
  if (n == 0) return QS_OK;
  /* a new block: a new number, holding only itself */
  if (!first) w->id[b] = w->hi[b] = ++w->started;
  int rc = fold_args(w->fold, maps, w->plane, at, n, first > 0,
                     b * cl_stat_slots(w->kind) * w->plane, err, err_len);
  if (!rc)
    rc = stat_launch(w->dev, w->kind, &w->global, &w->dev_s, &w->once_s, q,
                     w->fold, "esrrf_fold", wait, keep, err, err_len);
  /* a failed fold leaves the block's state unknown: it must start over */
  w->count[b] = rc ? 0 : first + n;
  return rc;
}

/* An update or a step ahead of it (the window kernels' arguments after
 * `blocks`), as window_plan decides it. */
typedef struct wplan {
  size_t f;      /* the oldest block's state, holding blocks i0 .. cov */
  uint64_t f_n;  /* its frames */
  long f2;       /* then a state holding the blocks after cov (−1 none) */
  uint64_t f2_n; /* its frames */
  int back;      /* then back */
  size_t r0, rn; /* then rn blocks of their own from state r0 (wrapping) */
  size_t grow;   /* the first `grow` of them join back (written) */
  int flip;      /* instead: the rn blocks from r0 become suffixes */
} wplan;

/* The plan for positions [0, len) of the update whose oldest block is o
 * (position j: block (o + j) mod blocks), all full, whose blocks are
 * numbered consecutively when `cons`: the oldest block's state, the next
 * state when it holds a merge (a suffix state written for a later
 * update), back where it follows (the suffixes end there), then blocks of
 * their own; a flip when nothing is merged yet and the suffixes can serve
 * later updates (`flip_from` positions or more). `grow`: the blocks of their own join back when it
 * is in use (or empty right after the suffixes), `grow_from` of them or
 * more, and a later update reads back (the next oldest still a suffix).
 * Without `cons` every block is used on its own. *done: the oldest state
 * already holds all of [0, len) (a prepare stops there). QS_EINVAL when a
 * block the positions need is held only inside a merge. */
static int window_plan(const cl_window *w, size_t o, size_t len, int cons,
                       size_t flip_from, size_t grow_from, wplan *p, int *done,
                       char *err, size_t err_len) {
  size_t nb = w->blocks;
  uint64_t i0 = w->id[o], end = i0 + len - 1;
  uint64_t cov = cons ? w->hi[o] : i0;
  memset(p, 0, sizeof *p);
  p->f = o;
  p->f2 = -1;
  p->f_n = (cov - i0 + 1) * w->every;
  *done = cons && cov >= end;
  if (*done) return QS_OK;
  uint64_t next = cov + 1; /* the first block not yet held */
  size_t at = (o + (size_t)(next - i0)) % nb;
  if (cons && w->hi[at] > next && w->hi[at] <= end) {
    p->f2 = (long)at;
    p->f2_n = (w->hi[at] - next + 1) * w->every;
    next = w->hi[at] + 1;
  }
  int adjoins = cons && w->stacks && next == w->s_hi + 1;
  if (adjoins && w->back_n && w->s_hi + w->back_n <= end) {
    p->back = 1;
    next += w->back_n;
  }
  p->r0 = (o + (size_t)(next - i0)) % nb;
  p->rn = (size_t)(end + 1 - next);
  for (size_t j = 0; j <= p->rn; j++) {
    size_t b = j < p->rn ? (p->r0 + j) % nb : o;
    if (w->hi[b] != w->id[b] && (b != o || !cons)) {
      snprintf(err, err_len,
               "device window: block %zu holds a merge with other blocks "
               "since an update of other blocks; the window combines again "
               "once its blocks are refolded",
               b);
      return QS_EINVAL;
    }
  }
  if (cons && cov == i0 && p->f2 < 0 && !p->back && len >= flip_from) {
    p->flip = 1;
    p->r0 = o;
    p->rn = len;
    p->f_n = 0;
    return QS_OK;
  }
  size_t o1 = (o + 1) % nb;
  int later = nb > 1 && w->id[o1] == i0 + 1 && w->id[o1] <= w->s_hi &&
              w->hi[o1] == w->s_hi;
  if (adjoins && (p->back || !w->back_n) && later &&
      cl_window_back_slots(w->kind, nb) && p->rn >= grow_from && p->rn > 0)
    p->grow = p->rn;
  return QS_OK;
}

/* Launches window kernel k (`name`) with arguments f .. to_out from a
 * (the first n of them) over the runs' work-items; waits. */
static int window_launch(cl_window *w, cl_command_queue q, cl_kernel k,
                         const char *name, const cl_int *a, int n, char *err,
                         size_t err_len) {
  cl_int ce = (cl_int)w->every, cb = (cl_int)w->blocks;
  cl_int e = clSetKernelArg(k, 2, sizeof ce, &ce);
  e |= clSetKernelArg(k, 4, sizeof cb, &cb);
  for (int i = 0; i < n; i++)
    e |= clSetKernelArg(k, 5 + (cl_uint)i, sizeof a[i], &a[i]);
  int rc = cl_status(e, "setting the window's arguments", err, err_len);
  if (!rc)
    rc = stat_launch(w->dev, w->kind, &w->run_global, &w->dev_s, &w->once_s,
                     q, k, name, NULL, NULL, err, err_len);
  return rc;
}

/* Runs plan p, its merge into out with `to_out` (else only back's growth
 * or the flip), then the bookkeeping: the states written hold their
 * merges, or after a failure are unknown (their counts 0: refold them).
 * Waits. The flip and the growth are kernels of their own; an update
 * that grows back itself (no step ahead did) grows it first, then merges
 * from the grown back, the one state it reads twice. */
static int window_run(cl_window *w, cl_command_queue q, size_t o, size_t len,
                      const wplan *p, int to_out, char *err, size_t err_len) {
  size_t nb = w->blocks;
  uint64_t i0 = w->id[o], end = i0 + len - 1;
  cl_int ev = (cl_int)w->every;
  cl_int a[10] = {(cl_int)p->f,
                  (cl_int)p->f_n,
                  (cl_int)p->f2,
                  (cl_int)p->f2_n,
                  (cl_int)(p->back ? w->back_n * w->every : 0),
                  (cl_int)p->r0,
                  (cl_int)p->rn,
                  (cl_int)p->grow,
                  p->flip,
                  to_out};
  int rc = QS_OK;
  if (p->flip) {
    rc = window_launch(w, q, w->flip, "esrrf_window_flip", a, 10, err,
                       err_len);
  } else {
    if (p->grow)
      rc = window_launch(w, q, w->grow, "esrrf_window_grow", a, 10, err,
                         err_len);
    /* the image's arguments are the first 7 (f .. rn): after a growth,
     * back holds the grown blocks and the rest follow it (none so far:
     * window_plan grows all of them) */
    a[4] += (cl_int)p->grow * ev;
    a[5] = (cl_int)((p->r0 + p->grow) % nb);
    a[6] = (cl_int)(p->rn - p->grow);
    if (!rc && to_out)
      rc = window_launch(w, q, w->image, "esrrf_window_image", a, 7, err,
                         err_len);
  }
  size_t conv = p->flip ? p->rn - 1 : 0; /* suffixes written */
  if (rc) {
    for (size_t j = 0; j < conv; j++)
      w->count[(o + j) % nb] = 0;
    if (p->grow) w->back_n = 0, w->stacks = 0;
    return rc;
  }
  w->reads += p->flip ? p->rn
              : (size_t)p->back + p->grow +
                    (to_out ? 1 + (p->f2 >= 0) + (p->back || p->grow) +
                                  p->rn - p->grow
                            : 0);
  w->writes += conv + (p->grow > 0);
  if (p->flip) {
    for (size_t j = 0; j < conv; j++)
      w->hi[(o + j) % nb] = end;
    w->stacks = 1;
    w->s_hi = end;
    w->back_n = 0;
    w->flips++;
  }
  if (p->grow) w->back_n += p->grow;
  return QS_OK;
}

/* Checks that the update from `oldest` can run: the positions [0, len)
 * full (the newest need not be for a prepare). */
static int window_check(const cl_window *w, size_t oldest, size_t len,
                        const char *what, char *err, size_t err_len) {
  if (oldest >= w->blocks || !w->count) {
    snprintf(err, err_len, "device window: no block %zu of %zu (%s)", oldest,
             w->blocks, w->count ? "the oldest" : "not open");
    return QS_EINVAL;
  }
  for (size_t j = 0; j < len; j++) {
    size_t b = (oldest + j) % w->blocks;
    if (w->count[b] != w->every) {
      snprintf(err, err_len,
               "device window: block %zu holds %zu of its %zu frames, too "
               "few to %s",
               b, w->count[b], w->every, what);
      return QS_EINVAL;
    }
  }
  return QS_OK;
}

/* 1 when the blocks at positions [0, len) from o are numbered
 * consecutively (in time order, as a stream's are). */
static int window_consecutive(const cl_window *w, size_t o, size_t len) {
  for (size_t j = 1; j < len; j++)
    if (w->id[(o + j) % w->blocks] != w->id[o] + j) return 0;
  return 1;
}

int cl_window_prepare(cl_window *w, cl_command_queue q, size_t oldest,
                      char *err, size_t err_len) {
  size_t len = w->blocks - 1;
  int rc = window_check(w, oldest, len, "prepare", err, err_len);
  if (rc || len == 0) return rc;
  /* blocks not numbered in time order, or one merged away: nothing to
   * prepare, the update combines them (or says why it cannot) */
  wplan p;
  int done;
  char spare[8];
  if (!window_consecutive(w, oldest, len) ||
      window_plan(w, oldest, len, 1, 2, 1, &p, &done, spare, sizeof spare) ||
      done)
    return QS_OK;
  if (!p.flip && !p.grow) return QS_OK;
  return window_run(w, q, oldest, len, &p, 0, err, err_len);
}

int cl_window_finish(cl_window *w, cl_command_queue q, size_t oldest,
                     float *out, char *err, size_t err_len) {
  return cl_window_finish_with(w, q, oldest, NULL, NULL, out, err, err_len);
}

int cl_window_finish_with(cl_window *w, cl_command_queue q, size_t oldest,
                          cl_image_fn take, void *ctx, float *out, char *err,
                          size_t err_len) {
  size_t len = w->blocks;
  int rc = window_check(w, oldest, len, "finish", err, err_len);
  wplan p;
  int done;
  /* a flip only where its suffixes serve a later update (3 blocks or
   * more); back grows here only when no prepare did it (two blocks of
   * their own or more) */
  if (!rc)
    rc = window_plan(w, oldest, len, window_consecutive(w, oldest, len), 3, 2,
                     &p, &done, err, err_len);
  if (!rc) rc = window_run(w, q, oldest, len, &p, 1, err, err_len);
  if (!rc)
    rc = take_image(w->dev, q, w->res, w->plane, take, ctx, out, &w->dev_s,
                    err, err_len);
  return rc;
}
#endif
