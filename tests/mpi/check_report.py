#!/usr/bin/env python3
"""check_report.py REPORT.json FRAMES FPT INPUTS [RANKS]: checks a
quicksilver-mpi --json report: the ranks' units are disjoint and cover every
unit exactly once, each rank read exactly the pages of its own units (FPT
frames per unit, the last unit possibly shorter, on each of INPUTS inputs;
one frame per unit when the split is within timepoints),
so no rank read another's pages; with RANKS, that many ranks reported.
Prints what is wrong and exits 1."""
import json
import sys


def units_of(ranges):
    out = []
    for part in filter(None, ranges.split(",")):
        if part == "...":
            raise SystemExit("ranges truncated: " + ranges)
        a, _, b = part.partition("-")
        out.extend(range(int(a), int(b or a) + 1))
    return out


def main():
    rep = json.load(open(sys.argv[1]))
    frames, fpt, inputs = (int(x) for x in sys.argv[2:5])
    if rep["split"] == "within":  # the units are frames
        fpt = 1
    units = (frames + fpt - 1) // fpt
    seen = []
    bad = []
    if len(sys.argv) > 5 and rep["ranks"] != int(sys.argv[5]):
        bad.append("ranks %d" % rep["ranks"])
    if rep["units"] != units:
        bad.append("units %d, expected %d" % (rep["units"], units))
    total = 0
    for r in rep["per_rank"]:
        mine = units_of(r["ranges"])
        seen.extend(mine)
        pages = sum(min((u + 1) * fpt, frames) - u * fpt for u in mine)
        if r["pages_read"] != pages * inputs:
            bad.append("rank %d read %d pages for units %s (expected %d)"
                       % (r["rank"], r["pages_read"], r["ranges"],
                          pages * inputs))
        if r["units"] != len(mine):
            bad.append("rank %d: units %d vs ranges %s"
                       % (r["rank"], r["units"], r["ranges"]))
        total += r["pages_read"]
    if sorted(seen) != list(range(units)):
        bad.append("units run: %s" % sorted(seen))
    if total != frames * inputs:
        bad.append("pages read in all: %d of %d" % (total, frames * inputs))
    for b in bad:
        print(b)
    sys.exit(1 if bad else 0)


main()
