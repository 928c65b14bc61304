"""Bad input raises the right subclass of quicksilver.Error with the status
name and a message naming what is wrong; nothing crashes."""

import numpy as np
import pytest

import quicksilver as qs


def test_every_status_maps_to_an_error_class():
    assert set(qs.STATUS) >= {"ok", "param", "shape", "no_method", "no_impl",
                              "unavailable"}
    from quicksilver import _errors
    for name, code in qs.STATUS.items():
        if name == "ok":
            continue
        cls = _errors._BY_NAME[name]  # every status has its class
        assert issubclass(cls, qs.Error)
        e = cls("m", code, name)
        assert (e.status, e.name, e.message) == (code, name, "m")
        assert str(e) == f"m [{name}]"
    assert _errors._BY_NAME["param"] is qs.ParameterError
    assert _errors._BY_NAME["shape"] is qs.ShapeError
    assert _errors._BY_NAME["unavailable"] is qs.UnavailableError


def test_wrong_dtype(engine, stack):
    with pytest.raises(qs.DTypeError) as ei:
        engine.run("roberts_cross", stack.astype(np.complex64))
    assert isinstance(ei.value, TypeError) and ei.value.name == "invalid"
    assert "complex64" in str(ei.value) and "image" in str(ei.value)
    with pytest.raises(qs.DTypeError):
        engine.run("roberts_cross", stack > 100)  # bool


@pytest.mark.parametrize("shape", [(7,), (2, 3, 4, 5)])
def test_wrong_ndim(engine, shape):
    with pytest.raises(qs.ShapeError) as ei:
        engine.run("roberts_cross", np.zeros(shape, np.float32))
    assert ei.value.name == "shape" and isinstance(ei.value, ValueError)
    assert f"{len(shape)}-D" in ei.value.message


def test_shape_mismatch_from_the_engine(engine, stack):
    with pytest.raises(qs.ShapeError) as ei:
        engine.run("rgc", stack, stack, stack)
    assert ei.value.status == qs.STATUS["shape"]
    assert "gradient_col" in ei.value.message


def test_empty_input(engine):
    with pytest.raises(qs.Error) as ei:
        engine.run("roberts_cross", np.zeros((0, 4, 4), np.float32))
    assert ei.value.name in ("shape", "invalid")


def test_wrong_input_count(engine, stack):
    with pytest.raises(qs.Error) as ei:
        engine.run("rgc", stack)
    assert ei.value.name in ("shape", "invalid")


def test_non_contiguous_is_converted_or_refused(engine, stack):
    wide = np.zeros((stack.shape[0], stack.shape[1], 2 * stack.shape[2]),
                    np.float32)
    wide[:, :, ::2] = stack
    view = wide[:, :, ::2]
    assert not view.flags.c_contiguous
    with pytest.raises(qs.CopyError) as ei:
        engine.run("roberts_cross", view, copy=False)
    assert "C-contiguous" in ei.value.message
    a = engine.run("roberts_cross", view)
    b = engine.run("roberts_cross", stack)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_copy_false_accepts_float32_and_refuses_uint16(engine, stack):
    engine.run("roberts_cross", stack, copy=False)
    with pytest.raises(qs.CopyError):
        engine.run("roberts_cross", stack.astype(np.uint16), copy=False)
    with pytest.raises(qs.CopyError):
        engine.run("roberts_cross", stack.astype(">f4"), copy=False)


def test_other_dtypes_give_float32_results(engine, stack):
    want = engine.run("esrrf", stack, magnification=2, impl="serial")[0]
    for dt in (np.uint16, np.float64, np.int32, ">f4"):
        got = engine.run("esrrf", stack.astype(dt), magnification=2,
                         impl="serial")[0]
        assert got.dtype == np.float32
        assert np.array_equal(got, want), dt


def test_nan_parameter(engine, stack):
    with pytest.raises(qs.ParameterError) as ei:
        engine.run("esrrf", stack, radius=float("nan"))
    assert ei.value.name == "param" and "radius" in ei.value.message


def test_out_of_range_and_wrong_type_parameters(engine, stack):
    with pytest.raises(qs.ParameterError, match="magnification"):
        engine.run("esrrf", stack, magnification=0)
    with pytest.raises(qs.ParameterError, match="magnification"):
        engine.run("esrrf", stack, magnification=2.5)
    with pytest.raises(qs.ParameterError, match="temporal"):
        engine.run("esrrf", stack, temporal="median")
    with pytest.raises(qs.ParameterError, match="radius"):
        engine.run("esrrf", stack, radius=[1.5])


def test_unknown_parameter_suggests_the_nearest(engine, stack):
    with pytest.raises(qs.ParameterError) as ei:
        engine.run("esrrf", stack, sensitivty=2)
    assert "sensitivty" in ei.value.message
    assert "did you mean sensitivity" in ei.value.message


def test_unknown_method_suggests_the_nearest(engine, stack):
    with pytest.raises(qs.UnknownMethodError) as ei:
        engine.run("esrf", stack)
    assert isinstance(ei.value, LookupError)
    assert "did you mean esrrf" in ei.value.message
    with pytest.raises(qs.UnknownMethodError):
        engine.method("robert_cross")


def test_unknown_impl_suggests_the_nearest(engine, stack):
    with pytest.raises(qs.UnknownImplementationError) as ei:
        engine.run("esrrf", stack, impl="seriel")
    assert "did you mean serial" in ei.value.message


def test_unavailable_impl(engine, stack):
    # the engine has no OpenCL devices: the opencl implementation exists
    # but cannot run
    with pytest.raises(qs.UnavailableError) as ei:
        engine.run("roberts_cross", stack, impl="opencl")
    assert ei.value.name == "unavailable"


def test_closed_engine(stack):
    e = qs.Engine(db=":memory:", opencl=False)
    e.close()
    e.close()  # idempotent
    assert e.closed
    with pytest.raises(qs.Error, match="closed"):
        e.run("roberts_cross", stack)
    with pytest.raises(qs.Error, match="closed"):
        e.methods()


def test_bad_engine_options(tmp_path):
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(qs.Error) as ei:
        qs.Engine(db=tmp_path / "file" / "t.db")
    assert ei.value.name in ("store", "io")
    assert "t.db" in ei.value.message


def test_size_past_what_an_int_holds(engine, stack):
    with pytest.raises(qs.SizeError) as ei:
        engine.run("shift_magnify", stack, magnification_row=1e9)
    assert isinstance(ei.value, OverflowError) and ei.value.name == "overflow"
    assert "magnification_row" in ei.value.message


def test_bad_environment_variable(monkeypatch):
    monkeypatch.setenv("QUICKSILVER_THREADS", "lots")
    with pytest.raises(qs.ConfigurationError) as ei:
        qs.Engine(db=":memory:")
    assert ei.value.name == "environment"
    assert "QUICKSILVER_THREADS" in ei.value.message


def test_corrupt_store_warns_and_runs_unrecorded(tmp_path, stack):
    db = tmp_path / "t.db"
    db.write_bytes(b"this is not an SQLite file" * 100)
    with pytest.warns(RuntimeWarning):
        e = qs.Engine(db=db, opencl=False)
    with e:
        res = e.run("roberts_cross", stack)
        assert res[0].shape == stack.shape
        assert e.record_status[0] == "corrupt" and e.record_status[1]
        assert res.report.record_status == "corrupt"
    assert db.read_bytes() == b"this is not an SQLite file" * 100
    with pytest.raises(OverflowError):
        qs.Engine(db=":memory:", threads=2**40)
