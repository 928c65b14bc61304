/* outfile.c — write-to-temporary-then-rename output files. */
#include "outfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quicksilver.h"

static void outfile_clear(outfile *o) {
  free(o->path);
  free(o->tmp);
  o->f = NULL;
  o->path = o->tmp = NULL;
}

int outfile_open(outfile *o, const char *path, char *err, size_t err_len) {
  o->f = NULL;
  o->path = o->tmp = NULL;
  size_t n = strlen(path);
  o->path = malloc(n + 1);
  o->tmp = malloc(n + 16);
  if (!o->path || !o->tmp) {
    outfile_clear(o);
    snprintf(err, err_len, "%s: out of memory", path);
    return QS_ENOMEM;
  }
  memcpy(o->path, path, n + 1);
  snprintf(o->tmp, n + 16, "%s.tmp-XXXXXX", path);
  int fd = mkstemp(o->tmp);
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
