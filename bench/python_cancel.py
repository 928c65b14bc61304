#!/usr/bin/env python3
"""python_cancel.py — how soon a Python call stops when asked, and what the
watching of a call (progress= and Ctrl-C: a thread per call, the caller
waking every 20 ms) costs a call too short to report.

    PYTHONPATH=build/tools/python python3 bench/python_cancel.py [REPEATS]

1. Ctrl-C: SIGINT sent by a timer thread 0.3 s into a long serial eSRRF
   (x5 of 200 camera-like frames of 64 x 64, ~15 s whole on a quiet 2-core
   machine); seconds from the signal to KeyboardInterrupt.
2. progress callback: returns True from its first report with done > 0;
   seconds from that report to CancelledError.
3. per-call overhead: a tiny eSRRF (2 frames of 16 x 16, x2, serial) timed
   over 300 calls, with progress=None and with a no-op callback (the
   thread is the same in both; the callback adds its reports).
REPEATS (default 5) times each; prints min and median.
"""

import os
import signal
import statistics
import sys
import threading
import time

import numpy as np

import quicksilver as qs


def camera(f, r, c):
    rng = np.random.default_rng(7)
    return rng.poisson(100 + 50 * rng.random((f, r, c))).astype(np.float32)


def sigint_latency(eng, stack):
    sent = []

    def fire():
        sent.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGINT)

    threading.Timer(0.3, fire).start()
    try:
        eng.run("esrrf", stack, impl="serial", magnification=5)
    except KeyboardInterrupt:
        return time.perf_counter() - sent[0]
    raise SystemExit("the call ended without KeyboardInterrupt")


def callback_latency(eng, stack):
    asked = []

    def stop(done, total):
        if done > 0 and not asked:
            asked.append(time.perf_counter())
        return bool(asked)

    try:
        eng.run("esrrf", stack, impl="serial", magnification=5, progress=stop)
    except qs.CancelledError:
        return time.perf_counter() - asked[0]
    raise SystemExit("the call ended without CancelledError")


def per_call(eng, tiny, progress, n=300):
    t = time.perf_counter()
    for _ in range(n):
        eng.run("esrrf", tiny, impl="serial", magnification=2,
                progress=progress)
    return (time.perf_counter() - t) / n


def show(name, xs, unit=1.0, fmt="{:.3f} s"):
    xs = [x * unit for x in xs]
    print(f"{name:44s} min {fmt.format(min(xs))}  median "
          f"{fmt.format(statistics.median(xs))}  (n={len(xs)})")


def main():
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    print("load average:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    long_stack, tiny = camera(200, 64, 64), camera(2, 16, 16)
    with qs.Engine(db=":memory:", opencl=False, calibration=False) as eng:
        show("Ctrl-C -> KeyboardInterrupt",
             [sigint_latency(eng, long_stack) for _ in range(reps)])
        show("callback True -> CancelledError",
             [callback_latency(eng, long_stack) for _ in range(reps)])
        per_call(eng, tiny, None, 30)  # warm-up
        show("tiny call, progress=None", [per_call(eng, tiny, None)
                                          for _ in range(reps)], 1e6,
             "{:.0f} us")
        show("tiny call, progress=no-op callback",
             [per_call(eng, tiny, lambda d, t: None) for _ in range(reps)],
             1e6, "{:.0f} us")


if __name__ == "__main__":
    main()
