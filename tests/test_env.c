/* test_env.c — environment knobs: valid, clamped and invalid values, and
 * their effect on qs_engine_open. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "env.h"
#include "internal.h"
#include "qs_test.h"
#include "quicksilver.h"

TestSuite(env, .fini = qs_leak_check);

Test(env, int_valid_clamped_invalid) {
  char err[256] = "";
  long v = 42;
  cr_assert_eq(env_int("X", NULL, 1, 8, &v, err, sizeof err), QS_OK);
  cr_assert_eq(v, 42); /* unset leaves the default */
  cr_assert_eq(env_int("X", "", 1, 8, &v, err, sizeof err), QS_OK);
  cr_assert_eq(v, 42);
  cr_assert_eq(env_int("X", "4", 1, 8, &v, err, sizeof err), QS_OK);
  cr_assert_eq(v, 4);
  cr_assert_eq(env_int("X", "100", 1, 8, &v, err, sizeof err), QS_OK);
  cr_assert_eq(v, 8);
  cr_assert_eq(env_int("X", "-3", 1, 8, &v, err, sizeof err), QS_OK);
  cr_assert_eq(v, 1);
  cr_assert_eq(env_int("X", "3x", 1, 8, &v, err, sizeof err), QS_EENV);
  cr_assert_not_null(strstr(err, "X=\"3x\""));
  cr_assert_eq(v, 1);
  cr_assert_eq(env_int("X", "abc", 1, 8, &v, err, sizeof err), QS_EENV);
  cr_assert_eq(env_int("X", "99999999999999999999999", 1, 8, &v, err,
                       sizeof err),
               QS_EENV);
}

Test(env, bool_values) {
  char err[256];
  int b = 7;
  cr_assert_eq(env_bool("B", NULL, &b, err, sizeof err), QS_OK);
  cr_assert_eq(b, 7);
  cr_assert_eq(env_bool("B", "TRUE", &b, err, sizeof err), QS_OK);
  cr_assert_eq(b, 1);
  cr_assert_eq(env_bool("B", "off", &b, err, sizeof err), QS_OK);
  cr_assert_eq(b, 0);
  cr_assert_eq(env_bool("B", "maybe", &b, err, sizeof err), QS_EENV);
  cr_assert_not_null(strstr(err, "B=\"maybe\""));
}

Test(env, engine_reads_threads) {
  qs_engine *e;
  setenv("QUICKSILVER_THREADS", "3", 1);
  cr_assert_eq(qs_engine_open(&e, NULL), QS_OK, "%s", qs_engine_error(e));
  cr_assert_eq(qs_engine_threads(e), 3);
  qs_engine_close(e);
  setenv("QUICKSILVER_THREADS", "100000", 1);
  cr_assert_eq(qs_engine_open(&e, NULL), QS_OK);
  cr_assert_eq(qs_engine_threads(e), QS_MAX_THREADS);
  qs_engine_close(e);
  /* An explicit option wins over the environment. */
  qs_engine_options o = {.threads = 2};
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  cr_assert_eq(qs_engine_threads(e), 2);
  qs_engine_close(e);
}

Test(env, engine_rejects_garbage) {
  qs_engine *e;
  setenv("QUICKSILVER_THREADS", "lots", 1);
  cr_assert_eq(qs_engine_open(&e, NULL), QS_EENV);
  cr_assert_not_null(e);
  cr_assert_not_null(strstr(qs_engine_error(e), "QUICKSILVER_THREADS"));
  qs_engine_close(e);
  unsetenv("QUICKSILVER_THREADS");
  setenv("QUICKSILVER_NO_OPENCL", "perhaps", 1);
  cr_assert_eq(qs_engine_open(&e, NULL), QS_EENV);
  cr_assert_not_null(strstr(qs_engine_error(e), "QUICKSILVER_NO_OPENCL"));
  qs_engine_close(e);
}

/* The device buffers kept for reuse: the option's MiB (negative: none),
 * else QUICKSILVER_DEVICE_CACHE_MB (0: none), else the default (-1: a
 * quarter of each device's memory); garbage is refused by name. */
Test(env, engine_reads_the_device_cache_bound) {
  qs_engine *e;
  qs_engine_options o = {.db_path = ":memory:", .no_opencl = 1};
  unsetenv("QUICKSILVER_DEVICE_CACHE_MB");
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  cr_expect_eq(e->device_keep, -1);
  qs_engine_close(e);
  setenv("QUICKSILVER_DEVICE_CACHE_MB", "16", 1);
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  cr_expect_eq(e->device_keep, 16 << 20);
  qs_engine_close(e);
  setenv("QUICKSILVER_DEVICE_CACHE_MB", "0", 1);
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  cr_expect_eq(e->device_keep, 0);
  qs_engine_close(e);
  o.device_cache_mb = 64; /* the option wins */
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  cr_expect_eq(e->device_keep, (int64_t)64 << 20);
  qs_engine_close(e);
  o.device_cache_mb = -1;
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  cr_expect_eq(e->device_keep, 0);
  qs_engine_close(e);
  o.device_cache_mb = 0;
  setenv("QUICKSILVER_DEVICE_CACHE_MB", "lots", 1);
  cr_assert_eq(qs_engine_open(&e, &o), QS_EENV);
  cr_assert_not_null(e);
  cr_expect_not_null(
      strstr(qs_engine_error(e), "QUICKSILVER_DEVICE_CACHE_MB"));
  qs_engine_close(e);
  unsetenv("QUICKSILVER_DEVICE_CACHE_MB");
}

/* Stores in a directory of this run's own (a fixed path in /tmp was
 * shared by every build on the machine: one with a newer store schema
 * migrated it, and an older build's run then failed to open it). */
Test(env, engine_db_path_sources) {
  char dir[] = "/tmp/qs-env-XXXXXX", db[64], xdg[64], want[96];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(db, sizeof db, "%s/env-test.db", dir);
  snprintf(xdg, sizeof xdg, "%s/xdg", dir);
  snprintf(want, sizeof want, "%s/quicksilver/timings.db", xdg);
  qs_engine *e;
  setenv("QUICKSILVER_DB", db, 1);
  cr_assert_eq(qs_engine_open(&e, NULL), QS_OK, "%s", qs_engine_error(e));
  cr_assert_str_eq(qs_engine_db_path(e), db);
  qs_engine_close(e);
  unsetenv("QUICKSILVER_DB");
  setenv("XDG_CACHE_HOME", xdg, 1);
  cr_assert_eq(qs_engine_open(&e, NULL), QS_OK, "%s", qs_engine_error(e));
  cr_assert_str_eq(qs_engine_db_path(e), want);
  qs_engine_close(e);
  unsetenv("XDG_CACHE_HOME");
  qs_engine_options o = {.db_path = ":memory:"};
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  cr_assert_str_eq(qs_engine_db_path(e), ":memory:");
  qs_engine_close(e);
  /* the two stores were made where they were said to be; then the
   * directories go, with what OpenCL's runtimes keep under the cache home
   * (PoCL's pocl/, the engine's device list under quicksilver/kernels) */
  cr_assert_eq(access(db, F_OK), 0, "%s", db);
  cr_assert_eq(access(want, F_OK), 0, "%s", want);
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

/* The public rules a host program (the CLI, the MPI tool) takes instead of
 * its own: the cache path the engine's default store lives in, and the
 * core count behind threads 0. */
Test(env, cache_path_and_cores) {
  char buf[256], small[8];
  const char *home = getenv("HOME");
  char *saved = home ? strdup(home) : NULL;
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  cr_assert_eq(qs_engine_cache_path("timings-a.db", buf, sizeof buf), QS_OK);
  cr_assert_str_eq(buf, "/tmp/xdg/quicksilver/timings-a.db");
  cr_assert_eq(qs_engine_cache_path(NULL, buf, sizeof buf), QS_OK);
  cr_assert_str_eq(buf, "/tmp/xdg/quicksilver");
  cr_assert_eq(qs_engine_cache_path("timings.db", small, sizeof small),
               QS_EOVERFLOW);
  cr_assert_str_eq(small, "");
  cr_assert_eq(qs_engine_cache_path("timings.db", NULL, 16), QS_EINVAL);
  cr_assert_eq(qs_engine_cache_path("timings.db", NULL, 0), QS_EOVERFLOW);
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/h", 1);
  cr_assert_eq(qs_engine_cache_path("timings.db", buf, sizeof buf), QS_OK);
  cr_assert_str_eq(buf, "/home/h/.cache/quicksilver/timings.db");
  unsetenv("HOME");
  cr_assert_eq(qs_engine_cache_path("timings.db", buf, sizeof buf),
               QS_EUNAVAIL);
  cr_assert_str_eq(buf, "");
  if (saved) setenv("HOME", saved, 1);
  free(saved);

  int cores = qs_engine_cores();
  cr_assert(cores >= 1 && cores <= QS_MAX_THREADS);
  unsetenv("QUICKSILVER_THREADS");
  qs_engine *e;
  qs_engine_options o = {.db_path = ":memory:", .no_opencl = 1};
  cr_assert_eq(qs_engine_open(&e, &o), QS_OK);
  cr_assert_eq(qs_engine_threads(e), cores);
  qs_engine_close(e);
}
