/* provenance.h — what made an output: the parameters, the implementation
 * that ran, the library version and the input's name, as one line of JSON
 * that the TIFF writer puts in the description ("quicksilver=...",
 * tiff_meta.provenance) and `quicksilver info` reads back. Every command
 * that writes results (run, esrrf, stream, the sweeps) builds it here, so
 * the fields are named once:
 *   {"tool":"quicksilver","version":"0.1.0","method":"esrrf",
 *    "impl":"fused_avx2","params":{"magnification":5,...},"input":"a.tif"}
 * Callers add their own members (the stream's window, a channel's impl)
 * to the object before prov_text. */
#ifndef QS_PROVENANCE_H
#define QS_PROVENANCE_H

#include <cJSON.h>
#include <stddef.h>

#include "quicksilver.h"

/* A new object for method d with every parameter's resolved value
 * (values[i] for d->params[i]: numbers, true/false, enum names), impl and
 * input (NULL or "": left out; the input's name without its directory).
 * NULL without memory. */
cJSON *prov_new(const qs_method_desc *d, const double *values,
                const char *impl, const char *input);

/* With several inputs (n > 1), an array "inputs" of their names (without
 * directories) in j, beside prov_new's "input" (the first's). */
void prov_inputs(cJSON *j, const char *const *inputs, size_t n);

/* The implementations of several runs of one output (its channels, its
 * MPI ranks): impls[i] is what run i used, one name or a comma-separated
 * list, "" when it ran nothing. prov_impl_set writes the distinct names,
 * in the order first met, comma-separated into out (cut at len);
 * prov_impl_each adds them as an array `key` to j when they are not all
 * the same. */
void prov_impl_set(const char *const *impls, size_t n, char *out, size_t len);
void prov_impl_each(cJSON *j, const char *key, const char *const *impls,
                    size_t n);

/* j as one line into out (cJSON deleted); QS_EINVAL when it does not fit
 * len (out is then ""), QS_ENOMEM when j is NULL. */
int prov_text(cJSON *j, char *out, size_t len);

#endif
