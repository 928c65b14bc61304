#!/usr/bin/env bash
# bench/esrrf_ab.sh OLD_BUILD NEW_BUILD — two builds' eSRRF vector paths
# side by side: each round runs bench/esrrf (fused_avx2 and fused_avx512
# interleaved, radius 1.5, AVG) of the old build, then of the new one, on
# the real mito stack at M 5, 2 and 8 and on simulated camera input
# (100 × 64², M 5 and 2); over ROUNDS rounds (default 8) it prints, per
# case, implementation and build, the least and the median of the runs'
# minima, and the ratio of the medians, as a Markdown table. Measured,
# never asserted; the load average is printed before and after.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
old=$(cd "$1" && pwd)/bench/esrrf
new=$(cd "$2" && pwd)/bench/esrrf
rounds=${ROUNDS:-8}
mito=$root/tests/data/real/musical_cardiomyoblast_mito_100f.tif
cases=("100 0 0 9 5 1.5 avg $mito|mito 100×30×45 M 5"
       "100 0 0 9 2 1.5 avg $mito|mito 100×30×45 M 2"
       "100 0 0 5 8 1.5 avg $mito|mito 100×30×45 M 8"
       "100 64 64 5 5 1.5 avg|sim 100×64² M 5"
       "100 64 64 5 2 1.5 avg|sim 100×64² M 2")
impls=(fused_avx2 fused_avx512)
declare -A res
echo "esrrf_ab: $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg), $rounds rounds"
for ((r = 0; r < rounds; r++)); do
  for c in "${cases[@]}"; do
    for b in old new; do
      exe=$old
      [[ $b == new ]] && exe=$new
      out=$("$exe" "$(IFS=,; echo "${impls[*]}")" ${c%|*} 2>&1)
      for i in "${impls[@]}"; do
        m=$(awk -v i="$i" '$1 == "esrrf" && $2 == i { for (k = 1; k < NF; k++) if ($k == "min") print $(k + 1) }' <<<"$out")
        [[ -n $m ]] || { echo "esrrf_ab: no time for $i ($b):" >&2; echo "$out" >&2; exit 1; }
        res[${c#*|},$b,$i]+=" $m"
      done
    done
  done
done
least_median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{a[NR] = $1} END {printf "%.4f %.4f\n", a[1], a[int((NR + 1) / 2)]}'; }
echo "| case | implementation | old min / median s | new min / median s | median old / new |"
echo "|---|---|---|---|---|"
for c in "${cases[@]}"; do
  for i in "${impls[@]}"; do
    read -r a1 a2 < <(least_median "${res[${c#*|},old,$i]}")
    read -r b1 b2 < <(least_median "${res[${c#*|},new,$i]}")
    awk -v c="${c#*|}" -v i="$i" -v a1="$a1" -v a2="$a2" -v b1="$b1" -v b2="$b2" \
      'BEGIN { printf "| %s | %s | %s / %s | %s / %s | %.2f× |\n", c, i, a1, a2, b1, b2, a2 / b2 }'
  done
done
echo "esrrf_ab: done $(date -u +%FT%TZ), load $(cut -d' ' -f1-3 /proc/loadavg)"
