/* common.h — the few macros that let one per-pixel math header compile both
 * as C99/C11 (serial and threaded paths) and as OpenCL C 1.2 (kernels), so
 * the two cannot drift apart.
 *
 * A math header includes this file ("common.h" beside it, or
 * "math/common.h" from a kernel) and writes its functions as
 *
 *   QS_INLINE QS_ACC qs_foo(QS_ACC x, QS_GLOBAL const float *img, int w)
 *
 * using only what both languages share: float, int, unsigned, and the math
 * functions whose names agree in C's <math.h> and OpenCL C's built-ins: fabs,
 * sqrt, exp, log, pow, floor, ceil, fmin, fmax, sin, cos, atan2. In OpenCL
 * these built-ins are overloaded on the argument type; in C they compute in
 * double, which is what QS_ACC is there.
 *
 * QS_ACC is the accumulation type: double in C; float in OpenCL (the
 * reference's GPU math is single precision). A build option
 * "-DQS_ACC=double" switches a kernel to double where the device has fp64.
 * Constants are written QS_C(0.5) so they take the accumulation type in both
 * languages instead of promoting float arithmetic to double in OpenCL. */
#ifndef QS_MATH_COMMON_H
#define QS_MATH_COMMON_H

#if defined(__OPENCL_VERSION__) || defined(__OPENCL_C_VERSION__)

#define QS_OPENCL 1
#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#define QS_INLINE static inline
#define QS_GLOBAL __global
#define QS_CONSTANT __constant
#define QS_LOCAL __local
#ifndef QS_ACC
#define QS_ACC float
#endif

#else /* C */

#include <math.h>
#define QS_OPENCL 0
#define QS_INLINE static inline
#define QS_GLOBAL
#define QS_CONSTANT const
#define QS_LOCAL
#ifndef QS_ACC
#define QS_ACC double
#endif

#endif

/* A constant in the accumulation type. */
#define QS_C(x) ((QS_ACC)(x))

/* Smaller and larger of two values of any arithmetic type; arguments are
 * evaluated twice, so pass plain values. */
#define QS_MIN(a, b) ((a) < (b) ? (a) : (b))
#define QS_MAX(a, b) ((a) > (b) ? (a) : (b))

#endif
