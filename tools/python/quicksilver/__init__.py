"""quicksilver: auto-tuned image-processing kernels (eSRRF, RGC, Catmull-Rom
magnification, Roberts cross) from Python, numpy in and numpy out.

>>> import quicksilver as qs
>>> sr = qs.esrrf(stack, magnification=5)            # (T, R*5, C*5) float32
>>> with qs.Engine() as eng:
...     res = eng.run("esrrf", stack, magnification=5, temporal="var")
...     res.report.impl, res.report.seconds, res["output"].shape

Arrays
    Images are ``(frames, rows, cols)``; a 2-D ``(rows, cols)`` array is one
    frame. A C-contiguous, native float32 input is used in place, never
    copied. Any other real dtype (uint16 from cameras, float64, ...) or
    layout is converted once to a C-contiguous float32 copy for the call
    (float64 is rounded to float32); pass ``copy=False`` to
    :meth:`Engine.run` to get :class:`CopyError` instead of a conversion.
    Outputs are always 3-D float32 arrays that own the memory the engine
    wrote them into (no copy); they stay valid after the engine is closed.

Threads
    The GIL is released for the whole computation, so two Python threads
    with two engines run in parallel. An engine serves one call at a time;
    a second thread calling the same engine waits its turn.

Progress and Ctrl-C
    :meth:`Engine.run`, :meth:`Plan.run`, :meth:`Engine.benchmark` (its
    count is runs), :meth:`Engine.esrrf_sweep` (frames × radii) and the
    module-level functions
    take ``progress=``: a callable ``f(done, total)`` called on the calling
    thread about every 50 ms and once at the end with ``done == total`` (a
    true return value cancels the call with :class:`CancelledError`, an
    exception it raises cancels it and propagates), or ``True`` for a tqdm
    bar when tqdm is installed. Ctrl-C cancels the running call within a fraction of a second and
    raises ``KeyboardInterrupt``; a cancelled call records no timing (a
    cancelled benchmark keeps those of the implementations it finished). A
    stream push runs to its end, then ``KeyboardInterrupt`` is raised.

Timing store
    Every run is timed and recorded in the engine's SQLite store (``db``;
    default ``$QUICKSILVER_DB`` or ``~/.cache/quicksilver/timings.db``,
    ``":memory:"`` keeps nothing), from which the engine picks the fastest
    implementation for each input size.

Errors
    Failures raise a subclass of :class:`Error` carrying the engine's
    status ``name`` and ``message``; see :mod:`quicksilver._errors`.
"""

from __future__ import annotations

import atexit
import difflib
import functools
import os
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional, Sequence, Union, overload

import numpy as np

from . import _core
from . import _progress
from ._errors import (STATUS, CancelledError, ClosedError,
                      ConfigurationError, CopyError,
                      DTypeError, Error, ExistsError, FileFormatError,
                      ImplementationError, OpenCLError, OutOfMemoryError,
                      ParameterError, ShapeError, SizeError, StoreError,
                      UnavailableError, UnknownImplementationError,
                      UnknownMethodError)

__version__: str = _core.VERSION

__all__ = [
    "Engine", "Result", "Report", "Estimate", "BenchEntry", "Method",
    "Parameter", "Implementation", "Device", "Run", "Stat", "Best",
    "default_engine", "esrrf", "esrrf_sweep", "Sweep",
    "shift_magnify", "roberts_cross", "rgc", "Error", "ParameterError",
    "ShapeError", "DTypeError", "CopyError", "UnknownMethodError",
    "UnknownImplementationError", "UnavailableError", "ImplementationError",
    "OpenCLError", "StoreError", "FileFormatError", "OutOfMemoryError",
    "SizeError", "Stream", "StreamResult", "Plan", "CancelledError",
    "ConfigurationError", "ExistsError", "ClosedError", "STATUS",
    "DeviceArray",
]

ArrayLike = Union[np.ndarray, Sequence[Any]]
PathLike = Union[str, "os.PathLike[str]"]
ParamValue = Union[bool, int, float, str]


# ------------------------------------------------------------- results

@dataclass(frozen=True)
class Estimate:
    """The engine's prediction for one implementation at the time of a run.

    ``seconds`` is None when unknown; ``source`` is ``"history"``,
    ``"model"``, ``"scaled"``, ``"none"``, or why it was no candidate
    (``"unavailable"``, ``"failed"``, ``"mismatch"``, ``"device_memory"``).
    ``optimistic`` is the least seconds it could still take by the
    selection rule (its optimistic bound: 0 when nothing is known; None
    when it is no candidate). ``state`` is the rule's verdict on it:
    ``"best"`` (the best timed on the key), ``"next"`` (tried on this
    call: it could beat the best), ``"promising"``, ``"costly"`` (could
    beat the best, but a try costs more than it could save),
    ``"hopeless"`` (no longer tried), ``"second"`` (could beat the best,
    timed at one slice size: a second size first), ``"cold"`` (not timed
    yet), ``"waiting"`` (not timed yet: its one-time costs in this process
    wait for the calibration budget), ``"outclassed"`` (not timed, and
    another schedule of its code shows it cannot beat the best),
    ``"stopped"`` (its slice run, stopped at calibration's time limit,
    shows it cannot beat the best), ``"retry"`` (its slice run was
    stopped short: it runs again when the budget covers what settles it),
    ``"unmeasured"`` (nothing timed on the key to compare with),
    ``"forced"``, or why it was no candidate (``"not_selected"``, ...).
    ``transfer_seconds`` is what moving device arrays for it would add.
    """
    impl: str
    seconds: Optional[float]
    source: str
    runs: int
    optimistic: Optional[float] = None
    state: str = ""
    transfer_seconds: float = 0.0


@dataclass(frozen=True)
class Report:
    """How a run was made: which implementation, why, and how long it took.

    ``reason`` is ``"forced"``, ``"history"``, ``"model"``,
    ``"calibration"``, ``"exploration"``, ``"fallback"`` or ``"static"``.
    All times are wall seconds. ``record_status`` is ``"ok"`` while timings
    are being written to the store, else the status name of why not (see
    :attr:`Engine.record_status`); ``bytes_up``/``bytes_down`` are the bytes
    an OpenCL run moved to and from the device (0 on the CPU), and the
    engine's moves of :class:`DeviceArray` inputs and outputs for an
    implementation of another place, which ``bytes_pulled``/
    ``bytes_pushed`` give apart. ``load_seconds`` is what the call spent
    loading the OpenCL runtimes for a device first used in this process
    (an engine whose devices came from the cached list loads them then),
    in neither ``seconds`` nor ``calibration_seconds``.
    """
    impl: str
    reason: str
    seconds: float
    device_seconds: float
    once_seconds: float
    calibration_seconds: float
    calibration_once_seconds: float
    fallbacks: int
    estimates: tuple[Estimate, ...]
    record_status: str = "ok"
    bytes_up: int = 0
    bytes_down: int = 0
    bytes_pulled: int = 0
    bytes_pushed: int = 0
    load_seconds: float = 0.0

    @classmethod
    def _from(cls, d: dict[str, Any]) -> "Report":
        fields = dict(d)
        fields["estimates"] = tuple(Estimate(**e) for e in d["estimates"])
        return cls(**fields)


class Result(Sequence[np.ndarray]):
    """The outputs of a run, in the method's order and by name, and its report.

    ``res[0]``, ``res["output"]``, ``a, b = res`` and ``res.outputs`` all
    work; ``res.names`` gives the output names, ``res.report`` the
    :class:`Report` and ``res.provenance`` what made them (a dict).
    """

    __slots__ = ("outputs", "names", "report", "provenance")

    def __init__(self, names: Sequence[str], outputs: Sequence[np.ndarray],
                 report: Report,
                 provenance: Optional[dict[str, Any]] = None) -> None:
        self.outputs: tuple[np.ndarray, ...] = tuple(outputs)
        self.names: tuple[str, ...] = tuple(names)
        self.report: Report = report
        #: What made the outputs, as the CLI writes it into a TIFF
        #: (``quicksilver info``): tool, version, method, impl and every
        #: parameter's value.
        self.provenance: dict[str, Any] = dict(provenance or {})

    @overload
    def __getitem__(self, key: int) -> np.ndarray: ...
    @overload
    def __getitem__(self, key: str) -> np.ndarray: ...
    @overload
    def __getitem__(self, key: slice) -> tuple[np.ndarray, ...]: ...

    def __getitem__(self, key: Union[int, str, slice]
                    ) -> Union[np.ndarray, tuple[np.ndarray, ...]]:
        if isinstance(key, str):
            try:
                return self.outputs[self.names.index(key)]
            except ValueError:
                raise KeyError(f"no output {key!r}; outputs are "
                               f"{', '.join(self.names)}") from None
        return self.outputs[key]

    def __len__(self) -> int:
        return len(self.outputs)

    def __iter__(self) -> Iterator[np.ndarray]:
        return iter(self.outputs)

    def as_dict(self) -> dict[str, np.ndarray]:
        """The outputs by name."""
        return dict(zip(self.names, self.outputs))

    def __repr__(self) -> str:
        shapes = ", ".join(f"{n}={o.shape}" for n, o in
                           zip(self.names, self.outputs))
        return (f"Result({shapes}; {self.report.impl}, {self.report.reason}, "
                f"{self.report.seconds:.6f} s)")


@dataclass(frozen=True)
class BenchEntry:
    """One implementation's benchmark: seconds over ``runs`` timed runs and
    its largest difference from serial relative to max |serial|;
    ``status`` is ``"ok"``, ``"mismatch"`` or the failure's status name."""
    impl: str
    status: str
    runs: int
    min: float
    median: float
    fast_mean: float
    once_seconds: float
    max_rel_diff: float


@dataclass(frozen=True)
class Parameter:
    """A declared parameter: ``type`` is ``"int"``, ``"float"``, ``"bool"``
    or ``"enum"``; ``min``/``max`` are None when unbounded; ``choices`` lists
    an enum's names."""
    name: str
    type: str
    default: ParamValue
    min: Optional[float]
    max: Optional[float]
    min_open: bool
    max_open: bool
    choices: tuple[str, ...]
    doc: str


@dataclass(frozen=True)
class Implementation:
    """One implementation as this engine runs it (OpenCL ones per device)."""
    name: str
    kind: str
    version: int
    available: bool
    why: str
    device: str


@dataclass(frozen=True)
class Method:
    """A method: its inputs and outputs as ``(name, doc)``, parameters,
    implementations and the tolerance between implementations."""
    name: str
    doc: str
    inputs: tuple[tuple[str, str], ...]
    outputs: tuple[tuple[str, str], ...]
    params: tuple[Parameter, ...]
    impls: tuple[Implementation, ...]
    tolerance: float


@dataclass(frozen=True)
class Device:
    """A device the engine runs on: the host CPU (``name == "cpu"``, its
    pool's ``threads`` of ``cores``) or an OpenCL device (``name`` is the
    slug ending its implementations' names, ``"opencl:<name>"``).
    ``fingerprint`` is how the timing store names it; ``shares_host_cores``
    says its work competes with the CPU pool's. Memory sizes in bytes."""
    name: str
    fingerprint: str
    model: str
    platform: str
    vendor: str
    driver: str
    version: str
    opencl: bool
    gpu: bool
    shares_host_cores: bool
    cores: int
    threads: int
    compute_units: int
    clock_mhz: int
    global_mem: int
    max_alloc: int
    local_mem: int
    max_work_group: int
    fp64: bool


@dataclass(frozen=True)
class Run:
    """One recorded run (or failure) in the timing store: ``wall`` is its
    steady wall seconds, ``status`` ``"ok"`` or the failure's status name,
    ``params`` the parameters as JSON text, ``stamp`` unix seconds."""
    id: int
    stamp: float
    method: str
    impl: str
    impl_version: int
    device: str
    key: str
    work: float
    params: str
    wall: float
    device_seconds: float
    once_seconds: float
    status: str
    error: str


@dataclass(frozen=True)
class Stat:
    """Summary of one (method, key, impl, device) group of the store:
    ``count`` successful runs (seconds: min, median, mean of the fastest
    half) and ``failed`` failures (``status``: the newest one's)."""
    method: str
    key: str
    impl: str
    device: str
    count: int
    failed: int
    min: float
    median: float
    fast_mean: float
    status: str


@dataclass(frozen=True)
class Best:
    """The engine's choice for one (method, key) of the store, by the rule
    :meth:`Engine.run` applies (history, then model): ``choice`` is what
    the next call would run, which may be a candidate the rule is still
    trying (``choice.reason`` ``"exploration"`` or ``"verification"``);
    :attr:`impl` is the best known, :attr:`next` the one being tried."""
    method: str
    key: str
    choice: Report

    def _in(self, state: str) -> Optional[Estimate]:
        return next((x for x in self.choice.estimates if x.state == state),
                    None)

    @property
    def impl(self) -> str:
        """The best known: the estimate the rule calls ``"best"`` (the
        best timed on the key), else the choice (nothing timed there)."""
        b = self._in("best")
        return b.impl if b else self.choice.impl

    @property
    def seconds(self) -> Optional[float]:
        """:attr:`impl`'s estimated seconds."""
        return next((x.seconds for x in self.choice.estimates
                     if x.impl == self.impl), None)

    @property
    def next(self) -> Optional[str]:
        """The implementation the next call tries instead of :attr:`impl`
        (its optimistic bound could beat it), or None."""
        n = self._in("next")
        return n.impl if n and self._in("best") else None


# ------------------------------------------------------------- inputs

#: An image on an OpenCL device: ``Engine.push(array)`` makes one, and a
#: call whose inputs are on a device gives its outputs as DeviceArrays
#: there. ``pull()`` (or ``numpy.asarray``, through ``__array__``) copies
#: the pixels to the host; ``shape``, ``dtype`` (float32) and ``device``
#: describe it; ``free()`` releases the buffer at once (else when the last
#: reference goes). Every call takes it as an input.
DeviceArray = _core.DeviceArray

_DLPACK_CPU = (1, 3)  # kDLCPU, kDLCUDAHost: memory the host reads


def _host_view(a: Any, copy: bool, slot: str) -> Any:
    """An array from another library as numpy sees it: the array interface
    and ``__array__`` through np.asarray; a DLPack export of host memory
    (CPU torch tensors, cupy's pinned ones) viewed without a copy; one in
    a CUDA device's memory (cupy, torch on a GPU) copied to the host once,
    since OpenCL cannot read it (copy=False refuses)."""
    if isinstance(a, np.ndarray) or not hasattr(a, "__dlpack__"):
        return a
    try:
        where = a.__dlpack_device__()[0]
    except Exception:  # an exporter without its device: numpy's way
        return a
    if where in _DLPACK_CPU:
        try:
            return np.from_dlpack(a)
        except (TypeError, BufferError, RuntimeError):
            return a
    if not copy:
        raise CopyError(f"input {slot}: in a device's memory (DLPack "
                        f"device type {where}) that OpenCL cannot read; "
                        "copy=False forbids the one copy to the host",
                        name="invalid")
    for host in ("get", "cpu", "numpy"):  # cupy, torch, then generic
        fn = getattr(a, host, None)
        if callable(fn):
            out = fn()
            return out.numpy() if host == "cpu" else out
    raise CopyError(f"input {slot}: in a device's memory (DLPack device type "
                    f"{where}) and no way to copy it to the host (.get(), "
                    ".cpu()); copy it first", name="invalid")


def _as_outputs(out: Any, d: Optional[dict[str, Any]]
                ) -> tuple[tuple[Any, ...], tuple[np.ndarray, ...]]:
    """The caller's output arrays as given and as the 3-D views the engine
    writes: each a writeable, C-contiguous, aligned native float32 ndarray
    of 2 or 3 dimensions (the shapes are the engine's to check)."""
    n = len(d["outputs"]) if d else 1
    arrays = (out,) if isinstance(out, np.ndarray) else tuple(out)
    if len(arrays) != n:
        raise ShapeError(f"out: {len(arrays)} arrays for {n} outputs",
                         name="shape")
    views = []
    for k, a in enumerate(arrays):
        if not isinstance(a, np.ndarray):
            raise DTypeError(f"out {k}: a numpy array is written in place, "
                             f"got {type(a).__name__}", name="invalid")
        if a.dtype != np.float32 or not a.dtype.isnative:
            raise DTypeError(f"out {k}: dtype {a.dtype}; outputs are native "
                             "float32", name="invalid")
        if a.ndim not in (2, 3):
            raise ShapeError(f"out {k}: {a.ndim}-D array of shape {a.shape}; "
                             "expected (frames, rows, cols) or (rows, cols)",
                             name="shape")
        if not (a.flags.c_contiguous and a.flags.aligned
                and a.flags.writeable):
            why = ("not C-contiguous" if not a.flags.c_contiguous else
                   "not aligned" if not a.flags.aligned else "read-only")
            raise CopyError(f"out {k}: {why}; outputs are written in place",
                            name="invalid")
        views.append(a[np.newaxis] if a.ndim == 2 else a)
    return arrays, tuple(views)


def _as_input(a: ArrayLike, copy: bool, slot: str,
              device: bool = True) -> Any:
    """A C-contiguous native float32 3-D view of `a` (itself when it is one
    already, or a DeviceArray as it is where the call takes device images:
    `device`; else its pixels pulled once), converting once when needed
    and allowed."""
    if isinstance(a, DeviceArray):
        if device:
            return a
        if not copy:
            raise CopyError(f"input {slot}: a DeviceArray is read here from "
                            "host memory; copy=False forbids the pull",
                            name="invalid")
        return a.pull()
    arr = np.asarray(_host_view(a, copy, slot))
    if arr.dtype.kind not in "uif":
        raise DTypeError(f"input {slot}: dtype {arr.dtype} is not a real "
                         "number type (float32 is used as is; integer and "
                         "other float types are converted to float32)",
                         name="invalid")
    if arr.ndim == 2:
        arr = arr[np.newaxis]
    elif arr.ndim != 3:
        raise ShapeError(f"input {slot}: {arr.ndim}-D array of shape "
                         f"{arr.shape}; expected (frames, rows, cols) or "
                         "(rows, cols)", name="shape")
    if (arr.dtype == np.float32 and arr.dtype.isnative
            and arr.flags.c_contiguous and arr.flags.aligned):
        return arr
    if not copy:
        why = ("dtype " + str(arr.dtype) if arr.dtype != np.float32
               or not arr.dtype.isnative else "not C-contiguous"
               if not arr.flags.c_contiguous else "not aligned")
        raise CopyError(f"input {slot}: {why}; copy=False forbids the "
                        "conversion to a C-contiguous float32 array",
                        name="invalid")
    # np.ascontiguousarray returns an unaligned float32 array as it is: a
    # new array (aligned, C order) is made instead
    return np.array(arr, dtype=np.float32, order="C", copy=True)


def _as_shape(shape: tuple[int, ...]) -> tuple[int, int, int]:
    """A shape given for an estimate, as (frames, rows, cols)."""
    if len(shape) == 2:
        shape = (1,) + tuple(shape)
    if len(shape) != 3 or not all(isinstance(n, (int, np.integer))
                                  and n >= 0 for n in shape):
        raise ShapeError(f"shape {shape!r}: expected (frames, rows, cols) or "
                         "(rows, cols) of non-negative integers",
                         name="shape")
    return tuple(int(n) for n in shape)  # type: ignore[return-value]


def _unknown_keyword(where: str, key: str, names: Sequence[str]) -> None:
    """ParameterError for keyword `key` of `where`, naming the nearest of
    `names` as the engine does for a method's parameters."""
    near = difflib.get_close_matches(key, list(names), n=1, cutoff=0.6)
    hint = (f"did you mean {near[0]}?" if near
            else "parameters: " + ", ".join(names))
    raise ParameterError(f'{where}: unknown parameter "{key}" ({hint})',
                         name="param")


def _keywords(fn: Any) -> Any:
    """Unknown keywords of a module-level function raise ParameterError
    naming the nearest one (as :meth:`Engine.run` does), not a bare
    TypeError."""
    code = fn.__code__
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]

    @functools.wraps(fn)
    def call(*args: Any, **kw: Any) -> Any:
        for k in kw:
            if k not in names:
                _unknown_keyword(fn.__name__, k,
                                 names[1:] if code.co_argcount else names)
        return fn(*args, **kw)
    return call


def _param_items(params: dict[str, Any]) -> list[tuple[str, Any]]:
    items = []
    for name, value in params.items():
        if isinstance(value, (bool, np.bool_)):
            value = bool(value)
        elif isinstance(value, np.generic):
            value = value.item()
        items.append((name, value))
    return items


def _check_keywords(method: str, desc: Optional[dict[str, Any]],
                    params: dict[str, Any], keywords: Sequence[str]) -> None:
    """A keyword that is no parameter of the method but is close to one of
    the call's own keywords (``imp=`` for ``impl=``) is reported as such;
    the engine suggests among the parameters for every other unknown name."""
    if desc is None:
        return
    names = {p["name"] for p in desc["params"]}
    for k in params:
        if k in names:
            continue
        near = difflib.get_close_matches(k, keywords, n=1, cutoff=0.7)
        if near and not difflib.get_close_matches(k, names, n=1, cutoff=0.7):
            raise ParameterError(f'method {method}: unknown parameter "{k}" '
                                 f'(did you mean {near[0]}?)', name="param")


def _provenance(method: str, desc: Optional[dict[str, Any]], impl: str,
                params: dict[str, Any]) -> dict[str, Any]:
    """The provenance of a run, with the fields and values the CLI writes
    (tools/provenance.c): every parameter, given or default."""
    values: dict[str, Any] = {}
    for p in desc["params"] if desc else ():
        v = params.get(p["name"], p["default"])
        if isinstance(v, np.generic):
            v = v.item()
        values[p["name"]] = str(v).lower() if p["type"] == "enum" else v
    return {"tool": "quicksilver", "version": __version__, "method": method,
            "impl": impl, "params": values}


# ------------------------------------------------------------- engine

class Engine:
    """An engine: runs methods, choosing and timing implementations.

    Args:
        db: timing store file; None: ``$QUICKSILVER_DB``, else
            ``~/.cache/quicksilver/timings.db``; ``":memory:"`` keeps
            timings for this engine only.
        threads: pool threads; None: ``$QUICKSILVER_THREADS``, else all
            cores.
        opencl: False runs without OpenCL devices.
        cache_dir: OpenCL kernel cache; None: ``$QUICKSILVER_CACHE_DIR``,
            else ``~/.cache/quicksilver``.
        seed: fixes the exploration's random choices (None or 0: from the
            clock).
        calibration: False orders implementations with no timings by a
            static rule instead of timing them on small slices first.

    Use as a context manager, or call :meth:`close`, so the last timings are
    written to the store. One call runs at a time on an engine; open one per
    thread for parallel work.
    """

    def __init__(self, db: Optional[PathLike] = None,
                 threads: Optional[int] = None, opencl: bool = True,
                 cache_dir: Optional[PathLike] = None,
                 seed: Optional[int] = None, calibration: bool = True) -> None:
        self._core = _core.Engine(
            db=None if db is None else os.fspath(db),
            threads=0 if threads is None else int(threads),
            opencl=bool(opencl),
            cache_dir=None if cache_dir is None else os.fspath(cache_dir),
            seed=0 if seed is None else int(seed),
            calibration=bool(calibration))
        self._descs: Optional[dict[str, dict[str, Any]]] = None

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Writes pending timings to the store and releases the engine.
        Outputs already returned stay valid. Idempotent."""
        self._core.close()

    @property
    def closed(self) -> bool:
        return self._core.closed

    @property
    def threads(self) -> int:
        """Threads of the engine's pool."""
        return self._core.threads

    @property
    def db_path(self) -> str:
        """The timing store in use (``":memory:"`` possible)."""
        return self._core.db_path

    def _desc(self, method: str) -> Optional[dict[str, Any]]:
        if self._descs is None:
            self._descs = {d["name"]: d for d in self._core.methods()}
        return self._descs.get(method)

    def _inputs(self, method: str, arrays: Sequence[ArrayLike],
                copy: bool) -> tuple[np.ndarray, ...]:
        d = self._desc(method)
        slots = [s for s, _ in d["inputs"]] if d else []
        return tuple(_as_input(a, copy, slots[k] if k < len(slots) else str(k))
                     for k, a in enumerate(arrays))

    def push(self, array: ArrayLike,
             device: Optional[str] = None) -> "DeviceArray":
        """Copies `array` (converted as a run's input) to an OpenCL device:
        ``device`` names it as :meth:`devices` does (``"<slug>"`` or
        ``"opencl:<slug>"``; None: the first). The :class:`DeviceArray`
        goes to any call; outputs of a call on device inputs stay on that
        device, and implementations of that device read the buffers with
        no copy (the others get host memory the engine moves once:
        ``Report.bytes_pulled``/``bytes_pushed``)."""
        arr = _as_input(array, True, "array")
        if isinstance(arr, DeviceArray):
            raise CopyError("push: already a DeviceArray", name="invalid")
        return self._core.push(arr, device)

    def run(self, method: str, *arrays: ArrayLike, impl: Optional[str] = None,
            copy: bool = True, progress: _progress.ProgressArg = None,
            out: Any = None, **params: ParamValue) -> Result:
        """Runs `method` on the input arrays with keyword parameters.

        Args:
            method: ``"esrrf"``, ``"rgc"``, ``"shift_magnify"``,
                ``"roberts_cross"`` (see :meth:`methods`).
            *arrays: the method's inputs in order (see :meth:`methods`).
            impl: None lets the engine choose; an implementation name
                (``"threaded_dynamic"``, ``"opencl:<device>"``) forces it;
                a kind (``"serial"``, ``"threaded"``, ``"opencl"``, ``"cpu"``,
                comma-separated) restricts the choice.
            copy: False raises :class:`CopyError` instead of converting an
                input that is not C-contiguous native float32.
            progress: a callable ``f(done, total)`` (a true return value
                cancels), or True for a tqdm bar; see the module's
                "Progress and Ctrl-C".
            out: the outputs' arrays, written in place instead of new ones
                (one array, or a sequence in the method's output order):
                writeable C-contiguous float32 arrays of the output shapes,
                (frames, rows, cols) or (rows, cols) for one frame, none
                sharing memory with an input or with each other. A loop
                over frames or a live acquisition then reuses its buffers.
                On failure their contents are undefined.
            **params: the method's parameters by name; enums by name
                (``temporal="var"``), booleans as bool.

        Returns:
            :class:`Result`: outputs in the method's order and by name (the
            ``out`` arrays themselves when given), and the :class:`Report`.

        Raises:
            ParameterError: unknown (the message names the nearest), repeated
                or out-of-range parameter, NaN value.
            ShapeError, DTypeError, CopyError, UnknownMethodError,
            UnknownImplementationError, UnavailableError,
            CancelledError: the progress callback returned true.
            ImplementationError: as named.
        """
        inputs = self._inputs(method, arrays, copy)
        d = self._desc(method)
        _check_keywords(method, d, params, ("impl", "copy", "progress",
                                            "out"))
        given = None if out is None else _as_outputs(out, d)
        with _progress.callback(progress, method) as cb:
            outs, rep = self._core.run(
                method, inputs, _param_items(params), impl, cb,
                None if given is None else given[1])
        if given is not None:
            outs = given[0]
        names = [n for n, _ in d["outputs"]] if d else [
            str(k) for k in range(len(outs))]
        return Result(names, outs, Report._from(rep),
                      _provenance(method, d, rep["impl"], params))

    def benchmark(self, method: str, *arrays: ArrayLike,
                  impls: Optional[str] = None, warmup: int = 1,
                  repeats: int = 5, progress: _progress.ProgressArg = None,
                  **params: ParamValue) -> list[BenchEntry]:
        """Times every available implementation (or those in `impls`, names or
        kinds, comma-separated): `warmup` untimed then `repeats` timed runs
        each, all recorded in the store, each output checked against serial.
        Fastest first. `progress` as in :meth:`run`, counting runs;
        cancelled (CancelledError, KeyboardInterrupt), the implementations
        finished before stay recorded."""
        inputs = self._inputs(method, arrays, True)
        _check_keywords(method, self._desc(method), params,
                        ("impls", "warmup", "repeats", "progress"))
        with _progress.callback(progress, method) as cb:
            rows = self._core.benchmark(method, inputs, _param_items(params),
                                        impls, int(warmup), int(repeats), cb)
        return [BenchEntry(**r) for r in rows]

    def methods(self) -> list[Method]:
        """Every method with its parameters (ranges, defaults, docs) and its
        implementations with their availability here."""
        out = []
        for d in self._core.methods():
            params = tuple(Parameter(
                name=p["name"], type=p["type"], default=p["default"],
                min=p["min"], max=p["max"], min_open=p["min_open"],
                max_open=p["max_open"],
                choices=tuple(p["choices"].split("|")) if p["choices"] else (),
                doc=p["doc"]) for p in d["params"])
            out.append(Method(
                name=d["name"], doc=d["doc"], inputs=tuple(d["inputs"]),
                outputs=tuple(d["outputs"]), params=params,
                impls=tuple(self.impls(d["name"])), tolerance=d["tolerance"]))
        return out

    def method(self, name: str) -> Method:
        """One method's description (UnknownMethodError if there is none)."""
        for m in self.methods():
            if m.name == name:
                return m
        # the engine's own message, with the nearest name
        self._core.impls(name)
        raise UnknownMethodError(f"unknown method {name!r}", name="no_method")

    def impls(self, method: str) -> list[Implementation]:
        """The implementations of `method` here, with availability."""
        return [Implementation(**i) for i in self._core.impls(method)]

    def devices(self) -> list[Device]:
        """The devices this engine runs on: the host CPU first, then each
        OpenCL device (none with ``opencl=False``; :attr:`opencl_why`
        says why there is none)."""
        return [Device(**d) for d in self._core.devices()]

    @property
    def record_status(self) -> tuple[str, str]:
        """``("ok", "")`` while timings are written to the store, else the
        status name and message of why they are not (e.g. a read-only or
        damaged store: runs still work, unrecorded)."""
        return self._core.record_status

    def esrrf_stream(self, rows: int, cols: int, *, window: int,
                     sliding: bool = False, every: int = 1,
                     impl: Optional[str] = None, max_pending: int = 0,
                     **params: ParamValue) -> "Stream":
        """A live eSRRF stream over frames of ``rows`` x ``cols`` pushed as
        they are acquired (see :class:`Stream`).

        Args:
            window: N frames per result. Timepoints (``sliding=False``):
                every N frames give one image, the numbers of :meth:`run`
                with ``frames_per_timepoint=N`` and the same implementation.
                Sliding: once N frames have arrived and then every `every`
                frames, the statistic of the last N (N a multiple of
                `every`), equal to a batch run on those frames up to double
                rounding.
            impl: as in :meth:`run`; the first push's choice is kept for
                the whole stream.
            max_pending: results held before a push is refused with
                :class:`SizeError` (0: 4); take them with
                :meth:`Stream.results`.
            **params: eSRRF's parameters (``magnification``, ``radius``,
                ``temporal`` among ``"avg"``, ``"var"``, ``"tac2"``, ...);
                ``frames_per_timepoint`` is the window's business.
        """
        _check_keywords("esrrf", self._desc("esrrf"), params,
                        ("window", "sliding", "every", "impl",
                         "max_pending"))
        core = self._core.esrrf_stream(
            int(rows), int(cols), _param_items(params), bool(sliding),
            int(window), int(every), impl, int(max_pending))
        return Stream(core)

    def open(self, method: str, *shapes: Union[Sequence[int], ArrayLike],
             impl: Optional[str] = None, given_outputs: bool = False,
             **params: ParamValue) -> "Plan":
        """A plan of `method` for inputs of these shapes (``(frames, rows,
        cols)`` tuples, or arrays whose shapes are taken): validated and
        planned once, run many times with :meth:`Plan.run`, each run chosen,
        timed and recorded like :meth:`run`. Use it as a context manager;
        the engine cannot be closed while a plan on it is open::

            with engine.open("shift_magnify", (100, 256, 256),
                             magnification_row=2, magnification_col=2) as p:
                for stack in stacks:
                    out = p.run(stack)[0]

        Runs take inputs of the planned rows and columns with at most the
        planned frames (:class:`ShapeError` otherwise). With
        ``given_outputs=True`` every run writes into the arrays its ``out=``
        gives (as :meth:`run`'s ``out``) instead of new ones."""
        d = self._desc(method)
        _check_keywords(method, d, params, ("impl", "given_outputs"))
        dims = [_as_shape(tuple(np.shape(s)) if hasattr(s, "shape")
                          else tuple(s)) for s in shapes]
        core = self._core.open(method, dims, _param_items(params), impl,
                               bool(given_outputs))
        names = [n for n, _ in d["outputs"]] if d else []
        return Plan(core, names, self, method)

    def esrrf_sweep(self, stack: ArrayLike, radii: Sequence[float],
                    sensitivities: Sequence[float], *,
                    temporal: Sequence[str] = ("avg",),
                    magnification: int = 5,
                    intensity_weighting: bool = True,
                    macro_pixel_correction: bool = False,
                    rsp: bool = True, frc: bool = True,
                    keep_images: bool = False,
                    impl: Optional[str] = None,
                    progress: _progress.ProgressArg = None) -> "Sweep":
        """eSRRF's parameter sweep over one stack (quicksilver_sweep.h):
        every (temporal, sensitivity, radius) point scored by RSP and RSE
        (SQUIRREL against the stack's mean), FRC (FIRE resolution between
        the odd and even frames' reconstructions, reconstruction pixels, 0
        when the curve never crosses 1/7) and QnR, NanoPyx's combination.
        What the points share is computed once; with `impl` forced, each
        point's reconstruction has the bits of :meth:`run` ``("esrrf",
        ..., temporal=..., macro_pixel_correction=...)`` with it (with
        the engine's choices, within the vector paths' 1e-6 of the
        peak). Arrays of the result are indexed
        ``[temporal, sensitivity, radius]``. `progress` as in :meth:`run`,
        counting frames × radii (each radius's convergences over the
        stack); Ctrl-C cancels the sweep as it cancels :meth:`run`."""
        names = ("avg", "var", "tac2")
        tv = []
        for t in temporal:
            if str(t).lower() not in names:
                raise ParameterError(f"temporal: {t!r} is not one of avg, "
                                     "var, tac2", name="param")
            tv.append(names.index(str(t).lower()))
        arr = _as_input(stack, True, "stack", device=False)
        with _progress.callback(progress, "esrrf sweep") as cb:
            pts, passes, ran = self._core.esrrf_sweep(
                arr, [float(r) for r in radii],
                [float(s) for s in sensitivities], tv, int(magnification),
                bool(intensity_weighting), bool(macro_pixel_correction),
                bool(rsp), bool(frc), bool(keep_images), impl, cb)
        sw = Sweep(pts, len(tv), len(sensitivities), len(radii), passes)
        sw.impl = ran
        # what made the points: eSRRF's parameters shared by all, the grid
        # swept, and the implementations the steps ran
        prov = _provenance("esrrf", self._desc("esrrf"), ran, {
            "magnification": int(magnification),
            "intensity_weighting": bool(intensity_weighting),
            "macro_pixel_correction": bool(macro_pixel_correction)})
        for k in ("radius", "sensitivity", "temporal",
                  "frames_per_timepoint"):
            prov["params"].pop(k, None)
        prov["sweep"] = {"radii": [float(r) for r in radii],
                         "sensitivities": [float(s) for s in sensitivities],
                         "temporal": [names[t] for t in tv]}
        sw.provenance = prov
        return sw

    @property
    def opencl_why(self) -> str:
        """Why the engine has no OpenCL device (``""`` when it has one)."""
        return self._core.opencl_why

    def estimate(self, method: str,
                 *arrays: Union[ArrayLike, tuple[int, ...]],
                 impl: Optional[str] = None, **params: ParamValue) -> Report:
        """What :meth:`run` would do for these inputs, without running or
        recording anything: ``impl`` and ``reason`` of the choice and every
        implementation's estimate (the report's seconds stay 0). An input
        may be given by its shape alone, ``(frames, rows, cols)`` or
        ``(rows, cols)``, as the C API's qs_method_estimate takes it."""
        d = self._desc(method)
        slots = [s for s, _ in d["inputs"]] if d else []
        inputs = tuple(
            _as_shape(a) if isinstance(a, tuple) else
            _as_input(a, True, slots[k] if k < len(slots) else str(k))
            for k, a in enumerate(arrays))
        _check_keywords(method, self._desc(method), params, ("impl",))
        return Report._from(self._core.estimate(
            method, inputs, _param_items(params), impl))

    # ---------------------------------------------------- timing store

    def db_list(self, method: Optional[str] = None,
                impl: Optional[str] = None, device: Optional[str] = None,
                key: Optional[str] = None, limit: int = 0) -> list[Run]:
        """Recorded runs matching every given field, newest first (at most
        `limit`; 0: all), as ``quicksilver db list``. Timings still pending
        in the engine are written first."""
        return [Run(**r) for r in self._core.db_rows(
            method=method, impl=impl, device=device, key=key, limit=limit)]

    #: :meth:`db_list` under its former name (``quicksilver db rows`` too).
    db_rows = db_list

    def db_stats(self, method: Optional[str] = None,
                 impl: Optional[str] = None, device: Optional[str] = None,
                 key: Optional[str] = None) -> list[Stat]:
        """Per (method, key, impl, device): counts and seconds of the runs."""
        return [Stat(**r) for r in self._core.db_stats(
            method=method, impl=impl, device=device, key=key)]

    def db_best(self, method: Optional[str] = None,
                key: Optional[str] = None,
                slices: bool = False) -> list[Best]:
        """For every (method, key) recorded on this machine, the choice the
        engine makes for it now. Keys that calibration recorded for its
        slices are left out unless `slices` is true (as ``quicksilver db
        best --all``)."""
        return [Best(method=r["method"], key=r["key"],
                     choice=Report._from(r["choice"]))
                for r in self._core.db_best(method=method, key=key)
                if slices or not r["slice"]]

    def db_export(self, path: PathLike) -> None:
        """Writes every run and device to `path` as one JSON document
        (atomically)."""
        self._core.db_export(os.fspath(path))

    def db_import(self, path: PathLike) -> tuple[int, int, int]:
        """Adds the runs of a document :meth:`db_export` wrote; returns
        ``(added, skipped, rejected)``; a malformed document changes
        nothing."""
        return self._core.db_import(os.fspath(path))

    def db_prune(self, keep: int = 0, older_than_days: float = 0) -> int:
        """Keeps the newest `keep` runs per (method, impl, device, key)
        (0: all) and drops runs older than `older_than_days` (0: none);
        returns how many were removed."""
        return self._core.db_prune(keep=int(keep),
                                   older_than_days=float(older_than_days))

    def db_forget(self, method: Optional[str] = None,
                  impl: Optional[str] = None, device: Optional[str] = None,
                  key: Optional[str] = None) -> int:
        """Deletes the runs matching every given field (none given: all);
        returns how many were removed."""
        return self._core.db_forget(method=method, impl=impl, device=device,
                                    key=key)

    def db_check(self) -> None:
        """SQLite's integrity check of the store; raises :class:`StoreError`
        when it fails."""
        self._core.db_check()

    def __repr__(self) -> str:
        if self.closed:
            return "<quicksilver.Engine closed>"
        return (f"<quicksilver.Engine threads={self.threads} "
                f"db={self.db_path!r}>")


# ------------------------------------------------------- live stream

@dataclass(frozen=True)
class StreamResult:
    """One result of a :class:`Stream`: the ``(rows*M, cols*M)`` float32
    image (engine memory, no copy), its ``index`` in order of completion,
    the frames ``[first, first + frames)`` of the pushed sequence it covers,
    and the seconds from the push of its last frame to its completion."""
    image: np.ndarray = field(repr=False)
    index: int
    first: int
    frames: int
    latency: float


class Plan:
    """A plan (:meth:`Engine.open`): ``run(*arrays)`` returns a
    :class:`Result` like :meth:`Engine.run`; ``impl`` is the last run's
    implementation; ``close()`` (or leaving the ``with`` block) releases
    what the plan's implementations prepared."""

    def __init__(self, core: "_core.Plan", names: Sequence[str],
                 engine: "Engine", method: str) -> None:
        self._core = core
        self._names = list(names)
        self._engine = engine
        self._method = method

    def __enter__(self) -> "Plan":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def run(self, *arrays: ArrayLike, copy: bool = True,
            progress: _progress.ProgressArg = None,
            out: Any = None) -> Result:
        """Runs the plan on inputs of its shapes (see :meth:`Engine.run`
        for ``copy``, ``progress``, ``out`` and the errors; ``out`` is
        required by a plan opened with ``given_outputs=True`` and refused
        by any other)."""
        inputs = self._engine._inputs(self._method, arrays, copy)
        given = (None if out is None else
                 _as_outputs(out, self._engine._desc(self._method)))
        with _progress.callback(progress, self._method) as cb:
            outs, rep = self._core.run(inputs, cb,
                                       None if given is None else given[1])
        if given is not None:
            outs = given[0]
        names = self._names or [str(k) for k in range(len(outs))]
        return Result(names, outs, Report._from(rep))

    @property
    def impl(self) -> str:
        """The implementation of the last run (``""`` before any)."""
        return self._core.impl

    @property
    def closed(self) -> bool:
        return self._core.closed

    def close(self) -> None:
        """Releases the plan. Idempotent."""
        self._core.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"impl={self.impl!r}"
        return f"<quicksilver.Plan {self._method} {state}>"


class Stream:
    """A live eSRRF stream (:meth:`Engine.esrrf_stream`)::

        with engine.esrrf_stream(rows, cols, window=100, magnification=5) as s:
            for frames in camera:            # (F, rows, cols) or (rows, cols)
                s.push(frames)
                for r in s.results():
                    show(r.image)
            s.end()                          # the short last timepoint
            for r in s.results():
                show(r.image)

    Each push computes the pushed frames' RGC maps at once (GIL released)
    and folds them into the running statistics; a result is ready as soon
    as its last frame was pushed. The engine serves the stream's calls one
    at a time with its other calls, and cannot be closed while a stream on
    it is open. Leaving the ``with`` block closes the stream, discarding
    results not taken.
    """

    def __init__(self, core: "_core.Stream") -> None:
        self._core = core

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def push(self, frames: ArrayLike) -> None:
        """Adds frames (converted to float32 once unless they are
        C-contiguous float32 already). The whole push is checked first
        and refused with nothing consumed: :class:`ShapeError` for another
        frame size, :class:`ParameterError` for a NaN or infinite pixel or
        after :meth:`end`, :class:`SizeError` when more results would wait
        than ``max_pending``."""
        self._core.push(_as_input(frames, True, "frames", device=False))

    def pop(self) -> Optional[StreamResult]:
        """The oldest completed result, or None when none is waiting."""
        r = self._core.pop()
        if r is None:
            return None
        img, index, first, frames, latency = r
        return StreamResult(image=img[0], index=index, first=first,
                            frames=frames, latency=latency)

    def results(self) -> Iterator[StreamResult]:
        """Every result waiting now, oldest first."""
        while (r := self.pop()) is not None:
            yield r

    def end(self) -> None:
        """End of input: an unfinished timepoint becomes its result (as the
        batch call's short last timepoint); later pushes are refused."""
        self._core.end()

    def close(self) -> None:
        """Frees the stream (results not taken are discarded). Idempotent."""
        self._core.close()

    @property
    def frames(self) -> int:
        """Frames pushed so far."""
        return self._core.frames

    @property
    def impl(self) -> str:
        """The implementation the stream runs ("" before the first push)."""
        return self._core.impl

    @property
    def closed(self) -> bool:
        return self._core.closed


def __dir__() -> list[str]:
    """The public names only (not the modules this one uses)."""
    return sorted(set(__all__) | {"__version__", "nanopyx"})


# ------------------------------------------------ module-level shortcuts

_default: Optional[Engine] = None
_default_lock = threading.Lock()


def default_engine() -> Engine:
    """The engine the module-level functions use, opened on first use with
    the defaults (store, threads and devices from the environment) and
    closed at exit."""
    global _default
    with _default_lock:
        if _default is None or _default.closed:
            _default = Engine()
        return _default


@atexit.register
def _close_default() -> None:
    if _default is not None:
        _default.close()


class Sweep:
    """The points of :meth:`Engine.esrrf_sweep`: numpy arrays of shape
    ``(T, S, R)`` (temporal, sensitivity, radius) named ``radius``,
    ``sensitivity``, ``rsp``, ``rse``, ``sigma``, ``frc``, ``qnr``; the
    statistics' names in ``temporal``; ``images`` the reconstructions
    ``(T, S, R, R*M, C*M)`` when kept (else None); ``passes`` over the
    frames; ``impl`` the implementations eSRRF's steps ran
    (comma-separated) and ``provenance`` what made the points (a dict:
    the parameters they share, the grid under ``"sweep"``, ``impl``, the
    version)."""

    def __init__(self, pts: list, nt: int, ns: int, nr: int,
                 passes: int) -> None:
        shape = (nt, ns, nr)
        cols = list(zip(*pts)) if pts else [()] * 9
        names = ("avg", "var", "tac2")
        self.temporal = [names[int(t)] for t in cols[0][::ns * nr]]
        self.sensitivity = np.asarray(cols[1], float).reshape(shape)
        self.radius = np.asarray(cols[2], float).reshape(shape)
        self.rsp = np.asarray(cols[3], float).reshape(shape)
        self.rse = np.asarray(cols[4], float).reshape(shape)
        self.sigma = np.asarray(cols[5], float).reshape(shape)
        self.frc = np.asarray(cols[6], float).reshape(shape)
        self.qnr = np.asarray(cols[7], float).reshape(shape)
        imgs = cols[8]
        self.images: Optional[np.ndarray] = None
        if imgs and imgs[0] is not None:
            self.images = np.stack([i[0] for i in imgs]).reshape(
                shape + imgs[0].shape[1:])
        self.passes = int(passes)
        self.impl = ""
        self.provenance: dict[str, Any] = {}

    def best(self) -> tuple[str, float, float]:
        """(temporal, sensitivity, radius) of the highest QnR."""
        k = int(np.nanargmax(self.qnr))
        t, s, r = np.unravel_index(k, self.qnr.shape)
        return (self.temporal[t], float(self.sensitivity[t, s, r]),
                float(self.radius[t, s, r]))

    def __repr__(self) -> str:
        return (f"Sweep({self.qnr.shape[0]} temporal x {self.qnr.shape[1]} "
                f"sensitivities x {self.qnr.shape[2]} radii)")


def esrrf_sweep(stack: ArrayLike, radii: Sequence[float],
                sensitivities: Sequence[float], **kw: Any) -> Sweep:
    """:meth:`Engine.esrrf_sweep` on :func:`default_engine`."""
    return default_engine().esrrf_sweep(stack, radii, sensitivities, **kw)


@_keywords
def esrrf(stack: ArrayLike, magnification: int = 5, radius: float = 1.5,
          sensitivity: float = 1.0, frames_per_timepoint: int = 0,
          temporal: str = "avg", intensity_weighting: bool = True,
          macro_pixel_correction: bool = True,
          impl: Optional[str] = None,
          progress: _progress.ProgressArg = None) -> np.ndarray:
    """eSRRF of a stack ``(F, R, C)``: ``(T, R*M, C*M)`` float32 with
    ``T = ceil(F / frames_per_timepoint)`` (1 for 0), or ``(F, R*M, C*M)``
    for ``temporal="none"``. `temporal` is ``"avg"``, ``"var"``, ``"tac2"``
    or ``"none"``; `progress` as in :meth:`Engine.run`. Runs on
    :func:`default_engine`."""
    return default_engine().run(
        "esrrf", stack, impl=impl, progress=progress,
        magnification=magnification,
        radius=radius, sensitivity=sensitivity,
        frames_per_timepoint=frames_per_timepoint, temporal=temporal,
        intensity_weighting=intensity_weighting,
        macro_pixel_correction=macro_pixel_correction)[0]


@_keywords
def shift_magnify(image: ArrayLike, shift_row: float = 0.0,
                  shift_col: float = 0.0, magnification_row: float = 2.0,
                  magnification_col: float = 2.0,
                  impl: Optional[str] = None,
                  progress: _progress.ProgressArg = None) -> np.ndarray:
    """Catmull-Rom shift and magnification of every frame:
    ``(F, int(R*mr), int(C*mc))`` float32. Runs on :func:`default_engine`."""
    return default_engine().run(
        "shift_magnify", image, impl=impl, progress=progress,
        shift_row=shift_row,
        shift_col=shift_col, magnification_row=magnification_row,
        magnification_col=magnification_col)[0]


@_keywords
def roberts_cross(image: ArrayLike, impl: Optional[str] = None,
                  progress: _progress.ProgressArg = None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """Roberts-cross gradients of every frame: ``(gradient_col,
    gradient_row)``, each the input's shape. Runs on :func:`default_engine`."""
    res = default_engine().run("roberts_cross", image, impl=impl,
                               progress=progress)
    return res[0], res[1]


@_keywords
def rgc(gradient_col: ArrayLike, gradient_row: ArrayLike, image: ArrayLike,
        magnification: int = 5, radius: float = 1.5, sensitivity: float = 1.0,
        intensity_weighting: bool = True,
        impl: Optional[str] = None,
        progress: _progress.ProgressArg = None) -> np.ndarray:
    """Radial gradient convergence from gradients magnified 2M
    ``(F, 2RM, 2CM)`` and the image magnified M ``(F, RM, CM)``:
    ``(F, RM, CM)``. Runs on :func:`default_engine`."""
    return default_engine().run(
        "rgc", gradient_col, gradient_row, image, impl=impl,
        progress=progress,
        magnification=magnification, radius=radius, sensitivity=sensitivity,
        intensity_weighting=intensity_weighting)[0]
