"""The live eSRRF stream through the binding (Engine.esrrf_stream over the
C library's esrrf_stream_*): timepoints equal the batch call bit for bit
with the same implementation, sliding windows equal batch calls on their
frames, refused pushes consume nothing."""

import numpy as np
import pytest

import quicksilver as qs

PARAMS = dict(magnification=2, radius=1.5, temporal="var")


@pytest.fixture
def frames(stack):
    rng = np.random.default_rng(11)
    more = rng.poisson(stack.mean(axis=0), (12,) + stack.shape[1:])
    return np.concatenate([stack, more.astype(np.float32)])  # 20 frames


@pytest.mark.parametrize("impl", ["serial", None])
def test_timepoints_equal_the_batch_call(engine, frames, impl):
    got = []
    with engine.esrrf_stream(*frames.shape[1:], window=6, impl=impl,
                             **PARAMS) as s:
        at = 0
        for n in (3, 5, 1, 7, 4):  # pushes that straddle timepoints
            s.push(frames[at:at + n])
            at += n
            got += s.results()
        assert s.frames == 20 and got[-1].first == 12
        s.end()
        got += s.results()
        used = s.impl
    assert [(r.index, r.first, r.frames) for r in got] == [
        (0, 0, 6), (1, 6, 6), (2, 12, 6), (3, 18, 2)]
    batch = engine.run("esrrf", frames, impl=used, frames_per_timepoint=6,
                       **PARAMS)[0]
    assert batch.shape[0] == 4
    for r in got:
        assert r.image.shape == (48, 40) and r.image.dtype == np.float32
        assert np.array_equal(r.image, batch[r.index]), r.index
        assert r.latency >= 0


def test_sliding_window_equals_batch_on_its_frames(engine, frames):
    with engine.esrrf_stream(*frames.shape[1:], window=6, every=2,
                             sliding=True, impl="serial", **PARAMS) as s:
        got = []
        for at in range(0, 20, 3):
            s.push(frames[at:at + 3])
            got += s.results()
    assert [(r.first, r.frames) for r in got] == [
        (k, 6) for k in range(0, 15, 2)]
    for r in got:
        want = engine.run("esrrf", frames[r.first:r.first + 6],
                          impl="serial", **PARAMS)[0][0]
        peak = np.abs(want).max()
        assert np.abs(r.image - want).max() <= 1e-6 * peak


def test_refused_pushes_consume_nothing(engine, frames):
    with engine.esrrf_stream(*frames.shape[1:], window=4, max_pending=1,
                             impl="serial", **PARAMS) as s:
        with pytest.raises(qs.ShapeError):
            s.push(frames[:2, :10, :10])
        bad = frames[:2].copy()
        bad[1, 3, 4] = np.nan
        with pytest.raises(qs.ParameterError, match="NaN|nan|finite"):
            s.push(bad)
        assert s.frames == 0
        s.push(frames[:4])  # one result waiting: the most it holds
        with pytest.raises(qs.SizeError):
            s.push(frames[4:8])
        assert s.frames == 4
        assert len(list(s.results())) == 1
        s.push(frames[4:8])
        s.end()
        with pytest.raises(qs.ParameterError):
            s.push(frames[8:9])
        assert [r.first for r in s.results()] == [4]


def test_bad_stream_options(engine):
    with pytest.raises(qs.ParameterError, match="temporal"):
        engine.esrrf_stream(16, 16, window=4, temporal="none")
    with pytest.raises(qs.Error):
        engine.esrrf_stream(16, 16, window=1, temporal="tac2")
    with pytest.raises(qs.Error):
        engine.esrrf_stream(16, 16, window=6, every=4, sliding=True)
    with pytest.raises(qs.ParameterError, match="did you mean window"):
        engine.esrrf_stream(16, 16, window=4, windw=2)


def test_engine_outlives_its_streams(frames):
    e = qs.Engine(db=":memory:", opencl=False, calibration=False)
    s = e.esrrf_stream(*frames.shape[1:], window=2, impl="serial", **PARAMS)
    s.push(frames[:2])
    with pytest.raises(qs.Error, match="stream"):
        e.close()
    r = s.pop()
    s.close()
    s.close()
    with pytest.raises(qs.Error, match="closed"):
        s.push(frames[:2])
    e.close()
    # the result is engine memory handed to numpy: valid after both closed
    assert r.image.shape == (48, 40) and np.isfinite(r.image).all()
