"""One name for each thing, nearest-name hints on every keyword path, a
clean module namespace, estimates from shapes and the provenance of a
result (what the CLI writes into its TIFFs)."""

import numpy as np
import pytest

import quicksilver as qs
from quicksilver.nanopyx import eSRRF


@pytest.fixture
def stack():
    rng = np.random.default_rng(3)
    return (100 + 20 * rng.random((4, 12, 10))).astype(np.float32)


@pytest.fixture
def engine():
    with qs.Engine(db=":memory:") as e:
        yield e


def test_module_functions_name_the_nearest_keyword(stack):
    with pytest.raises(qs.ParameterError, match="did you mean magnification"):
        qs.esrrf(stack, magnifcation=5)
    with pytest.raises(qs.ParameterError, match="did you mean shift_row"):
        qs.shift_magnify(stack, shift_rows=1)
    with pytest.raises(qs.ParameterError, match="did you mean radius"):
        qs.rgc(stack, stack, stack, raduis=1)
    # far from every name: the names are listed instead
    with pytest.raises(qs.ParameterError, match="parameters: .*temporal"):
        qs.esrrf(stack, zzzzzz=1)


def test_drop_in_speaks_nanopyx_names(stack):
    with pytest.raises(qs.ParameterError) as err:
        eSRRF(stack, temporal_correlation="median")
    assert "temporal_correlation" in str(err.value)
    assert "temporal:" not in str(err.value)
    assert '"temporal"' not in str(err.value)
    with pytest.raises(qs.ParameterError, match="did you mean magnification"):
        eSRRF(stack, magnifcation=5)


def test_dir_lists_the_api_only():
    names = dir(qs)
    for private in ("np", "os", "difflib", "threading", "atexit", "dataclass",
                    "Optional", "functools"):
        assert private not in names
    for public in ("Engine", "esrrf", "ParameterError", "__version__",
                   "nanopyx"):
        assert public in names
    assert set(qs.__all__) <= set(names)


def test_estimate_takes_shapes_as_the_c_api_does(engine, stack):
    by_array = engine.estimate("esrrf", stack, magnification=2)
    by_shape = engine.estimate("esrrf", stack.shape, magnification=2)
    assert by_shape.impl == by_array.impl
    assert [e.impl for e in by_shape.estimates] == [
        e.impl for e in by_array.estimates]
    assert engine.estimate("esrrf", stack.shape[1:]).impl
    # no pixels are needed: 16 GB of frames cost nothing
    assert engine.estimate("esrrf", (1000, 2048, 2048)).impl
    with pytest.raises(qs.ShapeError):
        engine.estimate("esrrf", (1, 2, 3, 4))
    with pytest.raises(qs.ShapeError):
        engine.estimate("esrrf", (4, -1, 3))


def test_result_provenance(engine, stack):
    res = engine.run("esrrf", stack, magnification=2, temporal="VAR",
                     impl="serial")
    p = res.provenance
    assert p["tool"] == "quicksilver" and p["version"] == qs.__version__
    assert p["method"] == "esrrf" and p["impl"] == "serial"
    assert p["params"]["magnification"] == 2
    assert p["params"]["temporal"] == "var"
    assert p["params"]["radius"] == 1.5  # defaults too
    assert set(p["params"]) == {x.name for x in engine.method("esrrf").params}


def test_db_list_is_the_store_listing(engine, stack):
    engine.run("roberts_cross", stack, impl="serial")
    assert len(engine.db_list(method="roberts_cross")) == 1
    assert engine.db_rows == engine.db_list
