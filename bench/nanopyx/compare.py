#!/usr/bin/env python3
"""compare.py - quicksilver and NanoPyx side by side on the same machine.

    python3 bench/nanopyx/compare.py [--quick | --goal] [--methods a,b]
                                     [--out DIR] [--list]

For each method and size of the benchmark sweep it runs every NanoPyx run
type (unthreaded, threaded, threaded_static, threaded_dynamic,
threaded_guided, opencl) and NanoPyx's automatic choice, and every available
quicksilver implementation and quicksilver's automatic choice (through the
C driver bench/qs_run.c), and quicksilver's automatic choice through its
Python binding (the same kind of call as NanoPyx's: a Python function on a
numpy array; contender "quicksilver-py auto", when the binding is built), on
the same input, and records:

- time: a warm-up, then repeats, interleaved across contenders and the two
  systems (NanoPyx, quicksilver, NanoPyx, ...) so that drift of a shared
  machine hits both alike; min and median of the wall time of the
  user-facing call;
- accuracy against NanoPyx `unthreaded`: max |diff|, max |diff| / max |ref|,
  Pearson r;
- peak memory: one fresh process per contender running the call once
  (VmHWM of that program; ru_maxrss would inherit this script's peak
  across exec), with the peak before the call;
- NanoPyx's per-call overhead: wall time minus the time its engine measured
  for the implementation, and for its automatic mode the median minus that
  of the run type it chose.

A contender whose single run takes long gets fewer repeats (--budget). The
JSON and a Markdown table are rewritten after every case, so an interrupted
run leaves every finished row. quicksilver is built in release mode in
--build (default <root>/build-compare) unless the driver is there already;
NanoPyx runs in the private environment of npxenv.py.

Inputs are simulated (blinking emitters over a camera background with shot
noise, see simulate()) or a real stack (tests/data/real, read with
tifffile into the same raw float32 file the simulated cases use). --goal
runs only the eSRRF cases the speed goal is stated on: 100x64x64,
20x256x256 and the real stack musical_cardiomyoblast_mito_100f.tif at
magnification 5, radius 1.5, AVG; the ratio that matters is quicksilver's
automatic choice against NanoPyx's fastest run type.
"""

import argparse
import json
import os
import platform
import select
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npxenv  # noqa: E402

NPX_RUN_TYPES = ["unthreaded", "threaded", "threaded_static",
                 "threaded_dynamic", "threaded_guided", "opencl"]

ESRRF_PARAMS = {"magnification": 5, "radius": 1.5, "sensitivity": 1.0,
                "intensity_weighting": True, "frames_per_timepoint": 0,
                "temporal": "avg", "macro_pixel_correction": True}

# A real stack as a case's input: its file name under REAL_DIRS.
REAL_STACK = "musical_cardiomyoblast_mito_100f.tif"
# $QS_REAL_DATA, else the copy in the repository (as make_fixtures.py).
REAL_DIRS = [os.environ.get("QS_REAL_DATA", ""),
             os.path.join(npxenv.ROOT, "tests", "data", "real")]

# An entry is a (frames, rows, cols) shape of simulated input or the name
# of a real stack.
SIZES_INTERP = [(1, 64, 64), (10, 256, 256), (100, 256, 256),
                (10, 1024, 1024)]
SIZES_ESRRF = [(100, 64, 64), (500, 64, 64), (10, 256, 256),
               (20, 256, 256), REAL_STACK, (2, 1024, 1024)]
# --quick: a smoke run in under two minutes on a shared 2-core machine (a
# NanoPyx process spends seconds importing): one small case per method,
# NanoPyx's reference, threaded, OpenCL and automatic run types against
# quicksilver's automatic choice, serial and the Python binding, a short
# time budget per contender.
QUICK_INTERP = [(1, 64, 64)]
QUICK_ESRRF = [(10, 64, 64)]
QUICK_NPX = ["unthreaded", "threaded", "opencl", "auto"]
QUICK_QS = ["serial", "auto"]
QUICK_BUDGET, QUICK_REPEATS = 2.0, 3
# The cases of the eSRRF speed goal (M = 5, radius 1.5, AVG).
GOAL_ESRRF = [(100, 64, 64), (20, 256, 256), REAL_STACK]


def sm_params(m):
    return {"shift_row": 0.0, "shift_col": 0.0, "magnification_row": m,
            "magnification_col": m}


def real_path(name):
    paths = [os.path.join(d, name) for d in REAL_DIRS if d]
    found = [p for p in paths if os.path.isfile(p)]
    if not found:
        raise SystemExit(f"compare: {name} not found in {paths}")
    return found[0]


def read_real(name):
    """The real stack as a float32 (frames, rows, cols) array: the values
    the camera wrote (uint16), as both systems are given them."""
    import numpy as np
    import tifffile
    a = tifffile.imread(real_path(name))
    if a.ndim == 2:
        a = a[None]
    return np.ascontiguousarray(a, dtype=np.float32)


def resolve(entry):
    """(shape, source) of a size entry: source None for simulated input,
    else the real stack's file name."""
    if isinstance(entry, str):
        return tuple(read_real(entry).shape), entry
    return tuple(entry), None


def sweep(quick, methods, goal=False):
    """The cases: (method, shape, params, source), smaller sizes of every
    method before larger ones, so that an interrupted run has covered each
    method. goal: only the eSRRF cases of the speed goal."""
    if goal:
        if "esrrf" not in methods:
            return []
        return [("esrrf", shape, dict(ESRRF_PARAMS), source)
                for shape, source in map(resolve, GOAL_ESRRF)]
    interp = [resolve(e) for e in (QUICK_INTERP if quick else SIZES_INTERP)]
    esrrf = [resolve(e) for e in (QUICK_ESRRF if quick else SIZES_ESRRF)]
    cases = []
    for i in range(max(len(interp), len(esrrf))):
        if "roberts_cross" in methods and i < len(interp):
            cases.append(("roberts_cross", interp[i][0], {}, interp[i][1]))
        if "shift_magnify" in methods and i < len(interp):
            cases += [("shift_magnify", interp[i][0], sm_params(m),
                       interp[i][1]) for m in ((2.0,) if quick else
                                               (2.0, 5.0))]
        if "esrrf" in methods and i < len(esrrf):
            cases.append(("esrrf", esrrf[i][0], dict(ESRRF_PARAMS),
                          esrrf[i][1]))
    return cases


def case_id(method, shape, params, source=None):
    m = params.get("magnification", params.get("magnification_row"))
    tag = f"{method}_{'x'.join(map(str, shape))}"
    if source:
        tag = f"{method}_{os.path.splitext(source)[0]}_" \
              f"{'x'.join(map(str, shape))}"
    return tag + (f"_m{m:g}" if m is not None else "")


def simulate(shape, path, seed=7):
    """Blinking emitters (about one per 50 pixels, sigma 1.5 px, on with
    probability 0.5 per frame) over a background of 100, Poisson noise."""
    import numpy as np
    from scipy.ndimage import gaussian_filter
    f, r, c = shape
    rng = np.random.default_rng(seed)
    k = max(1, r * c // 50)
    ys, xs = rng.integers(0, r, k), rng.integers(0, c, k)
    with open(path, "wb") as out:
        for _ in range(f):
            img = np.zeros((r, c), np.float32)
            on = rng.random(k) < 0.5
            np.add.at(img, (ys[on], xs[on]), 2000.0)
            img = gaussian_filter(img, 1.5)
            rng.poisson(100.0 + img).astype("<f4").tofile(out)


def stats(xs):
    s = sorted(xs)
    n = len(s)
    if not n:
        return None, None
    med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
    return s[0], med


def accuracy(ref_path, got_path, chunk=1 << 24):
    """max |got - ref|, that over max |ref|, Pearson r; float64 sums over
    chunks so gigabyte outputs need no gigabytes of scratch."""
    import numpy as np
    ref = np.memmap(ref_path, dtype="<f4", mode="r")
    got = np.memmap(got_path, dtype="<f4", mode="r")
    if ref.size != got.size:
        return {"error": f"{got.size} values, reference {ref.size}"}
    n = ref.size
    mx = peak = 0.0
    sx = sy = sxx = syy = sxy = 0.0
    nan_mismatch = 0
    for i in range(0, n, chunk):
        a = ref[i:i + chunk].astype(np.float64)
        b = got[i:i + chunk].astype(np.float64)
        bad = np.isnan(a) != np.isnan(b)
        nan_mismatch += int(bad.sum())
        ok = ~(np.isnan(a) | np.isnan(b))
        a, b = a[ok], b[ok]
        if a.size:
            mx = max(mx, float(np.abs(a - b).max()))
            peak = max(peak, float(np.abs(a).max()))
        sx += a.sum()
        sy += b.sum()
        sxx += (a * a).sum()
        syy += (b * b).sum()
        sxy += (a * b).sum()
    cov = sxy - sx * sy / n
    va, vb = sxx - sx * sx / n, syy - sy * sy / n
    r = cov / (va * vb) ** 0.5 if va > 0 and vb > 0 else None
    return {"max_abs": mx, "max_rel": mx / peak if peak else mx,
            "pearson": r, "nan_mismatch": nan_mismatch}


class Server:
    """A contender process answering "run NAME" lines with JSON lines."""

    def __init__(self, argv, env, log):
        self.argv, self.env, self.log = argv, env, log
        self.p = None

    def start(self):
        self.p = subprocess.Popen(self.argv, env=self.env, text=True,
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=self.log,
                                  bufsize=1)

    def ask(self, line, timeout):
        """The JSON answer, or {"error": ...} (then the process is
        restarted, so one hung contender does not stop the others)."""
        if self.p is None or self.p.poll() is not None:
            self.start()
        try:
            self.p.stdin.write(line + "\n")
            self.p.stdin.flush()
            ready, _, _ = select.select([self.p.stdout], [], [], timeout)
            text = self.p.stdout.readline() if ready else ""
        except (BrokenPipeError, OSError) as err:
            text, ready = "", True
            self.log.write(f"compare: {err}\n")
        if not text:
            self.stop(kill=True)
            return {"error": "timed out" if not ready else "process died"}
        try:
            return json.loads(text)
        except ValueError:
            return {"error": f"bad answer {text[:80]!r}"}

    def stop(self, kill=False):
        if self.p is None:
            return None
        last = None
        if not kill and self.p.poll() is None:
            try:
                self.p.stdin.write("quit\n")
                self.p.stdin.flush()
                last = self.p.stdout.readline()
                self.p.wait(timeout=60)
            except (OSError, subprocess.TimeoutExpired):
                kill = True
        if kill and self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        self.p = None
        return last


def _vm_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return None


def py_worker(argv):
    """The Python-binding contender, run as `compare.py --py-worker MODE
    ...` with PYTHONPATH at the build's binding: the input loaded once into
    a numpy array, then each call timed around quicksilver.Engine.run (the
    user-facing call, output arrays included). MODE once: one call, the
    outputs concatenated into --out, one JSON line (seconds, used, peak and
    pre-call VmHWM). MODE serve: "run IMPL" lines (auto: the agent chooses)
    answered with JSON lines, "quit" with the peak."""
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["once", "serve"])
    ap.add_argument("--method")
    ap.add_argument("--input")
    ap.add_argument("--shape")
    ap.add_argument("--params")
    ap.add_argument("--out")
    a = ap.parse_args(argv)
    import numpy as np
    import quicksilver as qs
    shape = tuple(int(v) for v in a.shape.split(","))
    x = np.fromfile(a.input, dtype=np.float32).reshape(shape)
    params = json.loads(a.params)
    eng = qs.Engine()  # QUICKSILVER_DB from the harness's environment
    before = _vm_kb("VmHWM")

    def call(impl):
        t0 = time.perf_counter()
        res = eng.run(a.method, x, impl=None if impl == "auto" else impl,
                      **params)
        return res, time.perf_counter() - t0

    if a.mode == "once":
        res, t = call("auto")
        with open(a.out, "wb") as f:
            for o in res:
                o.tofile(f)
        print(json.dumps({"seconds": t, "used": res.report.impl,
                          "peak_rss_kb": _vm_kb("VmHWM"),
                          "rss_before_kb": before,
                          "shapes": [list(o.shape) for o in res]}))
        eng.close()
        return
    for line in sys.stdin:
        words = line.split()
        if words[:1] == ["run"]:
            try:
                res, t = call(words[1] if len(words) > 1 else "auto")
                print(json.dumps({"seconds": t, "used": res.report.impl}),
                      flush=True)
                del res
            except qs.Error as err:
                print(json.dumps({"error": str(err)}), flush=True)
        elif words[:1] == ["quit"]:
            print(json.dumps({"peak_rss_kb": _vm_kb("VmHWM")}), flush=True)
            break
    eng.close()


class Harness:
    def __init__(self, args):
        self.a = args
        self.out = os.path.abspath(args.out)
        os.makedirs(self.out, exist_ok=True)
        self.tmp = os.path.join(self.out, "tmp")
        os.makedirs(self.tmp, exist_ok=True)
        self.log = open(os.path.join(self.out, "compare.log"), "a")
        self.qs_run = os.path.join(args.build, "bench", "qs_run")
        self.env = npxenv.child_env()
        self.env.pop("QS_NANOPYX_CHILD", None)
        db = os.path.join(self.out, "timings.db")
        for suffix in ("", "-wal", "-shm"):
            if os.path.exists(db + suffix):
                os.remove(db + suffix)
        self.qs_env = dict(self.env, QUICKSILVER_DB=db)
        # The binding built in the same build directory, when it is there;
        # it shares the timing store with the C driver, as two host
        # programs of one user would.
        self.py_path = os.path.join(args.build, "tools", "python")
        self.has_py = os.path.exists(os.path.join(self.py_path, "quicksilver",
                                                  "__init__.py"))
        self.py_env = dict(self.qs_env, PYTHONPATH=self.py_path)
        if not self.has_py:
            print("compare: no Python binding in the build; the "
                  "quicksilver-py contender is left out", file=sys.stderr)
        # NanoPyx's engine starts from its packaged defaults, as
        # quicksilver starts from an empty store.
        shutil.rmtree(os.path.join(self.env["HOME"], ".liquid_engine"),
                      ignore_errors=True)
        self.worker = os.path.join(npxenv.HERE, "npx_worker.py")
        self.results = {"machine": machine(), "versions": versions(),
                        "command": " ".join(["python3"] + sys.argv),
                        "settings": {"warmup": args.warmup,
                                     "repeats": args.repeats,
                                     "budget_seconds": args.budget,
                                     "quick": args.quick},
                        "cases": []}

    # --- the two systems' command lines

    def npx_argv(self, mode, method, inp, shape, params):
        return [sys.executable, self.worker, mode, "--method", method,
                "--input", inp, "--shape", ",".join(map(str, shape)),
                "--params", json.dumps(params)]

    def qs_argv(self, method, inp, shape, params):
        argv = [self.qs_run, "-m", method, "-i",
                f"{inp}:{','.join(map(str, shape))}"]
        for k, v in params.items():
            v = ("true" if v else "false") if isinstance(v, bool) else v
            argv += ["-p", f"{k}={v}"]
        return argv

    def py_argv(self, mode, method, inp, shape, params):
        return [sys.executable, os.path.abspath(__file__), "--py-worker",
                mode, "--method", method, "--input", inp, "--shape",
                ",".join(map(str, shape)), "--params", json.dumps(params)]

    def qs_impls(self, method):
        p = subprocess.run([self.qs_run, "-m", method, "--list"],
                           env=self.qs_env, capture_output=True, text=True)
        if p.returncode:
            self.log.write(p.stderr)
            return []
        return [i["name"] for i in json.loads(p.stdout) if i["available"]]

    # --- one case

    def once(self, sysname, name, method, inp, shape, params, outfile):
        """Fresh process, one call: time, peak memory and the output."""
        if sysname == "nanopyx":
            argv = self.npx_argv("once", method, inp, shape, params) + [
                "--run-type", name, "--out", outfile]
            env = self.env
        elif sysname == "quicksilver-py":
            argv = self.py_argv("once", method, inp, shape, params) + [
                "--out", outfile]
            env = self.py_env
        else:
            argv = self.qs_argv(method, inp, shape, params) + [
                "-I", name, "-w", "0", "-r", "1", "-o", outfile]
            env = self.qs_env
        try:
            p = subprocess.run(argv, env=env, capture_output=True,
                               text=True, timeout=self.a.timeout)
        except subprocess.TimeoutExpired:
            return {"error": "timed out"}
        self.log.write(p.stderr)
        if p.returncode:
            return {"error": (p.stderr.strip().splitlines() or ["failed"])
                    [-1][:200]}
        r = json.loads(p.stdout.strip().splitlines()[-1])
        if sysname == "quicksilver":
            r["seconds"] = r["min"]
            r["used"] = r["impls"][0]
            # the driver writes one file per output; concatenate them as the
            # NanoPyx worker does
            parts = sorted(f for f in os.listdir(self.tmp)
                           if f.startswith(os.path.basename(outfile) + "."))
            with open(outfile, "wb") as dst:
                for f in parts:
                    with open(os.path.join(self.tmp, f), "rb") as src:
                        shutil.copyfileobj(src, dst, 1 << 24)
                    os.remove(os.path.join(self.tmp, f))
        return r

    def run_case(self, method, shape, params, source=None):
        cid = case_id(method, shape, params, source)
        print(f"== {cid}", file=sys.stderr, flush=True)
        inp = os.path.join(self.tmp, "input.f32")
        if source:
            read_real(source).astype("<f4").tofile(inp)
        else:
            simulate(shape, inp)
        a = self.a
        npx = a.npx_run_types.split(",") if a.npx_run_types else \
            NPX_RUN_TYPES + ["auto"]
        qs = [i for i in self.qs_impls(method) + ["auto"]
              if not a.qs_impls or i in a.qs_impls.split(",")]
        contenders = [("nanopyx", rt) for rt in npx]
        contenders += [("quicksilver", i) for i in qs]
        if self.has_py:
            contenders.append(("quicksilver-py", "auto"))
        rows = {c: {"system": c[0], "contender": c[1], "times": [],
                    "used": [], "engine_seconds": []} for c in contenders}
        ref = os.path.join(self.tmp, "ref.f32")
        # 1. fresh processes: memory, output, and a first time
        for c in contenders:
            out = ref if c == ("nanopyx", "unthreaded") else \
                os.path.join(self.tmp, "out")
            r = self.once(c[0], c[1], method, inp, shape, params, out)
            row = rows[c]
            if "error" in r:
                row["error"] = r["error"]
                print(f"   {c[0]} {c[1]}: {r['error']}", file=sys.stderr)
                continue
            row["once_seconds"] = r["seconds"]
            row["once_used"] = r["used"]
            row["once_engine_seconds"] = r.get("engine_seconds")
            row["peak_rss_kb"] = r["peak_rss_kb"]
            row["rss_before_kb"] = r["rss_before_kb"]
            row["shapes"] = r.get("shapes")
            if c != ("nanopyx", "unthreaded"):
                if os.path.exists(ref):
                    row["accuracy"] = accuracy(ref, out)
                os.remove(out)
            print(f"   {c[0]:11} {c[1]:24} once {r['seconds']:.4g} s, "
                  f"peak {r['peak_rss_kb'] / 1024:.0f} MiB",
                  file=sys.stderr, flush=True)
        # 2. timing: interleaved rounds in two long-lived processes
        npx = Server(self.npx_argv("serve", method, inp, shape, params),
                     self.env, self.log)
        qsv = Server(self.qs_argv(method, inp, shape, params) + ["--serve"],
                     self.qs_env, self.log)
        pyv = Server(self.py_argv("serve", method, inp, shape, params),
                     self.py_env, self.log)
        plan = {}
        for c, row in rows.items():
            if "error" in row or self.a.memory_only:
                continue
            t = row["once_seconds"]
            if t > self.a.budget:
                # One call outlasts the budget: its fresh-process run is the
                # one sample (one-time costs are small against it).
                row["times"].append(t)
                row["used"].append(row["once_used"])
                if row["once_engine_seconds"] is not None:
                    row["engine_seconds"].append(row["once_engine_seconds"])
                row["fresh_process_only"] = True
                continue
            reps = max(1, min(self.a.repeats, int(self.a.budget / max(t,
                                                                  1e-9))))
            warm = self.a.warmup if t < 2.0 else 0
            plan[c] = (warm, reps)
        order = interleave([c for c in contenders if c[0] == "nanopyx"],
                           [c for c in contenders if c[0] != "nanopyx"])
        rounds = max((w + r for w, r in plan.values()), default=0)
        for k in range(rounds):
            print(f"   timing round {k + 1}/{rounds}", file=sys.stderr,
                  flush=True)
            for c in order:
                if c not in plan or k >= sum(plan[c]) or \
                        "error" in rows[c]:
                    continue
                srv = {"nanopyx": npx, "quicksilver": qsv,
                       "quicksilver-py": pyv}[c[0]]
                tmo = max(self.a.timeout, 20 * rows[c]["once_seconds"])
                r = srv.ask(f"run {c[1]}", tmo)
                if "error" in r:
                    rows[c]["error"] = r["error"]
                    print(f"   {c[0]} {c[1]}: {r['error']}",
                          file=sys.stderr)
                    continue
                if k >= plan[c][0]:
                    rows[c]["times"].append(r["seconds"])
                    rows[c]["used"].append(r.get("used") or r.get("impl"))
                    if "engine_seconds" in r:
                        rows[c]["engine_seconds"].append(
                            r["engine_seconds"])
        npx.stop()
        qsv.stop()
        pyv.stop()
        for f in (inp, ref):
            if os.path.exists(f):
                os.remove(f)
        case = {"id": cid, "method": method, "shape": list(shape),
                "params": params, "input": source or "simulated",
                "rows": []}
        for c in contenders:
            row = rows[c]
            row["min"], row["median"] = stats(row["times"])
            if c[0] == "nanopyx" and row["times"] and row["engine_seconds"]:
                row["engine_overhead"] = stats(
                    [t - e for t, e in zip(row["times"],
                                           row["engine_seconds"])])[1]
            case["rows"].append(row)
        summarise(case)
        self.results["cases"].append(case)
        self.save()

    def save(self):
        with open(os.path.join(self.out, "compare.json"), "w") as f:
            json.dump(self.results, f, indent=1)
        with open(os.path.join(self.out, "compare.md"), "w") as f:
            f.write(markdown(self.results))


def interleave(a, b):
    out = []
    for i in range(max(len(a), len(b))):
        out += a[i:i + 1] + b[i:i + 1]
    return out


def summarise(case):
    """The row per case: fastest and automatic on each side, ratios."""
    def ok(r):
        return r["median"] is not None and "error" not in r
    npx = [r for r in case["rows"] if r["system"] == "nanopyx" and ok(r)]
    qs = [r for r in case["rows"] if r["system"] == "quicksilver" and ok(r)]
    def fastest(rows):
        best = min(rows, key=lambda r: r["median"])
        return best["contender"], best["median"], best.get("peak_rss_kb")
    s = {}
    fixed = [r for r in npx if r["contender"] != "auto"]
    if fixed:
        s["npx_best"] = fastest(fixed)
    auto = [r for r in npx if r["contender"] == "auto"]
    if auto:
        a = auto[0]
        chose = sorted(set(a["used"]))
        forced = [r for r in fixed if r["contender"] in chose]
        over = a["median"] - forced[0]["median"] if len(forced) == 1 \
            else None
        s["npx_auto"] = (",".join(chose), a["median"], a.get("peak_rss_kb"),
                         over)
    qfixed = [r for r in qs if r["contender"] != "auto"]
    if qfixed:
        s["qs_best"] = fastest(qfixed)
    qauto = [r for r in qs if r["contender"] == "auto"]
    if qauto:
        a = qauto[0]
        s["qs_auto"] = (",".join(sorted(set(a["used"]))), a["median"],
                        a.get("peak_rss_kb"))
    qpy = [r for r in case["rows"] if r["system"] == "quicksilver-py" and
           ok(r)]
    if qpy:
        s["qs_py_auto"] = (",".join(sorted(set(qpy[0]["used"]))),
                           qpy[0]["median"], qpy[0].get("peak_rss_kb"))
    serial = [r for r in qs if r["contender"] == "serial"]
    if serial and "accuracy" in serial[0]:
        s["serial_accuracy"] = serial[0]["accuracy"]
    if "npx_best" in s and "qs_auto" in s:
        s["speedup_vs_npx_best"] = s["npx_best"][1] / s["qs_auto"][1]
    if "npx_auto" in s and "qs_auto" in s:
        s["speedup_vs_npx_auto"] = s["npx_auto"][1] / s["qs_auto"][1]
    if "npx_best" in s and "qs_auto" in s and s["npx_best"][2] and \
            s["qs_auto"][2]:
        s["memory_ratio"] = s["qs_auto"][2] / s["npx_best"][2]
    case["summary"] = s


def fmt_t(t):
    if t is None:
        return "–"
    return f"{t * 1e3:.3g} ms" if t < 1 else f"{t:.3g} s"


def fmt_mb(kb):
    return "–" if not kb else f"{kb / 1024:.0f}"


def markdown(res):
    lines = ["# quicksilver vs NanoPyx", "",
             f"Machine: {res['machine']}  ",
             "Versions: " + ", ".join(f"{k} {v}" for k, v in
                                      res["versions"].items()) + "  ",
             f"Command: `{res['command']}`  ",
             f"Warm-up {res['settings']['warmup']}, up to "
             f"{res['settings']['repeats']} repeats (fewer when one run "
             f"exceeds {res['settings']['budget_seconds']} s / repeats; "
             "a call longer than that is timed once, in its fresh process), "
             "interleaved; times are medians of the wall time of the "
             "user-facing call.  ",
             "Cases left out: " + (", ".join(res.get("skipped", []))
                                   or "none"), "",
             "## Summary", "",
             "| case | NanoPyx fastest | NanoPyx auto (chose; overhead) | "
             "quicksilver auto (chose) | quicksilver fastest | "
             "quicksilver auto via Python (chose) | "
             "NanoPyx fastest / qs auto | NanoPyx auto / qs auto | "
             "peak MiB NanoPyx fastest → qs auto | serial vs NanoPyx: "
             "max rel, r |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for c in res["cases"]:
        s = c["summary"]
        nb = s.get("npx_best")
        na = s.get("npx_auto")
        qa = s.get("qs_auto")
        qb = s.get("qs_best")
        qp = s.get("qs_py_auto")
        acc = s.get("serial_accuracy") or {}
        cells = [
            c["id"],
            f"{nb[0]} {fmt_t(nb[1])}" if nb else "–",
            f"{fmt_t(na[1])} ({na[0]}; {fmt_t(na[3])})" if na else "–",
            f"{fmt_t(qa[1])} ({qa[0]})" if qa else "–",
            f"{qb[0]} {fmt_t(qb[1])}" if qb else "–",
            f"{fmt_t(qp[1])} ({qp[0]})" if qp else "–",
            f"{s['speedup_vs_npx_best']:.2f}×"
            if "speedup_vs_npx_best" in s else "–",
            f"{s['speedup_vs_npx_auto']:.2f}×"
            if "speedup_vs_npx_auto" in s else "–",
            f"{fmt_mb(nb[2])} → {fmt_mb(qa[2])}" if nb and qa else "–",
            f"{acc['max_rel']:.2g}, {acc['pearson']:.9f}"
            if acc.get("pearson") is not None else "–",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Every contender", "",
              "| case | system | run type / impl | used | min | median | n | "
              "peak MiB (before call) | max abs diff | max rel diff | "
              "Pearson r | NanoPyx engine overhead |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for c in res["cases"]:
        for r in c["rows"]:
            acc = r.get("accuracy") or {}
            used = ",".join(sorted(set(u for u in r["used"] if u)))
            if "error" in r:
                lines.append(f"| {c['id']} | {r['system']} | "
                             f"{r['contender']} | failed: {r['error']} |"
                             " | | | | | | | |")
                continue
            lines.append("| " + " | ".join([
                c["id"], r["system"], r["contender"], used or "–",
                fmt_t(r["min"]), fmt_t(r["median"]), str(len(r["times"])),
                f"{fmt_mb(r.get('peak_rss_kb'))} "
                f"({fmt_mb(r.get('rss_before_kb'))})",
                f"{acc['max_abs']:.3g}" if "max_abs" in acc else "ref"
                if r["contender"] == "unthreaded" and
                r["system"] == "nanopyx" else "–",
                f"{acc['max_rel']:.3g}" if "max_rel" in acc else "–",
                f"{acc['pearson']:.9f}" if acc.get("pearson") is not None
                else "–",
                fmt_t(r.get("engine_overhead")),
            ]) + " |")
    return "\n".join(lines) + "\n"


MARK = "<!-- below: generated by bench/nanopyx/compare.py --results -->"


def splice(path, table):
    """Replaces what follows MARK in path (bench/RESULTS.md) with the table,
    keeping the prose above it; appends MARK when it is missing."""
    head = ""
    if os.path.exists(path):
        with open(path) as f:
            head = f.read().split(MARK)[0]
    with open(path, "w") as f:
        f.write(head.rstrip("\n") + "\n\n" + MARK + "\n\n" + table)


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) / 2**20:.0f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return (f"{cpu}, {os.cpu_count()} cores, {mem}, "
            f"{platform.system()} {platform.release()}")


def versions():
    v = npxenv.nanopyx_versions()
    try:
        with open(os.path.join(npxenv.ROOT, "meson.build")) as f:
            v["quicksilver"] = f.read().split("version : '")[1].split("'")[0]
    except (OSError, IndexError):
        pass
    try:
        v["quicksilver_commit"] = subprocess.run(
            ["git", "-C", npxenv.ROOT, "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True).stdout.strip()
    except OSError:
        pass
    try:
        p = subprocess.run(["clinfo", "-l"], capture_output=True, text=True)
        v["opencl"] = " / ".join(line.split(":", 1)[-1].strip()
                                 for line in p.stdout.splitlines())
    except OSError:
        pass
    return v


def build(dirname):
    """Release build of quicksilver for the driver and the Python binding,
    unless present. The binding is built for this interpreter (NanoPyx's
    environment, which has numpy): meson finds it first on PATH."""
    exe = os.path.join(dirname, "bench", "qs_run")
    binding = os.path.join(dirname, "tools", "python", "quicksilver")
    if os.path.exists(exe) and os.path.exists(binding) and \
            not os.environ.get("QS_COMPARE_REBUILD"):
        return
    env = npxenv.child_env()
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + \
        env.get("PATH", "")
    setup = ["meson", "setup", dirname, "--buildtype=release"]
    if os.path.exists(os.path.join(dirname, "build.ninja")):
        setup.append("--reconfigure")  # picks up this interpreter
    subprocess.run(setup, cwd=npxenv.ROOT, check=True, stdout=sys.stderr,
                   env=env)
    subprocess.run(["meson", "compile", "-C", dirname], cwd=npxenv.ROOT,
                   check=True, stdout=sys.stderr, env=env)
    if not os.path.exists(exe):
        sys.exit(f"compare: {exe} was not built")


def main():
    if sys.argv[1:2] == ["--py-worker"]:
        return py_worker(sys.argv[2:])
    ap = argparse.ArgumentParser(
        description="quicksilver and NanoPyx side by side")
    ap.add_argument("--quick", action="store_true",
                    help="a smoke run in under 2 minutes: one small case "
                         "per method (shift_magnify at M 2 only), NanoPyx's "
                         f"{', '.join(QUICK_NPX)} against quicksilver's "
                         f"{', '.join(QUICK_QS)} and Python, "
                         f"{QUICK_BUDGET:g} s and {QUICK_REPEATS} repeats "
                         "per contender")
    ap.add_argument("--goal", action="store_true",
                    help="only the eSRRF cases of the speed goal: "
                         "100x64x64, 20x256x256 and the real stack "
                         f"{REAL_STACK}, M = 5")
    ap.add_argument("--list", action="store_true",
                    help="print the ids of the cases that would run, "
                         "then stop")
    ap.add_argument("--methods", default="roberts_cross,shift_magnify,esrrf")
    ap.add_argument("--out", default=os.path.join(npxenv.ROOT,
                                                  "build-compare",
                                                  "nanopyx"))
    ap.add_argument("--build", default="",
                    help="quicksilver's build (default <root>/build-compare,"
                         " a release build made on first use; --quick uses "
                         "<root>/build when tools/test has made it)")
    ap.add_argument("--skip", default="",
                    help="case ids to leave out, comma-separated "
                         "(e.g. esrrf_500x64x64_m5)")
    ap.add_argument("--results", default="",
                    help="also put the table into this file below its "
                         "marker line (bench/RESULTS.md)")
    ap.add_argument("--memory-only", action="store_true",
                    help="only the fresh-process pass: peak memory, "
                         "accuracy and one cold time per contender")
    ap.add_argument("--npx-run-types", default="",
                    help="only these NanoPyx run types (comma-separated, "
                         "auto included); default: every run type and auto."
                         " Without unthreaded there is no accuracy column")
    ap.add_argument("--qs-impls", default="",
                    help="only these quicksilver implementations "
                         "(comma-separated, auto included); default: all")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--budget", type=float, default=60.0,
                    help="seconds of timed runs per contender and case")
    ap.add_argument("--timeout", type=float, default=1800.0,
                    help="seconds before a single call is abandoned")
    args = ap.parse_args()
    if not args.build:
        dev = os.path.join(npxenv.ROOT, "build")
        args.build = dev if args.quick and os.path.exists(
            os.path.join(dev, "bench", "qs_run")) else os.path.join(
                npxenv.ROOT, "build-compare")
    if args.quick:
        args.npx_run_types = args.npx_run_types or ",".join(QUICK_NPX)
        args.qs_impls = args.qs_impls or ",".join(QUICK_QS)
        args.budget = min(args.budget, QUICK_BUDGET)
        args.repeats = min(args.repeats, QUICK_REPEATS)
    args.build = os.path.abspath(args.build)
    npxenv.reexec_in_venv()
    methods = args.methods.split(",")
    skip = set(args.skip.split(",")) if args.skip else set()
    cases = sweep(args.quick, methods, args.goal)
    if args.list:
        for method, shape, params, source in cases:
            cid = case_id(method, shape, params, source)
            print(cid + (" (skipped)" if cid in skip else ""))
        return
    t0 = time.monotonic()
    print(f"compare: {len(cases)} case{'s' * (len(cases) != 1)}; building "
          f"quicksilver in {args.build} if needed", file=sys.stderr,
          flush=True)
    build(args.build)
    h = Harness(args)
    h.results["settings"]["goal"] = args.goal
    for k, (method, shape, params, source) in enumerate(cases):
        cid = case_id(method, shape, params, source)
        if cid in skip:
            h.results.setdefault("skipped", []).append(cid)
            continue
        print(f"compare: case {k + 1}/{len(cases)} {cid} "
              f"({time.monotonic() - t0:.0f} s so far)", file=sys.stderr,
              flush=True)
        h.run_case(method, shape, params, source)
    h.save()
    if args.results:
        splice(args.results, markdown(h.results))
    print(f"wrote {h.out}/compare.md and compare.json "
          f"({time.monotonic() - t0:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main()
