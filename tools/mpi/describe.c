/* describe.c — quicksilver-mpi's input axes and output metadata (see
 * describe.h). */
#include "describe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "outfile.h"
#include "provenance.h"

/* Bytes of one rank's implementation list in the gather (qsm_rank.impl). */
#define IMPL_BYTES 96

int qsm_axes_check(const char *path, const tiff_meta *m, char *err,
                   size_t len) {
  if (m->channels <= 1 && (m->slices <= 1 || m->frames <= 1)) return QS_OK;
  snprintf(err, len,
           "%s has %zu channel%s x %zu slice%s (Z) x %zu frame%s (T); "
           "quicksilver-mpi runs on one sequence of frames (one channel, "
           "slices or frames): split the stack first (quicksilver esrrf runs "
           "each channel apart)",
           path, m->channels, m->channels == 1 ? "" : "s", m->slices,
           m->slices == 1 ? "" : "s", m->frames, m->frames == 1 ? "" : "s");
  return QS_ESHAPE;
}

/* The provenance line of the run into out; with `each`, the per-rank
 * implementations when they differ. QS_EINVAL when it does not fit. */
static int provenance(const qs_method_desc *d, const double *values,
                      const char *const *inputs, size_t n_in,
                      const char *const *impls, int ranks, const char *split,
                      int each, char *out, size_t len) {
  char set[256];
  prov_impl_set(impls, (size_t)ranks, set, sizeof set);
  cJSON *j = prov_new(d, values, set, n_in ? inputs[0] : NULL);
  if (!j) return QS_ENOMEM;
  cJSON_ReplaceItemInObject(j, "tool", cJSON_CreateString("quicksilver-mpi"));
  prov_inputs(j, inputs, n_in);
  cJSON_AddNumberToObject(j, "ranks", ranks);
  cJSON_AddStringToObject(j, "split", split);
  if (each) prov_impl_each(j, "impl_per_rank", impls, (size_t)ranks);
  return prov_text(j, out, len);
}

int qsm_describe(MPI_Comm comm, int root, const qs_method_desc *d,
                 const char *const *inputs, size_t n_in,
                 const qs_param *params, size_t n_params, const char *impl,
                 const char *split, size_t n_out, const size_t *rows,
                 const size_t *cols, size_t frames, tiff_meta *meta, char *err,
                 size_t len) {
  int rank, size;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  char mine[IMPL_BYTES] = "";
  snprintf(mine, sizeof mine, "%s", impl ? impl : "");
  char *all = rank == root ? calloc((size_t)size, IMPL_BYTES) : NULL;
  const char **impls =
      rank == root ? calloc((size_t)size, sizeof *impls) : NULL;
  if (rank == root && (!all || !impls)) { /* cannot receive the gather */
    outfile_remove_all();
    MPI_Abort(comm, 1);
  }
  MPI_Gather(mine, IMPL_BYTES, MPI_CHAR, all, IMPL_BYTES, MPI_CHAR, root,
             comm);
  if (rank != root) return QS_OK;
  int rc = QS_OK;
  tiff_info *info = calloc(n_in ? n_in : 1, sizeof *info);
  double values[QS_MAX_PARAMS];
  char prov[TIFF_PROV_MAX];
  if (!info) {
    snprintf(err, len, "describing the outputs: out of memory");
    rc = QS_ENOMEM;
  }
  for (int r = 0; !rc && r < size; r++) {
    all[(size_t)r * IMPL_BYTES + IMPL_BYTES - 1] = 0;
    impls[r] = all + (size_t)r * IMPL_BYTES;
  }
  for (size_t k = 0; !rc && k < n_in; k++)
    rc = tiff_info_of(inputs[k], &info[k], err, len);
  if (!rc)
    rc = qs_params_resolve(d->params, d->n_params, params, n_params, values,
                           err, len);
  if (!rc) {
    rc = provenance(d, values, inputs, n_in, impls, size, split, 1, prov,
                    sizeof prov);
    if (rc == QS_EINVAL) /* too many ranks to list: the set alone */
      rc = provenance(d, values, inputs, n_in, impls, size, split, 0, prov,
                      sizeof prov);
    if (rc)
      snprintf(err, len, "describing the outputs: %s", qs_status_message(rc));
  }
  for (size_t k = 0; !rc && k < n_out; k++) {
    tiff_meta_plain(&meta[k], frames);
    tiff_meta_scaled(&meta[k], info, n_in, rows[k], cols[k]);
    snprintf(meta[k].provenance, sizeof meta[k].provenance, "%s", prov);
  }
  free(info);
  free(impls);
  free(all);
  return rc;
}
