#!/usr/bin/env python3
"""check_meta.py QS OUT.tif REF.tif REPORT.json [PIXEL]: checks what a
quicksilver-mpi output says about itself, as `quicksilver info --json`
reads it back, against the same output made by one quicksilver process
(REF.tif, the CLI's) and the run's --json report:
  - the axes, pixel size (x and y) and unit are the reference's, and with
    PIXEL the pixel size is that number (the input's divided by M);
  - the provenance is quicksilver-mpi's and names the reference's version,
    method, parameters (every one, resolved), input(s);
  - it names the ranks and split of the report, "impl" is the set of the
    implementations the report's ranks ran (in rank order, each once), and
    "impl_per_rank" lists each rank's own exactly when they differ.
Prints what is wrong and exits 1."""
import json
import subprocess
import sys


def info(qs, path):
    out = subprocess.run([qs, "info", path, "--json"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    qs, out, ref, report = sys.argv[1:5]
    pixel = float(sys.argv[5]) if len(sys.argv) > 5 else None
    got, want, rep = info(qs, out), info(qs, ref), json.load(open(report))
    bad = []
    for k in ("pages", "rows", "cols", "channels", "slices", "frames",
              "order", "pixel_size", "pixel_size_y", "unit"):
        if got.get(k) != want.get(k):
            bad.append(f"{k}: {got.get(k)!r}, one process {want.get(k)!r}")
    if pixel is not None and abs(got.get("pixel_size", 0) - pixel) > 1e-12:
        bad.append(f"pixel size {got.get('pixel_size')!r}, expected {pixel}")
    p, q = got.get("provenance"), want.get("provenance")
    if not isinstance(p, dict) or not isinstance(q, dict):
        raise SystemExit(f"no provenance: {p!r} / {q!r}")
    if p.get("tool") != "quicksilver-mpi":
        bad.append(f"tool {p.get('tool')!r}")
    for k in ("version", "method", "params", "input", "inputs"):
        if p.get(k) != q.get(k):
            bad.append(f"provenance {k}: {p.get(k)!r}, one process "
                       f"{q.get(k)!r}")
    if p.get("ranks") != rep["ranks"] or p.get("split") != rep["split"]:
        bad.append(f"ranks/split {p.get('ranks')}/{p.get('split')}, report "
                   f"{rep['ranks']}/{rep['split']}")
    each = [r["impl"] for r in rep["per_rank"]]
    names = []
    for e in each:
        names += [n for n in e.split(",") if n and n not in names]
    if p.get("impl") != ",".join(names):
        bad.append(f"impl {p.get('impl')!r}, the ranks ran {names}")
    if len(set(each)) > 1 and p.get("impl_per_rank") != each:
        bad.append(f"impl_per_rank {p.get('impl_per_rank')!r}, report {each}")
    if len(set(each)) == 1 and "impl_per_rank" in p:
        bad.append(f"impl_per_rank {p['impl_per_rank']!r} though all agree")
    if bad:
        raise SystemExit(f"{out}: " + "; ".join(bad))


if __name__ == "__main__":
    main()
