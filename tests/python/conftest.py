"""Shared fixtures of the Python binding's tests.

The package under test is the one built in the meson build directory
(PYTHONPATH set by the meson test); QS_RUN names the C driver
(bench/qs_run.c) used for bit-for-bit comparisons; QS_SOURCE_ROOT the source
tree, for tests/data. Every engine here keeps its timings in memory.
"""

import json
import os
import pathlib

import numpy as np
import pytest

import quicksilver as qs

ROOT = pathlib.Path(os.environ.get("QS_SOURCE_ROOT") or
                    pathlib.Path(__file__).resolve().parents[2])
REF = ROOT / "tests" / "data" / "reference"
REAL = ROOT / "tests" / "data" / "real"


def load_f32(entry):
    """A fixture array {file, shape} as a (frames, rows, cols) float32 array."""
    data = np.fromfile(REF / entry["file"], dtype="<f4")
    return data.reshape(entry["shape"])


def reference_cases(method=None):
    """The NanoPyx fixture cases (parsed case files), optionally of one
    method."""
    names = json.loads((REF / "index.json").read_text())["cases"]
    cases = [json.loads((REF / f"{n}.json").read_text()) for n in names]
    return [c for c in cases if method is None or c["method"] == method]


def rel_error(got, ref):
    """Largest |got - ref| over max |ref|, NaN only where both are NaN
    (TAC2 of a one-frame timepoint)."""
    assert got.shape == ref.shape, (got.shape, ref.shape)
    nan_g, nan_r = np.isnan(got), np.isnan(ref)
    assert np.array_equal(nan_g, nan_r), "NaN at different pixels"
    g = got[~nan_r].astype(np.float64)
    r = ref[~nan_r].astype(np.float64)
    peak = np.max(np.abs(r)) if r.size else 0.0
    worst = np.max(np.abs(g - r)) if r.size else 0.0
    return worst / peak if peak > 0 else worst


@pytest.fixture
def engine():
    """A CPU-only engine with a fixed seed and no calibration: quick and
    deterministic."""
    with qs.Engine(db=":memory:", opencl=False, seed=1,
                   calibration=False) as e:
        yield e


@pytest.fixture
def stack():
    """A small camera-like stack: background 100, blinking spots, Poisson
    noise; float32 (8, 24, 20)."""
    rng = np.random.default_rng(20261122)
    f, r, c = 8, 24, 20
    yy, xx = np.mgrid[0:r, 0:c]
    img = np.full((f, r, c), 100.0)
    for cy, cx in [(6.3, 5.1), (15.7, 12.2), (9.0, 16.5)]:
        on = rng.random(f) < 0.7
        spot = 400 * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * 1.3**2))
        img += on[:, None, None] * spot
    return rng.poisson(img).astype(np.float32)
