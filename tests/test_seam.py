"""The seam is one-directional: schemes never import the attention block or kernels.

A scheme receives what it needs as data (positions, the layer's QKV weights) and returns
data (a ScoreBias); the attention side imports the schemes' base module, never the reverse.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import roformer_lit

POSITIONS = Path(roformer_lit.__file__).parent / "positions"


def imported_modules(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return names


@pytest.mark.parametrize("path", sorted(POSITIONS.glob("*.py")), ids=lambda p: p.stem)
def test_a_scheme_never_imports_the_attention_side(path):
    reaching_back = {m for m in imported_modules(path) if m.startswith("roformer_lit.attention")}
    assert not reaching_back, f"{path.name} imports {reaching_back}"
