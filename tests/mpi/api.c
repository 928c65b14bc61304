/* api.c — qsm_run (outputs gathered in the root's memory) under mpirun:
 * `mpirun -n P api IN.tif` runs esrrf over the communicator with one
 * implementation forced, and rank 0 compares the gathered output with
 * qs_method_run of one engine on the whole stack (bit-identical: split by
 * timepoints), checks that the other ranks received nothing, that the
 * report covers every rank, and that a bad parameter fails on every rank
 * with the same status. TAP on rank 0's stdout. */
#include <stdio.h>
#include <string.h>

#include "quicksilver_mpi.h"
#include "tiff.h"

static int n_tests, n_failed, rank;

static void check(int ok, const char *what) {
  n_tests++;
  if (!ok) n_failed++;
  if (rank == 0) printf("%s %d - %s\n", ok ? "ok" : "not ok", n_tests, what);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc != 2) {
    if (rank == 0) fprintf(stderr, "usage: api IN.tif\n");
    MPI_Finalize();
    return 2;
  }
  const char *inputs[] = {argv[1]};
  qs_param p[] = {{.name = "magnification", .value = 2},
                  {.name = "frames_per_timepoint", .value = 3},
                  {.name = "temporal", .text = "var"}};
  qsm_options o = {.impl = "serial",
                   .engine = {.db_path = ":memory:", .threads = 1,
                              .no_opencl = 1}};
  qs_image out = {0};
  qsm_report rep;
  char err[1024];
  int rc = qsm_run(MPI_COMM_WORLD, "esrrf", inputs, 1, p, 3, &o, &out, 1,
                   &rep, err, sizeof err);
  check(rc == QS_OK, rc ? err : "qsm_run succeeds");
  if (rank == 0) {
    qs_image in = {0}, ref = {0};
    qs_engine *e = NULL;
    qs_engine_options eo = {
        .db_path = ":memory:", .threads = 1, .no_opencl = 1};
    int ok = tiff_read(argv[1], &in, err, sizeof err) == QS_OK &&
             qs_engine_open(&e, &eo) == QS_OK;
    qs_run_request rq = {.inputs = &in,
                         .n_inputs = 1,
                         .params = p,
                         .n_params = 3,
                         .impl = "serial"};
    ok = ok && qs_method_run(e, "esrrf", &rq, &ref, 1, NULL) == QS_OK;
    ok = ok && out.frames == ref.frames && out.rows == ref.rows &&
         out.cols == ref.cols &&
         !memcmp(out.data, ref.data,
                 ref.frames * ref.rows * ref.cols * sizeof(float));
    check(ok, "the root's output is bit-identical to one engine's");
    int ranks_ok = rep.ranks == size && rep.rank != NULL;
    unsigned long long units = 0;
    for (int r = 0; ranks_ok && r < size; r++) units += rep.rank[r].units;
    check(ranks_ok && units == rep.units && rep.units == ref.frames,
          "the report has every rank and every unit once");
    qs_image_free(&in);
    qs_image_free(&ref);
    qs_engine_close(e);
  } else {
    check(out.data == NULL && rep.rank == NULL,
          "other ranks receive no output and no per-rank table");
  }
  qs_image_free(&out);
  qsm_report_free(&rep);

  qs_param bad[] = {{.name = "magnification", .value = 0}};
  rc = qsm_run(MPI_COMM_WORLD, "esrrf", inputs, 1, bad, 1, &o, &out, 1, NULL,
               err, sizeof err);
  int all[2] = {rc, -rc}, agree[2];
  MPI_Allreduce(all, agree, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  check(rc == QS_EPARAM && agree[0] == -agree[1] && out.data == NULL &&
            strstr(err, "magnification") != NULL,
        "a bad parameter: QS_EPARAM on every rank, naming it");
  rc = qsm_run(MPI_COMM_WORLD, "no_such_method", inputs, 1, NULL, 0, &o, &out,
               1, NULL, err, sizeof err);
  check(rc == QS_ENOMETHOD, "an unknown method: QS_ENOMETHOD");
  if (rank == 0) printf("1..%d\n", n_tests);
  int failed = n_failed, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any != 0;
}
