/* main.c — the quicksilver command-line tool: the command table and its
 * dispatch. The library never prints; this is where messages reach people.
 * Exit statuses: 0 success, 1 failure, 2 usage error. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

typedef struct command {
  const char *name;
  int (*fn)(cli *c, int argc, char **argv);
  const char *summary;
} command;

static const command commands[] = {
    {"run", cmd_run, "run a method on TIFF stacks"},
    {"esrrf", cmd_esrrf, "eSRRF super-resolution (= run esrrf)"},
    {"stream", cmd_stream, "live eSRRF on frames as they arrive"},
    {"sweep", cmd_sweep, "eSRRF radius x sensitivity sweep scored by RSP, FRC, QnR"},
    {"methods", cmd_methods, "methods, parameters and implementations"},
    {"bench", cmd_bench, "benchmark sweeps over sizes and implementations"},
    {"db", cmd_db, "inspect and maintain the timing store"},
    {"devices", cmd_devices, "the CPU and the OpenCL devices"},
    {"diff", cmd_diff, "compare two TIFF stacks"},
    {"info", cmd_info,
     "a TIFF's shape, axes, pixel size and provenance"},
    {"simulate", cmd_simulate, "simulate a blinking-emitter stack"},
    {"version", cmd_version, "print the version"},
};
#define N_COMMANDS (sizeof commands / sizeof commands[0])

static const char *command_at(const void *ctx, size_t i) {
  return ((const command *)ctx)[i].name;
}

static int usage(FILE *f) {
  fprintf(f, "usage: quicksilver [--db PATH] [--threads N] [--no-opencl] "
             "[-q] [-v] [--json] <command> [args]\n\ncommands:\n");
  for (size_t i = 0; i < N_COMMANDS; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\n'quicksilver <command> --help' describes a command.\n");
  return f == stdout ? CLI_OK : CLI_USAGE;
}

int cmd_version(cli *c, int argc, char **argv) {
  args a;
  CLI_ARGS_OR_RETURN(cli_args(c, argc, argv, "version", NULL, NULL, 0, &a));
  if (a.n_pos) return cli_usage("version: unexpected argument '%s'", a.pos[0]);
  if (!c->json) {
    printf("quicksilver %s\n", QS_VERSION);
    return CLI_OK;
  }
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "version", QS_VERSION);
  return cli_json_out(j);
}

int main(int argc, char **argv) {
  cli c = {.tty = isatty(2)};
  /* Global options before the command word apply to every command; the
   * command parses its own arguments (where the globals are accepted
   * too). */
  int i = 1;
  while (i < argc && argv[i][0] == '-') {
    if (!strcmp(argv[i], "--version")) return cmd_version(&c, 1, argv + i);
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
      return usage(stdout);
    i += 1 + (!strcmp(argv[i], "--db") || !strcmp(argv[i], "--threads"));
  }
  if (i > argc) i = argc;
  args a;
  const opt_def *tables[] = {cli_globals};
  char err[512];
  if (args_parse(i - 1, argv + 1, tables, 1, NULL, 0, &a, err, sizeof err))
    return cli_usage("%s", err);
  int rc = cli_apply(&c, &a);
  if (rc) return rc;
  if (i >= argc) return usage(stderr);
  const char *name = argv[i];
  if (!strcmp(name, "help")) {
    if (i + 1 >= argc) return usage(stdout);
    name = argv[i + 1];
    char *help_argv[] = {argv[i + 1], "--help"};
    for (size_t k = 0; k < N_COMMANDS; k++)
      if (!strcmp(commands[k].name, name))
        return commands[k].fn(&c, 2, help_argv);
  }
  for (size_t k = 0; k < N_COMMANDS; k++) {
    if (strcmp(commands[k].name, name)) continue;
    rc = commands[k].fn(&c, argc - i, argv + i);
    qs_engine_close(c.e);
    return rc;
  }
  const char *near = qs_name_nearest(name, command_at, commands, N_COMMANDS);
  if (near)
    return cli_usage("unknown command '%s' (did you mean '%s'?)", name, near);
  cli_usage("unknown command '%s'", name);
  return usage(stderr);
}
