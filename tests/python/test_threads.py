"""The GIL is released for the whole run: Python threads keep running during
a call, and two threads with two engines compute at the same time."""

import threading
import time

import numpy as np

import quicksilver as qs


def _long_stack():
    return np.random.default_rng(5).random((4, 48, 48), dtype=np.float32)


def test_python_runs_during_a_call():
    x = _long_stack()
    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    with qs.Engine(db=":memory:", opencl=False, calibration=False) as e:
        t = threading.Thread(target=ticker)
        t.start()
        time.sleep(0.01)
        t0 = time.perf_counter()
        res = e.run("esrrf", x, impl="serial")
        t1 = time.perf_counter()
        stop.set()
        t.join()
    inside = [k for k in ticks if t0 < k < t1]
    # with the GIL held the ticker could not tick at all during the call
    assert res.report.seconds > 0.05
    assert len(inside) >= 10, (len(inside), t1 - t0)


def test_two_engines_overlap_in_time():
    # Each run's own wall seconds are timed inside C. Runs that cannot
    # overlap (GIL held) take at least the sum of them in total; runs in
    # parallel take less, even when other load shares the cores (then each
    # run is stretched but both are in progress together).
    x = _long_stack()
    engines = [qs.Engine(db=":memory:", opencl=False, calibration=False,
                         threads=1) for _ in range(2)]
    seconds = []

    def work(e):
        seconds.append(e.run("esrrf", x, impl="serial").report.seconds)

    threads = [threading.Thread(target=work, args=(e,)) for e in engines]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = time.perf_counter() - t0
    for e in engines:
        e.close()
    assert len(seconds) == 2
    assert total < 0.8 * sum(seconds), (total, seconds)


def test_one_engine_two_threads_take_turns():
    # an engine serves one call at a time: both calls succeed, in turn
    x = _long_stack()
    results = []
    with qs.Engine(db=":memory:", opencl=False, calibration=False) as e:
        def work():
            results.append(e.run("esrrf", x, impl="serial", magnification=2))
        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(results) == 2
    assert np.array_equal(results[0][0], results[1][0])
