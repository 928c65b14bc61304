"""Plans through the binding (Engine.open over qs_method_open/qs_plan_run): a
plan's runs equal Engine.run with the same implementation bit for bit,
shorter last batches are accepted, other shapes refused, the engine cannot
be closed under an open plan, and a closed plan refuses runs."""

import numpy as np
import pytest

import quicksilver as qs


@pytest.mark.parametrize("impl", ["serial", "threaded_dynamic", None])
def test_runs_equal_engine_run(engine, stack, impl):
    params = dict(magnification_row=2, magnification_col=3, shift_row=0.5)
    with engine.open("shift_magnify", stack.shape, impl=impl,
                     **params) as p:
        assert p.impl == "" and not p.closed
        for part in (stack, stack[:3]):
            got = p.run(part)
            ref = engine.run("shift_magnify", part, impl=got.report.impl,
                             **params)
            assert got[0].shape == (part.shape[0], part.shape[1] * 2,
                                    part.shape[2] * 3)
            assert np.array_equal(got[0], ref[0])
            assert got.report.impl == p.impl
    assert p.closed


def test_shapes_and_misuse(engine, stack):
    with pytest.raises(qs.ParameterError, match="magnification"):
        engine.open("esrrf", stack.shape, magnifcation=2)
    with pytest.raises(qs.ShapeError, match="frames, rows, cols"):
        engine.open("esrrf", (1, 4, 5, 6))
    with pytest.raises(qs.ShapeError, match="positive"):
        engine.open("esrrf", (0, 4, 5))
    p = engine.open("roberts_cross", stack)  # shape taken from the array
    with pytest.raises(qs.ShapeError, match="planned"):
        p.run(stack[:, :-1])
    with pytest.raises(qs.ShapeError):
        p.run(np.concatenate([stack, stack]))
    with pytest.raises(qs.Error, match="still open"):
        engine.close()
    gx, gy = p.run(stack)
    assert gx.shape == stack.shape and gy.shape == stack.shape
    p.close()
    p.close()  # idempotent
    with pytest.raises(qs.Error, match="closed"):
        p.run(stack)


def test_given_outputs_plan_writes_in_place(engine, stack):
    """A plan opened with given_outputs=True writes every run into the
    arrays its out= gives (the same objects come back) with the bits of a
    plan that allocates; out= is required there and refused elsewhere."""
    params = dict(magnification_row=2, magnification_col=2)
    with engine.open("shift_magnify", stack.shape, impl="serial",
                     **params) as own, \
            engine.open("shift_magnify", stack.shape, impl="serial",
                        given_outputs=True, **params) as p:
        buf = np.full((stack.shape[0], stack.shape[1] * 2,
                       stack.shape[2] * 2), -3.0, np.float32)
        for part in (stack, stack[:3]):
            view = buf[:part.shape[0]]
            got = p.run(part, out=view)
            assert got[0] is view
            assert np.array_equal(view, own.run(part)[0])
        with pytest.raises(qs.Error, match="pass out="):
            p.run(stack)
        with pytest.raises(qs.Error, match="given_outputs=True"):
            own.run(stack, out=buf)
        with pytest.raises(qs.ShapeError, match="the call makes"):
            p.run(stack[:3], out=buf)
