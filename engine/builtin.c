/* builtin.c — the registry's static table: every method that ships with
 * quicksilver. Adding a method is one line here plus its file in methods/
 * (whose descriptor methods/methods.h declares). Host programs add their own
 * at run time with method_register(). */
#include <stddef.h>

#include "builtin.h"

#include "methods/methods.h"

const method_desc *const builtin_methods[] = {
    &method_shift_magnify, &method_roberts_cross,
    &method_rgc, &method_esrrf,
    NULL, /* end */
};
