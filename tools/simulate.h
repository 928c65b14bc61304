/* simulate.h — synthetic single-molecule blinking stacks with ground truth.
 *
 * Emitters sit on curved filaments (cubic Bézier curves); each blinks as a
 * two-state Markov chain (off -> on with p_on per frame, on -> off with
 * p_off), started from its stationary distribution. An emitter that is on
 * adds `photons` expected photons spread by a pixel-integrated Gaussian PSF
 * of sigma = 0.21 * wavelength / NA (the usual Gaussian fit to the Airy
 * disc), in pixels of `pixel_size` nm. Each pixel then sees Poisson shot
 * noise on (background + signal), a camera gain, an offset and Gaussian read
 * noise, rounded to whole counts and clipped at 0.
 *
 * Everything random comes from one xoshiro256** stream seeded from `seed`,
 * so a seed gives the same stack and truth on every run. The options are a
 * param_def table, so the CLI derives its flags and checks from it as it
 * does for methods. */
#ifndef QS_SIMULATE_H
#define QS_SIMULATE_H

#include <stddef.h>
#include <stdint.h>

#include "quicksilver.h"

typedef enum sim_field {
  SIM_FRAMES,
  SIM_ROWS,
  SIM_COLS,
  SIM_EMITTERS,
  SIM_FILAMENTS,
  SIM_WAVELENGTH,
  SIM_NA,
  SIM_PIXEL_SIZE,
  SIM_PHOTONS,
  SIM_BACKGROUND,
  SIM_P_ON,
  SIM_P_OFF,
  SIM_GAIN,
  SIM_OFFSET,
  SIM_READ_NOISE,
  SIM_SEED,
  SIM_N
} sim_field;

/* Declared options, indexed by sim_field. */
extern const qs_param_def sim_params[SIM_N];

/* One frame in which one emitter was on. Positions in pixels, (0, 0) the
 * centre of the top-left pixel. */
typedef struct sim_event {
  uint32_t frame, emitter;
  double row, col;
  double photons; /* expected photons emitted in that frame */
} sim_event;

typedef struct sim_truth {
  sim_event *events;
  size_t n, cap;
} sim_truth;

/* Fills *out (allocated here; free with qs_image_free) from the values v
 * (SIM_N of them, as checked by qs_params_resolve against sim_params) and, when
 * truth is non-NULL, the ground truth (free with sim_truth_free). */
int simulate(const double *v, qs_image *out, sim_truth *truth, char *err,
             size_t err_len);

void sim_truth_free(sim_truth *t);

/* Writes the truth as CSV (frame,emitter,row,col,x_nm,y_nm,photons), whole
 * or not at all. pixel_nm converts positions to nanometres. */
int sim_truth_write(const sim_truth *t, double pixel_nm, const char *path,
                    char *err, size_t err_len);

#endif
