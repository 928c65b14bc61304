/* qs_run.c — runs one method on raw float32 inputs for the comparison
 * harness (bench/nanopyx/compare.py) and prints timings as JSON.
 *
 *   qs_run -m METHOD -i FILE:F,R,C [-i ...] [-p NAME=VALUE ...]
 *          [-I IMPL] [-w WARMUP] [-r REPEATS] [-o PREFIX] [--serve|--list]
 *
 * -I names an implementation or a kind, as run_request.impl; "auto" (the
 * default) lets the agent choose. Without --serve: WARMUP untimed runs,
 * REPEATS timed runs, then one JSON object on stdout with every repeat's wall
 * seconds (around qs_method_run, so dispatch and output allocation count),
 * min, median, the implementation(s) used and the peak resident set of the
 * process (VmHWM). With --serve the process loads its inputs once and
 * answers stdin lines: "run [IMPL]" times one call (IMPL, else -I) and
 * prints a JSON line, "quit" prints the peak resident set and exits; the
 * harness uses it to interleave contenders without paying start-up each
 * round. --list prints the method's implementations as a JSON array (name,
 * kind, available, why) and runs nothing. -o writes the outputs of
 * the last run to PREFIX.<k>.f32 (raw float32, little-endian host order).
 *
 * The timing store is $QUICKSILVER_DB (or the default), so forced runs teach
 * the agent as a caller's would. Messages go to stderr; exit status 0 on
 * success, 1 on a failed run, 2 on bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "quicksilver.h"

#define MAX_IN 8
#define MAX_PARAMS 32
#define MAX_OUT 8
#define MAX_REPEATS 10000

typedef struct opts {
  const char *method;
  const char *impl; /* NULL: agent */
  const char *out_prefix;
  int warmup, repeats, serve, list;
  long rss_before_kb; /* after the inputs are loaded */
  size_t n_in, n_p;
  qs_image in[MAX_IN];
  qs_param p[MAX_PARAMS];
} opts;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Peak resident set of this program in KiB: VmHWM, which belongs to the
 * address space exec created; ru_maxrss would also carry the high-water mark
 * of the parent that forked it (Linux keeps it across execve). */
static long peak_rss_kb(void) {
  long kb = -1;
  char line[256];
  FILE *f = fopen("/proc/self/status", "r");
  while (f && fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %ld kB", &kb) == 1) break;
  if (f) fclose(f);
  if (kb < 0) {
    struct rusage u;
    if (getrusage(RUSAGE_SELF, &u) == 0) kb = u.ru_maxrss;
  }
  return kb;
}

static int usage(void) {
  fprintf(stderr,
          "usage: qs_run -m METHOD -i FILE:F,R,C [-i ...] [-p NAME=VALUE ...]"
          "\n              [-I IMPL|auto] [-w WARMUP] [-r REPEATS] "
          "[-o PREFIX] [--serve]\n");
  return 2;
}

/* Reads FILE:F,R,C into a new image owned by the caller. */
static int input_load(const char *spec, qs_image *img) {
  const char *colon = strrchr(spec, ':');
  unsigned long long f, r, c;
  if (!colon || sscanf(colon + 1, "%llu,%llu,%llu", &f, &r, &c) != 3) {
    fprintf(stderr, "qs_run: -i %s: expected FILE:FRAMES,ROWS,COLS\n", spec);
    return 2;
  }
  char path[4096];
  size_t len = (size_t)(colon - spec);
  if (len >= sizeof path) {
    fprintf(stderr, "qs_run: -i %s: path too long\n", spec);
    return 2;
  }
  memcpy(path, spec, len);
  path[len] = '\0';
  int rc = qs_image_alloc(img, (size_t)f, (size_t)r, (size_t)c);
  if (rc) {
    fprintf(stderr, "qs_run: %s: %s\n", path, qs_status_message(rc));
    return 1;
  }
  size_t n = img->frames * img->rows * img->cols;
  FILE *fp = fopen(path, "rb");
  size_t got = fp ? fread(img->data, sizeof(float), n, fp) : 0;
  int extra = fp ? fgetc(fp) != EOF : 0;
  if (fp) fclose(fp);
  if (got != n || extra) {
    fprintf(stderr, "qs_run: %s: expected exactly %zu float32 values\n", path,
            n);
    qs_image_free(img);
    return 1;
  }
  return 0;
}

static int outputs_write(const char *prefix, const qs_image *out, size_t n) {
  for (size_t k = 0; k < n; k++) {
    char path[4096];
    snprintf(path, sizeof path, "%s.%zu.f32", prefix, k);
    FILE *fp = fopen(path, "wb");
    size_t px = out[k].frames * out[k].rows * out[k].cols;
    size_t put = fp ? fwrite(out[k].data, sizeof(float), px, fp) : 0;
    if (!fp || fclose(fp) != 0 || put != px) {
      fprintf(stderr, "qs_run: cannot write %s\n", path);
      return 1;
    }
  }
  return 0;
}

/* One timed call. On success fills *sec and *rep and, when keep is set,
 * leaves the outputs in out (else frees them). */
static int run_once(qs_engine *e, const opts *o, const char *impl,
                    const qs_method_desc *d, qs_image *out, int keep,
                    double *sec, qs_run_report *rep) {
  qs_run_request rq = {.inputs = o->in,
                       .n_inputs = o->n_in,
                       .params = o->p,
                       .n_params = o->n_p,
                       .impl = impl};
  double t0 = now_s();
  int rc = qs_method_run(e, o->method, &rq, out, d->n_outputs, rep);
  *sec = now_s() - t0;
  if (rc) {
    fprintf(stderr, "qs_run: %s: %s\n", o->method, qs_engine_error(e));
    return 1;
  }
  if (!keep)
    for (size_t k = 0; k < d->n_outputs; k++)
      qs_image_free(&out[k]);
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void json_shapes(const qs_image *out, size_t n) {
  printf("\"shapes\":[");
  for (size_t k = 0; k < n; k++)
    printf("%s[%zu,%zu,%zu]", k ? "," : "", out[k].frames, out[k].rows,
           out[k].cols);
  printf("]");
}

static int serve(qs_engine *e, const opts *o, const qs_method_desc *d) {
  char line[256];
  qs_image out[MAX_OUT];
  while (fgets(line, sizeof line, stdin)) {
    if (!strncmp(line, "quit", 4)) break;
    if (strncmp(line, "run", 3)) {
      printf("{\"error\":\"unknown command\"}\n");
      fflush(stdout);
      continue;
    }
    char name[QS_NAME_MAX] = "";
    const char *impl = o->impl;
    if (sscanf(line + 3, " %63s", name) == 1)
      impl = strcmp(name, "auto") ? name : NULL;
    double sec;
    qs_run_report rep;
    int keep = o->out_prefix != NULL;
    if (run_once(e, o, impl, d, out, keep, &sec, &rep)) {
      printf("{\"error\":\"run failed\"}\n");
      fflush(stdout);
      return 1;
    }
    printf("{\"seconds\":%.9g,\"engine_seconds\":%.9g,\"impl\":\"%s\","
           "\"reason\":\"%s\",\"once_seconds\":%.9g,",
           sec, rep.seconds, rep.impl, rep.reason, rep.once_seconds);
    json_shapes(out, keep ? d->n_outputs : 0);
    printf("}\n");
    fflush(stdout);
    if (keep) {
      int rc = outputs_write(o->out_prefix, out, d->n_outputs);
      for (size_t k = 0; k < d->n_outputs; k++)
        qs_image_free(&out[k]);
      if (rc) return 1;
    }
  }
  printf("{\"rss_before_kb\":%ld,\"peak_rss_kb\":%ld}\n", o->rss_before_kb,
         peak_rss_kb());
  fflush(stdout);
  return 0;
}

static int batch(qs_engine *e, const opts *o, const qs_method_desc *d) {
  qs_image out[MAX_OUT];
  qs_run_report rep;
  double sec;
  for (int i = 0; i < o->warmup; i++)
    if (run_once(e, o, o->impl, d, out, 0, &sec, &rep)) return 1;
  double *t = malloc(sizeof(double) * (size_t)o->repeats);
  char(*used)[QS_NAME_MAX] = malloc(QS_NAME_MAX * (size_t)o->repeats);
  if (!t || !used) {
    free(t);
    free(used);
    fprintf(stderr, "qs_run: out of memory\n");
    return 1;
  }
  int rc = 0;
  for (int i = 0; i < o->repeats && !rc; i++) {
    int last = i == o->repeats - 1;
    rc = run_once(e, o, o->impl, d, out, last, &t[i], &rep);
    if (!rc) snprintf(used[i], QS_NAME_MAX, "%s", rep.impl);
  }
  if (!rc) {
    printf("{\"method\":\"%s\",\"impl_requested\":\"%s\",\"repeats\":[",
           o->method, o->impl ? o->impl : "auto");
    for (int i = 0; i < o->repeats; i++)
      printf("%s%.9g", i ? "," : "", t[i]);
    printf("],\"impls\":[");
    for (int i = 0; i < o->repeats; i++)
      printf("%s\"%s\"", i ? "," : "", used[i]);
    qsort(t, (size_t)o->repeats, sizeof *t, cmp_double);
    double med = o->repeats % 2
                     ? t[o->repeats / 2]
                     : 0.5 * (t[o->repeats / 2 - 1] + t[o->repeats / 2]);
    printf("],\"min\":%.9g,\"median\":%.9g,\"reason\":\"%s\","
           "\"once_seconds\":%.9g,",
           t[0], med, rep.reason, rep.once_seconds);
    json_shapes(out, d->n_outputs);
    printf(",\"rss_before_kb\":%ld,\"peak_rss_kb\":%ld}\n", o->rss_before_kb,
           peak_rss_kb());
    if (o->out_prefix) rc = outputs_write(o->out_prefix, out, d->n_outputs);
    for (size_t k = 0; k < d->n_outputs; k++)
      qs_image_free(&out[k]);
  }
  free(t);
  free(used);
  return rc;
}

static int list(qs_engine *e, const opts *o) {
  qs_impl_info info[QS_MAX_ESTIMATES];
  size_t n = 0;
  int rc = qs_method_impls(e, o->method, info, QS_MAX_ESTIMATES, &n);
  if (rc) {
    fprintf(stderr, "qs_run: %s\n", qs_engine_error(e));
    return 1;
  }
  if (n > QS_MAX_ESTIMATES) n = QS_MAX_ESTIMATES;
  printf("[");
  for (size_t i = 0; i < n; i++) {
    printf("%s{\"name\":\"%s\",\"kind\":%d,\"available\":%d,\"why\":\"",
           i ? "," : "", info[i].name, (int)info[i].kind, info[i].available);
    for (const char *c = info[i].why; *c; c++)
      if (*c != '"' && *c != '\\' && (unsigned char)*c >= 0x20) putchar(*c);
    printf("\"}");
  }
  printf("]\n");
  return 0;
}

/* Parses the command line into *o; returns 0 or an exit status. */
static int opts_parse(int argc, char **argv, opts *o) {
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--serve") || !strcmp(a, "--list")) {
      *(a[2] == 's' ? &o->serve : &o->list) = 1;
      continue;
    }
    if (a[0] != '-' || a[1] == '\0' || a[2] != '\0' || i + 1 >= argc)
      return usage();
    const char *v = argv[++i];
    switch (a[1]) {
    case 'm':
      o->method = v;
      break;
    case 'I':
      o->impl = strcmp(v, "auto") ? v : NULL;
      break;
    case 'o':
      o->out_prefix = v;
      break;
    case 'w':
      o->warmup = atoi(v);
      break;
    case 'r':
      o->repeats = atoi(v);
      break;
    case 'i':
      if (o->n_in == MAX_IN) return usage();
      {
        int rc = input_load(v, &o->in[o->n_in]);
        if (rc) return rc;
      }
      o->n_in++;
      break;
    case 'p': {
      char *eq = strchr(argv[i], '=');
      if (!eq || o->n_p == MAX_PARAMS) return usage();
      *eq = '\0'; /* argv strings are writable and outlive the run */
      o->p[o->n_p++] = (qs_param){.name = argv[i], .text = eq + 1};
      break;
    }
    default:
      return usage();
    }
  }
  if (!o->method || (o->n_in == 0 && !o->list) || o->warmup < 0 ||
      o->repeats < 1 || o->repeats > MAX_REPEATS)
    return usage();
  return 0;
}

int main(int argc, char **argv) {
  opts o = {.warmup = 1, .repeats = 5};
  int rc = opts_parse(argc, argv, &o);
  qs_engine *e = NULL;
  if (!rc) {
    rc = qs_engine_open(&e, NULL);
    if (rc) {
      fprintf(stderr, "qs_run: engine: %s\n",
              e ? qs_engine_error(e) : qs_status_message(rc));
      rc = 1;
    }
  }
  const qs_method_desc *d = rc ? NULL : qs_method_find(e, o.method);
  if (!rc && (!d || d->n_outputs > MAX_OUT)) {
    fprintf(stderr, "qs_run: unknown method %s\n", o.method);
    rc = 2;
  }
  o.rss_before_kb = peak_rss_kb();
  if (!rc)
    rc = o.list ? list(e, &o) : o.serve ? serve(e, &o, d) : batch(e, &o, d);
  qs_engine_close(e);
  for (size_t k = 0; k < o.n_in; k++)
    qs_image_free(&o.in[k]);
  return rc;
}
