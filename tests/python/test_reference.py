"""The binding against NanoPyx's own outputs (tests/data/reference), within
the tolerances tests/test_reference.c uses: serial within the case's
tolerance, the engine's own choice within it plus the method's
cross-implementation tolerance."""

import pytest

from conftest import load_f32, reference_cases, rel_error

# The quality metrics give scalars and curves, compared value by value in
# test_sweep.py (and tests/test_<metric>.c), not pixel-wise here.
METRICS = {"squirrel", "frc", "decorr"}
CASES = [c for c in reference_cases() if c["method"] not in METRICS]


def test_fixtures_cover_every_method():
    methods = {c["method"] for c in reference_cases()}
    assert methods == {"shift_magnify", "roberts_cross", "rgc", "esrrf",
                       "squirrel", "frc", "decorr"}


def _run(engine, case, impl):
    ins = [load_f32(i) for i in case["inputs"]]
    return engine.run(case["method"], *ins, impl=impl, **case["params"])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_serial_matches_nanopyx(engine, case):
    res = _run(engine, case, "serial")
    assert res.report.impl == "serial"
    assert len(res) == len(case["outputs"])
    # by position, as tests/test_reference.c (fixture slot names are
    # NanoPyx's)
    for got, out in zip(res, case["outputs"]):
        ref = load_f32(out)
        assert got.dtype.name == "float32"
        assert rel_error(got, ref) <= case["tolerance"], out["slot"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_engine_choice_matches_nanopyx(engine, case):
    res = _run(engine, case, None)
    tol = case["tolerance"] + engine.method(case["method"]).tolerance
    assert len(res) == len(case["outputs"])
    for got, out in zip(res, case["outputs"]):
        assert rel_error(got, load_f32(out)) <= tol, (
            res.report.impl, out["slot"])
