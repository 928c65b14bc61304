"""The napari plugin end to end, in a real (headless) napari viewer: the
widget is found through the plugin manifest, runs eSRRF on the real stack
tests/data/real/musical_cardiomyoblast_mito_100f.tif, adds a layer of the
expected shape, scale, translation, pixels (those of a direct call to the
binding with the same implementation) and provenance; Cancel stops a long
run with nothing added; a screenshot of the viewer with the widget is saved
in $QS_NAPARI_SHOTS (the README's picture). Multi-channel time-lapses
(an ImageJ TCYX TIFF as napari opens it, a layer with a labelled channel
axis, one layer per channel) run per channel, each channel's result equal
bit for bit to the quicksilver CLI's (`quicksilver esrrf` on the same
TIFF, $QS_CLI) for that channel, with progress over all channels; Cancel
during the second channel adds nothing.

Run by tools/napari/test (under Xvfb: napari's canvas needs OpenGL)."""

import os
import pathlib
import subprocess
import time

import numpy as np
import pytest
import tifffile

import napari_quicksilver
import quicksilver as qs

ROOT = pathlib.Path(os.environ.get("QS_SOURCE_ROOT") or
                    pathlib.Path(__file__).resolve().parents[3])
MITO = ROOT / "tests" / "data" / "real" / "musical_cardiomyoblast_mito_100f.tif"
WIDGET = "eSRRF (quicksilver)"


@pytest.fixture
def mito():
    stack = tifffile.imread(MITO)
    assert stack.shape == (100, 30, 45) and stack.dtype == np.uint16
    return stack


def open_widget(viewer):
    _, widget = viewer.window.add_plugin_dock_widget("napari-quicksilver",
                                                     WIDGET)
    assert isinstance(widget, napari_quicksilver.EsrrfWidget)
    return widget


def wait_done(qtbot, widget, timeout_s):
    qtbot.waitUntil(lambda: widget.last != "", timeout=int(timeout_s * 1000))
    return widget.last


def test_manifest_declares_the_widget():
    from npe2 import PluginManager

    pm = PluginManager.instance()
    pm.discover()
    mf = pm.get_manifest("napari-quicksilver")
    assert [w.display_name for w in mf.contributions.widgets] == [WIDGET]


def test_widget_runs_on_real_stack(make_napari_viewer, qtbot, mito):
    viewer = make_napari_viewer()
    layer = viewer.add_image(mito, name="mito", scale=(1.0, 0.1, 0.1),
                             translate=(0.0, 3.0, 4.0))
    widget = open_widget(viewer)
    widget.reset_choices()
    assert widget.image.value is layer
    # the fields are the engine's parameters with its defaults
    assert widget.values() == {
        "magnification": 5, "radius": 1.5, "sensitivity": 1.0,
        "intensity_weighting": True, "frames_per_timepoint": 0,
        "temporal": "avg", "macro_pixel_correction": True}
    widget.params["frames_per_timepoint"].value = 50
    widget.impl.value = "cpu"
    widget.run_button.native.click()
    assert not widget.run_button.enabled and widget.cancel_button.enabled
    assert wait_done(qtbot, widget, 120) == "done", widget.status.value
    assert widget.progress.value == 1000
    assert widget.run_button.enabled and not widget.cancel_button.enabled

    out = viewer.layers[-1]
    assert out.name == "mito eSRRF x5"
    assert out.data.shape == (2, 150, 225) and out.data.dtype == np.float32
    np.testing.assert_allclose(out.scale, (50.0, 0.02, 0.02))
    # output pixel i samples the input at i/M from its edge: half an input
    # pixel before the first input pixel's centre
    np.testing.assert_allclose(out.translate, (0.0, 2.95, 3.95))
    meta = out.metadata["quicksilver"]
    impls = {i.name: i.version for i in qs.default_engine().impls("esrrf")}
    assert meta["impl"] in impls and meta["impl_version"] == impls[meta["impl"]]
    assert meta["params"]["frames_per_timepoint"] == 50
    assert meta["params"]["magnification"] == 5
    assert meta["quicksilver_version"] == qs.__version__
    assert meta["source_layer"] == "mito" and meta["seconds"] > 0
    # the same pixels as the binding called directly, same implementation
    with qs.Engine(db=":memory:") as eng:
        ref = eng.run("esrrf", mito, impl=meta["impl"], magnification=5,
                      frames_per_timepoint=50)["output"]
    np.testing.assert_array_equal(out.data, ref)

    # one timepoint: a 2-D image; the screenshot for the README
    viewer.layers.remove(out)
    widget.params["frames_per_timepoint"].value = 0
    widget.last = ""
    widget.run_button.native.click()
    assert wait_done(qtbot, widget, 120) == "done", widget.status.value
    sr = viewer.layers[-1]
    assert sr.data.shape == (150, 225)
    np.testing.assert_allclose(sr.scale, (0.02, 0.02))
    np.testing.assert_allclose(sr.translate, (2.95, 3.95))
    shots = pathlib.Path(os.environ.get("QS_NAPARI_SHOTS") or
                         pathlib.Path.cwd())
    shots.mkdir(parents=True, exist_ok=True)
    for lay in viewer.layers[:-1]:
        lay.visible = False
    viewer.window._qt_window.resize(1280, 720)
    viewer.reset_view()
    qtbot.wait(200)
    shot = viewer.screenshot(str(shots / "napari-widget.png"),
                             canvas_only=False)
    assert shot.shape[0] >= 600 and shot.shape[1] >= 1000
    # the canvas shows the result, not a blank
    assert shot[..., :3].std() > 10


def cancel_when(qtbot, viewer, data, name, above, button="run_button"):
    """Runs the widget (serial; `button`: its Run, or its Sweep) on `data`
    as layer `name` and presses Cancel as soon as the progress bar passes
    `above` (of 1000), however long that takes on a loaded machine: the run
    ends cancelled within 5 s of it, short of the end, with no layer added;
    the widget."""
    viewer.add_image(data, name=name)
    widget = open_widget(viewer)
    widget.reset_choices()
    widget.impl.value = "serial"
    asked = []

    def press(value):
        if value > above and not asked:
            asked.append(time.monotonic())
            widget.cancel_button.native.click()

    widget.progress.changed.connect(press)
    getattr(widget, button).native.click()
    ended = []
    widget.worker.finished.connect(lambda: ended.append(1))
    try:
        assert wait_done(qtbot, widget, 900) == "cancelled", widget.status.value
    finally:  # no run (or its worker's last signals) outlives the viewer
        widget._cancel.set()
        qtbot.waitUntil(lambda: bool(ended), timeout=60000)
    late = time.monotonic() - asked[0]
    assert late < 5, f"the run ended {late:.2f} s after Cancel"
    assert 0 < widget.progress.value < 1000
    assert [lay.name for lay in viewer.layers] == [name]
    return widget


def test_cancel_stops_a_long_run(make_napari_viewer, qtbot, mito):
    viewer = make_napari_viewer()
    # the real stack tiled to 400 frames of 90 x 135, serial: about a
    # minute whole on this machine
    widget = cancel_when(qtbot, viewer, np.tile(mito, (4, 3, 3)), "big", 0)
    # nothing of the cancelled run in the store (forced: no calibration)
    assert not [r for r in qs.default_engine().db_rows(method="esrrf")
                if r.key.startswith("esrrf(400x90x135;")]
    assert widget.run_button.enabled and not widget.cancel_button.enabled


# -------------------------------------------------------------- sweep

def test_sweep_values_parse_as_the_cli_takes_them():
    parse = napari_quicksilver.parse_values
    assert parse("0.5:2.5:0.5", "r") == [0.5, 1.0, 1.5, 2.0, 2.5]
    assert parse("1:4:1", "s") == [1.0, 2.0, 3.0, 4.0]
    assert parse(" 1, 2,4 ", "s") == [1.0, 2.0, 4.0]
    for bad in ("", "x", "2:1:0.5", "1:2:0", "1,nan", "1:2"):
        with pytest.raises(ValueError, match="sweep radii"):
            parse(bad, "sweep radii")


def test_sweep_sets_the_best_point(make_napari_viewer, qtbot, mito):
    """Sweep on the real stack: its QnR map becomes a layer equal to the
    binding's sweep with the same implementation, its provenance in the
    layer's metadata, and the radius and sensitivity fields take the best
    point, which Run then uses."""
    viewer = make_napari_viewer()
    viewer.add_image(mito, name="mito")
    widget = open_widget(viewer)
    widget.reset_choices()
    widget.impl.value = "threaded"
    widget.sweep_radii.value = "1,2"
    widget.sweep_sensitivities.value = "1:2:1"
    widget.sweep_button.native.click()
    assert not widget.sweep_button.enabled and widget.cancel_button.enabled
    assert wait_done(qtbot, widget, 180) == "done", widget.status.value
    assert widget.sweep_button.enabled and widget.run_button.enabled
    with qs.Engine(db=":memory:") as eng:
        ref = eng.esrrf_sweep(mito, [1.0, 2.0], [1.0, 2.0], magnification=5,
                              macro_pixel_correction=True, impl="threaded")
    qnr = viewer.layers[-1]
    assert qnr.name.startswith("mito QnR")
    np.testing.assert_array_equal(qnr.data, ref.qnr[0].astype(np.float32))
    meta = qnr.metadata["quicksilver"]
    assert meta["impl"] == "threaded" == widget.swept.impl
    assert meta["sweep"] == {"radii": [1.0, 2.0],
                             "sensitivities": [1.0, 2.0],
                             "temporal": ["avg"]}
    assert meta["params"]["macro_pixel_correction"] is True
    _, s, r = ref.best()
    assert meta["best"] == {"radius": r, "sensitivity": s}
    assert (widget.params["radius"].value,
            widget.params["sensitivity"].value) == (r, s)
    assert f"radius {r:g}" in widget.status.value
    # Run takes them
    widget.last = ""
    widget.run_button.native.click()
    assert wait_done(qtbot, widget, 120) == "done", widget.status.value
    out = viewer.layers[-1].metadata["quicksilver"]["params"]
    assert (out["radius"], out["sensitivity"]) == (r, s)
    # bad lists: an error naming the field, nothing started
    widget.sweep_radii.value = "1,x"
    widget.sweep_button.native.click()
    assert widget.last.startswith("error: sweep radii"), widget.last
    assert widget.worker is None


def test_cancel_stops_a_long_sweep(make_napari_viewer, qtbot, mito):
    viewer = make_napari_viewer()
    widget = cancel_when(qtbot, viewer, np.tile(mito, (4, 3, 3)), "big", 0,
                         button="sweep_button")
    assert widget.swept is None
    assert widget.params["radius"].value == 1.5
    assert widget.sweep_button.enabled and not widget.cancel_button.enabled


# ----------------------------------------------------------- channels

@pytest.fixture(scope="module")
def hyperstack(tmp_path_factory):
    """A 2-channel ImageJ hyperstack (TCYX, 40 timepoints of 30 x 45,
    0.1 um pixels) made of the real stack's two halves, and the CLI's
    eSRRF of it (serial, M5, 20 frames a timepoint): (path, TCYX pixels,
    the CLI's output as T x C x rows x cols)."""
    stack = tifffile.imread(MITO)
    hs = np.stack([stack[:40], stack[60:100]], axis=1)
    d = tmp_path_factory.mktemp("channels")
    path = d / "hs.tif"
    tifffile.imwrite(path, hs, imagej=True, resolution=(10.0, 10.0),
                     metadata={"axes": "TCYX", "unit": "um"})
    out = d / "cli.tif"
    cli = os.environ.get("QS_CLI") or str(ROOT / "build/tools/quicksilver")
    subprocess.run([cli, "esrrf", str(path), "-o", str(out),
                    "--magnification", "5", "--frames-per-timepoint", "20",
                    "--impl", "serial", "-q"], check=True,
                   env=dict(os.environ, QUICKSILVER_DB=":memory:"))
    ref = tifffile.imread(out)
    assert ref.shape == (2, 2, 150, 225) and ref.dtype == np.float32
    return path, hs, ref


def run_widget(qtbot, widget, timeout_s=180):
    seen = []
    widget.progress.changed.connect(seen.append)
    widget.last = ""
    widget.run_button.native.click()
    assert wait_done(qtbot, widget, timeout_s) == "done", widget.status.value
    return seen


def test_channel_split_rules():
    """Which axis is the channel and which the frames, without a viewer."""
    from napari.layers import Image
    tczyx = np.zeros((4, 1, 3, 6, 7), np.float32)  # ImageJ TZCYX, Z = 1
    chans = napari_quicksilver.channel_stacks(Image(tczyx, name="h"))
    assert [c.stack.shape for c in chans] == [(4, 6, 7)] * 3
    assert [(c.index, c.time_axis, c.count) for c in chans] == [
        (0, 0, 3), (1, 0, 3), (2, 0, 3)]
    # a labelled channel axis first (CTYX), names from the metadata
    ctyx = np.arange(2 * 5 * 4 * 3, dtype=np.float32).reshape(2, 5, 4, 3)
    lay = Image(ctyx, name="c", axis_labels=("c", "t", "y", "x"),
                metadata={"channel_names": ["dna", "actin"]})
    chans = napari_quicksilver.channel_stacks(lay)
    assert [c.name for c in chans] == ["dna", "actin"]
    np.testing.assert_array_equal(chans[1].stack, ctyx[1])
    assert chans[1].time_axis == 1
    # the axes string tifffile gives, channel last before rows
    lay = Image(np.zeros((5, 2, 4, 3)), name="m", metadata={"axes": "ZCYX"})
    assert napari_quicksilver.channel_axis_of(lay) == 1
    # a 3-D layer is one channel; "none" keeps a 4-D one whole
    assert len(napari_quicksilver.channel_stacks(Image(ctyx[0]))) == 1
    with pytest.raises(ValueError, match="axes 0 and 1 both hold"):
        napari_quicksilver.channel_stacks(Image(ctyx), axis="none")
    # z and time both > 1 in a channel: refused naming them
    with pytest.raises(ValueError, match="split z or time"):
        napari_quicksilver.channel_stacks(Image(np.zeros((4, 2, 3, 6, 7))))
    with pytest.raises(ValueError, match="rows or columns"):
        napari_quicksilver.channel_stacks(Image(ctyx), axis=2)


def test_hyperstack_runs_per_channel(make_napari_viewer, qtbot, hyperstack):
    path, hs, ref = hyperstack
    viewer = make_napari_viewer()
    [layer] = viewer.open(str(path))  # napari's own TIFF reader: TCYX
    assert layer.data.shape == (40, 2, 30, 45)
    layer.scale = (2.0, 1.0, 0.1, 0.1)
    widget = open_widget(viewer)
    widget.reset_choices()
    assert widget.image.value is layer
    assert widget.channel_axis.value == "auto"
    widget.params["frames_per_timepoint"].value = 20
    widget.impl.value = "serial"
    seen = run_widget(qtbot, widget)
    # one bar over both channels: half way when the first ends
    assert seen == sorted(seen) and 500 in seen and seen[-1] == 1000
    outs = viewer.layers[1:]
    assert [o.name for o in outs] == ["hs channel 0 eSRRF x5",
                                      "hs channel 1 eSRRF x5"]
    for c, o in enumerate(outs):
        assert o.data.shape == (2, 150, 225)
        np.testing.assert_allclose(o.scale, (40.0, 0.02, 0.02))
        np.testing.assert_allclose(o.translate, (0.0, -0.05, -0.05))
        meta = o.metadata["quicksilver"]
        assert meta["channel"] == f"channel {c}" and meta["channels"] == 2
        assert meta["channel_index"] == c and meta["impl"] == "serial"
        # the CLI's channel c, bit for bit
        np.testing.assert_array_equal(o.data, ref[:, c])
    assert {o.blending for o in outs} == {"additive"}
    assert outs[0].colormap.name != outs[1].colormap.name


def test_one_layer_per_channel(make_napari_viewer, qtbot, hyperstack):
    _, hs, ref = hyperstack
    viewer = make_napari_viewer()
    mito, er = viewer.add_image(hs, channel_axis=1, name=["mito", "er"],
                                scale=(1.0, 0.1, 0.1))
    widget = open_widget(viewer)
    widget.reset_choices()
    widget.image.value = mito
    assert [lay for _, lay in widget._layer_choices()] == [er]
    widget.more_channels.value = [er]
    widget.params["frames_per_timepoint"].value = 20
    widget.impl.value = "serial"
    run_widget(qtbot, widget)
    outs = viewer.layers[2:]
    assert [o.name for o in outs] == ["mito eSRRF x5", "er eSRRF x5"]
    for c, o in enumerate(outs):
        np.testing.assert_allclose(o.scale, (20.0, 0.02, 0.02))
        assert o.metadata["quicksilver"]["channel"] == ["mito", "er"][c]
        assert o.colormap.name == [mito, er][c].colormap.name
        np.testing.assert_array_equal(o.data, ref[:, c])


def test_cancel_in_the_second_channel(make_napari_viewer, qtbot, mito):
    viewer = make_napari_viewer()
    # 2 channels (TCYX) of 100 frames of 60 x 90, serial: seconds each on
    # a quiet machine; cancelled in the second: nothing added, not even
    # the first channel
    two = np.stack([np.tile(mito, (1, 2, 2))] * 2, axis=1)
    cancel_when(qtbot, viewer, two, "two", 520)
