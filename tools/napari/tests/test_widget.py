"""The napari plugin end to end, in a real (headless) napari viewer: the
widget is found through the plugin manifest, runs eSRRF on the real stack
tests/data/real/musical_cardiomyoblast_mito_100f.tif, adds a layer of the
expected shape, scale, translation, pixels (those of a direct call to the
binding with the same implementation) and provenance; Cancel stops a long
run with nothing added; a screenshot of the viewer with the widget is saved
in $QS_NAPARI_SHOTS (the README's picture).

Run by tools/napari/test (under Xvfb: napari's canvas needs OpenGL)."""

import os
import pathlib
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


def test_cancel_stops_a_long_run(make_napari_viewer, qtbot, mito):
    viewer = make_napari_viewer()
    # the real stack tiled to 400 frames of 90 x 135, serial: about a
    # minute whole on this machine
    big = np.tile(mito, (4, 3, 3))
    viewer.add_image(big, name="big")
    widget = open_widget(viewer)
    widget.reset_choices()
    widget.impl.value = "serial"
    widget.run_button.native.click()
    qtbot.waitUntil(lambda: widget.progress.value > 0, timeout=60000)
    asked = time.monotonic()
    widget.cancel_button.native.click()
    assert wait_done(qtbot, widget, 60) == "cancelled", widget.status.value
    late = time.monotonic() - asked
    assert late < 5, f"the run ended {late:.2f} s after Cancel"
    assert widget.progress.value < 1000
    assert [lay.name for lay in viewer.layers] == ["big"]
    # nothing of the cancelled run in the store (forced: no calibration)
    assert not [r for r in qs.default_engine().db_rows(method="esrrf")
                if r.key.startswith("esrrf(400x90x135;")]
    assert widget.run_button.enabled and not widget.cancel_button.enabled
