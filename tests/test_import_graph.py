"""The package's import graph has no cycle, no import inside a function dodges one, and no
module imports from a floor above its own (:data:`FLOORS`).

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


#: The package's floors, lowest first. A module may import from its own floor and the floors
#: below, never from one above: the training core does not depend on the tools that drive it
#: or read its runs. A module's floor is that of the longest prefix of its name in the table
#: (``finetune.cli`` is the ``finetune`` command, a tool, while the rest of ``finetune`` is a
#: library built on the core). Function-level imports count; ``TYPE_CHECKING`` ones do not.
FLOORS: dict[str, tuple[int, str]] = {
    # 0 -- foundations: plain helpers with no architecture in them
    "errors": (0, "foundations"),
    "hook_outputs": (0, "foundations"),
    "safe_input": (0, "foundations"),
    "csv_records": (0, "foundations"),
    "run_files": (0, "foundations"),
    "tool_arguments": (0, "foundations"),
    "batch": (0, "foundations"),
    "machine": (0, "foundations"),
    # 1 -- the architecture: rules, registries, schemes, kernels, the network
    "validation": (1, "architecture"),
    "registry": (1, "architecture"),
    "plugin_faults": (1, "architecture"),
    "capabilities": (1, "architecture"),
    "architecture_rules": (1, "architecture"),
    "score_bias": (1, "architecture"),
    "positions": (1, "architecture"),
    "attention": (1, "architecture"),
    "blocks": (1, "architecture"),
    "layer_plan": (1, "architecture"),
    "plan_identity": (1, "architecture"),
    "plan_labels": (1, "architecture"),
    "encoder_config": (1, "architecture"),
    "component_origins": (1, "architecture"),
    "model": (1, "architecture"),
    # 2 -- the training core: the Lightning module, data modules, the training machinery
    "module": (2, "training core"),
    "module_arguments": (2, "training core"),
    "training_config": (2, "training core"),
    "data": (2, "training core"),
    "training": (2, "training core"),
    # 3 -- libraries built on the core
    "finetune": (3, "built on the core"),
    "interop": (3, "built on the core"),
    "testing": (3, "built on the core"),  # the scheme author's test kit
    # 4 -- tools: commands, and what reads or drives runs
    "commands": (4, "tools"),
    "finetune.cli": (4, "tools"),
    "finetune.parse": (4, "tools"),
    "benchmarks": (4, "tools"),
    "results": (4, "tools"),
    "sweep": (4, "tools"),
    # 5 -- entry points
    "": (5, "entry points"),
    "__main__": (5, "entry points"),
}


def floor_of(module: str) -> tuple[int, str] | None:
    """The floor of the longest table prefix of ``module`` (``roformer_lit.`` left off; the
    key ``""`` is the package's ``__init__`` alone); None for a module the table lacks."""
    rest = module.removeprefix("roformer_lit").removeprefix(".")
    if not rest:
        return FLOORS[""]
    parts = rest.split(".")
    for end in range(len(parts), 0, -1):
        key = ".".join(parts[:end])
        if key in FLOORS:
            return FLOORS[key]
    return None


def test_every_module_has_a_floor():
    missing = sorted(name for name in MODULES if floor_of(name) is None)
    assert not missing, f"add these modules to FLOORS: {missing}"


def test_no_module_imports_from_a_higher_floor():
    climbs = []
    for name, edges in GRAPH.items():
        own = floor_of(name)
        for target, line, _ in edges:
            theirs = floor_of(target)
            if own is not None and theirs is not None and theirs[0] > own[0]:
                climbs.append(f"{name}:{line} ({own[1]}) imports {target} ({theirs[1]})")
    assert not climbs, "\n".join(sorted(set(climbs)))


def test_the_floor_check_sees_a_climb():
    """The oracle itself: the floors order the core below the tools, and a longer prefix
    decides (a fine-tuning library module is below the ``finetune`` command)."""
    assert floor_of("roformer_lit.training.lifecycle")[0] < floor_of("roformer_lit.benchmarks")[0]
    assert floor_of("roformer_lit.finetune.module")[0] < floor_of("roformer_lit.finetune.cli")[0]
    assert floor_of("roformer_lit")[1] == "entry points"
    assert floor_of("roformer_lit.a_module_the_table_lacks") is None
