#!/usr/bin/env python3
"""make_fixtures.py - writes the NanoPyx reference cases of tests/data/reference.

Every case is run through NanoPyx's `unthreaded` run type, its deterministic
CPU reference, and stored as little-endian float32 arrays (`.f32`, no header)
beside a JSON file naming the method, quicksilver's parameters, the NanoPyx
call that made the output, the shapes, the tolerance the tests apply and the
package versions. `index.json` lists the cases. Inputs are a crop of a real
fluctuation stack (tests/data/reference/README.md says which) and simulated
blinking emitters with a fixed seed. The metrics' OpenMP loops (DecorrAnalysis'
apodisation and spectrum norm sum floats per thread) run on 2 threads, as the
committed fixtures were made: OMP_NUM_THREADS is set to 2 here.

Usage: python3 bench/nanopyx/make_fixtures.py [--out DIR]
(creates or reuses the private NanoPyx environment, see npxenv.py).
"""

import argparse
import hashlib
import json
import os
import sys

# NanoPyx's float reductions depend on the thread count (see the docstring)
os.environ["OMP_NUM_THREADS"] = "2"

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npxenv  # noqa: E402

REAL_STACK = "musical_cardiomyoblast_mito_100f.tif"
# The real stacks: $QS_REAL_DATA, else the copy under tests/data/real, else
# the shared data folder they were copied from (same bytes, see SOURCES.md).
REAL_DIRS = [os.environ.get("QS_REAL_DATA", ""),
             os.path.join(npxenv.ROOT, "tests", "data", "real"),
             "/work/shared/data/real"]
# Rows, cols of the crop's top-left corner: a patch crossed by filaments.
REAL_ORIGIN = (7, 14)
SEED = 20261122

# Tolerances of the reference tests, relative to max |reference|.
TOL_INTERP = 1e-6  # shift_magnify, roberts_cross
TOL_RGC = 1e-5     # rgc, esrrf
TOL_METRIC = 1e-4  # squirrel, frc, decorr: relative per value (see the
                   # case notes for what the value is)


def real_crop(frames, size):
    import tifffile
    import numpy as np
    paths = [os.path.join(d, REAL_STACK) for d in REAL_DIRS if d]
    found = [p for p in paths if os.path.isfile(p)]
    if not found:
        raise SystemExit(f"{REAL_STACK} not found in {paths}")
    a = tifffile.imread(found[0])
    r, c = REAL_ORIGIN
    return np.ascontiguousarray(a[:frames, r:r + size, c:c + size],
                                dtype=np.float32)


def simulated(frames, rows, cols, seed=SEED):
    """Blinking Gaussian emitters on a background with shot noise, scaled by
    a non-integer gain so that values are not integers (float rounding in
    the stencils is then exercised)."""
    import numpy as np
    rng = np.random.default_rng(seed)
    n = 6
    pos = rng.uniform([2, 2], [rows - 2, cols - 2], size=(n, 2))
    yy, xx = np.mgrid[0:rows, 0:cols].astype(np.float64)
    out = np.empty((frames, rows, cols), np.float32)
    for f in range(frames):
        on = rng.random(n) < 0.6
        lam = np.full((rows, cols), 100.0)
        for k in range(n):
            if on[k]:
                d2 = (yy - pos[k, 0]) ** 2 + (xx - pos[k, 1]) ** 2
                lam += 500.0 * np.exp(-d2 / (2 * 1.2 ** 2))
        out[f] = rng.poisson(lam) * 0.37
    return out


class Writer:
    """Writes arrays once (same content, same file) and the case files."""

    def __init__(self, out):
        self.out = out
        self.cases = []
        self.written = {}

    def array(self, name, a):
        import numpy as np
        a = np.ascontiguousarray(a, dtype="<f4")
        if a.ndim == 2:
            a = a[None]
        digest = hashlib.sha256(a.tobytes()).hexdigest()
        if name in self.written and self.written[name][0] != digest:
            raise SystemExit(f"two different arrays named {name}")
        if name not in self.written:
            a.tofile(os.path.join(self.out, name + ".f32"))
            self.written[name] = (digest, list(a.shape))
        return {"file": name + ".f32", "shape": list(a.shape),
                "sha256": digest}

    def case(self, name, method, params, call, inputs, outputs, tol,
             notes=""):
        doc = {"name": name, "method": method, "params": params,
               "nanopyx_call": call, "run_type": "unthreaded",
               "inputs": inputs, "outputs": outputs, "tolerance": tol,
               "nanopyx": npxenv.nanopyx_versions()}
        if notes:
            doc["notes"] = notes
        with open(os.path.join(self.out, name + ".json"), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        self.cases.append(name)

    def index(self):
        doc = {"format": "little-endian float32 (.f32), C order, shape "
                         "(frames, rows, cols) given in each case file",
               "cases": self.cases}
        with open(os.path.join(self.out, "index.json"), "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")


def slot(w, slot_name, file_name, a):
    d = w.array(file_name, a)
    d["slot"] = slot_name
    return d


def make_shift_magnify(w, real, sim):
    import numpy as np
    from nanopyx.core.transform._le_interpolation_catmull_rom import \
        ShiftAndMagnify
    sm = ShiftAndMagnify(verbose=False)
    ramp = (np.arange(90 * 7, dtype=np.float32).reshape(1, 90, 7) * 0.25)
    cases = [
        # name, input name, input, shift_row, shift_col, mag_row, mag_col
        ("sm_real_m2_shift", "real_f3", real[:3], 1.25, -0.5, 2.0, 2.0),
        ("sm_sim_m5_single", "sim_f1", sim[:1], 0.3, 2.0, 5.0, 5.0),
        ("sm_sim_frac", "sim_f2", sim[:2], -0.75, 0.4, 1.3, 2.7),
        ("sm_real_m1_zero", "real_f3", real[:3], 0.0, 0.0, 1.0, 1.0),
        # 90 rows x 1.3 is 116 rows in float32 (117 in double)
        ("sm_ramp_shape", "ramp_90x7", ramp, -2.5, 3.0, 1.3, 1.5),
    ]
    for name, in_name, x, sr, sc, mr, mc in cases:
        x = np.ascontiguousarray(x)
        out = np.asarray(sm.run(x, sr, sc, mr, mc, run_type="unthreaded"))
        w.case(name, "shift_magnify",
               {"shift_row": sr, "shift_col": sc,
                "magnification_row": mr, "magnification_col": mc},
               f"ShiftAndMagnify().run(x, {sr}, {sc}, {mr}, {mc}, "
               "run_type='unthreaded')",
               [slot(w, "input", in_name, x)],
               [slot(w, "output", name + "_out", out)], TOL_INTERP)


def make_roberts_cross(w, real, sim):
    import numpy as np
    from nanopyx.core.transform._le_roberts_cross_gradients import \
        GradientRobertsCross
    rc = GradientRobertsCross(verbose=False)
    for name, in_name, x in [("rc_real", "real_f5", real[:5]),
                             ("rc_sim", "sim_f3_16x13", sim[:3, :, :13])]:
        x = np.ascontiguousarray(x)
        gc, gr = rc.run(x, run_type="unthreaded")
        w.case(name, "roberts_cross", {},
               "GradientRobertsCross().run(x, run_type='unthreaded')",
               [slot(w, "input", in_name, x)],
               [slot(w, "gradient_col", name + "_gc", np.asarray(gc)),
                slot(w, "gradient_row", name + "_gr", np.asarray(gr))],
               TOL_INTERP)


def rgc_inputs(x, m):
    """NanoPyx's own preparation of RGC's inputs: the image x M and both
    Roberts-cross gradients x 2M, all Catmull-Rom, unthreaded."""
    import numpy as np
    from nanopyx.core.transform._le_interpolation_catmull_rom import \
        ShiftAndMagnify
    from nanopyx.core.transform._le_roberts_cross_gradients import \
        GradientRobertsCross
    sm = ShiftAndMagnify(verbose=False)
    rc = GradientRobertsCross(verbose=False)
    mag = np.asarray(sm.run(x, 0, 0, m, m, run_type="unthreaded"))
    gc, gr = rc.run(x, run_type="unthreaded")
    gc2 = np.asarray(sm.run(np.asarray(gc), 0, 0, 2 * m, 2 * m,
                            run_type="unthreaded"))
    gr2 = np.asarray(sm.run(np.asarray(gr), 0, 0, 2 * m, 2 * m,
                            run_type="unthreaded"))
    return gc2, gr2, mag


def make_rgc(w, real, sim):
    import numpy as np
    from nanopyx.core.transform._le_radial_gradient_convergence import \
        RadialGradientConvergence
    rgc = RadialGradientConvergence(verbose=False)
    sources = {"real": real[:2, :12, :12], "sim": sim[:2, 2:14, 2:14]}
    cases = [
        # name, source, magnification, radius, sensitivity, weighting
        ("rgc_real_m2_r1_s1_iw", "real", 2, 1.0, 1.0, True),
        ("rgc_real_m5_r15_s2_iw", "real", 5, 1.5, 2.0, True),
        ("rgc_real_m5_r25_s05_noiw", "real", 5, 2.5, 0.5, False),
        ("rgc_sim_m2_r25_s05_iw", "sim", 2, 2.5, 0.5, True),
        ("rgc_sim_m2_r15_s2_noiw", "sim", 2, 1.5, 2.0, False),
        ("rgc_sim_m5_r1_s1_noiw", "sim", 5, 1.0, 1.0, False),
        ("rgc_sim_m5_r15_s1_iw", "sim", 5, 1.5, 1.0, True),
    ]
    prepared = {}
    for name, src, m, r, s, iw in cases:
        key = f"{src}_m{m}"
        if key not in prepared:
            x = np.ascontiguousarray(sources[src])
            prepared[key] = rgc_inputs(x, m)
        gc2, gr2, mag = prepared[key]
        out = np.asarray(rgc.run(gc2, gr2, mag, magnification=m, radius=r,
                                 sensitivity=s, doIntensityWeighting=iw,
                                 run_type="unthreaded"))
        w.case(name, "rgc",
               {"magnification": m, "radius": r, "sensitivity": s,
                "intensity_weighting": iw},
               f"RadialGradientConvergence().run(gc2, gr2, mag, "
               f"magnification={m}, radius={r}, sensitivity={s}, "
               f"doIntensityWeighting={iw}, run_type='unthreaded')",
               [slot(w, "gradient_col", f"rgc_{key}_gc2", gc2),
                slot(w, "gradient_row", f"rgc_{key}_gr2", gr2),
                slot(w, "image", f"rgc_{key}_mag", mag)],
               [slot(w, "output", name + "_out", out)], TOL_RGC,
               notes="inputs made by NanoPyx from a 2x12x12 stack: "
                     "CR x2M of both Roberts-cross gradients, CR xM of the "
                     "image (unthreaded)")


def make_esrrf(w, real, sim):
    import numpy as np
    from nanopyx.methods.esrrf.eSRRF_workflow import eSRRF
    from nanopyx.core.transform import eSRRF_ST
    temporal = {"avg": "AVG", "var": "VAR", "tac2": "TAC2"}
    cases = [
        # name, input name, input, M, radius, sens, iw, fpt, temporal, mpc
        ("es_real_avg_m5", "real_f20", real, 5, 1.5, 1.0, True, 0, "avg",
         True),
        ("es_real_var_fpt8", "real_f20", real, 2, 1.5, 1.0, True, 8, "var",
         True),
        ("es_sim_tac2_fpt7", "sim_f20_12x12", sim[:, 2:14, 2:14], 5, 2.0,
         2.0, True, 7, "tac2", True),
        ("es_sim_avg_nompc", "sim_f10_12x12", sim[:10, 2:14, 2:14], 3, 1.0,
         1.0, False, 0, "avg", False),
        ("es_real_var_all", "real_f20", real, 3, 2.5, 0.5, True, 0, "var",
         True),
    ]
    for name, in_name, x, m, r, s, iw, fpt, t, mpc in cases:
        x = np.ascontiguousarray(x)
        out = np.asarray(eSRRF(x, magnification=m, radius=r, sensitivity=s,
                               frames_per_timepoint=fpt,
                               temporal_correlation=temporal[t],
                               doIntensityWeighting=iw,
                               macro_pixel_correction=mpc,
                               _force_run_type="unthreaded"))
        squeezed = list(out.shape)
        w.case(name, "esrrf",
               {"magnification": m, "radius": r, "sensitivity": s,
                "intensity_weighting": iw, "frames_per_timepoint": fpt,
                "temporal": t, "macro_pixel_correction": mpc},
               f"eSRRF(x, magnification={m}, radius={r}, sensitivity={s}, "
               f"frames_per_timepoint={fpt}, temporal_correlation="
               f"'{temporal[t]}', doIntensityWeighting={iw}, "
               f"macro_pixel_correction={mpc}, _force_run_type='unthreaded')",
               [slot(w, "input", in_name, x)],
               [slot(w, "output", name + "_out", out)], TOL_RGC,
               notes=f"NanoPyx returns np.squeeze of (T, RM, CM): shape "
                     f"{squeezed}; stored as (T, RM, CM)")
    # temporal=none is NanoPyx's per-frame chain eSRRF_ST, no correction
    x = np.ascontiguousarray(real[:4])
    st = eSRRF_ST(verbose=False)
    out = np.asarray(st.run(x, magnification=2, radius=1.5, sensitivity=1,
                            doIntensityWeighting=True, run_type="unthreaded"))
    w.case("es_real_none_m2", "esrrf",
           {"magnification": 2, "radius": 1.5, "sensitivity": 1.0,
            "intensity_weighting": True, "frames_per_timepoint": 0,
            "temporal": "none", "macro_pixel_correction": False},
           "eSRRF_ST().run(x, magnification=2, radius=1.5, sensitivity=1, "
           "doIntensityWeighting=True, run_type='unthreaded')",
           [slot(w, "input", "real_f4", x)],
           [slot(w, "output", "es_real_none_m2_out", out)], TOL_RGC)


def real_full():
    """The whole real stack (100 x 30 x 45) as float32."""
    import tifffile
    import numpy as np
    paths = [os.path.join(d, REAL_STACK) for d in REAL_DIRS if d]
    found = [p for p in paths if os.path.isfile(p)]
    return np.ascontiguousarray(tifffile.imread(found[0]), dtype=np.float32)


def odd_even_avg(x, m, r, s):
    """NanoPyx's sweep halves: per-frame eSRRF maps (eSRRF_ST, unthreaded),
    the mean of the odd frames (maps[1::2]) and of the even ones
    (maps[::2]) as its calculate_eSRRF_temporal_correlations("AVG")."""
    import numpy as np
    from nanopyx.core.transform import eSRRF_ST
    from nanopyx.core.transform.sr_temporal_correlations import \
        calculate_eSRRF_temporal_correlations as tc
    maps = np.asarray(eSRRF_ST(verbose=False).run(
        x, magnification=m, radius=r, sensitivity=s,
        doIntensityWeighting=True, run_type="unthreaded"))
    return (np.asarray(tc(maps, "AVG")), np.asarray(tc(maps[1::2], "AVG")),
            np.asarray(tc(maps[::2], "AVG")))


def fire_state(f):
    """FIRECalculator's smoothed curve (frequency, FRC) from its pickled
    state (the curve is not otherwise exposed)."""
    import numpy as np
    state = f.__reduce_cython__()[2]
    curves = [np.asarray(v) for v in state
              if hasattr(v, "shape") and len(np.asarray(v).shape) == 2
              and np.asarray(v).shape[1] == 3]
    return curves[0]


def make_metrics(w, real, sim):
    import numpy as np
    from nanopyx.core.transform.error_map import ErrorMap
    from nanopyx.core.analysis.frc import FIRECalculator
    from scipy.ndimage import gaussian_filter
    full = real_full()
    rng = np.random.default_rng(SEED + 1)
    # SQUIRREL: reference = the stack (its mean is used), reconstruction
    squirrel = [
        ("sq_real_m5", "real_f20", real, 5),
        ("sq_sim_m2", "sim_f20_16x16", sim, 2),
    ]
    for name, in_name, x, m in squirrel:
        rec, _, _ = odd_even_avg(np.ascontiguousarray(x), m, 1.5, 1)
        em = ErrorMap()
        em.optimise(np.mean(x, axis=0), rec)
        w.case(name, "squirrel", {},
               "ErrorMap().optimise(np.mean(x, axis=0), rec) with rec the "
               f"mean of eSRRF_ST(x, magnification={m}, radius=1.5) maps",
               [slot(w, "reference", in_name, x),
                slot(w, "reconstruction", name + "_rec", rec)],
               [slot(w, "error_map", name + "_map", np.asarray(em.imRSE)),
                slot(w, "metrics", name + "_metrics",
                     np.array([[[em._vRSE, em._vRSP, em._sigma, em._alpha,
                                 em._beta]]], np.float32))],
               TOL_METRIC,
               notes="metrics: RSE, RSP, sigma, alpha, beta")
    # M = 1: a blurred copy with noise, sigma to be recovered
    ref = np.mean(real, axis=0)
    rec = (gaussian_filter(ref, 0.8) * 0.5 + 3 +
           rng.normal(0, 0.5, ref.shape)).astype(np.float32)
    em = ErrorMap()
    em.optimise(ref, rec)
    w.case("sq_real_m1", "squirrel", {},
           "ErrorMap().optimise(ref, rec), rec = gaussian_filter(ref, 0.8) "
           "* 0.5 + 3 + noise",
           [slot(w, "reference", "real_mean", ref),
            slot(w, "reconstruction", "sq_real_m1_rec", rec)],
           [slot(w, "error_map", "sq_real_m1_map", np.asarray(em.imRSE)),
            slot(w, "metrics", "sq_real_m1_metrics",
                 np.array([[[em._vRSE, em._vRSP, em._sigma, em._alpha,
                             em._beta]]], np.float32))],
           TOL_METRIC, notes="metrics: RSE, RSP, sigma, alpha, beta")
    # FRC: odd/even halves as NanoPyx's sweep makes them, and raw frames
    pairs = []
    _, odd, even = odd_even_avg(real, 5, 1.5, 1)
    pairs.append(("frc_real_m5", odd, even))
    _, odd, even = odd_even_avg(full, 5, 1.5, 1)
    pairs.append(("frc_full_m5", odd, even))
    s2 = simulated(2, 64, 50, seed=SEED + 2)
    pairs.append(("frc_sim_rect", s2[0], s2[1]))
    for name, a, b in pairs:
        f = FIRECalculator()
        fire = f.calculate_fire_number(a, b)
        curve = fire_state(f)
        w.case(name, "frc", {},
               "FIRECalculator().calculate_fire_number(a, b)",
               [slot(w, "image_a", name + "_a", a),
                slot(w, "image_b", name + "_b", b)],
               [slot(w, "curve", name + "_curve",
                     np.ascontiguousarray(curve[:, :2].T)[None]),
                slot(w, "resolution", name + "_fire",
                     np.array([[[fire]]], np.float32))],
               TOL_METRIC,
               notes="curve: frequency and the smoothed FRC (NanoPyx keeps "
                     "only the smoothed one); resolution: the FIRE number")


def make_decorr(w, real, sim):
    import numpy as np
    from nanopyx.core.analysis.decorr import DecorrAnalysis
    rec, _, _ = odd_even_avg(real, 5, 1.5, 1)
    full, _, _ = odd_even_avg(real_full(), 5, 1.5, 1)
    cases = [("dc_real_m5", "sq_real_m5_rec", rec),
             ("dc_full_m5", "dc_full_m5_in", full),
             ("dc_sim_rect", "dc_sim_rect_in",
              simulated(1, 64, 50, seed=SEED + 3)[0])]
    for name, in_name, x in cases:
        d = DecorrAnalysis()
        d.run_analysis(x)
        st = d.__reduce_cython__()[2]
        # state order: a0, a_g, a_max, agm, d, d0, img, img_ref, kc, kc0,
        # kc_gm, kc_max, ...
        d_curves, d0 = np.asarray(st[4]), np.asarray(st[5])
        curves = np.concatenate([d0[None], d_curves.T])[None]
        w.case(name, "decorr", {},
               "DecorrAnalysis().run_analysis(x)",
               [slot(w, "image", in_name, x)],
               [slot(w, "resolution", name + "_res",
                     np.array([[[d.resolution, st[11], st[2], st[9]]]],
                              np.float32)),
                slot(w, "curves", name + "_curves", curves)],
               TOL_METRIC,
               notes="resolution: resolution, kc_max, a_max, kc0; curves: "
                     "d0 then the 2 n_g curves of the blurred images")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(npxenv.ROOT, "tests",
                                                  "data", "reference"))
    args = ap.parse_args()
    npxenv.reexec_in_venv()
    os.makedirs(args.out, exist_ok=True)
    for f in os.listdir(args.out):
        if f.endswith(".f32") or f.endswith(".json"):
            os.remove(os.path.join(args.out, f))
    real = real_crop(20, 16)
    sim = simulated(20, 16, 16)
    w = Writer(args.out)
    make_shift_magnify(w, real, sim)
    make_roberts_cross(w, real, sim)
    make_rgc(w, real, sim)
    make_esrrf(w, real, sim)
    make_metrics(w, real, sim)
    make_decorr(w, real, sim)
    w.index()
    total = sum(os.path.getsize(os.path.join(args.out, f))
                for f in os.listdir(args.out))
    print(f"{len(w.cases)} cases, {total} bytes in {args.out}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
