/* fuzz_args.c — libFuzzer harness for the command-line parser: the input,
 * split at newlines, is an argument vector parsed against an option table
 * and the simulator's parameter table, then resolved as the CLI does. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "simulate.h"

static const opt_def opts[] = {{"output", 'o', "FILE", "output"},
                               {"impl", 0, "NAME", "implementation"},
                               {"explain", 0, NULL, "explain"},
                               {"quiet", 'q', NULL, "quiet"},
                               {NULL, 0, NULL, NULL}};

static int args_one(const uint8_t *data, size_t size) {
  char *buf = malloc(size + 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  buf[size] = 0;
  char *argv[64];
  int argc = 0;
  for (char *s = buf; argc < 64;) {
    argv[argc++] = s;
    char *nl = memchr(s, '\n', (size_t)(buf + size - s));
    if (!nl) break;
    *nl = 0;
    s = nl + 1;
  }
  const opt_def *tables[] = {opts};
  args a;
  char err[512];
  if (args_parse(argc, argv, tables, 1, sim_params, SIM_N, &a, err,
                 sizeof err) == QS_OK) {
    double v[SIM_N];
    qs_params_resolve(sim_params, SIM_N, a.params, a.n_params, v, err,
                      sizeof err);
    size_t n;
    for (size_t i = 0; i < a.n_pos; i++)
      args_size(a.pos[i], 0, 100, &n);
    args_value(&a, "output");
    args_count(&a, "output");
  } else if (!err[0]) {
    __builtin_trap();
  }
  free(buf);
  return 0;
}

/* The tests include this file with FUZZ_NO_MAIN to replay the corpus and
 * the regression inputs through the same function. */
#ifndef FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return args_one(data, size);
}
#endif
