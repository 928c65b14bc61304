/* history.c — the engine's in-memory copy of the store's history, one entry
 * per (method, implementation, device, key). The store is read once per
 * method (hist_load); afterwards the dispatcher updates the entries as it
 * records runs, so a warm call chooses without touching SQLite. Entries are
 * allocated one by one and never move, so pointers stay valid while the
 * table grows (composite steps re-enter the dispatcher). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "db/store.h"
#include "internal.h"

static uint64_t hash_of(size_t impl, const char *key) {
  return fnv1a(FNV_SEED ^ (uint64_t)impl, key);
}

static int grow(mstate *m) {
  size_t nb = m->n_buckets ? m->n_buckets * 2 : 64;
  hist **b = calloc(nb, sizeof *b);
  if (!b) return -1;
  for (size_t i = 0; i < m->n_buckets; i++)
    for (hist *h = m->buckets[i], *next; h; h = next) {
      next = h->next;
      h->next = b[h->hash & (nb - 1)];
      b[h->hash & (nb - 1)] = h;
    }
  free(m->buckets);
  m->buckets = b;
  m->n_buckets = nb;
  return 0;
}

hist *hist_get(mstate *m, size_t impl, const char *key, double work,
               int create) {
  uint64_t hv = hash_of(impl, key);
  if (m->n_buckets)
    for (hist *h = m->buckets[hv & (m->n_buckets - 1)]; h; h = h->next)
      if (h->hash == hv && h->impl == impl && !strcmp(h->key, key))
        return h;
  if (!create) return NULL;
  if (m->n_hist >= m->n_buckets && grow(m)) return NULL;
  hist *h = calloc(1, sizeof *h);
  size_t len = strlen(key) + 1;
  if (!h || !(h->key = malloc(len))) {
    free(h);
    return NULL;
  }
  memcpy(h->key, key, len);
  h->hash = hv;
  h->impl = impl;
  h->work = work;
  h->next = m->buckets[hv & (m->n_buckets - 1)];
  m->buckets[hv & (m->n_buckets - 1)] = h;
  h->sibling = m->all;
  m->all = h;
  m->n_hist++;
  return h;
}

void hist_add(hist *h, double wall) {
  h->walls[h->head] = wall;
  h->head = (h->head + 1) % AGENT_WINDOW;
  if (h->n < AGENT_WINDOW) h->n++;
  h->win_ok = 0;
}

/* A run's one-time costs (program builds, the first launch of a size)
 * are paid again by each process that runs the key: a new process expects
 * the least of them seen (the warm caches' case: the first run on a
 * machine also fills them), one that has run it none. */
void hist_once(hist *h, double once_s, int here) {
  if (once_s > 0 && (h->once <= 0 || once_s < h->once)) h->once = once_s;
  h->once_n += once_s > 0;
  if (once_s > 0) h->once_sum += once_s;
  h->here |= here;
}

void hist_stopped(hist *h, double wall) {
  if (wall > h->stopped) h->stopped = wall;
  h->stopped_sum += wall;
}

const qs_stats *hist_stats(hist *h) {
  if (!h->n) return NULL;
  if (!h->win_ok) {
    double w[AGENT_WINDOW];
    size_t n = hist_walls(h, w);
    if (agent_window(w, n, &h->win)) return NULL;
    h->win_ok = 1;
  }
  return &h->win;
}

size_t hist_walls(const hist *h, double *out) {
  size_t start = (h->head + AGENT_WINDOW - h->n) % AGENT_WINDOW;
  for (size_t i = 0; i < h->n; i++)
    out[i] = h->walls[(start + i) % AGENT_WINDOW];
  return h->n;
}

void hist_free(mstate *m) {
  for (hist *h = m->all, *next; h; h = next) {
    next = h->sibling;
    free(h->key);
    free(h);
  }
  free(m->buckets);
  m->buckets = NULL;
  m->all = NULL;
  m->n_buckets = m->n_hist = 0;
}

/* Rows arrive newest first; they are collected and replayed oldest first so
 * that the rings end with the newest runs. */
typedef struct loaded {
  hist *h;
  double wall;
} loaded;

typedef struct load_ctx {
  mstate *m;
  loaded *rows;
  size_t n, cap;
  int oom;
} load_ctx;

static int load_row(void *ctx, const run_row *r) {
  load_ctx *l = ctx;
  mstate *m = l->m;
  size_t i = 0;
  while (i < m->n_impls && (strcmp(m->impls[i].name, r->impl) ||
                            strcmp(m->impls[i].devfp, r->device) ||
                            m->impls[i].version != r->impl_version))
    i++;
  if (i == m->n_impls) return 0; /* other hardware or an older version */
  hist *h = hist_get(m, i, r->key, r->work, 1);
  if (!h) return l->oom = 1;
  if (r->status == QS_EMISMATCH) h->mismatch = 1;
  if (r->status == QS_ECANCELLED) hist_stopped(h, r->wall);
  if (r->status != QS_OK) return 0;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 256;
    loaded *p = realloc(l->rows, cap * sizeof *p);
    if (!p) return l->oom = 1;
    l->rows = p;
    l->cap = cap;
  }
  l->rows[l->n++] = (loaded){h, r->wall};
  hist_once(h, r->once_s, 0);
  return 0;
}

int hist_load(qs_engine *e, mstate *m) {
  if (m->loaded) return QS_OK;
  m->loaded = 1;
  if (!e->store) return QS_OK;
  /* No flush first: every run of this method was accounted after this
   * load, so the rows still waiting in the recorder are in the cache
   * already (reading them back would count them twice). */
  load_ctx l = {.m = m};
  store_filter f = {.method = m->desc->name};
  char msg[512] = "";
  int rc = store_query(e->store, &f, load_row, &l, msg, sizeof msg);
  if (l.oom) rc = QS_ENOMEM;
  /* newest first: replay from the end, keeping the newest window */
  for (size_t i = l.n; i-- > 0;) hist_add(l.rows[i].h, l.rows[i].wall);
  for (size_t i = 0; i < m->n_impls; i++) m->impls[i].gen++;
  free(l.rows);
  if (rc)
    return engine_fail(e, rc, "reading the history of %s: %s",
                       m->desc->name, rc == QS_ENOMEM ? "out of memory" : msg);
  return QS_OK;
}
