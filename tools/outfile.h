/* outfile.h — files that appear whole or not at all: everything the CLI
 * writes (TIFF stacks, CSV, JSON, SVG) goes to a temporary name in the
 * destination's directory and is renamed over the destination only once it
 * is complete, so a failed or interrupted run never leaves a half file. */
#ifndef QS_OUTFILE_H
#define QS_OUTFILE_H

#include <stddef.h>
#include <stdio.h>

typedef struct outfile {
  FILE *f;
  char *path; /* destination */
  char *tmp;  /* temporary name beside it */
} outfile;

/* Creates the temporary file (mode 0666 less the umask, as fopen would).
 * QS_EIO with a message naming path when the directory is not writable. */
int outfile_open(outfile *o, const char *path, char *err, size_t err_len);

/* Flushes, closes and renames over the destination. On any failure the
 * temporary file is removed and QS_EIO returned with a message naming the
 * destination. *o is emptied either way. */
int outfile_commit(outfile *o, char *err, size_t err_len);

/* Closes and removes the temporary file; *o is emptied. Safe on an emptied
 * or zeroed outfile. */
void outfile_abort(outfile *o);

#endif
