"""The notebooks execute top to bottom and draw something, so they never rot.

They run through the very function users call (``python scripts/run_notebooks.py``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("nbclient")
pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "run_notebooks.py"


def load_runner():
    spec = importlib.util.spec_from_file_location("run_notebooks", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_notebook_is_listed() -> None:
    assert load_runner().names() == ["compare", "positions"]


@pytest.mark.slow  # ~13 s each (a Jupyter kernel and a training run): documentation, not numerics
@pytest.mark.parametrize("name", ["positions", "compare"])
def test_notebook_runs_and_draws(name, tmp_path):
    runner = load_runner()
    import nbformat

    source = nbformat.read(runner.NOTEBOOKS / f"{name}.ipynb", as_version=4)
    assert all(not c.get("outputs") for c in source.cells if c.cell_type == "code"), "strip outputs"
    nb = runner.execute(name, tmp_path)  # raises CellExecutionError on the first failing cell
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert images, f"{name}.ipynb displayed no image"
