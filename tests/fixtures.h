/* fixtures.h — the NanoPyx reference fixtures of tests/data/reference
 * (a JSON file per case naming raw little-endian float32 arrays), read the
 * same way by every test that uses them (test_reference.c,
 * test_esrrf_vec.c, test_rgc_vec.c). Header-only; include after criterion. */
#ifndef QS_TEST_FIXTURES_H
#define QS_TEST_FIXTURES_H

#include <cJSON.h>
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quicksilver.h"

#define REF_DIR QS_SOURCE_ROOT "/tests/data/reference/"

/* The engine the fixture tests run on: in-memory store, no calibration,
 * seeded. */
static inline qs_engine *fixture_engine(void) {
  qs_engine_options o = {
      .db_path = ":memory:", .no_calibration = 1, .seed = 1};
  qs_engine *e = NULL;
  int rc = qs_engine_open(&e, &o);
  cr_assert_eq(rc, QS_OK, "qs_engine_open: %s",
               e ? qs_engine_error(e) : qs_status_message(rc));
  return e;
}

static char *file_read(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "cannot open %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  cr_assert_geq(n, 0, "cannot size %s", path);
  char *buf = malloc((size_t)n + 1);
  cr_assert_not_null(buf);
  cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n, "short read %s", path);
  fclose(f);
  buf[n] = '\0';
  if (len) *len = (size_t)n;
  return buf;
}

static cJSON *json_load(const char *path) {
  char *text = file_read(path, NULL);
  cJSON *j = cJSON_Parse(text);
  free(text);
  cr_assert_not_null(j, "%s is not valid JSON", path);
  return j;
}

/* Loads one array entry {file, shape} into a new image. The files are
 * little-endian float32; this machine is little-endian too (checked). */
static void array_load(const cJSON *entry, qs_image *img) {
  const cJSON *file = cJSON_GetObjectItem(entry, "file");
  const cJSON *shape = cJSON_GetObjectItem(entry, "shape");
  cr_assert(cJSON_IsString(file) && cJSON_GetArraySize(shape) == 3,
            "fixture entry without file or 3-D shape");
  size_t dim[3];
  for (int k = 0; k < 3; k++)
    dim[k] = (size_t)cJSON_GetArrayItem(shape, k)->valuedouble;
  cr_assert_eq(qs_image_alloc(img, dim[0], dim[1], dim[2]), QS_OK);
  char path[1024];
  snprintf(path, sizeof path, REF_DIR "%s", file->valuestring);
  size_t len;
  char *bytes = file_read(path, &len);
  size_t n = dim[0] * dim[1] * dim[2];
  cr_assert_eq(len, n * sizeof(float), "%s: %zu bytes for shape %zux%zux%zu",
               path, len, dim[0], dim[1], dim[2]);
  const uint16_t probe = 1;
  cr_assert_eq(*(const uint8_t *)&probe, 1, "fixtures are little-endian");
  memcpy(img->data, bytes, len);
  free(bytes);
}

#endif
