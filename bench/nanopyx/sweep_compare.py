#!/usr/bin/env python3
"""sweep_compare.py - the parameter sweep's speed goals, side by side in one
run on one machine:

  1. quicksilver's 5 x 5 radius x sensitivity sweep with RSP and FRC on the
     real stack (musical_cardiomyoblast_mito_100f.tif, 100 x 30 x 45, M 5)
     against one eSRRF call on the same stack (bench/sweep: warm-ups, then
     repeats alternating the two; min and median);
  2. the same grid through NanoPyx 2.1.5's run_esrrf_parameter_sweep on the
     same stack (once after one warm-up of its eSRRF: it takes minutes), and
     its QnR map against quicksilver's (the CLI's `sweep --json`);
  3. the same sweep on 100 simulated 256 x 256 frames (bench/sweep sim).

Usage: python3 bench/nanopyx/sweep_compare.py [--repeats 5] [--warmup 3]
       [--skip-nanopyx] [--skip-256] [--out DIR]
Builds quicksilver in release mode in build-compare/ as compare.py does;
writes DIR/sweep.json and prints Markdown. Report `uptime` beside it.
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npxenv  # noqa: E402

RADII = [0.5, 1.0, 1.5, 2.0, 2.5]
SENS = [1, 2, 3, 4, 5]
REAL = os.path.join(npxenv.ROOT, "tests", "data", "real",
                    "musical_cardiomyoblast_mito_100f.tif")


def qs_bench(build, inp, frames, rows, cols, repeats, warmup):
    exe = os.path.join(build, "bench", "sweep")
    args = [exe, inp, str(frames), str(rows), str(cols), str(repeats), "5",
            ",".join(map(str, RADII)), ",".join(map(str, SENS)), str(warmup)]
    out = subprocess.run(args, check=True, capture_output=True, text=True,
                         env=dict(os.environ, QUICKSILVER_DB=":memory:"))
    return json.loads(out.stdout)


def qs_qnr(build):
    exe = os.path.join(build, "tools", "quicksilver")
    out = subprocess.run(
        [exe, "--db", ":memory:", "--json", "sweep", REAL, "--radius",
         ",".join(map(str, RADII)), "--sensitivity",
         ",".join(map(str, SENS))], check=True, capture_output=True,
        text=True)
    pts = json.loads(out.stdout)["points"]
    return [[p["qnr"] for p in pts[s * len(RADII):(s + 1) * len(RADII)]]
            for s in range(len(SENS))]


def nanopyx_sweep():
    import numpy as np
    import tifffile
    from nanopyx.methods.esrrf.parameter_sweep import \
        run_esrrf_parameter_sweep
    x = np.asarray(tifffile.imread(REAL), dtype=np.float32)
    t0 = time.perf_counter()
    qnr = run_esrrf_parameter_sweep(x, magnification=5, sensitivities=SENS,
                                    radii=RADII, return_qnr=True)
    return time.perf_counter() - t0, np.asarray(qnr).tolist()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--skip-nanopyx", action="store_true")
    ap.add_argument("--skip-256", action="store_true")
    ap.add_argument("--build", default=os.path.join(npxenv.ROOT,
                                                    "build-compare"))
    ap.add_argument("--out", default=os.path.join(npxenv.ROOT,
                                                  "build-compare", "nanopyx"))
    args = ap.parse_args()
    npxenv.reexec_in_venv()
    import compare  # its release build (bench/sweep comes with it)
    compare.build(args.build)
    os.makedirs(args.out, exist_ok=True)
    res = {"uptime": os.getloadavg(), "versions": npxenv.nanopyx_versions()}
    res["real"] = qs_bench(args.build, REAL, 100, 0, 0, args.repeats,
                           args.warmup)
    if not args.skip_nanopyx:
        secs, qnr_npx = nanopyx_sweep()
        qnr_qs = qs_qnr(args.build)
        diff = max(abs(a - b) for ra, rb in zip(qnr_qs, qnr_npx)
                   for a, b in zip(ra, rb))
        res["nanopyx"] = {"seconds": secs, "qnr": qnr_npx, "qnr_qs": qnr_qs,
                          "qnr_max_abs_diff": diff,
                          "speedup_vs_qs_median":
                              secs / res["real"]["sweep"]["median"]}
    if not args.skip_256:
        res["sim256"] = qs_bench(args.build, "sim", 100, 256, 256,
                                 max(1, args.repeats // 2),
                                 max(1, args.warmup // 2))
    with open(os.path.join(args.out, "sweep.json"), "w") as f:
        json.dump(res, f, indent=1)
    r = res["real"]
    print("| case | one eSRRF (median) | 5x5 sweep min / median | ratio |")
    print("|---|---|---|---|")
    print(f"| real 100x30x45 M5 | {r['esrrf']['median']:.3f} s "
          f"({r['esrrf']['impl']}) | {r['sweep']['min']:.3f} / "
          f"{r['sweep']['median']:.3f} s | {r['ratio_of_medians']:.1f}x |")
    if "sim256" in res:
        s = res["sim256"]
        print(f"| sim 100x256x256 M5 | {s['esrrf']['median']:.3f} s | "
              f"{s['sweep']['min']:.3f} / {s['sweep']['median']:.3f} s | "
              f"{s['ratio_of_medians']:.1f}x |")
    if "nanopyx" in res:
        n = res["nanopyx"]
        print(f"\nNanoPyx run_esrrf_parameter_sweep, same grid: "
              f"{n['seconds']:.1f} s, {n['speedup_vs_qs_median']:.0f}x "
              f"quicksilver's median; QnR maps differ by at most "
              f"{n['qnr_max_abs_diff']:.3g}")
    print(f"\nload average at the start: {res['uptime']}")


if __name__ == "__main__":
    main()
