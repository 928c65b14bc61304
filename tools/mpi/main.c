/* main.c — quicksilver-mpi: a method over MPI ranks from the command line.
 *
 *   mpirun -n P quicksilver-mpi esrrf IN.tif -o OUT.tif [--PARAM VALUE ...]
 *   mpirun -n P quicksilver-mpi run METHOD IN.tif [IN2.tif ...] -o OUT.tif
 *       [-o OUT2.tif ...] [--PARAM VALUE ...]
 * Options: --impl NAME|KIND, --threads N (per rank; default: the host's
 * cores shared among the ranks on that host), --db PATH, --chunk-bytes N,
 * --gather, --no-opencl, --json (report on stdout), -q (no report), --help.
 *
 * A separate binary keeps MPI out of the quicksilver CLI and its library.
 * Rank 0 prints the report (which rank ran which units, with which
 * implementation, how long, the load imbalance, the bytes communicated) and
 * the one error message; every rank exits with the same status: 0 success,
 * 1 failure (no output file is left), 2 usage. */
#include <cJSON.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "args.h"
#include "outfile.h"
#include "quicksilver_mpi.h"

static const opt_def opts[] = {
    {"output", 'o', "FILE", "output TIFF (repeat for further outputs)"},
    {"impl", 0, "NAME|KIND", "force an implementation or kinds on every rank"},
    {"threads", 0, "N", "threads per rank (default: cores / ranks on host)"},
    {"db", 0, "PATH", "timing store (default: one per host)"},
    {"chunk-bytes", 0, "N",
     "input and output bytes a chunk may hold (default 256 MiB; one unit "
     "at least)"},
    {"gather", 0, NULL,
     "gather the outputs in rank 0's memory, rank 0 writes them (default: "
     "each rank writes its own pages of OUT in place)"},
    {"no-opencl", 0, NULL, "no OpenCL devices"},
    {"json", 0, NULL, "report as JSON on stdout"},
    {"quiet", 'q', NULL, "no report"},
    {"help", 'h', NULL, "this help"},
    {NULL, 0, NULL, NULL},
};

static int rank0;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...) {
  if (!rank0) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("quicksilver-mpi: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

static void usage(const qs_method_desc *d) {
  if (!rank0) return;
  printf("usage: mpirun -n P quicksilver-mpi esrrf IN.tif -o OUT.tif "
         "[--PARAM VALUE ...] [options]\n"
         "       mpirun -n P quicksilver-mpi run METHOD IN.tif [IN2.tif ...] "
         "-o OUT.tif [-o ...] [--PARAM VALUE ...] [options]\n\noptions:\n");
  for (const opt_def *o = opts; o->name; o++) {
    char left[48];
    snprintf(left, sizeof left, "%s%c%s--%s%s%s", o->short_name ? "-" : "",
             o->short_name ? o->short_name : ' ', o->short_name ? ", " : "  ",
             o->name, o->meta ? " " : "", o->meta ? o->meta : "");
    printf("  %-28s %s\n", o->short_name ? left : left + 2, o->doc);
  }
  if (!d) return;
  printf("\nparameters of %s:\n", d->name);
  for (size_t i = 0; i < d->n_params; i++) {
    char flag[QS_NAME_MAX], def[64];
    args_flag_of(d->params[i].name, flag, sizeof flag);
    qs_params_format(&d->params[i], d->params[i].def, def, sizeof def);
    printf("  --%-26s %s (default %s)\n", flag, d->params[i].doc, def);
  }
}

/* Threads per rank unless given: the host's cores over its ranks. */
static int default_threads(void) {
  const char *env = getenv("QUICKSILVER_THREADS");
  if (env && *env) return 0; /* the engine reads it */
  MPI_Comm local;
  int n = 1;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL,
                      &local);
  MPI_Comm_size(local, &n);
  MPI_Comm_free(&local);
  int t = qs_engine_cores() / (n > 0 ? n : 1);
  return t < 1 ? 1 : t;
}

/* A rank's report field, for both the text table and the JSON: its JSON
 * key, its column heading (NULL: JSON only) and width (negative: left
 * aligned, strings cut to it; 0: the last column, uncut), its type and
 * where it is in qsm_rank. */
typedef struct rank_field {
  const char *key, *head;
  int width;
  char type; /* 's' string, 'i' int, 'u' uint64_t, 'd' double */
  size_t at;
} rank_field;

#define F_(key, head, width, type, member) \
  {key, head, width, type, offsetof(qsm_rank, member)}
static const rank_field rank_fields[] = {
    F_("rank", "rank", 4, 'i', rank),
    F_("host", "host", -12, 's', host),
    F_("db", NULL, 0, 's', db),
    F_("threads", "thr", 3, 'i', threads),
    F_("impl", "impl", -20, 's', impl),
    F_("units", "units", 6, 'u', units),
    F_("chunks", "chunks", 6, 'u', chunks),
    F_("read_seconds", "read_s", 8, 'd', read_seconds),
    F_("run_seconds", "run_s", 8, 'd', run_seconds),
    F_("calibration_seconds", NULL, 0, 'd', calibration_seconds),
    F_("busy_seconds", "busy_s", 8, 'd', busy_seconds),
    F_("merge_seconds", NULL, 0, 'd', merge_seconds),
    F_("write_seconds", "write_s", 8, 'd', write_seconds),
    F_("pages_read", "pages", 9, 'u', pages_read),
    F_("bytes_read", NULL, 0, 'u', bytes_read),
    F_("bytes_sent", "sent_B", 10, 'u', bytes_sent),
    F_("bytes_received", "recv_B", 10, 'u', bytes_received),
    F_("bytes_written", "written_B", 11, 'u', bytes_written),
    F_("ranges", "units run", 0, 's', ranges),
};
#undef F_
#define N_FIELDS (sizeof rank_fields / sizeof rank_fields[0])

static const char *field_text(const qsm_rank *q, const rank_field *f) {
  return (const char *)q + f->at;
}

static double field_number(const qsm_rank *q, const rank_field *f) {
  const char *p = (const char *)q + f->at;
  int i;
  uint64_t u;
  double d;
  if (f->type == 'i') return memcpy(&i, p, sizeof i), i;
  if (f->type == 'u') return memcpy(&u, p, sizeof u), (double)u;
  return memcpy(&d, p, sizeof d), d;
}

static void report_text(const qsm_report *r, const char *method) {
  fprintf(stderr,
          "quicksilver-mpi: %s over %d rank%s, split %s: %llu units in "
          "%llu chunks, %.3f s, load imbalance %.1f %%, %llu bytes "
          "communicated, %llu bytes of output written %s\n",
          method, r->ranks, r->ranks == 1 ? "" : "s",
          !strcmp(r->split, "within")
              ? "within timepoints (frames; partials merged)"
          : !strcmp(r->split, "timepoints") ? "by timepoints"
                                            : "by frames",
          (unsigned long long)r->units, (unsigned long long)r->chunks,
          r->seconds, 100 * r->imbalance,
          (unsigned long long)r->bytes_communicated,
          (unsigned long long)r->bytes_written,
          !strcmp(r->output, "in place") ? "in place by the ranks"
                                         : "by rank 0 (gathered)");
  for (size_t k = 0; k < N_FIELDS; k++) {
    const rank_field *f = &rank_fields[k];
    if (f->head) fprintf(stderr, " %*s", f->width ? f->width : 1, f->head);
  }
  fputc('\n', stderr);
  for (int i = 0; r->rank && i < r->ranks; i++) {
    const qsm_rank *q = &r->rank[i];
    for (size_t k = 0; k < N_FIELDS; k++) {
      const rank_field *f = &rank_fields[k];
      int w = f->width, cut = w < 0 ? -w : 4096;
      if (!f->head) continue;
      if (f->type == 's')
        fprintf(stderr, " %*.*s", w ? w : 1, cut,
                field_text(q, f)[0] ? field_text(q, f) : "-");
      else if (f->type == 'd')
        fprintf(stderr, " %*.3f", w, field_number(q, f));
      else
        fprintf(stderr, " %*.0f", w, field_number(q, f));
    }
    fputc('\n', stderr);
  }
}

static void report_json(const qsm_report *r, const char *method, int status,
                        const char *msg) {
  cJSON *j = cJSON_CreateObject(), *a;
  cJSON_AddStringToObject(j, "method", method);
  cJSON_AddStringToObject(j, "status", qs_status_name(status));
  if (status) cJSON_AddStringToObject(j, "error", msg);
  cJSON_AddNumberToObject(j, "ranks", r->ranks);
  cJSON_AddStringToObject(j, "split", r->split);
  cJSON_AddStringToObject(j, "output", r->output);
  cJSON_AddNumberToObject(j, "units", (double)r->units);
  cJSON_AddNumberToObject(j, "chunks", (double)r->chunks);
  cJSON_AddNumberToObject(j, "seconds", r->seconds);
  cJSON_AddNumberToObject(j, "imbalance", r->imbalance);
  cJSON_AddNumberToObject(j, "bytes_communicated",
                          (double)r->bytes_communicated);
  cJSON_AddNumberToObject(j, "bytes_written", (double)r->bytes_written);
  a = cJSON_AddArrayToObject(j, "per_rank");
  for (int i = 0; r->rank && i < r->ranks; i++) {
    const qsm_rank *q = &r->rank[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "status", qs_status_name(q->status));
    if (q->status) cJSON_AddStringToObject(o, "error", q->error);
    for (size_t k = 0; k < N_FIELDS; k++) {
      const rank_field *f = &rank_fields[k];
      if (f->type == 's')
        cJSON_AddStringToObject(o, f->key, field_text(q, f));
      else
        cJSON_AddNumberToObject(o, f->key, field_number(q, f));
    }
    cJSON_AddItemToArray(a, o);
  }
  char *s = cJSON_Print(j);
  if (s) puts(s);
  free(s);
  cJSON_Delete(j);
}

/* Options given before the command (`quicksilver-mpi -q --db X esrrf`, as
 * quicksilver accepts them) move after it, in order: argv[1..] becomes the
 * command words, then those options, then the rest. */
static void options_after_command(int argc, char **argv) {
  int i = 1;
  while (i < argc && argv[i][0] == '-' && strcmp(argv[i], "-h") &&
         strcmp(argv[i], "--help") && strcmp(argv[i], "--")) {
    const opt_def *o = opts;
    const char *n = argv[i] + (argv[i][1] == '-' ? 2 : 1);
    while (o->name && (argv[i][1] == '-' ? strcmp(o->name, n)
                                         : (n[0] != o->short_name || n[1])))
      o++;
    i += 1 + (o->name && o->meta && !strchr(argv[i], '='));
  }
  if (i == 1 || i >= argc) return;
  int words = 1 + (!strcmp(argv[i], "run") && i + 1 < argc);
  char *moved[64];
  int n = i - 1 < 64 ? i - 1 : 64;
  memcpy(moved, argv + 1, (size_t)n * sizeof *argv);
  memmove(argv + 1, argv + i, (size_t)words * sizeof *argv);
  memcpy(argv + 1 + words, moved, (size_t)n * sizeof *argv);
}

/* Parses and runs; returns the exit status (the same on every rank, since
 * every rank parses the same arguments and qsm_run agrees on its status). */
static int cli(int argc, char **argv) {
  options_after_command(argc, argv);
  if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    usage(NULL);
    return argc < 2 ? 2 : 0;
  }
  const char *method;
  int skip;
  if (!strcmp(argv[1], "esrrf")) {
    method = "esrrf", skip = 2;
  } else if (!strcmp(argv[1], "run") && argc >= 3 && argv[2][0] != '-') {
    method = argv[2], skip = 3;
  } else {
    say("the command is 'esrrf' or 'run METHOD' (see --help)");
    return 2;
  }
  /* The method's parameter table, from an engine that touches nothing. */
  qs_engine *probe = NULL;
  qs_engine_options po = {.db_path = ":memory:", .no_opencl = 1};
  int rc = qs_engine_open(&probe, &po);
  if (rc) {
    say("cannot open an engine: %s",
        probe ? qs_engine_error(probe) : qs_status_message(rc));
    qs_engine_close(probe);
    return 1;
  }
  const qs_method_desc *d = qs_method_find(probe, method);
  if (!d) {
    say("unknown method '%s'", method);
    qs_engine_close(probe);
    return 2;
  }
  const opt_def *tables[] = {opts};
  args a;
  char err[2048];
  int status = 0;
  if (args_parse(argc - skip, argv + skip, tables, 1, d->params, d->n_params,
                 &a, err, sizeof err)) {
    say("%s", err);
    status = 2;
  } else if (args_value(&a, "help")) {
    usage(d);
  } else if (a.n_pos != d->n_inputs) {
    say("%s takes %zu input file%s, got %zu", d->name, d->n_inputs,
        d->n_inputs == 1 ? "" : "s", a.n_pos);
    status = 2;
  } else if (args_count(&a, "output") < 1 ||
             args_count(&a, "output") > d->n_outputs) {
    if (d->n_outputs > 1)
      say("give -o FILE 1 to %zu times", d->n_outputs);
    else
      say("give -o FILE once");
    status = 2;
  }
  size_t threads = 0;
  const char *tv = args_value(&a, "threads");
  if (!status && tv && args_size(tv, 1, QS_MAX_THREADS, &threads)) {
    say("--threads %s: expected 1 to %d", tv, QS_MAX_THREADS);
    status = 2;
  }
  size_t chunk_bytes = 0;
  const char *cb = args_value(&a, "chunk-bytes");
  if (!status && cb && args_size(cb, 1, SIZE_MAX, &chunk_bytes)) {
    say("--chunk-bytes %s: expected a positive number of bytes", cb);
    status = 2;
  }
  if (status || args_value(&a, "help")) {
    qs_engine_close(probe);
    return status;
  }
  const char *outs[16];
  size_t n_out = 0;
  for (size_t i = 0; i < a.n_opts && n_out < 16; i++)
    if (!strcmp(a.opts[i].def->name, "output")) outs[n_out++] = a.opts[i].value;
  /* The guards of every writer before any work (rank 0 decides): no
   * output is an input (any spelling, symlink, hard link), none is named
   * twice or is not a regular file, every directory is writable; then
   * each output is locked for the whole run, so a second run (or any
   * writer) on the same output is refused instead of interleaving. */
  int bad = 0;
  int locks[16] = {0};
  if (rank0) {
    int rc2 = outfile_check(outs, n_out, a.pos, a.n_pos, err, sizeof err);
    for (size_t k = 0; k < n_out && !rc2; k++)
      rc2 = outfile_lock(outs[k], &locks[k], err, sizeof err);
    if (rc2) {
      say("%s", err);
      bad = rc2 == QS_EINVAL ? 2 : 1;
    }
  }
  MPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (bad) {
    for (size_t k = 0; k < n_out; k++) outfile_unlock(locks[k]);
    qs_engine_close(probe);
    return bad;
  }
  qsm_options o = {.impl = args_value(&a, "impl"),
                   .max_chunk_bytes = chunk_bytes,
                   .gather = args_value(&a, "gather") != NULL};
  o.engine.threads = threads ? (int)threads : default_threads();
  o.engine.db_path = args_value(&a, "db");
  o.engine.no_opencl = args_value(&a, "no-opencl") != NULL;
  qsm_report rep;
  rc = qsm_run_files(MPI_COMM_WORLD, d->name, a.pos, a.n_pos, a.params,
                     a.n_params, &o, outs, n_out, &rep, err, sizeof err);
  if (rank0) {
    if (args_value(&a, "json"))
      report_json(&rep, d->name, rc, err);
    else if (!args_value(&a, "quiet"))
      report_text(&rep, d->name);
    if (rc) say("%s failed: %s", d->name, err);
  }
  qsm_report_free(&rep);
  for (size_t k = 0; k < n_out; k++) outfile_unlock(locks[k]);
  qs_engine_close(probe);
  return rc ? 1 : 0;
}

static void on_mpi_error(MPI_Comm *comm, int *code, ...) {
  char msg[MPI_MAX_ERROR_STRING];
  int n = 0;
  outfile_remove_all();
  MPI_Error_string(*code, msg, &n);
  fprintf(stderr, "quicksilver-mpi: MPI error: %s\n", msg);
  MPI_Abort(*comm, 1);
}

int main(int argc, char **argv) {
  int provided, rank;
  /* Only the calling thread enters MPI; the engines' pools never do. */
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) !=
      MPI_SUCCESS) {
    fprintf(stderr, "quicksilver-mpi: MPI_Init failed\n");
    return 1;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  rank0 = rank == 0;
  /* An MPI error ends the job without unwinding: the output temporaries
   * of this process go first. */
  MPI_Errhandler eh;
  MPI_Comm_create_errhandler(on_mpi_error, &eh);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, eh);
  int status = cli(argc, argv);
  fflush(stdout);
  MPI_Finalize();
  return status;
}
