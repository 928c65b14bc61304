/* outfile.c — write-to-temporary-then-rename output files, the checks that
 * keep an output from landing on an input or on something that is not a
 * file, and the cleanup of temporaries after signals and crashes. */
#include "outfile.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quicksilver.h"

#define TMP_TAG ".qs-tmp-"

/* ------------------------------------------------- signal-time cleanup */

/* Temporaries open right now, for the signal handler: fixed storage (the
 * handler may only call async-signal-safe functions: unlink, sigaction,
 * raise). A slot's path is complete before its flag is raised. */
#define LIVE_MAX 16
static char live_path[LIVE_MAX][PATH_MAX];
static volatile sig_atomic_t live_on[LIVE_MAX];
static pthread_mutex_t live_mu = PTHREAD_MUTEX_INITIALIZER;
static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP};

static void on_fatal_signal(int sig) {
  int saved = errno;
  for (int i = 0; i < LIVE_MAX; i++)
    if (live_on[i]) unlink(live_path[i]);
  /* Die of the same signal, so the caller sees the usual status. */
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, NULL);
  raise(sig);
  errno = saved;
}

/* Installs the handler where the disposition is still the default: a
 * program that ignores or handles a signal itself keeps doing so. */
static void cleanup_install(void) {
  for (size_t i = 0; i < sizeof cleanup_signals / sizeof *cleanup_signals;
       i++) {
    struct sigaction old, sa;
    if (sigaction(cleanup_signals[i], NULL, &old) != 0) continue;
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) continue;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(cleanup_signals[i], &sa, NULL);
  }
}

/* A slot + 1 holding tmp, or 0 when every slot is taken (that file is then
 * only swept after the fact). */
static int cleanup_add(const char *tmp) {
  if (strlen(tmp) >= PATH_MAX) return 0;
  pthread_mutex_lock(&live_mu);
  int slot = 0;
  for (int i = 0; i < LIVE_MAX && !slot; i++)
    if (!live_on[i]) {
      strcpy(live_path[i], tmp);
      atomic_signal_fence(memory_order_seq_cst);
      live_on[i] = 1;
      slot = i + 1;
    }
  pthread_mutex_unlock(&live_mu);
  if (slot) cleanup_install();
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

size_t outfile_sweep(const char *path) {
  char *dir, *leaf;
  if (split_path(path, &dir, &leaf)) return 0;
  size_t removed = 0, ln = strlen(leaf), tn = strlen(TMP_TAG);
  DIR *d = opendir(dir);
  struct dirent *ent;
  while (d && (ent = readdir(d))) {
    const char *name = ent->d_name;
    if (strncmp(name, leaf, ln) || strncmp(name + ln, TMP_TAG, tn)) continue;
    char *end;
    long pid = strtol(name + ln + tn, &end, 10);
    if (pid <= 0 || *end != '-' || pid == (long)getpid()) continue;
    /* EPERM means alive (another user's): only ESRCH is gone. */
    if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
    size_t n = strlen(dir) + strlen(name) + 2;
    char *full = malloc(n);
    if (!full) break;
    snprintf(full, n, "%s/%s", dir, name);
    struct stat st;
    if (lstat(full, &st) == 0 && S_ISREG(st.st_mode) && unlink(full) == 0)
      removed++;
    free(full);
  }
  if (d) closedir(d);
  free(dir);
  free(leaf);
  return removed;
}

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

/* ------------------------------------------------------------- writing */

static void outfile_clear(outfile *o) {
  cleanup_drop(o->slot);
  free(o->path);
  free(o->tmp);
  o->f = NULL;
  o->path = o->tmp = NULL;
  o->slot = 0;
}

int outfile_open(outfile *o, const char *path, char *err, size_t err_len) {
  o->f = NULL;
  o->path = o->tmp = NULL;
  o->slot = 0;
  ident id;
  int rc = out_ident(path, &id, err, err_len);
  free(id.leaf);
  if (rc) return rc;
  outfile_sweep(path);
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
