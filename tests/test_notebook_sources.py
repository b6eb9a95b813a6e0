"""The notebooks' code, read without running it (the default run; executing them is the slow
tier's ``tests/test_notebooks.py``, which needs a Jupyter kernel): every code cell parses,
every name it imports exists, every ``roformer_lit`` attribute it reads exists, every
config file it names is shipped, and every step count the markdown types ("12 training
steps") is a ``max_steps`` the code sets. A renamed function or config breaks this in a second
instead of only in the slow tier.

Read with the ``json`` module, so it needs none of the ``dev`` extra's notebook packages."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CONFIGS = ROOT / "configs"


def cells_of(path: Path) -> list[dict]:
    """The notebook's cells."""
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def code(path: Path) -> ast.Module:
    """The notebook's code cells in order, IPython magics (``%...``) left out, as one module."""
    return code_of(cells_of(path), str(path))


def code_of(cells: list[dict], filename: str = "<notebook>") -> ast.Module:
    """The code cells of ``cells`` in order, IPython magics left out, as one module."""
    lines = [
        line
        for cell in cells
        if cell["cell_type"] == "code"
        for line in "".join(cell["source"]).splitlines()
        if not line.lstrip().startswith("%")
    ]
    return ast.parse("\n".join(lines), filename=filename)


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


#: A step count typed in prose: "12 steps", "12 training steps", "1,000 optimiser steps".
TYPED_STEPS = re.compile(r"\b(\d[\d,]*)\s+(?:(?:training|optimi[sz]er)\s+)?steps\b")


def configured_max_steps(tree: ast.Module) -> set[int]:
    """Every integer ``max_steps`` the code sets: a dict entry or keyword argument whose
    name ends in ``max_steps`` (``"trainer.max_steps": 12``, ``max_steps=12``), an
    assignment to such a name, or a command-line list's ``"--trainer.max_steps", "12"``."""
    found: set[int] = set()

    def named(node: ast.AST | None) -> bool:
        text = node.value if isinstance(node, ast.Constant) else getattr(node, "id", None)
        return isinstance(text, str) and text.lstrip("-").endswith("max_steps")

    def number(node: ast.AST | None) -> int | None:
        value = node.value if isinstance(node, ast.Constant) else None
        if isinstance(value, str) and value.isdigit():
            return int(value)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    pairs: list[tuple[ast.AST | None, ast.AST | None]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            pairs += zip(node.keys, node.values, strict=True)
        elif isinstance(node, ast.keyword):
            pairs.append((ast.Name(id=node.arg or ""), node.value))
        elif isinstance(node, ast.Assign):
            pairs += [(target, node.value) for target in node.targets]
        elif isinstance(node, ast.List | ast.Tuple):
            pairs += zip(node.elts, node.elts[1:], strict=False)
    for key, value in pairs:
        if named(key) and number(value) is not None:
            found.add(number(value))  # type: ignore[arg-type]
    return found


def step_count_drift(cells: list[dict]) -> list[str]:
    """Each step count typed in a markdown cell ("12 training steps") that is not the
    ``max_steps`` the code cells set (:func:`configured_max_steps`), or that no code cell
    checks: the prose would go on saying 12 after the code trains 50."""
    configured = configured_max_steps(code_of(cells))
    drift = []
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "markdown":
            continue
        for match in TYPED_STEPS.finditer("".join(cell["source"])):
            typed = int(match.group(1).replace(",", ""))
            if typed not in configured:
                setting = sorted(configured) or "no max_steps"
                drift.append(f"cell {index}: {match.group(0)!r}, the code sets {setting}")
    return drift


def _notebook(markdown: str, code: str) -> list[dict]:
    return [
        {"cell_type": "markdown", "source": [markdown]},
        {"cell_type": "code", "source": [code]},
    ]


#: (markdown, code, the drift found): the check's own oracle.
STEP_CASES = [
    ("12 training steps are few", 'TINY = {"trainer.max_steps": 12}', []),
    ("seeds of 12 steps", "args = ['--trainer.max_steps', '12']", []),
    ("after 1,000 optimiser steps", "Trainer(max_steps=1000)", []),
    ("after 600 steps", "max_steps = 600", []),
    ("the step-50 checkpoint, step 3", "x = 1", []),  # no count of steps typed
    (
        "12 training steps are few",
        'TINY = {"trainer.max_steps": 50}',
        ["cell 0: '12 training steps', the code sets [50]"],
    ),
    ("what 12 steps show", "x = 1", ["cell 0: '12 steps', the code sets no max_steps"]),
    (
        "2 seeds of 12 steps; 13 steps later",
        "TINY = dict(max_steps=12)",
        ["cell 0: '13 steps', the code sets [12]"],
    ),
]


@pytest.mark.parametrize(("markdown", "source", "drift"), STEP_CASES)
def test_the_step_check_finds_a_typed_count_the_code_does_not_set(markdown, source, drift):
    assert step_count_drift(_notebook(markdown, source)) == drift


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_the_markdown_s_step_counts_are_the_code_s_max_steps(path) -> None:
    """compare.ipynb says "12 training steps" (and "12 steps" twice) in its markdown while a
    code cell sets ``trainer.max_steps``; nothing tied the two, so a change to the code
    would leave the prose describing runs it no longer makes."""
    assert step_count_drift(cells_of(path)) == []
