"""quicksilver.nanopyx.eSRRF: NanoPyx 2.1's signature, its return shape
(np.squeeze of (T, R*M, C*M)) and its numbers on the eSRRF fixtures."""

import inspect
import json

import numpy as np
import pytest

import quicksilver as qs
from conftest import load_f32, reference_cases, rel_error
from quicksilver.nanopyx import eSRRF

# nanopyx 2.1.5, nanopyx/methods/esrrf/eSRRF_workflow.py
NANOPYX_SIGNATURE = [
    ("image", inspect.Parameter.empty), ("magnification", 5),
    ("radius", 1.5), ("sensitivity", 1), ("frames_per_timepoint", 0),
    ("temporal_correlation", "AVG"), ("use_fht", False),
    ("doIntensityWeighting", True), ("macro_pixel_correction", True),
    ("pad_edges", False), ("_force_run_type", None)]

# The fixtures NanoPyx's eSRRF made (temporal=none is its eSRRF_ST chain).
CASES = [c for c in reference_cases("esrrf") if c["params"]["temporal"] !=
         "none"]


def test_signature_is_nanopyx_21():
    sig = inspect.signature(eSRRF)
    assert [(p.name, p.default) for p in sig.parameters.values()] == \
        NANOPYX_SIGNATURE


def _call(case, x):
    p = case["params"]
    return eSRRF(x, magnification=p["magnification"], radius=p["radius"],
                 sensitivity=p["sensitivity"],
                 frames_per_timepoint=p["frames_per_timepoint"],
                 temporal_correlation=p["temporal"].upper(),
                 doIntensityWeighting=p["intensity_weighting"],
                 macro_pixel_correction=p["macro_pixel_correction"],
                 _force_run_type="threaded")


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_shape_and_numbers_of_nanopyx(case):
    ref = load_f32(case["outputs"][0])
    got = _call(case, load_f32(case["inputs"][0]))
    # NanoPyx's own shape, recorded in the fixture's notes
    shape = json.loads(case["notes"].split("shape ")[1].split(";")[0])
    assert list(got.shape) == shape
    assert got.shape == np.squeeze(ref).shape and got.dtype == np.float32
    tol = case["tolerance"] + qs.default_engine().method("esrrf").tolerance
    assert rel_error(got.reshape(ref.shape), ref) <= tol


def test_fixtures_cover_one_and_several_timepoints():
    shapes = {len(load_f32(c["outputs"][0]).shape) for c in CASES}
    frames = {load_f32(c["outputs"][0]).shape[0] for c in CASES}
    assert shapes == {3} and 1 in frames and max(frames) > 1


def test_unsupported_nanopyx_options_raise(stack):
    with pytest.raises(qs.ParameterError, match="use_fht"):
        eSRRF(stack, use_fht=True)
    with pytest.raises(qs.ParameterError, match="pad_edges"):
        eSRRF(stack, pad_edges=True)
    with pytest.raises(qs.ParameterError, match="temporal"):
        eSRRF(stack, temporal_correlation="MEDIAN")


def test_frames_per_timepoint_past_the_stack_is_all_frames(stack):
    a = eSRRF(stack, magnification=2, frames_per_timepoint=100)
    with qs.Engine(db=":memory:", opencl=False) as e:
        b = e.run("esrrf", stack, magnification=2, impl="serial")[0][0]
    # the default engine picks its implementation: within the method's
    # tolerance of serial
    assert a.shape == (48, 40)
    assert rel_error(a, b) <= qs.default_engine().method("esrrf").tolerance
