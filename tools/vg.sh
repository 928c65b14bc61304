#!/usr/bin/env bash
# tools/vg.sh — runs a command under valgrind's memcheck and fails when any
# process it started reported an error; the `valgrind` test setup of
# tests/meson.build uses it as the wrapper of every test executable.
#
# Why a wrapper and not plain `valgrind --error-exitcode`: Criterion execs a
# new worker per test and ignores the worker's exit status once the result is
# reported, so an error inside a test would pass. Every process therefore
# logs to its own file and the logs are read here. PoCL runs /usr/bin/ld for
# each kernel it builds; the linker is not ours and is left untraced.
#
# Usage: tools/vg.sh COMMAND [ARGS...]
# Environment:
#   VG_ARGS     extra valgrind options, e.g. "--track-origins=yes"
#   VG_LOG_DIR  keep the per-process logs, in VG_LOG_DIR/<command>.<pid>/
#               (default: a temporary directory removed at the end)
# Exit status: the command's, or 1 when any process logged an error.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
supp="$root/tests/valgrind.supp"

if [[ -n "${VG_LOG_DIR:-}" ]]; then
  # One directory per run: meson runs tests in parallel.
  log=$VG_LOG_DIR/$(basename "$1").$$
  mkdir -p "$log"
  keep=1
else
  log=$(mktemp -d "${TMPDIR:-/tmp}/qs-vg.XXXXXX")
  keep=0
fi

# shellcheck disable=SC2206
extra=(${VG_ARGS:-})
valgrind --tool=memcheck \
  --trace-children=yes \
  --trace-children-skip='/usr/bin/ld,*/ld.bfd,*/ld.gold,*-ld' \
  --child-silent-after-fork=yes \
  --leak-check=full --show-leak-kinds=definite,indirect \
  --errors-for-leak-kinds=definite,indirect \
  --num-callers=30 \
  --suppressions="$supp" \
  --log-file="$log/vg.%p.log" \
  "${extra[@]}" "$@"
rc=$?

# Every traced process ends its log with "ERROR SUMMARY: N errors"; leaks of
# the kinds above count as errors there.
bad=()
for f in "$log"/vg.*.log; do
  [[ -e "$f" ]] || continue
  grep -qE 'ERROR SUMMARY: [1-9]' "$f" && bad+=("$f")
done
if ((${#bad[@]})); then
  for f in "${bad[@]}"; do
    echo "==== valgrind: errors in $f" >&2
    cat "$f" >&2
  done
  rc=1
fi
((keep)) || rm -rf "$log"
exit $rc
