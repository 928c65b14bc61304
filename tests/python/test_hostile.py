"""The binding tried as a careless or hostile caller would: threads racing
close() against a running call and a stream being opened, strings with an
embedded NUL, unaligned arrays, a closed engine, NaN pixels, sizes past
what the library holds. Every case ends in an exception that says what is
wrong, never a crash or a result of something else. Also run under
AddressSanitizer in CI's sanitizer stage (the extension built with it)."""

import threading
import time

import numpy as np
import pytest

import quicksilver as qs


def _engine():
    return qs.Engine(db=":memory:", opencl=False, calibration=False)


def _frames(n=6, rows=16, cols=16, seed=1):
    rng = np.random.default_rng(seed)
    return (100 + 20 * rng.random((n, rows, cols))).astype(np.float32)


def _open_stream(e):
    return e.esrrf_stream(16, 16, window=2, impl="serial", magnification=2)


def _use_stream(s, small):
    s.push(small[:2])
    r = s.pop()
    assert r is not None and np.isfinite(r.image).all()


def _open_plan(e):
    return e.open("roberts_cross", (2, 16, 16), impl="serial")


def _use_plan(p, small):
    res = p.run(small[:2])
    assert res[0].shape == (2, 16, 16)


@pytest.mark.parametrize("kind", ["stream", "plan"])
def test_close_racing_a_call_and_a_stream_open(kind):
    """One thread runs a long call, a second opens a stream (it waits for
    the call), a third closes the engine (it waits too). Whichever of the
    two gets the engine first, the other is refused with a clear error; the
    stream, if opened, works, and a new engine afterwards works. close()
    used to count the streams before waiting, then free the engine under
    the new stream (a garbled error at the next push, a segfault at the
    next Engine())."""
    long = _frames(n=8, rows=64, cols=64, seed=2)
    small = _frames()
    outcomes = set()
    for _ in range(4):
        e = _engine()
        got = {}

        def runner():
            got["run"] = e.run("esrrf", long, impl="serial",
                               magnification=4)

        def opener():
            try:
                got["stream"] = (_open_stream if kind == "stream"
                                 else _open_plan)(e)
            except qs.Error as x:
                got["stream_error"] = x

        def closer():
            try:
                e.close()
                got["closed"] = True
            except qs.Error as x:
                got["close_error"] = x

        a = threading.Thread(target=runner)
        a.start()
        time.sleep(0.05)  # the call holds the engine
        b = threading.Thread(target=opener)
        b.start()
        time.sleep(0.02)
        c = threading.Thread(target=closer)
        c.start()
        for t in (a, b, c):
            t.join(60)
            assert not t.is_alive()
        assert got["run"]["output"].shape == (1, 256, 256)
        if "stream" in got:
            # the stream came first: close() saw it and refused
            assert "close_error" in got and "still open" in str(
                got["close_error"])
            s = got["stream"]
            (_use_stream if kind == "stream" else _use_plan)(s, small)
            s.close()
            e.close()
            outcomes.add("stream first")
        else:
            # close came first: the stream open was told the engine closed
            assert got.get("closed") is True
            assert isinstance(got["stream_error"], qs.ClosedError)
            outcomes.add("close first")
        assert e.closed
    # a fresh engine after all that (it used to segfault)
    with _engine() as e2:
        res = e2.run("roberts_cross", small)
        assert res[0].shape == small.shape
    assert outcomes


def test_stream_closed_by_another_thread_while_waiting():
    """A push waiting for the engine while another thread closes the stream
    is refused with ClosedError, never run on the freed stream."""
    long = _frames(n=8, rows=64, cols=64, seed=3)
    with _engine() as e:
        s = e.esrrf_stream(16, 16, window=2, impl="serial", magnification=2)
        errors = []

        def runner():
            e.run("esrrf", long, impl="serial", magnification=4)

        def pusher():
            try:
                s.push(_frames(n=2))
            except qs.Error as x:
                errors.append(x)

        a = threading.Thread(target=runner)
        a.start()
        time.sleep(0.05)
        b = threading.Thread(target=pusher)
        b.start()
        c = threading.Thread(target=s.close)
        c.start()
        for t in (a, b, c):
            t.join(60)
        assert s.closed
        assert not errors or isinstance(errors[0], qs.ClosedError)


@pytest.mark.parametrize("value", ["5\x00junk", "\x005"])
def test_nul_in_a_value_is_refused(value):
    with _engine() as e:
        with pytest.raises(qs.ParameterError, match="NUL"):
            e.run("esrrf", _frames(), magnification=value)
        with pytest.raises(qs.ParameterError, match="NUL"):
            e.run("esrrf", _frames(), temporal="avg\x00var")
        with pytest.raises(qs.ParameterError, match="NUL"):
            e.esrrf_stream(16, 16, window=2, magnification=value)


def test_nul_in_a_keyword_is_refused():
    with _engine() as e:
        with pytest.raises(qs.ParameterError, match="NUL"):
            e.run("esrrf", _frames(), **{"magnification\x00junk": 3})
        with pytest.raises(qs.ParameterError, match="NUL"):
            e.esrrf_stream(16, 16, window=2, **{"radius\x00": 1.0})
        # the method and implementation names too
        with pytest.raises((ValueError, qs.Error)):
            e.run("esrrf\x00x", _frames())
        with pytest.raises((ValueError, qs.Error)):
            e.run("esrrf", _frames(), impl="serial\x00x")


def test_unaligned_contiguous_float32_is_converted():
    x = _frames(n=2)
    buf = np.zeros(x.nbytes + 1, dtype=np.uint8)
    un = np.frombuffer(buf.data, dtype=np.float32, count=x.size,
                       offset=1).reshape(x.shape)
    un[...] = x
    assert not un.flags.aligned and un.flags.c_contiguous
    with _engine() as e:
        got = e.run("roberts_cross", un)
        want = e.run("roberts_cross", x)
        assert np.array_equal(got[0], want[0])
        with pytest.raises(qs.CopyError, match="not aligned"):
            e.run("roberts_cross", un, copy=False)
        s = e.esrrf_stream(16, 16, window=2, impl="serial", magnification=2)
        s.push(un)
        assert s.pop() is not None
        s.close()


def test_closed_engine_says_it_is_closed():
    e = _engine()
    e.close()
    for call in (lambda: e.run("roberts_cross", _frames()),
                 lambda: e.methods(),
                 lambda: e.impls("esrrf"),
                 lambda: e.esrrf_stream(16, 16, window=2),
                 lambda: e.db_rows()):
        with pytest.raises(qs.ClosedError, match="engine is closed"):
            call()
    assert issubclass(qs.ClosedError, ValueError)
    assert not issubclass(qs.ClosedError, qs.ParameterError)


def test_closed_stream_says_it_is_closed():
    with _engine() as e:
        s = e.esrrf_stream(16, 16, window=2, impl="serial", magnification=2)
        s.close()
        for call in (lambda: s.push(_frames(n=1)), s.pop, s.end):
            with pytest.raises(qs.ClosedError, match="stream is closed"):
                call()
        p = _open_plan(e)
        p.close()
        p.close()
        with pytest.raises(qs.ClosedError, match="plan is closed"):
            p.run(_frames(n=2))


def test_nan_pixel_refused_with_its_place_named():
    x = _frames(n=10, rows=24, cols=24)
    x[6, 5, 17] = np.nan
    with _engine() as e:
        with pytest.raises(qs.ParameterError,
                           match="frame 6 has nan at row 5, column 17"):
            e.run("esrrf", x, magnification=2)
        with e.esrrf_stream(24, 24, window=2, magnification=2) as s:
            with pytest.raises(qs.ParameterError, match="row 5, column 17"):
                s.push(x[6])


def test_sizes_past_what_the_library_holds():
    with _engine() as e:
        with pytest.raises(qs.Error, match="max_pending"):
            e.esrrf_stream(16, 16, window=2, max_pending=2**62)
        with pytest.raises(qs.Error):
            e.esrrf_stream(2**40, 2**40, window=2)
