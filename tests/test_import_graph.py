"""The package's import graph has no cycle, and no import inside a function dodges one.

Built with ``ast`` from the source: an edge ``a -> b`` for every ``import`` of a
``roformer_lit`` module by ``a``, at module level or inside a function (imports under
``if TYPE_CHECKING:`` are not executed and do not count). A function-level import of a
module of the package is allowed only where it breaks no cycle: it must not lead back to
the importing module."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "roformer_lit"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def _resolve(importer: str, node: ast.ImportFrom) -> str | None:
    if node.level == 0:
        return node.module
    base = importer.split(".")
    if not MODULES[importer].name == "__init__.py":
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(name: str) -> list[tuple[str, int, bool]]:
    """(imported module, line, inside a function) for every package import of ``name``."""
    tree = ast.parse(MODULES[name].read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    function_lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            function_lines.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    found = []
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(name, node)
            if base is None:
                continue
            for alias in node.names:
                full = f"{base}.{alias.name}"
                targets.append(full if full in MODULES else base)
        for target in targets:
            if target in MODULES and node.lineno not in skip and target != name:
                found.append((target, node.lineno, node.lineno in function_lines))
    return found


GRAPH = {name: imports_of(name) for name in MODULES}


def _reaches(start: str, goal: str) -> list[str] | None:
    """A path of imports from ``start`` to ``goal``, or None."""
    stack, seen = [(start, [start])], {start}
    while stack:
        node, path = stack.pop()
        for target, _, _ in GRAPH[node]:
            if target == goal:
                return [*path, goal]
            if target not in seen:
                seen.add(target)
                stack.append((target, [*path, target]))
    return None


def test_the_package_import_graph_has_no_cycle():
    cycles = []
    for name, edges in GRAPH.items():
        for target, line, _ in edges:
            back = _reaches(target, name)
            if back is not None:
                cycles.append(f"{name}:{line} -> " + " -> ".join(back))
    assert not cycles, "\n".join(sorted(cycles))


def test_the_graph_is_read_from_real_imports():
    """The oracle itself: it sees the architecture rules' imports of the registries."""
    targets = {target for target, _, _ in GRAPH["roformer_lit.architecture_rules"]}
    assert {"roformer_lit.positions", "roformer_lit.attention"} <= targets
