#!/usr/bin/env bash
# run_api.sh MPIRUN API QS — qsm_run over 3 ranks (tests/mpi/api.c) on a
# simulated stack; api.c prints TAP on rank 0.
set -uo pipefail
MPIRUN=$1 API=$2 QS=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export QUICKSILVER_NO_OPENCL=1
here=$(cd "$(dirname "$0")" && pwd)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$QS" simulate -o "$dir/in.tif" --frames 10 --rows 16 --cols 14 --seed 6 -q ||
  { echo "Bail out! cannot simulate"; exit 1; }
timeout 300 "$MPIRUN" --oversubscribe -n 3 "$API" "$dir/in.tif"
