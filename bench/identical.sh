#!/usr/bin/env bash
# bench/identical.sh OLD_BUILD NEW_BUILD [OUT_DIR] — runs every method with
# every implementation both builds have (OpenCL ones included) on both real
# stacks with the CLI of each build, and compares the outputs byte for byte
# (quicksilver diff --tolerance 0 on the pixels: the files' metadata may
# differ): a refactoring must not move one bit. `composed` lets the agent
# choose each step's implementation, so two runs of one build may differ in
# the last bits (the rgc step's vector variants): it is compared within
# 1e-6 of the peak and reported as "close". rgc's inputs are made once (by
# the old build) from the mito stack. Prints one line per run and a closing
# "N identical, N close, N differ, N skipped" line; exits 1 when any differ.
set -uo pipefail
old=$(cd "$1" && pwd)/tools/quicksilver
new=$(cd "$2" && pwd)/tools/quicksilver
root=$(cd "$(dirname "$0")/.." && pwd)
out=${3:-$(mktemp -d)}
mkdir -p "$out"
real="$root/tests/data/real"
stacks=("$real/musical_cardiomyoblast_mito_100f.tif" "$real/mssr_donuts_100f.tif")
same=0 close=0 differ=0 skipped=0

impls() { # the implementations of method $2 that build $1 lists as available
  "$1" methods "$2" 2>/dev/null | awk '/^implementations:/{f=1;next} f && /available$/ {print $1}'
}

# rgc's three inputs: gradients magnified x2, the image magnified x1 (as
# eSRRF feeds them), from the first 10 frames of the mito stack
g="$out/rgc_in"
mkdir -p "$g"
"$old" -q run roberts_cross "${stacks[0]}" --frames 0:10 -o "$g/gx.tif" -o "$g/gy.tif" &&
  "$old" -q run shift_magnify "$g/gx.tif" -o "$g/gx2.tif" --magnification-row 4 --magnification-col 4 &&
  "$old" -q run shift_magnify "$g/gy.tif" -o "$g/gy2.tif" --magnification-row 4 --magnification-col 4 &&
  "$old" -q run shift_magnify "${stacks[0]}" --frames 0:10 -o "$g/im.tif" --magnification-row 2 --magnification-col 2 ||
  { echo "identical.sh: cannot make rgc's inputs" >&2; exit 2; }

run_case() { # name method "inputs" "outputs-count" args...
  local name=$1 method=$2 ins=$3 nout=$4
  shift 4
  local common
  common=$(comm -12 <(impls "$old" "$method" | sort) <(impls "$new" "$method" | sort))
  for impl in $common; do
    local ok=1 a b
    for which in old new; do
      local bin=$old
      [[ $which == new ]] && bin=$new
      local outs=()
      for ((k = 0; k < nout; k++)); do outs+=(-o "$out/$name.$impl.$which.$k.tif"); done
      # shellcheck disable=SC2086
      QUICKSILVER_DB=:memory: "$bin" -q run "$method" $ins "${outs[@]}" --impl "$impl" "$@" \
        2>"$out/$name.$impl.$which.err" || ok=0
    done
    if ((!ok)); then
      echo "skipped  $name $impl: $(tail -n1 "$out/$name.$impl.old.err" "$out/$name.$impl.new.err" | tr '\n' ' ')"
      skipped=$((skipped + 1))
      continue
    fi
    local eq=1 tol=0
    [[ $impl == composed ]] && tol=1e-6
    for ((k = 0; k < nout; k++)); do
      a="$out/$name.$impl.old.$k.tif" b="$out/$name.$impl.new.$k.tif"
      "$new" diff "$a" "$b" --tolerance "$tol" >/dev/null 2>&1 || eq=0
    done
    if ((eq)) && [[ $tol != 0 ]]; then
      echo "close    $name $impl (agent-chosen steps)"
      close=$((close + 1))
    elif ((eq)); then
      echo "same     $name $impl"
      same=$((same + 1))
    else
      echo "DIFFER   $name $impl"
      differ=$((differ + 1))
    fi
  done
}

for s in "${stacks[@]}"; do
  n=$(basename "$s" .tif)
  run_case "sm_$n" shift_magnify "$s" 1 --magnification-row 3 --magnification-col 2 --shift-row 0.3
  run_case "rc_$n" roberts_cross "$s" 2
  run_case "es_$n" esrrf "$s" 1 --magnification 5
  run_case "esvar_$n" esrrf "$s" 1 --magnification 2 --temporal var --frames-per-timepoint 25
  run_case "estac2_$n" esrrf "$s" 1 --magnification 3 --temporal tac2 --radius 2
done
run_case rgc rgc "$g/gx2.tif $g/gy2.tif $g/im.tif" 1 --magnification 2
echo "$same identical, $close close, $differ differ, $skipped skipped"
((differ == 0))
