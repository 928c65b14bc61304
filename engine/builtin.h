/* builtin.h — the NULL-terminated table of built-in method descriptors. */
#ifndef QS_BUILTIN_H
#define QS_BUILTIN_H

#include "quicksilver.h"

extern const qs_method_desc *const builtin_methods[];

#endif
