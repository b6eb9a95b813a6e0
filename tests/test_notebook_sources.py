"""The notebooks' code, read without running it (the default run; executing them is the slow
tier's ``tests/test_notebooks.py``, which needs a Jupyter kernel): every code cell parses,
every name it imports exists, every ``roformer_lit`` attribute it reads exists, and every
config file it names is shipped. A renamed function or config breaks this in a second
instead of only in the slow tier.

Read with the ``json`` module, so it needs none of the ``dev`` extra's notebook packages."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CONFIGS = ROOT / "configs"


def code(path: Path) -> ast.Module:
    """The notebook's code cells in order, IPython magics (``%...``) left out, as one module."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    lines = [
        line
        for cell in cells
        if cell["cell_type"] == "code"
        for line in "".join(cell["source"]).splitlines()
        if not line.lstrip().startswith("%")
    ]
    return ast.parse("\n".join(lines), filename=str(path))


def missing_imports(tree: ast.Module) -> list[str]:
    """Each ``import M`` whose module is absent and ``from M import N`` whose ``N`` is."""
    missing = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if importlib.util.find_spec(alias.name) is None:
                    missing.append(alias.name)
        elif isinstance(node, ast.ImportFrom) and node.module:
            module = importlib.import_module(node.module)
            for alias in node.names:
                if not hasattr(module, alias.name):
                    try:
                        importlib.import_module(f"{node.module}.{alias.name}")
                    except ImportError:
                        missing.append(f"{node.module}.{alias.name}")
    return missing


def missing_attributes(tree: ast.Module, package: str = "roformer_lit") -> list[str]:
    """Each ``roformer_lit.X.Y`` read in ``tree`` that does not resolve (modules imported on
    the way)."""
    missing = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        chain, part = [], node
        while isinstance(part, ast.Attribute):
            chain.insert(0, part.attr)
            part = part.value
        if not (isinstance(part, ast.Name) and part.id == package):
            continue
        target = importlib.import_module(package)
        for index, name in enumerate(chain):
            if not hasattr(target, name):
                try:
                    target = importlib.import_module(".".join([package, *chain[: index + 1]]))
                    continue
                except ImportError:
                    missing.append(".".join([package, *chain[: index + 1]]))
                    break
            target = getattr(target, name)
    return sorted(set(missing))


def missing_configs(tree: ast.Module) -> list[str]:
    """Each ``*.yaml`` named by a string in ``tree`` that no file under ``configs/`` is."""
    shipped = {p.name for p in CONFIGS.rglob("*.yaml")}
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.endswith(".yaml")
        and Path(node.value).name not in shipped
    ]


def test_the_checks_find_what_is_gone() -> None:
    tree = ast.parse(
        "import roformer_lit\n"
        "from roformer_lit.results.compare import aggregate, no_such_function\n"
        "import no_such_module\n"
        "roformer_lit.MaskedLM\nroformer_lit.NoSuchModel\nroformer_lit.positions.base.nothing\n"
        "path = 'configs' + '/rope.yaml'\nother = 'gone.yaml'\n"
    )
    assert missing_imports(tree) == [
        "roformer_lit.results.compare.no_such_function",
        "no_such_module",
    ]
    assert missing_attributes(tree) == [
        "roformer_lit.NoSuchModel",
        "roformer_lit.positions.base.nothing",
    ]
    assert missing_configs(tree) == ["gone.yaml"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_notebook_reads_only_what_exists(path) -> None:
    pytest.importorskip("IPython")  # the notebooks' display functions (the dev extra)
    tree = code(path)
    assert missing_imports(tree) == []
    assert missing_attributes(tree) == []
    assert missing_configs(tree) == []


def test_both_notebooks_are_read() -> None:
    assert [p.name for p in NOTEBOOKS] == ["compare.ipynb", "positions.ipynb"]
