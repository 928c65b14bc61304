/* chunk_rule.c — the dispenser's chunk rule (qsm_chunk_units), TAP on
 * stdout: its values, and whole schedules simulated event by event for
 * ranks of given speeds, checking that the last rank finishes close to the
 * ideal time (all work spread by speed) with few chunks, and that a fast
 * rank takes more units than a slow one. No MPI calls: the rule is a pure
 * function. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "quicksilver_mpi.h"

static int n_tests, n_failed;

static void check(int ok, const char *what) {
  n_tests++;
  if (!ok) n_failed++;
  printf("%s %d - %s\n", ok ? "ok" : "not ok", n_tests, what);
}

typedef struct sim {
  double makespan, ideal;
  uint64_t chunks;
  uint64_t units[16];
} sim;

/* P ranks of speeds speed[r] (units per second) take U units from one
 * counter; a rank knows its own rate only after its first chunk, and sees
 * the rates the others have published. */
static sim simulate(int P, const double *speed, uint64_t U) {
  sim s = {0};
  double free_at[16] = {0}, rate[16] = {0}, total_speed = 0;
  uint64_t next = 0;
  for (int r = 0; r < P; r++) total_speed += speed[r];
  s.ideal = (double)U / total_speed;
  for (;;) {
    int r = 0; /* the rank that comes back first */
    for (int i = 1; i < P; i++)
      if (free_at[i] < free_at[r]) r = i;
    if (next >= U) break;
    double known = 0, total = 0;
    int n_known = 0;
    for (int i = 0; i < P; i++)
      if (rate[i] > 0) known += rate[i], n_known++;
    total = known + (n_known ? (P - n_known) * known / n_known : 0);
    uint64_t n = qsm_chunk_units(U - next, rate[r], total, rate[r] > 0);
    if (n > U - next) n = U - next;
    next += n;
    s.units[r] += n;
    s.chunks++;
    free_at[r] += (double)n / speed[r];
    rate[r] = speed[r];
  }
  for (int i = 0; i < P; i++)
    if (free_at[i] > s.makespan) s.makespan = free_at[i];
  return s;
}

int main(void) {
  check(qsm_chunk_units(0, 1, 1, 1) == 0, "nothing left: no units");
  check(qsm_chunk_units(100, 1, 1, 0) == 1, "no rate yet: a 1-unit probe");
  check(qsm_chunk_units(100, 1, 4, 1) == 12,
        "a quarter of the speed: half of a quarter of what is left");
  check(qsm_chunk_units(100, 3, 4, 1) == 37, "three quarters: 37 of 100");
  check(qsm_chunk_units(1, 1, 8, 1) == 1, "never below one unit");
  check(qsm_chunk_units(5, 1, 1, 1) == 2, "alone: half of what is left");
  check(qsm_chunk_units(7, 1, 0.5, 1) == 1,
        "an inconsistent total falls back to one unit");

  char what[160];
  double equal[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  sim s = simulate(8, equal, 10000);
  snprintf(what, sizeof what,
           "8 equal ranks, 10000 units: makespan %.1f vs ideal %.1f, %llu "
           "chunks",
           s.makespan, s.ideal, (unsigned long long)s.chunks);
  /* Each chunk takes 1/(2P) of what is left: about 2P ln(U / P) chunks,
   * then at most 2P of one unit. */
  check(s.makespan <= s.ideal * 1.001 + 1 &&
            (double)s.chunks <= 2 * 8 * (log(10000.0 / 8) + 2),
        what);

  double mixed[4] = {1, 2, 4, 8};
  s = simulate(4, mixed, 1000);
  snprintf(what, sizeof what,
           "speeds 1:2:4:8, 1000 units: makespan %.2f vs ideal %.2f, units "
           "%llu %llu %llu %llu",
           s.makespan, s.ideal, (unsigned long long)s.units[0],
           (unsigned long long)s.units[1], (unsigned long long)s.units[2],
           (unsigned long long)s.units[3]);
  check(s.makespan <= s.ideal * 1.02 + 1.0 && s.units[3] > 4 * s.units[0] &&
            s.units[0] < s.units[1] && s.units[1] < s.units[2] &&
            s.units[2] < s.units[3],
        what);

  double slow[3] = {10, 10, 0.1}; /* a node 100 times slower */
  s = simulate(3, slow, 200);
  snprintf(what, sizeof what,
           "one rank 100x slower, 200 units: makespan %.2f vs ideal %.2f, "
           "it ran %llu",
           s.makespan, s.ideal, (unsigned long long)s.units[2]);
  check(s.makespan <= s.ideal + 1 / 0.1 + 1e-9 && s.units[2] <= 2, what);

  double two[2] = {1, 1};
  s = simulate(2, two, 3);
  check(s.units[0] + s.units[1] == 3 && s.makespan <= 2,
        "2 ranks, 3 units: all dealt, 2 units on the last rank at most");

  printf("1..%d\n", n_tests);
  return n_failed != 0;
}
