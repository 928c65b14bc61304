/* outfile.c — write-to-temporary-then-rename output files, the checks that
 * keep an output from landing on an input or on something that is not a
 * file, and the cleanup of temporaries after signals and crashes. */
#include "outfile.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quicksilver.h"

#define TMP_TAG ".qs-tmp-"
#define LOCK_TAG ".qs-lock"

/* ------------------------------------------------- signal-time cleanup */

/* Temporaries and lock files of this process right now, for the signal
 * handler: fixed storage (the handler may only call async-signal-safe
 * functions: unlink, sigaction, raise). A slot's path is complete before
 * its flag is raised. */
#define LIVE_MAX 32
static char live_path[LIVE_MAX][PATH_MAX];
static volatile sig_atomic_t live_on[LIVE_MAX];
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};
#define N_SIGNALS (sizeof cleanup_signals / sizeof *cleanup_signals)
/* The disposition found when the handler was installed, per signal: the
 * handler hands the signal on to it (a runtime such as LLVM's, loaded with
 * OpenCL, holds these signals before any output is opened). */
static struct sigaction prev_act[N_SIGNALS];

void outfile_remove_all(void) {
  for (int i = 0; i < LIVE_MAX; i++)
    if (live_on[i]) unlink(live_path[i]);
}

static void on_fatal_signal(int sig) {
  int saved = errno;
  outfile_remove_all();
  /* Hand the signal on: to the handler found, or to the default action,
   * so the caller sees the usual status. The signal is blocked while this
   * handler runs, so the raised one is delivered once it returns. */
  struct sigaction next;
  memset(&next, 0, sizeof next);
  next.sa_handler = SIG_DFL;
  sigemptyset(&next.sa_mask);
  for (size_t k = 0; k < N_SIGNALS; k++)
    if (cleanup_signals[k] == sig) next = prev_act[k];
  sigaction(sig, &next, NULL);
  raise(sig);
  errno = saved;
}

/* Installs the handler on each signal unless it is there already or the
 * signal is ignored (a program that ignores a signal keeps doing so);
 * whatever was there is kept to be chained to. Under live_mu. */
static void cleanup_install(void) {
  for (size_t i = 0; i < N_SIGNALS; i++) {
    struct sigaction old, sa;
    if (sigaction(cleanup_signals[i], NULL, &old) != 0) continue;
    if (!(old.sa_flags & SA_SIGINFO) &&
        (old.sa_handler == SIG_IGN || old.sa_handler == on_fatal_signal))
      continue;
    prev_act[i] = old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(cleanup_signals[i], &sa, NULL);
  }
}

/* A slot + 1 holding path, or 0 when every slot is taken (that file is
 * then only swept after the fact). */
static int cleanup_add(const char *path) {
  if (strlen(path) >= PATH_MAX) return 0;
  pthread_mutex_lock(&live_mu);
  int slot = 0;
  for (int i = 0; i < LIVE_MAX && !slot; i++)
    if (!live_on[i]) {
      strcpy(live_path[i], path);
      atomic_signal_fence(memory_order_seq_cst);
      live_on[i] = 1;
      slot = i + 1;
    }
  if (slot) cleanup_install();
  pthread_mutex_unlock(&live_mu);
  return slot;
}

static void cleanup_drop(int slot) {
  if (slot <= 0 || slot > LIVE_MAX) return;
  pthread_mutex_lock(&live_mu);
  live_on[slot - 1] = 0;
  pthread_mutex_unlock(&live_mu);
}

/* ------------------------------------------------------- stale sweeping */

/* dir and leaf of path in newly allocated strings ("." for a bare name). */
static int split_path(const char *path, char **dir, char **leaf) {
  const char *slash = strrchr(path, '/');
  size_t dn = slash ? (size_t)(slash - path) : 1;
  *dir = malloc(dn + 2);
  *leaf = malloc(strlen(path) + 1);
  if (!*dir || !*leaf) {
    free(*dir);
    free(*leaf);
    return -1;
  }
  if (!slash)
    strcpy(*dir, ".");
  else if (dn == 0)
    strcpy(*dir, "/");
  else
    memcpy(*dir, path, dn), (*dir)[dn] = '\0';
  strcpy(*leaf, slash ? slash + 1 : path);
  return 0;
}

/* Whether name is a temporary of a process that is gone. */
static int tmp_stale(const char *name) {
  const char *at = NULL;
  for (const char *p = name; (p = strstr(p, TMP_TAG)); p++)
    at = p;
  if (!at) return 0;
  char *end;
  long pid = strtol(at + strlen(TMP_TAG), &end, 10);
  if (pid <= 0 || *end != '-' || pid == (long)getpid()) return 0;
  /* EPERM means alive (another user's): only ESRCH is gone. */
  if (kill((pid_t)pid, 0) != 0) return errno == ESRCH;
  /* A zombie is gone too (killed, its parent not yet waiting: mpirun's
   * ranks after SIGKILL, in a container whose init does not reap). */
  char stat_path[64], buf[256];
  snprintf(stat_path, sizeof stat_path, "/proc/%ld/stat", pid);
  FILE *f = fopen(stat_path, "r");
  size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
  if (f) fclose(f);
  buf[n] = '\0';
  const char *paren = strrchr(buf, ')'); /* the name may hold spaces */
  return paren && paren[1] == ' ' && paren[2] == 'Z';
}

/* Removes the lock file full when nobody holds it (taken, then unlinked
 * while held: see lock_take). 1 if removed. */
static int lock_sweep(const char *full) {
  int fd = open(full, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  struct stat st, now;
  int gone = 0;
  if (fd < 0) return 0;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0 &&
      flock(fd, LOCK_EX | LOCK_NB) == 0 && stat(full, &now) == 0 &&
      now.st_dev == st.st_dev && now.st_ino == st.st_ino)
    gone = unlink(full) == 0;
  close(fd);
  return gone;
}

/* Directories this process swept already (dev, ino): once is enough, so a
 * stream writing thousands of numbered files does not read its directory
 * thousands of times. Under live_mu. */
#define SWEPT_MAX 16
static struct {
  dev_t dev;
  ino_t ino;
} swept[SWEPT_MAX];
static size_t n_swept;

static int swept_before(const char *dir) {
  struct stat st;
  if (stat(dir, &st) != 0) return 0;
  int seen = 0;
  pthread_mutex_lock(&live_mu);
  for (size_t i = 0; i < n_swept && !seen; i++)
    seen = swept[i].dev == st.st_dev && swept[i].ino == st.st_ino;
  if (!seen && n_swept < SWEPT_MAX)
    swept[n_swept].dev = st.st_dev, swept[n_swept++].ino = st.st_ino;
  pthread_mutex_unlock(&live_mu);
  return seen;
}

size_t outfile_sweep(const char *path) {
  char *dir, *leaf;
  if (split_path(path, &dir, &leaf)) return 0;
  size_t removed = 0, ll = strlen(LOCK_TAG);
  DIR *d = swept_before(dir) ? NULL : opendir(dir);
  struct dirent *ent;
  while (d && (ent = readdir(d))) {
    const char *name = ent->d_name;
    size_t nl = strlen(name);
    int is_lock = nl >= ll && !strcmp(name + nl - ll, LOCK_TAG);
    if (!is_lock && !tmp_stale(name)) continue;
    size_t n = strlen(dir) + nl + 2;
    char *full = malloc(n);
    if (!full) break;
    snprintf(full, n, "%s/%s", dir, name);
    struct stat st;
    if (is_lock)
      removed += (size_t)lock_sweep(full);
    else if (lstat(full, &st) == 0 && S_ISREG(st.st_mode) && unlink(full) == 0)
      removed++;
    free(full);
  }
  if (d) closedir(d);
  free(dir);
  free(leaf);
  return removed;
}

/* ------------------------------------------------------------- locking */

/* Locks this process holds: the lock file "<path>.qs-lock" open and
 * flock'ed, counted so that an output locked for a stream's whole life can
 * also be written (outfile_open) by the same process. Under live_mu. */
#define LOCK_MAX 16
typedef struct held {
  int fd, refs, slot;
  dev_t dev;
  ino_t ino;
  char *path; /* the lock file */
} held;
static held locks[LOCK_MAX];

/* The lock-file name of path, newly allocated. */
static char *lock_name(const char *path) {
  size_t n = strlen(path) + sizeof LOCK_TAG;
  char *lp = malloc(n);
  if (lp) snprintf(lp, n, "%s" LOCK_TAG, path);
  return lp;
}

/* Takes path's lock: *h = index + 1. A lock file is unlinked by its holder
 * before it is released, so a taker that finds the name now names another
 * file retries with the new one. */
static int lock_take(const char *path, int *h, char *err, size_t err_len) {
  *h = 0;
  char *lp = lock_name(path);
  if (!lp) return snprintf(err, err_len, "%s: out of memory", path), QS_ENOMEM;
  int rc = QS_EBUSY, raced = 0;
  for (int tries = 0; tries < 16 && rc == QS_EBUSY; tries++) {
    raced = 0;
    int fd = open(lp, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    struct stat st, now;
    if (fd < 0 || fstat(fd, &st) != 0) {
      snprintf(err, err_len, "%s: cannot create its lock %s: %s", path, lp,
               strerror(errno));
      if (fd >= 0) close(fd);
      rc = QS_EIO;
      break;
    }
    pthread_mutex_lock(&live_mu);
    for (int i = 0; i < LOCK_MAX && !*h; i++)
      if (locks[i].refs && locks[i].dev == st.st_dev &&
          locks[i].ino == st.st_ino)
        locks[i].refs++, *h = i + 1;
    pthread_mutex_unlock(&live_mu);
    if (*h) { /* ours already */
      close(fd);
      rc = QS_OK;
      break;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int busy = errno == EWOULDBLOCK;
      snprintf(err, err_len,
               busy ? "%s is being written by another process (it holds %s); "
                      "wait for it to end or choose another output"
                    : "%s: cannot lock %s: %s",
               path, lp, strerror(errno));
      close(fd);
      rc = busy ? QS_EBUSY : QS_EIO;
      break;
    }
    if (stat(lp, &now) != 0 || now.st_dev != st.st_dev ||
        now.st_ino != st.st_ino) {
      close(fd); /* released and removed meanwhile: take the new one */
      raced = 1;
      continue;
    }
    int slot = cleanup_add(lp);
    pthread_mutex_lock(&live_mu);
    for (int i = 0; i < LOCK_MAX && !*h; i++)
      if (!locks[i].refs)
        locks[i] = (held){fd, 1, slot, st.st_dev, st.st_ino, lp}, *h = i + 1;
    pthread_mutex_unlock(&live_mu);
    if (*h) lp = NULL; /* the entry's now */
    if (!*h) {
      cleanup_drop(slot);
      unlink(lp);
      close(fd);
      snprintf(err, err_len, "%s: more than %d outputs locked at once", path,
               LOCK_MAX);
      rc = QS_EINVAL;
      break;
    }
    rc = QS_OK;
  }
  if (raced)
    snprintf(err, err_len, "%s: its lock %s keeps changing", path,
             lp ? lp : "");
  free(lp);
  return rc;
}

static void lock_drop(int h) {
  if (h <= 0 || h > LOCK_MAX) return;
  pthread_mutex_lock(&live_mu);
  held *k = &locks[h - 1];
  if (k->refs > 0 && --k->refs == 0) {
    /* unlinked while held: see lock_take */
    unlink(k->path);
    if (k->slot > 0) live_on[k->slot - 1] = 0;
    close(k->fd);
    free(k->path);
    *k = (held){0};
  }
  pthread_mutex_unlock(&live_mu);
}

int outfile_lock(const char *path, int *handle, char *err, size_t err_len) {
  if (!path || !handle) {
    snprintf(err, err_len, "outfile_lock: no path");
    return QS_EINVAL;
  }
  outfile_sweep(path);
  return lock_take(path, handle, err, err_len);
}

void outfile_unlock(int handle) { lock_drop(handle); }

/* ------------------------------------------------------------ checking */

static const char *kind_of(mode_t m) {
  return S_ISDIR(m)    ? "a directory"
         : S_ISCHR(m)  ? "a character device"
         : S_ISBLK(m)  ? "a block device"
         : S_ISFIFO(m) ? "a FIFO"
         : S_ISSOCK(m) ? "a socket"
                       : "not a regular file";
}

/* What a path names: an existing file (dev, ino), or a new name (the
 * directory's dev and ino plus the last component). */
typedef struct ident {
  dev_t dev;
  ino_t ino;
  int exists;
  char *leaf; /* new names only */
} ident;

/* Fills id for an output path; QS_EINVAL/QS_EIO with a message. */
static int out_ident(const char *path, ident *id, char *err, size_t err_len) {
  struct stat st;
  id->leaf = NULL;
  if (!strcmp(path, "-"))
    return snprintf(err, err_len,
                    "-: writing to standard output is not offered; name a "
                    "file"),
           QS_EINVAL;
  if (!*path)
    return snprintf(err, err_len, "empty output path"), QS_EINVAL;
  char *dir, *leaf;
  if (split_path(path, &dir, &leaf))
    return snprintf(err, err_len, "%s: out of memory", path), QS_ENOMEM;
  int rc = QS_OK;
  struct stat ds;
  if (stat(path, &st) == 0) {
    if (!S_ISREG(st.st_mode))
      rc = QS_EINVAL,
      snprintf(err, err_len,
               "%s is %s; an output must be a regular file or a new name",
               path, kind_of(st.st_mode));
    id->dev = st.st_dev, id->ino = st.st_ino, id->exists = 1;
  } else if (errno != ENOENT) {
    rc = QS_EIO, snprintf(err, err_len, "%s: %s", path, strerror(errno));
  } else if (stat(dir, &ds) != 0 || !S_ISDIR(ds.st_mode)) {
    rc = QS_EIO,
    snprintf(err, err_len, "%s: directory %s does not exist", path, dir);
  } else {
    id->dev = ds.st_dev, id->ino = ds.st_ino, id->exists = 0;
    id->leaf = leaf, leaf = NULL;
  }
  /* The file is replaced by a rename: its directory must be writable. */
  if (!rc && access(dir, W_OK | X_OK) != 0)
    rc = QS_EIO,
    snprintf(err, err_len, "%s: cannot write into directory %s: %s", path,
             dir, strerror(errno));
  free(dir);
  free(leaf);
  return rc;
}

static int same(const ident *a, const ident *b) {
  return a->dev == b->dev && a->ino == b->ino && a->exists == b->exists &&
         (a->exists || !strcmp(a->leaf, b->leaf));
}

int outfile_check(const char *const *outs, size_t n_out,
                  const char *const *ins, size_t n_in, char *err,
                  size_t err_len) {
  int rc = QS_OK;
  ident *in = calloc(n_in + 1, sizeof *in), *out = calloc(n_out + 1,
                                                          sizeof *out);
  if (!in || !out) rc = QS_ENOMEM, snprintf(err, err_len, "out of memory");
  for (size_t i = 0; !rc && i < n_in; i++) {
    struct stat st;
    /* stat, not open: opening a FIFO for reading blocks until a writer
     * comes. */
    if (stat(ins[i], &st) != 0)
      rc = QS_EIO,
      snprintf(err, err_len, "%s: cannot read: %s", ins[i], strerror(errno));
    else if (!S_ISREG(st.st_mode))
      rc = QS_EIO, snprintf(err, err_len,
                            "%s is %s; an input must be a regular file",
                            ins[i], kind_of(st.st_mode));
    in[i].dev = st.st_dev, in[i].ino = st.st_ino, in[i].exists = 1;
  }
  for (size_t k = 0; !rc && k < n_out; k++) {
    rc = out_ident(outs[k], &out[k], err, err_len);
    for (size_t i = 0; !rc && i < n_in; i++)
      if (same(&out[k], &in[i]))
        rc = QS_EINVAL,
        snprintf(err, err_len,
                 "output %s is the input %s (the same file): it would be "
                 "replaced; write the output elsewhere",
                 outs[k], ins[i]);
    for (size_t j = 0; !rc && j < k; j++)
      if (same(&out[k], &out[j]))
        rc = QS_EINVAL,
        snprintf(err, err_len,
                 "outputs %s and %s are the same file: one would overwrite "
                 "the other",
                 outs[j], outs[k]);
  }
  for (size_t k = 0; out && k < n_out; k++) free(out[k].leaf);
  free(in);
  free(out);
  return rc;
}

int outdir_make(const char *dir, int *made, char *err, size_t err_len) {
  struct stat sb;
  *made = 0;
  if (stat(dir, &sb) == 0) {
    if (S_ISDIR(sb.st_mode)) return QS_OK;
    snprintf(err, err_len, "%s exists and is not a directory", dir);
    return QS_EINVAL;
  }
  if (errno != ENOENT || mkdir(dir, 0777) != 0) {
    snprintf(err, err_len, "%s: %s", dir, strerror(errno));
    return QS_EIO;
  }
  *made = 1;
  return QS_OK;
}

/* ------------------------------------------------------------- writing */

static void outfile_clear(outfile *o) {
  cleanup_drop(o->slot);
  lock_drop(o->lock);
  free(o->path);
  free(o->tmp);
  o->f = NULL;
  o->path = o->tmp = NULL;
  o->slot = o->lock = 0;
}

int outfile_open(outfile *o, const char *path, char *err, size_t err_len) {
  o->f = NULL;
  o->path = o->tmp = NULL;
  o->slot = o->lock = 0;
  ident id;
  int rc = out_ident(path, &id, err, err_len);
  free(id.leaf);
  if (rc) return rc;
  outfile_sweep(path);
  /* exclusive while written: another writer of path is refused */
  rc = lock_take(path, &o->lock, err, err_len);
  if (rc) return rc;
  size_t n = strlen(path), tn = n + sizeof TMP_TAG + 32;
  o->path = malloc(n + 1);
  o->tmp = malloc(tn);
  if (!o->path || !o->tmp) {
    outfile_clear(o);
    snprintf(err, err_len, "%s: out of memory", path);
    return QS_ENOMEM;
  }
  memcpy(o->path, path, n + 1);
  snprintf(o->tmp, tn, "%s" TMP_TAG "%ld-XXXXXX", path, (long)getpid());
  /* A signal between mkstemp and the registration leaves the file for
   * the next sweep (the name carries our pid). */
  int fd = mkstemp(o->tmp);
  if (fd >= 0) o->slot = cleanup_add(o->tmp);
  if (fd < 0) {
    snprintf(err, err_len, "%s: cannot create: %s", path, strerror(errno));
    outfile_clear(o);
    return QS_EIO;
  }
  /* mkstemp gives 0600; outputs are ordinary files, so honour the umask. */
  mode_t mask = umask(0);
  umask(mask);
  if (fchmod(fd, 0666 & ~mask) != 0 || !(o->f = fdopen(fd, "wb"))) {
    snprintf(err, err_len, "%s: cannot create: %s", path, strerror(errno));
    close(fd);
    unlink(o->tmp);
    outfile_clear(o);
    return QS_EIO;
  }
  const char *stop = getenv("QUICKSILVER_TEST_OUTFILE_STOP");
  if (stop && !strcmp(stop, "1")) raise(SIGSTOP);
  return QS_OK;
}

int outfile_commit(outfile *o, char *err, size_t err_len) {
  int bad = ferror(o->f) != 0;
  int saved = bad ? EIO : 0;
  if (fflush(o->f) != 0 && !bad) bad = 1, saved = errno;
  if (fclose(o->f) != 0 && !bad) bad = 1, saved = errno;
  o->f = NULL;
  if (!bad && rename(o->tmp, o->path) != 0) bad = 1, saved = errno;
  if (bad) {
    snprintf(err, err_len, "%s: cannot write: %s", o->path, strerror(saved));
    unlink(o->tmp);
  }
  outfile_clear(o);
  return bad ? QS_EIO : QS_OK;
}

void outfile_abort(outfile *o) {
  if (o->f) fclose(o->f);
  if (o->tmp) unlink(o->tmp);
  outfile_clear(o);
}
