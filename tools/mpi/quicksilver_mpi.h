/*
 * quicksilver_mpi.h — running a quicksilver method over the ranks of an MPI
 * communicator. Built on the public quicksilver.h only: the core library
 * never links MPI.
 *
 * Every rank of the communicator calls qsm_run with the same arguments
 * (collective). Each rank opens its own engine (so each rank's dispatcher
 * chooses its own implementation from its own timings), reads only its own
 * pages of the input files (every rank sees the paths, as on a cluster's
 * shared filesystem; no rank reads the whole stack), and runs the method on
 * them. Outputs are gathered on the root rank's memory (qsm_run), or land
 * in files (qsm_run_files): by default each rank writes its own output
 * frames, as soon as computed, into their pages of the output TIFFs
 * (tools/tiff.h's tiff_stack: the root creates each file at a temporary
 * path with its full size and every page's directory; the layout is fixed
 * by the page count and size, so every page's place is known to every
 * rank; no output frame crosses the network), and once every rank has
 * succeeded the root renames them into place; with options.gather they are
 * gathered in the root's memory and written by it. Either way nothing
 * appears at the output paths if any rank fails (the temporaries are
 * removed), and the files are laid out as one process's tiff_write_meta
 * would write them. The files say what the quicksilver CLI's outputs say
 * (`quicksilver info` reads it back): the input's pixel size scaled to the
 * output (divided by M for eSRRF), the unit, and the provenance line of
 * tools/provenance.h with "tool":"quicksilver-mpi", the ranks, the split,
 * "impl" the set of implementations any rank ran and "impl_per_rank" when
 * the ranks differ (describe.h). An input of several channels, or of
 * slices and frames both, is refused (QS_ESHAPE naming its axes): its
 * pages are not one sequence of frames.
 *
 * Splitting (a "unit" is what one output frame is made from):
 *  - esrrf with temporal avg/var/tac2: whole timepoints (frames_per_timepoint
 *    frames each, the last one possibly shorter). With one implementation
 *    forced (impl) the output is bit-identical to one process running that
 *    implementation, since every timepoint is computed by exactly the same
 *    code on exactly the same frames.
 *  - esrrf with temporal=none, and every other method (shift_magnify,
 *    roberts_cross, rgc, methods whose outputs have a frame per input
 *    frame): single frames.
 *  - esrrf with fewer timepoints than ranks (one timepoint of 10 000 frames
 *    is common): within timepoints. The frames are cut into one contiguous
 *    block per rank, sized by each rank's predicted speed (qs_method_estimate;
 *    equal when no rank has a prediction); each rank folds its RGC maps
 *    (the method with temporal=none) into the library's esrrf_partial, one
 *    per timepoint it touches, and the partials of a timepoint shared by
 *    several ranks merge pairwise in rank order (a binary tree, log2 of
 *    the sharing ranks in steps; Chan's formula for VAR) into its first
 *    rank, which finishes it (macro-pixel correction included). TAC2's
 *    lag-1 product across a block boundary needs no overlap and no
 *    separate exchange: a partial carries its first map and its last
 *    shifted value, and the merge forms the product. Agreement with one
 *    process is to double rounding (1e-6 of the maximum is what the tests
 *    require); a timepoint inside one rank's block is bit-identical.
 *    Blocks are static rather than dispensed: frames dealt from the counter
 *    would leave each rank many non-adjacent runs of a timepoint, each a
 *    full-size partial to move and merge; with one block per rank the
 *    merge moves one partial per rank.
 *
 * Balance: units are handed out in chunks from a shared counter held in an
 * MPI window on the root (MPI_Fetch_and_op, passive target), so a fast rank
 * simply comes back for more. Chunk rule (qsm_chunk_units): a rank starts
 * with the rate its engine predicts for one unit (qs_method_estimate: history
 * or model), or without one takes a first chunk of one unit, which measures
 * it; from then on it takes half of its speed-weighted share of what is
 * left,
 *     n = floor(remaining * my_rate / sum_of_rates / 2), at least 1,
 * where rates (units per busy second, calibration excluded; measured
 * rates replace predicted ones after a rank's first chunk) are published
 * by every rank in the same window, and never more units than fit in
 * max_chunk_bytes of input and output (a rank holds one chunk's input,
 * and its outputs until the gather). Halving (guided self-scheduling
 * weighted by measured speed) keeps the number of dispenser round trips to
 * about 2P ln(U / P) while the last chunks are small, so ranks finish within
 * about one small chunk of each other even when a rate was wrong or a node
 * slows down midway; weighting by rate gives a fast node (a GPU, an idle
 * machine) proportionally larger chunks.
 *
 * Timing stores: unless options.engine.db_path or $QUICKSILVER_DB names one,
 * each host uses its own store file, <cache>/quicksilver/timings-<host>.db
 * (SQLite's locking is unreliable on network filesystems, where cluster
 * home directories usually are; ranks on one host share their host's file
 * as processes do).
 *
 * Failure: a rank whose read, engine or run fails raises a flag in the
 * window (the others stop taking chunks), and every rank then learns the
 * failure in the closing collectives: qsm_run returns the same nonzero
 * status on every rank, with "rank R (host): message" of the lowest
 * failing rank in err. Fault injection for tests: $QUICKSILVER_MPI_FAIL=R
 * makes rank R fail as it starts its work (QS_EFAIL); and
 * $QUICKSILVER_MPI_SLOW=R:S makes rank R sleep S seconds per unit it runs
 * (between timepoints or frames), as a slower or loaded node would.
 *
 * Assumes a homogeneous cluster (reports travel as bytes). The passive
 * target counter needs no action from the root on shared memory and on
 * networks with hardware atomics; elsewhere the MPI library may progress it
 * only when the root enters MPI, which delays other ranks' next chunk by up
 * to one of the root's chunks.
 */
#ifndef QUICKSILVER_MPI_H
#define QUICKSILVER_MPI_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "quicksilver.h"
#include "quicksilver_esrrf.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct qsm_options {
  qs_engine_options engine; /* each rank's engine; db_path NULL: as above */
  const char *impl;      /* as run_request.impl (NULL: each rank's agent) */
  int root;              /* gathers outputs and the report */
  size_t max_chunk_bytes; /* bytes of input and output a chunk may hold
                             (never less than one unit); 0: 256 MiB */
  int gather;            /* qsm_run_files only. 0: each rank writes its
                            output frames into their pages of the output
                            files (a filesystem every rank sees, as for the
                            inputs). Nonzero: the outputs are gathered in
                            the root's memory (sent over MPI) and written
                            by the root. */
} qsm_options;

/* What one rank did. */
typedef struct qsm_rank {
  int rank;
  int status;            /* QS_OK or its failure */
  char host[64];
  char impl[96];         /* implementations it ran, comma-separated */
  char ranges[160];      /* units it ran: "0-3,9,12-13" ("..." if long) */
  int threads;
  uint64_t chunks, units;
  uint64_t pages_read;   /* input pages (frames) read, all inputs */
  uint64_t bytes_read;   /* float32 bytes of those pages */
  uint64_t bytes_sent, bytes_received; /* MPI payload, window ops included */
  uint64_t bytes_written; /* output bytes it wrote into the output files */
  double read_seconds;   /* reading its pages */
  double run_seconds;    /* method runs (report.seconds) */
  double calibration_seconds;
  double busy_seconds;   /* wall time from start to its last chunk done */
  double merge_seconds;  /* within timepoints: merging partials (waits for
                            the partner included) */
  double write_seconds;  /* writing output pages (gathered: the root's
                            tiff_write) */
  char db[160];          /* its timing store */
  char error[256];
} qsm_rank;

typedef struct qsm_report {
  int ranks;
  char split[16];        /* "timepoints", "frames" or "within" */
  uint64_t units;        /* total units (output frames) */
  uint64_t chunks;
  double seconds;        /* wall time of the call on the root */
  double imbalance;      /* max busy / mean busy - 1, over all ranks */
  uint64_t bytes_communicated; /* sum over ranks of bytes sent */
  uint64_t bytes_written;      /* sum over ranks of output bytes written */
  char output[16];       /* "in place", "gathered" (files) or "memory" */
  qsm_rank *rank;        /* [ranks], on the root only (qsm_report_free) */
} qsm_report;

/* Runs `method` on the stacks at inputs[0..n_inputs) (TIFF files, one page
 * per frame) with the given parameters over comm. On the root,
 * outputs[0..n_outputs) receive the whole outputs (free with qs_image_free);
 * elsewhere they stay empty (may be NULL). report (may be NULL) is filled on
 * every rank with the totals, and on the root with every rank's entry.
 * Returns the same status on every rank. */
int qsm_run(MPI_Comm comm, const char *method, const char *const *inputs,
            size_t n_inputs, const qs_param *params, size_t n_params,
            const qsm_options *options, qs_image *outputs, size_t n_outputs,
            qsm_report *report, char *err, size_t err_len);

/* The same, with output k landing in out_paths[k] (float32 TIFF, whole or
 * not at all) for k < n_paths <= the method's outputs: written in place by
 * every rank, or with options.gather by the root (see above). Nothing
 * appears unless every rank succeeded. With several outputs each is
 * renamed into place in turn: a failure of a later rename (a full or
 * vanished directory) can leave the earlier ones in place. */
int qsm_run_files(MPI_Comm comm, const char *method, const char *const *inputs,
                  size_t n_inputs, const qs_param *params, size_t n_params,
                  const qsm_options *options, const char *const *out_paths,
                  size_t n_paths, qsm_report *report, char *err,
                  size_t err_len);

void qsm_report_free(qsm_report *report);

/* The chunk rule above: units to take next given the units still
 * undealt, this rank's rate, the sum of all ranks' rates (ranks without
 * a rate yet counted at the mean of the others), and whether this rank has
 * a rate at all (no: 1, a probe). Never more than remaining. */
uint64_t qsm_chunk_units(uint64_t remaining, double my_rate,
                         double total_rate, int have_rate);

/* The default store path of this host (see above) into buf; "" when no
 * cache directory is known. */
void qsm_default_db(char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
