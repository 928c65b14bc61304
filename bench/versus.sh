#!/usr/bin/env bash
# bench/versus.sh OLD_BUILD NEW_BUILD [ROUNDS [SIZE FRAMES WINDOW]] — the
# engine's own costs of two builds side by side, alternating which goes
# first, ROUNDS rounds (default 1): bench/dispatch (method_run overhead on
# a warm key) and bench/stream (the live stream against the batch call with
# fused, timepoints of WINDOW frames and a sliding window of WINDOW every
# WINDOW/4, SIZE² frames, default 64 40 20: its wall and CPU lines).
# Prints the load average before and after; read ratios only within a
# round (each pair runs seconds apart). Measured, never asserted.
set -uo pipefail
old=$(cd "$1" && pwd)
new=$(cd "$2" && pwd)
rounds=${3:-1}
size=${4:-64} frames=${5:-40} window=${6:-20}
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
one() { # build label
  local b=$1 l=$2
  echo "== $l dispatch"
  "$b/bench/dispatch" 20000 2>&1 | sed -n 2p
  for cfg in "fused $size $frames $window 0 3" \
             "fused $size $frames $window $((window / 4)) 3"; do
    echo "== $l stream $cfg"
    # shellcheck disable=SC2086
    "$b/bench/stream" $cfg 2>&1 | grep -iE "overhead|ratio|stream/batch" |
      head -3
  done
}
for ((r = 0; r < rounds; r++)); do
  if ((r % 2)); then
    one "$new" new; one "$old" old
  else
    one "$old" old; one "$new" new
  fi
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
