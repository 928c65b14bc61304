/* devlist.h — internals of cl/: the device list kept in the binary cache
 * (devlist.c), so that a process loads the OpenCL runtimes only when it
 * uses a device. Not used outside cl/. */
#ifndef QS_CL_DEVLIST_H
#define QS_CL_DEVLIST_H

#include <stddef.h>
#include <stdint.h>

#include "cl/clrt.h"

/* The key of the list for this process: the ICD vendor files and the
 * libraries they name, the environment the loader and runtimes read, the
 * CPUs this process may use and the GPU device nodes. */
uint64_t devlist_key(void);
/* The list stored under key in dir: 0 with *infos (malloc'd) and *n > 0,
 * or -1 (none, another layout, corrupt) with nothing allocated. */
int devlist_load(const char *dir, uint64_t key, cldev_info **infos,
                 size_t *n);
/* Stores the list (n > 0) under key in dir; a failure only means the
 * next process discovers the devices again. */
void devlist_store(const char *dir, uint64_t key, const cldev_info *infos,
                   size_t n);

#endif
