#!/usr/bin/env bash
# test_mpi.sh QS_MPI QS TIFFCMP MPIRUN CHECK_REPORT — quicksilver-mpi over 1, 2
# and 3 ranks on loopback against one quicksilver process (TAP on stdout).
#
# Split by timepoints or by frames with one implementation forced, the
# output's pixels must be bit-identical (tiffcmp ... bits: the CLI's file
# also names how it was made) to the single process's; each rank must have
# read exactly the pages of its own units (the report's per-rank page counts, checked by
# check_report.py); a rank forced to fail must give a clear message from
# rank 0, a non-zero exit and no file. Every output says what the CLI's
# says (check_meta.py: axes, pixel size / M, provenance) and which ranks
# ran which implementations; a stack of several channels is refused.
set -uo pipefail
QSM=$1 QS=$2 CMP=$3 MPIRUN=$4 CHECK=$5
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
export QUICKSILVER_DB=:memory: QUICKSILVER_NO_OPENCL=1
# Under the sanitizer build: Open MPI keeps allocations past MPI_Finalize,
# in components it loads itself; full stacks let the suppressions (any
# frame in Open MPI's libraries) find them, and leave quicksilver's own
# allocations reported.
here=$(cd "$(dirname "$0")" && pwd)
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0"
export LSAN_OPTIONS="suppressions=$here/lsan.supp:print_suppressions=0"
unset QUICKSILVER_MPI_FAIL
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cd "$dir" || exit 1

n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
  n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"
  [[ -n "${2:-}" ]] && sed 's/^/# /' <<<"$2"
}
check() { # description, command...
  local d=$1; shift
  local out
  if out=$("$@" 2>&1); then ok "$d"; else not_ok "$d" "$out"; fi
}
mpi() { # ranks, quicksilver-mpi arguments...
  local p=$1; shift
  timeout 300 "$MPIRUN" --oversubscribe -n "$p" "$QSM" "$@" --threads 1
}

"$QS" simulate -o in11.tif --frames 11 --rows 20 --cols 18 -q --seed 3 &&
  "$QS" simulate -o in2.tif --frames 2 --rows 16 --cols 16 -q --seed 4 &&
  "$QS" simulate -o in200.tif --frames 200 --rows 12 --cols 10 -q --seed 5 || {
  echo "Bail out! cannot simulate inputs"
  exit 1
}

# esrrf, split by timepoints (temporal avg/var/tac2 with at least as many
# timepoints as ranks), within timepoints (fewer), or by frames (none).
# Split by timepoints or frames the output must be bit-identical; within
# timepoints (partials merged) within 1e-6 of the maximum.
# name | input frames | frames_per_timepoint | ranks | quicksilver flags
cases=(
  "avg-fpt3|11|3|1 2 3|--temporal avg --frames-per-timepoint 3"
  "var-fpt4|11|4|1 2 3|--temporal var --frames-per-timepoint 4"
  "tac2-last2|11|3|1 2 3 5|--temporal tac2 --frames-per-timepoint 3"
  "avg-one-timepoint|11|11|1 2 3|--temporal avg"
  "var-one-timepoint|11|11|2 3|--temporal var"
  "tac2-one-timepoint|11|11|2 3|--temporal tac2"
  "var-fpt4-within|11|4|5|--temporal var --frames-per-timepoint 4"
  "none|11|1|1 2 3|--temporal none"
  "none-2-frames|2|1|1 2 3|--temporal none --input2"
  "tac2-2-frames|2|2|1 2 3|--temporal tac2 --input2"
  "avg-2-frames|2|2|3|--temporal avg --input2"
  "tac2-long|200|0|3|--temporal tac2 --input200 --chunk-bytes 5000"
  "var-long-fpt70|200|70|2 3 4|--temporal var --frames-per-timepoint 70 \
--input200 --chunk-bytes 5000"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name frames fpt ranks flags <<<"$c"
  input=in11.tif
  if [[ $flags == *--input2\ * || $flags == *--input2 ]]; then
    input=in2.tif; flags=${flags/--input2/}
  fi
  if [[ $flags == *--input200* ]]; then
    input=in200.tif; flags=${flags/--input200/}
  fi
  one=${flags/--chunk-bytes 5000/}
  # shellcheck disable=SC2086
  "$QS" esrrf $input -o ref-$name.tif --magnification 2 $one --impl serial \
    --threads 1 -q || { not_ok "reference $name"; continue; }
  for p in $ranks; do
    # shellcheck disable=SC2086
    if out=$(mpi $p esrrf $input -o out-$name-$p.tif --magnification 2 $flags \
      --impl serial --json 2>&1 >rep-$name-$p.json); then
      split=$(python3 -c "import json; print(json.load(open('rep-$name-$p.json'))['split'])")
      if [[ $split == within ]]; then
        check "esrrf $name over $p ranks (within timepoints) agrees to 1e-6" \
          "$CMP" ref-$name.tif out-$name-$p.tif 1e-6
      else
        check "esrrf $name over $p ranks (by $split) is bit-identical" \
          "$CMP" ref-$name.tif out-$name-$p.tif bits
      fi
      check "esrrf $name over $p ranks: each rank read only its own pages" \
        python3 "$CHECK" rep-$name-$p.json "$frames" "$fpt" 1 $p
      check "esrrf $name over $p ranks: pixel size 0.1/2, axes, provenance" \
        python3 "$here/check_meta.py" "$QS" out-$name-$p.tif ref-$name.tif \
        rep-$name-$p.json 0.05
    else
      not_ok "esrrf $name over $p ranks runs" "$out"
    fi
  done
done
# The split each case must have taken: by timepoints when T >= ranks,
# within them when fewer.
expect_split() { # name ranks split
  check "esrrf $1 over $2 ranks splits $3" python3 -c \
    "import json,sys; sys.exit(json.load(open('rep-$1-$2.json'))['split'] != '$3')"
}
expect_split avg-fpt3 3 timepoints
expect_split tac2-last2 5 within
expect_split avg-one-timepoint 2 within
expect_split none 3 frames
expect_split var-long-fpt70 4 within
expect_split var-long-fpt70 3 timepoints

# The other methods split by frames: two outputs (roberts_cross), three
# inputs of different sizes (rgc), a resampling (shift_magnify).
"$QS" run roberts_cross in11.tif -o gc.tif -o gr.tif --impl serial -q
"$QS" run shift_magnify gc.tif -o gc4.tif --magnification-row 4 \
  --magnification-col 4 --impl serial -q
"$QS" run shift_magnify gr.tif -o gr4.tif --magnification-row 4 \
  --magnification-col 4 --impl serial -q
"$QS" run shift_magnify in11.tif -o im2.tif --impl serial -q
"$QS" run rgc gc4.tif gr4.tif im2.tif -o rgc.tif --magnification 2 \
  --impl serial -q
for p in 2 3; do
  if mpi $p run roberts_cross in11.tif -o m-gc.tif -o m-gr.tif --impl serial \
    --json >rep-rc.json 2>err.txt; then
    check "roberts_cross over $p ranks: both outputs bit-identical" \
      bash -c "'$CMP' gc.tif m-gc.tif bits && '$CMP' gr.tif m-gr.tif bits"
    check "roberts_cross over $p ranks: each rank read only its own pages" \
      python3 "$CHECK" rep-rc.json 11 1 1 $p
    check "roberts_cross over $p ranks: both outputs described" bash -c \
      "python3 '$here/check_meta.py' '$QS' m-gc.tif gc.tif rep-rc.json 0.1 &&
       python3 '$here/check_meta.py' '$QS' m-gr.tif gr.tif rep-rc.json 0.1"
  else
    not_ok "roberts_cross over $p ranks runs" "$(cat err.txt)"
  fi
  if mpi $p run rgc gc4.tif gr4.tif im2.tif -o m-rgc.tif --magnification 2 \
    --impl serial --json >rep-rgc.json 2>err.txt; then
    check "rgc (3 inputs) over $p ranks is bit-identical" \
      "$CMP" rgc.tif m-rgc.tif bits
    check "rgc over $p ranks: each rank read only its own pages of each input" \
      python3 "$CHECK" rep-rgc.json 11 1 3 $p
    check "rgc over $p ranks: its three inputs and pixel size described" \
      python3 "$here/check_meta.py" "$QS" m-rgc.tif rgc.tif rep-rgc.json
  else
    not_ok "rgc over $p ranks runs" "$(cat err.txt)"
  fi
  check "shift_magnify over $p ranks is bit-identical" bash -c \
    "'$MPIRUN' --oversubscribe -n $p '$QSM' run shift_magnify in11.tif \
     -o m-sm.tif --impl serial --threads 1 -q && '$CMP' im2.tif m-sm.tif bits"
done

# Balance: a rank made slower (QUICKSILVER_MPI_SLOW, 0.1 s a unit) comes
# back to the counter less often and runs fewer of the 200 frames.
if QUICKSILVER_MPI_SLOW=1:0.1 mpi 2 esrrf in200.tif -o slow.tif \
  --magnification 2 --temporal none --impl serial --json >rep-slow.json \
  2>err.txt; then
  check "a slow rank runs fewer units than a fast one, same output" bash -c \
    "python3 -c \"import json,sys; r=json.load(open('rep-slow.json'))['per_rank']; \
sys.exit(not r[0]['units'] > 2 * r[1]['units'])\" && \
     '$QS' esrrf in200.tif -o slow-ref.tif --magnification 2 --temporal none \
       --impl serial -q && '$CMP' slow-ref.tif slow.tif bits"
else
  not_ok "a run with a slow rank" "$(cat err.txt)"
fi

# Outputs: by default every rank writes its own pages of OUT in place (a
# temporary beside OUT, renamed by rank 0 once every rank succeeded); with
# --gather they travel to rank 0, which writes them. Same bytes either way,
# nothing left beside OUT; in place, no output frame crosses MPI (the bytes
# communicated stay below the output's size), gathered they do.
mkdir io
for c in "none|3|esrrf in11.tif --magnification 2 --temporal none" \
  "timepoints|2|esrrf in11.tif --magnification 2 --frames-per-timepoint 3" \
  "within|3|esrrf in200.tif --magnification 2 --temporal tac2 --chunk-bytes 5000"
do
  IFS='|' read -r name p args <<<"$c"
  # shellcheck disable=SC2086
  "$QS" ${args/--chunk-bytes 5000/} -o io-ref.tif --impl serial -q
  size=$(stat -c %s io-ref.tif)
  for mode in "in place" gathered; do
    flag=; [[ $mode == gathered ]] && flag=--gather
    # shellcheck disable=SC2086
    if mpi "$p" $args -o io/out.tif --impl serial $flag --json \
      >rep-io.json 2>err.txt; then
      check "$name over $p ranks, written $mode: same output, nothing beside it" \
        bash -c "'$CMP' io-ref.tif io/out.tif 1e-6 >/dev/null && \
          [[ \$(ls -A io) == out.tif ]]"
      check "$name over $p ranks, written $mode: pixel size and provenance" \
        python3 "$here/check_meta.py" "$QS" io/out.tif io-ref.tif rep-io.json \
        0.05
      check "$name over $p ranks, written $mode: report and bytes" python3 -c "
import json, sys
r = json.load(open('rep-io.json'))
sent = sum(q['bytes_sent'] for q in r['per_rank'])
wrote = [q['bytes_written'] for q in r['per_rank']]
ok = r['output'] == '$mode' and r['bytes_communicated'] == sent
if '$mode' == 'in place':  # every rank writes what it computed
    ok = ok and sum(wrote) >= $size - 8192  # header, description, directories
    # no output frame over MPI; within timepoints the partials still are,
    # and the timepoint's first rank writes it
    ok = ok and (r['split'] == 'within' or r['bytes_communicated'] < $size)
    ok = ok and (r['split'] == 'within' or
                 all(w > 0 for w, q in zip(wrote, r['per_rank']) if q['units']))
    open('comm-in-place', 'w').write(str(r['bytes_communicated']))
else:  # rank 0 writes everything, the others send theirs on top
    ok = ok and wrote[1:] == [0] * (len(wrote) - 1) and wrote[0] >= $size - 8192
    ok = ok and (r['split'] == 'within' or
                 r['bytes_communicated'] > int(open('comm-in-place').read()))
sys.exit(not ok)"
    else
      not_ok "$name over $p ranks, written $mode, runs" "$(cat err.txt)"
    fi
    rm -f io/*
  done
done
for flag in "" --gather; do
  # shellcheck disable=SC2086
  if mpi 3 run roberts_cross in11.tif -o io/gc.tif -o io/gr.tif \
    --impl serial $flag -q 2>err.txt; then
    check "two outputs over 3 ranks ${flag:-in place}: both bit-identical" \
      bash -c "'$CMP' gc.tif io/gc.tif bits && '$CMP' gr.tif io/gr.tif bits"
  else
    not_ok "two outputs over 3 ranks ${flag:-in place} run" "$(cat err.txt)"
  fi
  rm -f io/*
  # shellcheck disable=SC2086
  QUICKSILVER_MPI_FAIL=2 mpi 3 esrrf in11.tif -o io/out.tif \
    --magnification 2 --temporal none $flag -q 2>fail.err
  rc=$?
  if ((rc != 0)) && grep -q "rank 2 (.*): fault injected" fail.err &&
    [[ -z "$(ls -A io)" ]]; then
    ok "${flag:-in place}, rank 2 forced to fail: exit $rc, no output, no temporary"
  else
    not_ok "${flag:-in place} with a failing rank" \
      "exit $rc; $(cat fail.err); $(ls -A io)"
  fi
done
# An existing OUT is replaced only on success: a failing run leaves it.
echo old >io/keep.tif
QUICKSILVER_MPI_FAIL=1 mpi 2 esrrf in11.tif -o io/keep.tif \
  --magnification 2 --temporal none -q 2>fail.err
check "a failing run leaves an existing OUT as it was, nothing beside it" \
  bash -c "[[ \$(cat io/keep.tif) == old && \$(ls -A io) == keep.tif ]]"
rm -f io/*

# --chunk-bytes caps a chunk's input: 1 byte means one unit a chunk.
if mpi 2 esrrf in11.tif -o cap.tif --magnification 2 --frames-per-timepoint 2 \
  --impl serial --chunk-bytes 1 --json >rep-cap.json 2>err.txt; then
  check "--chunk-bytes 1: one timepoint a chunk, still bit-identical" bash -c \
    "python3 -c \"import json,sys; r=json.load(open('rep-cap.json')); \
sys.exit(r['chunks'] != 6 or r['units'] != 6)\" && \
     '$QS' esrrf in11.tif -o cap-ref.tif --magnification 2 \
       --frames-per-timepoint 2 --impl serial -q && '$CMP' cap-ref.tif cap.tif bits"
else
  not_ok "--chunk-bytes 1 runs" "$(cat err.txt)"
fi

# Without a forced implementation each rank's engine chooses; the output
# then agrees within the method's tolerance.
if mpi 3 esrrf in11.tif -o auto.tif --magnification 2 --frames-per-timepoint 3 \
  --json >rep-auto.json 2>err.txt; then
  check "esrrf over 3 ranks, each choosing its implementation, within 1e-4" \
    "$CMP" ref-avg-fpt3.tif auto.tif 1e-4
  check "each choosing: the output names what every rank ran" \
    python3 "$here/check_meta.py" "$QS" auto.tif ref-avg-fpt3.tif \
    rep-auto.json 0.05
else
  not_ok "esrrf over 3 ranks with the engine choosing runs" "$(cat err.txt)"
fi

# A rank forced to fail: non-zero exit, rank 0 names the rank and the
# cause, no output file and no temporary file beside it.
mkdir fail
for r in 0 2; do
  QUICKSILVER_MPI_FAIL=$r mpi 3 esrrf in11.tif -o fail/out.tif \
    --magnification 2 --frames-per-timepoint 3 -q >fail.out 2>fail.err
  rc=$?
  if ((rc != 0)) && grep -q "esrrf failed: rank $r (.*): fault injected" \
    fail.err && [[ -z "$(ls -A fail)" ]]; then
    ok "rank $r forced to fail: exit $rc, message from rank 0, no file"
  else
    not_ok "rank $r forced to fail" "exit $rc; $(cat fail.err); $(ls -A fail)"
  fi
done
# The same within timepoints (one timepoint, partials merged).
QUICKSILVER_MPI_FAIL=1 mpi 3 esrrf in11.tif -o fail/out.tif \
  --magnification 2 --temporal tac2 -q >fail.out 2>fail.err
rc=$?
if ((rc != 0)) && grep -q "esrrf failed: rank 1 (.*): fault injected" \
  fail.err && [[ -z "$(ls -A fail)" ]]; then
  ok "within timepoints, rank 1 forced to fail: exit $rc, message, no file"
else
  not_ok "within timepoints, rank 1 forced to fail" "exit $rc; $(cat fail.err)"
fi
# A failure inside the method (tac2 with a 1-frame last timepoint) is the
# engine's message, on every rank count alike.
mpi 2 esrrf in11.tif -o fail/out.tif --temporal tac2 \
  --frames-per-timepoint 5 -q 2>fail.err
rc=$?
if ((rc != 0)) && grep -q "tac2 needs at least 2 frames" fail.err &&
  [[ -z "$(ls -A fail)" ]]; then
  ok "a method failing on one rank: exit $rc, its message, no file"
else
  not_ok "a method failing on one rank" "exit $rc; $(cat fail.err)"
fi
mpi 2 esrrf in11.tif -o fail/out.tif --no-such-flag 2>fail.err
rc=$?
if ((rc == 2)) && grep -q "no-such-flag" fail.err; then
  ok "a usage error exits 2 naming the flag"
else
  not_ok "usage error" "exit $rc; $(cat fail.err)"
fi
mpi 2 esrrf missing.tif -o fail/out.tif 2>fail.err
rc=$?
if ((rc == 1)) && grep -q "missing.tif" fail.err && [[ -z "$(ls -A fail)" ]]
then
  ok "a missing input: exit 1 naming the file"
else
  not_ok "missing input" "exit $rc; $(cat fail.err)"
fi
# A 2-channel ImageJ hyperstack (TCYX, channel fastest): its pages are
# not one sequence of frames; split by frames, the ranks would mix the
# channels. Refused naming the axes, nothing written.
python3 - <<'PY'
import struct
rows, cols, C, T = 12, 10, 2, 4
desc = (b"ImageJ=1.54f\nimages=%d\nchannels=%d\nframes=%d\n"
        b"hyperstack=true\n\0" % (C * T, C, T))
with open("hs.tif", "wb") as f:
    f.write(b"II*\0" + struct.pack("<I", 8))
    off = 8
    for k in range(C * T):
        body = struct.pack("<%df" % (rows * cols), *[100.0 + 10 * (k % C) +
                                                     (i % 7) for i in
                                                     range(rows * cols)])
        tags = [(256, 4, 1, cols), (257, 4, 1, rows), (258, 3, 1, 32),
                (259, 3, 1, 1), (262, 3, 1, 1), (273, 4, 1, 0),
                (277, 3, 1, 1), (278, 4, 1, rows), (279, 4, 1, len(body)),
                (339, 3, 1, 3)]
        if k == 0:
            tags.insert(5, (270, 2, len(desc), 0))
        desc_at = off + 2 + 12 * len(tags) + 4
        data_at = desc_at + (len(desc) if k == 0 else 0)
        nxt = 0 if k == C * T - 1 else data_at + len(body)
        f.write(struct.pack("<H", len(tags)))
        for tag, typ, n, v in tags:
            v = data_at if tag == 273 else desc_at if tag == 270 else v
            f.write(struct.pack("<HHII", tag, typ, n, v) if typ in (2, 4) else
                    struct.pack("<HHIHH", tag, typ, n, v, 0))
        f.write(struct.pack("<I", nxt))
        f.write(desc if k == 0 else b"")
        f.write(body)
        off = nxt
PY
if "$QS" info hs.tif | grep -q "2 channels x 4 frames"; then
  ok "the 2-channel hyperstack reads as 2 channels x 4 frames"
else
  not_ok "the 2-channel hyperstack's axes" "$("$QS" info hs.tif 2>&1)"
fi
mpi 2 esrrf hs.tif -o fail/out.tif --temporal none -q 2>fail.err
rc=$?
if ((rc == 1)) && grep -q "hs.tif has 2 channels x 1 slice (Z) x 4 frames" \
  fail.err && [[ -z "$(ls -A fail)" ]]; then
  ok "a 2-channel stack: refused naming its axes, nothing written"
else
  not_ok "a 2-channel stack" "exit $rc; $(cat fail.err); $(ls -A fail)"
fi

# ------------------------------------------------ hostile: the outputs
# The output guards of every writer: never an input (any spelling), never
# the same output twice; nothing written, the input unchanged.
mkdir guard
cp in11.tif guard/in.tif
ln -s in.tif guard/sym.tif
ln guard/in.tif guard/hard.tif
sum0=$(cksum <guard/in.tif)
for o in guard/in.tif guard/./in.tif guard/sym.tif guard/hard.tif; do
  mpi 2 esrrf guard/in.tif -o "$o" --magnification 2 -q 2>fail.err
  rc=$?
  if ((rc == 2)) && grep -q "is the input" fail.err &&
    [[ $(cksum <guard/in.tif) == "$sum0" ]] &&
    [[ -z "$(ls -A guard | grep -v -x -e in.tif -e sym.tif -e hard.tif)" ]]
  then
    ok "-o $o (the input) refused: exit 2, input unchanged"
  else
    not_ok "-o $o (the input) refused" "exit $rc; $(cat fail.err)"
  fi
done
mpi 2 run roberts_cross in11.tif -o guard/g.tif -o guard/./g.tif -q \
  2>fail.err
rc=$?
if ((rc == 2)) && grep -q "same file" fail.err && [[ ! -e guard/g.tif ]]; then
  ok "the same output twice refused: exit 2, nothing written"
else
  not_ok "the same output twice" "exit $rc; $(cat fail.err)"
fi

# Ranks that would compute different things (another file of the same
# shape on one rank, another parameter): refused before anything is
# written, the message naming the rank.
"$QS" simulate -o other11.tif --frames 11 --rows 20 --cols 18 -q --seed 9
mpmd() { # args of rank 0 ;; args of rank 1
  local a=() b=() seen=0
  for x in "$@"; do
    if [[ $x == ";;" ]]; then seen=1; elif ((seen)); then b+=("$x")
    else a+=("$x"); fi
  done
  timeout 300 "$MPIRUN" --oversubscribe -n 1 "$QSM" "${a[@]}" --threads 1 : \
    -n 1 "$QSM" "${b[@]}" --threads 1
}
mpmd esrrf in11.tif -o guard/m.tif --magnification 2 -q ";;" \
  esrrf other11.tif -o guard/m.tif --magnification 2 -q 2>fail.err
rc=$?
if ((rc == 1)) && grep -q "rank 1 (.*): the pixels of its input" fail.err &&
  [[ ! -e guard/m.tif && -z "$(ls -A guard | grep qs-)" ]]; then
  ok "rank 1 reading another file of the same shape: refused, rank named"
else
  not_ok "ranks reading different files" "exit $rc; $(cat fail.err)"
fi
mpmd esrrf in11.tif -o guard/m.tif --magnification 2 -q ";;" \
  esrrf in11.tif -o guard/m.tif --magnification 2 --radius 2 -q 2>fail.err
rc=$?
if ((rc == 1)) && grep -q "rank 1 (.*): its method, parameters" fail.err &&
  [[ ! -e guard/m.tif ]]; then
  ok "rank 1 given another --radius: refused, rank named, nothing written"
else
  not_ok "ranks given different parameters" "exit $rc; $(cat fail.err)"
fi

# The NaN policy of eSRRF, as one process: a NaN pixel (page 7, row 3,
# column 5 of a 10-page stack) is refused naming the pages of the chunk
# and the pixel; nothing is written.
python3 - <<'PY'
import struct
rows, cols, pages = 12, 10, 10
data = [100.0 + (i % 7) for i in range(rows * cols)]
with open("nan.tif", "wb") as f:
    f.write(b"II*\0" + struct.pack("<I", 8))
    off = 8
    for k in range(pages):
        px = list(data)
        if k == 7:
            px[3 * cols + 5] = float("nan")
        body = struct.pack("<%df" % len(px), *px)
        tags = [(256, 4, 1, cols), (257, 4, 1, rows), (258, 3, 1, 32),
                (259, 3, 1, 1), (262, 3, 1, 1), (273, 4, 1, 0),
                (277, 3, 1, 1), (278, 4, 1, rows), (279, 4, 1, len(body)),
                (339, 3, 1, 3)]
        ifd_size = 2 + 12 * len(tags) + 4
        data_at = off + ifd_size
        nxt = 0 if k == pages - 1 else data_at + len(body)
        f.write(struct.pack("<H", len(tags)))
        for tag, typ, n, v in tags:
            v = data_at if tag == 273 else v
            f.write(struct.pack("<HHII", tag, typ, n, v) if typ == 4 else
                    struct.pack("<HHIHH", tag, typ, n, v, 0))
        f.write(struct.pack("<I", nxt))
        f.write(body)
        off = nxt
PY
mkdir nan
mpi 2 esrrf nan.tif -o nan/o.tif --magnification 2 --temporal none -q \
  2>fail.err
rc=$?
if ((rc == 1)) && grep -q "frame .* has nan at row 3, column 5" fail.err &&
  grep -q "input pages \[" fail.err && [[ -z "$(ls -A nan)" ]]; then
  ok "a NaN pixel: refused with its pages and place named, nothing written"
else
  not_ok "a NaN pixel over MPI" "exit $rc; $(cat fail.err); $(ls -A nan)"
fi

# Signals: a SIGTERM, SIGHUP or SIGINT that reaches the rank holding the
# temporary (rank 0) removes it (and the lock) before that rank dies of it;
# a second job on the same OUT is refused while the first holds it. What
# mpirun does on a signal of its own or a rank's death is Open MPI's
# choice: SIGCONT, then a second later SIGTERM or SIGKILL to the ranks. A
# SIGKILL cannot be answered: the next write into that directory sweeps
# what it left (the dead rank's pid is in the name).
# 800 frames: the job runs about 6 s on a Zen 5 core (400 ended before
# the SIGTERM case had sent its signal there)
"$QS" simulate -o in800.tif --frames 800 --rows 32 --cols 32 -q --seed 6
mkdir sig
slow_job() { # a job that holds sig/o.tif's temporary for seconds ($job:
  # mpirun itself, so that signals reach it, not a wrapper)
  QUICKSILVER_MPI_SLOW=0:0.05 "$MPIRUN" --oversubscribe -n 2 \
    "$QSM" esrrf in800.tif -o sig/o.tif --temporal none --magnification 2 \
    --chunk-bytes 1 --impl serial --threads 1 -q >/dev/null 2>sig.err &
  job=$!
  for _ in $(seq 300); do
    # the job well under way: every rank past its start
    ls sig | grep -q qs-tmp && sleep 1 && return 0
    sleep 0.05
  done
  return 1
}
slow_started() { # what for: slow_job, or a failed test and the job ended
  slow_job && return 0
  not_ok "a slow job for $1 started" "$(cat sig.err)"
  kill "$job" 2>/dev/null
  wait "$job"
  return 1
}
gone() { # waits up to 10 s for sig/ to hold no temporary or lock
  for _ in $(seq 200); do
    [[ -z "$(ls -A sig | grep qs-)" ]] && return 0
    sleep 0.05
  done
  return 1
}
reaped() { # waits for the given pids to be gone or zombies
  for r in "$@"; do
    for _ in $(seq 100); do
      [[ "$(ps -o stat= -p "$r" 2>/dev/null)" == Z* ]] && break
      kill -0 "$r" 2>/dev/null || break
      sleep 0.05
    done
  done
}
for how in TERM HUP INT; do
  slow_started "SIG$how" || continue
  if [[ $how == TERM ]]; then
    mpi 2 esrrf in11.tif -o sig/o.tif --magnification 2 -q 2>fail.err
    rc=$?
    if ((rc == 1)) && grep -q "another process" fail.err; then
      ok "a second job on an output being written is refused"
    else
      not_ok "a second job on the same output" "exit $rc; $(cat fail.err)"
    fi
  fi
  rank0=$(pgrep -P "$job" | head -1)
  kill -"$how" "$rank0"
  wait "$job"
  rc=$?
  if ((rc != 0)) && gone && [[ ! -e sig/o.tif ]]; then
    ok "SIG$how to the writing rank: exit $rc, no temporary, no lock left"
  else
    not_ok "SIG$how to the writing rank: nothing left" \
      "exit $rc; $(ls -A sig); $(ps -eo pid,ppid,stat,args | grep '[q]uicksilver-mpi')"
  fi
  rm -f sig/*
done
for how in TERM INT rank; do
  slow_started "$how" || continue
  ranks=$(pgrep -P "$job")
  # shellcheck disable=SC2086
  if [[ $how == rank ]]; then kill -KILL $(tail -1 <<<"$ranks")
  else kill -"$how" "$job"; fi
  wait "$job"
  rc=$?
  # shellcheck disable=SC2086
  reaped $ranks
  mpi 2 esrrf in11.tif -o sig/p.tif --magnification 2 -q 2>fail.err
  if ((rc != 0)) && [[ ! -e sig/o.tif && -e sig/p.tif &&
    -z "$(ls -A sig | grep qs-)" ]]; then
    label="SIG$how to mpirun"
    [[ $how == rank ]] && label="a rank SIGKILLed"
    ok "$label: exit $rc; after the next write in the directory nothing is left"
  else
    not_ok "$how: nothing left after the next write" \
      "exit $rc; $(ls -A sig); $(cat fail.err)"
  fi
  rm -f sig/*
done

# Timing stores: one file per host by default, --db when given.
host=$(hostname -s 2>/dev/null || hostname)
host=${host%%.*}
# store_db REPORT PATH: every rank's store is PATH
store_db() {
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); \
sys.exit(not all(x['db'] == sys.argv[2] for x in r['per_rank']))" "$1" "$2"
}
if (unset QUICKSILVER_DB; export XDG_CACHE_HOME=$dir/cache
    mpi 2 esrrf in11.tif -o s.tif --magnification 2 --impl serial -q --json \
      >rep-store.json 2>err.txt); then
  check "the default store is the host's own file" \
    store_db rep-store.json "$dir/cache/quicksilver/timings-$host.db"
  check "the host's store file exists" \
    test -s "$dir/cache/quicksilver/timings-$host.db"
else
  not_ok "a run with the default store" "$(cat err.txt)"
fi
if (unset QUICKSILVER_DB
    mpi 2 esrrf in11.tif -o s.tif --magnification 2 --impl serial -q \
      --db "$dir/given.db" --json >rep-db.json 2>err.txt); then
  check "--db names the store of every rank" store_db rep-db.json "$dir/given.db"
else
  not_ok "a run with --db" "$(cat err.txt)"
fi

# Global options before the command, as quicksilver takes them.
if (unset QUICKSILVER_DB
    mpi 2 --db "$dir/before.db" -q --json esrrf in11.tif -o s3.tif \
      --magnification 2 --impl serial >rep-before.json 2>err.txt); then
  check "--db and -q before the command apply" \
    store_db rep-before.json "$dir/before.db"
else
  not_ok "options before the command" "$(cat err.txt)"
fi

echo "1..$n"
exit $((failed > 0))
