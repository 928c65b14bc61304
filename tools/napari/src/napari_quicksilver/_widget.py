"""_widget.py — the eSRRF dock widget of napari-quicksilver.

The widget's parameter fields are made from the engine's own description of
eSRRF (names, defaults, ranges, docs as tooltips), so they follow the
engine. Run takes the selected image layer, splits it into channels
(:func:`channel_stacks`: a channel axis of the layer, named by its axis
labels or metadata or, for 4-D and 5-D layers, ImageJ's TZCYX order; or
further single-channel layers chosen beside it, one layer per channel),
each channel a ``(frames, rows, cols)`` stack over time, and computes
eSRRF of every channel in turn through the quicksilver binding (its
default engine, so the timings go to the user's store) in a napari worker
thread (the GUI stays live), with one progress bar over all channels. It
adds one result layer per channel, placed over its input: pixel size
divided by the magnification, the channel's name, and the run's
provenance (parameters, implementation and its version, quicksilver's
version, seconds, channel) in the layer's metadata under
``"quicksilver"``. Cancel asks the engine to stop at its next progress
check (within a fraction of a second); nothing is added then (no channel
of a cancelled run) and no timing of the cancelled call is recorded.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
from magicgui.widgets import (CheckBox, ComboBox, Container, FloatSpinBox,
                              Label, LineEdit, ProgressBar, PushButton,
                              Select, SpinBox, create_widget)
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


#: axis labels and metadata letters that name a channel axis
CHANNEL_LABELS = ("c", "ch", "channel", "channels")
#: colormaps of channels split from one layer (magenta and green first, as
#: napari colours two channels)
CHANNEL_COLORS = ("magenta", "green", "cyan", "yellow", "red", "blue")


@dataclass
class Channel:
    """One channel of a run: ``stack`` its ``(frames, rows, cols)`` pixels,
    taken from ``layer`` (at ``index`` along the layer's channel axis, or
    the whole layer when ``index`` is None); ``time_axis`` the layer's axis
    its frames run along (None: one frame); ``count`` the run's channels."""
    layer: Any
    stack: np.ndarray
    name: str
    index: Optional[int]
    count: int
    time_axis: Optional[int]


def _pixels(layer: napari.layers.Image) -> np.ndarray:
    if layer.rgb:
        raise ValueError(f"layer {layer.name!r} is RGB; eSRRF takes "
                         "grey-level frames (split the colours first)")
    return np.asarray(layer.data[0] if layer.multiscale else layer.data)


def channel_axis_of(layer: napari.layers.Image) -> Optional[int]:
    """The layer's channel axis as "auto" finds it, or None: an axis
    labelled c/ch/channel(s) (``layer.axis_labels``); else the C of an axes
    string in ``layer.metadata["axes"]`` ("TCYX", as tifffile names a
    series' axes); else, for a 4-D or 5-D layer, the axis before rows and
    columns (ImageJ's hyperstack order TZCYX, as napari reads an ImageJ
    TIFF: TCYX, ZCYX, TZCYX)."""
    nd = layer.ndim
    labels = [str(a).lower() for a in getattr(layer, "axis_labels", ())]
    for i, a in enumerate(labels[:nd - 2]):
        if a in CHANNEL_LABELS:
            return i
    axes = layer.metadata.get("axes") if layer.metadata else None
    if isinstance(axes, str) and len(axes) == nd:
        return axes.upper().index("C") if "C" in axes.upper()[:-2] else None
    return nd - 3 if nd in (4, 5) else None


def channel_stacks(layer: napari.layers.Image, axis: Any = "auto",
                   more: Optional[list] = None) -> list[Channel]:
    """The channels of a run on `layer`: split along `axis` ("auto":
    :func:`channel_axis_of`; "none" or None: the layer is one channel; an
    int: that axis), or the layer and each of `more` (layers of one
    channel each, of the layer's shape) as channels. Each channel is one
    sequence of frames ``(frames, rows, cols)``, named by the layer's
    ``metadata["channel_names"]`` (one per channel), else "channel C", or
    by its own layer's name; ValueError naming the
    layer and its shape when a channel holds planes along two axes (z and
    time) or `more` does not fit."""
    arr = _pixels(layer)
    if arr.ndim < 2:
        raise ValueError(f"layer {layer.name!r} has {arr.ndim} dimension(s); "
                         "eSRRF takes frames of rows x columns")
    more = [m for m in (more or []) if m is not layer]
    if axis == "auto":
        axis = channel_axis_of(layer) if not more else None
    if axis == "none":
        axis = None
    if axis is not None:
        axis = int(axis) % arr.ndim
        if axis >= arr.ndim - 2:
            raise ValueError(f"layer {layer.name!r}: axis {axis} holds rows "
                             "or columns, not channels")
    if more and axis is not None:
        raise ValueError("channels come either from one layer's channel "
                         "axis or from one layer per channel, not both")
    out: list[Channel] = []
    if axis is not None:
        n = int(arr.shape[axis])
        names = (layer.metadata or {}).get("channel_names")
        if not (isinstance(names, (list, tuple)) and len(names) == n):
            names = [f"channel {c}" for c in range(n)]
        for c in range(n):
            plane = np.take(arr, c, axis=axis)
            t = _time_axis(plane, f"channel {c} of layer {layer.name!r}")
            out.append(Channel(layer, _frames(plane, t), str(names[c]), c, n,
                               _layer_axis(t, axis)))
        return out
    layers = [layer] + more
    for lay in layers:
        a = _pixels(lay)
        if a.shape != arr.shape:
            raise ValueError(f"layer {lay.name!r} has shape {a.shape}, "
                             f"layer {layer.name!r} {arr.shape}: the "
                             "channels of a run have one shape")
        t = _time_axis(a, f"layer {lay.name!r}")
        out.append(Channel(lay, _frames(a, t), lay.name, None, len(layers),
                           t))
    return out


def _time_axis(arr: np.ndarray, what: str) -> Optional[int]:
    """The one axis of arr (besides rows and columns) holding more than one
    plane, or None; ValueError when two do (z and time)."""
    many = [i for i in range(arr.ndim - 2) if arr.shape[i] > 1]
    if len(many) > 1:
        raise ValueError(
            f"{what} has shape {arr.shape}: axes {many[0]} and {many[1]} "
            "both hold more than one plane; eSRRF runs on one sequence of "
            "frames per channel: split z or time first")
    return many[0] if many else None


def _frames(arr: np.ndarray, t: Optional[int]) -> np.ndarray:
    """arr as (frames, rows, cols), its frames along axis t."""
    if t is None:
        return arr.reshape((1,) + arr.shape[-2:])
    return np.moveaxis(arr, t, 0).reshape((arr.shape[t],) + arr.shape[-2:])


def _layer_axis(t: Optional[int], removed: int) -> Optional[int]:
    """Axis t of a plane taken along axis `removed`, as the layer's axis."""
    return None if t is None else t + (t >= removed)


def result_layer_kwargs(layer: napari.layers.Image, out: np.ndarray,
                        params: dict[str, Any], report: qs.Report,
                        impl_version: Optional[int],
                        channel: Optional[Channel] = None) -> dict[str, Any]:
    """The keyword arguments of ``viewer.add_image`` for the eSRRF output
    `out` ``(T, R*M, C*M)`` of `layer` (of its `channel`; None: the whole
    layer, one channel over its first axis): one timepoint becomes a 2-D
    image; rows and columns get the input's pixel size divided by M, and a
    translation of half an input pixel back, as output pixel i samples the
    input at i/M counted from the image's edge (napari places pixel
    centres); a time axis keeps the input's step along it times the
    frames per timepoint. A channel split from the layer's channel axis is
    named after it, with a colormap of its own blended additively; the
    provenance goes into ``metadata["quicksilver"]``."""
    if channel is None:
        t = 0 if layer.ndim == 3 else None
        channel = Channel(layer, out, "", None, 1, t)
    m = int(params["magnification"])
    scale = np.asarray(layer.scale, dtype=float)[-2:]
    shift = np.asarray(layer.translate, dtype=float)[-2:]
    out_scale = list(scale / m)
    out_translate = list(shift - scale / 2)
    axes = [layer.ndim - 2, layer.ndim - 1]
    data = out
    t = channel.time_axis
    if out.shape[0] == 1:
        data = out[0]
    elif t is not None:
        fpt = int(params.get("frames_per_timepoint") or 0)
        per = 1 if params.get("temporal") == "none" or not fpt else fpt
        out_scale.insert(0, float(layer.scale[t]) * per)
        out_translate.insert(0, float(layer.translate[t]))
        axes.insert(0, t)
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
    name = f"{layer.name} eSRRF x{m}"
    colormap, blending = layer.colormap.name, layer.blending
    if channel.count > 1:
        meta.update(channel=channel.name, channels=channel.count)
    if channel.index is not None:
        meta["channel_index"] = channel.index
        name = f"{layer.name} {channel.name} eSRRF x{m}"
        if channel.count > 1:
            colormap = CHANNEL_COLORS[channel.index % len(CHANNEL_COLORS)]
            blending = "additive"
    kw = dict(data=data, name=name, scale=out_scale,
              translate=out_translate, metadata={"quicksilver": meta},
              colormap=colormap, blending=blending)
    units = getattr(layer, "units", None)
    if units is not None:
        units = tuple(units)
        if len(axes) == len(out_scale):
            kw["units"] = tuple(units[a] for a in axes)
    return kw


def compute(channels: list[Channel], params: dict[str, Any],
            impl: Optional[str], cancel: threading.Event,
            progress: Any) -> Optional[list[tuple]]:
    """eSRRF of every channel in turn (the worker thread's work): a list
    of (channel, output, report, implementation version); None when
    `cancel` was set (no error: napari would show one as a failure).
    ``progress(done, 1000)`` runs once over all channels, each weighed by
    its frames. A plain function, not the widget's method: napari's
    worker names its function when it ends, which must not reach into a
    widget that may be gone by then."""
    # the module's engine: the user's timing store, closed (its last
    # timings written) at exit; it serves one call at a time
    eng = qs.default_engine()
    weight = [c.stack.shape[0] for c in channels]
    total_w, done_w = float(sum(weight)), 0.0
    out = []
    for ch, w in zip(channels, weight):
        if cancel.is_set():
            return None

        def report(done: int, total: int, base: float = done_w,
                   w: float = w) -> bool:
            if total:
                part = base + w * min(done, total) / total
                progress(int(1000 * part / total_w), 1000)
            return cancel.is_set()

        try:
            res = eng.run(METHOD, ch.stack, impl=impl, progress=report,
                          **params)
        except qs.CancelledError:
            return None
        version = next((i.version for i in eng.impls(METHOD)
                        if i.name == res.report.impl), None)
        out.append((ch, res["output"], res.report, version))
        done_w += w
    return out


def parse_values(text: str, what: str) -> list[float]:
    """A sweep's values as the CLI takes them: ``1,1.5,2`` or a range
    ``FIRST:LAST:STEP`` (LAST included when the steps reach it within a
    millionth of a step); ValueError naming `what` otherwise."""
    t = str(text).strip()
    try:
        if ":" in t:
            first, last, step = (float(x) for x in t.split(":"))
            if not step > 0 or last < first:
                raise ValueError
            n = int(np.floor((last - first) / step + 1e-6)) + 1
            vals = [round(first + k * step, 12) for k in range(n)]
        else:
            vals = [float(x) for x in t.split(",") if x.strip()]
    except ValueError:
        vals = []
    if not vals or not all(np.isfinite(vals)):
        raise ValueError(f"{what}: {text!r} is not a list of numbers "
                         "(1,2,4) nor a range FIRST:LAST:STEP")
    return vals


def sweep(stack: np.ndarray, radii: list[float], sens: list[float],
          params: dict[str, Any], impl: Optional[str],
          cancel: threading.Event, progress: Any) -> Optional[qs.Sweep]:
    """eSRRF's parameter sweep of one channel (the worker thread's work):
    radii x sensitivities at the widget's magnification, temporal
    statistic, intensity weighting and macro-pixel correction, scored by
    RSP, FRC and QnR; None when `cancel` was set. A plain function, as
    :func:`compute`."""
    def report(done: int, total: int) -> bool:
        if total:
            progress(int(1000 * min(done, total) / total), 1000)
        return cancel.is_set()

    try:
        return qs.default_engine().esrrf_sweep(
            stack, radii, sens, temporal=[params["temporal"]],
            magnification=int(params["magnification"]),
            intensity_weighting=bool(params["intensity_weighting"]),
            macro_pixel_correction=bool(params["macro_pixel_correction"]),
            impl=impl, progress=report)
    except qs.CancelledError:
        return None


class EsrrfWidget(Container):
    """eSRRF of an image layer: parameters, Run, Cancel, progress.

    Attributes used by tests and scripts: ``image`` (the layer field),
    ``channel_axis`` ("auto", "none" or an axis of the image),
    ``more_channels`` (further layers, one channel each),
    ``params`` (name -> field), ``impl``, ``run_button``,
    ``cancel_button``, ``progress``, ``status``, ``worker`` (the running
    worker, None when idle) and ``last`` ("done", "cancelled", "error:
    ..." of the last run). The sweep: ``sweep_radii`` and
    ``sweep_sensitivities`` (lists or FIRST:LAST:STEP ranges),
    ``sweep_button`` and ``swept`` (the last :class:`quicksilver.Sweep`).
    A sweep runs on the first channel of the selection with the other
    fields' values, adds its QnR map (sensitivity down, radius across) as
    a layer, and sets the radius and sensitivity fields to its best point
    for the next Run.
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
        self.channel_axis = ComboBox(
            name="channel_axis", label="channel axis",
            choices=self._axis_choices, value="auto",
            tooltip="auto: the axis labelled c or channel, else for 4-D and "
                    "5-D images ImageJ's order (T, Z, C, rows, columns): "
                    "C before the rows; each channel runs apart")
        self.more_channels = Select(
            name="more_channels", label="more channels",
            choices=self._layer_choices, value=[],
            tooltip="layers of one channel each (the image's shape), run "
                    "as further channels beside the image (ctrl-click)")
        self.more_channels.native.setMaximumHeight(76)  # three rows
        self.image.changed.connect(self._image_changed)
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
        self.sweep_radii = LineEdit(
            name="sweep_radii", label="sweep radii", value="0.5:2.5:0.5",
            tooltip="radii to sweep: 1,1.5,2 or FIRST:LAST:STEP")
        self.sweep_sensitivities = LineEdit(
            name="sweep_sensitivities", label="sweep sensitivities",
            value="1:4:1", tooltip="sensitivities to sweep, as the radii")
        self.sweep_button = PushButton(
            name="sweep", text="Sweep radius x sensitivity")
        self.swept: Optional[qs.Sweep] = None
        self.run_button = PushButton(name="run", text="Run eSRRF")
        self.cancel_button = PushButton(name="cancel", text="Cancel",
                                        enabled=False)
        self.progress = ProgressBar(name="progress", label="progress",
                                    min=0, max=1000, value=0)
        self.status = Label(name="status", label="", value="")
        self.extend([self.image, self.channel_axis, self.more_channels,
                     *self.params.values(), self.impl,
                     self.run_button, self.sweep_radii,
                     self.sweep_sensitivities, self.sweep_button,
                     self.cancel_button, self.progress, self.status])
        self.run_button.changed.connect(self.run)
        self.sweep_button.changed.connect(self.run_sweep)
        self.cancel_button.changed.connect(self.cancel)
        self.native.destroyed.connect(lambda *_: self._cancel.set())

    # ------------------------------------------------------------ actions

    def _axis_choices(self, _w: Any = None) -> list[tuple[str, Any]]:
        """"auto", "none" and each axis of the image before its rows."""
        layer = self.image.value
        out: list[tuple[str, Any]] = [("auto", "auto"), ("none", "none")]
        if layer is None:
            return out
        labels = tuple(getattr(layer, "axis_labels", ()))
        shape = np.shape(layer.data[0] if layer.multiscale else layer.data)
        for i in range(len(shape) - 2):
            lab = f" {labels[i]}" if i < len(labels) else ""
            out.append((f"axis {i}{lab} ({shape[i]})", i))
        return out

    def _layer_choices(self, _w: Any = None) -> list[tuple[str, Any]]:
        """The image layers of the image's shape, but the image."""
        layer = self.image.value
        if layer is None:
            return []
        shape = np.shape(layer.data)
        return [(lay.name, lay) for lay in self.viewer.layers
                if isinstance(lay, napari.layers.Image) and lay is not layer
                and np.shape(lay.data) == shape]

    def _image_changed(self, *_: Any) -> None:
        self.channel_axis.reset_choices()
        self.more_channels.reset_choices()

    def values(self) -> dict[str, Any]:
        """The parameters as the engine takes them."""
        return {k: w.value for k, w in self.params.items()}

    def _selection(self) -> Optional[tuple]:
        """The selected layer, its channels, the parameters and the
        implementation (None for auto); None (said in the status) when no
        layer is chosen or its channels cannot be split."""
        layer = self.image.value
        if layer is None:
            self._say("choose an image layer")
            return None
        try:
            channels = channel_stacks(layer, self.channel_axis.value,
                                      list(self.more_channels.value))
        except ValueError as e:
            self._finish(f"error: {e}")
            return None
        impl = None if self.impl.value == "auto" else self.impl.value
        return layer, channels, self.values(), impl

    def _launch(self, text: str, fn: Any, args: tuple,
                on_result: Any) -> None:
        """Runs fn(*args, cancel, progress) in a worker thread, its result
        to on_result on the GUI thread."""
        self._start(text)
        self.worker = create_worker(fn, *args, self._cancel,
                                    self._relay.progress.emit,
                                    _start_thread=False)
        self.worker.returned.connect(on_result)
        self.worker.errored.connect(self._on_error)
        self.worker.start()

    def run(self) -> None:
        """Starts eSRRF of the selected layer in a worker thread."""
        sel = self._selection()
        if sel is None:
            return
        layer, channels, params, impl = sel
        shape = channels[0].stack.shape
        self._launch(f"eSRRF of {layer.name} {shape}"
                     + (f", {len(channels)} channels" if len(channels) > 1
                        else "") + "...",
                     compute, (channels, params, impl),
                     lambda r: self._on_result(params, r))

    def run_sweep(self) -> None:
        """Starts the sweep of the selected layer's first channel in a
        worker thread."""
        sel = self._selection()
        if sel is None:
            return
        layer, channels, params, impl = sel
        try:
            radii = parse_values(self.sweep_radii.value, "sweep radii")
            sens = parse_values(self.sweep_sensitivities.value,
                                "sweep sensitivities")
        except ValueError as e:
            self._finish(f"error: {e}")
            return
        ch = channels[0]
        self._launch(f"sweep of {layer.name}"
                     + (f" ({ch.name})" if len(channels) > 1 else "")
                     + f": {len(radii)} radii x {len(sens)} sensitivities...",
                     sweep, (ch.stack, radii, sens, params, impl),
                     lambda r: self._on_sweep(ch, params, r))

    def _start(self, text: str) -> None:
        self._cancel.clear()
        self.progress.value = 0
        self.run_button.enabled = self.sweep_button.enabled = False
        self.cancel_button.enabled = True
        self._say(text)

    def cancel(self) -> None:
        """Asks the running computation to stop."""
        if self.worker is not None:
            self._cancel.set()
            self._say("cancelling...")

    # ---------------------------------------------------- the GUI thread

    def _on_progress(self, done: int, total: int) -> None:
        if total:
            self.progress.value = int(1000 * min(done, total) / total)

    def _on_result(self, params: dict[str, Any],
                   r: Optional[list[tuple]]) -> None:
        if r is None:
            self._finish("cancelled")
            return
        for ch, out, rep, version in r:
            self.viewer.add_image(**result_layer_kwargs(
                ch.layer, out, params, rep, version, ch))
        self.progress.value = 1000
        _, out, rep, _ = r[-1]
        impls = sorted({x[2].impl for x in r})
        secs = sum(x[2].seconds for x in r)
        what = f"{len(r)} channels, " if len(r) > 1 else ""
        self._finish("done", f"{what}{out.shape[1]}x{out.shape[2]} by "
                     f"{', '.join(impls)} ({rep.reason}) in {secs:.2f} s")

    def _on_sweep(self, ch: Channel, params: dict[str, Any],
                  sw: Optional[qs.Sweep]) -> None:
        if sw is None:
            self._finish("cancelled")
            return
        self.swept = sw
        _, s, r = sw.best()
        q = sw.qnr[0]
        meta = dict(sw.provenance, source_layer=ch.layer.name,
                    rsp=sw.rsp[0].tolist(), frc=sw.frc[0].tolist(),
                    best={"radius": r, "sensitivity": s})
        if ch.count > 1:
            meta["channel"] = ch.name
        self.viewer.add_image(
            q.astype(np.float32),
            name=f"{ch.layer.name} QnR (sensitivity down, radius across)",
            colormap="viridis", metadata={"quicksilver": meta})
        self.params["radius"].value = r
        self.params["sensitivity"].value = s
        k = np.unravel_index(int(np.nanargmax(q)), q.shape)
        frc = float(sw.frc[0][k])
        # FIRE 0: the curve never crossed 1/7 (NanoPyx scores it finest)
        frc_text = f"FRC {frc:.3g} px" if frc > 0 else "FRC: no crossing"
        self.progress.value = 1000
        self._finish("done", f"best QnR {q[k]:.3f} at radius {r:g}, "
                     f"sensitivity {s:g} (RSP {sw.rsp[0][k]:.3f}, "
                     f"{frc_text}) by {sw.impl}: set for Run")

    def _on_error(self, exc: BaseException) -> None:
        self._finish(f"error: {exc}")

    def _finish(self, last: str, text: Optional[str] = None) -> None:
        self.last = last
        self.worker = None
        self.run_button.enabled = self.sweep_button.enabled = True
        self.cancel_button.enabled = False
        self._say(text or last)

    def _say(self, text: str) -> None:
        self.status.value = text
