/* timer.h — monotonic time and summary statistics; both are public (see
 * the "timing" section of quicksilver.h). Kept for the engine's files. */
#ifndef QS_TIMER_H
#define QS_TIMER_H

#include "quicksilver.h"

#endif
