/* test_cli.c — the quicksilver binary, driven as a user would: exit
 * statuses, usage errors with suggestions, JSON that parses, TIFF outputs
 * that appear whole or not at all, the simulator's determinism, the store's
 * export and import, and a benchmark that stops at its budget. Every test
 * uses its own store and directory. */
/* mknod and makedev (a private device node in one test) */
#define _DEFAULT_SOURCE
#define _XOPEN_SOURCE 700 /* posix_openpt: a terminal for the progress line */
#include <cJSON.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "qs_test.h"
#include "tiff.h"

#define FUZZ_NO_MAIN
#include "fuzz/fuzz_args.c"
#include "fuzz/fuzz_import.c"
#include "fuzz/replay.h"

extern char **environ;

static char dir[256];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/qs-cli-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  char db[300];
  snprintf(db, sizeof db, "%s/timings.db", dir);
  setenv("QUICKSILVER_DB", db, 1);
  setenv("QUICKSILVER_NO_OPENCL", "1", 1);
}

static void teardown(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd)) fprintf(stderr, "cannot remove %s\n", dir);
  qs_leak_check();
}

TestSuite(cli, .init = setup, .fini = teardown);

static const char *path_in(const char *leaf) {
  static char p[8][400];
  static int k;
  k = (k + 1) & 7;
  snprintf(p[k], sizeof p[k], "%s/%s", dir, leaf);
  return p[k];
}

typedef struct result {
  int status;
  char out[65536], err[16384];
} result;

static void slurp_into(const char *path, char *buf, size_t len) {
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(buf, 1, len - 1, f) : 0;
  buf[n] = 0;
  if (f) fclose(f);
}

/* Starts the binary with the NULL-terminated arguments (va_list), stdin
 * from the file `in` (NULL: this process's), stdout and stderr into the
 * given files. */
static pid_t spawn_in(const char *in, const char *out, const char *err,
                      const char *first, va_list ap) {
  char *argv[64];
  int n = 0;
  argv[n++] = QS_CLI;
  for (const char *a = first; a && n < 63; a = va_arg(ap, const char *))
    argv[n++] = (char *)a;
  argv[n] = NULL;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  /* no command waits on the test's own stdin (raw frames on "-") */
  posix_spawn_file_actions_addopen(&fa, 0, in ? in : "/dev/null", O_RDONLY,
                                   0);
  posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  /* The signals the tests send start at their default actions and
   * unblocked, however the suite itself was started (nohup ignores SIGHUP,
   * a shell's background job SIGINT): the CLI is tested as a terminal
   * starts it. */
  posix_spawnattr_t at;
  posix_spawnattr_init(&at);
  sigset_t def, none;
  sigemptyset(&def);
  sigaddset(&def, SIGINT);
  sigaddset(&def, SIGTERM);
  sigaddset(&def, SIGHUP);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&at, &def);
  posix_spawnattr_setsigmask(&at, &none);
  posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  pid_t pid;
  cr_assert_eq(posix_spawn(&pid, QS_CLI, &fa, &at, argv, environ), 0);
  posix_spawnattr_destroy(&at);
  posix_spawn_file_actions_destroy(&fa);
  return pid;
}

static pid_t spawn_va(const char *out, const char *err, const char *first,
                      va_list ap) {
  return spawn_in(NULL, out, err, first, ap);
}

/* Runs the binary with the arguments, stdin from `in` (NULL: ours). */
static result *qs_va(const char *in, const char *first, va_list ap) {
  static result r;
  char out[400], err[400];
  snprintf(out, sizeof out, "%s/stdout", dir);
  snprintf(err, sizeof err, "%s/stderr", dir);
  pid_t pid = spawn_in(in, out, err, first, ap);
  int st;
  cr_assert_eq(waitpid(pid, &st, 0), pid);
  cr_assert(WIFEXITED(st), "%s did not exit normally", first ? first : "");
  r.status = WEXITSTATUS(st);
  slurp_into(out, r.out, sizeof r.out);
  slurp_into(err, r.err, sizeof r.err);
  return &r;
}

/* Runs the binary with the NULL-terminated arguments. */
static result *qs(const char *first, ...) {
  va_list ap;
  va_start(ap, first);
  result *r = qs_va(NULL, first, ap);
  va_end(ap);
  return r;
}

static void expect_status(const result *r, int status, const char *what) {
  cr_assert_eq(r->status, status,
               "%s: exit %d, want %d\nstdout: %s\nstderr: "
               "%s",
               what, r->status, status, r->out, r->err);
}

static cJSON *json_of(const result *r) {
  cJSON *j = cJSON_Parse(r->out);
  cr_assert_not_null(j, "stdout is not JSON: %s", r->out);
  return j;
}

static int file_exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

Test(cli, version_and_help) {
  result *r = qs("--version", NULL);
  expect_status(r, 0, "--version");
  cr_assert_str_eq(r->out, "quicksilver " QS_VERSION "\n");
  cJSON *j = json_of(qs("version", "--json", NULL));
  cr_assert_str_eq(cJSON_GetObjectItem(j, "version")->valuestring, QS_VERSION);
  cJSON_Delete(j);
  const char *cmds[] = {"run",     "esrrf", "methods",  "bench",  "db",
                        "devices", "diff",  "simulate", "version", "sweep"};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    r = qs(cmds[i], "--help", NULL);
    expect_status(r, 0, cmds[i]);
    cr_assert_not_null(strstr(r->out, "usage: quicksilver"), "%s", cmds[i]);
  }
  expect_status(qs("--help", NULL), 0, "--help");
  expect_status(qs("help", "db", NULL), 0, "help db");
}

Test(cli, usage_errors_name_and_suggest) {
  result *r = qs(NULL);
  expect_status(r, 2, "no command");
  r = qs("rnu", NULL);
  expect_status(r, 2, "unknown command");
  cr_assert_not_null(strstr(r->err, "'rnu'"), "%s", r->err);
  cr_assert_not_null(strstr(r->err, "did you mean 'run'"), "%s", r->err);
  r = qs("simulate", "-o", path_in("s.tif"), "--emiters", "3", NULL);
  expect_status(r, 2, "misspelt flag");
  cr_assert_not_null(strstr(r->err, "--emiters"), "%s", r->err);
  cr_assert_not_null(strstr(r->err, "did you mean --emitters"), "%s", r->err);
  r = qs("simulate", "-o", path_in("s.tif"), "--frames", "many", NULL);
  expect_status(r, 2, "bad value");
  cr_assert_not_null(strstr(r->err, "frames"), "%s", r->err);
  r = qs("run", "shift_magnfy", "x.tif", "-o", "y.tif", NULL);
  expect_status(r, 2, "misspelt method");
  cr_assert_not_null(strstr(r->err, "did you mean 'shift_magnify'"), "%s",
                     r->err);
  r = qs("db", "bets", NULL);
  expect_status(r, 2, "misspelt db subcommand");
  cr_assert_not_null(strstr(r->err, "did you mean 'best'"), "%s", r->err);
  r = qs("bench", "--sizes", "10x10", NULL);
  expect_status(r, 2, "bad size");
  cr_assert_not_null(strstr(r->err, "10x10"), "%s", r->err);
  r = qs("devices", "--threads", "zero", NULL);
  expect_status(r, 2, "bad thread count");
  r = qs("diff", "only-one.tif", NULL);
  expect_status(r, 2, "diff with one file");
}

Test(cli, devices_and_methods_json) {
  cJSON *j = json_of(qs("devices", "--json", NULL));
  cJSON *cpu = cJSON_GetObjectItem(j, "cpu");
  cr_assert_not_null(cpu);
  cr_assert_geq(cJSON_GetObjectItem(cpu, "cores")->valuedouble, 1);
  cr_assert(cJSON_IsArray(cJSON_GetObjectItem(j, "opencl")));
  /* QUICKSILVER_NO_OPENCL: no device, and a reason */
  cr_assert_not_null(cJSON_GetObjectItem(j, "opencl_why"));
  cJSON_Delete(j);
  expect_status(qs("devices", NULL), 0, "devices");

  j = json_of(qs("methods", "--json", NULL));
  cr_assert(cJSON_IsArray(j));
  int found = 0;
  cJSON *m;
  cJSON_ArrayForEach(m, j) {
    if (strcmp(cJSON_GetObjectItem(m, "name")->valuestring, "shift_magnify"))
      continue;
    found = 1;
    cJSON *p, *params = cJSON_GetObjectItem(m, "params");
    int flag = 0;
    cJSON_ArrayForEach(p, params) flag |= !strcmp(
        cJSON_GetObjectItem(p, "flag")->valuestring, "--magnification-row");
    cr_assert(flag, "parameter flags derive from the table");
    cr_assert_gt(cJSON_GetArraySize(cJSON_GetObjectItem(m, "impls")), 1);
  }
  cr_assert(found);
  cJSON_Delete(j);
  result *r = qs("methods", "shift_magnify", NULL);
  expect_status(r, 0, "methods NAME");
  cr_assert_not_null(strstr(r->out, "--magnification-row"), "%s", r->out);
}

Test(cli, simulate_is_deterministic) {
  const char *a = path_in("a.tif"), *b = path_in("b.tif"),
             *c = path_in("c.tif"), *t = path_in("t.csv");
  expect_status(qs("simulate", "-o", a, "--frames", "8", "--size", "24x20",
                   "--seed", "5", "--truth", t, NULL),
                0, "simulate a");
  expect_status(qs("simulate", "-o", b, "--frames", "8", "--size", "24x20",
                   "--seed", "5", "-q", NULL),
                0, "simulate b");
  expect_status(qs("simulate", "-o", c, "--frames", "8", "--size", "24x20",
                   "--seed", "6", "-q", NULL),
                0, "simulate c");
  qs_image ia, ib, ic;
  char err[512];
  cr_assert_eq(tiff_read(a, &ia, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(tiff_read(b, &ib, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(tiff_read(c, &ic, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(ia.frames, 8);
  cr_assert_eq(ia.rows, 24);
  cr_assert_eq(ia.cols, 20);
  size_t n = 8 * 24 * 20 * sizeof(float);
  cr_assert_eq(memcmp(ia.data, ib.data, n), 0);
  cr_assert_neq(memcmp(ia.data, ic.data, n), 0);
  qs_image_free(&ia), qs_image_free(&ib), qs_image_free(&ic);
  FILE *f = fopen(t, "r");
  char line[128];
  cr_assert_not_null(f);
  cr_assert_not_null(fgets(line, sizeof line, f));
  cr_assert_str_eq(line, "frame,emitter,row,col,x_nm,y_nm,photons\n");
  fclose(f);
}

/* A small simulated input for the run tests. */
static const char *small_input(void) {
  const char *in = path_in("in.tif");
  expect_status(
      qs("simulate", "-o", in, "--frames", "3", "--size", "16x12", "-q", NULL),
      0, "simulate input");
  return in;
}

Test(cli, run_writes_output_and_reports) {
  const char *in = small_input(), *out = path_in("out.tif");
  result *r = qs("run", "shift_magnify", in, "-o", out, "--magnification-row",
                 "2", "--magnification-col", "3", "--explain", NULL);
  expect_status(r, 0, "run");
  cr_assert_not_null(strstr(r->err, "shift_magnify: "), "%s", r->err);
  cr_assert_not_null(strstr(r->err, "estimate"), "--explain: %s", r->err);
  qs_image img;
  char err[512];
  cr_assert_eq(tiff_read(out, &img, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(img.frames, 3);
  cr_assert_eq(img.rows, 32);
  cr_assert_eq(img.cols, 36);
  qs_image_free(&img);

  r = qs("run", "shift_magnify", in, "-o", out, "--impl", "serial", "--json",
         NULL);
  expect_status(r, 0, "run --json");
  cJSON *j = json_of(r);
  cr_assert_str_eq(cJSON_GetObjectItem(j, "impl")->valuestring, "serial");
  cr_assert_str_eq(cJSON_GetObjectItem(j, "reason")->valuestring, "forced");
  cr_assert_geq(cJSON_GetObjectItem(j, "seconds")->valuedouble, 0);
  cr_assert(cJSON_IsArray(cJSON_GetObjectItem(j, "estimates")));
  cJSON_Delete(j);

  r = qs("run", "shift_magnify", in, "-o", out, "--impl", "nosuch", NULL);
  expect_status(r, 2, "unknown implementation");
  r = qs("run", "shift_magnify", in, "-o", out, "--magnification-row", "-1",
         NULL);
  expect_status(r, 2, "out of range");
  cr_assert_not_null(strstr(r->err, "magnification_row"), "%s", r->err);
  r = qs("run", "shift_magnify", in, NULL);
  expect_status(r, 2, "no -o");
  r = qs("run", "shift_magnify", path_in("missing.tif"), "-o", out, NULL);
  expect_status(r, 1, "missing input");
  cr_assert_not_null(strstr(r->err, "missing.tif"), "%s", r->err);
}

/* `esrrf` is `run esrrf`: the same parameters give the same output, and
 * its flags come from the method's table. */
Test(cli, esrrf_command_is_run_esrrf) {
  if (qs("methods", "esrrf", NULL)->status != 0)
    cr_skip_test("no esrrf method in this build");
  const char *in = small_input(), *a = path_in("a.tif"), *b = path_in("b.tif");
  result *r =
      qs("esrrf", in, "-o", a, "--magnification", "2", "--radius", "1.5",
         "--temporal", "var", "--impl", "serial", "--json", NULL);
  expect_status(r, 0, "esrrf");
  cJSON *j = json_of(r);
  cr_assert_str_eq(cJSON_GetObjectItem(j, "method")->valuestring, "esrrf");
  cJSON *shape = cJSON_GetObjectItem(
      cJSON_GetArrayItem(cJSON_GetObjectItem(j, "outputs"), 0), "shape");
  cr_assert_eq(cJSON_GetArrayItem(shape, 1)->valuedouble, 32);
  cr_assert_eq(cJSON_GetArrayItem(shape, 2)->valuedouble, 24);
  cJSON_Delete(j);
  expect_status(qs("run", "esrrf", in, "-o", b, "--magnification", "2",
                   "--temporal", "var", "--impl", "serial", "-q", NULL),
                0, "run esrrf");
  r = qs("diff", a, b, "--json", NULL);
  expect_status(r, 0, "diff");
  j = json_of(r);
  cr_assert_eq(cJSON_GetObjectItem(j, "max_abs")->valuedouble, 0);
  cJSON_Delete(j);
  r = qs("esrrf", in, "-o", a, "--temporal", "avgg", NULL);
  expect_status(r, 2, "bad enum");
  cr_assert_not_null(strstr(r->err, "avg|var|tac2|none"), "%s", r->err);
  r = qs("esrrf", in, "-o", a, "--intensity-weighting", "maybe", NULL);
  expect_status(r, 2, "bad boolean");
}

Test(cli, failed_output_leaves_no_file) {
  const char *in = small_input();
  const char *bad = path_in("no/such/dir/out.tif");
  result *r = qs("run", "shift_magnify", in, "-o", bad, NULL);
  expect_status(r, 1, "unwritable directory");
  cr_assert_not_null(strstr(r->err, "no/such/dir"), "%s", r->err);
  /* the destination is a directory: refused before anything is written */
  const char *taken = path_in("taken.tif");
  cr_assert_eq(mkdir(taken, 0755), 0);
  r = qs("run", "shift_magnify", in, "-o", taken, NULL);
  expect_status(r, 2, "destination is a directory");
  char cmd[512];
  snprintf(cmd, sizeof cmd, "ls '%s' | grep -q tmp-", dir);
  cr_assert_neq(system(cmd), 0, "a temporary file was left in %s", dir);
  cr_assert(!file_exists(bad));
}

Test(cli, diff_reports_and_fails_on_mismatch) {
  const char *a = path_in("a.tif"), *b = path_in("b.tif");
  expect_status(
      qs("simulate", "-o", a, "--frames", "2", "--size", "8x8", "-q", NULL), 0,
      "a");
  expect_status(
      qs("simulate", "-o", b, "--frames", "2", "--size", "8x9", "-q", NULL), 0,
      "b");
  result *r = qs("diff", a, a, "--json", NULL);
  expect_status(r, 0, "diff same");
  cJSON *j = json_of(r);
  cr_assert_eq(cJSON_GetObjectItem(j, "max_abs")->valuedouble, 0);
  cr_assert_eq(cJSON_GetObjectItem(j, "pearson")->valuedouble, 1);
  cJSON_Delete(j);
  r = qs("diff", a, b, NULL);
  expect_status(r, 1, "diff shapes");
  cr_assert_not_null(strstr(r->out, "2x8x8 vs 2x8x9"), "%s", r->out);
  r = qs("diff", a, path_in("none.tif"), NULL);
  expect_status(r, 1, "diff missing");
}

/* A store where serial has 3 runs of 10 ms on the caller's key and
 * threaded one of 12 ms: threaded's optimistic bound (6 ms: one run can
 * be far above its median) beats serial, so the next call tries it. db
 * best must still name serial, the best known, word threaded's ratio as
 * slower (12 / 10), and say that the next call tries threaded. Made by
 * forced runs whose exported rows are given these walls and imported. */
Test(cli, db_best_names_the_best_not_the_one_being_tried) {
  const char *in = small_input(), *out = path_in("o.tif");
  const char *impls[] = {"serial", "threaded"};
  for (int i = 0; i < 2; i++)
    expect_status(qs("run", "shift_magnify", in, "-o", out, "--impl",
                     impls[i], "-q", NULL),
                  0, impls[i]);
  const char *dump = path_in("dump.json");
  expect_status(qs("db", "export", dump, NULL), 0, "db export");
  char text[1 << 16];
  slurp_into(dump, text, sizeof text);
  cJSON *doc = cJSON_Parse(text);
  cr_assert_not_null(doc);
  cJSON *runs = cJSON_GetObjectItem(doc, "runs"), *made = cJSON_CreateArray();
  cJSON *row;
  cJSON_ArrayForEach(row, runs) {
    const char *impl = cJSON_GetObjectItem(row, "impl")->valuestring;
    int serial = !strcmp(impl, "serial");
    cr_assert(serial || !strcmp(impl, "threaded"), "%s", impl);
    for (int k = 0; k < (serial ? 3 : 1); k++) {
      cJSON *x = cJSON_Duplicate(row, 1);
      cJSON_ReplaceItemInObject(x, "wall",
                                cJSON_CreateNumber(serial ? 0.010 : 0.012));
      cJSON_ReplaceItemInObject(
          x, "stamp",
          cJSON_CreateNumber(cJSON_GetObjectItem(row, "stamp")->valuedouble +
                             k + 1));
      cJSON_AddItemToArray(made, x);
    }
  }
  cJSON_ReplaceItemInObject(doc, "runs", made);
  char *j = cJSON_PrintUnformatted(doc);
  cJSON_Delete(doc);
  FILE *f = fopen(path_in("made.json"), "w");
  cr_assert_not_null(f);
  fputs(j, f);
  fclose(f);
  free(j);
  const char *db = path_in("made.db");
  expect_status(qs("--db", db, "db", "import", path_in("made.json"), NULL), 0,
                "import");
  result *r = qs("--db", db, "db", "best", NULL);
  expect_status(r, 0, "db best");
  cr_assert_not_null(strstr(r->out, "-> serial: 0.01 s (history, 3 runs)"),
                     "%s", r->out);
  cr_assert_not_null(strstr(r->out, "next best threaded is 1.20x slower"),
                     "%s", r->out);
  cr_assert_not_null(strstr(r->out, "the next call tries threaded "
                                    "(exploration): it could take 0.006 s"),
                     "%s", r->out);
  cr_assert_null(strstr(r->out, "-> threaded"), "%s", r->out);
  cJSON *b = json_of(qs("--db", db, "db", "best", "--json", NULL));
  cJSON *o = cJSON_GetArrayItem(b, 0);
  cr_assert_eq(cJSON_GetArraySize(b), 1);
  cr_assert_str_eq(cJSON_GetObjectItem(o, "impl")->valuestring, "serial");
  cr_assert_float_eq(cJSON_GetObjectItem(o, "seconds")->valuedouble, 0.010,
                     1e-12);
  cr_assert_str_eq(cJSON_GetObjectItem(o, "next")->valuestring, "threaded");
  cr_assert_str_eq(cJSON_GetObjectItem(o, "next_reason")->valuestring,
                   "exploration");
  /* each estimate carries the rule's verdict and its optimistic bound */
  cJSON *e;
  int seen = 0;
  cJSON_ArrayForEach(e, cJSON_GetObjectItem(o, "estimates")) {
    const char *impl = cJSON_GetObjectItem(e, "impl")->valuestring;
    const char *state = cJSON_GetObjectItem(e, "state")->valuestring;
    cJSON *lo = cJSON_GetObjectItem(e, "optimistic");
    if (!strcmp(impl, "serial")) {
      cr_assert_str_eq(state, "best");
      cr_assert_float_eq(lo->valuedouble, 0.010 * (1 - 0.5 / 3), 1e-12);
      seen++;
    } else if (!strcmp(impl, "threaded")) {
      cr_assert_str_eq(state, "next");
      cr_assert_float_eq(lo->valuedouble, 0.006, 1e-12);
      seen++;
    }
  }
  cr_assert_eq(seen, 2);
  cJSON_Delete(b);
}

Test(cli, db_export_import_round_trip) {
  const char *in = small_input(), *out = path_in("o.tif");
  for (int i = 0; i < 3; i++)
    expect_status(qs("run", "shift_magnify", in, "-o", out, "-q", NULL), 0,
                  "run");
  result *r = qs("db", "path", NULL);
  expect_status(r, 0, "db path");
  cr_assert_not_null(strstr(r->out, "timings.db"), "%s", r->out);
  r = qs("db", "stats", "--json", NULL);
  expect_status(r, 0, "db stats");
  cJSON *j = json_of(r);
  cr_assert_gt(cJSON_GetArraySize(j), 0);
  cJSON_Delete(j);
  char before[65536];
  memcpy(before, r->out, sizeof before);
  j = json_of(qs("db", "list", "--json", NULL));
  cr_assert_geq(cJSON_GetArraySize(j), 3);
  char key[1024];
  snprintf(key, sizeof key, "%s",
           cJSON_GetObjectItem(cJSON_GetArrayItem(j, 0), "key")->valuestring);
  cJSON_Delete(j);
  j = json_of(qs("db", "show", key, "--json", NULL));
  cr_assert_gt(cJSON_GetArraySize(j), 0);
  cJSON *row;
  cJSON_ArrayForEach(row, j)
      cr_assert_str_eq(cJSON_GetObjectItem(row, "key")->valuestring, key);
  cJSON_Delete(j);
  expect_status(qs("db", "show", NULL), 2, "db show without KEY");
  expect_status(qs("db", "best", NULL), 0, "db best");
  j = json_of(qs("db", "best", "--json", NULL));
  cr_assert_gt(cJSON_GetArraySize(j), 0);
  cr_assert(
      cJSON_IsString(cJSON_GetObjectItem(cJSON_GetArrayItem(j, 0), "impl")));
  cJSON_Delete(j);
  const char *dump = path_in("dump.json");
  expect_status(qs("db", "export", dump, NULL), 0, "db export");
  result *imp = qs("--db", path_in("fresh.db"), "db", "import", dump, NULL);
  expect_status(imp, 0, "db import");
  cr_assert_not_null(strstr(imp->out, "added "), "%s", imp->out);
  r = qs("--db", path_in("fresh.db"), "db", "stats", "--json", NULL);
  expect_status(r, 0, "db stats of the import");
  cr_assert_str_eq(r->out, before);
  /* importing again adds nothing */
  imp = qs("--db", path_in("fresh.db"), "db", "import", dump, "--json", NULL);
  j = json_of(imp);
  cr_assert_eq(cJSON_GetObjectItem(j, "added")->valuedouble, 0);
  cJSON_Delete(j);
  /* a broken file changes nothing and fails */
  FILE *f = fopen(path_in("broken.json"), "w");
  fputs("{\"schema\": 1, \"runs\": [", f);
  fclose(f);
  expect_status(qs("--db", path_in("fresh.db"), "db", "import",
                   path_in("broken.json"), NULL),
                1, "import of broken JSON");
  r = qs("--db", path_in("fresh.db"), "db", "stats", "--json", NULL);
  cr_assert_str_eq(r->out, before);
  /* forget and prune */
  expect_status(qs("db", "forget", NULL), 2, "forget without filter");
  r = qs("db", "forget", "--impl", "serial", NULL);
  expect_status(r, 0, "forget --impl");
  expect_status(qs("db", "prune", "--keep", "1", NULL), 0, "prune");
  expect_status(qs("db", "check", NULL), 0, "check");
}

Test(cli, damaged_store_is_explained_and_moved_aside) {
  const char *db = path_in("bad.db");
  FILE *f = fopen(db, "w");
  for (int i = 0; i < 512; i++)
    fputs("this is not an SQLite file. ", f);
  fclose(f);
  /* methods still run, unrecorded, with a warning */
  const char *in = small_input();
  result *r =
      qs("--db", db, "run", "roberts_cross", in, "-o", path_in("g.tif"), NULL);
  expect_status(r, 0, "run with a damaged store");
  cr_assert_not_null(strstr(r->err, "without recording"), "%s", r->err);
  r = qs("--db", db, "db", "check", NULL);
  expect_status(r, 1, "check damaged");
  cr_assert_not_null(strstr(r->err, "--move-aside"), "%s", r->err);
  r = qs("--db", db, "db", "check", "--move-aside", NULL);
  expect_status(r, 0, "move aside");
  cr_assert_not_null(strstr(r->out, "corrupt"), "%s", r->out);
  expect_status(qs("--db", db, "db", "check", NULL), 0, "fresh store");
}

Test(cli, bench_stops_at_budget_and_records) {
  const char *csv = path_in("b.csv"), *js = path_in("b.json"),
             *svg = path_in("b.svg");
  result *r = qs("bench", "--method", "roberts_cross", "--sizes",
                 "1x32x32,4x64x64,10x1024x1024,200x1024x1024", "--budget", "2",
                 "--repeats", "2", "--warmup", "1", "--csv", csv, "--json", js,
                 "--svg", svg, NULL);
  expect_status(r, 0, "bench");
  char text[65536];
  slurp_into(js, text, sizeof text);
  cJSON *j = cJSON_Parse(text);
  cr_assert_not_null(j, "%s", text);
  cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "stopped_by_budget")));
  double done = cJSON_GetObjectItem(j, "steps_done")->valuedouble;
  cr_assert_geq(done, 1);
  cr_assert_lt(done, 4);
  /* termination, not speed: the sweep must not run on for long past its
   * budget */
  cr_assert_lt(cJSON_GetObjectItem(j, "seconds")->valuedouble, 60);
  cr_assert_gt(cJSON_GetArraySize(cJSON_GetObjectItem(j, "rows")), 0);
  cJSON_Delete(j);
  slurp_into(csv, text, sizeof text);
  cr_assert_eq(strncmp(text, "method,frames,rows,cols", 23), 0);
  slurp_into(svg, text, sizeof text);
  cr_assert_not_null(strstr(text, "<svg"), "%s", text);
  cr_assert_not_null(strstr(text, "roberts_cross/serial"));
  j = json_of(qs("db", "list", "--method", "roberts_cross", "--json", NULL));
  cr_assert_gt(cJSON_GetArraySize(j), 0, "bench records its runs");
  cJSON_Delete(j);
}

/* The fuzz harnesses' seeds and every input fuzzing found troublesome,
 * through the harnesses' own functions: each must pass without a crash or
 * a sanitizer report. */
Test(cli, fuzz_inputs_replayed) {
  cr_assert_gt(replay_kind("args", args_one), 0);
  cr_assert_gt(replay_kind("import", import_one), 0);
}

/* --dry-run: the choice and the estimates, nothing run, recorded or
 * written; after real runs the dry run names what the next run picks. */
Test(cli, dry_run_runs_nothing) {
  const char *in = small_input(), *out = path_in("dry.tif");
  result *r = qs("run", "roberts_cross", in, "--dry-run", "--json", NULL);
  expect_status(r, 0, "dry run without -o");
  cJSON *j = json_of(r);
  cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "dry_run")));
  cr_assert_str_eq(cJSON_GetObjectItem(j, "reason")->valuestring,
                   "calibration");
  cr_assert_eq(cJSON_GetObjectItem(j, "seconds")->valuedouble, 0);
  cr_assert_gt(cJSON_GetArraySize(cJSON_GetObjectItem(j, "estimates")), 1);
  cJSON_Delete(j);
  cr_assert_eq(access(out, F_OK), -1);
  j = json_of(qs("db", "list", "--json", NULL));
  cr_assert_eq(cJSON_GetArraySize(j), 0, "a dry run records nothing");
  cJSON_Delete(j);
  r = qs("run", "roberts_cross", in, "--dry-run", "--impl", "serial", NULL);
  expect_status(r, 0, "forced dry run");
  cr_assert_not_null(strstr(r->err, "would run serial (forced)"), "%s",
                     r->err);
  cr_assert_eq(access(out, F_OK), -1);
  expect_status(qs("run", "roberts_cross", in, "--dry-run", "--impl", "nope",
                   NULL),
                2, "dry run of an unknown implementation");
}

/* ------------------------------------------------ hardening: outputs */

/* Starts the binary without waiting; stderr goes to path_in("stderr"). */
static pid_t qs_start(const char *first, ...) {
  va_list ap;
  va_start(ap, first);
  pid_t pid = spawn_va("/dev/null", path_in("stderr"), first, ap);
  va_end(ap);
  return pid;
}

/* Waits up to `seconds` for pid; kills it and fails the test if it does
 * not end (a blocked read must not hang the suite). */
static int wait_bounded(pid_t pid, double seconds, const char *what) {
  int st;
  for (int i = 0; i < (int)(seconds * 100); i++) {
    pid_t got = waitpid(pid, &st, WNOHANG);
    if (got == pid) return st;
    nanosleep(&(struct timespec){0, 10000000}, NULL);
  }
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  cr_assert_fail("%s: still running after %.0f s", what, seconds);
  return -1;
}

static int has_tmp(void) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -c 'tmp-' >/dev/null", dir);
  return system(cmd) == 0;
}

static size_t file_bytes(const char *p, unsigned char *buf, size_t len) {
  FILE *f = fopen(p, "rb");
  cr_assert_not_null(f, "%s", p);
  size_t n = fread(buf, 1, len, f);
  fclose(f);
  return n;
}

Test(cli, output_that_is_an_input_is_refused) {
  const char *in = small_input();
  static unsigned char before[1 << 16], after[1 << 16];
  size_t n = file_bytes(in, before, sizeof before);
  const char *sym = path_in("sym.tif"), *hard = path_in("hard.tif");
  cr_assert_eq(symlink(in, sym), 0);
  cr_assert_eq(link(in, hard), 0);
  char dotted[512];
  snprintf(dotted, sizeof dotted, "%s/./in.tif", dir);
  const char *same[] = {in, dotted, sym, hard};
  for (size_t i = 0; i < 4; i++) {
    result *r = qs("run", "shift_magnify", in, "-o", same[i], NULL);
    expect_status(r, 2, same[i]);
    cr_assert_not_null(strstr(r->err, "is the input"), "%s", r->err);
    cr_assert_eq(file_bytes(in, after, sizeof after), n);
    cr_assert_eq(memcmp(before, after, n), 0, "the input was modified");
  }
  /* the same output twice, literally or spelt otherwise */
  const char *a = path_in("a.tif");
  char a2[512];
  snprintf(a2, sizeof a2, "%s/../%s/a.tif", dir, strrchr(dir, '/') + 1);
  result *r = qs("run", "roberts_cross", in, "-o", a, "-o", a, NULL);
  expect_status(r, 2, "-o a -o a");
  cr_assert_not_null(strstr(r->err, "same file"), "%s", r->err);
  r = qs("run", "roberts_cross", in, "-o", a, "-o", a2, NULL);
  expect_status(r, 2, "two spellings of a new name");
  cr_assert(!file_exists(a));
  expect_status(qs("run", "roberts_cross", in, "-o", a, "-o",
                   path_in("b.tif"), "-q", NULL),
                0, "two outputs");
  cr_assert_eq(link(a, path_in("c.tif")), 0);
  r = qs("run", "roberts_cross", in, "-o", a, "-o", path_in("c.tif"), NULL);
  expect_status(r, 2, "hard link of an existing output");
  /* every command that writes two files */
  r = qs("simulate", "-o", path_in("s.tif"), "--truth", path_in("./s.tif"),
         "--frames", "2", NULL);
  expect_status(r, 2, "simulate -o X --truth X");
  cr_assert(!file_exists(path_in("s.tif")));
  r = qs("bench", "--method", "roberts_cross", "--sizes", "1x8x8", "--csv",
         path_in("b.out"), "--json", path_in("b.out"), NULL);
  expect_status(r, 2, "bench --csv X --json X");
  cr_assert_not_null(strstr(r->err, "same file"), "%s", r->err);
}

Test(cli, output_that_is_not_a_regular_file_is_refused) {
  const char *in = small_input();
  const char *fifo = path_in("fifo"), *dev = path_in("null"),
             *sub = path_in("sub");
  cr_assert_eq(mkfifo(fifo, 0644), 0);
  cr_assert_eq(mkdir(sub, 0755), 0);
  /* A private character device like /dev/null, so a failure of this test
   * cannot replace the system's. */
  int have_dev = mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0;
  const char *targets[] = {fifo, sub, have_dev ? dev : NULL, "-"};
  const char *kinds[] = {"a FIFO", "a directory", "a character device",
                         "standard output"};
  for (size_t i = 0; i < 4; i++) {
    if (!targets[i]) continue;
    result *r = qs("run", "shift_magnify", in, "-o", targets[i], NULL);
    expect_status(r, 2, targets[i]);
    cr_assert_not_null(strstr(r->err, kinds[i]), "%s", r->err);
    r = qs("simulate", "-o", targets[i], "--frames", "1", NULL);
    cr_assert_neq(r->status, 0, "simulate -o %s", targets[i]);
    cr_assert_not_null(strstr(r->err, kinds[i]), "%s", r->err);
  }
  struct stat st;
  cr_assert_eq(stat(fifo, &st), 0);
  cr_assert(S_ISFIFO(st.st_mode), "the FIFO was replaced");
  if (have_dev) {
    cr_assert_eq(stat(dev, &st), 0);
    cr_assert(S_ISCHR(st.st_mode), "the device node was replaced");
  }
  cr_assert(!has_tmp(), "a temporary file was left in %s", dir);
}

Test(cli, input_that_is_not_a_regular_file_does_not_block) {
  const char *fifo = path_in("in.fifo"), *out = path_in("o.tif");
  cr_assert_eq(mkfifo(fifo, 0644), 0);
  int st = wait_bounded(qs_start("run", "shift_magnify", fifo, "-o", out,
                                 NULL),
                        60, "run with a FIFO input");
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %d", st);
  char err[1024];
  slurp_into(path_in("stderr"), err, sizeof err);
  cr_assert_not_null(strstr(err, "FIFO"), "%s", err);
  const char *in = small_input();
  st = wait_bounded(qs_start("diff", in, fifo, NULL), 60,
                    "diff with a FIFO");
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) != 0, "status %d", st);
  cr_assert(!file_exists(out));
}

static int has_lock(void) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -q 'qs-lock'", dir);
  return system(cmd) == 0;
}

/* Each signal of sigs[0..n) in the middle of a write (held still by the
 * outfile test seam: the process stops itself once the temporary exists)
 * removes the temporary and the lock, and the process dies of it. */
static void signal_each(const int *sigs, size_t n) {
  const char *in = small_input();
  setenv("QUICKSILVER_TEST_OUTFILE_STOP", "1", 1);
  for (size_t i = 0; i < n; i++) {
    const char *out = path_in("o.tif");
    pid_t pid = qs_start("run", "shift_magnify", in, "-o", out, NULL);
    int st;
    cr_assert_eq(waitpid(pid, &st, WUNTRACED), pid);
    cr_assert(WIFSTOPPED(st), "the write did not reach the seam");
    cr_assert(has_tmp(), "no temporary file while writing");
    kill(pid, sigs[i]);
    kill(pid, SIGCONT);
    st = wait_bounded(pid, 60, "signalled write");
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == sigs[i],
              "signal %d: status %#x", sigs[i], st);
    cr_assert(!has_tmp(), "signal %d: the temporary file was left behind",
              sigs[i]);
    cr_assert(!has_lock(), "signal %d: the lock file was left behind",
              sigs[i]);
    cr_assert(!file_exists(out));
  }
  unsetenv("QUICKSILVER_TEST_OUTFILE_STOP");
}

Test(cli, signal_during_write_removes_the_temporary) {
  const int sigs[] = {SIGTERM, SIGINT};
  signal_each(sigs, 2);
}

/* Temporaries of a process that died (SIGKILL) carry its pid and are
 * removed by the next write to the same output; a live process's are
 * kept. */
Test(cli, stale_temporaries_are_swept) {
  const char *in = small_input(), *out = path_in("o.tif");
  pid_t dead = fork();
  if (dead == 0) _exit(0);
  cr_assert_gt(dead, 0);
  waitpid(dead, NULL, 0);
  char stale[512], live[512], other[512];
  snprintf(stale, sizeof stale, "%s.qs-tmp-%ld-Ab12Cd", out, (long)dead);
  snprintf(live, sizeof live, "%s.qs-tmp-%ld-Ef34Gh", out, (long)getpid());
  snprintf(other, sizeof other, "%s.qs-tmp-%ld-Ij56Kl", path_in("p.tif"),
           (long)dead);
  const char *files[] = {stale, live, other};
  for (size_t i = 0; i < 3; i++) {
    FILE *f = fopen(files[i], "w");
    cr_assert_not_null(f);
    fclose(f);
  }
  expect_status(qs("run", "shift_magnify", in, "-o", out, "-q", NULL), 0,
                "run");
  cr_assert(!file_exists(stale), "the dead process's temporary is still there");
  cr_assert(file_exists(live), "a live process's temporary was removed");
  /* the sweep takes the whole directory, not only the same output */
  cr_assert(!file_exists(other),
            "a dead process's temporary of another output was kept");
  /* SIGKILL in the middle of a write leaves a temporary with the pid... */
  setenv("QUICKSILVER_TEST_OUTFILE_STOP", "1", 1);
  pid_t pid = qs_start("run", "shift_magnify", in, "-o", out, NULL);
  int st;
  cr_assert_eq(waitpid(pid, &st, WUNTRACED), pid);
  kill(pid, SIGKILL);
  waitpid(pid, &st, 0);
  unsetenv("QUICKSILVER_TEST_OUTFILE_STOP");
  char left[512];
  snprintf(left, sizeof left, "ls '%s' | grep -q 'o.tif.qs-tmp-%ld-'", dir,
           (long)pid);
  cr_assert_eq(system(left), 0, "no recognisable temporary after SIGKILL");
  /* ...which the next write removes */
  expect_status(qs("run", "shift_magnify", in, "-o", out, "-q", NULL), 0,
                "run after SIGKILL");
  cr_assert_neq(system(left), 0, "the killed run's temporary was kept");
}

/* An input truncated by another program while it is being read (the
 * reader held still after its first page by the test seam) fails with a
 * message: the file is read, not mapped, so the process is not killed by
 * SIGBUS. */
Test(cli, input_truncated_while_read_fails_with_a_message) {
  const char *in = path_in("shrinks.tif"), *out = path_in("o.tif");
  expect_status(qs("simulate", "-o", in, "--frames", "40", "--size",
                   "256x256", "-q", NULL),
                0, "simulate");
  setenv("QUICKSILVER_TEST_READ_STOP", "1", 1);
  pid_t pid = qs_start("run", "roberts_cross", in, "-o", out, "-o",
                       path_in("o2.tif"), NULL);
  unsetenv("QUICKSILVER_TEST_READ_STOP");
  int st;
  cr_assert_eq(waitpid(pid, &st, WUNTRACED), pid);
  cr_assert(WIFSTOPPED(st), "the read did not reach the seam");
  cr_assert_eq(truncate(in, 300000), 0);
  kill(pid, SIGCONT);
  st = wait_bounded(pid, 60, "a read of a truncated input");
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 1, "status %#x", st);
  char err[2048];
  slurp_into(path_in("stderr"), err, sizeof err);
  cr_assert_not_null(strstr(err, "page 1"), "%s", err);
  cr_assert(!file_exists(out));
}

/* The read budget reaches the CLI through its environment knob. */
Test(cli, read_budget_refuses_an_oversized_input) {
  const char *in = path_in("big.tif");
  expect_status(qs("simulate", "-o", in, "--frames", "3", "--size", "512x512",
                   "-q", NULL),
                0, "simulate");
  setenv("QUICKSILVER_READ_BUDGET_MB", "2", 1);
  result *r = qs("run", "shift_magnify", in, "-o", path_in("o.tif"), NULL);
  unsetenv("QUICKSILVER_READ_BUDGET_MB");
  expect_status(r, 1, "over the read budget");
  cr_assert_not_null(strstr(r->err, "page 2 claims 512x512 pixels"), "%s",
                     r->err);
  cr_assert_not_null(strstr(r->err, "QUICKSILVER_READ_BUDGET_MB"), "%s",
                     r->err);
  cr_assert(!file_exists(path_in("o.tif")));
}

/* The stacks at out and ref have `frames` images each, the same bits. */
static void expect_same_stack(const char *out, const char *ref,
                              size_t frames, const char *what) {
  qs_image got, want;
  char err[512];
  cr_assert_eq(tiff_read(out, &got, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(tiff_read(ref, &want, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(got.frames, frames, "%s: %zu images", what, got.frames);
  cr_assert_eq(want.frames, frames, "%s: %zu images", what, want.frames);
  cr_assert_eq(memcmp(got.data, want.data,
                      frames * got.rows * got.cols * sizeof(float)),
               0, "%s: the images differ", what);
  qs_image_free(&got);
  qs_image_free(&want);
}

/* eSRRF on an input over the read budget is read in pieces and folded as
 * the live stream folds: the whole call's images bit for bit, timepoints
 * (the last one short) included; temporal none, which has an image per
 * frame, is still refused. */
Test(cli, esrrf_over_the_read_budget_is_read_in_pieces) {
  if (qs("methods", "esrrf", NULL)->status != 0)
    cr_skip_test("no esrrf method in this build");
  const char *in = path_in("big.tif"), *ref = path_in("ref.tif"),
             *out = path_in("o.tif");
  expect_status(qs("simulate", "-o", in, "--frames", "22", "--size",
                   "128x128", "-q", NULL),
                0, "simulate"); /* 1.4 MiB decoded */
  const char *p[] = {"--frames-per-timepoint", "8", "--magnification", "2",
                     "--impl", "fused", "-q"};
  expect_status(qs("run", "esrrf", in, "-o", ref, p[0], p[1], p[2], p[3],
                   p[4], p[5], p[6], NULL),
                0, "whole");
  setenv("QUICKSILVER_READ_BUDGET_MB", "1", 1);
  result *r = qs("run", "esrrf", in, "-o", out, p[0], p[1], p[2], p[3], p[4],
                 p[5], NULL);
  expect_status(r, 0, "in pieces");
  cr_assert_not_null(strstr(r->err, "over the read budget of 1.0 MiB"), "%s",
                     r->err);
  cr_assert_not_null(strstr(r->err, "22 frames read in pieces, 3 images"),
                     "%s", r->err);
  result *none = qs("run", "esrrf", in, "-o", path_in("n.tif"), "--temporal",
                    "none", "--magnification", "2", NULL);
  unsetenv("QUICKSILVER_READ_BUDGET_MB");
  expect_same_stack(out, ref, 3, "22 frames in timepoints of 8, in pieces");
  expect_status(none, 1, "temporal none over the budget");
  cr_assert_not_null(strstr(none->err, "over the read budget"), "%s",
                     none->err);
  cr_assert(!file_exists(path_in("n.tif")));
  /* a range of frames not from the first: pages 2 to 21 */
  expect_status(qs("run", "esrrf", in, "-o", ref, "--frames", "2:22", p[0],
                   p[1], p[2], p[3], p[4], p[5], p[6], NULL),
                0, "whole range");
  setenv("QUICKSILVER_READ_BUDGET_MB", "1", 1);
  r = qs("run", "esrrf", in, "-o", out, "--frames", "2:22", p[0], p[1], p[2],
         p[3], p[4], p[5], NULL);
  unsetenv("QUICKSILVER_READ_BUDGET_MB");
  expect_status(r, 0, "range in pieces");
  cr_assert_not_null(strstr(r->err, "20 frames read in pieces, 3 images"),
                     "%s", r->err);
  expect_same_stack(out, ref, 3, "frames 2:22 in timepoints of 8, in pieces");
}

/* A stack read in pieces with a NaN pixel is refused as the whole call
 * refuses it (a live stream would skip that frame): exit status 1 naming
 * the pixel, OUT left as it was, no temporary behind. */
Test(cli, esrrf_in_pieces_refuses_a_nan_pixel) {
  if (qs("methods", "esrrf", NULL)->status != 0)
    cr_skip_test("no esrrf method in this build");
  const char *in = path_in("nan.tif"), *out = path_in("o.tif");
  expect_status(qs("simulate", "-o", in, "--frames", "22", "--size",
                   "128x128", "-q", NULL),
                0, "simulate");
  qs_image st;
  char err[512], old[64];
  cr_assert_eq(tiff_read(in, &st, err, sizeof err), QS_OK, "%s", err);
  st.data[11 * 128 * 128 + 2 * 128 + 15] = NAN; /* frame 11, row 2 */
  cr_assert_eq(tiff_write(in, &st, err, sizeof err), QS_OK, "%s", err);
  qs_image_free(&st);
  FILE *f = fopen(out, "w");
  cr_assert_not_null(f);
  fputs("an older file at OUT", f);
  fclose(f);
  setenv("QUICKSILVER_READ_BUDGET_MB", "1", 1);
  result *r = qs("run", "esrrf", in, "-o", out, "--magnification", "2",
                 "--impl", "fused", NULL);
  unsetenv("QUICKSILVER_READ_BUDGET_MB");
  expect_status(r, 1, "a NaN pixel in pieces");
  cr_assert_not_null(strstr(r->err, "nan at row 2, column 15"), "%s", r->err);
  cr_assert_not_null(strstr(r->err, "nothing written"), "%s", r->err);
  slurp_into(out, old, sizeof old);
  cr_assert_str_eq(old, "an older file at OUT");
  cr_assert(!has_tmp(), "a temporary was left in %s", dir);
}

/* Ctrl-C during eSRRF read in pieces (pieces of 16 frames; held by the
 * read seam after the first page of each piece, interrupted at the second
 * piece, once 16 frames of the one 22-frame timepoint are folded, which a
 * stream would complete into an image) cancels the call as it cancels a
 * whole one: exit status 130, an existing OUT left as it was, no
 * temporary behind. */
Test(cli, esrrf_in_pieces_cancelled_writes_nothing) {
  if (qs("methods", "esrrf", NULL)->status != 0)
    cr_skip_test("no esrrf method in this build");
  const char *in = path_in("big.tif"), *out = path_in("o.tif");
  expect_status(qs("simulate", "-o", in, "--frames", "22", "--size",
                   "128x128", "-q", NULL),
                0, "simulate");
  FILE *f = fopen(out, "w");
  cr_assert_not_null(f);
  fputs("an older file at OUT", f);
  fclose(f);
  setenv("QUICKSILVER_READ_BUDGET_MB", "1", 1);
  setenv("QUICKSILVER_TEST_READ_STOP", "1", 1);
  pid_t pid = qs_start("run", "esrrf", in, "-o", out, "--magnification", "2",
                       "--impl", "fused", NULL);
  unsetenv("QUICKSILVER_TEST_READ_STOP");
  unsetenv("QUICKSILVER_READ_BUDGET_MB");
  int st;
  cr_assert_eq(waitpid(pid, &st, WUNTRACED), pid);
  cr_assert(WIFSTOPPED(st), "the read did not reach the seam");
  kill(pid, SIGCONT); /* the first piece goes on */
  cr_assert_eq(waitpid(pid, &st, WUNTRACED), pid);
  cr_assert(WIFSTOPPED(st), "the second piece was not read");
  kill(pid, SIGINT);
  kill(pid, SIGCONT);
  st = wait_bounded(pid, 60, "a cancelled run in pieces");
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 130, "status %#x", st);
  char err[2048], old[64];
  slurp_into(path_in("stderr"), err, sizeof err);
  cr_assert_not_null(strstr(err, "cancelled (Ctrl-C); nothing written"), "%s",
                     err);
  slurp_into(out, old, sizeof old);
  cr_assert_str_eq(old, "an older file at OUT");
  cr_assert(!has_tmp(), "a temporary was left in %s", dir);
}

/* ------------------------------------------------- hardening: the store */

/* Occurrences of needle in hay. */
static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* A store with some runs in it, closed. */
static const char *store_with_runs(const char *in) {
  const char *db = path_in("runs.db");
  for (int i = 1; i <= 3; i++) {
    char m[8];
    snprintf(m, sizeof m, "%d", i);
    expect_status(qs("--db", db, "run", "shift_magnify", in, "-o",
                     path_in("w.tif"), "--magnification-row", m, "-q", NULL),
                  0, "filling the store");
  }
  return db;
}

/* Runs the method against db and expects success, one warning naming
 * needle and saying the run is not recorded, and db unchanged. */
static void expect_unrecorded(const char *db, const char *in,
                              const char *needle) {
  static unsigned char before[1 << 20], after[1 << 20];
  size_t n = file_bytes(db, before, sizeof before);
  result *r = qs("--db", db, "run", "shift_magnify", in, "-o",
                 path_in("u.tif"), NULL);
  expect_status(r, 0, needle);
  cr_assert_not_null(strstr(r->err, needle), "%s", r->err);
  cr_assert_eq(count_of(r->err, "without recording timings"), 1, "%s",
               r->err);
  cr_assert(file_exists(path_in("u.tif")));
  cr_assert_eq(file_bytes(db, after, sizeof after), n, "%s grew", db);
  cr_assert_eq(memcmp(before, after, n), 0, "%s was written", db);
}

Test(cli, foreign_sqlite_file_is_left_alone) {
  const char *in = small_input(), *db = path_in("other.db");
  sqlite3 *o;
  cr_assert_eq(sqlite3_open(db, &o), SQLITE_OK);
  sqlite3_exec(o, "CREATE TABLE notes (t TEXT); INSERT INTO notes VALUES "
               "('not yours')", NULL, NULL, NULL);
  sqlite3_close(o);
  expect_unrecorded(db, in, "of something else");
}

Test(cli, damage_inside_the_store_is_never_written) {
  const char *in = small_input(), *db = store_with_runs(in);
  static unsigned char b[1 << 20];
  size_t n = file_bytes(db, b, sizeof b);
  cr_assert_gt(n, 4096 * 3);
  /* cut the end of the last page: the open-time probes pass */
  FILE *f = fopen(db, "wb");
  cr_assert_eq(fwrite(b, 1, n - 100, f), n - 100);
  fclose(f);
  expect_unrecorded(db, in, "damaged");
}

Test(cli, lock_held_past_the_wait_is_reported) {
  const char *in = small_input(), *db = store_with_runs(in);
  sqlite3 *o;
  cr_assert_eq(sqlite3_open(db, &o), SQLITE_OK);
  cr_assert_eq(sqlite3_exec(o, "BEGIN IMMEDIATE", NULL, NULL, NULL),
               SQLITE_OK);
  setenv("QUICKSILVER_DB_WAIT_MS", "200", 1);
  result *r = qs("--db", db, "run", "shift_magnify", in, "-o",
                 path_in("u.tif"), NULL);
  unsetenv("QUICKSILVER_DB_WAIT_MS");
  sqlite3_exec(o, "ROLLBACK", NULL, NULL, NULL);
  sqlite3_close(o);
  expect_status(r, 0, "lock held");
  cr_assert_not_null(strstr(r->err, "more than 200 ms"), "%s", r->err);
  cr_assert_eq(count_of(r->err, "without recording timings"), 1, "%s",
               r->err);
}

/* Root ignores file permissions: the test becomes `nobody` (the whole
 * test directory is handed over first) or is skipped. */
Test(cli, read_only_store_is_reported) {
  const char *in = small_input(), *db = store_with_runs(in);
  if (geteuid() == 0) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "chown -R 65534:65534 '%s'", dir);
    if (system(cmd) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
      cr_skip_test("cannot become the unprivileged user nobody");
  }
  cr_assert_eq(chmod(db, 0444), 0);
  expect_unrecorded(db, in, "can only be read");
}

Test(cli, in_memory_store_for_want_of_home_is_warned) {
  const char *in = small_input();
  unsetenv("QUICKSILVER_DB");
  unsetenv("HOME");
  unsetenv("XDG_CACHE_HOME");
  result *r = qs("run", "shift_magnify", in, "-o", path_in("m.tif"), NULL);
  expect_status(r, 0, "no HOME");
  cr_assert_not_null(strstr(r->err, "neither HOME nor XDG_CACHE_HOME"), "%s",
                     r->err);
  r = qs("--db", ":memory:", "run", "shift_magnify", in, "-o",
         path_in("m.tif"), NULL);
  cr_assert_null(strstr(r->err, "HOME"), "asked for: %s", r->err);
}

/* --threads 0 is every core, as QUICKSILVER_THREADS=0 is: the CPU device
 * the store records says how many threads the pool had. */
Test(cli, threads_zero_means_all_cores) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  const char *in = small_input();
  setenv("QUICKSILVER_THREADS", "1", 1);
  expect_status(qs("run", "shift_magnify", in, "-o", path_in("t.tif"),
                   "--threads", "0", "-q", NULL),
                0, "--threads 0");
  unsetenv("QUICKSILVER_THREADS");
  expect_status(qs("db", "export", path_in("t.json"), NULL), 0, "export");
  char text[65536], want[64];
  slurp_into(path_in("t.json"), text, sizeof text);
  snprintf(want, sizeof want, "\\\"threads\\\":%ld}", cores);
  cr_assert_not_null(strstr(text, want), "want %s in %s", want, text);
  expect_status(qs("devices", "--threads", "0", NULL), 0, "devices");
}

/* ------------------------------------------------- hardening: small items */

/* Defaults and ranges in help and messages: integers as integers, floats
 * in their shortest round-trip form. */
Test(cli, numbers_are_printed_as_people_write_them) {
  result *r = qs("simulate", "--help", NULL);
  expect_status(r, 0, "simulate --help");
  cr_assert_not_null(strstr(r->out, "(default 1.4, range [0.05, 1.7])"), "%s",
                     r->out);
  cr_assert_not_null(strstr(r->out, "(default 0.1, range [0, 1])"), "%s",
                     r->out);
  cr_assert_not_null(strstr(r->out, "9007199254740992]"), "%s", r->out);
  cr_assert_null(strstr(r->out, "0000000000"), "%s", r->out);
  cr_assert_null(strstr(r->out, "e+"), "%s", r->out);
  if (qs("methods", "esrrf", NULL)->status != 0) return;
  const char *in = small_input();
  r = qs("esrrf", in, "-o", path_in("x.tif"), "--frames-per-timepoint",
         "3000000000", NULL);
  expect_status(r, 2, "out of range");
  cr_assert_not_null(strstr(r->err, "3000000000 is outside [0, 2147483647]"),
                     "%s", r->err);
}

/* Enum choices in any case (NanoPyx writes AVG, VAR, TAC2); tac2 with a
 * one-frame last timepoint is refused with a way out that works. */
Test(cli, temporal_choices_any_case_and_tac2_way_out) {
  if (qs("methods", "esrrf", NULL)->status != 0)
    cr_skip_test("no esrrf method in this build");
  const char *in = path_in("f5.tif"), *out = path_in("t.tif");
  expect_status(qs("simulate", "-o", in, "--frames", "5", "--size", "12x12",
                   "-q", NULL),
                0, "simulate");
  const char *spell[] = {"AVG", "Var", "TAC2", "avg"};
  for (size_t i = 0; i < 4; i++)
    expect_status(qs("esrrf", in, "-o", out, "--temporal", spell[i],
                     "--magnification", "2", "-q", NULL),
                  0, spell[i]);
  result *r = qs("esrrf", in, "-o", out, "--temporal", "TAC2",
                 "--frames-per-timepoint", "2", "--magnification", "2", NULL);
  expect_status(r, 2, "tac2 with a 1-frame timepoint");
  cr_assert_not_null(strstr(r->err, "--frames 0:4"), "%s", r->err);
  r = qs("esrrf", in, "-o", out, "--temporal", "TAC2",
         "--frames-per-timepoint", "2", "--magnification", "2", "--frames",
         "0:4", "--json", NULL);
  expect_status(r, 0, "the way out");
  cJSON *j = json_of(r);
  cJSON *shape = cJSON_GetObjectItem(
      cJSON_GetArrayItem(cJSON_GetObjectItem(j, "outputs"), 0), "shape");
  cr_assert_eq(cJSON_GetArrayItem(shape, 0)->valuedouble, 2, "2 timepoints");
  cJSON_Delete(j);
  /* --frames reads that range of the stack: the same as the full read's */
  qs_image all, part;
  char err[512];
  expect_status(qs("run", "shift_magnify", in, "-o", path_in("a.tif"),
                   "--frames", "1:3", "-q", NULL),
                0, "--frames 1:3");
  expect_status(qs("run", "shift_magnify", in, "-o", path_in("b.tif"), "-q",
                   "--impl", "serial", NULL),
                0, "all frames");
  cr_assert_eq(tiff_read(path_in("a.tif"), &part, err, sizeof err), QS_OK);
  cr_assert_eq(tiff_read(path_in("b.tif"), &all, err, sizeof err), QS_OK);
  cr_assert_eq(part.frames, 2);
  size_t plane = all.rows * all.cols;
  for (size_t i = 0; i < 2 * plane; i++)
    cr_assert_float_eq(part.data[i], all.data[plane + i], 1e-4);
  qs_image_free(&all);
  qs_image_free(&part);
  expect_status(qs("run", "shift_magnify", in, "-o", out, "--frames", "4:9",
                   NULL),
                2, "range past the end");
}

/* stream -o: the first result replaces an existing OUT (through a
 * temporary), the later ones are appended in place; the stack equals the
 * batch eSRRF of the same frames and the numbered files of --out-dir (made
 * by the stream), and nothing is left beside it. */
/* The 12-frame input of the stream tests (16 x 14, seed): simulated at
 * in, and the batch call's timepoints of 3 at M 2 with `serial` at ref. */
static void stream_input_and_batch(const char *in, const char *seed,
                                   const char *ref) {
  expect_status(qs("simulate", "-o", in, "--frames", "12", "--rows", "16",
                   "--cols", "14", "--seed", seed, "-q", NULL),
                0, "simulate");
  expect_status(qs("esrrf", in, "-o", ref, "--frames-per-timepoint", "3",
                   "--magnification", "2", "--impl", "serial", "-q", NULL),
                0, "batch");
}

/* The stack at out equals the batch call's at ref bit for bit (4
 * timepoints); *got keeps out's stack. */
static void expect_stream_is_batch(const char *out, const char *ref,
                                   qs_image *got) {
  qs_image want;
  char err[512];
  cr_assert_eq(tiff_read(out, got, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(tiff_read(ref, &want, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(got->frames, 4, "12 frames in timepoints of 3");
  cr_assert_eq(got->rows, want.rows);
  cr_assert_eq(got->cols, want.cols);
  cr_assert_eq(memcmp(got->data, want.data,
                      4 * got->rows * got->cols * sizeof(float)),
               0, "the streamed stack equals the batch call's, bit for bit");
  qs_image_free(&want);
}

/* A file that is already there is read in pieces (64 MB of pages; 5
 * pages here, through the test seam, across timepoints of 3), with the
 * batch call's bits. */
Test(cli, stream_reads_a_whole_file_in_pieces) {
  if (qs("methods", "esrrf", NULL)->status != 0)
    cr_skip_test("no esrrf method in this build");
  const char *in = path_in("in.tif"), *out = path_in("out.tif"),
             *ref = path_in("ref.tif");
  stream_input_and_batch(in, "9", ref);
  setenv("QUICKSILVER_TEST_STREAM_READ_PAGES", "5", 1);
  result *r = qs("stream", in, "-o", out, "--window", "3", "--magnification",
                 "2", "--impl", "serial", "--idle", "0", "-q", NULL);
  unsetenv("QUICKSILVER_TEST_STREAM_READ_PAGES");
  expect_status(r, 0, "stream in pieces");
  qs_image got;
  expect_stream_is_batch(out, ref, &got);
  qs_image_free(&got);
}

Test(cli, stream_output_is_appended_in_place) {
  if (qs("methods", "esrrf", NULL)->status != 0)
    cr_skip_test("no esrrf method in this build");
  const char *in = path_in("in.tif"), *out = path_in("out.tif"),
             *ref = path_in("ref.tif"), *res = path_in("res");
  stream_input_and_batch(in, "7", ref);
  FILE *f = fopen(out, "w");
  cr_assert_not_null(f);
  fputs("an older file at OUT", f);
  fclose(f);
  /* --out-dir naming a file is refused; a missing one is made */
  result *bad = qs("stream", in, "--out-dir", out, "--window", "3", "-q",
                   NULL);
  expect_status(bad, 2, "--out-dir is a file");
  cr_expect_not_null(strstr(bad->err, "not a directory"), "%s", bad->err);
  cr_assert(!file_exists(res));
  expect_status(qs("stream", in, "-o", out, "--out-dir", res, "--window", "3",
                   "--magnification", "2", "--impl", "serial", "--idle", "0",
                   "-q", NULL),
                0, "stream");
  qs_image got;
  char err[512];
  expect_stream_is_batch(out, ref, &got);
  size_t plane = got.rows * got.cols;
  for (size_t k = 0; k < 4; k++) {
    char leaf[64];
    qs_image one;
    snprintf(leaf, sizeof leaf, "res/esrrf_%06zu.tif", k);
    cr_assert_eq(tiff_read(path_in(leaf), &one, err, sizeof err), QS_OK, "%s",
                 err);
    cr_assert_eq(memcmp(one.data, got.data + k * plane,
                        plane * sizeof(float)),
                 0, "result %zu", k);
    qs_image_free(&one);
  }
  /* appended pages: no ImageJ page count for them to contradict */
  FILE *g = fopen(out, "rb");
  cr_assert_not_null(g);
  static char bytes[1 << 16];
  size_t n = fread(bytes, 1, sizeof bytes, g);
  fclose(g);
  cr_assert_gt(n, 4 * plane * sizeof(float));
  for (size_t i = 0; i + 7 <= n; i++)
    cr_assert(memcmp(bytes + i, "images=", 7), "an ImageJ page count");
  /* in, out, ref, res, the store (and its journal), stdout, stderr: no
   * temporary beside OUT */
  char cmd[600];
  snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -q qs-tmp", dir);
  cr_assert_neq(system(cmd), 0, "a temporary was left beside OUT");
  qs_image_free(&got);
}

/* The sweep: a small simulated stack through every output, and bad lists
 * refused naming the flag with nothing written. */
Test(cli, sweep_writes_table_maps_and_refuses_bad_lists) {
  const char *in = path_in("s.tif"), *csv = path_in("t.csv");
  const char *js = path_in("t.json"), *svg = path_in("maps");
  expect_status(qs("simulate", "-o", in, "--frames", "6", "--size", "16x16",
                   NULL),
                0, "simulate");
  result *r = qs("sweep", in, "--radius", "2:1:0.5", "--sensitivity", "1",
                 "--csv", csv, NULL);
  expect_status(r, 2, "empty range");
  cr_expect(strstr(r->err, "--radius") != NULL, "%s", r->err);
  r = qs("sweep", in, "--radius", "1,-1", "--sensitivity", "1", "--csv", csv,
         NULL);
  expect_status(r, 2, "negative radius");
  cr_expect(strstr(r->err, "radius: -1") != NULL, "%s", r->err);
  r = qs("sweep", in, "--radius", "1", "--sensitivity", "1,x", "--csv", csv,
         NULL);
  expect_status(r, 2, "not a number");
  cr_expect(strstr(r->err, "--sensitivity") != NULL, "%s", r->err);
  r = qs("sweep", in, "--radius", "1", "--sensitivity", "1", "--csv", in,
         NULL);
  expect_status(r, 2, "output is the input");
  cr_expect(!file_exists(csv), "nothing written");
  r = qs("sweep", in, "--radius", "1:2:0.5", "--sensitivity", "1,2",
         "--magnification", "2", "--csv", csv, "--json-out", js, "--svg", svg,
         "--json", NULL);
  expect_status(r, 0, "sweep");
  cJSON *j = json_of(r);
  cJSON *pts = cJSON_GetObjectItem(j, "points");
  cr_assert_eq(cJSON_GetArraySize(pts), 6);
  cJSON *p0 = cJSON_GetArrayItem(pts, 0), *p5 = cJSON_GetArrayItem(pts, 5);
  cr_expect_eq(cJSON_GetObjectItem(p0, "radius")->valuedouble, 1);
  cr_expect_eq(cJSON_GetObjectItem(p5, "radius")->valuedouble, 2);
  cr_expect_eq(cJSON_GetObjectItem(p5, "sensitivity")->valuedouble, 2);
  double rsp = cJSON_GetObjectItem(p0, "rsp")->valuedouble;
  cr_expect(rsp > 0 && rsp <= 1, "rsp %g", rsp);
  cJSON_Delete(j);
  char text[4096];
  slurp_into(csv, text, sizeof text);
  cr_expect(strncmp(text, "temporal,sensitivity,radius,rsp", 31) == 0, "%s",
            text);
  size_t lines = 0;
  for (char *c = text; *c; c++) lines += *c == '\n';
  cr_expect_eq(lines, 7, "header and 6 points: %s", text);
  cr_expect(file_exists(js));
  const char *maps[] = {"maps_qnr.svg", "maps_rsp.svg", "maps_frc.svg"};
  for (int k = 0; k < 3; k++) {
    slurp_into(path_in(maps[k]), text, sizeof text);
    cr_expect(strstr(text, "<svg") == text, "%s: %.40s", maps[k], text);
  }
  r = qs("sweep", in, "--radius", "1", "--sensitivity", "1", "--frames", "2",
         NULL);
  expect_status(r, 2, "unknown flag");
}

/* ------------------------------------------------------------------------
 * Images that keep their axes and pixel size, provenance in every output,
 * and tools that do what their help says. */

#include <tiffio.h>

/* Skips the test in a build without eSRRF. */
static void need_esrrf(void) {
  if (qs("methods", "esrrf", NULL)->status != 0)
    cr_skip_test("no esrrf method in this build");
}

/* Simulates a stack of `frames` frames of RxC `size` into dir/leaf. */
static const char *simulated(const char *leaf, const char *frames,
                             const char *size, const char *seed) {
  const char *p = path_in(leaf);
  expect_status(qs("simulate", "-o", p, "--frames", frames, "--size", size,
                   "--seed", seed, "-q", NULL),
                0, "simulate");
  return p;
}

/* Runs the binary with stdin read from the file `in`. */
static result *qs_stdin(const char *in, const char *first, ...) {
  va_list ap;
  va_start(ap, first);
  result *r = qs_va(in, first, ap);
  va_end(ap);
  return r;
}

/* Writes stacks a and b (same shape) with libtiff as channels 0 and 1 of
 * one float32 stack described by desc (page 0), channel fastest (c_fast:
 * ImageJ's order) or slowest (OME's XYTCZ), XResolution and YResolution
 * xres per unit, ResolutionUnit none. */
static void write_channels(const char *path, const qs_image *a,
                           const qs_image *b, const char *desc, int c_fast,
                           float xres) {
  TIFF *t = TIFFOpen(path, "w");
  cr_assert_not_null(t);
  size_t T = a->frames;
  for (size_t p = 0; p < 2 * T; p++) {
    size_t c = c_fast ? p % 2 : p / T, f = c_fast ? p / 2 : p % T;
    const qs_image *src = c ? b : a;
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, (uint32_t)a->cols);
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, (uint32_t)a->rows);
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, 32);
    TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, SAMPLEFORMAT_IEEEFP);
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, 1);
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, PHOTOMETRIC_MINISBLACK);
    TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, (uint32_t)a->rows);
    TIFFSetField(t, TIFFTAG_XRESOLUTION, xres);
    TIFFSetField(t, TIFFTAG_YRESOLUTION, xres);
    TIFFSetField(t, TIFFTAG_RESOLUTIONUNIT, RESUNIT_NONE);
    if (p == 0) TIFFSetField(t, TIFFTAG_IMAGEDESCRIPTION, desc);
    size_t plane = a->rows * a->cols;
    cr_assert_eq(TIFFWriteEncodedStrip(t, 0, src->data + f * plane,
                                       (tmsize_t)(plane * sizeof(float))),
                 (tmsize_t)(plane * sizeof(float)));
    cr_assert(TIFFWriteDirectory(t));
  }
  TIFFClose(t);
}

/* Stacks a and b as ImageJ writes a 2-channel hyperstack (TCYX: channel
 * fastest), 0.1 um pixels (XResolution 10 per unit, unit=micron). */
static void write_hyperstack(const char *path, const qs_image *a,
                             const qs_image *b) {
  char desc[256];
  snprintf(desc, sizeof desc,
           "ImageJ=1.54f\nimages=%zu\nchannels=2\nframes=%zu\n"
           "hyperstack=true\nmode=composite\nunit=micron\nloop=false\n",
           2 * a->frames, a->frames);
  write_channels(path, a, b, desc, 1, 10.0f);
}

/* Output `out` (channels x timepoints, ImageJ's order) holds eSRRF of
 * each channel alone (wa, wb: T timepoints each), bit for bit. */
static void expect_channels(const char *out, const char *wa, const char *wb,
                            size_t T) {
  qs_image got, ia, ib;
  char err[512];
  cr_assert_eq(tiff_read(out, &got, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(tiff_read(wa, &ia, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(tiff_read(wb, &ib, err, sizeof err), QS_OK, "%s", err);
  size_t plane = got.rows * got.cols;
  cr_assert_eq(got.frames, 2 * T);
  cr_assert_eq(ia.frames, T);
  for (size_t t = 0; t < T; t++) {
    cr_assert_eq(memcmp(got.data + (2 * t) * plane, ia.data + t * plane,
                        plane * 4),
                 0, "%s: channel 0, timepoint %zu", out, t);
    cr_assert_eq(memcmp(got.data + (2 * t + 1) * plane, ib.data + t * plane,
                        plane * 4),
                 0, "%s: channel 1, timepoint %zu", out, t);
  }
  qs_image_free(&got), qs_image_free(&ia), qs_image_free(&ib);
}

/* Two simulated single-channel stacks (10 frames of 12 x 10, seeds 3 and
 * 4) at a.tif and b.tif (*a, *b), read into ia and ib. */
static void two_stacks(const char **a, const char **b, qs_image *ia,
                       qs_image *ib) {
  char err[512];
  *a = simulated("a.tif", "10", "12x10", "3");
  *b = simulated("b.tif", "10", "12x10", "4");
  cr_assert_eq(tiff_read(*a, ia, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(tiff_read(*b, ib, err, sizeof err), QS_OK, "%s", err);
}

/* An eSRRF output at M5 of 0.1 um input pixels: 0.02 um pixels, and its
 * provenance (returned, parsed) names eSRRF, impl, the version and the
 * input. */
static cJSON *esrrf_provenance(const tiff_info *info, const char *impl,
                               const char *input) {
  cr_assert_float_eq(info->meta.pixel_x, 0.02, 1e-9);
  cr_assert_float_eq(info->meta.pixel_y, 0.02, 1e-9);
  cr_assert_str_eq(info->meta.unit, "micron");
  cJSON *p = cJSON_Parse(info->meta.provenance);
  cr_assert_not_null(p, "provenance: %s", info->meta.provenance);
  cr_assert_str_eq(cJSON_GetObjectItem(p, "method")->valuestring, "esrrf");
  cr_assert_str_eq(cJSON_GetObjectItem(p, "impl")->valuestring, impl);
  cr_assert_str_eq(cJSON_GetObjectItem(p, "version")->valuestring,
                   QS_VERSION);
  cr_assert_str_eq(cJSON_GetObjectItem(p, "input")->valuestring, input);
  return p;
}

/* A 2-channel hyperstack over the read budget is read in pieces, a
 * channel at a time, and joined: the whole call's hyperstack bit for bit
 * (timepoints of 8, the last short), with both channels and the pixel
 * size. */
Test(cli, hyperstack_over_the_read_budget_is_read_in_pieces) {
  need_esrrf();
  const char *a = simulated("a.tif", "22", "128x128", "3"),
             *b = simulated("b.tif", "22", "128x128", "4");
  const char *hs = path_in("hs.tif"), *out = path_in("out.tif"),
             *ref = path_in("ref.tif");
  qs_image ia, ib;
  char err[512];
  cr_assert_eq(tiff_read(a, &ia, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(tiff_read(b, &ib, err, sizeof err), QS_OK, "%s", err);
  write_hyperstack(hs, &ia, &ib); /* 2.8 MiB decoded */
  expect_status(qs("esrrf", hs, "-o", ref, "--magnification", "2",
                   "--frames-per-timepoint", "8", "--impl", "fused", "-q",
                   NULL),
                0, "whole");
  setenv("QUICKSILVER_READ_BUDGET_MB", "1", 1);
  result *r = qs("esrrf", hs, "-o", out, "--magnification", "2",
                 "--frames-per-timepoint", "8", "--impl", "fused", NULL);
  unsetenv("QUICKSILVER_READ_BUDGET_MB");
  expect_status(r, 0, "in pieces");
  cr_assert_not_null(strstr(r->err, "a channel at a time"), "%s", r->err);
  expect_same_stack(out, ref, 6, "2 channels x 3 timepoints, in pieces");
  /* --json: one object for the run, not one per channel */
  setenv("QUICKSILVER_READ_BUDGET_MB", "1", 1);
  r = qs("--json", "esrrf", hs, "-o", out, "--magnification", "2",
         "--frames-per-timepoint", "8", "--impl", "fused", NULL);
  unsetenv("QUICKSILVER_READ_BUDGET_MB");
  expect_status(r, 0, "--json in pieces");
  cJSON *js = cJSON_ParseWithOpts(r->out, NULL, 1); /* nothing after it */
  cr_assert_not_null(js, "stdout is not one JSON object: %s", r->out);
  cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(js, "read_in_pieces")));
  cr_assert_eq(cJSON_GetObjectItem(js, "channels")->valuedouble, 2);
  cJSON_Delete(js);
  tiff_info info;
  cr_assert_eq(tiff_info_of(out, &info, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(info.meta.channels, 2);
  cr_assert_eq(info.meta.frames, 3);
  cr_assert_float_eq(info.meta.pixel_x, 0.05, 1e-9);
  cJSON *p = cJSON_Parse(info.meta.provenance);
  cr_assert_not_null(p, "%s", info.meta.provenance);
  cr_assert_eq(cJSON_GetObjectItem(p, "channels")->valuedouble, 2);
  cr_assert_str_eq(cJSON_GetObjectItem(p, "impl")->valuestring, "fused");
  cJSON_Delete(p);
  cr_assert(!has_tmp(), "a temporary was left in %s", dir);
  qs_image_free(&ia), qs_image_free(&ib);
}

/* A 2-channel hyperstack is run per channel: each output channel equals
 * eSRRF of that channel alone, bit for bit, the channel axis is kept, and
 * the pixel size comes out divided by M (0.1 um in, 0.02 um out at M5);
 * the provenance names the parameters, implementation, version and input,
 * and `quicksilver info` reads it all back. */
Test(cli, hyperstack_channels_run_apart_with_pixel_size_and_provenance) {
  need_esrrf();
  const char *a, *b, *hs = path_in("hs.tif"), *out = path_in("out.tif"),
                    *oa = path_in("oa.tif"), *ob = path_in("ob.tif");
  qs_image ia, ib;
  char err[512];
  two_stacks(&a, &b, &ia, &ib);
  write_hyperstack(hs, &ia, &ib);
  result *r = qs("esrrf", hs, "-o", out, "--magnification", "5",
                 "--frames-per-timepoint", "5", "--impl", "serial", NULL);
  expect_status(r, 0, "esrrf on the hyperstack");
  cr_assert_not_null(strstr(r->err, "channel 1"), "%s", r->err);
  expect_status(qs("esrrf", a, "-o", oa, "--magnification", "5",
                   "--frames-per-timepoint", "5", "--impl", "serial", "-q",
                   NULL),
                0, "esrrf on channel 0 alone");
  expect_status(qs("esrrf", b, "-o", ob, "--magnification", "5",
                   "--frames-per-timepoint", "5", "--impl", "serial", "-q",
                   NULL),
                0, "esrrf on channel 1 alone");
  tiff_info info;
  cr_assert_eq(tiff_info_of(out, &info, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(info.pages, 4, "2 channels x 2 timepoints");
  cr_assert_eq(info.meta.channels, 2);
  cr_assert_eq(info.meta.frames, 2);
  cJSON *p = esrrf_provenance(&info, "serial", "hs.tif");
  cJSON *pp = cJSON_GetObjectItem(p, "params");
  cr_assert_eq(cJSON_GetObjectItem(pp, "magnification")->valuedouble, 5);
  cr_assert_eq(cJSON_GetObjectItem(pp, "frames_per_timepoint")->valuedouble,
               5);
  cr_assert_str_eq(cJSON_GetObjectItem(pp, "temporal")->valuestring, "avg");
  cJSON_Delete(p);
  cr_assert_eq(info.rows * info.cols, 60 * 50);
  expect_channels(out, oa, ob, 2);
  /* a single-channel output gets the pixel size too: simulate writes its
   * 100 nm pixels */
  cr_assert_eq(tiff_info_of(a, &info, err, sizeof err), QS_OK, "%s", err);
  cr_assert_float_eq(info.meta.pixel_x, 0.1, 1e-9);
  cr_assert_eq(tiff_info_of(oa, &info, err, sizeof err), QS_OK, "%s", err);
  cr_assert_float_eq(info.meta.pixel_x, 0.02, 1e-9);
  cr_assert_eq(info.meta.channels, 1);
  /* info: text and JSON */
  r = qs("info", out, NULL);
  expect_status(r, 0, "info");
  cr_assert_not_null(strstr(r->out, "2 channels"), "%s", r->out);
  cr_assert_not_null(strstr(r->out, "0.02 micron"), "%s", r->out);
  cr_assert_not_null(strstr(r->out, "\"impl\":\"serial\""), "%s", r->out);
  cJSON *j = json_of(qs("info", out, "--json", NULL));
  cr_assert_eq(cJSON_GetObjectItem(j, "channels")->valuedouble, 2);
  cr_assert_float_eq(cJSON_GetObjectItem(j, "pixel_size")->valuedouble, 0.02,
                     1e-9);
  cr_assert_str_eq(cJSON_GetObjectItem(
                       cJSON_GetObjectItem(j, "provenance"), "method")
                       ->valuestring,
                   "esrrf");
  cJSON_Delete(j);
  expect_status(qs("info", path_in("missing.tif"), NULL), 1, "info missing");
  qs_image_free(&ia), qs_image_free(&ib);
}

/* The sweep's images: --out-dir made when missing, each point's
 * reconstruction with the input's pixel size / M and its provenance (the
 * point's parameters, the implementation its steps ran, the input and the
 * channel); a 2-channel hyperstack is refused without --channel and with
 * --channel 1 sweeps channel 1 alone (the same image as the sweep of that
 * channel's own stack); an image that would be the input is refused
 * before any work, the input untouched. */
Test(cli, sweep_images_keep_pixel_size_and_provenance) {
  need_esrrf();
  const char *a, *b, *hs = path_in("hs.tif"), *pts = path_in("pts");
  const char *alone = path_in("alone");
  qs_image ia, ib;
  char err[512];
  two_stacks(&a, &b, &ia, &ib);
  write_hyperstack(hs, &ia, &ib);
  result *r = qs("sweep", hs, "--radius", "1", "--sensitivity", "1,2",
                 "--out-dir", pts, "-q", NULL);
  expect_status(r, 2, "two channels, none chosen");
  cr_expect_not_null(strstr(r->err, "--channel"), "%s", r->err);
  cr_expect(!file_exists(pts), "nothing made");
  r = qs("sweep", hs, "--radius", "1", "--sensitivity", "1", "--channel",
         "2", "-q", NULL);
  expect_status(r, 2, "no channel 2");
  const char *bad[] = {"x", "-1", "1.5", ""};
  for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
    r = qs("sweep", hs, "--radius", "1", "--sensitivity", "1", "--channel",
           bad[k], "-q", NULL);
    expect_status(r, 2, "--channel not a number");
    cr_expect_not_null(strstr(r->err, "--channel"), "%s", r->err);
  }
  expect_status(qs("sweep", hs, "--radius", "1", "--sensitivity", "1,2",
                   "--out-dir", pts, "--channel", "1", "--impl", "serial",
                   "-q", NULL),
                0, "sweep of channel 1");
  expect_status(qs("sweep", b, "--radius", "1", "--sensitivity", "1,2",
                   "--out-dir", alone, "--impl", "serial", "-q", NULL),
                0, "sweep of channel 1's own stack");
  char got_path[512], want_path[512];
  snprintf(got_path, sizeof got_path, "%s/esrrf_avg_s2_r1.tif", pts);
  snprintf(want_path, sizeof want_path, "%s/esrrf_avg_s2_r1.tif", alone);
  qs_image got, want;
  cr_assert_eq(tiff_read(got_path, &got, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(tiff_read(want_path, &want, err, sizeof err), QS_OK, "%s",
               err);
  cr_assert_eq(got.rows * got.cols, 60 * 50);
  cr_expect_eq(memcmp(got.data, want.data, got.rows * got.cols * 4), 0,
               "channel 1 of the hyperstack swept as its own stack");
  qs_image_free(&got), qs_image_free(&want);
  tiff_info info;
  cr_assert_eq(tiff_info_of(got_path, &info, err, sizeof err), QS_OK, "%s",
               err);
  cJSON *p = esrrf_provenance(&info, "serial", "hs.tif");
  cr_expect_eq(cJSON_GetObjectItem(p, "channel")->valuedouble, 1);
  cr_expect(cJSON_IsTrue(cJSON_GetObjectItem(p, "sweep")));
  cJSON *pp = cJSON_GetObjectItem(p, "params");
  cr_expect_eq(cJSON_GetObjectItem(pp, "radius")->valuedouble, 1);
  cr_expect_eq(cJSON_GetObjectItem(pp, "sensitivity")->valuedouble, 2);
  cr_expect_eq(cJSON_GetObjectItem(pp, "magnification")->valuedouble, 5);
  cJSON_Delete(p);
  /* an image named like the input, in the directory: refused, untouched */
  char clash[512];
  snprintf(clash, sizeof clash, "%s/esrrf_avg_s1_r1.tif", pts);
  cr_assert_eq(tiff_write(clash, &ib, err, sizeof err), QS_OK, "%s", err);
  r = qs("sweep", clash, "--radius", "1", "--sensitivity", "1", "--out-dir",
         pts, "-q", NULL);
  expect_status(r, 2, "an image would replace the input");
  cr_expect_not_null(strstr(r->err, "is the input"), "%s", r->err);
  qs_image back;
  cr_assert_eq(tiff_read(clash, &back, err, sizeof err), QS_OK, "%s", err);
  cr_expect_eq(memcmp(back.data, ib.data, ib.frames * ib.rows * ib.cols * 4),
               0, "the input was modified");
  qs_image_free(&back);
  qs_image_free(&ia), qs_image_free(&ib);
}

/* An OME-TIFF of 2 channels, channel slowest (XYTCZ), 65 nm pixels: each
 * channel's frames are found in that order and run apart, bit for bit
 * the runs of each channel alone; the output is an ImageJ hyperstack
 * (channel fastest) of 13 nm pixels. */
Test(cli, ome_channels_in_their_order_run_apart) {
  need_esrrf();
  const char *a, *b, *ome = path_in("ome.tif"), *out = path_in("out.tif"),
                    *oa = path_in("oa.tif"), *ob = path_in("ob.tif");
  qs_image ia, ib;
  char err[512];
  two_stacks(&a, &b, &ia, &ib);
  char desc[640];
  snprintf(desc, sizeof desc,
           "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<OME "
           "xmlns=\"http://www.openmicroscopy.org/Schemas/OME/2016-06\">"
           "<Image ID=\"Image:0\"><Pixels ID=\"Pixels:0\" "
           "DimensionOrder=\"XYTCZ\" Type=\"float\" SizeX=\"%zu\" "
           "SizeY=\"%zu\" SizeC=\"2\" SizeZ=\"1\" SizeT=\"%zu\" "
           "PhysicalSizeX=\"65\" PhysicalSizeXUnit=\"nm\" "
           "PhysicalSizeY=\"65\" PhysicalSizeYUnit=\"nm\">"
           "</Pixels></Image></OME>",
           ia.cols, ia.rows, ia.frames);
  write_channels(ome, &ia, &ib, desc, 0, 1.0f);
  const char *flags[] = {"--magnification", "5", "--frames-per-timepoint",
                         "5", "--impl", "serial", "-q"};
  expect_status(qs("esrrf", ome, "-o", out, flags[0], flags[1], flags[2],
                   flags[3], flags[4], flags[5], flags[6], NULL),
                0, "esrrf on the OME-TIFF");
  expect_status(qs("esrrf", a, "-o", oa, flags[0], flags[1], flags[2],
                   flags[3], flags[4], flags[5], flags[6], NULL),
                0, "esrrf on channel 0 alone");
  expect_status(qs("esrrf", b, "-o", ob, flags[0], flags[1], flags[2],
                   flags[3], flags[4], flags[5], flags[6], NULL),
                0, "esrrf on channel 1 alone");
  tiff_info info;
  cr_assert_eq(tiff_info_of(out, &info, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(info.meta.channels, 2);
  cr_assert_eq(info.meta.frames, 2);
  cr_assert_str_eq(info.meta.order, "CZT");
  /* written as a rational number of pixels per nm (1/13): to 1e-5 */
  cr_assert_float_eq(info.meta.pixel_x, 13, 13e-5, "%.12g %s",
                     info.meta.pixel_x, info.meta.unit);
  cr_assert_str_eq(info.meta.unit, "nm");
  expect_channels(out, oa, ob, 2);
  qs_image_free(&ia), qs_image_free(&ib);
}

/* Frames piped to stream without --dtype are refused rather than read as
 * float32; the stream's output carries the pixel size / M and the
 * provenance, and its summary says it waited. */
Test(cli, stream_needs_dtype_on_stdin_and_keeps_metadata) {
  need_esrrf();
  const char *raw = path_in("frames.u16"), *out = path_in("s.tif");
  FILE *f = fopen(raw, "wb");
  cr_assert_not_null(f);
  for (int i = 0; i < 6 * 8 * 8; i++) {
    uint16_t v = (uint16_t)(100 + (i * 37) % 500);
    fwrite(&v, 2, 1, f);
  }
  fclose(f);
  result *r = qs_stdin(raw, "stream", "-", "--size", "8x8", "-o", out,
                       "--window", "3", NULL);
  expect_status(r, 2, "stdin without --dtype");
  cr_assert_not_null(strstr(r->err, "--dtype"), "%s", r->err);
  cr_assert(!file_exists(out));
  r = qs_stdin(raw, "stream", "-", "--size", "8x8", "--dtype", "uint16", "-o",
               out, "--window", "3", "--magnification", "2", "--impl",
               "serial", NULL);
  expect_status(r, 0, "stdin with --dtype uint16");
  cr_assert_not_null(strstr(r->err, "6 frames, 2 results"), "%s", r->err);
  tiff_info info;
  char err[512];
  cr_assert_eq(tiff_info_of(out, &info, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(info.pages, 2);
  cJSON *p = cJSON_Parse(info.meta.provenance);
  cr_assert_not_null(p, "provenance: %s", info.meta.provenance);
  cr_assert_str_eq(cJSON_GetObjectItem(p, "impl")->valuestring, "serial");
  cr_assert_eq(cJSON_GetObjectItem(p, "window")->valuedouble, 3);
  cJSON_Delete(p);
  /* from a TIFF with a pixel size, which is finished: it says it waits */
  const char *in = path_in("in.tif"), *o2 = path_in("s2.tif");
  qs_image one;
  cr_assert_eq(qs_image_alloc(&one, 4, 8, 8), QS_OK);
  for (size_t i = 0; i < 4 * 64; i++) one.data[i] = (float)(i % 13);
  tiff_meta m;
  tiff_meta_plain(&m, 4);
  m.pixel_x = m.pixel_y = 0.1;
  snprintf(m.unit, sizeof m.unit, "micron");
  cr_assert_eq(tiff_write_meta(in, &one, 0, &m, err, sizeof err), QS_OK);
  qs_image_free(&one);
  r = qs("stream", in, "-o", o2, "--window", "2", "--magnification", "5",
         "--impl", "serial", "--idle", "0.3", "--poll-ms", "50", NULL);
  expect_status(r, 0, "stream from a finished file");
  cr_assert_not_null(strstr(r->err, "waiting for more frames"), "%s", r->err);
  cr_assert_eq(tiff_info_of(o2, &info, err, sizeof err), QS_OK, "%s", err);
  cr_assert_float_eq(info.meta.pixel_x, 0.02, 1e-9);
  cr_assert_str_eq(info.meta.unit, "micron");
}

/* One name per store command (db rows is db list, as Python's db_rows is
 * db_list), global options before or after the command, plural-correct
 * usage messages. */
Test(cli, store_names_and_global_options_either_side) {
  const char *in = simulated("g.tif", "2", "8x8", "1"),
             *out = path_in("g-out.tif"), *db = path_in("other.db");
  expect_status(qs("--db", db, "-q", "run", "roberts_cross", in, "-o", out,
                   "-o", path_in("g2.tif"), "--impl", "serial", NULL),
                0, "globals first");
  cJSON *a = json_of(qs("db", "list", "--json", "--db", db, NULL)),
        *b = json_of(qs("--db", db, "db", "rows", "--json", NULL));
  cr_assert_eq(cJSON_GetArraySize(a), 1, "the run went to --db");
  cr_assert_eq(cJSON_GetArraySize(b), 1);
  cJSON_Delete(a);
  cJSON_Delete(b);
  result *r = qs("db", "lst", NULL);
  expect_status(r, 2, "db lst");
  cr_assert_not_null(strstr(r->err, "did you mean 'list'"), "%s", r->err);
  r = qs("esrrf", in, NULL);
  expect_status(r, 2, "no output");
  cr_assert_not_null(strstr(r->err, "give -o FILE once"), "%s", r->err);
  r = qs("run", "roberts_cross", in, NULL);
  cr_assert_not_null(strstr(r->err, "give -o FILE 1 to 2 times"), "%s",
                     r->err);
}

/* bench --budget: a step predicted past what is left of the budget is
 * skipped and said so, never begun (serial eSRRF over 100 frames of
 * 64 x 64 at M5, six runs, takes minutes; the budget is 20 s). */
Test(cli, bench_skips_a_step_that_cannot_fit_the_budget) {
  need_esrrf();
  const char *js = path_in("b.json");
  time_t t0 = time(NULL);
  result *r = qs("bench", "--method", "esrrf", "--sizes", "2x8x8,100x64x64",
                 "--impl", "serial", "--budget", "20", "--json", js, NULL);
  expect_status(r, 0, "bench");
  cr_assert_not_null(strstr(r->err, "skipped esrrf 100x64x64"), "%s", r->err);
  cr_assert_not_null(strstr(r->err, "predicted"), "%s", r->err);
  char text[65536];
  slurp_into(js, text, sizeof text);
  cJSON *j = cJSON_Parse(text);
  cr_assert_not_null(j, "%s", text);
  cr_assert_eq(cJSON_GetObjectItem(j, "steps_done")->valuedouble, 1);
  cr_assert_eq(cJSON_GetObjectItem(j, "steps_skipped")->valuedouble, 1);
  cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "stopped_by_budget")));
  /* termination, not speed: nothing like the minutes the step needs */
  cr_assert_lt(cJSON_GetObjectItem(j, "seconds")->valuedouble, 20);
  cr_assert_lt(difftime(time(NULL), t0), 60);
  cJSON_Delete(j);
}

/* Runs the CLI with argv, stderr a terminal (a pty), sends it SIGINT
 * after `delay` seconds, and waits: *st its wait status, text what it
 * wrote on the terminal; returns the seconds from the signal to its end. */
static double interrupted_on_a_terminal(char **argv, double delay, int *st,
                                        char *text, size_t len) {
  int master = posix_openpt(O_RDWR | O_NOCTTY);
  cr_assert_geq(master, 0);
  cr_assert_eq(grantpt(master), 0);
  cr_assert_eq(unlockpt(master), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, ptsname(master), O_RDWR, 0);
  pid_t pid;
  cr_assert_eq(posix_spawn(&pid, QS_CLI, &fa, NULL, argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  struct timespec wait = {(time_t)delay,
                          (long)((delay - (double)(time_t)delay) * 1e9)};
  nanosleep(&wait, NULL);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cr_assert_eq(kill(pid, SIGINT), 0);
  cr_assert_eq(waitpid(pid, st, 0), pid);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  size_t n = 0;
  fcntl(master, F_SETFL, O_NONBLOCK);
  for (ssize_t k;
       n < len - 1 && (k = read(master, text + n, len - 1 - n)) > 0;)
    n += (size_t)k;
  text[n] = 0;
  close(master);
  return (double)(t1.tv_sec - t0.tv_sec) +
         1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
}

/* Runs the CLI with argv on a terminal and presses Ctrl-C after `delay`
 * seconds: it must exit (not be killed by the signal) with `status`,
 * having written `says`, within 10 s of the signal (termination, not
 * speed: long before the call's end); returns what it wrote there. */
static const char *ctrl_c_on_a_terminal(char **argv, double delay, int status,
                                        const char *says) {
  int st;
  static char text[65536];
  double dt = interrupted_on_a_terminal(argv, delay, &st, text, sizeof text);
  cr_assert(WIFEXITED(st), "killed by the signal instead of stopping");
  cr_assert_eq(WEXITSTATUS(st), status, "%s", text);
  cr_assert_not_null(strstr(text, says), "%s", text);
  cr_assert_lt(dt, 10.0, "%.1f s after Ctrl-C", dt);
  return text;
}

/* A long call shows its progress on a terminal (stderr a pty here) and
 * Ctrl-C cancels it at once: exit 130, nothing written. */
Test(cli, progress_on_a_terminal_and_ctrl_c_cancels, .timeout = 120) {
  need_esrrf();
  /* serial eSRRF at M5: a third of a second or more per 64 x 64 frame */
  const char *in = simulated("long.tif", "60", "64x64", "1"),
             *out = path_in("long-out.tif");
  char *argv[] = {QS_CLI,      "esrrf",  (char *)in, "-o",
                  (char *)out, "--impl", "serial",   NULL};
  const char *text =
      ctrl_c_on_a_terminal(argv, 2.5, 130, "cancelled (Ctrl-C)");
  cr_assert_not_null(strstr(text, "esrrf: "), "%s", text);
  cr_assert_not_null(strstr(text, "/60)"), "a progress line: %s", text);
  cr_assert(!file_exists(out));
  /* not on a terminal, or with -q / --json: no progress line */
  result *r = qs("esrrf", in, "-o", out, "--impl", "serial", "--frames",
                 "0:4", NULL);
  expect_status(r, 0, "esrrf");
  cr_assert_null(strstr(r->err, "\r"), "%s", r->err);
}

/* `quicksilver bench`: the step under way shows its runs, and Ctrl-C
 * cancels it (not waiting for its end) and ends the sweep, keeping the
 * steps before it. */
Test(cli, bench_ctrl_c_cancels_the_step_under_way, .timeout = 120) {
  need_esrrf();
  const char *js = path_in("bench-int.json");
  /* serial eSRRF at M5 on 60 x 64 x 64: many seconds per run */
  char *argv[] = {QS_CLI,      "bench",
                  "--method",  "esrrf",
                  "--sizes",   "2x16x16,60x64x64",
                  "--params",  "magnification=5",
                  "--impl",    "serial",
                  "--warmup",  "0",
                  "--repeats", "3",
                  "--json",    (char *)js,
                  NULL};
  const char *text =
      ctrl_c_on_a_terminal(argv, 3.0, 0, "interrupted after 1 of 2 steps");
  cr_assert_not_null(strstr(text, "2/2 esrrf 60x64x64"), "%s", text);
  char doc[65536];
  slurp_into(js, doc, sizeof doc);
  cJSON *j = cJSON_Parse(doc);
  cr_assert_not_null(j, "%s", doc);
  cr_assert_eq(cJSON_GetObjectItem(j, "steps_done")->valuedouble, 1);
  cJSON_Delete(j);
}

/* `quicksilver sweep`: a progress line in frames x radii on a terminal,
 * and Ctrl-C cancels the sweep (not waiting for its end): exit 130,
 * nothing written, the --out-dir it made removed again. */
Test(cli, sweep_ctrl_c_cancels_and_writes_nothing, .timeout = 120) {
  need_esrrf();
  const char *in = simulated("sw-long.tif", "60", "64x64", "1"),
             *csv = path_in("sw-long.csv"), *pts = path_in("sw-long-dir");
  /* serial at M5, five radii: tens of seconds */
  char *argv[] = {QS_CLI,   "sweep",         (char *)in,   "--radius",
                  "0.5:2.5:0.5", "--sensitivity", "1,2",   "--impl",
                  "serial", "--csv",         (char *)csv, "--out-dir",
                  (char *)pts, NULL};
  const char *text =
      ctrl_c_on_a_terminal(argv, 2.5, 130, "sweep: cancelled (Ctrl-C)");
  cr_assert_not_null(strstr(text, "sweep (frames x radii): "), "%s", text);
  cr_assert(!file_exists(csv));
  cr_assert(!file_exists(pts), "the directory made for it is left");
}

/* `quicksilver stream`: Ctrl-C ends the input as its end would; the
 * results so far are completed and written. */
Test(cli, stream_ctrl_c_ends_the_input, .timeout = 120) {
  need_esrrf();
  const char *in = simulated("st-long.tif", "60", "64x64", "1"),
             *out = path_in("st-long-out.tif");
  /* serial at M5, timepoints of 2 frames: a result every second or so */
  char *argv[] = {QS_CLI,      "stream",   (char *)in, "-o",
                  (char *)out, "--window", "2",        "--magnification",
                  "5",         "--impl",   "serial",   "--idle",
                  "0",         NULL};
  ctrl_c_on_a_terminal(argv, 4.0, 0, "input ended by Ctrl-C after");
  qs_image got;
  char err[512];
  cr_assert_eq(tiff_read(out, &got, err, sizeof err), QS_OK, "%s", err);
  cr_assert(got.frames >= 1 && got.frames < 30, "%zu results", got.frames);
  qs_image_free(&got);
}

/* ------------------------------------- hardening, second pass: outputs */

/* With OpenCL loaded (PoCL's LLVM holds SIGINT, SIGTERM and SIGHUP before
 * any output is opened), a signal in the middle of a write still removes
 * the temporary and the lock, and the process still dies of it. */
Test(cli, signal_during_write_with_opencl_loaded_removes_the_temporary) {
  const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
  unsetenv("QUICKSILVER_NO_OPENCL");
  signal_each(sigs, 3);
  setenv("QUICKSILVER_NO_OPENCL", "1", 1);
}

/* A stack for the stream tests: 10 frames of 16 x 16. */
static const char *stream_input(const char *leaf) {
  const char *in = path_in(leaf);
  expect_status(qs("simulate", "-o", in, "--frames", "10", "--size", "16x16",
                   "--seed", "3", "-q", NULL),
                0, "simulate");
  return in;
}

/* --out-dir's numbered files are outputs: the input (or -o) named like a
 * result in that directory is refused before any work, and left as it
 * was. */
Test(cli, stream_never_writes_over_its_input) {
  if (qs("methods", "esrrf", NULL)->status != 0)
    cr_skip_test("no esrrf method in this build");
  const char *in = stream_input("esrrf_000000.tif");
  static unsigned char before[1 << 16], after[1 << 16];
  size_t n = file_bytes(in, before, sizeof before);
  char dotdir[512];
  snprintf(dotdir, sizeof dotdir, "%s/.", dir);
  const char *dirs[] = {dir, dotdir};
  for (size_t i = 0; i < 2; i++) {
    result *r = qs("stream", in, "--out-dir", dirs[i], "--window", "5",
                   "--magnification", "2", "--idle", "0", NULL);
    expect_status(r, 2, dirs[i]);
    cr_assert_not_null(strstr(r->err, "is the input"), "%s", r->err);
    cr_assert_eq(file_bytes(in, after, sizeof after), n);
    cr_assert_eq(memcmp(before, after, n), 0, "the input was modified");
  }
  /* -o named like the first result of --out-dir */
  const char *other = stream_input("in.tif");
  result *r = qs("stream", other, "-o", path_in("esrrf_000001.tif"),
                 "--out-dir", dir, "--window", "5", "--magnification", "2",
                 "--idle", "0", NULL);
  expect_status(r, 2, "-o inside --out-dir under a result's name");
  cr_assert_not_null(strstr(r->err, "same file"), "%s", r->err);
  cr_assert(!file_exists(path_in("esrrf_000001.tif")));
  cr_assert(!has_tmp() && !has_lock(), "a temporary or lock was left");
}

/* Two streams on one -o: the second is refused before it reads a frame,
 * and the first one's stack holds every result. */
Test(cli, second_stream_on_the_same_output_is_refused) {
  if (qs("methods", "esrrf", NULL)->status != 0)
    cr_skip_test("no esrrf method in this build");
  const char *in = stream_input("in.tif"), *out = path_in("o.tif");
  pid_t first = qs_start("stream", in, "-o", out, "--window", "1",
                         "--magnification", "2", "--idle", "3", "-q", NULL);
  for (int i = 0; i < 3000 && !has_lock(); i++)
    nanosleep(&(struct timespec){0, 10000000}, NULL);
  cr_assert(has_lock(), "the first stream holds no lock on its output");
  result *r = qs("stream", in, "-o", out, "--window", "1", "--magnification",
                 "2", "--idle", "0", NULL);
  expect_status(r, 1, "a second stream on the same -o");
  cr_assert_not_null(strstr(r->err, "another process"), "%s", r->err);
  /* and so is any other writer of it */
  r = qs("run", "shift_magnify", in, "-o", out, NULL);
  expect_status(r, 1, "run -o on a streamed output");
  int st = wait_bounded(first, 120, "the first stream");
  cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
  tiff_info info;
  char err[512];
  cr_assert_eq(tiff_info_of(out, &info, err, sizeof err), QS_OK, "%s", err);
  cr_assert_eq(info.pages, 10, "10 results of windows of 1");
  cr_assert(!has_lock(), "the lock outlived the stream");
}

/* Numbers are read strictly everywhere: a trailing word, a sign, "nan"
 * are refused with the option named; an oversized frame says so. */
Test(cli, numbers_are_parsed_strictly) {
  if (qs("methods", "esrrf", NULL)->status != 0)
    cr_skip_test("no esrrf method in this build");
  const char *in = stream_input("in.tif"), *out = path_in("o.tif");
  static const char *const sizes[] = {"16x16junk", "16x", "x16", "-1x16",
                                      " 16x16", "16x+16", "0x16"};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    result *r = qs("stream", "-", "-o", out, "--size", sizes[i], NULL);
    expect_status(r, 2, sizes[i]);
    cr_assert_not_null(strstr(r->err, "--size"), "%s: %s", sizes[i], r->err);
  }
  static const char *const idles[] = {"abc", "5s", "nan", "inf", "-1", ""};
  for (size_t i = 0; i < sizeof idles / sizeof *idles; i++) {
    result *r = qs("stream", in, "-o", out, "--idle", idles[i], NULL);
    expect_status(r, 2, idles[i]);
    cr_assert_not_null(strstr(r->err, "--idle"), "%s: %s", idles[i], r->err);
  }
  result *r = qs("stream", "-", "-o", out, "--size", "100000x100000",
                 "--dtype", "float32", NULL);
  cr_assert_neq(r->status, 0);
  cr_assert_null(strstr(r->err, "0 x 0"), "%s", r->err);
  cr_assert_not_null(strstr(r->err, "100000 x 100000"), "%s", r->err);
  r = qs("stream", "-", "-o", out, "--size", "5000000000x5000000000", NULL);
  expect_status(r, 2, "a frame past size_t");
  cr_assert_not_null(strstr(r->err, "too large"), "%s", r->err);
  /* the other commands that read numbers */
  r = qs("simulate", "-o", out, "--size", "16x16junk", NULL);
  expect_status(r, 2, "simulate --size 16x16junk");
  r = qs("bench", "--method", "roberts_cross", "--sizes", "1x8x8junk", NULL);
  expect_status(r, 2, "bench --sizes 1x8x8junk");
  r = qs("diff", in, in, "--tolerance", "nan", NULL);
  expect_status(r, 2, "diff --tolerance nan");
  r = qs("db", "prune", "--older-than", "1e999", NULL);
  expect_status(r, 2, "db prune --older-than 1e999");
  cr_assert(!file_exists(out));
}

/* db export never writes over the store it exports (nor a FIFO). */
Test(cli, db_export_onto_the_store_is_refused) {
  const char *in = small_input();
  expect_status(qs("run", "shift_magnify", in, "-o", path_in("o.tif"), "-q",
                   NULL),
                0, "run");
  const char *db = getenv("QUICKSILVER_DB");
  struct stat before, after;
  cr_assert_eq(stat(db, &before), 0);
  const char *sym = path_in("db.link");
  cr_assert_eq(symlink(db, sym), 0);
  const char *targets[] = {db, sym};
  for (size_t i = 0; i < 2; i++) {
    result *r = qs("db", "export", targets[i], NULL);
    expect_status(r, 2, targets[i]);
    cr_assert_not_null(strstr(r->err, "store"), "%s", r->err);
  }
  cr_assert_eq(stat(db, &after), 0);
  cr_assert_eq(before.st_ino, after.st_ino, "the store was replaced");
  const char *fifo = path_in("fifo");
  cr_assert_eq(mkfifo(fifo, 0644), 0);
  result *r = qs("db", "export", fifo, NULL);
  expect_status(r, 2, "db export FIFO");
  cr_assert_not_null(strstr(r->err, "FIFO"), "%s", r->err);
}
