/* sources.h — the table of embedded OpenCL sources that cl/embed.py
 * generates at build time (cl_sources.c). Each entry's text has its
 * `#include "math/..."` directives already resolved. Internal to cl/;
 * everyone else goes through cl_source() in clrt.h. */
#ifndef QS_CL_SOURCES_H
#define QS_CL_SOURCES_H

#include <stddef.h>

typedef struct cl_embedded {
  const char *file; /* "rgc.cl", "math/catmull_rom.h" */
  const char *text; /* NUL-terminated */
  size_t len;       /* bytes before the NUL */
} cl_embedded;

/* cl_embedded_count entries, then one of NULLs. */
extern const cl_embedded cl_embedded_table[];
extern const size_t cl_embedded_count;

#endif
