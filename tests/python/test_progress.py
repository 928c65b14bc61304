"""Progress reports and cancellation of Python calls: the progress= callback
(monotonic reports ending at done == total, a true return or an exception
cancels with nothing recorded), progress=True, and Ctrl-C (SIGINT from a
timer thread) cancelling a long call on the main thread.

The long calls run eSRRF with the serial implementation on a camera-like
stack that takes tens of seconds whole, so a call that ends within a
couple of seconds of the request was cancelled, and its last report shows
it stopped short of the total."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import quicksilver as qs

# Seconds between the cancel request and the call's return, allowed: the
# engine checks about every 50 ms; the rest is a loaded CI machine's slack.
PROMPT = 3.0


def camera(frames, rows, cols, seed=7):
    rng = np.random.default_rng(seed)
    return rng.poisson(100 + 50 * rng.random((frames, rows, cols))).astype(
        np.float32)


def interrupted_promptly(call):
    """Runs call() on the main thread with SIGINT sent 0.5 s in: it must
    raise KeyboardInterrupt within PROMPT seconds of the signal."""
    assert threading.current_thread() is threading.main_thread()
    sent = []

    def interrupt():
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(0.5, interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            call()
    finally:
        timer.cancel()
    late = time.monotonic() - sent[0]
    assert late < PROMPT, f"KeyboardInterrupt {late:.2f} s after SIGINT"


@pytest.fixture(scope="module")
def long_stack():
    """eSRRF x5 of this with the serial implementation takes ~15 s on a
    quiet 2-core machine (~45 s loaded)."""
    return camera(200, 64, 64)


def test_reports_monotonic_and_end_at_total(engine):
    seen = []
    out = engine.run("esrrf", camera(24, 48, 48), impl="serial",
                     magnification=4, progress=lambda d, t: seen.append((d, t)))
    assert out["output"].shape == (1, 192, 192)
    assert seen, "no progress report"
    done = [d for d, _ in seen]
    assert done == sorted(done), "done went back"
    total = seen[-1][1]
    assert total > 0 and seen[-1] == (total, total)
    assert all(t in (0, total) for _, t in seen), seen
    assert all(d <= total for d in done)


def test_report_runs_on_calling_thread(engine, stack):
    where = set()
    res = {}

    def call():
        res["out"] = engine.run(
            "esrrf", stack, impl="serial", magnification=2,
            progress=lambda d, t: where.add(threading.get_ident()))

    t = threading.Thread(target=call)
    t.start()
    t.join()
    assert res["out"]["output"].shape == (1, 48, 40)
    assert where == {t.ident}


def test_true_return_cancels_promptly_nothing_recorded(engine, long_stack):
    last = {}
    asked = []

    def stop(done, total):
        last["done"], last["total"] = done, total
        if done > 0 and not asked:
            asked.append(time.monotonic())
        return bool(asked)

    with pytest.raises(qs.CancelledError) as err:
        engine.run("esrrf", long_stack, impl="serial", magnification=5,
                   progress=stop)
    late = time.monotonic() - asked[0]
    assert err.value.name == "cancelled"
    assert late < PROMPT, f"returned {late:.2f} s after the request"
    assert 0 < last["done"] < last["total"]
    assert engine.db_rows(method="esrrf") == []


def test_raising_callback_propagates_and_cancels(engine, long_stack):
    class Stop(Exception):
        pass

    def boom(done, total):
        if done > 0:
            raise Stop("from the callback")

    t0 = time.monotonic()
    with pytest.raises(Stop, match="from the callback"):
        engine.run("esrrf", long_stack, impl="serial", magnification=5,
                   progress=boom)
    assert time.monotonic() - t0 < 10 + PROMPT  # far short of a whole run
    assert engine.db_rows(method="esrrf") == []
    # the engine serves the next call
    assert engine.run("esrrf", camera(4, 16, 16), magnification=2)[0].shape \
        == (1, 32, 32)


def test_sigint_from_timer_thread_cancels_long_call(engine, long_stack):
    assert threading.current_thread() is threading.main_thread()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    interrupted_promptly(lambda: engine.run("esrrf", long_stack, impl="serial",
                                            magnification=5))
    assert engine.db_rows(method="esrrf") == []


def test_benchmark_reports_runs_and_ctrl_c_cancels(engine, stack,
                                                   long_stack):
    """A benchmark counts its runs (warm-up and timed, of every
    implementation); SIGINT during one cancels the running implementation
    promptly, which records nothing."""
    seen = []
    rows = engine.benchmark("shift_magnify", stack, impls="serial,threaded",
                            warmup=1, repeats=2, magnification_row=2,
                            magnification_col=2,
                            progress=lambda d, t: seen.append((d, t)))
    assert seen and seen[-1] == (3 * len(rows), 3 * len(rows))
    assert all(a[0] * b[1] <= b[0] * a[1] for a, b in zip(seen, seen[1:]))
    interrupted_promptly(lambda: engine.benchmark(
        "esrrf", long_stack, impls="serial", warmup=0, repeats=2,
        magnification=5))
    assert engine.db_rows(method="esrrf") == []


def test_progress_true_and_bad_progress(engine, stack):
    # a tqdm bar where tqdm is installed, nothing otherwise: same result
    a = engine.run("esrrf", stack, magnification=2, impl="serial",
                   progress=True)[0]
    b = engine.run("esrrf", stack, magnification=2, impl="serial")[0]
    np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="progress must be"):
        engine.run("esrrf", stack, magnification=2, progress="yes")


def test_module_functions_take_progress(stack, monkeypatch):
    monkeypatch.setenv("QUICKSILVER_DB", ":memory:")
    seen = []
    out = qs.esrrf(stack, magnification=2, impl="serial",
                   progress=lambda d, t: seen.append((d, t)))
    assert out.shape == (1, 48, 40) and seen[-1][0] == seen[-1][1] > 0


def test_plan_runs_report_and_cancel(engine, long_stack):
    """A plan keeps the hook it was opened with: every run reports to its
    own callback; Ctrl-C and a true return cancel a plan's run."""
    with engine.open("esrrf", long_stack.shape, impl="serial",
                     magnification=5) as plan:
        small = camera(24, 48, 48)
        with engine.open("esrrf", small.shape, impl="serial",
                         magnification=4) as quick:
            seen = []
            out = quick.run(small, progress=lambda d, t: seen.append((d, t)))
            assert out["output"].shape == (1, 192, 192)
            assert seen and seen[-1][0] == seen[-1][1] > 0
            assert quick.run(small)["output"].shape == (1, 192, 192)
        with pytest.raises(qs.CancelledError):
            plan.run(long_stack, progress=lambda d, t: d > 0)
        timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
        timer.start()
        t0 = time.monotonic()
        try:
            with pytest.raises(KeyboardInterrupt):
                plan.run(long_stack)
        finally:
            timer.cancel()
        assert time.monotonic() - t0 < 0.5 + PROMPT
    assert not [r for r in engine.db_rows(method="esrrf")
                if r.key.startswith("esrrf(200x64x64;")]


def test_sweep_reports_frames_by_radii_and_cancels(engine, long_stack):
    """A sweep counts frames x radii, monotonic up to its total; a true
    return and Ctrl-C cancel it promptly (its eSRRF steps serial, ~15 s a
    radius on the long stack), keeping nothing."""
    x = camera(24, 32, 32)
    seen = []
    sw = engine.esrrf_sweep(x, [1.0, 1.5], [1.0, 2.0], magnification=2,
                            progress=lambda d, t: seen.append((d, t)))
    assert sw.qnr.shape == (1, 2, 2)
    assert seen and seen[-1] == (24 * 2, 24 * 2)
    assert all(t == 48 for _, t in seen), seen
    done = [d for d, _ in seen]
    assert done == sorted(done), "done went back"
    last = {}

    def stop(d, t):
        last["d"], last["t"] = d, t
        return d > 0

    t0 = time.monotonic()
    with pytest.raises(qs.CancelledError):
        engine.esrrf_sweep(long_stack, [1.0, 1.5], [1.0], magnification=5,
                           impl="serial", progress=stop)
    assert time.monotonic() - t0 < 15 + PROMPT  # short of two radii
    assert 0 < last["d"] < last["t"] == 2 * long_stack.shape[0]
    interrupted_promptly(lambda: engine.esrrf_sweep(
        long_stack, [1.0, 1.5], [1.0], magnification=5, impl="serial"))
    # the engine serves the next call
    assert engine.esrrf_sweep(x, [1.0], [1.0], magnification=2).qnr.shape \
        == (1, 1, 1)
