/* test_params.c — typed parameters: parsing by type, ranges with open and
 * closed bounds, NaN and infinity, enums by name, defaults and overrides,
 * unknown names with a suggestion, canonical formatting. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "methods/esrrf/esrrf.h"
#include "methods/methods.h"
#include "qs_test.h"
#include "quicksilver.h"

TestSuite(params, .fini = qs_leak_check);

static const qs_param_def defs[] = {
    {"magnification", QS_PARAM_INT, 5, 1, 64, 0, NULL, "zoom"},
    {"radius", QS_PARAM_FLOAT, 1.5, 0, 10, QS_PARAM_MIN_OPEN, NULL, "ring"},
    {"doIntensityWeighting", QS_PARAM_BOOL, 1, 0, 0, 0, NULL, "weights"},
    {"mode", QS_PARAM_ENUM, 0, 0, 0, 0, "avg|var|tac2|none", "reduction"},
    {"shift", QS_PARAM_FLOAT, 0, 0, 0, 0, NULL, "unbounded"},
    {"fraction", QS_PARAM_FLOAT, 0.5, 0, 1, QS_PARAM_MAX_OPEN, NULL,
     "half open"},
};
#define N_DEFS (sizeof defs / sizeof defs[0])

Test(params, parse_by_type) {
  char err[256];
  double v = -1;
  cr_assert_eq(qs_params_parse(&defs[0], "7", &v, err, sizeof err), QS_OK);
  cr_assert_eq(v, 7);
  cr_assert_eq(qs_params_parse(&defs[0], "7.5", &v, err, sizeof err),
               QS_EPARAM);
  cr_assert_not_null(strstr(err, "magnification"));
  cr_assert_eq(qs_params_parse(&defs[0], "", &v, err, sizeof err), QS_EPARAM);
  cr_assert_eq(qs_params_parse(&defs[0], "3x", &v, err, sizeof err),
               QS_EPARAM);
  cr_assert_eq(v, 7); /* untouched by failures */

  cr_assert_eq(qs_params_parse(&defs[1], "2.25", &v, err, sizeof err), QS_OK);
  cr_assert_eq(v, 2.25);
  cr_assert_eq(qs_params_parse(&defs[1], "nan", &v, err, sizeof err),
               QS_EPARAM);
  cr_assert_eq(qs_params_parse(&defs[4], "inf", &v, err, sizeof err),
               QS_EPARAM);
  cr_assert_eq(qs_params_parse(&defs[4], "-1e300", &v, err, sizeof err),
               QS_OK);
  cr_assert_eq(v, -1e300);

  const char *yes[] = {"true", "1", "YES", "on"}, *no[] = {"false", "0",
                                                           "No", "off"};
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(qs_params_parse(&defs[2], yes[i], &v, err, sizeof err),
                 QS_OK);
    cr_assert_eq(v, 1);
    cr_assert_eq(qs_params_parse(&defs[2], no[i], &v, err, sizeof err), QS_OK);
    cr_assert_eq(v, 0);
  }
  cr_assert_eq(qs_params_parse(&defs[2], "2", &v, err, sizeof err), QS_EPARAM);

  cr_assert_eq(qs_params_parse(&defs[3], "tac2", &v, err, sizeof err), QS_OK);
  cr_assert_eq(v, 2);
  cr_assert_eq(qs_params_parse(&defs[3], "none", &v, err, sizeof err), QS_OK);
  cr_assert_eq(v, 3);
  cr_assert_eq(qs_params_parse(&defs[3], "tac", &v, err, sizeof err),
               QS_EPARAM);
  cr_assert_not_null(strstr(err, "avg|var|tac2|none"));
}

Test(params, ranges_open_and_closed) {
  char err[256];
  cr_assert_eq(qs_params_check(&defs[0], 1, err, sizeof err), QS_OK);
  cr_assert_eq(qs_params_check(&defs[0], 64, err, sizeof err), QS_OK);
  cr_assert_eq(qs_params_check(&defs[0], 0, err, sizeof err), QS_EPARAM);
  cr_assert_not_null(strstr(err, "[1, 64]"), "%s", err);
  cr_assert_eq(qs_params_check(&defs[0], 65, err, sizeof err), QS_EPARAM);
  cr_assert_eq(qs_params_check(&defs[1], 0, err, sizeof err), QS_EPARAM);
  cr_assert_not_null(strstr(err, "(0, 10]"), "%s", err);
  cr_assert_eq(qs_params_check(&defs[1], 1e-9, err, sizeof err), QS_OK);
  cr_assert_eq(qs_params_check(&defs[1], 10, err, sizeof err), QS_OK);
  cr_assert_eq(qs_params_check(&defs[5], 1, err, sizeof err), QS_EPARAM);
  cr_assert_eq(qs_params_check(&defs[5], 0, err, sizeof err), QS_OK);
  cr_assert_eq(qs_params_check(&defs[4], -1e6, err, sizeof err), QS_OK);
  cr_assert_eq(qs_params_check(&defs[4], NAN, err, sizeof err), QS_EPARAM);
  cr_assert_eq(qs_params_check(&defs[3], 4, err, sizeof err), QS_EPARAM);
  cr_assert_eq(qs_params_check(&defs[3], -1, err, sizeof err), QS_EPARAM);
  cr_assert_eq(qs_params_check(&defs[3], 1.5, err, sizeof err), QS_EPARAM);
}

Test(params, resolve_defaults_overrides_errors) {
  char err[256];
  double v[N_DEFS];
  cr_assert_eq(qs_params_resolve(defs, N_DEFS, NULL, 0, v, err, sizeof err),
               QS_OK);
  for (size_t i = 0; i < N_DEFS; i++) cr_assert_eq(v[i], defs[i].def);

  qs_param p[] = {{"radius", 2, NULL},
                  {"mode", 0, "var"},
                  {"doIntensityWeighting", 0, "false"}};
  cr_assert_eq(qs_params_resolve(defs, N_DEFS, p, 3, v, err, sizeof err),
               QS_OK);
  cr_assert_eq(v[0], 5);
  cr_assert_eq(v[1], 2);
  cr_assert_eq(v[2], 0);
  cr_assert_eq(v[3], 1);

  qs_param typo[] = {{"magnificaton", 3, NULL}};
  cr_assert_eq(qs_params_resolve(defs, N_DEFS, typo, 1, v, err, sizeof err),
               QS_EPARAM);
  cr_assert_not_null(strstr(err, "\"magnificaton\""), "%s", err);
  cr_assert_not_null(strstr(err, "did you mean magnification"), "%s", err);
  qs_param far[] = {{"zzz", 3, NULL}};
  cr_assert_eq(qs_params_resolve(defs, N_DEFS, far, 1, v, err, sizeof err),
               QS_EPARAM);
  cr_assert_null(strstr(err, "did you mean"), "%s", err);
  qs_param twice[] = {{"radius", 2, NULL}, {"radius", 3, NULL}};
  cr_assert_eq(qs_params_resolve(defs, N_DEFS, twice, 2, v, err, sizeof err),
               QS_EPARAM);
  cr_assert_not_null(strstr(err, "twice"));
  qs_param bad[] = {{"magnification", 2.5, NULL}};
  cr_assert_eq(qs_params_resolve(defs, N_DEFS, bad, 1, v, err, sizeof err),
               QS_EPARAM);
  qs_param noname[] = {{NULL, 1, NULL}};
  cr_assert_eq(qs_params_resolve(defs, N_DEFS, noname, 1, v, err, sizeof err),
               QS_EPARAM);
}

Test(params, format_is_canonical_and_round_trips) {
  char buf[64], err[256];
  qs_params_format(&defs[0], 5, buf, sizeof buf);
  cr_assert_str_eq(buf, "5");
  qs_params_format(&defs[2], 1, buf, sizeof buf);
  cr_assert_str_eq(buf, "true");
  qs_params_format(&defs[3], 2, buf, sizeof buf);
  cr_assert_str_eq(buf, "tac2");
  qs_params_format(&defs[1], 0.1, buf, sizeof buf);
  double back;
  cr_assert_eq(qs_params_parse(&defs[1], buf, &back, err, sizeof err), QS_OK);
  cr_assert_eq(back, 0.1);
  for (size_t i = 0; i < N_DEFS; i++) {
    qs_params_format(&defs[i], defs[i].def, buf, sizeof buf);
    cr_assert_eq(qs_params_parse(&defs[i], buf, &back, err, sizeof err), QS_OK,
                 "%s", err);
    cr_assert_eq(back, defs[i].def);
  }
}

/* esrrf.h's P_ indices, by which esrrf and rgc read c->p, name the rows of
 * both methods' tables (rgc shares the first four). */
Test(params, esrrf_and_rgc_indices_name_their_rows) {
  static const struct {
    int index;
    const char *name;
  } want[] = {{P_MAG, "magnification"},
              {P_RADIUS, "radius"},
              {P_SENS, "sensitivity"},
              {P_IW, "intensity_weighting"},
              {P_FPT, "frames_per_timepoint"},
              {P_TEMPORAL, "temporal"},
              {P_MPC, "macro_pixel_correction"}};
  size_t n = sizeof want / sizeof want[0];
  cr_assert_eq(method_esrrf.n_params, n);
  for (size_t i = 0; i < n; i++) {
    cr_assert_str_eq(method_esrrf.params[want[i].index].name, want[i].name);
    if (want[i].index <= P_IW) {
      cr_assert_gt(method_rgc.n_params, (size_t)want[i].index);
      cr_assert_str_eq(method_rgc.params[want[i].index].name, want[i].name);
    }
  }
}

/* Numbers as written, nothing else: strtod and strtoll alone take leading
 * spaces and hexadecimal, so " 5" and "0x10" used to be accepted. */
Test(params, numbers_are_parsed_strictly) {
  char err[256];
  double v = -1;
  static const char *const bad_int[] = {" 5", "0x10", "5 ", "+ 5", "5\t",
                                        "\n5"};
  for (size_t i = 0; i < sizeof bad_int / sizeof *bad_int; i++) {
    cr_assert_eq(qs_params_parse(&defs[0], bad_int[i], &v, err, sizeof err),
                 QS_EPARAM, "\"%s\"", bad_int[i]);
    cr_assert_not_null(strstr(err, "magnification"), "%s", err);
  }
  static const char *const bad_float[] = {" 1.5", "0x1p1", "1.5 ", "infinity",
                                          "0X1"};
  for (size_t i = 0; i < sizeof bad_float / sizeof *bad_float; i++)
    cr_assert_eq(qs_params_parse(&defs[4], bad_float[i], &v, err, sizeof err),
                 QS_EPARAM, "\"%s\"", bad_float[i]);
  cr_assert_eq(v, -1, "untouched by failures");
  cr_assert_eq(qs_params_parse(&defs[0], "+5", &v, err, sizeof err), QS_OK);
  cr_assert_eq(v, 5);
  cr_assert_eq(qs_params_parse(&defs[4], "-.5e-1", &v, err, sizeof err),
               QS_OK);
  cr_assert_eq(v, -0.05);
}

/* Every entry with NULL where it takes a pointer: a status, never a
 * crash (params = NULL with n_params = 1 was read). */
Test(params, null_pointers_and_counts_without_arrays) {
  char err[256] = "";
  double v[N_DEFS];
  const qs_param one[] = {{"radius", 2, NULL}};
  cr_assert_eq(qs_params_resolve(defs, N_DEFS, NULL, 1, v, err, sizeof err),
               QS_EINVAL);
  cr_assert_not_null(strstr(err, "no array"), "%s", err);
  cr_assert_eq(qs_params_resolve(NULL, 3, one, 1, v, err, sizeof err),
               QS_EINVAL);
  cr_assert_eq(qs_params_resolve(defs, N_DEFS, one, 1, NULL, err, sizeof err),
               QS_EINVAL);
  cr_assert_eq(qs_params_resolve(defs, N_DEFS, NULL, 0, v, err, sizeof err),
               QS_OK, "no parameters given: the defaults");
  cr_assert_eq(v[0], 5);
  cr_assert_eq(qs_params_parse(NULL, "1", v, err, sizeof err), QS_EINVAL);
  cr_assert_eq(qs_params_parse(&defs[0], "1", NULL, err, sizeof err),
               QS_EINVAL);
  cr_assert_eq(qs_params_parse(&defs[0], NULL, v, err, sizeof err), QS_EPARAM);
  cr_assert_eq(qs_params_check(NULL, 1, err, sizeof err), QS_EINVAL);
  char buf[16] = "x";
  cr_assert_eq(qs_params_format(NULL, 1, buf, sizeof buf), 0);
  cr_assert_str_eq(buf, "");
  cr_assert_eq(qs_params_format(&defs[0], 1, NULL, 0), 0);
}
