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
  agent_cand c[2] = {{.kind = QS_IMPL_SERIAL, .walls = a, .n_walls = 4},
                     {.kind = QS_IMPL_THREADED, .walls = b, .n_walls = 4}};
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
      {.kind = QS_IMPL_OPENCL, .works = w, .times = fixed_t, .n_points = 3},
      {.kind = QS_IMPL_SERIAL, .works = w, .times = px_t, .n_points = 3}};
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
  agent_cand c[4] = {{.kind = QS_IMPL_OPENCL},
                     {.kind = QS_IMPL_THREADED},
                     {.kind = QS_IMPL_SERIAL},
                     {.kind = QS_IMPL_COMPOSITE}};
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
  agent_cand c[2] = {{.kind = QS_IMPL_SERIAL, .walls = ta, .n_walls = 3},
                     {.kind = QS_IMPL_THREADED,
                      .walls = tb,
                      .n_walls = 3,
                      .delayed = 1,
                      .factor = 3,
                      .p = 0.5}};
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

/* A candidate known only by a model through two sizes is tried on the key
 * while half its prediction (AGENT_MODEL_U) beats the best measured one
 * and the try costs at most AGENT_HORIZON times what it could save; then
 * its own history decides. Beyond that it is hopeless. */
Test(agent, model_only_candidate_is_verified_while_it_could_win) {
  double a[3] = {1.0, 1.0, 1.0};
  agent_cand c[2] = {{.kind = QS_IMPL_SERIAL, .walls = a, .n_walls = 3},
                     {.kind = QS_IMPL_THREADED,
                      .n_points = 2,
                      .fitted = 1,
                      .fit_a = 0,
                      .fit_b = 1.8e-6}};
  uint64_t rng = 1;
  const char *why = NULL;
  double est[2], lo[2];
  int src[2];
  const char *st[2];
  /* model 1.8 s at work 1e6 against 1.0 s measured: at best 0.9 s, could
   * save 0.1 s a call for a try costing 0.8 s (within 20x) */
  cr_assert_eq(agent_choose(c, 2, 1e6, 0, &rng, &why, est, src), 1);
  cr_assert_str_eq(why, "verification");
  cr_assert_float_eq(est[1], 1.8, 1e-12);
  cr_assert_float_eq(agent_lower(&c[1], 1e6), 0.9, 1e-12);
  cr_assert_eq(agent_explain(c, 2, 1e6, 1, lo, st), 0);
  cr_assert_str_eq(st[1], "next");
  cr_assert_str_eq(st[0], "best");
  /* at 1.95 s its bound (0.975 s) is within AGENT_TIE of 1.0 s: not
   * worth a try */
  c[1].fit_b = 1.95e-6;
  cr_assert_eq(agent_choose(c, 2, 1e6, 0, &rng, &why, NULL, NULL), 0);
  cr_assert_str_eq(why, "history");
  /* predicted at 2.2 s: its bound (1.1 s) cannot beat 1.0 s: hopeless */
  c[1].fit_b = 2.2e-6;
  cr_assert_eq(agent_choose(c, 2, 1e6, 0, &rng, &why, NULL, NULL), 0);
  agent_explain(c, 2, 1e6, 0, lo, st);
  cr_assert_str_eq(st[1], "hopeless");
  cr_assert_float_eq(lo[1], 1.1, 1e-12);
  /* once measured (2.2 s), history against history: 2.2 x (1 - 0.5)
   * = 1.1 cannot beat 1.0: the first stays */
  double b[1] = {2.2};
  c[1].walls = b;
  c[1].n_walls = 1;
  cr_assert_eq(agent_choose(c, 2, 1e6, 0, &rng, &why, NULL, NULL), 0);
  cr_assert_str_eq(why, "history");
  /* excluded candidates are never tried */
  c[1].walls = NULL;
  c[1].n_walls = 0;
  c[1].fit_b = 1.1e-6;
  c[1].excluded = "failed";
  cr_assert_eq(agent_choose(c, 2, 1e6, 0, &rng, &why, NULL, NULL), 0);
  cr_assert_str_eq(why, "history");
}

/* A one-size model cannot tell fixed from per-work cost: at best all the
 * fixed cost its kind may carry is fixed (OpenCL: all of it; a CPU kind:
 * AGENT_CPU_FIXED), the rest scales. */
Test(agent, one_size_bound_by_kind) {
  agent_cand cl = {.kind = QS_IMPL_OPENCL,
                   .n_points = 1,
                   .fitted = 1,
                   .fit_b = 5e-3 / 1e4,
                   .point_work = 1e4};
  /* 5 ms on a slice of 1e4: scaled to 1e7 it is 5 s, at best 5 ms */
  cr_assert_float_eq(agent_lower(&cl, 1e7), 5e-3 * (1 - AGENT_NOISE),
                     1e-12);
  agent_cand cpu = cl;
  cpu.kind = QS_IMPL_THREADED;
  cr_assert_float_eq(agent_lower(&cpu, 1e7),
                     (1e-3 + 4e-3 * 1e3) * (1 - AGENT_NOISE), 1e-12);
  /* nothing known: anything */
  agent_cand none = {.kind = QS_IMPL_SERIAL};
  cr_assert_eq(agent_lower(&none, 1e7), 0);
  /* one-time costs count once more than one run showed them */
  double w[1] = {1.0};
  agent_cand h = {
      .kind = QS_IMPL_OPENCL, .walls = w, .n_walls = 1, .once = 0.5};
  cr_assert_float_eq(agent_lower(&h, 1), 0.5, 1e-12);
  h.once_known = 1;
  cr_assert_float_eq(agent_lower(&h, 1), 1.0, 1e-12);
}

/* A candidate known by one size only is held at its prior (what its
 * siblings' stopped slice runs allow, cands_prior) as a cold one is: a
 * one-size run under AGENT_CPU_FIXED bounds it near 0 (all of it may be
 * fixed cost), and on rgc 4 x 64 x 64 such a schedule asked for a second
 * slice size on every call beside siblings stopped at 7 ms. Timed on the
 * key, its history decides alone. */
Test(agent, one_size_candidate_held_at_its_prior) {
  agent_cand c = {.kind = QS_IMPL_THREADED,
                  .n_points = 1,
                  .fitted = 1,
                  .fit_b = 0.9e-3 / 4096,
                  .point_work = 4096};
  double alone = agent_lower(&c, 6e6);
  cr_assert_float_eq(alone, 0.9e-3 * (1 - AGENT_NOISE), 1e-12);
  c.prior = 3e-3;
  cr_assert_float_eq(agent_lower(&c, 6e6), 3e-3, 1e-15);
  c.prior = 1e-4; /* a prior below the model's bound changes nothing */
  cr_assert_float_eq(agent_lower(&c, 6e6), alone, 1e-15);
  double w[1] = {2e-3};
  agent_cand h = c;
  h.prior = 3e-3;
  h.walls = w;
  h.n_walls = 1;
  cr_assert_float_eq(agent_lower(&h, 6e6), 2e-3 * (1 - AGENT_RUN_U), 1e-15);
}

/* Candidates timed on the key: one whose bound (its estimate less
 * AGENT_RUN_U / n) beats the incumbent (the lesser of its estimate and its
 * newest runs, as many as the rival has and at least AGENT_FOOTING) is run
 * until its own runs tighten the bound. */
Test(agent, timed_candidates_tried_until_their_bound_settles) {
  /* a: fast half 0.84 over its window, 1.0 over its newest runs; b: 0.9
   * each run; c: once at 2.0 */
  double a[10] = {0.8, 0.8, 0.8, 0.8, 1, 1, 1, 1, 1, 1};
  double b[10], cw[1] = {2.0};
  for (int i = 0; i < 10; i++) b[i] = 0.9;
  agent_cand c[3] = {{.kind = QS_IMPL_THREADED, .walls = a, .n_walls = 10},
                     {.kind = QS_IMPL_THREADED, .walls = b, .n_walls = 1},
                     {.kind = QS_IMPL_SERIAL, .walls = cw, .n_walls = 1}};
  uint64_t rng = 5;
  const char *why;
  double est[3];
  int src[3];
  /* b against 0.84: 0.9 x (1 - 0.5) = 0.45 beats 0.84 x 0.95 = 0.798 */
  cr_assert_eq(agent_choose(c, 3, 100, 0, &rng, &why, est, src), 1);
  cr_assert_str_eq(why, "exploration");
  cr_assert_float_eq(est[0], 0.84, 1e-12);
  /* b keeps being tried while 0.9 (1 - 0.5 / n) < 0.798: until n = 5
   * (0.81); c (2.0: at best 1.0) never */
  size_t n = 1;
  for (; n < 10; n++) {
    c[1].n_walls = n;
    long pick = agent_choose(c, 3, 100, 0, &rng, &why, NULL, NULL);
    cr_assert_neq(pick, 2);
    if (pick == 0) break;
  }
  cr_assert_eq(n, 5, "b settled after %zu runs", n);
  /* a clearly faster rival takes over as the incumbent */
  for (int i = 0; i < 10; i++) b[i] = 0.7;
  c[1].n_walls = 3;
  cr_assert_eq(agent_choose(c, 3, 100, 0, &rng, &why, NULL, NULL), 1);
  cr_assert_str_eq(why, "history");
}

/* A small call (best under AGENT_SMALL_CALL, timed on the key) tries a
 * cold CPU candidate on the call itself: the static order (threaded before
 * a composite for large work; serial first for small work), the one
 * declared last among equals; never a cold OpenCL one. A larger call, or a
 * best known only by its model, passes cold candidates over as before. */
Test(agent, small_call_tries_cold_cpu_candidates) {
  double fast[1] = {20e-6};
  agent_cand c[5] = {{.kind = QS_IMPL_SERIAL, .walls = fast, .n_walls = 1},
                     {.kind = QS_IMPL_THREADED},
                     {.kind = QS_IMPL_THREADED},
                     {.kind = QS_IMPL_COMPOSITE},
                     {.kind = QS_IMPL_OPENCL}};
  uint64_t rng = 3;
  const char *why = NULL;
  cr_assert_eq(agent_choose(c, 5, 1e6, 0, &rng, &why, NULL, NULL), 2);
  cr_assert_str_eq(why, "exploration");
  double t2[1] = {50e-6};
  c[2].walls = t2, c[2].n_walls = 1;
  cr_assert_eq(agent_choose(c, 5, 1e6, 0, &rng, &why, NULL, NULL), 1);
  double t1[1] = {45e-6};
  c[1].walls = t1, c[1].n_walls = 1;
  cr_assert_eq(agent_choose(c, 5, 1e6, 0, &rng, &why, NULL, NULL), 3);
  cr_assert_str_eq(why, "exploration");
  /* only OpenCL left cold: the history decides */
  double t3[1] = {90e-6};
  c[3].walls = t3, c[3].n_walls = 1;
  cr_assert_eq(agent_choose(c, 5, 1e6, 0, &rng, &why, NULL, NULL), 0);
  cr_assert_str_eq(why, "history");
  /* small work: a cold serial one goes before the threaded ones */
  agent_cand d[3] = {{.kind = QS_IMPL_SERIAL},
                     {.kind = QS_IMPL_THREADED, .walls = fast, .n_walls = 1},
                     {.kind = QS_IMPL_THREADED}};
  cr_assert_eq(agent_choose(d, 3, 1000, 0, &rng, &why, NULL, NULL), 0);
  cr_assert_str_eq(why, "exploration");
  /* not small: cold ones are calibrated on slices, not tried here */
  double slow[1] = {2 * AGENT_SMALL_CALL};
  d[1].walls = slow;
  cr_assert_eq(agent_choose(d, 3, 1000, 0, &rng, &why, NULL, NULL), 1);
  cr_assert_str_eq(why, "history");
  /* a best known only by its model: it runs on the key first */
  double w[2] = {100, 200}, t[2] = {1e-6, 2e-6};
  agent_cand m[2] = {
      {.kind = QS_IMPL_SERIAL, .works = w, .times = t, .n_points = 2},
      {.kind = QS_IMPL_THREADED}};
  cr_assert_eq(agent_choose(m, 2, 1000, 0, &rng, &why, NULL, NULL), 0);
  cr_assert_str_eq(why, "model");
  /* the static order for cold ones (no_calibration) is unchanged */
  cr_assert_eq(agent_choose(d, 3, 1000, 1, &rng, &why, NULL, NULL), 0);
  cr_assert_str_eq(why, "static");
}

/* Equal footing: while the incumbent has fewer than AGENT_FOOTING runs on
 * the key, a rival timed there as often as it is not tried before the
 * incumbent runs again (its first run is often a cold one); with fewer
 * runs than the incumbent, or against an incumbent of AGENT_FOOTING runs,
 * the rival's bound decides as before. */
Test(agent, rival_waits_for_an_incumbent_of_as_few_runs) {
  double a[4] = {1.0, 1.0, 1.0, 1.0}, b[1] = {1.2};
  agent_cand c[2] = {{.kind = QS_IMPL_THREADED, .walls = a, .n_walls = 1},
                     {.kind = QS_IMPL_THREADED, .walls = b, .n_walls = 1}};
  uint64_t rng = 3;
  const char *why;
  /* b's bound 1.2 x 0.5 = 0.6 beats 1.0 x 0.95: promising, but b has as
   * many runs as a */
  cr_assert_eq(agent_choose(c, 2, 100, 0, &rng, &why, NULL, NULL), 0);
  cr_assert_str_eq(why, "history");
  /* a timed twice, b once: b is tried */
  c[0].n_walls = 2;
  cr_assert_eq(agent_choose(c, 2, 100, 0, &rng, &why, NULL, NULL), 1);
  cr_assert_str_eq(why, "exploration");
  /* an incumbent of AGENT_FOOTING runs: the bound alone decides */
  c[0].n_walls = AGENT_FOOTING;
  double b4[AGENT_FOOTING];
  for (int i = 0; i < AGENT_FOOTING; i++) b4[i] = 1.2;
  c[1].walls = b4;
  c[1].n_walls = AGENT_FOOTING;
  /* b: 1.2 x (1 - 0.5 / 4) = 1.05, not below 0.95: hopeless anyway */
  cr_assert_eq(agent_choose(c, 2, 100, 0, &rng, &why, NULL, NULL), 0);
  for (int i = 0; i < AGENT_FOOTING; i++) b4[i] = 0.9;
  /* b now the incumbent: 0.9 < 1.0 */
  cr_assert_eq(agent_choose(c, 2, 100, 0, &rng, &why, NULL, NULL), 1);
  cr_assert_str_eq(why, "history");
}

/* A cold candidate's prior (agent_cand.prior, from a timed sibling) is its
 * bound: one that cannot beat the best by AGENT_TIE is outclassed, shown
 * so, and not tried by a small call; one whose prior could beat it is
 * cold as before. */
Test(agent, prior_outclasses_a_cold_candidate) {
  double fast[1] = {20e-6};
  agent_cand c[3] = {{.kind = QS_IMPL_THREADED, .walls = fast, .n_walls = 1},
                     {.kind = QS_IMPL_SERIAL, .prior = 40e-6},
                     {.kind = QS_IMPL_THREADED, .prior = 40e-6}};
  cr_assert(agent_outclassed(&c[1], 20e-6));
  cr_assert_float_eq(agent_lower(&c[1], 1e6), 40e-6, 1e-18);
  cr_assert(!agent_outclassed(&c[0], 20e-6), "a timed one is not");
  uint64_t rng = 3;
  const char *why = NULL;
  /* a small call (20 us): it would try a cold CPU candidate; neither */
  cr_assert_eq(agent_choose(c, 3, 1e6, 0, &rng, &why, NULL, NULL), 0);
  cr_assert_str_eq(why, "history");
  double lo[3];
  const char *st[3];
  agent_explain(c, 3, 1e6, 0, lo, st);
  cr_assert_str_eq(st[1], "outclassed");
  cr_assert_str_eq(st[2], "outclassed");
  cr_assert_float_eq(lo[2], 40e-6, 1e-18);
  /* within AGENT_TIE of the best it is still outclassed; under, cold and
   * tried */
  c[2].prior = 20e-6 * (1 - AGENT_TIE) * 1.001;
  cr_assert(agent_outclassed(&c[2], 20e-6));
  c[2].prior = 10e-6;
  cr_assert(!agent_outclassed(&c[2], 20e-6));
  cr_assert_eq(agent_choose(c, 3, 1e6, 0, &rng, &why, NULL, NULL), 2);
  cr_assert_str_eq(why, "exploration");
  agent_explain(c, 3, 1e6, 2, lo, st);
  cr_assert_str_eq(st[1], "outclassed");
  cr_assert_str_eq(st[2], "next");
}

/* The key's run noise (agent_run_noise) sets how far below its one run a
 * rival may still be: a schedule timed once at 1.8x the incumbent is tried
 * again while nothing is known of the key's noise (AGENT_RUN_U: at best
 * 0.9), not once the key's repeated runs agree within 6 % (at best 1.53),
 * and again where one of them ran at twice its steady time. */
Test(agent, run_noise_read_from_the_key) {
  double a[4] = {1.0, 1.02, 0.98, 1.05}, b[2] = {1.3, 1.32}, s[1] = {1.8};
  agent_cand c[3] = {{.kind = QS_IMPL_THREADED, .walls = a, .n_walls = 4},
                     {.kind = QS_IMPL_THREADED, .walls = b, .n_walls = 2},
                     {.kind = QS_IMPL_SERIAL, .walls = s, .n_walls = 1}};
  uint64_t rng = 11;
  const char *why;
  /* not known: s at best 0.9 beats 0.99 x 0.95 */
  cr_assert_eq(agent_choose(c, 3, 100, 0, &rng, &why, NULL, NULL), 2);
  cr_assert_str_eq(why, "exploration");
  /* 3 + 1 repeated runs, the worst 1 - 0.99 / 1.05 = 5.7 %: u = 1.5 x that,
   * raised to AGENT_NOISE */
  double u = agent_run_noise(c, 3);
  cr_assert_float_eq(u, AGENT_NOISE, 1e-15);
  for (int i = 0; i < 3; i++) c[i].run_u = u;
  cr_assert_float_eq(agent_lower(&c[2], 100), 1.8 * (1 - AGENT_NOISE), 1e-12);
  cr_assert_eq(agent_choose(c, 3, 100, 0, &rng, &why, NULL, NULL), 0);
  cr_assert_str_eq(why, "history");
  double lower[3];
  const char *state[3];
  agent_explain(c, 3, 100, 0, lower, state);
  cr_assert_str_eq(state[2], "hopeless");
  /* a run at twice the steady time seen on the key: AGENT_RUN_U again */
  a[3] = 2.0;
  u = agent_run_noise(c, 3);
  cr_assert_float_eq(u, AGENT_RUN_U, 1e-15);
  for (int i = 0; i < 3; i++) c[i].run_u = u;
  cr_assert_eq(agent_choose(c, 3, 100, 0, &rng, &why, NULL, NULL), 2);
  /* a moderate spread, with the margin: 1.5 x (1 - 0.99 / 1.25) */
  a[3] = 1.25;
  cr_assert_float_eq(agent_run_noise(c, 3), 1.5 * (1 - 0.99 / 1.25), 1e-12);
  /* fewer than AGENT_NOISE_SEEN repeated runs: not known */
  c[0].n_walls = 2;
  c[1].n_walls = 1;
  cr_assert_float_eq(agent_run_noise(c, 3), AGENT_RUN_U, 1e-15);
}
