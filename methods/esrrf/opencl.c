/* opencl.c — the OpenCL implementation of eSRRF (rgc's is in
 * methods/rgc/rgc.c).
 *
 * eSRRF's chained path keeps everything on the device: one upload of the
 * raw frames, the half-pixel grids of the unit gradient (esrrf.cl, no ×2M
 * images and no Roberts buffer; separable: column sums, then the grid,
 * from tap tables made once per call), the ×M intensity's column sums,
 * then RGC (esrrf.cl: the fused structure, per-phase candidate lists with
 * fused_vec's first-order model uploaded once per call, two native-width
 * vectors of pixels of a phase pair per work-item, borders by masks; it finishes the intensity
 * on the pixels it weights) into a batch of maps, and with a temporal
 * statistic the fold of those maps into device accumulators (cl_stat.c,
 * esrrf_stat.cl): the only download is each timepoint's image,
 * 4·R·M·C·M bytes, and the host applies the macro-pixel correction to it.
 * With temporal=none the maps come down batch by batch (esrrf_drive).
 * Device memory holds one batch and the accumulators. The next batch's
 * frames upload on a second queue while this one computes. A frame needs
 * 4·R·C·2 + 4·C·max(2(2R + 1), R·M) + 8·(2R + 1)·2·gw + 4·R·C·M²
 * (gw ≈ C + 32 + the window, rounded up to 32: cl_grid_layout)
 * ≈ 4·R·C·(10 + max(4, M) + M²) bytes,
 * its input twice for the overlap (NanoPyx: 4·R·C·(3 + 10·M²)), the
 * statistic 4·R·M·C·M·(slots + 1) bytes once; batches are sized once from
 * the device's memory and largest allocation (cl_budget_frames), never by
 * retrying. */
#include "qs_config.h"

#if QS_HAVE_OPENCL
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cl/clrt.h"
#include "engine/timer.h"
#include "methods/shared/cl_frames.h"
#include "methods/esrrf/cl_stat.h"
#include "methods/esrrf/sink.h"
#include "methods/esrrf/esrrf.h"
#include "methods/shift_magnify/catmull_rom.h"
#include "methods/rgc/rgc_fused.h"
#include "methods/methods.h"

/* A batch holds at most this many bytes on the device (unless one frame
 * needs more): long stacks stream in batches of one size, so memory does
 * not grow with the frames, and a device that computes in host memory
 * does not take a large share of it; it still gives each launch millions
 * of work-items at 64 × 64. A device that shares the host's cores gets
 * half: a cancelled call waits for the batch in flight, and 64 MiB of
 * small frames was 70-95 ms of work on each of PoCL's two threads here
 * (0.14-0.19 CPU s, against the 100 ms a cancellation may take; 32 MiB:
 * 0.06-0.11 s, the 20 x 256^2 call about 5 % slower, within this VM's
 * spread; 16 MiB: 13 % slower, the launches' own cost). */
#define ESRRF_CL_BATCH_BYTES ((size_t)64 << 20)
#define ESRRF_CL_BATCH_BYTES_HOST ((size_t)32 << 20)

/* Most pixels of one phase pair a work-item of esrrf_rgc computes: two
 * vectors of esrrf.cl's ESRRF_LANES (a build option: the device's native
 * float vector width, 4 to 16, cl_setup); also the padding of the tables
 * indexed by lane (esrrf.cl's ESRRF_PAD). */
#define ESRRF_CL_MAX_LANES 32

/* ---------------------------------------------------------------- eSRRF */

enum { B_IN, B_VS, B_GRID, B_OUT, B_COUNT };
/* In launch order: the grid's column sums and grid, the intensity's
 * column sums (weighting only), RGC with the intensity's second step. */
enum { K_GVS, K_GRID, K_MVS, K_RGC, K_COUNT };

static const char *const KERNEL_NAMES[K_COUNT] = {"esrrf_gvsum", "esrrf_grid",
                                                  "esrrf_magv", "esrrf_rgc"};
/* esrrf.cl: exact division and square root (pixel centres), no
 * contractions but the kernel's own (ESRRF_MAD). */
#define ESRRF_CL_OPTIONS "-cl-fp32-correctly-rounded-divide-sqrt"

/* The grid's layout (esrrf.cl, above esrrf_taps): lp slots left of column 0 per
 * parity part, then the columns, then copies of the clamped last one for
 * the lanes and window taps past it; gw slots a part, a multiple of the
 * widest vector (esrrf_grid computes and stores whole vectors of slots). */
static void cl_grid_layout(const esrrf_geom *g, int *gw, int *lp) {
  int win = g->k.end - g->k.start;
  *lp = win / 2 + 2;
  *gw = *lp + g->cols + ESRRF_CL_MAX_LANES + win / 2 + 2;
  *gw = (*gw + ESRRF_CL_MAX_LANES - 1) / ESRRF_CL_MAX_LANES *
        ESRRF_CL_MAX_LANES;
}

/* Bytes per frame of each device buffer. */
static void cl_frame_bytes(const esrrf_geom *g, size_t *per_frame) {
  per_frame[B_IN] = 4 * (size_t)g->rows * (size_t)g->cols;
  /* column sums, shared by the grid (two planes of 2R + 1 rows) and the
   * intensity (R·M rows), which run one after the other */
  size_t vs_rows = 2 * (2 * (size_t)g->rows + 1);
  if (g->weight && (size_t)g->rows_m > vs_rows) vs_rows = (size_t)g->rows_m;
  per_frame[B_VS] = 4 * vs_rows * (size_t)g->cols;
  /* planes Gx/|G|, Gy/|G|; rows of two parts of gw slots */
  int gw, lp;
  cl_grid_layout(g, &gw, &lp);
  per_frame[B_GRID] = 8 * (2 * (size_t)g->rows + 1) * 2 * (size_t)gw;
  per_frame[B_OUT] = 4 * g->plane;
}

/* Frames per batch: what the device holds, at most the batch bytes above
 * and at most a timepoint (esrrf_drive never asks for more). */
static int cl_batch(const qs_method_call *c, const esrrf_geom *g,
                    size_t *batch, char *err, size_t err_len) {
  /* the buffers, the second input slot, the statistic's accumulators and
   * timepoint image (fixed) */
  size_t per_frame[B_COUNT + 3] = {0}, fixed[B_COUNT + 3] = {0}, sum = 0;
  cl_frame_bytes(g, per_frame);
  per_frame[B_COUNT] = per_frame[B_IN];
  if (g->kind != TEMPORAL_NONE) {
    fixed[B_COUNT + 1] = cl_stat_slots(g->kind) * g->plane * sizeof(float);
    fixed[B_COUNT + 2] = g->plane * sizeof(float);
  }
  for (int k = 0; k <= B_COUNT; k++)
    sum += per_frame[k];
  size_t wanted = g->kind == TEMPORAL_NONE ? g->frames : g->fpt;
  const cldev_info *about = cldev_about(c->device);
  size_t cap = about->shares_host_cores ? ESRRF_CL_BATCH_BYTES_HOST
                                        : ESRRF_CL_BATCH_BYTES;
  if (cap / sum < wanted) wanted = cap / sum ? cap / sum : 1;
  return cl_budget_frames(about, per_frame, fixed,
                          B_COUNT + 3, wanted, batch, err, err_len);
}

int esrrf_cl_probe(const qs_method_call *c, char *why, size_t why_len) {
  if (!c || !c->device) {
    snprintf(why, why_len, "no OpenCL device given");
    return QS_EUNAVAIL;
  }
  if (!c->n_in || !c->in || !c->in[0].frames) return QS_OK;
  esrrf_geom g;
  size_t batch;
  esrrf_geom_of(c, &g);
  return cl_batch(c, &g, &batch, why, why_len) ? QS_EUNAVAIL : QS_OK;
}

/* Input frames live in two device buffers: while the chain runs on one
 * batch (compute queue), the next batch uploads into the other (upload
 * queue), where the device can overlap them. */
typedef struct slot {
  cl_mem mem;
  size_t f0, n;   /* frames it holds or is receiving (n 0: none) */
  cl_event up;    /* their upload, until a batch consumes it */
  cl_event freed; /* the last kernel that read it */
} slot;

typedef struct chained {
  const qs_method_call *c;
  cldev *dev;             /* the device (c outlives no call) */
  esrrf_geom g;
  cl_command_queue q, qu; /* compute, upload */
  cl_kernel k[K_COUNT];
  cl_mem buf[B_COUNT]; /* B_IN unused: the slots hold the input */
  slot in[2];
  int next; /* slot for an upload nobody prepared */
  size_t batch, per_frame[B_COUNT];
  size_t global[K_COUNT][2]; /* per frame; a launch spans its frames */
  cl_mem vcand, vcand_at; /* the phase pairs' candidate samples */
  cl_mem vrow, vcls;      /* their per-row values (cl_row_tables) */
  cl_mem ex;              /* per column phase, its pixels' e_x and
                           * intensity taps (cl_lane_table) */
  int lanes;              /* esrrf.cl's ESRRF_LANES */
  cl_mem taps, gtaps;     /* the intensity's and the grid's row then column
                           * taps */
  cl_mem stab;            /* the grid's slots' column taps (cl_slot_taps) */
  size_t cand_bytes;      /* both tables */
  cl_stat st;             /* the statistic (not with temporal=none) */
  cl_event ev[K_COUNT];   /* the last chain's kernels (cl_chain_done) */
  cl_event pend[K_COUNT + 2]; /* a unit enqueued, not yet collected: its
                                 kernels, upload and fold (cl_collect) */
  int ran;                /* the slot the last chain read, -1: none */
  double dev_s, once;
} chained;

static void event_drop(chained *s, cl_event *ev) {
  if (!*ev) return;
  s->dev_s += cl_event_seconds(*ev);
  clReleaseEvent(*ev);
  *ev = NULL;
}

/* Enqueues kernel i over its global size for n frames after `wait` (may
 * be NULL), booking a new size's first launch (the device compiles for
 * it) as one-time cost. The kernels span the n frames at hand, not a whole
 * batch: the device shares the work-groups out over the whole range, and
 * on PoCL a worker given only the frames past n (work-items that return
 * at once) sat idle, doubling the wall time of a one-frame push and of a
 * call's short last batch (each n is a size of its own: its first launch
 * compiles, once). */
static int cl_launch(chained *s, int i, size_t n, cl_event wait,
                     cl_event *ev) {
  const qs_method_call *c = s->c;
  size_t global[3] = {s->global[i][0], s->global[i][1], n};
  int first = cldev_first_launch(c->device, KERNEL_NAMES[i], global, 3);
  int64_t t0 = qs_timer_ns();
  int rc = cl_status(clEnqueueNDRangeKernel(s->q, s->k[i], 3, NULL,
                                            global, NULL, wait ? 1 : 0,
                                            wait ? &wait : NULL, ev),
                     KERNEL_NAMES[i], c->err, c->err_len);
  if (!rc && first) {
    rc = cl_status(clFinish(s->q), KERNEL_NAMES[i], c->err, c->err_len);
    double wall = (double)(qs_timer_ns() - t0) * 1e-9;
    double run = cl_event_seconds(*ev);
    if (wall > run) s->once += wall - run;
  }
  return rc;
}

/* Starts the upload of frames [f0, f0 + n) into slot i once the kernels
 * that read its previous frames are done. */
static int cl_upload(chained *s, int i, size_t f0, size_t n) {
  const qs_method_call *c = s->c;
  slot *sl = &s->in[i];
  const float *src = c->in[0].data + f0 * s->per_frame[B_IN] / 4;
  event_drop(s, &sl->up);
  cl_event wait = sl->freed;
  int rc = cl_status(
      clEnqueueWriteBuffer(s->qu, sl->mem, CL_FALSE, 0, n * s->per_frame[B_IN],
                           src, wait ? 1 : 0, wait ? &wait : NULL, &sl->up),
      "uploading frames", c->err, c->err_len);
  if (wait) {
    clReleaseEvent(wait);
    sl->freed = NULL;
  }
  if (!rc) cldev_transfer(c->device, n * s->per_frame[B_IN], 0);
  if (!rc)
    rc = cl_status(clFlush(s->qu), "uploading frames", c->err, c->err_len);
  sl->f0 = f0;
  sl->n = rc ? 0 : n;
  return rc;
}

/* After the chain's maps were consumed (or a failure waited for): books
 * the device time of the chain's commands and releases them. */
static void cl_chain_done(chained *s) {
  if (s->ran >= 0) event_drop(s, &s->in[s->ran].up);
  for (int k = 0; k < K_COUNT; k++)
    event_drop(s, &s->ev[k]);
  s->ran = -1;
}

/* Enqueues the chain for frames [f0, f0 + n) into the maps buffer: the
 * frames' upload (started by the previous batch, if it guessed right), the
 * kernels, the next batch's upload. *done receives the RGC kernel's event
 * (valid until cl_chain_done). */
static int cl_chain(chained *s, size_t f0, size_t n, cl_event *done) {
  cl_chain_done(s);
  const qs_method_call *c = s->c;
  cl_event ev[K_COUNT] = {NULL};
  cl_int nf = (cl_int)n;
  int i = s->in[0].n == n && s->in[0].f0 == f0   ? 0
          : s->in[1].n == n && s->in[1].f0 == f0 ? 1
                                                 : -1;
  int rc = QS_OK;
  *done = NULL;
  if (i < 0) {
    i = s->next;
    rc = cl_upload(s, i, f0, n);
  }
  slot *sl = &s->in[i];
  cl_mem in = sl->mem;
  rc = rc ? rc
          : cl_status(clSetKernelArg(s->k[K_GVS], 0, sizeof in, &in) |
                          clSetKernelArg(s->k[K_MVS], 0, sizeof in, &in),
                      "setting the input frames", c->err, c->err_len);
  for (int k = 0; !rc && k < K_COUNT; k++) {
    if (k == K_MVS && !s->g.weight) continue;
    rc = cl_status(clSetKernelArg(s->k[k], k == K_RGC ? 7 : 2, sizeof nf, &nf),
                   "setting the frame count", c->err, c->err_len);
    if (!rc)
      rc = cl_launch(s, k, n, k == K_GVS ? sl->up : NULL, &ev[k]);
  }
  /* the chain is queued: this slot is free after it, and its frames are
   * consumed */
  if (!rc) {
    clRetainEvent(ev[K_RGC]);
    sl->freed = ev[K_RGC];
    sl->n = 0;
    s->next = 1 - i;
    size_t f1 = f0 + n, n1 = esrrf_batch_at(&s->g, s->batch, f1);
    if (n1) rc = cl_upload(s, 1 - i, f1, n1);
  }
  if (!rc) *done = ev[K_RGC];
  /* their profiling times are read once the caller has waited
   * (cl_chain_done) */
  s->ran = i;
  memcpy(s->ev, ev, sizeof ev);
  return rc;
}

/* Waits for both queues after a failure, so that nothing still runs on
 * memory the caller is about to release. */
static void cl_quiesce(chained *s) {
  clFinish(s->q);
  clFinish(s->qu);
}

/* The maps of frames [f0, f0 + n): the chain, one download. */
static int cl_maps(void *state, size_t f0, size_t n, float *dst) {
  chained *s = state;
  const qs_method_call *c = s->c;
  cl_event done = NULL, rd = NULL;
  int rc = cl_chain(s, f0, n, &done);
  size_t bytes = n * s->per_frame[B_OUT];
  if (!rc)
    rc = cl_status(clEnqueueReadBuffer(s->q, s->buf[B_OUT], CL_TRUE, 0, bytes,
                                       dst, 0, NULL, &rd),
                   "reading the maps", c->err, c->err_len);
  if (!rc) cldev_transfer(c->device, 0, bytes);
  if (rc) cl_quiesce(s);
  cl_chain_done(s);
  event_drop(s, &rd);
  return rc;
}

/* A call with a temporal statistic, all on the device: per timepoint, the
 * chain's maps of each batch fold into the device accumulators; the
 * timepoint's image is the only download (4 · R·M · C·M bytes); the
 * macro-pixel correction runs on the host on that image (one pass over a
 * map that is already in host memory: cheaper there than a device
 * reduction and its launches). */
/* Commands of one unit of the pipeline: a chain's kernels, its upload,
 * and the fold (or ring copy) after it. */
#define UNIT_EVENTS (K_COUNT + 2)

/* The last chain's kernels and upload leave it for ev (cl_chain_done
 * would book them before they complete): the collector owns them. */
static void cl_unit_events(chained *s, cl_event *ev) {
  memcpy(ev, s->ev, sizeof s->ev);
  memset(s->ev, 0, sizeof s->ev);
  if (s->ran >= 0) {
    ev[K_COUNT] = s->in[s->ran].up;
    s->in[s->ran].up = NULL;
  }
  s->ran = -1;
}

/* Waits for the pending unit, checks its commands and books their device
 * time. QS_ECL with a message (err may be NULL) when the device failed one
 * of them. */
static int cl_collect(chained *s, char *err, size_t err_len) {
  int rc = QS_OK;
  for (int k = 0; k < UNIT_EVENTS; k++) {
    if (!s->pend[k]) continue;
    cl_int st = CL_COMPLETE;
    if (!rc && clWaitForEvents(1, &s->pend[k]) != CL_SUCCESS) st = -1;
    if (!rc && st == CL_COMPLETE)
      clGetEventInfo(s->pend[k], CL_EVENT_COMMAND_EXECUTION_STATUS,
                     sizeof st, &st, NULL);
    if (!rc && st < 0) {
      if (err)
        snprintf(err, err_len,
                 "esrrf: the OpenCL device failed on earlier frames (status "
                 "%d)",
                 (int)st);
      rc = QS_ECL;
    }
    event_drop(s, &s->pend[k]);
  }
  return rc;
}

/* Folds the maps of frames [t0, t1) into the device accumulators, a batch
 * at a time without waiting for it: each batch's chain and fold are
 * enqueued, then the batch before it is collected, so the device goes
 * from one batch to the next without a round trip through the host (at
 * most two batches in flight: the chain's two input slots). */
static int cl_fold_frames(chained *s, size_t t0, size_t t1) {
  const qs_method_call *c = s->c;
  int rc = QS_OK;
  for (size_t f = t0, n; !rc && f < t1; f += n) {
    cl_event done = NULL, ev[UNIT_EVENTS] = {NULL};
    n = esrrf_batch_at(&s->g, s->batch, f);
    rc = cl_chain(s, f, n, &done);
    cl_unit_events(s, ev);
    if (!rc)
      rc = cl_stat_fold_at(&s->st, s->q, s->buf[B_OUT], 0, n, done,
                           &ev[K_COUNT + 1], c->err, c->err_len);
    if (!rc) rc = cl_status(clFlush(s->q), "esrrf", c->err, c->err_len);
    int prc = cl_collect(s, c->err, c->err_len);
    memcpy(s->pend, ev, sizeof ev);
    if (!rc) rc = prc;
    if (!rc && method_advance(c, n, s->g.frames)) rc = QS_ECANCELLED;
  }
  int prc = cl_collect(s, c->err, c->err_len);
  if (!rc) rc = prc;
  if (rc) cl_quiesce(s);
  return rc;
}

/* A timepoint's image on its way from the device (cl_image_fn): the
 * macro-pixel correction, if asked for, from the device's image into the
 * caller's, on the call's pool (serially without a call: c NULL); else a
 * copy. */
typedef struct cl_take {
  const qs_method_call *c;
  const esrrf_geom *g;
} cl_take;

static int cl_take_image(void *ctx, const float *img, float *out) {
  const cl_take *t = ctx;
  return temporal_mpc_from(t->c, img, out, (size_t)t->g->rows_m,
                           (size_t)t->g->cols_m, t->g->mpc ? t->g->mag : 0);
}

static int cl_drive_device(chained *s) {
  const qs_method_call *c = s->c;
  const esrrf_geom *g = &s->g;
  float *out = c->out[0].data;
  cl_take take = {c, g};
  int rc = QS_OK;
  for (size_t t0 = 0, tp = 0; !rc && t0 < g->frames; t0 += g->fpt, tp++) {
    size_t t1 = t0 + g->fpt < g->frames ? t0 + g->fpt : g->frames;
    rc = cl_fold_frames(s, t0, t1);
    if (!rc)
      rc = cl_stat_finish_with(&s->st, s->q, cl_take_image, &take,
                               out + tp * g->plane, c->err, c->err_len);
  }
  if (rc) cl_quiesce(s);
  return rc;
}

/* Uploads a candidate list (cb bytes) and its offsets (ab bytes) into new
 * read-only buffers, counted with the call's fixed tables. */
static int cl_lists_up(chained *s, void *cand, size_t cb, cl_mem *mc, void *at,
                       size_t ab, cl_mem *ma) {
  const qs_method_call *c = s->c;
  int rc = cldev_buffer(c->device, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, cb,
                        cand, "candidate samples", mc, c->err, c->err_len);
  if (!rc)
    rc = cldev_buffer(c->device, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, ab,
                      at, "candidate offsets", ma, c->err, c->err_len);
  if (!rc) {
    s->cand_bytes += cb + ab;
    cldev_transfer(c->device, cb + ab, 0);
  }
  return rc;
}

/* One row's or column's taps, as esrrf.cl's esrrf_taps: four, those past
 * the valid ones with weight 0 at a valid index. */
typedef struct cl_taps {
  cl_int at[4];
  cl_float w[4];
} cl_taps;

static void cl_taps_of(const cr_taps *ct, cl_taps *t) {
  for (int k = 0; k < 4; k++) {
    t->at[k] = ct->first + (k < ct->n ? k : 0);
    t->w[k] = k < ct->n ? (float)ct->w[k] : 0.0f;
  }
}

/* What esrrf_rgc reads per lane (esrrf.cl, its `lane` table): per column
 * phase px, for its pixels x = px + k·M, k = 0, 1, ... padded to a
 * multiple of ESRRF_CL_MAX_LANES, seven planes: e_x (the centre
 * rounding), the four Catmull-Rom weights of x's ×M intensity
 * (cl_taps_of's, the shift_magnify method's), the first of its four input
 * columns as a float (exact), −1 where fewer than four are valid (the
 * kernel then takes the tap table), and 1 where the vector of lanes
 * starting at k has consecutive first columns, all valid (the kernel's
 * vector intensity; decided here, as a vector test costs more than the
 * sums in PoCL's build). Uploaded once per call with the candidate
 * lists. */
static int cl_lane_table(chained *s) {
  const esrrf_geom *g = &s->g;
  const qs_method_call *c = s->c;
  size_t m = (size_t)g->mag;
  size_t kp = ((size_t)g->cols + ESRRF_CL_MAX_LANES - 1) /
              ESRRF_CL_MAX_LANES * ESRRF_CL_MAX_LANES;
  size_t plane = m * kp, bytes = 7 * plane * sizeof(float);
  size_t lanes = (size_t)s->lanes;
  float *t = calloc(7 * plane, sizeof *t);
  if (!t) {
    snprintf(c->err, c->err_len, "esrrf: no memory for the lane table");
    return QS_ENOMEM;
  }
  for (size_t px = 0; px < m; px++)
    for (size_t k = 0; k < kp; k++) {
      size_t at = px * kp + k;
      int x = (int)(px + k * m);
      t[at] = rgc_shift((int)px, x, g->mag);
      t[5 * plane + at] = -1;
      if (!g->weight || x >= g->cols_m) continue;
      cr_taps ct;
      cl_taps ts;
      cr_taps_at(cr_source(x, (float)g->mag, 0.0f), g->cols, &ct);
      cl_taps_of(&ct, &ts);
      for (int j = 0; j < 4; j++)
        t[(size_t)(1 + j) * plane + at] = ts.w[j];
      if (ct.n == 4) t[5 * plane + at] = (float)ct.first;
    }
  for (size_t px = 0; px < m; px++)
    for (size_t k = 0; k + lanes <= kp; k++) {
      const float *f0 = t + 5 * plane + px * kp + k;
      int regular = f0[0] >= 0;
      for (size_t i = 1; i < lanes; i++)
        regular &= f0[i] == f0[0] + (float)i;
      t[6 * plane + px * kp + k] = (float)regular;
    }
  int rc = cldev_buffer(c->device, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                        bytes, t, "lane table", &s->ex, c->err, c->err_len);
  if (!rc) {
    s->cand_bytes += bytes;
    cldev_transfer(c->device, bytes, 0);
  }
  free(t);
  return rc;
}

/* One candidate sample of a phase pair, as esrrf.cl's esrrf_vcand, and
 * what only the host keeps of it: its y offset, weight, 1/d and their
 * slopes along y, which cl_row_tables folds into each row's values. */
typedef struct cl_vcand {
  cl_int row, col, off;
  cl_float dx0, wa, qa;
} cl_vcand;

typedef struct cl_vcand_y {
  float dy0, w0, id0, wb, qb;
} cl_vcand_y;

/* The per-row candidate values (esrrf.cl, esrrf_rgc's `vrow`): an output
 * row y of phase py = y mod M reads the candidates of the phase pairs
 * (py, ·) with e_y = rgc_shift(py, y, M), the centre rounding of its row,
 * as dy = dy0 + e_y, w0 + wb·e_y, id0 + qb·e_y, in float (no contraction:
 * the kernel computed the same three values per work-item before). Rows
 * share a block where their e_y is equal (a few distinct values per
 * phase); vcls[y] is the block's offset less 3·(the first candidate of
 * py's pairs), so candidate e of row y is at vrow[vcls[y] + 3e]. */
static int cl_row_tables(chained *s, const cl_vcand_y *cy, const cl_int *at) {
  const esrrf_geom *g = &s->g;
  const qs_method_call *c = s->c;
  int m = g->mag, rows_m = g->rows_m;
  cl_int *cls = malloc((size_t)rows_m * sizeof *cls);
  float *ey = malloc((size_t)rows_m * sizeof *ey); /* distinct, per py */
  int *first = malloc((size_t)rows_m * sizeof *first);
  size_t cap = 0, n = 0;
  float *t = NULL;
  int rc = cls && ey && first ? QS_OK : QS_ENOMEM;
  for (int py = 0; !rc && py < m; py++) {
    int e0 = at[2 * py * m], e1 = at[2 * (py + 1) * m], nd = 0;
    for (int y = py; !rc && y < rows_m; y += m) {
      float e = rgc_shift(py, y, m);
      int k = 0;
      while (k < nd && ey[k] != e) k++;
      if (k == nd) { /* a new block */
        size_t need = n + 3 * (size_t)(e1 - e0);
        if (need > cap) {
          size_t nc = need > 2 * cap ? need : 2 * cap;
          float *nt = realloc(t, nc * sizeof *t);
          if (!nt) {
            rc = QS_ENOMEM;
            break;
          }
          t = nt;
          cap = nc;
        }
        ey[nd] = e;
        first[nd++] = (int)n;
        for (int q = e0; q < e1; q++) {
          float pw = cy[q].wb * e, pq = cy[q].qb * e;
          t[n++] = cy[q].dy0 + e;
          t[n++] = cy[q].w0 + pw;
          t[n++] = cy[q].id0 + pq;
        }
      }
      cls[y] = first[k] - 3 * e0;
    }
  }
  if (rc)
    snprintf(c->err, c->err_len, "esrrf: no memory for the row tables");
  if (!rc)
    rc = cl_lists_up(s, t ? t : (void *)cls, (n ? n : 1) * sizeof *t,
                     &s->vrow, cls, (size_t)rows_m * sizeof *cls, &s->vcls);
  free(t);
  free(cls);
  free(ey);
  free(first);
  return rc;
}

/* The candidate lists (esrrf.cl, esrrf_rgc): per phase pair, from its
 * first pixel (row py, column px; a pixel k macro-pixels further then has
 * the offset c_rep + k − c_x, exact, to add), in the reference's window
 * order, the sure candidates (distance below tSO minus the centre-rounding
 * slack) then those near the disk's edge, each with its grid position
 * (row, column, and row·2gw + slot in the grid's layout), offsets, weight
 * (the reference's float), 1/d and their slopes (fused_vec.h's model,
 * w' = w·(4/d − 8d/tSS); the y parts go to cl_row_tables); d = 0 dropped
 * (weight 0,
 * and every pixel of the pair has d = 0 there up to its centre rounding).
 * Offsets at[2·ph] (sure), at[2·ph + 1] (near), at[2·ph + 2] (end).
 * Uploaded once per call (counted: s->cand_bytes). */
static int cl_vcandidates(chained *s) {
  const esrrf_geom *g = &s->g;
  const qs_method_call *c = s->c;
  size_t m = (size_t)g->mag, win = (size_t)(g->k.end - g->k.start);
  cl_vcand *cand = malloc(m * m * win * win * sizeof *cand);
  cl_vcand_y *cy = malloc(m * m * win * win * sizeof *cy);
  cl_int *at = malloc((2 * m * m + 1) * sizeof *at);
  int rc = cand && cy && at ? QS_OK : QS_ENOMEM;
  if (rc)
    snprintf(c->err, c->err_len, "esrrf: no memory for the candidate lists");
  double side = g->rows > g->cols ? g->rows : g->cols;
  float slack = (float)(4 * side * FLT_EPSILON + 1e-6);
  float tso = g->k.tso;
  int gw, lp;
  cl_grid_layout(g, &gw, &lp);
  cl_int n = 0;
  for (size_t ph = 0; !rc && ph < m * m; ph++) {
    float yc = rgc_center((int)(ph / m), g->mag);
    float xc = rgc_center((int)(ph % m), g->mag);
    int by = (int)(RGC_GM * yc), bx = (int)(RGC_GM * xc);
    for (int pass = 0; pass < 2; pass++) {
      at[2 * ph + (size_t)pass] = n;
      for (int j = g->k.start; j < g->k.end; j++)
        for (int i = g->k.start; i < g->k.end; i++) {
          float dy = (float)(by + j) / RGC_GM - yc;
          float dx = (float)(bx + i) / RGC_GM - xc;
          float d = sqrtf(dx * dx + dy * dy);
          if (d == 0 || d > tso + slack || (d >= tso - slack) != pass)
            continue;
          float w0 = rgc_weight(d, g->k.tss);
          rgc_lin l =
              rgc_lin_at(dx, dy, d, w0, rgc_weight_slope(w0, d, g->k.tss));
          int hy = by + j, hx = bx + i, odd = hx & 1;
          cl_int at_slot = odd * gw + lp + (hx - odd) / 2;
          cy[n] = (cl_vcand_y){dy, l.w0, l.id0, l.wb, l.qb};
          cand[n++] = (cl_vcand){hy, hx, hy * 2 * gw + at_slot, dx, l.wa, l.qa};
        }
    }
  }
  if (!rc) at[2 * m * m] = n;
  if (!rc)
    rc = cl_lists_up(s, cand, (size_t)(n ? n : 1) * sizeof *cand, &s->vcand,
                     at, (2 * m * m + 1) * sizeof *at, &s->vcand_at);
  if (!rc) rc = cl_row_tables(s, cy, at);
  free(cand);
  free(cy);
  free(at);
  return rc ? rc : cl_lane_table(s);
}

/* What esrrf_grid reads per slot (esrrf.cl): per parity part p of a grid
 * row, for slot s (grid column b = 2(s − lp) + p clamped to [0, 2C], the
 * padding's clamped copies included), eight planes of gw floats: the four
 * input columns of b's taps (exact in float), then their weights; then
 * per chunk of ESRRF_LANES slots (both parts) its kind; ct: the grid
 * columns' taps (cl_taps_of). */
static int cl_slot_taps(chained *s, const cl_taps *ct) {
  const esrrf_geom *g = &s->g;
  const qs_method_call *c = s->c;
  int gw, lp;
  cl_grid_layout(g, &gw, &lp);
  size_t lanes = (size_t)s->lanes, chunks = (size_t)gw / lanes;
  size_t n = 2 * 8 * (size_t)gw + 2 * chunks;
  float *t = malloc(n * sizeof *t);
  if (!t) {
    snprintf(c->err, c->err_len, "esrrf: no memory for the slot taps");
    return QS_ENOMEM;
  }
  for (int p = 0; p < 2; p++)
    for (int q = 0; q < gw; q++) {
      int b = 2 * (q - lp) + p;
      b = b < 0 ? 0 : b > 2 * g->cols ? 2 * g->cols : b;
      float *o = t + (size_t)p * 8 * (size_t)gw + (size_t)q;
      for (int j = 0; j < 4; j++) {
        o[(size_t)j * (size_t)gw] = (float)ct[b].at[j];
        o[(size_t)(4 + j) * (size_t)gw] = ct[b].w[j];
      }
    }
  /* each chunk's kind: 1 consecutive columns for every tap, 2 one column
   * in every slot, 0 neither */
  for (size_t k = 0; k < 2 * chunks; k++) {
    const float *o = t + k / chunks * 8 * (size_t)gw + k % chunks * lanes;
    int regular = 1, uniform = 1;
    for (size_t j = 0; j < 8; j++)
      for (size_t i = 1; i < lanes; i++) {
        float v0 = o[j * (size_t)gw], v = o[j * (size_t)gw + i];
        regular &= j >= 4 || v == v0 + (float)i;
        uniform &= v == v0;
      }
    t[16 * (size_t)gw + k] = uniform ? 2.0f : regular ? 1.0f : 0.0f;
  }
  int rc = cldev_buffer(c->device, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                        n * sizeof *t, t, "grid slot taps", &s->stab, c->err,
                        c->err_len);
  if (!rc) {
    s->cand_bytes += n * sizeof *t;
    cldev_transfer(c->device, n * sizeof *t, 0);
  }
  free(t);
  return rc;
}

/* The tap tables, uploaded once per call (counted with the candidate
 * tables): for the grid, its 2R + 1 rows then 2C + 1 columns (the
 * half-pixel taps, the last at the reference's clamped index, as fused's
 * plan); with weighting, the ×M intensity's output rows then columns
 * (cr_taps_at at the coordinate the shift_magnify method samples, weights
 * in double rounded to float). */
static int cl_tap_tables(chained *s) {
  const esrrf_geom *g = &s->g;
  const qs_method_call *c = s->c;
  size_t gr = 2 * (size_t)g->rows + 1, gc = 2 * (size_t)g->cols + 1;
  size_t ni = g->weight ? (size_t)g->rows_m + (size_t)g->cols_m : 0;
  cl_taps *t = calloc(gr + gc + ni, sizeof *t);
  if (!t) {
    snprintf(c->err, c->err_len, "esrrf: no memory for the tap tables");
    return QS_ENOMEM;
  }
  float m = (float)g->mag;
  for (size_t i = 0; i < gr + gc; i++) {
    int rowwise = i < gr, n = rowwise ? g->rows : g->cols;
    cr_taps ct;
    rgc_grid_taps((int)(rowwise ? i : i - gr), n, g->mag, &ct);
    cl_taps_of(&ct, &t[i]);
  }
  for (size_t i = 0; i < ni; i++) {
    int rowwise = i < (size_t)g->rows_m;
    int at = rowwise ? (int)i : (int)(i - (size_t)g->rows_m);
    cr_taps ct;
    cr_taps_at(cr_source(at, m, 0.0f), rowwise ? g->rows : g->cols, &ct);
    cl_taps_of(&ct, &t[gr + gc + i]);
  }
  int rc = cldev_buffer(c->device, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                        (gr + gc) * sizeof *t, t, "grid taps", &s->gtaps,
                        c->err, c->err_len);
  if (!rc && ni)
    rc = cldev_buffer(c->device, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                      ni * sizeof *t, t + gr + gc, "intensity taps", &s->taps,
                      c->err, c->err_len);
  if (!rc) {
    s->cand_bytes += (gr + gc + ni) * sizeof *t;
    cldev_transfer(c->device, (gr + gc + ni) * sizeof *t, 0);
  }
  if (!rc) rc = cl_slot_taps(s, t + gr);
  free(t);
  return rc;
}

/* Programs, kernels, buffers and every argument but the frame counts. */
static int cl_setup(chained *s) {
  const qs_method_call *c = s->c;
  const esrrf_geom *g = &s->g;
  char *err = c->err;
  size_t len = c->err_len;
  cl_context ctx;
  s->dev = c->device;
  int rc = cldev_queue(c->device, &ctx, &s->q, err, len);
  if (!rc) rc = cl_batch(c, g, &s->batch, err, len);
  /* a device with fused multiply-add in hardware takes it where esrrf.cl
   * allows (ESRRF_MAD); elsewhere fma would be emulated */
  cl_device_fp_config fp = 0;
  int fma_hw = !rc &&
               clGetDeviceInfo(cldev_id(c->device), CL_DEVICE_SINGLE_FP_CONFIG,
                               sizeof fp, &fp, NULL) == CL_SUCCESS &&
               (fp & CL_FP_FMA);
  /* lanes: the device's native float vector width (one register of the
   * CPU's SIMD unit: wider vectors are passed through memory to the
   * built-ins), at least 4 (a GPU reports 1; its work-item runs the lanes
   * as registers) */
  cl_uint vw = 0;
  if (!rc)
    clGetDeviceInfo(cldev_id(c->device), CL_DEVICE_NATIVE_VECTOR_WIDTH_FLOAT,
                    sizeof vw, &vw, NULL);
  s->lanes = vw >= 16 ? 16 : vw >= 8 ? 8 : 4;
  char opts[128];
  snprintf(opts, sizeof opts, "%s -DESRRF_LANES=%d%s", ESRRF_CL_OPTIONS,
           s->lanes, fma_hw ? " -DESRRF_HW_FMA" : "");
  for (int i = 0; !rc && i < K_COUNT; i++) {
    cl_program prog;
    double build = 0;
    cl_int e = CL_SUCCESS;
    rc = cldev_program(c->device, "esrrf.cl",
                       opts,
                       &prog, &build, err, len);
    s->once += build;
    if (!rc) s->k[i] = clCreateKernel(prog, KERNEL_NAMES[i], &e);
    if (!rc) rc = cl_status(e, KERNEL_NAMES[i], err, len);
  }
  cl_frame_bytes(g, s->per_frame);
  static const char *const what[B_COUNT] = {"input frames", "column sums",
                                            "gradient grid", "RGC maps"};
  for (int b = B_IN + 1; !rc && b < B_COUNT; b++)
    rc = cldev_buffer(c->device, CL_MEM_READ_WRITE, s->batch * s->per_frame[b],
                      NULL, what[b], &s->buf[b], err, len);
  for (int i = 0; !rc && i < 2; i++)
    rc = cldev_buffer(c->device, CL_MEM_READ_ONLY,
                      s->batch * s->per_frame[B_IN], NULL, what[B_IN],
                      &s->in[i].mem, err, len);
  if (!rc) {
    cl_int e = CL_SUCCESS;
    s->qu = clCreateCommandQueue(ctx, cldev_id(c->device),
                                 CL_QUEUE_PROFILING_ENABLE, &e);
    rc = cl_status(e, "creating the upload queue", err, len);
  }
  if (rc) return rc;
  cl_int rows = g->rows, cols = g->cols, mag = g->mag, gw, lp;
  cl_grid_layout(g, &gw, &lp);
  rc = cl_vcandidates(s);
  if (!rc) rc = cl_tap_tables(s);
  if (rc) return rc;
  cl_mem in = s->in[0].mem, vs = s->buf[B_VS], grid = s->buf[B_GRID];
  cl_mem out = s->buf[B_OUT];
  /* without weighting, the intensity's arguments are never read */
  cl_mem itaps = g->weight ? s->taps : s->gtaps;
  cl_int e = CL_SUCCESS;
  /* the separable kernels: (source, destination, frames, rows, cols,
   * taps) */
  for (int k = K_GVS; k <= K_MVS; k++) {
    if (k == K_MVS && !g->weight) continue;
    cl_mem src = k == K_GRID ? vs : in;
    cl_mem dst = k == K_GRID ? grid : vs;
    cl_mem taps = k == K_MVS ? s->taps : k == K_GRID ? s->stab : s->gtaps;
    e |= clSetKernelArg(s->k[k], 0, sizeof src, &src);
    e |= clSetKernelArg(s->k[k], 1, sizeof dst, &dst);
    e |= clSetKernelArg(s->k[k], 3, sizeof rows, &rows);
    e |= clSetKernelArg(s->k[k], 4, sizeof cols, &cols);
    e |= clSetKernelArg(s->k[k], 5, sizeof taps, &taps);
  }
  e |= clSetKernelArg(s->k[K_GRID], 6, sizeof gw, &gw);
  cl_kernel kr = s->k[K_RGC];
  cl_int start = g->k.start, win = g->k.end - g->k.start;
  cl_int margin = g->margin, weight = g->weight;
  e |= clSetKernelArg(kr, 0, sizeof grid, &grid);
  e |= clSetKernelArg(kr, 1, sizeof vs, &vs);
  e |= clSetKernelArg(kr, 2, sizeof itaps, &itaps);
  e |= clSetKernelArg(kr, 3, sizeof out, &out);
  e |= clSetKernelArg(kr, 4, sizeof s->vcand, &s->vcand);
  e |= clSetKernelArg(kr, 5, sizeof s->vcand_at, &s->vcand_at);
  e |= clSetKernelArg(kr, 6, sizeof s->ex, &s->ex);
  e |= clSetKernelArg(kr, 8, sizeof rows, &rows);
  e |= clSetKernelArg(kr, 9, sizeof cols, &cols);
  e |= clSetKernelArg(kr, 10, sizeof mag, &mag);
  e |= clSetKernelArg(kr, 11, sizeof start, &start);
  e |= clSetKernelArg(kr, 12, sizeof win, &win);
  e |= clSetKernelArg(kr, 13, sizeof(float), &g->k.tso);
  e |= clSetKernelArg(kr, 14, sizeof(float), &g->k.sens);
  e |= clSetKernelArg(kr, 15, sizeof margin, &margin);
  e |= clSetKernelArg(kr, 16, sizeof weight, &weight);
  e |= clSetKernelArg(kr, 17, sizeof gw, &gw);
  e |= clSetKernelArg(kr, 18, sizeof s->vrow, &s->vrow);
  e |= clSetKernelArg(kr, 19, sizeof s->vcls, &s->vcls);
  rc = cl_status(e, "setting the chain's arguments", err, len);

  /* the separable kernels: a vector of columns or slots per work-item */
  size_t chunks = ((size_t)g->cols + (size_t)s->lanes - 1) / (size_t)s->lanes;
  size_t gsz[K_COUNT][2] = {{chunks, 2 * (size_t)g->rows + 1},
                            {2 * (size_t)gw / (size_t)s->lanes,
                             2 * (size_t)g->rows + 1},
                            {chunks, (size_t)g->rows_m},
                            {((size_t)g->cols + 2 * (size_t)s->lanes - 1) /
                                 (2 * (size_t)s->lanes) * (size_t)g->mag,
                             (size_t)g->rows_m}};
  for (int i = 0; i < K_COUNT; i++) {
    s->global[i][0] = gsz[i][0];
    s->global[i][1] = gsz[i][1];
  }
  return rc;
}

/* Releases everything cl_setup and cl_stat_open made, and books the
 * device seconds into s. */
static void cl_release(chained *s) {
  /* the queues finished first: the buffers may serve a next call */
  if (s->q) clFinish(s->q);
  cl_stat_close(&s->st);
  s->dev_s += s->st.dev_s;
  s->once += s->st.once_s;
  cl_chain_done(s);
  for (int k = 0; k < UNIT_EVENTS; k++)
    event_drop(s, &s->pend[k]);
  if (s->qu) {
    clFinish(s->qu);
    clReleaseCommandQueue(s->qu);
  }
  for (int i = 0; i < 2; i++) {
    event_drop(s, &s->in[i].up);
    if (s->in[i].freed) clReleaseEvent(s->in[i].freed); /* counted already */
    cldev_release(s->dev, s->in[i].mem);
  }
  for (int b = 0; b < B_COUNT; b++) cldev_release(s->dev, s->buf[b]);
  cl_mem tables[] = {s->taps, s->gtaps,    s->stab, s->vcand,
                     s->ex,   s->vcand_at, s->vrow, s->vcls};
  for (size_t i = 0; i < sizeof tables / sizeof *tables; i++)
    cldev_release(s->dev, tables[i]);
  for (int i = 0; i < K_COUNT; i++)
    if (s->k[i]) clReleaseKernel(s->k[i]);
}

static int cl_session_run(const qs_method_call *c, esrrf_sink *sk);

int esrrf_run_opencl(const qs_method_call *c) {
  esrrf_sink *sk = esrrf_sink_of(c); /* the live stream's (sink.h) */
  if (sk && c->device) return cl_session_run(c, sk);
  chained s;
  memset(&s, 0, sizeof s);
  s.c = c;
  s.ran = -1;
  esrrf_geom_of(c, &s.g);
  int rc = c->device ? QS_OK : QS_EUNAVAIL;
  if (rc) snprintf(c->err, c->err_len, "esrrf: no OpenCL device given");
  if (!rc) rc = cl_setup(&s);
  if (!rc && s.g.kind != TEMPORAL_NONE)
    rc = cl_stat_open(&s.st, c->device, s.g.kind, s.g.plane, c->err,
                      c->err_len);
  if (!rc)
    rc = s.g.kind == TEMPORAL_NONE ? esrrf_drive(c, &s.g, s.batch, cl_maps, &s)
                                   : cl_drive_device(&s);
  cl_release(&s);
  if (c->device_seconds) *c->device_seconds += s.dev_s;
  if (c->once_seconds) *c->once_seconds += s.once;
  return rc;
}

/* ------------------------------------------- the live stream's plan */

/* In the stream's plan (stream.c, sink.h) the chain — programs,
 * kernels, tap and candidate tables, frame slots, grid and map buffers,
 * and the device accumulators — is set up by the first call and kept
 * until the stream closes: later calls only upload their frames, and only
 * results come down.
 *
 * A call does not wait for its own frames' work. Its frames go through in
 * units of at most one batch: a unit's frames are copied into the host
 * staging area of the chain's next input slot (so the caller may reuse
 * its buffer once the call returns), possibly over several calls; the
 * staged frames are enqueued as one unit (one upload, one chain launch
 * over its n frames, one fold over its n maps or one ring copy) when the
 * staging area holds a batch, when the call completes a result, when the
 * device has finished the unit before (checked without waiting) at the
 * end of a call, and by qs_esrrf_stream_end (sink->settle). Then the unit
 * before it is collected: waited for, its commands' statuses checked and
 * their device time booked. So in a saturated stream the frames pushed
 * while the device works gather into one unit and fold in one pass over
 * the accumulators, as the batch call's do (a one-frame unit reads and
 * writes all the accumulators for one frame), instead of a unit per push.
 * At most two units are in flight (one running, one queued), the two
 * input slots and their staging areas alternate (the slot being staged is
 * never the pending unit's), and a call's wall time is its copy, plus,
 * when it enqueues, the rest of the previous unit's device work: what the
 * engine records for it, with device_seconds the profiling times of the
 * commands collected during the call (a call that only stages records its
 * copy and no device time; the device time of its frames goes to the call
 * that collects them). The last unit is collected by the next call that
 * enqueues, by a result (a call with sink->out waits for everything before
 * finishing), by qs_esrrf_stream_end (sink->settle) or at close (discarded
 * with any staged frames: call qs_esrrf_stream_end to see its errors). A
 * failure the device reports for a unit is returned by the call that
 * collects it; the stream's timepoint (or window ring) is then lost
 * (sink->lost), with the frames staged.
 *
 * Timepoints (sink->ring 0): the maps fold into the device accumulators
 * as the batch call's do (cl_stat), so a timepoint has its bits.
 * Sliding window (sink->ring N, updated every K = sink->every frames),
 * kept on the device in whichever of two forms takes less of its memory
 * (P = R·M·C·M pixels, s = 2, 5 or 6 statistic slots):
 *   blocks  (N/K)·s + q ≤ N + s (s ≤ K with three blocks or more; q
 *           below): the statistics of the window's N/K blocks of K frames
 *           (cl_window: frame t folds into block (t / K) mod N/K, a
 *           block's first frame starting it over), merged by two stacks
 *           (in double where the device has it): at a flip the blocks
 *           become in place their suffix merges, between flips a running
 *           merge `back` takes each completed block, and an update is the
 *           oldest block's suffix ⊕ back ⊕ the newest block: per frame
 *           one fold plus, per update, about three block states instead of
 *           N/K (and the flip's N/K once every N/K − 1 updates), most of it
 *           done ahead: the call that drains before the update grows
 *           back, or flips when due (cl_window_prepare), so the update
 *           itself reads three states and writes only its image;
 *           without a drain (a push of K frames each time) the update
 *           does the merge and, once every N/K, the flip. Within rounding
 *           of the batch call on the window's frames (the blocks' sums are
 *           compensated as the batch call's are, only their combination
 *           differs). 4·P·((N/K)·s + 1 + q) bytes, q = s for back with
 *           three blocks or more, else 0.
 *   maps    otherwise (an update every frame or two): the last N maps in a
 *           ring (map of stream frame t at slot t mod N), folded in time
 *           order from scratch into the accumulators at each update: the
 *           batch call's fold on the same maps, so its bits on exactly the
 *           window's frames. 4·P·(N + s + 1) bytes.
 * A unit never crosses a block or the ring's end (stream.c's chunks never
 * cross a block of K, and K divides N); only the window's image comes
 * down; plus one batch of the chain as for timepoints. A device without
 * room for either leaves the window to the stream's host blocks. */

typedef struct cl_session {
  chained ch;
  void *device;           /* the chain's (ch.c is the last call's, gone
                             after it) */
  float *stage[2];        /* host copies of each input slot's frames */
  cl_mem ring;            /* sliding, maps: N maps */
  size_t ring_n;
  cl_window win;          /* sliding, blocks: their statistics */
  int blocks;             /* the window is win */
  size_t wrap;            /* sliding: a unit never crosses a multiple of
                             wrap in stream frames (K, or N for the ring);
                             0 for timepoints */
  size_t staged;          /* frames in stage[ch.next], not yet enqueued */
  uint64_t stage_at;      /* the stream's index of the first */
  size_t pend_n;          /* frames of the unit pending (ch.pend) */
  uint64_t done_n;        /* frames of the units collected */
} cl_session;

static void cl_session_free(void *p) {
  cl_session *x = p;
  cl_release(&x->ch); /* waits for both queues, drops the pending unit */
  cldev_release(x->device, x->ring);
  cl_window_close(&x->win);
  free(x->stage[0]);
  free(x->stage[1]);
  free(p);
}

static int cl_session_drain(cl_session *x, char *err, size_t err_len);

/* cl_collect of the pending unit, counting its frames as done. */
static int cl_session_collect(cl_session *x, char *err, size_t err_len) {
  int rc = cl_collect(&x->ch, err, err_len);
  x->done_n += x->pend_n;
  x->pend_n = 0;
  return rc;
}

/* The device timepoint's image into out (statistic, download, correction
 * on c's pool, or serially when c is NULL: outside a call); the
 * accumulation starts over. Enqueues the staged frames and collects
 * everything first. */
static int cl_session_image(cl_session *x, const qs_method_call *c, float *out,
                            uint64_t *down, char *err, size_t err_len) {
  chained *s = &x->ch;
  uint64_t u0, d0, u1, d1;
  int rc = cl_session_drain(x, err, err_len);
  if (rc) {
    cl_quiesce(s);
    s->st.n = 0;
    return rc;
  }
  cl_take take = {c, &s->g};
  cldev_transfers(x->device, &u0, &d0);
  rc = cl_stat_finish_with(&s->st, s->q, cl_take_image, &take, out, err,
                           err_len);
  cldev_transfers(x->device, &u1, &d1);
  if (down) *down += d1 - d0;
  return rc;
}

/* The sink's finish (qs_esrrf_stream_end's short last timepoint). */
static int cl_session_finish(void *p, float *out, uint64_t *down, char *err,
                             size_t err_len) {
  return cl_session_image(p, NULL, out, down, err, err_len);
}

/* Enqueues the n frames staged in slot ch.next (n <= batch), stream
 * frames [t, t + n), as a unit: upload, chain, then the fold into the
 * accumulators or the window's block, or the copy of the maps into the
 * ring; the unit's events go to ev. The unit is frames [0, n) of the
 * chain's geometry (only the slot's count and first frame tie a chain to
 * its upload). */
static int cl_unit(cl_session *x, size_t n, uint64_t t, cl_event *ev) {
  chained *s = &x->ch;
  const qs_method_call *c = s->c;
  int i = s->next;
  slot *sl = &s->in[i];
  size_t bytes = n * s->per_frame[B_IN], f0 = 0;
  /* the unit that used this slot was collected: its upload and reads are
   * done */
  if (sl->freed) clReleaseEvent(sl->freed);
  sl->freed = NULL;
  event_drop(s, &sl->up);
  int rc = cl_status(clEnqueueWriteBuffer(s->qu, sl->mem, CL_FALSE, 0, bytes,
                                          x->stage[i], 0, NULL, &sl->up),
                     "uploading frames", c->err, c->err_len);
  if (!rc) cldev_transfer(c->device, bytes, 0);
  if (!rc)
    rc = cl_status(clFlush(s->qu), "uploading frames", c->err, c->err_len);
  sl->f0 = f0;
  sl->n = rc ? 0 : n;
  /* the chain finds its frames in slot i and, the call ending with this
   * unit as far as it knows, uploads nothing ahead */
  size_t frames = s->g.frames;
  s->g.frames = f0 + n;
  /* the kernels span the unit's n frames (cl_launch) */
  cl_event done = NULL;
  if (!rc) rc = cl_chain(s, f0, n, &done);
  s->g.frames = frames;
  cl_unit_events(s, ev);
  size_t k = x->win.every;
  if (!rc && x->blocks)
    rc = cl_window_fold_at(&x->win, s->q, s->buf[B_OUT], 0, n,
                           (size_t)(t / k % x->win.blocks), (size_t)(t % k),
                           done, &ev[K_COUNT + 1], c->err, c->err_len);
  else if (!rc && !x->ring)
    rc = cl_stat_fold_at(&s->st, s->q, s->buf[B_OUT], 0, n, done,
                         &ev[K_COUNT + 1], c->err, c->err_len);
  if (!rc && x->ring) {
    size_t pb = s->per_frame[B_OUT], at = (size_t)(t % x->ring_n);
    rc = cl_status(clEnqueueCopyBuffer(s->q, s->buf[B_OUT], x->ring, 0,
                                       at * pb, n * pb, 1, &done,
                                       &ev[K_COUNT + 1]),
                   "keeping the maps", c->err, c->err_len);
  }
  if (!rc) rc = cl_status(clFlush(s->q), "esrrf", c->err, c->err_len);
  return rc;
}

/* The staged frames enqueued as one unit, then the unit before it
 * collected; this one becomes pending. Nothing staged: QS_OK. Frames of a
 * window's block begun before a failure lost the window are dropped: no
 * update uses that block (the stream's next window starts after them). */
static int cl_stage_flush(cl_session *x) {
  chained *s = &x->ch;
  const qs_method_call *c = s->c;
  uint64_t t = x->stage_at, k = x->win.every;
  if (x->blocks && t % k && x->win.count[t / k % x->win.blocks] != t % k)
    x->staged = 0;
  if (!x->staged) return QS_OK;
  cl_event ev[UNIT_EVENTS] = {NULL};
  size_t n = x->staged;
  int rc = cl_unit(x, n, x->stage_at, ev);
  x->staged = 0;
  int prc = cl_session_collect(x, c->err, c->err_len);
  memcpy(s->pend, ev, sizeof ev);
  x->pend_n = n;
  return rc ? rc : prc;
}

/* 1 while the pending unit still has commands queued or running on the
 * device (asked without waiting); 0 when it completed, failed (its
 * collector reports that) or there is none. */
static int cl_busy(const chained *s) {
  for (int k = 0; k < UNIT_EVENTS; k++) {
    cl_int st = CL_COMPLETE;
    if (s->pend[k] &&
        clGetEventInfo(s->pend[k], CL_EVENT_COMMAND_EXECUTION_STATUS,
                       sizeof st, &st, NULL) == CL_SUCCESS &&
        st > CL_COMPLETE)
      return 1;
  }
  return 0;
}

/* Outside a call too (qs_esrrf_stream_end): the staged frames enqueued and
 * everything collected. The chain reports through a call of its own on
 * the stream's device, whose messages go to err. */
static int cl_session_drain(cl_session *x, char *err, size_t err_len) {
  chained *s = &x->ch;
  char spare[256];
  const qs_method_call *c0 = s->c;
  qs_method_call own = {.device = x->device,
                        .err = err ? err : spare,
                        .err_len = err ? err_len : sizeof spare};
  s->c = &own;
  int rc = cl_stage_flush(x);
  int prc = cl_session_collect(x, err, err_len);
  s->c = c0;
  return rc ? rc : prc;
}

/* The window of the N maps before stream frame t_end (>= N), folded in
 * time order from the oldest (slot t_end mod N) into fresh accumulators:
 * N maps read per update, the cost of a batch call's fold on them (an
 * update every K frames costs N/K folds per frame; a running update
 * would cost two, but not give the batch call's bits). */
static int cl_ring_fold(cl_session *x, uint64_t t_end) {
  chained *s = &x->ch;
  const qs_method_call *c = s->c;
  size_t n = x->ring_n, old = (size_t)(t_end % n);
  s->st.n = 0;
  int rc = cl_stat_fold_at(&s->st, s->q, x->ring, old, n - old, NULL, NULL,
                           c->err, c->err_len);
  if (!rc)
    rc = cl_stat_fold_at(&s->st, s->q, x->ring, 0, old, NULL, NULL, c->err,
                         c->err_len);
  return rc;
}

/* The first call's setup of the kept chain: its buffers sized for the
 * stream's largest call, the accumulators, the staging areas and with a
 * sliding window the ring. */
static int cl_session_open(cl_session *x, const qs_method_call *c,
                           const esrrf_sink *sk) {
  chained *s = &x->ch;
  x->device = c->device;
  s->c = c;
  s->ran = -1;
  esrrf_geom_of(c, &s->g);
  if (sk->chunk > s->g.frames) s->g.frames = sk->chunk; /* batch size */
  int rc = cl_setup(s);
  /* a sliding window as blocks when they take less device memory than
   * the ring of maps and its accumulators; a device without room for them
   * tries the ring */
  size_t sl = cl_stat_slots(sk->kind), nb = sk->every ? sk->ring / sk->every : 0;
  size_t q = cl_window_back_slots(sk->kind, nb); /* planes: nb·sl + q + 1
                                                   against N + sl + 1 */
  if (!rc && sk->device_ok && nb && sk->ring + sl >= q &&
      nb <= (sk->ring + sl - q) / sl) {
    char why[256];
    x->blocks = cl_window_open(&x->win, c->device, sk->kind, s->g.plane, nb,
                               sk->every, why, sizeof why) == QS_OK;
    if (!x->blocks) cl_window_close(&x->win);
    x->wrap = x->blocks ? sk->every : 0;
  }
  if (!rc && sk->device_ok && !x->blocks)
    rc = cl_stat_open(&s->st, c->device, sk->kind, s->g.plane, c->err,
                      c->err_len);
  for (int i = 0; !rc && i < 2 && sk->device_ok; i++) {
    x->stage[i] = malloc(s->batch * s->per_frame[B_IN]);
    if (!x->stage[i]) {
      snprintf(c->err, c->err_len, "esrrf: no memory to stage %zu frames",
               s->batch);
      rc = QS_ENOMEM;
    }
  }
  /* a device without room for the ring: the maps come down into the
   * stream's host blocks instead (sk->ringed stays 0) */
  if (!rc && sk->device_ok && sk->ring && !x->blocks &&
      sk->ring <= SIZE_MAX / s->per_frame[B_OUT]) {
    char why[256];
    if (cldev_buffer(c->device, CL_MEM_READ_WRITE,
                     sk->ring * s->per_frame[B_OUT], NULL,
                     "sliding window's maps", &x->ring, why,
                     sizeof why) == QS_OK)
      x->ring_n = x->wrap = sk->ring;
  }
  return rc;
}

/* The call's frames through the pipeline (above); with sk->out, the
 * timepoint's or window's image after everything completed. Any failure
 * waits for the queues and loses the device's timepoint or window
 * (sk->lost), whose state it may have left half folded. */
static int cl_session_frames(cl_session *x, esrrf_sink *sk) {
  chained *s = &x->ch;
  const qs_method_call *c = s->c;
  int rc = QS_OK;
  size_t frames = c->in[0].frames, pf = s->per_frame[B_IN] / 4;
  for (size_t f = 0, n; !rc && f < frames; f += n) {
    size_t at = x->wrap ? (size_t)((sk->at + f) % x->wrap) : 0;
    /* a unit holds at most a batch and never crosses a block or the
     * ring's end */
    if (x->staged == s->batch || (x->staged && x->wrap && at == 0))
      rc = cl_stage_flush(x);
    if (rc) break;
    if (!x->staged) x->stage_at = sk->at + f;
    n = frames - f < s->batch - x->staged ? frames - f : s->batch - x->staged;
    if (x->wrap && n > x->wrap - at) n = x->wrap - at;
    memcpy(x->stage[s->next] + x->staged * pf, c->in[0].data + f * pf,
           n * pf * sizeof(float));
    x->staged += n;
    sk->folded += n;
  }
  /* enqueued now: a full batch, a result due, the next call's frames (as
   * many as this call's) completing a result, or a device with nothing
   * left to do; else the frames wait for the next call. Before a result
   * is due everything goes through and is waited for (drain), so that the
   * frames completing it find the device idle: push to result is their
   * own work, not theirs behind a queue (the price: this call waits for
   * the device, once a result). The first call drains too: its wall time
   * is the stream's first measure, and its device seconds per frame the
   * next calls' (cl_session_run) */
  int drain = !sk->out && ((sk->due && sk->due <= frames) || !x->done_n);
  if (!rc && x->staged &&
      (x->staged == s->batch || sk->out || drain || !cl_busy(s)))
    rc = cl_stage_flush(x);
  if (!rc && drain) rc = cl_session_collect(x, c->err, c->err_len);
  /* a window kept as blocks, whose next update's newest block is the one
   * filling: the stacks' step for its older blocks now (back grows; the
   * flip once every N/K − 1 updates), while the caller waits anyway, so
   * that the update reads three states and writes only its image */
  uint64_t end = sk->at + frames, upd = end + sk->due, k = x->win.every;
  if (!rc && drain && x->blocks && (upd - 1) / k == (end - 1) / k)
    rc = cl_window_prepare(&x->win, s->q, (size_t)(upd / k % x->win.blocks),
                           c->err, c->err_len);
  if (!rc && !x->wrap && s->st.n + x->staged != sk->n0 + sk->folded) {
    snprintf(c->err, c->err_len, "esrrf: the device timepoint lost frames");
    rc = QS_EINVAL;
  }
  if (!rc && sk->out && x->wrap)
    rc = cl_session_collect(x, c->err, c->err_len);
  if (!rc && sk->out && x->ring) rc = cl_ring_fold(x, end);
  if (!rc && sk->out && x->blocks) {
    cl_take take = {c, &s->g};
    rc = cl_window_finish_with(&x->win, s->q,
                               (size_t)(end / x->win.every % x->win.blocks),
                               cl_take_image, &take, sk->out, c->err,
                               c->err_len);
  } else if (!rc && sk->out) {
    rc = cl_session_image(x, c, sk->out, NULL, c->err, c->err_len);
  }
  if (rc) {
    cl_quiesce(s);
    cl_session_collect(x, NULL, 0);
    s->st.n = 0;
    for (size_t b = 0; x->blocks && b < x->win.blocks; b++)
      x->win.count[b] = 0;
    x->staged = 0;
    sk->lost = 1;
  }
  return rc;
}

/* The sink's settle: the staged frames enqueued (their upload added to
 * *up), everything collected; a failure loses the timepoint. */
static int cl_session_settle(void *p, uint64_t *up, char *err,
                             size_t err_len) {
  cl_session *x = p;
  uint64_t u0, d0, u1, d1;
  cldev_transfers(x->device, &u0, &d0);
  int rc = cl_session_drain(x, err, err_len);
  cldev_transfers(x->device, &u1, &d1);
  if (up) *up += u1 - u0;
  if (rc) {
    cl_quiesce(&x->ch);
    x->ch.st.n = 0;
    x->staged = 0;
  }
  return rc;
}

/* The stream state's device seconds and one-time costs so far: the chain's,
 * the statistic's and the window's (0 without one). */
static double cl_session_dev(const cl_session *x) {
  return x ? x->ch.dev_s + x->ch.st.dev_s + x->win.dev_s : 0;
}

static double cl_session_once(const cl_session *x) {
  return x ? x->ch.once + x->ch.st.once_s + x->win.once_s : 0;
}

static int cl_session_run(const qs_method_call *c, esrrf_sink *sk) {
  cl_session *x = c->kept(c, "esrrf.opencl");
  chained *s = x ? &x->ch : NULL;
  /* so far (a new chain's setup is this call's) */
  double dev0 = cl_session_dev(x), once0 = cl_session_once(x);
  int rc = QS_OK;
  sk->folded = 0;
  sk->lost = 0;
  if (x && x->device != c->device) {
    snprintf(c->err, c->err_len,
             "esrrf: the stream's chain is on another OpenCL device");
    return QS_EINVAL;
  }
  if (!x) {
    x = calloc(1, sizeof *x);
    if (!x) return QS_ENOMEM;
    rc = cl_session_open(x, c, sk);
    if (rc) {
      cl_session_free(x);
      return rc;
    }
    rc = c->keep(c, "esrrf.opencl", x, cl_session_free);
    if (rc) return rc;
    s = &x->ch;
  }
  /* this call's frames; the slots hold none of them yet */
  s->c = c;
  s->g.frames = c->in[0].frames;
  s->g.fpt = s->g.frames;
  s->in[0].n = s->in[1].n = 0;
  if (!sk->device_ok || (sk->ring && !x->wrap)) {
    rc = esrrf_drive_sink(c, &s->g, s->batch, cl_maps, s, sk);
  } else if (!x->wrap && s->st.n + x->staged != sk->n0) {
    snprintf(c->err, c->err_len,
             "esrrf: the device timepoint holds %llu frames, not %llu",
             (unsigned long long)(s->st.n + x->staged),
             (unsigned long long)sk->n0);
    rc = QS_EINVAL;
  } else {
    sk->ringed = x->wrap != 0;
    sk->finish = x->wrap ? NULL : cl_session_finish;
    sk->settle = cl_session_settle;
    sk->finish_state = x;
    rc = cl_session_frames(x, sk);
    /* what the engine records: this call's frames at the device seconds
     * per frame of the units collected so far (including the results'
     * kernels), not the call's wall time, which may cover only a copy
     * (frames staged for a later call) or all the frames before it (a
     * drain); the first call, which waits for its frames
     * (cl_session_frames), records its wall time */
    if (!rc && c->work_seconds && x->done_n)
      *c->work_seconds = cl_session_dev(x) / (double)x->done_n *
                         (double)c->in[0].frames;
  }
  if (c->device_seconds) *c->device_seconds += cl_session_dev(x) - dev0;
  if (c->once_seconds) *c->once_seconds += cl_session_once(x) - once0;
  return rc;
}
#endif
