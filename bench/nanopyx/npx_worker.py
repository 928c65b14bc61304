#!/usr/bin/env python3
"""npx_worker.py - runs one NanoPyx method on a raw float32 input, for compare.py.

Runs under the NanoPyx environment (compare.py starts it with that
interpreter and npxenv.child_env()). Two modes:

  once  --run-type RT --out FILE: one call in a fresh process; prints one
        JSON line with the wall seconds, the run type NanoPyx used, the peak
        resident set before and after the call (VmHWM, KiB) and the
        output shape; writes the output (tuple outputs concatenated) to FILE
        as float32.
  serve: loads the input once, then answers stdin lines "run RT" (RT one
        of NanoPyx's run types, or "auto" for its agent) with one JSON line:
        wall seconds around the user-facing call, the run type used, and the
        seconds NanoPyx's engine itself timed for the implementation (so the
        difference is its per-call overhead). "quit" ends.

The method objects are created once per process, as a user's script would;
eSRRF is the user-facing function (new engine objects on every call, as
NanoPyx itself does).
"""

import argparse
import contextlib
import io
import json
import os
import re
import resource
import sys
import time

RUN_TYPES = ["unthreaded", "threaded", "threaded_static", "threaded_dynamic",
             "threaded_guided", "opencl"]


def rss_kb():
    """Peak resident set in KiB of this program alone: VmHWM belongs to the
    address space exec made, while ru_maxrss keeps the parent's peak."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


class Method:
    """A NanoPyx method with quicksilver's parameters; call(rt) returns
    (output arrays, run type used, seconds timed by NanoPyx's engine)."""

    def __init__(self, name, params):
        self.name = name
        self.p = params
        if name == "shift_magnify":
            from nanopyx.core.transform._le_interpolation_catmull_rom import \
                ShiftAndMagnify
            self.obj = ShiftAndMagnify(verbose=False)
        elif name == "roberts_cross":
            from nanopyx.core.transform._le_roberts_cross_gradients import \
                GradientRobertsCross
            self.obj = GradientRobertsCross(verbose=False)
        elif name == "esrrf":
            from nanopyx.methods.esrrf.eSRRF_workflow import eSRRF
            self.fn = eSRRF
        else:
            raise SystemExit(f"npx_worker: unknown method {name}")

    def call(self, x, rt):
        log = io.StringIO()
        with contextlib.redirect_stdout(log):  # eSRRF's report is read here
            return self._call(x, None if rt == "auto" else rt, log)

    def _call(self, x, rt, log):
        import numpy as np
        p = self.p
        if self.name == "shift_magnify":
            out = self.obj.run(x, p["shift_row"], p["shift_col"],
                               p["magnification_row"],
                               p["magnification_col"], run_type=rt)
            return [np.asarray(out)], self.obj._last_runtype, \
                self.obj._last_time
        if self.name == "roberts_cross":
            gc, gr = self.obj.run(x, run_type=rt)
            return [np.asarray(gc), np.asarray(gr)], \
                self.obj._last_runtype, self.obj._last_time
        temporal = {"avg": "AVG", "var": "VAR", "tac2": "TAC2"}
        out = self.fn(x, magnification=int(p["magnification"]),
                      radius=p["radius"], sensitivity=p["sensitivity"],
                      frames_per_timepoint=int(p["frames_per_timepoint"]),
                      temporal_correlation=temporal[p["temporal"]],
                      doIntensityWeighting=bool(p["intensity_weighting"]),
                      macro_pixel_correction=bool(
                          p["macro_pixel_correction"]),
                      _force_run_type=rt)
        # The workflow reports the step's run type and its engine time.
        used, inner = [], 0.0
        for m in re.finditer(r"using (\S+) ran in ([0-9.eE+-]+) seconds",
                             log.getvalue()):
            used.append(m.group(1))
            inner += float(m.group(2))
        return [np.asarray(out)], ",".join(sorted(set(used))) or rt, inner


def load(path, shape):
    import numpy as np
    return np.fromfile(path, dtype="<f4").reshape(shape)


def main():
    # NanoPyx prints notices to stdout (from Python and from C): only this
    # worker's answers may reach the harness there, the rest goes to stderr.
    say = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["once", "serve"])
    ap.add_argument("--method", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--shape", required=True)
    ap.add_argument("--params", required=True, help="JSON object")
    ap.add_argument("--run-type")
    ap.add_argument("--out")
    a = ap.parse_args()
    shape = tuple(int(v) for v in a.shape.split(","))
    x = load(a.input, shape)
    m = Method(a.method, json.loads(a.params))
    if a.mode == "once":
        before = rss_kb()
        t0 = time.perf_counter()
        outs, used, inner = m.call(x, a.run_type)
        sec = time.perf_counter() - t0
        peak = rss_kb()
        import numpy as np
        if a.out:
            np.concatenate([o.astype("<f4").ravel() for o in outs]).tofile(
                a.out)
        say.write(json.dumps({"seconds": sec, "used": used,
                              "engine_seconds": inner,
                              "rss_before_kb": before, "peak_rss_kb": peak,
                              "shapes": [list(o.shape) for o in outs]})
                  + "\n")
        return
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        rt = words[1] if len(words) > 1 else "auto"
        t0 = time.perf_counter()
        try:
            outs, used, inner = m.call(x, rt)
        except Exception as err:  # reported, the harness records it
            say.write(json.dumps({"error": f"{type(err).__name__}: {err}"})
                      + "\n")
            say.flush()
            continue
        sec = time.perf_counter() - t0
        del outs
        say.write(json.dumps({"seconds": sec, "used": used,
                              "engine_seconds": inner}) + "\n")
        say.flush()
    say.write(json.dumps({"peak_rss_kb": rss_kb()}) + "\n")


if __name__ == "__main__":
    main()
