"""Executes every notebook of tools/python/examples with a fresh kernel
(nbclient) and fails on any cell that raises; the notebooks assert what
they show (shapes, agreement between implementations within the method's
tolerance, rows in the timing store). Run by tools/napari/test with the
binding of the build on PYTHONPATH."""

import pathlib

import nbformat
import pytest
from nbclient import NotebookClient

HERE = pathlib.Path(__file__).resolve().parent
NOTEBOOKS = sorted(HERE.glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path, tmp_path):
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=600, kernel_name="python3",
                            resources={"metadata": {"path": str(HERE)}})
    client.execute()  # raises CellExecutionError on the first failing cell
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert code and all(c.execution_count for c in code)
    errors = [o for c in code for o in c.get("outputs", [])
              if o.output_type == "error"]
    assert not errors
    nbformat.write(nb, tmp_path / path.name)  # the executed copy, to look at
