/* trace.c — the call tracer behind tests/walk/walk.py: the hooks GCC's
 * -finstrument-functions calls at every function's entry and exit, kept
 * for the calling thread between walk_begin and walk_end. Each (caller,
 * callee) pair is followed the first time only: a repeated call (the next
 * frame, pixel or chunk) is skipped with all it calls, so the trace is
 * the code as a reader follows it, each call read once. Written to the
 * file walk_end names, one line per event: "> ADDR" (entry) or "<"
 * (exit), ADDR as "<object>+0x<offset>" for addr2line. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NOI __attribute__((no_instrument_function))

enum { MAX_EVENTS = 1 << 20, MAX_DEPTH = 4096, MAX_PAIRS = 1 << 16 };

static struct {
  int on;
  pthread_t who;
  void *stack[MAX_DEPTH];
  int depth;
  int skip; /* > 0: inside a repeated call, this many levels deep */
  void *pairs[MAX_PAIRS][2];
  size_t n_pairs;
  void *ev[MAX_EVENTS]; /* entries: the function; exits: NULL */
  size_t n;
} T;

NOI static int seen(void *caller, void *fn) {
  for (size_t i = 0; i < T.n_pairs; i++)
    if (T.pairs[i][0] == caller && T.pairs[i][1] == fn) return 1;
  if (T.n_pairs < MAX_PAIRS) {
    T.pairs[T.n_pairs][0] = caller;
    T.pairs[T.n_pairs++][1] = fn;
  }
  return 0;
}

NOI void __cyg_profile_func_enter(void *fn, void *site) {
  (void)site;
  if (!T.on || !pthread_equal(T.who, pthread_self())) return;
  if (T.skip) {
    T.skip++;
    return;
  }
  void *caller = T.depth ? T.stack[T.depth - 1] : NULL;
  if (seen(caller, fn)) {
    T.skip = 1;
    return;
  }
  if (T.depth < MAX_DEPTH) T.stack[T.depth] = fn;
  T.depth++;
  if (T.n < MAX_EVENTS) T.ev[T.n++] = fn;
}

NOI void __cyg_profile_func_exit(void *fn, void *site) {
  (void)fn, (void)site;
  if (!T.on || !pthread_equal(T.who, pthread_self())) return;
  if (T.skip) {
    T.skip--;
    return;
  }
  if (T.depth) T.depth--;
  if (T.n < MAX_EVENTS) T.ev[T.n++] = NULL;
}

NOI void walk_begin(void) {
  T.who = pthread_self();
  T.depth = T.skip = 0;
  T.n = T.n_pairs = 0;
  T.on = 1;
}

/* Stops and writes the events to path; nonzero on failure. */
NOI int walk_end(const char *path) {
  T.on = 0;
  FILE *f = fopen(path, "w");
  if (!f) return 1;
  for (size_t i = 0; i < T.n; i++) {
    Dl_info d;
    if (!T.ev[i])
      fputs("<\n", f);
    else if (dladdr(T.ev[i], &d) && d.dli_fname)
      fprintf(f, "> %s+0x%lx\n", d.dli_fname,
              (unsigned long)((char *)T.ev[i] - (char *)d.dli_fbase));
    else
      fprintf(f, "> ?+%p\n", T.ev[i]);
  }
  int bad = T.n >= MAX_EVENTS;
  return fclose(f) || bad;
}
