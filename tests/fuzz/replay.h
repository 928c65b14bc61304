/* replay.h — runs every file of tests/fuzz/corpus/<kind> and
 * tests/fuzz/regress/<kind> through a harness's input function, so the
 * normal tests (and their sanitizer runs) keep every input that fuzzing
 * ever found troublesome. Include after criterion.h. */
#ifndef QS_FUZZ_REPLAY_H
#define QS_FUZZ_REPLAY_H

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Number of files replayed from both folders. */
static inline size_t replay_kind(const char *kind,
                                 int (*fn)(const uint8_t *, size_t)) {
  static const char *const parts[] = {"corpus", "regress"};
  size_t seen = 0;
  for (int p = 0; p < 2; p++) {
    char dir[512];
    snprintf(dir, sizeof dir, "%s/tests/fuzz/%s/%s", QS_SOURCE_ROOT, parts[p],
             kind);
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));) {
      if (e->d_name[0] == '.') continue;
      char path[1024];
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      FILE *f = fopen(path, "rb");
      if (!f) continue;
      fseek(f, 0, SEEK_END);
      long n = ftell(f);
      fseek(f, 0, SEEK_SET);
      uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
      size_t got = buf ? fread(buf, 1, (size_t)(n > 0 ? n : 0), f) : 0;
      fclose(f);
      fprintf(stderr, "replay %s/%s (%zu bytes)\n", parts[p], e->d_name, got);
      fn(buf, got);
      free(buf);
      seen++;
    }
    if (d) closedir(d);
  }
  return seen;
}

#endif
