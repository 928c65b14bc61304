/* fail.c — the bottom of the engine: the one error setter (fail.h), the
 * last-error message and the engine's clock. Every other file of the
 * library may call these; they call nothing of the engine. */
#include "fail.h"

#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

int fail_msgv(char *err, size_t err_len, int status, const char *fmt,
              va_list ap) {
  if (err && err_len) vsnprintf(err, err_len, fmt, ap);
  return status;
}

int fail_msg(char *err, size_t err_len, int status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fail_msgv(err, err_len, status, fmt, ap);
  va_end(ap);
  return status;
}

int engine_fail(qs_engine *e, int status, const char *fmt, ...) {
  if (!e) return status;
  va_list ap;
  va_start(ap, fmt);
  fail_msgv(e->err, sizeof e->err, status, fmt, ap);
  va_end(ap);
  return status;
}

int64_t engine_now(const qs_engine *e) {
  return e->clock_ns ? e->clock_ns(e->clock_ctx) : qs_timer_ns();
}
