"""The notebooks execute top to bottom (nbclient) and draw something, so they never rot."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

nbclient = pytest.importorskip("nbclient")
nbformat = pytest.importorskip("nbformat")
pytest.importorskip("ipykernel")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


@pytest.fixture
def kernel(tmp_path, monkeypatch) -> str:
    """A ``python3`` kernelspec that runs this very interpreter (first on JUPYTER_PATH)."""
    spec_dir = tmp_path / "jupyter" / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3 (test)",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return "python3"


@pytest.mark.slow  # ~13 s each (a Jupyter kernel and a training run): documentation, not numerics
@pytest.mark.parametrize("name", ["positions", "compare"])
def test_notebook_runs_and_draws(name, kernel, tmp_path):
    nb = nbformat.read(NOTEBOOKS / f"{name}.ipynb", as_version=4)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), "strip outputs"
    workdir = tmp_path / "work"
    workdir.mkdir()
    client = nbclient.NotebookClient(
        nb,
        kernel_name=kernel,
        timeout=240,
        resources={"metadata": {"path": str(workdir)}},
    )
    client.execute()  # raises CellExecutionError on the first failing cell
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert images, f"{name}.ipynb displayed no image"
