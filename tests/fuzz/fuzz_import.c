/* fuzz_import.c — libFuzzer harness for the timing store's JSON import:
 * any document must be imported or refused whole, into an in-memory
 * store, never crash. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "db/store.h"

static int import_one(const uint8_t *data, size_t size) {
  static char path[64];
  if (!path[0])
    snprintf(path, sizeof path, "/tmp/qs-fuzz-import-%d.json", (int)getpid());
  FILE *f = fopen(path, "wb");
  if (!f) return 0;
  fwrite(data, 1, size, f);
  fclose(f);
  store *s = NULL;
  char err[512];
  if (store_open(&s, ":memory:", err, sizeof err)) {
    unlink(path);
    return 0;
  }
  size_t added, skipped, rejected;
  store_import(s, path, &added, &skipped, &rejected, err, sizeof err);
  store_close(s);
  unlink(path);
  return 0;
}

/* The tests include this file with FUZZ_NO_MAIN to replay the corpus and
 * the regression inputs through the same function. */
#ifndef FUZZ_NO_MAIN
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return import_one(data, size);
}
#endif
