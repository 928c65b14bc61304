/* describe.h — what quicksilver-mpi's inputs must be and what its output
 * files say about themselves, as the quicksilver CLI's outputs do
 * (tools/tiff.h's tiff_meta, tools/provenance.h): the pixel size of the
 * input scaled to the output, the axes, and the provenance line that
 * `quicksilver info` reads back:
 *   {"tool":"quicksilver-mpi","version":"0.1.0","method":"esrrf",
 *    "impl":"fused_avx2,serial","params":{...},"input":"a.tif",
 *    "ranks":3,"split":"timepoints",
 *    "impl_per_rank":["fused_avx2","serial","fused_avx2,serial"]}
 * "impl" is the set of implementations that ran on any rank; the
 * per-rank list (each rank's own set, "" for a rank that ran no unit) is
 * there when the ranks differ, and left out when the line would not fit
 * the description (TIFF_PROV_MAX), the set staying. Internal to
 * libquicksilver_mpi. */
#ifndef QSM_DESCRIBE_H
#define QSM_DESCRIBE_H

#include <mpi.h>
#include <stddef.h>

#include "quicksilver.h"
#include "tiff.h"

/* Whether the stack at path, of metadata m, is one sequence of frames:
 * pages are split among the ranks as frames, so a stack of several
 * channels, or of slices and frames both, would mix them. QS_OK, or
 * QS_ESHAPE with a message naming the file and its axes. */
int qsm_axes_check(const char *path, const tiff_meta *m, char *err,
                   size_t len);

/* The output files' metadata. Collective over comm: every rank gives the
 * implementations it ran (impl: comma-separated, "" when none); the root
 * reads the inputs' pixel sizes (their headers only) and fills meta[k]
 * for output k of rows[k] x cols[k] x frames pixels, made by method d
 * with params (as given: resolved here, as the CLI records them) from
 * inputs[0..n_in), split as `split` ("timepoints", "frames", "within").
 * Returns on the root QS_OK or the failure (a parameter or an input that
 * cannot be read again, named in err); QS_OK elsewhere. */
int qsm_describe(MPI_Comm comm, int root, const qs_method_desc *d,
                 const char *const *inputs, size_t n_in,
                 const qs_param *params, size_t n_params, const char *impl,
                 const char *split, size_t n_out, const size_t *rows,
                 const size_t *cols, size_t frames, tiff_meta *meta, char *err,
                 size_t len);

#endif
