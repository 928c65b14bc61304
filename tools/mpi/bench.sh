#!/usr/bin/env bash
# tools/mpi/bench.sh — the overhead of distributing eSRRF over MPI ranks on
# one machine: `mpirun -n 2 quicksilver-mpi --threads 1` against one
# `quicksilver` process with 2 threads, on the same simulated stack
# (camera background and noise), same implementation, same parameters.
# Wall times of whole commands (reading, running, writing; mpirun's start
# included), WARMUP untimed runs then REPEATS timed ones of each; prints
# min and median and the ratio mpi / single (> 1: distribution costs).
#
# Environment: BUILD (build), FRAMES ROWS COLS (100 256 256), MAG (2),
# FPT (10: timepoints of 10 frames), TEMPORAL (avg), IMPL (fused),
# WARMUP (1), REPEATS (3), RANKS (2), MPI_FLAGS (more quicksilver-mpi
# options, e.g. --gather: the outputs through rank 0 instead of written in
# place by every rank).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build}
F=${FRAMES:-100} R=${ROWS:-256} C=${COLS:-256} M=${MAG:-2}
FPT=${FPT:-10} TEMPORAL=${TEMPORAL:-avg} IMPL=${IMPL:-fused}
WARMUP=${WARMUP:-1} REPEATS=${REPEATS:-3} P=${RANKS:-2}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export QUICKSILVER_DB=$dir/timings.db

"$build/tools/quicksilver" simulate -o "$dir/in.tif" --frames "$F" \
  --rows "$R" --cols "$C" --seed 11 -q
flags=(--magnification "$M" --frames-per-timepoint "$FPT" --temporal
       "$TEMPORAL" --impl "$IMPL" --no-opencl)
single=("$build/tools/quicksilver" esrrf "$dir/in.tif" -o "$dir/one.tif"
        "${flags[@]}" --threads "$P" -q)
mpi=(mpirun --oversubscribe -n "$P" "$build/tools/mpi/quicksilver-mpi" esrrf
     "$dir/in.tif" -o "$dir/mpi.tif" "${flags[@]}" --threads 1 -q
     ${MPI_FLAGS:-})

# times CMD...: WARMUP untimed, REPEATS timed; prints "min median"
times() {
  local t=()
  for ((i = 0; i < WARMUP; i++)); do "$@" >/dev/null 2>&1; done
  for ((i = 0; i < REPEATS; i++)); do
    local a b
    a=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    b=$(date +%s.%N)
    t+=("$(awk "BEGIN {print $b - $a}")")
  done
  printf '%s\n' "${t[@]}" | sort -g |
    awk '{v[NR] = $1} END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
         printf "%.3f %.3f\n", v[1], m}'
}

echo "eSRRF ${F}x${R}x${C} M=$M temporal=$TEMPORAL fpt=$FPT impl=$IMPL ${MPI_FLAGS:-}," \
  "warm-up $WARMUP, repeats $REPEATS; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
read -r s_min s_med < <(times "${single[@]}")
read -r m_min m_med < <(times "${mpi[@]}")
cmp -s "$dir/one.tif" "$dir/mpi.tif" && same=bit-identical || same=DIFFERENT
echo "one process, $P threads:     min $s_min s, median $s_med s"
echo "mpirun -n $P, 1 thread each: min $m_min s, median $m_med s ($same)"
echo "ratio mpi/single: min $(awk "BEGIN {printf \"%.3f\", $m_min / $s_min}")," \
  "median $(awk "BEGIN {printf \"%.3f\", $m_med / $s_med}");" \
  "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
mpirun --oversubscribe -n "$P" "$build/tools/mpi/quicksilver-mpi" esrrf \
  "$dir/in.tif" -o "$dir/mpi.tif" "${flags[@]}" --threads 1 ${MPI_FLAGS:-} 2>&1 |
  sed 's/^/  /'
