/* test_clrt.c — the OpenCL runtime on the machine's devices (PoCL here):
 * discovery, fingerprints, embedded sources with their math headers, the
 * program caches (memory, disk, corrupt and unwritable disk), fault
 * injection, first launches, error names and graceful absence. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cl/cache.h"
#include "cl/clrt.h"
#include "cl/devlist.h"
#include "methods/shift_magnify/catmull_rom.h"
#include "qs_test.h"

TestSuite(clrt, .fini = qs_leak_check);

#if QS_HAVE_OPENCL

/* Opens a runtime with a device, or skips the test. */
static clrt *open_or_skip(const char *cache_dir) {
  clrt *rt = NULL;
  char err[512] = "";
  cr_assert_eq(clrt_open(&rt, 0, cache_dir, err, sizeof err), QS_OK, "%s",
               err);
  if (clrt_count(rt) == 0) {
    char why[600];
    snprintf(why, sizeof why, "no OpenCL device: %s", clrt_why(rt));
    clrt_close(rt);
    cr_skip_test("%s", why);
  }
  return rt;
}

/* A fresh empty directory under /tmp; the caller removes it. */
static void temp_dir(char *path, size_t len) {
  snprintf(path, len, "/tmp/qs-clrt-XXXXXX");
  cr_assert_not_null(mkdtemp(path));
}

/* Removes a test's cache directory, checking only entries were left. */
static void dir_remove(const char *path) {
  size_t n = 0;
  cr_expect_eq(cl_cache_clear(path, &n), QS_OK);
  cr_expect_eq(rmdir(path), 0, "%s holds more than cache entries", path);
}

/* A fresh temp dir in dir and, in blocked, the path of a directory that
 * cannot be created (below a regular file, which even root cannot do). */
static void blocked_dir(char *dir, size_t dir_len, char *blocked, size_t len) {
  temp_dir(dir, dir_len);
  snprintf(blocked, len, "%s/file", dir);
  FILE *f = fopen(blocked, "w");
  cr_assert_not_null(f);
  fclose(f);
  strncat(blocked, "/sub", len - strlen(blocked) - 1);
}

/* Undoes blocked_dir. */
static void blocked_remove(const char *dir) {
  char file[128];
  snprintf(file, sizeof file, "%s/file", dir);
  unlink(file);
  dir_remove(dir);
}

/* The one cache entry in dir (fails unless there is exactly one). */
static void cache_entry(const char *dir, char *path, size_t len) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d, "cache dir %s missing", dir);
  struct dirent *e;
  int n = 0;
  while ((e = readdir(d))) {
    size_t k = strlen(e->d_name);
    if (k > 4 && strcmp(e->d_name + k - 4, ".bin") == 0) {
      snprintf(path, len, "%s/%s", dir, e->d_name);
      n++;
    }
  }
  closedir(d);
  cr_assert_eq(n, 1, "expected one cache entry in %s, found %d", dir, n);
}

/* A kernel over the Catmull-Rom weight of methods/shift_magnify/catmull_rom.h, the
 * header text as the runtime embeds it (includes resolved). Caller frees. */
static char *cubic_source(void) {
  const char *head = cl_source("methods/shift_magnify/catmull_rom.h", NULL);
  cr_assert_not_null(head);
  static const char body[] =
      "\n__kernel void cubic(__global const float *v, __global float *out) {\n"
      "  size_t i = get_global_id(0);\n"
      "  out[i] = (float)cr_cubic((QS_ACC)v[i]);\n"
      "}\n";
  char *s = malloc(strlen(head) + sizeof body);
  cr_assert_not_null(s);
  strcpy(s, head);
  strcat(s, body);
  return s;
}

static int build_cubic(clrt *rt, const char *options, cl_program *p) {
  char *src = cubic_source();
  char err[4096] = "";
  int rc = cldev_program_text(clrt_device(rt, 0), "cubic test", src, options,
                              p, NULL, err, sizeof err);
  free(src);
  if (rc) fprintf(stderr, "build_cubic: %s\n", err);
  return rc;
}

/* Builds the cubic kernel in a new runtime over cache_dir and returns
 * that runtime's counters. */
static clrt_counters build_fresh(const char *cache_dir) {
  clrt *rt = open_or_skip(cache_dir);
  cl_program p;
  cr_assert_eq(build_cubic(rt, "", &p), QS_OK);
  clrt_counters c = clrt_stats(rt);
  clrt_close(rt);
  return c;
}

Test(clrt, discovers_devices_with_identity) {
  clrt *rt = open_or_skip(NULL);
  cr_expect_str_empty(clrt_why(rt));
  for (size_t i = 0; i < clrt_count(rt); i++) {
    const cldev_info *in = cldev_about(clrt_device(rt, i));
    cr_assert_not_null(in);
    cr_expect_gt(strlen(in->slug), 0);
    for (const char *c = in->slug; *c; c++)
      cr_expect((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
                    *c == '-' || *c == '_',
                "slug %s has '%c'", in->slug, *c);
    cr_expect_eq(strlen(in->fingerprint), 16);
    cr_expect_eq(strspn(in->fingerprint, "0123456789abcdef"), 16);
    cr_expect_gt(in->compute_units, 0);
    cr_expect_gt(in->global_mem, 0);
    cr_expect_gt(in->max_alloc, 0);
    cr_expect_leq(in->max_alloc, in->global_mem);
    cr_expect_gt(in->max_work_group, 0);
    cr_expect_gt(strlen(in->name), 0);
    for (size_t j = 0; j < i; j++)
      cr_expect_str_neq(in->slug, cldev_about(clrt_device(rt, j))->slug);
  }
  cr_expect_null(clrt_device(rt, clrt_count(rt)));
  clrt_close(rt);
}

Test(clrt, fingerprint_and_slug_stable_across_runtimes) {
  clrt *a = open_or_skip(NULL), *b = open_or_skip(NULL);
  cr_assert_eq(clrt_count(a), clrt_count(b));
  for (size_t i = 0; i < clrt_count(a); i++) {
    const cldev_info *x = cldev_about(clrt_device(a, i));
    const cldev_info *y = cldev_about(clrt_device(b, i));
    cr_expect_str_eq(x->fingerprint, y->fingerprint);
    cr_expect_str_eq(x->slug, y->slug);
  }
  clrt_close(a);
  clrt_close(b);
}

Test(clrt, embedded_headers_have_includes_resolved) {
  const char *cr = cl_source("methods/shift_magnify/catmull_rom.h", NULL);
  cr_assert_not_null(cr);
  cr_expect_not_null(strstr(cr, "QS_MATH_COMMON_H"));
  cr_expect_null(strstr(cr, "#include \"common.h\""));
  cr_expect_null(cl_source("no_such_kernel.cl", NULL));
  size_t n = cl_source_count();
  cr_expect_geq(n, 2);
  for (size_t i = 0; i < n; i++) {
    size_t len = 0;
    const char *t = cl_source(cl_source_name(i), &len);
    cr_assert_not_null(t);
    cr_expect_eq(strlen(t), len);
  }
  cr_expect_null(cl_source_name(n));
}

/* Runs the cubic kernel on v[0..n) and compares it with the C function of
 * the same header within tol (relative to the largest weight, 1). */
static void check_cubic(const char *options, double tol) {
  clrt *rt = open_or_skip(NULL);
  cldev *d = clrt_device(rt, 0);
  if (strstr(options, "double") && !cldev_about(d)->fp64) {
    clrt_close(rt);
    cr_skip_test("device has no fp64");
  }
  enum { N = 1024 };
  static float v[N], got[N];
  for (int i = 0; i < N; i++)
    v[i] = -2.5f + 5.0f * (float)i / (N - 1);
  cl_program p;
  cr_assert_eq(build_cubic(rt, options, &p), QS_OK);
  char err[512] = "";
  cl_context ctx;
  cl_command_queue q;
  cr_assert_eq(cldev_queue(d, &ctx, &q, err, sizeof err), QS_OK, "%s", err);
  cl_mem in, out;
  cr_assert_eq(cldev_buffer(d, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
                            sizeof v, v, "v", &in, err, sizeof err),
               QS_OK, "%s", err);
  cr_assert_eq(cldev_buffer(d, CL_MEM_WRITE_ONLY, sizeof got, NULL, "out",
                            &out, err, sizeof err),
               QS_OK, "%s", err);
  cl_int rc;
  cl_kernel k = clCreateKernel(p, "cubic", &rc);
  cr_assert_eq(rc, CL_SUCCESS);
  clSetKernelArg(k, 0, sizeof in, &in);
  clSetKernelArg(k, 1, sizeof out, &out);
  size_t global = N;
  cl_event ev;
  cr_assert_eq(
      clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, &ev),
      CL_SUCCESS);
  cr_assert_eq(
      clEnqueueReadBuffer(q, out, CL_TRUE, 0, sizeof got, got, 1, &ev, NULL),
      CL_SUCCESS);
  cr_expect_geq(cl_event_seconds(ev), 0);
  double worst = 0;
  for (int i = 0; i < N; i++) {
    double want = (float)cr_cubic(v[i]);
    double diff = got[i] > want ? got[i] - want : want - got[i];
    if (diff > worst) worst = diff;
  }
  cr_expect_leq(worst, tol, "max |opencl - C| = %g with options \"%s\"", worst,
                options);
  clReleaseEvent(ev);
  clReleaseKernel(k);
  clReleaseMemObject(in);
  clReleaseMemObject(out);
  clrt_close(rt);
}

Test(clrt, math_header_kernel_matches_c_in_float) {
  /* Single precision on the device against double in C: the cubic's terms
   * reach 4 and cancel, so a few float ulps of 4 (4.8e-7 each) remain. */
  check_cubic("", 2e-6);
}

Test(clrt, math_header_kernel_matches_c_in_double) {
  /* The same accumulation type on both sides gives the same bits. */
  check_cubic("-DQS_ACC=double", 0);
}

Test(clrt, memory_cache_serves_second_request) {
  clrt *rt = open_or_skip(NULL);
  cl_program a, b;
  cr_assert_eq(build_cubic(rt, "", &a), QS_OK);
  cr_assert_eq(build_cubic(rt, "", &b), QS_OK);
  cr_expect_eq(a, b);
  cr_assert_eq(build_cubic(rt, "-DQS_ACC=float", &b), QS_OK);
  cr_expect_neq(a, b, "options are part of the key");
  clrt_counters c = clrt_stats(rt);
  cr_expect_eq(c.memory_hits, 1);
  cr_expect_eq(c.built, 2);
  cr_expect_eq(c.disk_writes, 0, "no cache dir, no disk writes");
  clrt_close(rt);
}

/* Checks that p has its cubic kernel, then closes rt and removes dir. */
static void close_with_cubic(clrt *rt, cl_program p, const char *dir) {
  cl_int rc;
  cl_kernel k = clCreateKernel(p, "cubic", &rc);
  cr_expect_eq(rc, CL_SUCCESS);
  if (k) clReleaseKernel(k);
  clrt_close(rt);
  dir_remove(dir);
}

Test(clrt, disk_cache_loads_in_a_new_runtime) {
  char dir[64];
  temp_dir(dir, sizeof dir);
  clrt_counters c = build_fresh(dir);
  cr_expect_eq(c.built, 1);
  cr_expect_eq(c.disk_hits, 0);
  cr_expect_eq(c.disk_writes, 1);
  /* Age the entry: a hit must make it recent again (pruning is LRU). */
  char path[4200];
  cache_entry(dir, path, sizeof path);
  struct timespec old[2] = {{1000, 0}, {1000, 0}};
  cr_assert_eq(utimensat(AT_FDCWD, path, old, 0), 0);

  clrt *rt = open_or_skip(dir);
  cl_program p;
  double s = -1;
  char *src = cubic_source();
  char err[1024] = "";
  cr_assert_eq(cldev_program_text(clrt_device(rt, 0), "cubic test", src, "",
                                  &p, &s, err, sizeof err),
               QS_OK, "%s", err);
  free(src);
  c = clrt_stats(rt);
  cr_expect_eq(c.built, 0);
  cr_expect_eq(c.disk_hits, 1);
  cr_expect_eq(c.disk_writes, 0);
  cr_expect_gt(s, 0);
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  cr_expect_gt(st.st_mtim.tv_sec, 1000);
  /* The loaded program runs. */
  close_with_cubic(rt, p, dir);
}

/* Damages the single cache entry in dir with `how`, then checks a new
 * runtime ignores it, rebuilds and replaces it with one that loads. */
static void check_damaged(void (*how)(const char *path)) {
  char dir[64], path[4200];
  temp_dir(dir, sizeof dir);
  build_fresh(dir);
  cache_entry(dir, path, sizeof path);
  how(path);

  clrt_counters c = build_fresh(dir);
  cr_expect_eq(c.disk_hits, 0, "a damaged entry must not be used");
  cr_expect_eq(c.built, 1);
  cr_expect_eq(c.disk_writes, 1, "the entry is replaced");

  c = build_fresh(dir);
  cr_expect_eq(c.disk_hits, 1, "the replaced entry loads");
  cr_expect_eq(c.built, 0);
  cache_entry(dir, path, sizeof path);
  dir_remove(dir);
}

static void flip_payload_byte(const char *path) {
  FILE *f = fopen(path, "r+b");
  cr_assert_not_null(f);
  fseek(f, 100, SEEK_SET);
  int c = fgetc(f);
  fseek(f, 100, SEEK_SET);
  fputc(c ^ 0x5a, f);
  fclose(f);
}

static void truncate_half(const char *path) {
  struct stat st;
  cr_assert_eq(stat(path, &st), 0);
  cr_assert_eq(truncate(path, st.st_size / 2), 0);
}

static void overwrite_foreign(const char *path) {
  FILE *f = fopen(path, "wb");
  cr_assert_not_null(f);
  fputs("not a quicksilver cache entry, but long enough to look like one", f);
  fclose(f);
}

/* Keeps the header's magic and key but replaces the payload with bytes
 * that are no program binary, under a matching length and checksum: the
 * entry checks out and the device itself must reject it. */
static void reforge_payload(const char *path) {
  FILE *f = fopen(path, "r+b");
  cr_assert_not_null(f);
  unsigned char head[32];
  cr_assert_eq(fread(head, 1, 16, f), 16);
  static const unsigned char junk[] = "this is not a binary for any device";
  uint64_t n = sizeof junk, sum = cache_sum(junk, sizeof junk);
  for (int i = 0; i < 8; i++) {
    head[16 + i] = (unsigned char)(n >> (8 * i));
    head[24 + i] = (unsigned char)(sum >> (8 * i));
  }
  fclose(f);
  f = fopen(path, "wb");
  cr_assert_not_null(f);
  fwrite(head, 1, sizeof head, f);
  fwrite(junk, 1, sizeof junk, f);
  fclose(f);
}

Test(clrt, rejected_binary_is_rebuilt_and_replaced) {
  check_damaged(reforge_payload);
}

/* The payload checksum changes with every single bit of the payload (in
 * the word lanes and the tail alike) and with the length of a run of
 * zeros. */
Test(clrt, cache_sum_sees_every_bit_and_the_length) {
  unsigned char b[77];
  for (size_t i = 0; i < sizeof b; i++)
    b[i] = (unsigned char)(i * 37 + 11);
  uint64_t base = cache_sum(b, sizeof b);
  for (size_t i = 0; i < sizeof b; i++)
    for (int bit = 0; bit < 8; bit++) {
      b[i] ^= (unsigned char)(1u << bit);
      cr_expect_neq(cache_sum(b, sizeof b), base, "byte %zu bit %d", i, bit);
      b[i] ^= (unsigned char)(1u << bit);
    }
  unsigned char z[70] = {0};
  uint64_t seen[71];
  for (size_t n = 0; n <= sizeof z; n++) {
    seen[n] = cache_sum(z, n);
    for (size_t m = 0; m < n; m++)
      cr_expect_neq(seen[n], seen[m], "%zu and %zu zero bytes", n, m);
  }
}

Test(clrt, corrupt_cache_entry_is_rebuilt_and_replaced) {
  check_damaged(flip_payload_byte);
}

Test(clrt, truncated_cache_entry_is_rebuilt_and_replaced) {
  check_damaged(truncate_half);
}

Test(clrt, foreign_cache_entry_is_rebuilt_and_replaced) {
  check_damaged(overwrite_foreign);
}

Test(clrt, unwritable_cache_dir_still_builds) {
  char dir[64], blocked[128];
  blocked_dir(dir, sizeof dir, blocked, sizeof blocked);
  clrt_counters c = build_fresh(blocked);
  cr_expect_eq(c.built, 1);
  cr_expect_eq(c.disk_writes, 0);
  blocked_remove(dir);
}

Test(clrt, build_failure_reports_the_log) {
  static const char broken[] = "__kernel void k(__global float *x) {\n"
                               "  x[0] = undeclared_name;\n}\n";
  clrt *rt = open_or_skip(NULL);
  char err[4096] = "";
  cl_program p;
  int rc = cldev_program_text(clrt_device(rt, 0), "broken.cl", broken, "", &p,
                              NULL, err, sizeof err);
  cr_expect_eq(rc, QS_EBUILD);
  cr_expect_null(p);
  cr_expect_not_null(strstr(err, "broken.cl"), "%s", err);
  cr_expect_not_null(strstr(err, "undeclared_name"), "log missing: %s", err);
  /* The same source fails again, from memory, with the same log. */
  err[0] = '\0';
  rc = cldev_program_text(clrt_device(rt, 0), "broken.cl", broken, "", &p,
                          NULL, err, sizeof err);
  cr_expect_eq(rc, QS_EBUILD);
  cr_expect_not_null(strstr(err, "undeclared_name"), "%s", err);
  clrt_counters c = clrt_stats(rt);
  cr_expect_eq(c.failures, 2);
  cr_expect_eq(c.built, 0);
  rc = cldev_program(clrt_device(rt, 0), "no_such.cl", "", &p, NULL, err,
                     sizeof err);
  cr_expect_eq(rc, QS_EINVAL);
  cr_expect_not_null(strstr(err, "no_such.cl"));
  clrt_close(rt);
}

/* Fails every call of the operation given in ctx with a fixed code. */
static int fault_every(void *ctx, clrt_op op, const char *what) {
  (void)what;
  const int *want = ctx;
  if (op != (clrt_op)want[0]) return 0;
  return want[1];
}

Test(clrt, fault_hook_reaches_devmem_and_build_paths) {
  clrt *rt = open_or_skip(NULL);
  cldev *d = clrt_device(rt, 0);
  char err[1024] = "";
  int buffer_fault[2] = {CLRT_BUFFER, CL_MEM_OBJECT_ALLOCATION_FAILURE};
  clrt_fault(rt, fault_every, buffer_fault);
  cl_mem m;
  cr_expect_eq(cldev_buffer(d, CL_MEM_READ_WRITE, 4096, NULL, "frames", &m,
                            err, sizeof err),
               QS_EDEVMEM);
  cr_expect_null(m);
  cr_expect_not_null(strstr(err, "frames"), "%s", err);
  cr_expect_not_null(strstr(err, "CL_MEM_OBJECT_ALLOCATION_FAILURE"), "%s",
                     err);
  cl_program p;
  cr_expect_eq(build_cubic(rt, "", &p), QS_OK, "builds are not hooked");

  int build_fault[2] = {CLRT_BUILD, CL_BUILD_PROGRAM_FAILURE};
  clrt_fault(rt, fault_every, build_fault);
  cr_expect_eq(build_cubic(rt, "-DQS_ACC=float", &p), QS_EBUILD);
  cr_expect_eq(cldev_buffer(d, CL_MEM_READ_WRITE, 4096, NULL, "frames", &m,
                            err, sizeof err),
               QS_OK, "%s", err);
  clReleaseMemObject(m);

  clrt_fault(rt, NULL, NULL);
  cr_expect_eq(build_cubic(rt, "-DQS_ACC=float", &p), QS_OK);
  clrt_close(rt);
}

/* Released buffers of the device's own storage come back for the same
 * flags and size, newest first, within the bound (oldest out first);
 * host-pointer buffers, buffers someone else holds and a bound of 0 keep
 * nothing; an injected failure still fails with a buffer of its size
 * kept; the counters count both ways. */
Test(clrt, released_buffers_serve_the_next_request) {
  clrt *rt = open_or_skip(NULL);
  cldev *d = clrt_device(rt, 0);
  char err[512] = "";
  cl_mem m[4], again;
  clrt_counters c0 = clrt_stats(rt);
  for (int i = 0; i < 4; i++)
    cr_assert_eq(cldev_buffer(d, CL_MEM_READ_WRITE, 1000 + (size_t)i, NULL,
                              "b", &m[i], err, sizeof err),
                 QS_OK, "%s", err);
  clrt_counters c1 = clrt_stats(rt);
  cr_expect_eq(c1.buffers_made - c0.buffers_made, 4);
  cr_expect_eq(c1.buffers_reused, c0.buffers_reused);
  /* room for three of them: the oldest released goes */
  clrt_keep(rt, 1001 + 1002 + 1003);
  for (int i = 0; i < 4; i++) cldev_release(d, m[i]);
  for (int i = 3; i > 0; i--) {
    cr_assert_eq(cldev_buffer(d, CL_MEM_READ_WRITE, 1000 + (size_t)i, NULL,
                              "b", &again, err, sizeof err),
                 QS_OK);
    cr_expect_eq(again, m[i], "size %d: not the released buffer", 1000 + i);
    m[i] = again;
  }
  cr_assert_eq(cldev_buffer(d, CL_MEM_READ_WRITE, 1000, NULL, "b", &again,
                            err, sizeof err),
               QS_OK);
  m[0] = again;
  clrt_counters c2 = clrt_stats(rt);
  cr_expect_eq(c2.buffers_reused - c1.buffers_reused, 3);
  cr_expect_eq(c2.buffers_made - c1.buffers_made, 1);
  /* other flags, another size: not served */
  cldev_release(d, m[1]);
  cr_assert_eq(cldev_buffer(d, CL_MEM_READ_ONLY, 1001, NULL, "b", &again,
                            err, sizeof err),
               QS_OK);
  cr_expect_neq(again, m[1]);
  cldev_release(d, again);
  cr_assert_eq(cldev_buffer(d, CL_MEM_READ_WRITE, 1001, NULL, "b", &m[1],
                            err, sizeof err),
               QS_OK);
  /* an injected failure fails though a buffer of its size is kept */
  cldev_release(d, m[2]);
  int buffer_fault[2] = {CLRT_BUFFER, CL_MEM_OBJECT_ALLOCATION_FAILURE};
  clrt_fault(rt, fault_every, buffer_fault);
  cr_expect_eq(cldev_buffer(d, CL_MEM_READ_WRITE, 1002, NULL, "b", &again,
                            err, sizeof err),
               QS_EDEVMEM);
  cr_expect_null(again);
  clrt_fault(rt, NULL, NULL);
  cr_assert_eq(cldev_buffer(d, CL_MEM_READ_WRITE, 1002, NULL, "b", &again,
                            err, sizeof err),
               QS_OK);
  cr_expect_eq(again, m[2]);
  m[2] = again;
  /* held by someone else: released, not kept */
  clRetainMemObject(m[3]);
  cldev_release(d, m[3]);
  cr_assert_eq(cldev_buffer(d, CL_MEM_READ_WRITE, 1003, NULL, "b", &again,
                            err, sizeof err),
               QS_OK);
  cr_expect_neq(again, m[3]);
  clReleaseMemObject(m[3]);
  m[3] = again;
  /* a host pointer's buffer: never kept */
  float host[256] = {0};
  cl_mem h;
  cr_assert_eq(cldev_buffer(d, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                            sizeof host, host, "h", &h, err, sizeof err),
               QS_OK);
  cldev_release(d, h);
  cr_assert_eq(cldev_buffer(d, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR,
                            sizeof host, host, "h", &again, err, sizeof err),
               QS_OK);
  cr_expect_neq(again, h);
  cldev_release(d, again);
  /* a bound of 0 keeps nothing */
  clrt_keep(rt, 0);
  cldev_release(d, m[0]);
  clrt_counters c3 = clrt_stats(rt);
  cr_assert_eq(cldev_buffer(d, CL_MEM_READ_WRITE, 1000, NULL, "b", &m[0],
                            err, sizeof err),
               QS_OK);
  cr_expect_eq(clrt_stats(rt).buffers_reused, c3.buffers_reused);
  /* the kept ones are filled on request, and released at the end */
  clrt_keep(rt, -1);
  for (int i = 0; i < 4; i++) cldev_release(d, m[i]);
  size_t n = 0;
  cr_expect_eq(cldev_kept_fill(d, 0xff, &n), QS_OK);
  cr_expect_eq(n, 4);
  cr_assert_eq(cldev_buffer(d, CL_MEM_READ_WRITE, 1000, NULL, "b", &again,
                            err, sizeof err),
               QS_OK);
  cl_command_queue q;
  cl_context ctx;
  cr_assert_eq(cldev_queue(d, &ctx, &q, err, sizeof err), QS_OK);
  unsigned char got[1000];
  cr_assert_eq(clEnqueueReadBuffer(q, again, CL_TRUE, 0, sizeof got, got, 0,
                                   NULL, NULL),
               CL_SUCCESS);
  for (size_t i = 0; i < sizeof got; i++)
    cr_assert_eq(got[i], 0xff, "byte %zu", i);
  cldev_release(d, again);
  clrt_close(rt);
}

Test(clrt, first_launch_per_kernel_and_size) {
  clrt *rt = open_or_skip(NULL);
  cldev *d = clrt_device(rt, 0);
  size_t g1[2] = {512, 512}, g2[2] = {1024, 512};
  cr_expect_eq(cldev_first_launch(d, "k", g1, 2), 1);
  cr_expect_eq(cldev_first_launch(d, "k", g1, 2), 0);
  cr_expect_eq(cldev_first_launch(d, "k", g2, 2), 1);
  cr_expect_eq(cldev_first_launch(d, "other", g1, 2), 1);
  cr_expect_eq(cldev_first_launch(d, "k", g1, 1), 1, "dims count");
  cr_expect_eq(cldev_first_launch(d, "k", g2, 2), 0);
  clrt_close(rt);
}

typedef struct race {
  clrt *rt;
  cl_program prog[10];
  int firsts, failed;
} race;

/* Criterion's assertions belong to the test's thread: the workers only
 * record, the test asserts after joining. */
static void *race_run(void *arg) {
  race *r = arg;
  for (int i = 0; i < 10; i++)
    r->failed |= build_cubic(r->rt, "", &r->prog[i]) != QS_OK;
  for (size_t g = 1; g <= 50; g++)
    r->firsts += cldev_first_launch(clrt_device(r->rt, 0), "k", &g, 1);
  return NULL;
}

Test(clrt, two_threads_share_one_runtime) {
  clrt *rt = open_or_skip(NULL);
  race a = {.rt = rt}, b = {.rt = rt};
  pthread_t ta, tb;
  cr_assert_eq(pthread_create(&ta, NULL, race_run, &a), 0);
  cr_assert_eq(pthread_create(&tb, NULL, race_run, &b), 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  cr_assert(!a.failed && !b.failed);
  for (int i = 0; i < 10; i++) {
    cr_expect_eq(a.prog[i], a.prog[0]);
    cr_expect_eq(b.prog[i], a.prog[0]);
  }
  clrt_counters c = clrt_stats(rt);
  cr_expect_eq(c.built, 1, "one build for both threads");
  cr_expect_eq(c.memory_hits, 19);
  cr_expect_eq(a.firsts + b.firsts, 50, "each size is first exactly once");
  clrt_close(rt);
}

Test(clrt, status_mapping_names_the_code) {
  char err[256];
  cr_expect_eq(cl_status(CL_SUCCESS, "x", err, sizeof err), QS_OK);
  cr_expect_eq(
      cl_status(CL_MEM_OBJECT_ALLOCATION_FAILURE, "alloc", err, sizeof err),
      QS_EDEVMEM);
  cr_expect_eq(cl_status(CL_OUT_OF_RESOURCES, "run", err, sizeof err),
               QS_EDEVMEM);
  cr_expect_not_null(strstr(err, "run: CL_OUT_OF_RESOURCES (-5)"), "%s", err);
  cr_expect_eq(cl_status(CL_BUILD_PROGRAM_FAILURE, "b", err, sizeof err),
               QS_EBUILD);
  cr_expect_eq(cl_status(CL_INVALID_KERNEL_ARGS, "args", err, sizeof err),
               QS_ECL);
  cr_expect_not_null(strstr(err, "CL_INVALID_KERNEL_ARGS"));
  cr_expect_str_eq(cl_code_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
  cr_expect_str_eq(cl_code_name(-12345), "unknown OpenCL error");
}

/* The devices a runtime discovered are listed in the cache's "devices"
 * folder; the next runtime over that cache takes them from the list,
 * without loading the OpenCL runtimes (clrt_listed), with the same
 * identity and limits, and matches them with the runtime's at the first
 * use of one, which then builds and runs as ever. */
Test(clrt, listed_devices_match_at_first_use) {
  char dir[64];
  temp_dir(dir, sizeof dir);
  clrt *a = open_or_skip(dir);
  cr_assert(!clrt_listed(a), "discovered at open, nothing to match");
  size_t n = clrt_count(a), k = n < 8 ? n : 8;
  cldev_info seen[8];
  for (size_t i = 0; i < k; i++) seen[i] = *cldev_about(clrt_device(a, i));
  clrt_close(a);
  clrt *b = open_or_skip(dir);
  cr_assert(clrt_listed(b), "the second runtime lists its devices");
  cr_assert_eq(clrt_count(b), n);
  for (size_t i = 0; i < k; i++) {
    const cldev_info *d = cldev_about(clrt_device(b, i));
    cr_expect_str_eq(d->slug, seen[i].slug);
    cr_expect_str_eq(d->fingerprint, seen[i].fingerprint);
    cr_expect_str_eq(d->name, seen[i].name);
    cr_expect_eq(d->compute_units, seen[i].compute_units);
    cr_expect_eq(d->max_alloc, seen[i].max_alloc);
    cr_expect_eq(d->shares_host_cores, seen[i].shares_host_cores);
  }
  cl_program p;
  cr_assert_eq(build_cubic(b, "", &p), QS_OK);
  cr_assert(!clrt_listed(b), "matched at the first use");
  close_with_cubic(b, p, dir);
}

/* A listed device the runtime no longer has (a GPU taken out, every file
 * in place) fails at its first use with QS_EUNAVAIL and a message that
 * says so; the others work, and the list is stored anew without it. */
Test(clrt, listed_device_gone_fails_and_the_list_is_renewed) {
  char dir[64], list[96];
  temp_dir(dir, sizeof dir);
  snprintf(list, sizeof list, "%s/devices", dir);
  clrt *a = open_or_skip(dir);
  size_t n = clrt_count(a);
  cldev_info *infos = calloc(n + 1, sizeof *infos);
  cr_assert_not_null(infos);
  for (size_t i = 0; i < n; i++)
    memcpy(&infos[i], cldev_about(clrt_device(a, i)), sizeof infos[i]);
  clrt_close(a);
  memcpy(&infos[n], &infos[0], sizeof infos[n]);
  snprintf(infos[n].name, sizeof infos[n].name, "Vanished Accelerator 9000");
  infos[n].ident ^= 1; /* another identity, so another fingerprint */
  devlist_store(list, devlist_key(), infos, n + 1);
  clrt *b = open_or_skip(dir);
  cr_assert_eq(clrt_count(b), n + 1);
  cldev *gone = NULL, *real = NULL;
  for (size_t i = 0; i < n + 1; i++) {
    cldev *d = clrt_device(b, i);
    if (!strcmp(cldev_about(d)->name, infos[n].name))
      gone = d;
    else if (!real)
      real = d;
  }
  cr_assert(gone && real);
  char err[512] = "";
  cl_context ctx;
  cl_command_queue q;
  cr_assert_eq(cldev_queue(gone, &ctx, &q, err, sizeof err), QS_EUNAVAIL);
  cr_expect_not_null(strstr(err, "was not found"), "%s", err);
  cr_expect_not_null(strstr(err, "vanished-accelerator-9000"), "%s", err);
  cr_assert_eq(cldev_bind(gone, err, sizeof err), QS_EUNAVAIL);
  cr_assert_eq(cldev_queue(real, &ctx, &q, err, sizeof err), QS_OK, "%s",
               err);
  clrt_close(b);
  cldev_info *now;
  size_t m;
  cr_assert_eq(devlist_load(list, devlist_key(), &now, &m), 0);
  cr_expect_eq(m, n);
  for (size_t i = 0; i < m; i++)
    cr_expect_str_neq(now[i].name, infos[n].name);
  free(now);
  free(infos);
  dir_remove(dir);
}

/* A list whose strings fill their fields (a damaged or hostile file that
 * still has a valid checksum) is read with every string ended inside its
 * field: nothing reads past it, the slug is short, the fingerprint is this
 * build's. No runtime is loaded for it. */
Test(clrt, listed_strings_end_inside_their_fields) {
  char dir[64], list[96];
  temp_dir(dir, sizeof dir);
  snprintf(list, sizeof list, "%s/devices", dir);
  cldev_info in;
  memset(&in, 'A', sizeof in);
  devlist_store(list, devlist_key(), &in, 1);
  clrt *rt = NULL;
  char err[256] = "";
  cr_assert_eq(clrt_open(&rt, 0, dir, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(clrt_count(rt), 1);
  cr_expect(clrt_listed(rt));
  const cldev_info *d = cldev_about(clrt_device(rt, 0));
  cr_expect_eq(strlen(d->name), sizeof d->name - 1);
  cr_expect_eq(strlen(d->version), sizeof d->version - 1);
  cr_expect_lt(strlen(d->slug), sizeof d->slug);
  cr_expect_eq(strlen(d->fingerprint), 16);
  clrt_close(rt);
  dir_remove(dir);
}

Test(clrt, empty_icd_vendor_dir_gives_zero_devices) {
  char dir[64];
  temp_dir(dir, sizeof dir);
  /* Each test runs in its own process, so this reaches only this test. */
  setenv("OCL_ICD_VENDORS", dir, 1);
  clrt *rt = NULL;
  char err[256] = "";
  cr_assert_eq(clrt_open(&rt, 0, NULL, err, sizeof err), QS_OK, "%s", err);
  cr_expect_eq(clrt_count(rt), 0);
  cr_expect_null(clrt_device(rt, 0));
  cr_expect_not_null(strstr(clrt_why(rt), "no OpenCL platform"), "%s",
                     clrt_why(rt));
  clrt_close(rt);
  dir_remove(dir);
}

Test(clrt, platform_without_devices_gives_zero_devices) {
  /* PoCL hides its device (clGetDeviceIDs: CL_DEVICE_NOT_FOUND) when it
   * cannot create its kernel cache. */
  char dir[64], blocked[128];
  blocked_dir(dir, sizeof dir, blocked, sizeof blocked);
  setenv("POCL_CACHE_DIR", blocked, 1);
  clrt *rt = NULL;
  char err[256] = "";
  cr_assert_eq(clrt_open(&rt, 0, NULL, err, sizeof err), QS_OK, "%s", err);
  for (size_t i = 0; i < clrt_count(rt); i++)
    cr_expect_str_neq(cldev_about(clrt_device(rt, i))->platform,
                      "Portable Computing Language",
                      "PoCL listed a device without a kernel cache");
  if (clrt_count(rt) == 0)
    cr_expect_not_null(strstr(clrt_why(rt), "CL_DEVICE_NOT_FOUND"), "%s",
                       clrt_why(rt));
  clrt_close(rt);
  blocked_remove(dir);
}

/* Transfer accounting: per device, cumulative, both directions apart; a
 * NULL device counts nothing and reads as zero. */
Test(clrt, transfer_counters_add_per_device) {
  clrt *rt = open_or_skip(NULL);
  cldev *d = clrt_device(rt, 0);
  uint64_t up, down;
  cldev_transfers(d, &up, &down);
  cr_assert_eq(up, 0);
  cr_assert_eq(down, 0);
  cldev_transfer(d, 100, 7);
  cldev_transfer(d, (uint64_t)1 << 33, 0);
  cldev_transfers(d, &up, &down);
  cr_assert_eq(up, 100 + ((uint64_t)1 << 33));
  cr_assert_eq(down, 7);
  cldev_transfer(NULL, 5, 5);
  cldev_transfers(NULL, &up, &down);
  cr_assert_eq(up + down, 0);
  clrt_close(rt);
}

#endif /* QS_HAVE_OPENCL */

Test(clrt, disabled_gives_zero_devices_with_reason) {
  clrt *rt = NULL;
  char err[256] = "";
  cr_assert_eq(clrt_open(&rt, 1, "/nonexistent/dir", err, sizeof err), QS_OK,
               "%s", err);
  cr_expect_eq(clrt_count(rt), 0);
  cr_expect_null(clrt_device(rt, 0));
  cr_expect_not_null(strstr(clrt_why(rt), "disabled"), "%s", clrt_why(rt));
  clrt_counters c = clrt_stats(rt);
  cr_expect_eq(
      c.built + c.disk_hits + c.memory_hits + c.disk_writes + c.failures, 0);
  clrt_close(rt);
}

Test(clrt, cache_clear_removes_only_entries) {
  char dir[] = "/tmp/qs-clrt-clear-XXXXXX", path[128];
  cr_assert_not_null(mkdtemp(dir));
  static const char *const names[] = {
      "0123456789abcdef.bin", "fedcba9876543210.bin.Ab12Cd", "notes.txt",
      "0123.bin", "0123456789abcdef.bin.x"};
  for (size_t i = 0; i < 5; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fclose(f);
  }
  size_t n = 0;
  cr_expect_eq(cl_cache_clear(dir, &n), QS_OK);
  cr_expect_eq(n, 2);
  for (size_t i = 0; i < 5; i++) {
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    cr_expect_eq(access(path, F_OK) == 0, i >= 2, "%s", names[i]);
    unlink(path);
  }
  cr_expect_eq(rmdir(dir), 0);
  cr_expect_eq(cl_cache_clear(dir, &n), QS_OK, "a missing dir is empty");
  cr_expect_eq(n, 0);
}

Test(clrt, prune_keeps_the_most_recent_entries) {
  char dir[] = "/tmp/qs-clrt-prune-XXXXXX", path[128];
  cr_assert_not_null(mkdtemp(dir));
  /* Entry i was last used at time 1000 * (i + 1); index 1 is the newest. */
  static const int order[5] = {2, 4, 0, 1, 3};
  for (int i = 0; i < 5; i++) {
    snprintf(path, sizeof path, "%s/%016x.bin", dir, i);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fclose(f);
    struct timespec t[2] = {{1000 * (order[i] + 1), 0},
                            {1000 * (order[i] + 1), 0}};
    cr_assert_eq(utimensat(AT_FDCWD, path, t, 0), 0);
  }
  snprintf(path, sizeof path, "%s/%016x.bin.Ab12Cd", dir, 9);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fclose(f);
  cache_prune(dir, 3);
  for (int i = 0; i < 5; i++) {
    snprintf(path, sizeof path, "%s/%016x.bin", dir, i);
    cr_expect_eq(access(path, F_OK) == 0, order[i] >= 2,
                 "entry %d used at rank %d", i, order[i]);
  }
  size_t n = 0;
  cr_expect_eq(cl_cache_clear(dir, &n), QS_OK);
  cr_expect_eq(n, 4, "three entries and the temporary file were left");
  cr_expect_eq(rmdir(dir), 0);
}

Test(clrt, slugs_are_short_lowercase_words) {
  static const char *const cases[][2] = {
      {"pthread-haswell-AMD EPYC", "pthread-haswell-amd-epyc"},
      {"pthread-skylake-avx512-AMD EPYC", "pthread-skylake-avx512-amd-epyc"},
      {"Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz", "intel-core-i7-8700"},
      {"NVIDIA GeForce RTX 3080", "nvidia-geforce-rtx-3080"},
      {"  gfx1030  ", "gfx1030"},
      {"AMD Ryzen 9 7950X 16-Core Processor with Radeon Graphics",
       "amd-ryzen-9-7950x-16-core-radeon"},
      {"(R)(TM)", "device"},
      {"", "device"},
  };
  char out[48];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cl_slug(cases[i][0], out, sizeof out);
    cr_expect_str_eq(out, cases[i][1], "slug of \"%s\"", cases[i][0]);
  }
  cl_slug("averyveryverylongsingleword", out, 8);
  cr_expect_str_eq(out, "averyve");
}

/* ----------------------------------------------- stable device fingerprints */

/* A device as PoCL describes a CPU (shares the host's cores and memory)
 * or, with gpu set, a device with memory of its own. */
/* The identity hash of a device's strings, as discovery computes it. */
static uint64_t ident_of(const char *platform, const char *vendor,
                         const char *name, const char *driver,
                         const char *version) {
  const char *s[] = {platform, vendor, name, driver, version};
  uint64_t h = HASH_SEED;
  for (int i = 0; i < 5; i++) h = hash_str(h, s[i]);
  return h;
}

static cldev_info fake_device(int gpu, uint64_t global_mem,
                              uint64_t max_alloc) {
  cldev_info in;
  memset(&in, 0, sizeof in);
  in.ident = ident_of("Portable Computing Language", "GenuineIntel",
                      "pthread-test-device", "3.1+debian", "OpenCL 3.0 PoCL");
  in.is_gpu = gpu;
  in.shares_host_cores = !gpu;
  in.compute_units = 2;
  in.clock_mhz = 2100;
  in.global_mem = global_mem;
  in.max_alloc = max_alloc;
  in.max_work_group = 4096;
  in.fp64 = 1;
  return in;
}

#define GIB(x) ((uint64_t)((x) * 1073741824.0))

/* Whether two devices get the same fingerprint. */
static int same_fp(const cldev_info *a, const cldev_info *b) {
  char fa[17], fb[17];
  cl_fingerprint(a, fa);
  cl_fingerprint(b, fb);
  return !strcmp(fa, fb);
}

/* The same device reporting two memory sizes (PoCL follows the host's
 * free RAM: 4.85 then 8.34 GiB, its largest allocation 1 then 2 GiB)
 * keeps its fingerprint; the first scheme's changed with them. */
Test(clrt, fingerprint_ignores_reported_memory) {
  cldev_info a = fake_device(0, GIB(4.85), GIB(1)),
             b = fake_device(0, GIB(8.34), GIB(2));
  char fa[17], fb[17], va[17], vb[17];
  cl_fingerprint(&a, fa);
  cl_fingerprint(&b, fb);
  cr_expect_str_eq(fa, fb);
  cl_fingerprint_v1(&a, a.global_mem, a.max_alloc, va);
  cl_fingerprint_v1(&b, b.global_mem, b.max_alloc, vb);
  cr_expect_str_neq(va, vb, "the first scheme moved with the memory");
  cr_expect_str_neq(fa, va);
  /* the first scheme as it was: FNV-1a over the decimal texts (computed
   * apart, in Python, for these strings) */
  cldev_info c = fake_device(0, 5207959552ull, 1073741824ull);
  char vc[17];
  cl_fingerprint_v1(&c, c.global_mem, c.max_alloc, vc);
  cr_expect_eq(c.ident, 0x0728d272fcef3d87ull);
  cr_expect_str_eq(vc, "60dbd0b3abc99a6e");
  /* what does name a device: identity, compute units, fp64; a CPU
   * device's clock is the host's current frequency: ignored */
  cldev_info d = a, e = a, f = a, g = a;
  d.compute_units = 4;
  e.ident ^= 1;
  f.fp64 = 0;
  g.clock_mhz = 2600;
  cr_expect(!same_fp(&a, &d), "compute units");
  cr_expect(!same_fp(&a, &e), "name, vendor or driver");
  cr_expect(!same_fp(&a, &f), "fp64");
  cr_expect(same_fp(&a, &g), "CPU clock");
  /* a GPU: its global memory is ignored too, its clock and allocation
   * class are not */
  cldev_info x = fake_device(1, GIB(7.6), GIB(1.9)),
             y = fake_device(1, GIB(7.8), GIB(1.95)), z = y, w = x;
  z.max_alloc = GIB(4);
  w.clock_mhz = 1500;
  cr_expect(same_fp(&x, &y), "GPU, same allocation class");
  cr_expect(!same_fp(&x, &z), "GPU, another allocation class");
  cr_expect(!same_fp(&x, &w), "GPU clock");
}

#if QS_HAVE_OPENCL
#include "db/store.h"

static int count_device(void *ctx, const run_row *r) {
  (void)r;
  ++*(size_t *)ctx;
  return 0;
}

static size_t runs_on(store *s, const char *fp) {
  store_filter f = {.device = fp};
  size_t n = 0;
  char err[512];
  cr_assert_eq(store_query(s, &f, count_device, &n, err, sizeof err), QS_OK,
               "%s", err);
  return n;
}

typedef struct seen {
  const char *fp;
  int found;
  double first;
} seen;

static int find_device(void *ctx, const device_row *d) {
  seen *s = ctx;
  if (!strcmp(d->fingerprint, s->fp)) s->found = 1, s->first = d->first_seen;
  return 0;
}

/* A store with this machine's device recorded under the first scheme at
 * two reported memory sizes (two old names, rows under each): an engine
 * that opens it moves both to the stable fingerprint, keeps the earlier
 * first sighting, and leaves another device's rows alone. */
Test(clrt, old_rows_move_to_the_stable_fingerprint) {
  clrt *rt = open_or_skip(NULL);
  cldev_info in = *cldev_about(clrt_device(rt, 0));
  clrt_close(rt);
  /* dev_read's identity is the chain of the device's strings */
  cr_expect_eq(ident_of(in.platform, in.vendor, in.name, in.driver,
                        in.version),
               in.ident);
  char dir[64], db[128], old[2][17], err[1024];
  temp_dir(dir, sizeof dir);
  snprintf(db, sizeof db, "%s/t.db", dir);
  uint64_t mem[2][2] = {{GIB(4.85), GIB(1)}, {GIB(8.34), GIB(2)}};
  store *s;
  cr_assert_eq(store_open(&s, db, err, sizeof err), QS_OK, "%s", err);
  for (int k = 0; k < 2; k++) {
    cl_fingerprint_v1(&in, mem[k][0], mem[k][1], old[k]);
    char info[256];
    snprintf(info, sizeof info,
             "{\"kind\":\"opencl\",\"global_mem\":%llu,\"max_alloc\":%llu}",
             (unsigned long long)mem[k][0], (unsigned long long)mem[k][1]);
    cr_assert_eq(store_device(s, old[k], "old name", info, err, sizeof err),
                 QS_OK, "%s", err);
    for (int i = 0; i < 3 + k; i++) {
      run_row r = {.stamp = 1000.0 + 10 * k + i, .method = "shift_magnify",
                   .impl = "opencl:x", .impl_version = 1, .device = old[k],
                   .key = "k", .work = 1, .wall = 0.5 + i};
      cr_assert_eq(store_record(s, &r, err, sizeof err), QS_OK, "%s", err);
    }
  }
  /* another device of the same vendor: not this one, never moved */
  cldev_info other = in;
  other.ident ^= 0x5a;
  char foreign[17];
  cl_fingerprint_v1(&other, mem[0][0], mem[0][1], foreign);
  cr_assert_eq(store_device(s, foreign, "another",
                            "{\"kind\":\"opencl\",\"global_mem\":5207628595,"
                            "\"max_alloc\":1073741824}",
                            err, sizeof err),
               QS_OK);
  run_row r = {.stamp = 1, .method = "shift_magnify", .impl = "opencl:y",
               .impl_version = 1, .device = foreign, .key = "k", .work = 1,
               .wall = 1};
  cr_assert_eq(store_record(s, &r, err, sizeof err), QS_OK, "%s", err);
  seen before = {.fp = old[0]};
  store_devices(s, find_device, &before, err, sizeof err);
  store_close(s);

  qs_engine_options o = {.db_path = db};
  qs_engine *e = NULL;
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK, "%s", qs_engine_error(e));
  qs_engine_close(e);
  cr_assert_eq(store_open(&s, db, err, sizeof err), QS_OK, "%s", err);
  cr_expect_eq(runs_on(s, in.fingerprint), 7, "3 + 4 rows moved");
  cr_expect_eq(runs_on(s, old[0]), 0);
  cr_expect_eq(runs_on(s, old[1]), 0);
  cr_expect_eq(runs_on(s, foreign), 1);
  seen now = {.fp = in.fingerprint}, gone = {.fp = old[1]},
       kept = {.fp = foreign};
  store_devices(s, find_device, &now, err, sizeof err);
  store_devices(s, find_device, &gone, err, sizeof err);
  store_devices(s, find_device, &kept, err, sizeof err);
  cr_expect(now.found && !gone.found && kept.found);
  cr_expect_eq(now.first, before.first, "the first sighting is kept");
  store_close(s);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_expect_eq(system(cmd), 0);
}
#endif

/* The device list's key follows what decides the devices found: a
 * variable a runtime reads changes it, one none reads does not, and it is
 * the same again once the variable is gone. */
Test(clrt, device_list_key_follows_the_environment) {
  uint64_t k0 = devlist_key();
  cr_assert_eq(devlist_key(), k0);
  setenv("POCL_QS_TEST_ONLY", "1", 1);
  cr_expect_neq(devlist_key(), k0);
  unsetenv("POCL_QS_TEST_ONLY");
  cr_expect_eq(devlist_key(), k0);
  setenv("QS_TEST_UNRELATED", "1", 1);
  cr_expect_eq(devlist_key(), k0);
  unsetenv("QS_TEST_UNRELATED");
}
