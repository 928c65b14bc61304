/* clrt.h — the OpenCL runtime: devices and their fingerprints, per-engine
 * contexts and queues, embedded kernel sources, program builds with an
 * in-memory and an on-disk binary cache, memory budgets.
 *
 * cl/ knows nothing about methods. One clrt per engine, nothing global;
 * its functions may be called from several threads. Without OpenCL (no ICD, no
 * platform, QUICKSILVER_NO_OPENCL, -Dopencl=disabled) a clrt opens with zero
 * devices and clrt_why() says why. Functions return quicksilver.h statuses and
 * write a message into err (may be NULL) on failure. */
#ifndef QS_CLRT_H
#define QS_CLRT_H

#include <stddef.h>
#include <stdint.h>

#include "qs_config.h"
#include "quicksilver.h"

#if QS_HAVE_OPENCL
#include <CL/cl.h>
#endif

typedef struct clrt clrt;
typedef struct cldev cldev;

/* Limits and identity of a device, read once at discovery. The slug comes
 * from the device name ("pthread-haswell-amd-epyc"), [a-z0-9-], at most
 * about 32 characters, "-2", "-3", ... for later devices of the same name.
 * The fingerprint names the device, not its mood (cl_fingerprint). */
typedef struct cldev_info {
  char slug[48];        /* stable, lowercase, no spaces, unique here */
  char fingerprint[17]; /* 16 hex digits */
  char platform[128], vendor[128], name[128];
  char driver[64], version[128];
  int is_gpu;
  unsigned compute_units, clock_mhz;
  uint64_t global_mem, max_alloc, local_mem;
  size_t max_work_group;
  int fp64;
  /* A CPU device (CL_DEVICE_TYPE_CPU): its work runs on the host's cores,
   * beside the engine's pool, so its threads compete with the CPU
   * implementations (see clrt.c on PoCL's threads). */
  int shares_host_cores;
  /* FNV-1a 64 state after the platform, vendor, name, driver and version
   * strings (each whole, untruncated, and a NUL): what the fingerprints
   * start from. */
  uint64_t ident;
} cldev_info;

/* The fingerprint of a device (16 hex digits and a NUL into out): its
 * identity (ident), compute units, largest work-group and fp64 and, for a
 * device with memory of its own (a GPU), its clock and the power-of-two
 * class of its largest allocation. Never the global memory or, on a CPU
 * device, the clock or allocation limit: PoCL reports them from the host's
 * free memory and current frequency, which move (4.85 -> 8.34 GiB within
 * ten minutes here) with no change to the device, and every timing of the
 * device would start afresh. */
void cl_fingerprint(const cldev_info *in, char out[17]);

/* The fingerprint of the first scheme (before the one above), which also
 * hashed the global memory and the largest allocation, for the values
 * global_mem and max_alloc a store recorded then: the engine finds the
 * rows of this device under its old names with it (store_device_merge). */
void cl_fingerprint_v1(const cldev_info *in, uint64_t global_mem,
                       uint64_t max_alloc, char out[17]);

/* Discovers devices (no contexts yet). disabled != 0 gives zero devices
 * with a reason saying OpenCL was disabled. cache_dir: the binary cache
 * directory, created when first written (NULL: no disk cache); the string
 * is copied. Never fails for lack of OpenCL; only for out of memory
 * (QS_ENOMEM, *rt NULL). */
int clrt_open(clrt **rt, int disabled, const char *cache_dir, char *err,
              size_t err_len);
void clrt_close(clrt *rt); /* releases every context, queue and program */

size_t clrt_count(const clrt *rt);
cldev *clrt_device(clrt *rt, size_t i);
/* Why there are no devices ("" when there are some). */
const char *clrt_why(const clrt *rt);

const cldev_info *cldev_about(const cldev *d);

/* Devices come from the list an earlier process cached with the binary
 * cache (devlist.c) when its key still holds: the runtimes (PoCL: 25-35 ms
 * and 60 MB a process) are then loaded only at the first use of a device,
 * which matches the listed devices with the runtime's. 1 while rt's
 * devices are listed and not matched yet. */
int clrt_listed(const clrt *rt);
/* The seconds rt has spent loading the runtimes for its listed devices
 * (0 when it discovered them at open). */
double clrt_load_seconds(clrt *rt);
/* Loads the runtimes and matches the listed devices now (nothing when
 * they were discovered at open, or matched already): QS_OK, or
 * QS_EUNAVAIL with a message for a listed device the runtime no longer
 * has. Every use of a device does it first; the engine calls it before
 * it times a run, as discovery at open was never part of a run's time. */
int cldev_bind(cldev *d, char *err, size_t err_len);

/* The slug of a device name into out (len >= 2): lowercase words of
 * [a-z0-9] joined by '-', "(R)", "(TM)", "CPU", "Processor", "with" and
 * anything from '@' on dropped, cut at a word boundary near 32 characters;
 * "device" when nothing is left. */
void cl_slug(const char *name, char *out, size_t len);

/* Embedded sources (the methods' kernels by file name, "rgc.cl", and the
 * headers they include by path, "methods/rgc/rgc_math.h"), includes
 * resolved. NULL if unknown. The text is
 * static and NUL-terminated; *len (may be NULL) receives its length. */
const char *cl_source(const char *file, size_t *len);
size_t cl_source_count(void);
const char *cl_source_name(size_t i); /* NULL past the end */

/* Fault injection for tests: before every buffer creation (cldev_buffer)
 * and program build (cldev_program*), `fn` is asked; a nonzero return is
 * taken as the OpenCL error code of that call (e.g. -4,
 * CL_MEM_OBJECT_ALLOCATION_FAILURE, or -11, CL_BUILD_PROGRAM_FAILURE) and
 * the call fails as if the device had said so. `what` is the buffer's or
 * the program's name. fn NULL removes the hook. */
typedef enum clrt_op { CLRT_BUFFER, CLRT_BUILD } clrt_op;
typedef int (*clrt_fault_fn)(void *ctx, clrt_op op, const char *what);
void clrt_fault(clrt *rt, clrt_fault_fn fn, void *ctx);

#if QS_HAVE_OPENCL
/* The device's context and in-order, profiling-enabled queue, created on
 * first use and kept until clrt_close. */
int cldev_queue(cldev *d, cl_context *ctx, cl_command_queue *q, char *err,
                size_t err_len);

/* The program built from the embedded source `file` (e.g.
 * "shift_magnify.cl", with the math headers it includes) and
 * `options`: from memory, else the disk cache, else a build. The build log
 * goes into err on failure (QS_EBUILD). *seconds (may be NULL) receives the
 * time spent (0 for a memory hit). The program belongs to the device. */
int cldev_program(cldev *d, const char *file, const char *options,
                  cl_program *prog, double *seconds, char *err,
                  size_t err_len);

/* Like cldev_program for a source given as text (its includes already
 * resolved, e.g. built from cl_source("methods/m/x.h") and a kernel); `label`
 * names it in messages. Cached the same way, keyed by the text. */
int cldev_program_text(cldev *d, const char *label, const char *text,
                       const char *options, cl_program *prog, double *seconds,
                       char *err, size_t err_len);

/* A buffer of `bytes` on the device's context (clCreateBuffer with flags
 * and host, which may be NULL). Allocation failures give QS_EDEVMEM with a
 * message naming `what` and the size. The caller releases *mem, with
 * cldev_release. A buffer of the device's own storage (no host pointer
 * flag) may be one an earlier user released: same flags and size, its
 * contents whatever that user left (as a new buffer's are undefined). */
int cldev_buffer(cldev *d, cl_mem_flags flags, size_t bytes, void *host,
                 const char *what, cl_mem *mem, char *err, size_t err_len);

/* Gives back a buffer of d's context (NULL: nothing). One of the device's
 * own storage, held by nobody else, is kept for the next cldev_buffer of
 * the same flags and size, the oldest kept released beyond the device's
 * bound (clrt_keep); any other is released. A fresh buffer costs its
 * allocation and, on a CPU device, a page fault per 4 KiB page at its
 * first touch: 41 000 faults for a sliding-window stream of 256 x 256
 * frames at M 5 (its window's blocks, 150 MB), a few percent of a
 * 200-frame stream. The caller has no command on it still queued (its
 * queues finished). d NULL: released. */
void cldev_release(cldev *d, cl_mem mem);

/* For tests: every buffer d keeps filled with `byte` (0xff: NaN floats),
 * so that a user counting on what a buffer held shows; *n (may be NULL)
 * receives how many. */
int cldev_kept_fill(cldev *d, unsigned char byte, size_t *n);

cl_device_id cldev_id(const cldev *d);

/* 1 if `kernel` has not yet been launched on this device with this global
 * size (PoCL compiles a work-group function then), and records it; 0
 * otherwise. Lets implementations book that launch as one-time cost. */
int cldev_first_launch(cldev *d, const char *kernel, const size_t *global,
                       unsigned dims);

/* Seconds between an event's start and end (profiling), 0 on error. */
double cl_event_seconds(cl_event ev);

/* Status for an OpenCL error code: allocation failures -> QS_EDEVMEM,
 * build failures -> QS_EBUILD, everything else -> QS_ECL; the message
 * names `what` and the code's name. */
int cl_status(cl_int code, const char *what, char *err, size_t err_len);
#endif

/* Transfer accounting: bytes moved between host and device, per device,
 * cumulative since clrt_open. Every implementation reports the host→device
 * writes (up) and device→host reads and read-maps (down) it enqueues; the
 * engine takes the difference around a call for run_report. A buffer the
 * device shares with the host (CL_MEM_USE_HOST_PTR on a CPU device) moves
 * nothing until it is read or mapped back. Safe from several threads. */
void cldev_transfer(cldev *d, uint64_t up, uint64_t down);
void cldev_transfers(cldev *d, uint64_t *up, uint64_t *down);

/* Bandwidth between host and device: the engine notes each timed whole
 * copy it makes (bytes, seconds); cldev_rate is bytes per second over all
 * of them, 0 before the first. */
void cldev_rate_note(cldev *d, uint64_t bytes, double seconds);
double cldev_rate(cldev *d);

/* Name of an OpenCL error code ("CL_OUT_OF_RESOURCES"), "CL_SUCCESS" for
 * 0, "unknown OpenCL error" otherwise. Static string. */
const char *cl_code_name(int code);

/* Counters for tests and the benchmark: programs built from source,
 * loaded from the disk cache, served from memory, written to the disk
 * cache, and builds that failed (a failed build is remembered per device
 * and answered again, with its log, without another compile); buffers
 * created and buffers served from those kept (cldev_release). */
typedef struct clrt_counters {
  unsigned long built, disk_hits, memory_hits, disk_writes, failures;
  unsigned long buffers_made, buffers_reused;
} clrt_counters;

/* The most bytes of released buffers each device keeps for reuse
 * (cldev_release): bytes >= 0, or < 0 for the default, a quarter of the
 * device's global memory. Lowering it releases what is over at the next
 * release on that device. */
void clrt_keep(clrt *rt, int64_t bytes);
clrt_counters clrt_stats(const clrt *rt);

/* Removes every binary cache entry (and leftover temporary file) from the
 * cache directory dir, and the device list kept in its folder "devices"
 * (which goes too), leaving other files and the directory itself.
 * *removed (may be NULL) receives the count. QS_EIO if dir cannot be read
 * or an entry cannot be removed; a missing dir is QS_OK with 0. */
int cl_cache_clear(const char *dir, size_t *removed);

/* Memory budget: how many frames fit in one batch. per_frame[i] is the
 * bytes buffer i needs per frame, fixed[i] the bytes it needs regardless of
 * frames. A batch must fit the device's global memory (less headroom) in
 * sum, and each buffer must fit max_alloc. *frames = min(wanted, what
 * fits) >= 1, or QS_EDEVMEM with a message giving what one frame needs and
 * what the device offers. Pure arithmetic: testable on invented limits. */
int cl_budget_frames(const cldev_info *dev, const size_t *per_frame,
                     const size_t *fixed, size_t n_buffers, size_t wanted,
                     size_t *frames, char *err, size_t err_len);

#endif
