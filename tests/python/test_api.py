"""The Python API: Engine, Result, Report, methods, devices, benchmark,
the module-level shortcuts, 2-D inputs and Ctrl-C."""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import quicksilver as qs


def test_result_in_order_and_by_name(engine, stack):
    res = engine.run("roberts_cross", stack)
    assert res.names == ("gradient_col", "gradient_row")
    gc, gr = res
    assert res["gradient_col"] is gc and res[1] is gr and len(res) == 2
    assert res.as_dict() == {"gradient_col": gc, "gradient_row": gr}
    with pytest.raises(KeyError, match="gradient_col"):
        res["output"]
    # Roberts cross at a top-left corner: the first differences of the
    # 2 x 2 neighbourhood (closed form on a ramp)
    ramp = np.add.outer(np.arange(6.0) * 3, np.arange(5.0) * 2)[None]
    gcol, grow = engine.run("roberts_cross", ramp.astype(np.float32))
    assert gcol.shape == grow.shape == (1, 6, 5)


def test_report_fields(engine, stack):
    rep = engine.run("esrrf", stack, magnification=2).report
    assert isinstance(rep, qs.Report)
    assert rep.impl in {i.name for i in engine.impls("esrrf")}
    assert rep.reason in {"forced", "history", "model", "calibration",
                          "exploration", "fallback", "static"}
    assert rep.seconds > 0 and rep.fallbacks == 0
    assert rep.record_status == "ok" and engine.record_status == ("ok", "")
    assert rep.bytes_up == rep.bytes_down == 0  # CPU: nothing moved
    assert rep.estimates and all(isinstance(e, qs.Estimate)
                                 for e in rep.estimates)
    forced = engine.run("esrrf", stack, magnification=2, impl="serial")
    assert forced.report.impl == "serial" and forced.report.reason == "forced"


def test_methods_describe_params_and_impls(engine):
    ms = {m.name: m for m in engine.methods()}
    assert set(ms) == {"shift_magnify", "roberts_cross", "rgc", "esrrf",
                       "squirrel", "frc", "decorr"}
    es = ms["esrrf"]
    p = {x.name: x for x in es.params}
    assert p["magnification"].type == "int" and p["magnification"].default == 5
    assert (p["magnification"].min, p["magnification"].max) == (1, 64)
    assert p["radius"].default == 1.5 and p["radius"].min_open
    assert p["temporal"].choices == ("avg", "var", "tac2", "none")
    assert p["temporal"].default == "avg"
    assert p["intensity_weighting"].default is True
    assert [n for n, _ in es.inputs] == ["image"]
    assert [n for n, _ in ms["rgc"].inputs] == ["gradient_col",
                                                "gradient_row", "image"]
    impls = {i.name: i for i in es.impls}
    assert impls["serial"].available and impls["serial"].kind == "serial"
    assert not impls["opencl"].available and impls["opencl"].why
    assert es.tolerance > 0


def test_devices(engine):
    devs = engine.devices()
    assert [d.name for d in devs] == ["cpu"]  # this engine has no OpenCL
    cpu = devs[0]
    assert not cpu.opencl and cpu.shares_host_cores
    assert cpu.threads == engine.threads and cpu.cores >= 1
    # the fingerprint is the one the implementations and the store use
    assert {i.device for i in engine.impls("esrrf")
            if i.kind != "opencl"} == {cpu.fingerprint}
    assert engine.opencl_why


def test_devices_with_opencl():
    with qs.Engine(db=":memory:", calibration=False) as e:
        devs = e.devices()
        cl = [d for d in devs if d.opencl]
        assert devs[0].name == "cpu"
        assert bool(cl) == (e.opencl_why == "")
        names = {i.name for i in e.impls("esrrf") if i.kind == "opencl"}
        for d in cl:
            assert f"opencl:{d.name}" in names and d.compute_units >= 1
            x = np.ones((2, 32, 32), np.float32)
            res = e.run("roberts_cross", x, impl=f"opencl:{d.name}")
            # both gradients came down (the input may be used in place
            # by a device that shares host memory: bytes_up can be 0)
            assert res.report.bytes_down >= sum(o.nbytes for o in res)


def test_listed_devices_load_at_first_use(tmp_path):
    """An engine over a cache that lists the devices loads the OpenCL
    runtimes at its first device call, which reports it in load_seconds;
    a CPU call and the next device call report none."""
    with qs.Engine(db=":memory:", cache_dir=tmp_path) as e:  # lists them
        cl = [d.name for d in e.devices() if d.opencl]
    if not cl:
        pytest.skip("no OpenCL device")
    x = np.ones((2, 32, 32), np.float32)
    with qs.Engine(db=":memory:", cache_dir=tmp_path) as e:
        assert e.run("roberts_cross", x, impl="serial").report.load_seconds == 0
        first = e.run("roberts_cross", x, impl=f"opencl:{cl[0]}").report
        again = e.run("roberts_cross", x, impl=f"opencl:{cl[0]}").report
    assert first.load_seconds > 0 and again.load_seconds == 0


def test_estimate_runs_nothing(stack):
    with qs.Engine(db=":memory:", opencl=False) as e:
        cold = e.estimate("esrrf", stack, magnification=2)
        assert cold.reason == "calibration" and cold.seconds == 0
        assert e.db_rows() == []
        forced = e.estimate("esrrf", stack, impl="serial", magnification=2)
        assert (forced.impl, forced.reason) == ("serial", "forced")
        e.run("esrrf", stack, impl="serial", magnification=2)
        warm = e.estimate("esrrf", stack, impl="serial,threaded_static",
                          magnification=2)
        est = {x.impl: x for x in warm.estimates}
        assert est["serial"].source == "history" and est["serial"].runs == 1


def test_engine_properties_and_context(stack):
    with qs.Engine(db=":memory:", threads=1, opencl=False) as e:
        assert e.threads == 1 and e.db_path == ":memory:"
        assert "threads=1" in repr(e)
    assert e.closed and "closed" in repr(e)


def test_benchmark(engine, stack):
    rows = engine.benchmark("roberts_cross", stack, impls="serial,threaded_static",
                            warmup=1, repeats=3)
    assert {r.impl for r in rows} == {"serial", "threaded_static"}
    for r in rows:
        assert r.status == "ok" and r.runs == 3
        assert 0 < r.min <= r.median and r.max_rel_diff == 0
    assert rows[0].median <= rows[1].median  # fastest first


def test_two_dimensional_input_is_one_frame(engine, stack):
    a = engine.run("esrrf", stack[0], magnification=2, impl="serial")[0]
    b = engine.run("esrrf", stack[:1], magnification=2, impl="serial")[0]
    assert a.shape == (1, 48, 40) and np.array_equal(a, b)


def test_shortcuts_equal_engine_runs(engine, stack, monkeypatch):
    want = engine.run("esrrf", stack, magnification=3, temporal="var",
                      impl="serial")[0]
    got = qs.esrrf(stack, magnification=3, temporal="var", impl="serial")
    assert np.array_equal(got, want)
    sm = qs.shift_magnify(stack, shift_row=0.5, magnification_row=1.5,
                          magnification_col=3, impl="serial")
    assert sm.shape == (8, 36, 60)
    assert np.array_equal(sm, engine.run(
        "shift_magnify", stack, shift_row=0.5, magnification_row=1.5,
        magnification_col=3, impl="serial")[0])
    gc, gr = qs.roberts_cross(stack)
    assert np.array_equal(gc, engine.run("roberts_cross", stack)[0])
    # rgc on the steps eSRRF makes: temporal=none is the per-frame rgc map
    mag = engine.run("shift_magnify", stack, magnification_row=2,
                     magnification_col=2, impl="serial")[0]
    g = engine.run("roberts_cross", stack, impl="serial")
    g2 = [engine.run("shift_magnify", x, magnification_row=4,
                     magnification_col=4, impl="serial")[0] for x in g]
    r = qs.rgc(g2[0], g2[1], mag, magnification=2, impl="serial")
    assert r.shape == (8, 48, 40) and np.isfinite(r).all()
    assert qs.default_engine() is qs.default_engine()


def test_keyword_impl_and_copy_are_not_parameters(engine, stack):
    # a misspelt keyword of run() itself is named as such
    with pytest.raises(qs.ParameterError, match="did you mean impl"):
        engine.run("esrrf", stack, imp="serial")
    with pytest.raises(qs.ParameterError, match="did you mean copy"):
        engine.run("esrrf", stack, cpy=False)
    # a misspelt parameter gets the engine's suggestion
    with pytest.raises(qs.ParameterError, match="did you mean radius"):
        engine.run("esrrf", stack, radios=2)


CTRL_C = textwrap.dedent("""
    import os, signal, threading, time, numpy as np, quicksilver as qs
    x = np.random.default_rng(5).random((6, 48, 48), dtype=np.float32)
    e = qs.Engine(db=":memory:", opencl=False, calibration=False)
    threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGINT)).start()
    t0 = time.perf_counter()
    try:
        e.run("esrrf", x, impl="serial")
        print("no interrupt")
    except KeyboardInterrupt:
        print("interrupted", time.perf_counter() - t0 > 0.05)
    # the run was cancelled: nothing recorded
    rows = e.db_rows(method="esrrf")
    print("recorded", [(r.impl, r.status, r.wall > 0.05) for r in rows])
    r = e.run("roberts_cross", x)  # the engine is still usable
    print("after", r[0].shape)
    e.close()
""")


def test_ctrl_c_cancels_the_run():
    out = subprocess.run([sys.executable, "-c", CTRL_C], capture_output=True,
                         text=True, timeout=300, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:3] == [
        "interrupted True", "recorded []", "after (6, 48, 48)"]


@pytest.mark.parametrize("impl", ["serial", "threaded_static", None])
def test_out_arrays_are_written_in_place(engine, stack, impl):
    """run(out=...) writes the caller's arrays (the same objects come back)
    with the bits of allocated outputs; a 2-D array is one frame."""
    ref = engine.run("roberts_cross", stack, impl=impl)
    gx = np.full(stack.shape, -7.0, np.float32)
    gy = np.full(stack.shape, -7.0, np.float32)
    res = engine.run("roberts_cross", stack, impl=ref.report.impl,
                     out=(gx, gy))
    assert res[0] is gx and res[1] is gy
    assert np.array_equal(gx, ref[0]) and np.array_equal(gy, ref[1])
    one = np.full(stack.shape[1:], -7.0, np.float32)
    got = engine.run("shift_magnify", stack[0], magnification_row=1,
                     magnification_col=1, out=one)
    assert got[0] is one
    assert np.array_equal(one, engine.run("shift_magnify", stack[0],
                                          magnification_row=1,
                                          magnification_col=1)[0][0])


def test_out_arrays_refused_with_a_reason(engine, stack):
    good = np.zeros(stack.shape, np.float32)
    with pytest.raises(qs.ShapeError, match="2 arrays for 1 outputs"):
        engine.run("shift_magnify", stack, out=(good, good))
    with pytest.raises(qs.DTypeError, match="float64"):
        engine.run("roberts_cross", stack,
                   out=(good, np.zeros(stack.shape)))
    with pytest.raises(qs.CopyError, match="not C-contiguous"):
        engine.run("roberts_cross", stack,
                   out=(good, np.zeros(stack.shape[::-1], np.float32).T))
    ro = np.zeros(stack.shape, np.float32)
    ro.flags.writeable = False
    with pytest.raises(qs.CopyError, match="read-only"):
        engine.run("roberts_cross", stack, out=(good, ro))
    with pytest.raises(qs.ShapeError, match="the call makes"):
        engine.run("roberts_cross", stack,
                   out=(good, np.zeros(stack.shape[:2] + (3,), np.float32)))
    with pytest.raises(qs.Error, match="overlaps input 0"):
        engine.run("roberts_cross", stack, out=(stack, good))
    with pytest.raises(qs.Error, match="outputs 0 and 1 overlap"):
        engine.run("roberts_cross", stack, out=(good, good))
