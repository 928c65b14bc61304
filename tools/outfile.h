/* outfile.h — files that appear whole or not at all: everything the CLI
 * writes (TIFF stacks, CSV, JSON, SVG) goes to a temporary name in the
 * destination's directory and is renamed over the destination only once it
 * is complete, so a failed or interrupted run never leaves a half file.
 *
 * Temporary names are "<destination>.qs-tmp-<pid>-XXXXXX". While one is
 * open, SIGINT, SIGTERM and SIGHUP remove it before the signal goes on to
 * whatever handled it before (the default action, or a runtime's handler
 * such as LLVM's, which PoCL loads: it holds these signals before any
 * output is opened); an ignored signal stays ignored. (A program whose own
 * handler lets it live on after such a signal finds its temporary gone:
 * the commit then fails naming the destination, nothing is half written;
 * bench restores the disposition before it writes.) One left by a SIGKILL
 * or a crash is removed by the next outfile_open or outfile_lock of any
 * file in the same directory once its process is gone.
 *
 * Exclusive: a destination is locked (flock on "<destination>.qs-lock",
 * removed when released) from outfile_open to the commit or abort, and a
 * long-lived writer (a stream appending results, an MPI run) holds it
 * with outfile_lock for its whole life; a second writer of the same
 * destination, in another process, is refused with QS_EBUSY before it
 * writes anything. Writing to standard output ("-") is not offered:
 * outputs are files that other runs read back. */
#ifndef QS_OUTFILE_H
#define QS_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

typedef struct outfile {
  FILE *f;
  char *path; /* destination */
  char *tmp;  /* temporary name beside it */
  int slot;   /* signal-cleanup slot + 1; 0: none */
  int lock;   /* the destination's lock (outfile_lock) */
} outfile;

/* Creates the temporary file (mode 0666 less the umask, as fopen would),
 * after removing stale temporaries and lock files of its directory, and
 * takes the destination's lock. Refused before anything is created: a
 * destination that exists and is not a regular file (directory, device,
 * FIFO, socket; symlinks are followed) and "-", with QS_EINVAL; an
 * unwritable directory with QS_EIO; a destination another process is
 * writing with QS_EBUSY. err names path. */
int outfile_open(outfile *o, const char *path, char *err, size_t err_len);

/* Flushes, closes and renames over the destination. On any failure the
 * temporary file is removed and QS_EIO returned with a message naming the
 * destination. *o is emptied either way. */
int outfile_commit(outfile *o, char *err, size_t err_len);

/* Closes and removes the temporary file; *o is emptied. Safe on an emptied
 * or zeroed outfile. */
void outfile_abort(outfile *o);

/* Checks a command's outputs against each other and against its inputs
 * before any work is done, comparing files by device and inode (so "./a",
 * "a", a symlink or a hard link to a are all a) and names that do not exist
 * yet by their directory's device and inode plus the last component:
 *  - an output that is one of the inputs,
 *  - the same output named twice,
 *  - an output that exists and is not a regular file,
 *  - an input that is not a regular file (a FIFO, a device, a directory),
 *    checked without opening it,
 *  - an output whose directory is missing or not writable.
 * QS_EINVAL (or QS_EIO for a missing input or directory) with a message
 * naming the path(s) at fault. Either array may be empty. */
int outfile_check(const char *const *outs, size_t n_out,
                  const char *const *ins, size_t n_in, char *err,
                  size_t err_len);

/* dir as a directory of outputs: made when it does not exist (its parent
 * must), *made then 1 (else 0). QS_EINVAL when it exists and is not a
 * directory, QS_EIO with the system's reason when it cannot be made; a
 * message naming dir. */
int outdir_make(const char *dir, int *made, char *err, size_t err_len);

/* Takes the exclusive lock on destination path for this process (*handle
 * for outfile_unlock), refused with QS_EBUSY and a message naming path
 * when another process holds it; the same process may then outfile_open
 * path (and the stream's tiff_append it) as often as it likes. A path
 * ending in '/' locks a directory's numbered outputs ("DIR/.qs-lock").
 * Sweeps the directory first, as outfile_open does. */
int outfile_lock(const char *path, int *handle, char *err, size_t err_len);

/* Releases a lock outfile_lock took (0: nothing); its file is removed. */
void outfile_unlock(int handle);

/* Removes every temporary and lock file this process has open now, for a
 * path that ends the process without unwinding (MPI_Abort, an MPI error
 * handler). Async-signal-safe; the outfiles stay to be aborted. */
void outfile_remove_all(void);

/* Removes, from the directory of path, every "*.qs-tmp-<pid>-*" file
 * whose process no longer exists and every empty "*.qs-lock" file nobody
 * holds; returns how many were removed. Called by outfile_open and
 * outfile_lock, so a temporary left by a SIGKILL goes at the next write
 * into that directory (by another process: a process sweeps each
 * directory once).
 *
 * Test seam: with QUICKSILVER_TEST_OUTFILE_STOP=1 in the environment,
 * outfile_open stops the process (SIGSTOP) once the temporary file exists,
 * so a test can deliver a signal in the middle of a write. */
size_t outfile_sweep(const char *path);

#endif
