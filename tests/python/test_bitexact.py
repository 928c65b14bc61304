"""Every method through the binding gives the C library's output bit for bit
for the same implementation: the C side is bench/qs_run.c (QS_RUN), run on
the same raw float32 files with the same parameters, writing its outputs
with -o."""

import os
import subprocess

import numpy as np
import pytest

import quicksilver as qs
from conftest import REF, load_f32, reference_cases

QS_RUN = os.environ.get("QS_RUN")
# One fixture case per method (inputs and parameters from the NanoPyx
# fixtures), two for eSRRF: VAR over timepoints, TAC2 with a NaN timepoint.
CASE_NAMES = ["sm_sim_frac", "rc_sim", "rgc_real_m5_r15_s2_iw",
              "es_real_var_fpt8", "es_sim_tac2_fpt7"]
CASES = {c["name"]: c for c in reference_cases() if c["name"] in CASE_NAMES}


def _impls():
    """(case, impl, opencl) for every implementation available here. An
    OpenCL implementation is compared with OpenCL on in both processes, the
    CPU ones with it off (quicker start)."""
    with qs.Engine(db=":memory:", calibration=False) as e:
        out = []
        for name in CASE_NAMES:
            for i in e.impls(CASES[name]["method"]):
                # composed lets the agent pick each step: the numbers are
                # those of the steps chosen, not fixed by the name
                if i.available and i.kind != "composite":
                    out.append((name, i.name, i.kind == "opencl"))
        return out


IMPLS = _impls()


def _text(v):
    return ("true" if v else "false") if isinstance(v, bool) else str(v)


def _c_outputs(case, impl, opencl, tmp_path):
    args = [QS_RUN, "-m", case["method"], "-I", impl, "-w", "0", "-r", "1",
            "-o", str(tmp_path / "c")]
    for i in case["inputs"]:
        args += ["-i", f"{REF / i['file']}:{','.join(map(str, i['shape']))}"]
    for k, v in case["params"].items():
        args += ["-p", f"{k}={_text(v)}"]
    env = dict(os.environ, QUICKSILVER_DB=":memory:")
    if not opencl:
        env["QUICKSILVER_NO_OPENCL"] = "1"
    subprocess.run(args, check=True, env=env, stdout=subprocess.DEVNULL,
                   timeout=300)
    return [np.fromfile(tmp_path / f"c.{k}.f32", dtype=np.float32)
            for k in range(len(case["outputs"]))]


def test_every_method_and_cpu_impl_is_compared():
    methods = {CASES[c]["method"] for c, _, _ in IMPLS}
    assert methods == {"shift_magnify", "roberts_cross", "rgc", "esrrf"}
    assert {"serial", "threaded_dynamic"} <= {i for _, i, _ in IMPLS}


@pytest.mark.skipif(not QS_RUN, reason="QS_RUN (bench/qs_run.c) not given")
@pytest.mark.parametrize("name,impl,opencl", IMPLS,
                         ids=[f"{c}-{i}" for c, i, _ in IMPLS])
def test_same_bits_as_c(name, impl, opencl, tmp_path):
    case = CASES[name]
    with qs.Engine(db=":memory:", opencl=opencl, calibration=False) as e:
        res = e.run(case["method"], *[load_f32(i) for i in case["inputs"]],
                    impl=impl, **case["params"])
    assert res.report.impl == impl
    want = _c_outputs(case, impl, opencl, tmp_path)
    assert len(res) == len(want)
    for got, c in zip(res, want):
        assert got.size == c.size
        # identical bit patterns, NaN included
        assert np.array_equal(got.ravel().view(np.uint32), c.view(np.uint32))
