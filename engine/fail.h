/* fail.h — the library's one error setter: a message into a caller's
 * buffer, the status returned, for every layer that reports through an
 * (err, err_len) pair (cl/, db/, methods/; the engine's own last-error
 * message goes through engine_fail, which shares it). Part of the
 * engine's contract (tests/layers.py): it includes nothing but the C
 * library. Internal: not exported. */
#ifndef QS_FAIL_H
#define QS_FAIL_H

#include <stdarg.h>
#include <stddef.h>

/* Writes the message (printf's fmt) into err (always NUL-terminated when
 * err_len > 0; err may be NULL with err_len 0) and returns status, so a
 * failure reads `return fail_msg(err, len, QS_EINVAL, "...", ...)`. */
int fail_msg(char *err, size_t err_len, int status, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* fail_msg with a va_list. */
int fail_msgv(char *err, size_t err_len, int status, const char *fmt,
              va_list ap) __attribute__((format(printf, 4, 0)));

#endif
