/* test_agent.c — the selection policy as a pure function: fastest by the
 * fast-half mean, the crossover the linear model predicts, the static order,
 * delays that flag, explore with a fixed seed and clear. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "agent.h"
#include "qs_test.h"

TestSuite(agent, .fini = qs_leak_check);

Test(agent, picks_fastest_by_fast_half) {
  /* a: always 2.0; b: fast half 1.0 but slow outliers (mean 3.0) */
  double a[4] = {2, 2, 2, 2}, b[4] = {1, 5, 1, 5};
  agent_cand c[2] = {{.kind = IMPL_SERIAL, .walls = a, .n_walls = 4},
                     {.kind = IMPL_THREADED, .walls = b, .n_walls = 4}};
  uint64_t rng = 1;
  const char *why = NULL;
  double est[2];
  int src[2];
  cr_assert_eq(agent_choose(c, 2, 100, 0, &rng, &why, est, src), 1);
  cr_assert_str_eq(why, "history");
  cr_assert_eq(est[0], 2);
  cr_assert_eq(est[1], 1);
  cr_assert_eq(src[1], SRC_HISTORY);
  /* excluded ones are passed over */
  c[1].excluded = "failed";
  cr_assert_eq(agent_choose(c, 2, 100, 0, &rng, &why, NULL, NULL), 0);
  c[0].excluded = "mismatch";
  cr_assert_eq(agent_choose(c, 2, 100, 0, &rng, &why, NULL, NULL), -1);
}

Test(agent, fast_half_window) {
  /* odd count: the fastest floor(n/2); one value: itself */
  double x[5] = {5, 1, 4, 2, 3};
  cr_assert_float_eq(agent_fast_mean(x, 5), 1.5, 1e-15);
  cr_assert_float_eq(agent_fast_mean(x, 1), 5, 1e-15);
  /* only the newest AGENT_WINDOW count: old fast runs are forgotten */
  double y[AGENT_WINDOW + 10];
  for (size_t i = 0; i < 10; i++) y[i] = 0.001;
  for (size_t i = 10; i < AGENT_WINDOW + 10; i++) y[i] = 1 + (double)(i % 2);
  cr_assert_float_eq(agent_fast_mean(y, AGENT_WINDOW + 10), 1, 1e-15);
}

Test(agent, model_predicts_crossover) {
  /* fixed: 10 ms whatever the work; per_px: 1 us per unit of work */
  double w[3] = {1000, 10000, 100000};
  double fixed_t[3] = {0.010, 0.010, 0.010};
  double px_t[3] = {0.001, 0.010, 0.100};
  agent_cand c[2] = {
      {.kind = IMPL_OPENCL, .works = w, .times = fixed_t, .n_points = 3},
      {.kind = IMPL_SERIAL, .works = w, .times = px_t, .n_points = 3}};
  uint64_t rng = 7;
  const char *why;
  double est[2];
  int src[2];
  cr_assert_eq(agent_choose(c, 2, 2000, 0, &rng, &why, est, src), 1);
  cr_assert_str_eq(why, "model");
  cr_assert_float_eq(est[1], 0.002, 1e-12);
  cr_assert_float_eq(est[0], 0.010, 1e-12);
  cr_assert_eq(agent_choose(c, 2, 50000, 0, &rng, &why, est, src), 0);
  cr_assert_float_eq(est[1], 0.050, 1e-12);

  /* robust: one wild point does not move the fit */
  double w5[5] = {1, 2, 3, 4, 5}, t5[5] = {2, 3, 4, 100, 6}, a, b;
  cr_assert_eq(agent_fit(w5, t5, 5, &a, &b), 0);
  cr_assert_float_eq(b, 1, 1e-12);
  cr_assert_float_eq(a, 1, 1e-12);
  /* one point: proportional scaling */
  cr_assert_eq(agent_fit(w5 + 1, t5 + 1, 1, &a, &b), 0);
  cr_assert_eq(a, 0);
  cr_assert_float_eq(b, 1.5, 1e-12);
  cr_assert_eq(agent_fit(w5, t5, 0, &a, &b), -1);
  /* exact history wins over the model */
  double h[2] = {0.5, 0.5};
  c[0].walls = h;
  c[0].n_walls = 2;
  cr_assert_eq(agent_choose(c, 2, 2000, 0, &rng, &why, est, src), 1);
  cr_assert_eq(src[0], SRC_HISTORY);
}

Test(agent, static_order_and_cold) {
  agent_cand c[4] = {{.kind = IMPL_OPENCL},
                     {.kind = IMPL_THREADED},
                     {.kind = IMPL_SERIAL},
                     {.kind = IMPL_COMPOSITE}};
  uint64_t rng = 3;
  const char *why;
  cr_assert(agent_cold(&c[0]));
  cr_assert_eq(agent_choose(c, 4, 100, 1, &rng, &why, NULL, NULL), 2);
  cr_assert_str_eq(why, "static");
  cr_assert_eq(agent_choose(c, 4, 1e7, 1, &rng, &why, NULL, NULL), 0);
  c[0].excluded = "unavailable";
  cr_assert_eq(agent_static(c, 4, 1e7), 1);
  /* one known, the rest cold: static_cold decides */
  double t[1] = {0.5};
  c[3].walls = t;
  c[3].n_walls = 1;
  cr_assert_eq(agent_choose(c, 4, 1e7, 1, &rng, &why, NULL, NULL), 1);
  cr_assert_str_eq(why, "static");
  cr_assert_eq(agent_choose(c, 4, 1e7, 0, &rng, &why, NULL, NULL), 3);
  cr_assert_str_eq(why, "history");
}

Test(agent, delay_flags_explores_and_clears) {
  double w[30];
  for (int i = 0; i < 30; i++) w[i] = 1.0;
  int delayed = 0;
  double factor = 0, p = 0;
  /* fewer than AGENT_DELAY_MIN runs: never a delay */
  cr_assert_eq(agent_inform(w, 10, 9.0, &delayed, &factor, &p), 0);
  cr_assert_eq(delayed, 0);
  /* 20 steady runs then 3.0: delayed with factor 3; one delay and no
   * transition from a delay: p = (0 + 1) / (0 + 2) */
  cr_assert_eq(agent_inform(w, 20, 3.0, &delayed, &factor, &p), 1);
  cr_assert_eq(delayed, 1);
  cr_assert_float_eq(factor, 3, 1e-12);
  cr_assert_float_eq(p, 0.5, 1e-12);
  /* a second delay right after the first: p = (1 + 1) / (1 + 2) */
  w[20] = 3.0;
  cr_assert_eq(agent_inform(w, 21, 3.0, &delayed, &factor, &p), 1);
  cr_assert_float_eq(p, 2.0 / 3.0, 1e-12);

  /* b: 1.0 delayed (factor 3, p 0.5 -> expected 2.0); a: 1.2 steady. The
   * winner changes, so the pick is random with weights 1/2^2 : 1/1.2^2 */
  double ta[3] = {1.2, 1.2, 1.2}, tb[3] = {1, 1, 1};
  agent_cand c[2] = {
      {.kind = IMPL_SERIAL, .walls = ta, .n_walls = 3},
      {.kind = IMPL_THREADED, .walls = tb, .n_walls = 3, .delayed = 1,
       .factor = 3, .p = 0.5}};
  uint64_t rng = 12345;
  int picks[2] = {0, 0};
  const char *why;
  for (int i = 0; i < 4000; i++) {
    long k = agent_choose(c, 2, 10, 0, &rng, &why, NULL, NULL);
    cr_assert_str_eq(why, "exploration");
    picks[k]++;
  }
  double share_b = 0.25 / (0.25 + 1 / 1.44);
  cr_assert_float_eq(picks[1] / 4000.0, share_b, 0.03);
  /* the same seed gives the same sequence */
  uint64_t r1 = 99, r2 = 99;
  for (int i = 0; i < 50; i++)
    cr_assert_eq(agent_choose(c, 2, 10, 0, &r1, &why, NULL, NULL),
                 agent_choose(c, 2, 10, 0, &r2, &why, NULL, NULL));
  /* a delay that does not change the winner: no exploration */
  c[1].p = 0.01;
  cr_assert_eq(agent_choose(c, 2, 10, 0, &rng, &why, NULL, NULL), 1);
  cr_assert_str_eq(why, "history");

  /* a normal run clears the flag */
  cr_assert_eq(agent_inform(w, 21, 1.0, &delayed, &factor, &p), 0);
  cr_assert_eq(delayed, 0);
}

Test(agent, random_is_uniform_and_seeded) {
  uint64_t s = 5;
  double sum = 0;
  for (int i = 0; i < 10000; i++) {
    double r = agent_random(&s);
    cr_assert(r >= 0 && r < 1);
    sum += r;
  }
  cr_assert_float_eq(sum / 10000, 0.5, 0.02);
}

/* A candidate known only by its model, predicted within AGENT_VERIFY of
 * the best measured one, runs once on the key; then its own history
 * decides. Farther than that, the measured best stays. */
Test(agent, model_only_candidate_is_verified_once) {
  double a[3] = {1.0, 1.0, 1.0};
  agent_cand c[2] = {
      {.kind = IMPL_SERIAL, .walls = a, .n_walls = 3},
      {.kind = IMPL_THREADED, .n_points = 2, .fitted = 1, .fit_a = 0,
       .fit_b = 1.2e-6}};
  uint64_t rng = 1;
  const char *why = NULL;
  double est[2];
  int src[2];
  /* model 1.2 s at work 1e6 against 1.0 s measured: within 1.5x */
  cr_assert_eq(agent_choose(c, 2, 1e6, 0, &rng, &why, est, src), 1);
  cr_assert_str_eq(why, "verification");
  cr_assert_float_eq(est[1], 1.2, 1e-12);
  cr_assert_eq(src[1], SRC_MODEL);
  /* once measured (1.4 s, beyond AGENT_CLOSE), history against history:
   * the first stays */
  double b[1] = {1.4};
  c[1].walls = b;
  c[1].n_walls = 1;
  cr_assert_eq(agent_choose(c, 2, 1e6, 0, &rng, &why, NULL, NULL), 0);
  cr_assert_str_eq(why, "history");
  /* predicted at 1.6 s (beyond 1.5x): not worth a run */
  c[1].walls = NULL;
  c[1].n_walls = 0;
  c[1].fit_b = 1.6e-6;
  cr_assert_eq(agent_choose(c, 2, 1e6, 0, &rng, &why, NULL, NULL), 0);
  cr_assert_str_eq(why, "history");
  /* excluded candidates are never verified */
  c[1].fit_b = 1.1e-6;
  c[1].excluded = "failed";
  cr_assert_eq(agent_choose(c, 2, 1e6, 0, &rng, &why, NULL, NULL), 0);
  cr_assert_str_eq(why, "history");
}

Test(agent, close_candidates_earn_evidence_then_compare_fairly) {
  /* a: many runs, its fast half holding old fast ones (0.84); b: run once
   * at 0.9, within AGENT_CLOSE; c: once at 2.0, not close */
  double a[10] = {0.8, 0.8, 0.8, 0.8, 1, 1, 1, 1, 1, 1};
  double b[3] = {0.9, 0.9, 0.9}, cw[1] = {2.0};
  agent_cand c[3] = {{.kind = IMPL_THREADED, .walls = a, .n_walls = 10},
                     {.kind = IMPL_THREADED, .walls = b, .n_walls = 1},
                     {.kind = IMPL_SERIAL, .walls = cw, .n_walls = 1}};
  uint64_t rng = 5;
  const char *why;
  double est[3];
  int src[3];
  /* b is short of evidence: run until it has AGENT_EVIDENCE runs */
  for (size_t n = 1; n < AGENT_EVIDENCE; n++) {
    c[1].n_walls = n;
    cr_assert_eq(agent_choose(c, 3, 100, 0, &rng, &why, est, src), 1);
    cr_assert_str_eq(why, "exploration");
  }
  /* by fast-half means a leads (0.84 against 0.9); on their newest 3 runs
   * each, b does (1.0 against 0.9) */
  c[1].n_walls = 3;
  cr_assert_float_eq(est[0], 0.84, 1e-12);
  int revisits = 0, b_wins = 0;
  for (int k = 0; k < 3200; k++) {
    long pick = agent_choose(c, 3, 100, 0, &rng, &why, NULL, NULL);
    cr_assert_neq(pick, 2, "c is not close: never run");
    if (!strcmp(why, "exploration")) {
      cr_assert_eq(pick, 1, "the revisit goes to the rival with fewer runs");
      revisits++;
    } else {
      cr_assert_str_eq(why, "history");
      b_wins += pick == 1;
    }
  }
  cr_assert_eq(b_wins, 3200 - revisits);
  /* about one call in AGENT_REVISIT (100 expected) */
  cr_assert(revisits > 60 && revisits < 140, "%d revisits", revisits);
  /* within AGENT_TIE on equal footing: a tie, won by the one with more
   * runs (a: 1.0 against b's 0.99) */
  for (int i = 0; i < 3; i++) b[i] = 0.99;
  int a_wins = 0, calls = 0;
  for (int k = 0; k < 200; k++) {
    long pick = agent_choose(c, 3, 100, 0, &rng, &why, NULL, NULL);
    if (strcmp(why, "history")) continue;
    calls++;
    a_wins += pick == 0;
  }
  cr_assert_eq(a_wins, calls);
  /* beyond AGENT_TIE (0.95 against 1.0): the faster */
  for (int i = 0; i < 3; i++) b[i] = 0.95;
  for (int k = 0; k < 200; k++) {
    long pick = agent_choose(c, 3, 100, 0, &rng, &why, NULL, NULL);
    if (!strcmp(why, "history")) cr_assert_eq(pick, 1);
  }
}

Test(agent, closeness_judges_the_favourite_by_as_many_runs) {
  /* a's fast half (0.84) holds old lucky runs; b, run once at 1.2, is
   * beyond 1.3x of that but within 1.3x of a's newest run (1.0): close,
   * so it earns more runs */
  double a[10] = {0.8, 0.8, 0.8, 0.8, 1, 1, 1, 1, 1, 1}, b[1] = {1.2};
  agent_cand c[2] = {{.kind = IMPL_THREADED, .walls = a, .n_walls = 10},
                     {.kind = IMPL_THREADED, .walls = b, .n_walls = 1}};
  uint64_t rng = 3;
  const char *why;
  cr_assert_eq(agent_choose(c, 2, 100, 0, &rng, &why, NULL, NULL), 1);
  cr_assert_str_eq(why, "exploration");
  /* at 1.4 it is not close: the favourite runs */
  b[0] = 1.4;
  cr_assert_eq(agent_choose(c, 2, 100, 0, &rng, &why, NULL, NULL), 0);
  cr_assert_str_eq(why, "history");
}

/* A small call (best under AGENT_SMALL_CALL, timed on the key) tries a
 * cold CPU candidate on the call itself: the static order (threaded before
 * a composite for large work; serial first for small work), the one
 * declared last among equals; never a cold OpenCL one. A larger call, or a
 * best known only by its model, passes cold candidates over as before. */
Test(agent, small_call_tries_cold_cpu_candidates) {
  double fast[1] = {20e-6};
  agent_cand c[5] = {{.kind = IMPL_SERIAL, .walls = fast, .n_walls = 1},
                     {.kind = IMPL_THREADED},
                     {.kind = IMPL_THREADED},
                     {.kind = IMPL_COMPOSITE},
                     {.kind = IMPL_OPENCL}};
  uint64_t rng = 3;
  const char *why = NULL;
  cr_assert_eq(agent_choose(c, 5, 1e6, 0, &rng, &why, NULL, NULL), 2);
  cr_assert_str_eq(why, "exploration");
  double t2[1] = {30e-6};
  c[2].walls = t2, c[2].n_walls = 1;
  cr_assert_eq(agent_choose(c, 5, 1e6, 0, &rng, &why, NULL, NULL), 1);
  double t1[1] = {25e-6};
  c[1].walls = t1, c[1].n_walls = 1;
  cr_assert_eq(agent_choose(c, 5, 1e6, 0, &rng, &why, NULL, NULL), 3);
  cr_assert_str_eq(why, "exploration");
  /* only OpenCL left cold: the history decides */
  double t3[1] = {90e-6};
  c[3].walls = t3, c[3].n_walls = 1;
  cr_assert_eq(agent_choose(c, 5, 1e6, 0, &rng, &why, NULL, NULL), 0);
  cr_assert_str_eq(why, "history");
  /* small work: a cold serial one goes before the threaded ones */
  agent_cand d[3] = {{.kind = IMPL_SERIAL},
                     {.kind = IMPL_THREADED, .walls = fast, .n_walls = 1},
                     {.kind = IMPL_THREADED}};
  cr_assert_eq(agent_choose(d, 3, 1000, 0, &rng, &why, NULL, NULL), 0);
  cr_assert_str_eq(why, "exploration");
  /* not small: cold ones are calibrated on slices, not tried here */
  double slow[1] = {2 * AGENT_SMALL_CALL};
  d[1].walls = slow;
  cr_assert_eq(agent_choose(d, 3, 1000, 0, &rng, &why, NULL, NULL), 1);
  cr_assert_str_eq(why, "history");
  /* a best known only by its model: it runs on the key first */
  double w[2] = {100, 200}, t[2] = {1e-6, 2e-6};
  agent_cand m[2] = {{.kind = IMPL_SERIAL, .works = w, .times = t,
                      .n_points = 2},
                     {.kind = IMPL_THREADED}};
  cr_assert_eq(agent_choose(m, 2, 1000, 0, &rng, &why, NULL, NULL), 0);
  cr_assert_str_eq(why, "model");
  /* the static order for cold ones (no_calibration) is unchanged */
  cr_assert_eq(agent_choose(d, 3, 1000, 1, &rng, &why, NULL, NULL), 0);
  cr_assert_str_eq(why, "static");
}
