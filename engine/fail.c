/* fail.c — the bottom of the engine: the last-error message and the
 * engine's clock. Every other file of engine/ may call these; they call
 * nothing of the engine. */
#include <stdarg.h>
#include <stdio.h>

#include "internal.h"

int engine_fail(engine *e, int status, const char *fmt, ...) {
  if (!e) return status;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->err, sizeof e->err, fmt, ap);
  va_end(ap);
  return status;
}

int64_t engine_now(const engine *e) {
  return e->clock_ns ? e->clock_ns(e->clock_ctx) : timer_ns();
}

