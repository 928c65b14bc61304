"""eSRRF's parameter sweep and the quality metrics through the binding:
Engine.esrrf_sweep's points equal separate runs bit for bit, the NanoPyx
drop-in run_esrrf_parameter_sweep keeps NanoPyx 2.1's signature and return
shapes, the metrics match their NanoPyx fixtures, and bad input raises
naming the parameter."""

import inspect

import numpy as np
import pytest

import quicksilver as qs
from conftest import load_f32, reference_cases
from quicksilver.nanopyx import run_esrrf_parameter_sweep

# nanopyx 2.1.5, nanopyx/methods/esrrf/parameter_sweep.py
NANOPYX_SIGNATURE = [
    ("img", inspect.Parameter.empty), ("magnification", 2),
    ("sensitivities", (1, 2)), ("radii", (1, 1.5)),
    ("temporal_correlation", "AVG"), ("use_decorr", False),
    ("plot_sweep", False), ("return_qnr", False), ("n_frames", None)]


def _stack():
    case = [c for c in reference_cases("squirrel")
            if c["name"] == "sq_real_m5"][0]
    return load_f32(case["inputs"][0])  # the real crop, 20 x 16 x 16


def test_signature_is_nanopyx_21():
    sig = inspect.signature(run_esrrf_parameter_sweep)
    got = [(p.name, p.default) for p in sig.parameters.values()]
    # NanoPyx's list defaults are tuples here (immutable); same values
    assert [(n, tuple(d) if isinstance(d, list) else d)
            for n, d in NANOPYX_SIGNATURE] == got


def test_points_equal_separate_runs(engine):
    x = _stack()
    radii, sens = [1.0, 2.0], [1.0, 3.0]
    sw = engine.esrrf_sweep(x, radii, sens, magnification=2,
                            keep_images=True, impl="serial")
    assert sw.qnr.shape == (1, 2, 2) and sw.images.shape == (1, 2, 2, 32, 32)
    for si, s in enumerate(sens):
        for ri, r in enumerate(radii):
            ref = engine.run("esrrf", x, impl="serial", magnification=2,
                             radius=r, sensitivity=s, temporal="avg",
                             macro_pixel_correction=False)["output"]
            assert np.array_equal(sw.images[0, si, ri], ref[0])
            m = engine.run("squirrel", x, ref, impl="serial",
                           error_map=False)["metrics"]
            assert sw.rsp[0, si, ri] == float(m[0, 0, 1])
            assert sw.rse[0, si, ri] == float(m[0, 0, 0])
    assert sw.radius[0, 1, 0] == 1.0 and sw.sensitivity[0, 1, 0] == 3.0
    assert sw.best()[0] == "avg"
    # what made the points: the implementation forced, the shared
    # parameters, the grid
    assert sw.impl == "serial"
    p = sw.provenance
    assert p["tool"] == "quicksilver" and p["version"] == qs.__version__
    assert p["method"] == "esrrf" and p["impl"] == "serial"
    assert p["params"]["magnification"] == 2
    assert p["params"]["macro_pixel_correction"] is False
    assert "radius" not in p["params"]
    assert p["sweep"] == {"radii": radii, "sensitivities": sens,
                          "temporal": ["avg"]}


def test_dropin_shapes():
    x = _stack()
    q = run_esrrf_parameter_sweep(x, 2, [1, 2, 4], [1, 1.5], return_qnr=True)
    assert q.shape == (3, 2) and q.dtype == np.float32
    assert np.isfinite(q).all() and (q >= 0).all() and (q <= 1).all()
    s, r = run_esrrf_parameter_sweep(x, 2, [1, 2, 4], [1, 1.5])
    k = np.unravel_index(int(np.argmax(q)), q.shape)
    assert (s, r) == ([1, 2, 4][k[0]], [1, 1.5][k[1]])
    with pytest.raises(qs.ParameterError):
        run_esrrf_parameter_sweep(x, 2, use_decorr=True)


def test_bad_input_names_the_parameter(engine):
    x = _stack()
    with pytest.raises(qs.ParameterError, match="radius"):
        engine.esrrf_sweep(x, [], [1])
    with pytest.raises(qs.ParameterError, match="radius: -1"):
        engine.esrrf_sweep(x, [1, -1], [1])
    with pytest.raises(qs.ParameterError, match="temporal"):
        engine.esrrf_sweep(x, [1], [1], temporal=["median"])
    with pytest.raises(qs.ShapeError, match="frames"):
        engine.esrrf_sweep(x[:1], [1], [1])


@pytest.mark.parametrize("case", reference_cases("squirrel"),
                         ids=lambda c: c["name"])
def test_squirrel_matches_nanopyx(engine, case):
    ins = [load_f32(i) for i in case["inputs"]]
    got = engine.run("squirrel", *ins)["metrics"].ravel()
    ref = load_f32(case["outputs"][1]).ravel()
    assert abs(got[0] - ref[0]) <= 1e-4 * abs(ref[0])  # RSE
    assert abs(got[1] - ref[1]) <= 1e-4 * abs(ref[1])  # RSP


@pytest.mark.parametrize("case", reference_cases("frc"),
                         ids=lambda c: c["name"])
def test_frc_matches_nanopyx(engine, case):
    a, b = (load_f32(i) for i in case["inputs"])
    res = engine.run("frc", a, b)
    curve = load_f32(case["outputs"][0])[0]
    assert np.abs(res["curve"][0, 2] - curve[1]).max() <= 1e-4
    fire = float(load_f32(case["outputs"][1]).ravel()[0])
    assert abs(float(res["resolution"].ravel()[0]) - fire) <= 1e-4 * fire
