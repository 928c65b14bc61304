/* qs_test.h — shared helpers of the Criterion tests.
 *
 * Criterion runs every test in its own worker process and ignores what a
 * worker reports after its result (LeakSanitizer prints at exit). Each suite
 * therefore declares `TestSuite(name, .fini = qs_leak_check)`: under
 * AddressSanitizer the check runs before the result is sent and a leak
 * aborts the test. Without ASan it does nothing. */
#ifndef QS_TEST_H
#define QS_TEST_H

#include <stdio.h>
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__)
#define QS_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QS_ASAN 1
#endif
#endif

#ifdef QS_ASAN
int __lsan_do_recoverable_leak_check(void);
static inline void qs_leak_check(void) {
  if (__lsan_do_recoverable_leak_check()) {
    fprintf(stderr, "leak check: memory leaked by this test\n");
    abort();
  }
}
#else
static inline void qs_leak_check(void) {}
#endif

#endif
