/* test_db_best.c — the keys calibration records on slices of a call's
 * input are marked as such in the store (qs_db_key_is_slice), and
 * `quicksilver db best` lists the caller's keys only, saying how many slice
 * keys it left out, unless --all. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "qs_test.h"
#include "quicksilver.h"

TestSuite(db_best, .fini = qs_leak_check);

Test(db_best, slice_mark) {
  cr_assert_eq(qs_db_key_is_slice(NULL), 0);
  cr_assert_eq(qs_db_key_is_slice(""), 0);
  cr_assert_eq(qs_db_key_is_slice("#slice"), 0);
  cr_assert_eq(qs_db_key_is_slice(")#slice"), 0);
  cr_assert_eq(qs_db_key_is_slice("m(1x2x3;a=1)"), 0);
  cr_assert_eq(qs_db_key_is_slice("m(1x2x3;a=1)#slice"), 1);
  cr_assert_eq(qs_db_key_is_slice("m(1x2x3;a=1)#slicex"), 0);
  cr_assert_eq(qs_db_key_is_slice("m(1x2x3;a=1)#slice)"), 0);
}

typedef struct keys {
  size_t caller, slices, other;
  char caller_key[4096];
} keys;

static int count_best(void *ctx, const char *method, const char *key,
                      const qs_run_report *r) {
  keys *k = ctx;
  cr_assert_str_eq(method, "shift_magnify");
  cr_assert_neq(r->impl[0], '\0', "a choice for %s", key);
  if (qs_db_key_is_slice(key)) {
    k->slices++;
    /* the same parameters as the call, on one frame of it */
    cr_assert_not_null(strstr(key, "shift_magnify(1x"), "%s", key);
    cr_assert_not_null(strstr(key, ";magnification_row=2;"), "%s", key);
  } else if (!strcmp(key, k->caller_key)) {
    k->caller++;
  } else {
    k->other++;
  }
  return 0;
}

/* One cold call (calibration on) into a store at db; returns its key. */
static void cold_call(const char *db, char *key, size_t len) {
  qs_engine_options o = {.db_path = db, .no_opencl = 1};
  qs_engine *e = NULL;
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK, "%s",
               e ? qs_engine_error(e) : "");
  qs_image in;
  cr_assert_eq(qs_image_alloc(&in, 3, 96, 80), QS_OK);
  for (size_t i = 0; i < 3 * 96 * 80; i++)
    in.data[i] = (float)(i % 97);
  qs_run_request rq = {.inputs = &in, .n_inputs = 1};
  qs_image out;
  qs_run_report rep;
  cr_assert_eq(qs_method_run(e, "shift_magnify", &rq, &out, 1, &rep), QS_OK,
               "%s", qs_engine_error(e));
  cr_assert_str_eq(rep.reason, "calibration");
  snprintf(key, len,
           "shift_magnify(3x96x80;shift_row=0;shift_col=0;"
           "magnification_row=2;magnification_col=2)");
  qs_image_free(&out);
  qs_image_free(&in);

  /* the engine's own listing: the caller's key once, slices marked */
  keys k = {0};
  snprintf(k.caller_key, sizeof k.caller_key, "%s", key);
  cr_assert_eq(qs_engine_db_best(e, NULL, count_best, &k), QS_OK, "%s",
               qs_engine_error(e));
  cr_assert_eq(k.caller, 1);
  cr_assert_geq(k.slices, 1);
  cr_assert_eq(k.other, 0);
  qs_engine_close(e);
}

/* Runs the CLI with args through the shell; stdout and stderr into files
 * under dir, their text into out/err. Returns the exit status. */
static int cli(const char *dir, const char *args, char *out, size_t out_len,
               char *err, size_t err_len) {
  char cmd[2048], po[512], pe[512];
  snprintf(po, sizeof po, "%s/out.txt", dir);
  snprintf(pe, sizeof pe, "%s/err.txt", dir);
  snprintf(cmd, sizeof cmd,
           "'%s/tools/quicksilver' --db '%s/t.db' %s >'%s' 2>'%s'",
           QS_BUILD_ROOT, dir, args, po, pe);
  int rc = system(cmd);
  const char *paths[2] = {po, pe};
  char *bufs[2] = {out, err};
  size_t lens[2] = {out_len, err_len};
  for (int i = 0; i < 2; i++) {
    FILE *f = fopen(paths[i], "r");
    cr_assert_not_null(f);
    size_t n = fread(bufs[i], 1, lens[i] - 1, f);
    bufs[i][n] = '\0';
    fclose(f);
  }
  return rc;
}

static size_t count_of(const char *hay, const char *needle) {
  size_t n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
    n++;
  return n;
}

Test(db_best, cli_hides_slice_keys_unless_all) {
  char cli_path[512];
  snprintf(cli_path, sizeof cli_path, "%s/tools/quicksilver", QS_BUILD_ROOT);
  if (access(cli_path, X_OK)) cr_skip_test("no CLI built");
  char dir[] = "/tmp/qs_db_best_XXXXXX";
  cr_assert_not_null(mkdtemp(dir));
  char db[512], key[4096];
  snprintf(db, sizeof db, "%s/t.db", dir);
  cold_call(db, key, sizeof key);

  static char out[1 << 16], err[4096];
  cr_assert_eq(cli(dir, "db best", out, sizeof out, err, sizeof err), 0, "%s",
               err);
  cr_assert_eq(count_of(out, key), 1, "%s", out);
  cr_assert_eq(count_of(out, "#slice"), 0, "%s", out);
  size_t hidden = 0;
  cr_assert_not_null(strstr(err, "calibration-slice key"), "%s", err);
  cr_assert_eq(sscanf(strstr(err, "db best: "), "db best: %zu", &hidden), 1);
  cr_assert_geq(hidden, 1);

  cr_assert_eq(cli(dir, "db best --all", out, sizeof out, err, sizeof err), 0,
               "%s", err);
  cr_assert_eq(count_of(out, key), 1, "%s", out);
  cr_assert_eq(count_of(out, ")#slice\n"), hidden, "%s", out);
  cr_assert_eq(err[0], '\0', "%s", err);

  cr_assert_eq(cli(dir, "--json db best", out, sizeof out, err, sizeof err), 0,
               "%s", err);
  cr_assert_eq(count_of(out, "\"slice\":\tfalse"), 1, "%s", out);
  cr_assert_eq(count_of(out, "\"slice\":\ttrue"), 0, "%s", out);

  char rm[600];
  snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
  cr_assert_eq(system(rm), 0);
}
