"""Memory: inputs are not copied, outputs are the engine's allocations handed
to numpy, they outlive the engine, and nothing leaks over 1000 calls."""

import gc
import os
import subprocess
import sys
import textwrap
import tracemalloc

import numpy as np
import pytest

import quicksilver as qs


def _rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


# Runs shift_magnify at magnification 1 (output the input's size) on a
# 64 MiB stack of the given dtype in a fresh process and prints the growth
# of its peak resident set (VmHWM) over the run, in units of the float32
# stack size.
PEAK_SCRIPT = textwrap.dedent("""
    import sys, numpy as np, quicksilver as qs
    def hwm():
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    dtype = np.dtype(sys.argv[1])
    x = np.ones((16, 1024, 1024), dtype=dtype)   # pages touched
    e = qs.Engine(db=":memory:", opencl=False, calibration=False)
    e.run("shift_magnify", x[:, :8, :8], impl="serial")  # pool, code paged in
    before = hwm()
    r = e.run("shift_magnify", x, impl="serial", magnification_row=1,
              magnification_col=1)
    assert r[0].shape == x.shape and float(r[0][3, 500, 500]) == 1.0
    print((hwm() - before) / (x.size * 4))
""")


def _peak_growth(dtype):
    out = subprocess.run([sys.executable, "-c", PEAK_SCRIPT, dtype],
                         check=True, capture_output=True, text=True,
                         timeout=300)
    return float(out.stdout.strip())


def test_float32_input_is_not_copied():
    # the output (1x) is the only new memory; a copy of the input would
    # make it 2x, as the uint16 conversion below shows
    growth = _peak_growth("float32")
    assert 0.9 < growth < 1.4, growth


def test_uint16_input_is_converted_once():
    growth = _peak_growth("uint16")
    assert 1.9 < growth < 2.4, growth


def test_outputs_are_engine_memory_owned_by_a_capsule(engine, stack):
    res = engine.run("roberts_cross", stack)
    for out in res:
        assert not out.flags.owndata
        assert type(out.base).__name__ == "PyCapsule"
        assert out.flags.c_contiguous and out.flags.writeable
        assert out.dtype == np.float32 and out.shape == stack.shape


def test_outputs_survive_engine_close(stack):
    e = qs.Engine(db=":memory:", opencl=False, calibration=False)
    out = e.run("esrrf", stack, magnification=2, impl="serial")["output"]
    e.close()
    del e
    gc.collect()
    # fresh memory churn where a freed buffer would be reused
    junk = [np.full(out.shape, 7.0, np.float32) for _ in range(8)]
    with qs.Engine(db=":memory:", opencl=False, calibration=False) as e2:
        again = e2.run("esrrf", stack, magnification=2, impl="serial")[0]
    del junk
    assert np.array_equal(out, again)
    assert float(out.max()) > 0


def test_no_leak_over_1000_calls(engine):
    x = np.random.default_rng(3).random((4, 64, 64), dtype=np.float32)
    for _ in range(100):  # warm up: pool, store statements, caches
        engine.run("roberts_cross", x, impl="serial")
    gc.collect()
    rss0 = _rss_kb()
    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    for _ in range(1000):
        a, b = engine.run("roberts_cross", x, impl="serial")
    del a, b
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    py_growth = sum(s.size_diff for s in snap1.compare_to(snap0, "filename"))
    rss_growth_kb = _rss_kb() - rss0
    # Each call allocates 2 x 64 KiB of outputs: a leaked output would
    # show as 128 MiB. The store (in memory here) legitimately grows by a
    # row per run.
    assert py_growth < 64 * 1024, py_growth
    assert rss_growth_kb < 8 * 1024, rss_growth_kb


def test_no_leak_over_1000_failing_calls(engine):
    # the error path: parameters parsed, the engine refuses, an exception
    # object is made and dropped
    x = np.random.default_rng(4).random((2, 64, 64), dtype=np.float32)
    for _ in range(100):
        with pytest.raises(qs.ParameterError):
            engine.run("esrrf", x, radius=float("nan"))
    gc.collect()
    rss0 = _rss_kb()
    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    for _ in range(1000):
        try:
            engine.run("esrrf", x, radius=float("nan"))
        except qs.ParameterError:
            pass
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    py_growth = sum(s.size_diff for s in snap1.compare_to(snap0, "filename"))
    assert py_growth < 64 * 1024, py_growth
    assert _rss_kb() - rss0 < 4 * 1024
