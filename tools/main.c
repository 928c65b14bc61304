/* main.c — the quicksilver command-line tool. The library never prints;
 * this is where messages reach people. */
#include <stdio.h>
#include <string.h>

#include "quicksilver.h"

static int usage(FILE *f) {
  fprintf(f,
          "usage: quicksilver <command> [options]\n"
          "commands:\n"
          "  --version    print the version\n");
  return f == stdout ? 0 : 2;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage(stderr);
  if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
    printf("quicksilver %s\n", QS_VERSION);
    return 0;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
    return usage(stdout);
  fprintf(stderr, "quicksilver: unknown command '%s'\n", argv[1]);
  return usage(stderr);
}
