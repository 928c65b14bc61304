"""_widget.py — the eSRRF dock widget of napari-quicksilver.

The widget's parameter fields are made from the engine's own description of
eSRRF (names, defaults, ranges, docs as tooltips), so they follow the
engine. Run takes the selected image layer as ``(frames, rows, cols)``,
computes eSRRF through the quicksilver binding (its default engine, so the
timings go to the user's store) in a napari worker thread
(the GUI stays live), shows the engine's progress reports on a bar, and
adds the result as a new image layer placed over its input: pixel size
divided by the magnification, and the run's provenance (parameters,
implementation and its version, quicksilver's version, seconds) in the
layer's metadata under ``"quicksilver"``. Cancel asks the engine to stop
at its next progress check (within a fraction of a second); nothing is
added then and no timing is recorded.
"""

from __future__ import annotations

import threading
from typing import Any, Optional

import numpy as np
from magicgui.widgets import (CheckBox, ComboBox, Container, FloatSpinBox,
                              Label, ProgressBar, PushButton, SpinBox,
                              create_widget)
from qtpy.QtCore import QObject, Signal

import napari
import quicksilver as qs
from napari.qt.threading import create_worker

METHOD = "esrrf"
#: implementation choices offered besides the engine's own names
KINDS = ("auto", "cpu", "threaded", "opencl", "serial")


class _Relay(QObject):
    """Carries the engine's reports from the worker thread to the GUI
    thread (a queued signal)."""
    progress = Signal(object, object)


def _param_widget(p: qs.Parameter) -> Any:
    """A magicgui field for one of the method's parameters."""
    opts = dict(name=p.name, label=p.name.replace("_", " "), tooltip=p.doc)
    if p.type == "bool":
        return CheckBox(value=bool(p.default), **opts)
    if p.type == "enum":
        return ComboBox(choices=list(p.choices), value=p.default, **opts)
    if p.type == "int":
        lo = int(p.min if p.min is not None else -2**31) + p.min_open
        hi = int(p.max if p.max is not None else 2**31 - 1) - p.max_open
        return SpinBox(value=int(p.default), min=lo, max=hi, **opts)
    step = 0.05
    lo = (p.min if p.min is not None else -1e6) + (step if p.min_open else 0)
    hi = (p.max if p.max is not None else 1e6) - (step if p.max_open else 0)
    return FloatSpinBox(value=float(p.default), min=lo, max=hi, step=step,
                        **opts)


def _stack_of(layer: napari.layers.Image) -> np.ndarray:
    """The layer's pixels as a (frames, rows, cols) array, or ValueError
    naming what does not fit."""
    if layer.rgb:
        raise ValueError(f"layer {layer.name!r} is RGB; eSRRF takes a "
                         "single-channel (frames, rows, cols) stack")
    data = layer.data[0] if layer.multiscale else layer.data
    arr = np.asarray(data)
    if arr.ndim == 2:
        arr = arr[np.newaxis]
    if arr.ndim != 3:
        raise ValueError(f"layer {layer.name!r} has {arr.ndim} dimensions "
                         f"{arr.shape}; eSRRF takes (frames, rows, cols): "
                         "split channels or z first")
    return arr


def result_layer_kwargs(layer: napari.layers.Image, out: np.ndarray,
                        params: dict[str, Any], report: qs.Report,
                        impl_version: Optional[int]) -> dict[str, Any]:
    """The keyword arguments of ``viewer.add_image`` for the eSRRF output
    `out` ``(T, R*M, C*M)`` of `layer`: one timepoint becomes a 2-D image;
    rows and columns get the input's pixel size divided by M, and a
    translation of half an input pixel back, as output pixel i samples the
    input at i/M counted from the image's edge (napari places pixel
    centres); a time axis keeps the input's step times the frames per
    timepoint. The provenance goes into ``metadata["quicksilver"]``."""
    m = int(params["magnification"])
    scale = np.asarray(layer.scale, dtype=float)[-2:]
    shift = np.asarray(layer.translate, dtype=float)[-2:]
    out_scale = list(scale / m)
    out_translate = list(shift - scale / 2)
    data = out
    if out.shape[0] == 1:
        data = out[0]
    elif layer.ndim == 3:
        fpt = int(params.get("frames_per_timepoint") or 0)
        per = 1 if params.get("temporal") == "none" or not fpt else fpt
        out_scale.insert(0, float(layer.scale[0]) * per)
        out_translate.insert(0, float(layer.translate[0]))
    else:
        out_scale.insert(0, 1.0)
        out_translate.insert(0, 0.0)
    meta = {
        "method": METHOD,
        "params": dict(params),
        "impl": report.impl,
        "impl_version": impl_version,
        "reason": report.reason,
        "seconds": report.seconds,
        "quicksilver_version": qs.__version__,
        "source_layer": layer.name,
        "source_shape": tuple(int(n) for n in np.shape(layer.data)),
        "source_scale": tuple(float(s) for s in layer.scale),
    }
    kw = dict(data=data, name=f"{layer.name} eSRRF x{m}", scale=out_scale,
              translate=out_translate, metadata={"quicksilver": meta},
              colormap=layer.colormap.name, blending=layer.blending)
    units = getattr(layer, "units", None)
    if units is not None:
        kw["units"] = tuple(units)[-len(out_scale):]
    return kw


class EsrrfWidget(Container):
    """eSRRF of an image layer: parameters, Run, Cancel, progress.

    Attributes used by tests and scripts: ``image`` (the layer field),
    ``params`` (name -> field), ``impl``, ``run_button``,
    ``cancel_button``, ``progress``, ``status``, ``worker`` (the running
    worker, None when idle) and ``last`` ("done", "cancelled", "error:
    ..." of the last run).
    """

    def __init__(self, napari_viewer: napari.Viewer) -> None:
        super().__init__(labels=True)
        self.viewer = napari_viewer
        self._cancel = threading.Event()
        self._relay = _Relay()
        self._relay.progress.connect(self._on_progress)
        self.worker = None
        self.last = ""
        self.image = create_widget(annotation=napari.layers.Image,
                                   name="image", label="image")
        with qs.Engine(db=":memory:", opencl=False,
                       calibration=False) as probe:
            desc = probe.method(METHOD)
        self.params = {p.name: _param_widget(p) for p in desc.params}
        self.impl = ComboBox(
            name="impl", label="implementation",
            choices=list(KINDS) + [i.name for i in desc.impls
                                  if i.available and i.name not in KINDS],
            value="auto",
            tooltip="auto: the engine picks the fastest it has timed; a "
                    "kind restricts the choice; a name forces it")
        self.run_button = PushButton(name="run", text="Run eSRRF")
        self.cancel_button = PushButton(name="cancel", text="Cancel",
                                        enabled=False)
        self.progress = ProgressBar(name="progress", label="progress",
                                    min=0, max=1000, value=0)
        self.status = Label(name="status", label="", value="")
        self.extend([self.image, *self.params.values(), self.impl,
                     self.run_button, self.cancel_button, self.progress,
                     self.status])
        self.run_button.changed.connect(self.run)
        self.cancel_button.changed.connect(self.cancel)
        self.native.destroyed.connect(lambda *_: self._cancel.set())

    # ------------------------------------------------------------ actions

    def values(self) -> dict[str, Any]:
        """The parameters as the engine takes them."""
        return {k: w.value for k, w in self.params.items()}

    def run(self) -> None:
        """Starts eSRRF of the selected layer in a worker thread."""
        layer = self.image.value
        if layer is None:
            self._say("choose an image layer")
            return
        try:
            stack = _stack_of(layer)
        except ValueError as e:
            self._finish(f"error: {e}")
            return
        params = self.values()
        impl = None if self.impl.value == "auto" else self.impl.value
        self._cancel.clear()
        self.progress.value = 0
        self.run_button.enabled = False
        self.cancel_button.enabled = True
        self._say(f"eSRRF of {layer.name} {stack.shape}...")
        self.worker = create_worker(self._compute, stack, params, impl,
                                    _start_thread=False)
        self.worker.returned.connect(
            lambda r: self._on_result(layer, params, r))
        self.worker.errored.connect(self._on_error)
        self.worker.start()

    def cancel(self) -> None:
        """Asks the running computation to stop."""
        if self.worker is not None:
            self._cancel.set()
            self._say("cancelling...")

    # ------------------------------------------------- the worker thread

    def _compute(self, stack: np.ndarray, params: dict[str, Any],
                 impl: Optional[str]
                 ) -> Optional[tuple[np.ndarray, qs.Report, Optional[int]]]:
        """The output, report and implementation version; None when
        cancelled (no error: napari would show one as a failure)."""
        # the module's engine: the user's timing store, closed (its last
        # timings written) at exit; it serves one call at a time
        eng = qs.default_engine()

        def report(done: int, total: int) -> bool:
            self._relay.progress.emit(done, total)
            return self._cancel.is_set()

        try:
            res = eng.run(METHOD, stack, impl=impl, progress=report,
                          **params)
        except qs.CancelledError:
            return None
        version = next((i.version for i in eng.impls(METHOD)
                        if i.name == res.report.impl), None)
        return res["output"], res.report, version

    # ---------------------------------------------------- the GUI thread

    def _on_progress(self, done: int, total: int) -> None:
        if total:
            self.progress.value = int(1000 * min(done, total) / total)

    def _on_result(self, layer: napari.layers.Image, params: dict[str, Any],
                   r: Optional[tuple[np.ndarray, qs.Report, Optional[int]]]
                   ) -> None:
        if r is None:
            self._finish("cancelled")
            return
        out, rep, version = r
        self.viewer.add_image(**result_layer_kwargs(layer, out, params, rep,
                                                    version))
        self.progress.value = 1000
        self._finish("done", f"{out.shape[1]}x{out.shape[2]} by {rep.impl} "
                     f"({rep.reason}) in {rep.seconds:.2f} s")

    def _on_error(self, exc: BaseException) -> None:
        self._finish(f"error: {exc}")

    def _finish(self, last: str, text: Optional[str] = None) -> None:
        self.last = last
        self.worker = None
        self.run_button.enabled = True
        self.cancel_button.enabled = False
        self._say(text or last)

    def _say(self, text: str) -> None:
        self.status.value = text
