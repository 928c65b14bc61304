/* session.h — implementation sessions: state an implementation keeps across
 * the calls of one caller, and the caller's sink for those calls.
 *
 * A caller that runs the same method again and again on a stream of inputs
 * (the live eSRRF stream) opens a session and attaches it to the engine
 * around each method_run, naming the input it belongs to (`claim`, the
 * data of the call's first input). The implementation that runs on that
 * input finds the session (call_session_of) and may keep state in it under
 * a tag (tables, buffers, device memory, accumulators), released when the
 * session closes; the caller's sink says what the calls feed (a method's
 * own contract: esrrf's is methods/esrrf/sink.h). Every other call the
 * engine makes meanwhile (calibration on slices of the input, composite
 * steps on their intermediates) sees no session. The choice, timing and
 * recording of the calls are unchanged: each is a method_run like any
 * other.
 *
 * Internal to the library: the engine's field (engine.session), the
 * call's private method_call.session_ (set by call_init) and these
 * functions; a session is used by one thread at a time, like its
 * engine, which must outlive it. */
#ifndef QS_SESSION_H
#define QS_SESSION_H

#include "quicksilver_method.h"

typedef struct call_session call_session;

/* A kept state's destructor. */
typedef void (*session_release_fn)(void *state);

/* An empty session; QS_ENOMEM. */
int call_session_open(call_session **s);

/* Releases every kept state (in the reverse order of keeping) and s. */
void call_session_close(call_session *s);

/* e's calls on input data `claim` see s and `sink` until the detach. */
void call_session_attach(engine *e, call_session *s, const float *claim,
                         void *sink);
void call_session_detach(engine *e);

/* The session of c when c runs on the claimed input, else NULL. */
call_session *call_session_of(const method_call *c);

/* Runs body over [begin, end) for the session's caller's own work between
 * its calls (the live stream's window update) as the session's last call
 * ran its loops: on e's pool with that implementation's schedule (the
 * calling thread as worker 0), or, after a serial implementation, on the
 * calling thread alone in one range (before any call: the pool, static).
 * The first nonzero return of body. Not inside a call of e. */
int call_session_for(engine *e, const call_session *s, size_t begin,
                     size_t end, range_fn body, void *ctx);

/* The pages of img written once (zero over zero) by call_session_for, as
 * the engine provides a call's fresh outputs: for an image the caller
 * will fill later, off its timed path. */
void call_session_touch(engine *e, const call_session *s, const image *img);

/* Records how c runs its loops, for call_session_for (the engine, at each
 * call on the session's claimed input). */
void call_session_runs(call_session *s, const method_call *c);

/* The caller's sink given at the attach. */
void *call_session_sink(const call_session *s);

/* The state kept under tag (NULL: none). */
void *call_session_state(const call_session *s, const char *tag);

/* Keeps state under tag (a string that lives as long as the session, e.g.
 * a literal), released by `release` at close; replaces (and releases) a
 * state kept under the same tag. QS_ENOMEM when the session is full (the
 * state is released at once). */
int call_session_keep(call_session *s, const char *tag, void *state,
                      session_release_fn release);

#endif
