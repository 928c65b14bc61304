/* session.c — implementation sessions (session.h): a few tagged states
 * and the caller's sink; the engine hands the attached session to every
 * call it makes (method_call.session_, call.c), and call_session_of
 * keeps it for the call on the claimed input. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "session.h"

/* States an implementation keeps: eSRRF keeps two (its maps buffer, and
 * an OpenCL chain). */
#define SESSION_STATES 8

struct call_session {
  const float *claim;
  void *sink;
  int serial;     /* the last call's loops: on the calling thread */
  schedule sched; /* else on the pool with this schedule and chunk */
  size_t chunk;
  size_t n;
  struct {
    const char *tag;
    void *state;
    session_release_fn release;
  } kept[SESSION_STATES];
};

int call_session_open(call_session **s) {
  *s = calloc(1, sizeof **s);
  return *s ? QS_OK : QS_ENOMEM;
}

void call_session_close(call_session *s) {
  if (!s) return;
  while (s->n--)
    if (s->kept[s->n].release) s->kept[s->n].release(s->kept[s->n].state);
  free(s);
}

void call_session_attach(engine *e, call_session *s, const float *claim,
                         void *sink) {
  s->claim = claim;
  s->sink = sink;
  e->session = s;
}

void call_session_detach(engine *e) {
  if (e->session) {
    e->session->claim = NULL;
    e->session->sink = NULL;
  }
  e->session = NULL;
}

call_session *call_session_of(const method_call *c) {
  call_session *s = c->session_;
  if (!s || !s->claim || !c->in || !c->n_in || c->in[0].data != s->claim)
    return NULL;
  return s;
}

void *call_session_sink(const call_session *s) { return s->sink; }

void *call_session_state(const call_session *s, const char *tag) {
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->kept[i].tag, tag)) return s->kept[i].state;
  return NULL;
}

int call_session_keep(call_session *s, const char *tag, void *state,
                      session_release_fn release) {
  for (size_t i = 0; i < s->n; i++)
    if (!strcmp(s->kept[i].tag, tag)) {
      if (s->kept[i].release && s->kept[i].state != state)
        s->kept[i].release(s->kept[i].state);
      s->kept[i].state = state;
      s->kept[i].release = release;
      return QS_OK;
    }
  if (s->n == SESSION_STATES) {
    if (release) release(state);
    return QS_ENOMEM;
  }
  s->kept[s->n].tag = tag;
  s->kept[s->n].state = state;
  s->kept[s->n].release = release;
  s->n++;
  return QS_OK;
}

void call_session_runs(call_session *s, const method_call *c) {
  s->serial = c->threads == 1;
  s->sched = c->sched;
  s->chunk = c->chunk;
}

int call_session_for(engine *e, const call_session *s, size_t begin,
                     size_t end, range_fn body, void *ctx) {
  if (s && s->serial) return end > begin ? body(ctx, begin, end, 0) : QS_OK;
  return pool_for(e->pool, begin, end, s ? s->sched : SCHED_STATIC,
                  s ? s->chunk : 0, body, ctx);
}

void call_session_touch(engine *e, const call_session *s, const image *img) {
  call_session_for(e, s, 0, touch_ranges(img), touch_blocks, (void *)img);
}
