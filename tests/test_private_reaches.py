"""No module reaches into a private name of Lightning or torch outside
``roformer_lit/training/lightning_compat.py``.

Built with ``ast`` from the package's source, with the classes imported to read their bases.
A *private* name starts with one underscore (dunders are public protocol). Four kinds of
reach are found:

- an import of a private name, or from a private module, of Lightning or torch
  (``from lightning.fabric.utilities.rank_zero import _get_rank``);
- an attribute reached through a Lightning or torch module (``torch._dynamo.config``);
- on ``self``, ``cls`` or ``super()``, a private name a Lightning or torch base class defines
  (``self._get(...)`` in a ``LightningCLI``), and a class overriding one (``def
  _parse_ckpt_path`` in a ``LightningCLI``, ``_index_sampler`` in a ``DataLoader``);
- any other object's private attribute (``trainer._signal_connector``, also through
  ``getattr(x, "_name")``) whose name the package does not define itself: the type of ``x``
  is not known from the source, so a private name the package never defines is taken as
  someone else's. The few that belong to other libraries are listed in
  :data:`OTHER_LIBRARIES`, each with its owner.

The package's own privates (``self._argv``, ``loader._skip``, ``interop._hf``) are allowed.
"""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "roformer_lit"
COMPAT = PACKAGE / "training" / "lightning_compat.py"

#: Top-level packages whose private names only the compat module may use.
LIGHTNING_AND_TORCH = (
    "lightning",
    "lightning_fabric",
    "pytorch_lightning",
    "torch",
    "torchmetrics",
)

#: Private-looking paths a library documents as the place to set something, with where.
#: torch has no public name for dynamo's recompile limit (``torch.compiler.config`` lacks
#: it); the attention kernel that raises it sits below the training floor that holds the
#: compat module, so it cannot import it.
DOCUMENTED = {
    "torch._dynamo.config.recompile_limit": "torch.compiler's troubleshooting page",
}

#: Operators called by their aten name, each with why no public call does: SDPA's own CPU
#: kernel, whose log-sum-exp output a custom backward needs and which
#: ``F.scaled_dot_product_attention`` does not return. The attention kernel that calls them
#: sits below the training floor that holds the compat module, so it cannot import it;
#: :func:`test_the_aten_operators_called_directly_exist` fails in one place if torch drops one.
ATEN_OPERATORS = {
    "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu": "SDPA's fused CPU kernel",
    "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward": "its backward",
}

#: (module, private attribute) reached on an object of another library, with its owner.
OTHER_LIBRARIES = {
    ("roformer_lit.tool_arguments", "_actions"): "argparse (standard library)",
    ("roformer_lit.data.hf_source", "_fingerprint"): "datasets",
    ("roformer_lit.interop.weights", "_keys_to_ignore_on_load_unexpected"): "transformers",
    ("roformer_lit.benchmarks.models", "_attn_implementation"): "transformers",
    ("roformer_lit.benchmarks.runners", "_supports_flash_attn"): "transformers",
}


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def is_foreign(module: str | None) -> bool:
    return bool(module) and module.split(".")[0] in LIGHTNING_AND_TORCH


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


SOURCES = {
    module_name(p): p
    for p in sorted(PACKAGE.rglob("*.py"))
    if p != COMPAT and p.name != "__main__.py"
}
TREES = {name: ast.parse(path.read_text(encoding="utf-8")) for name, path in SOURCES.items()}


def own_private_names() -> set[str]:
    """Every private name the package defines: functions, classes, module and class
    variables, attributes it assigns (``self._x = ...``), modules."""
    names = {part for name in SOURCES for part in name.split(".") if is_private(part)}
    for tree in TREES.values():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                    names.add(node.attr)
            elif isinstance(node, ast.arg):
                names.add(node.arg)
    return {name for name in names if is_private(name)}


OWN = own_private_names()


def body_names(node: ast.ClassDef) -> set[str]:
    """The names a class body defines (methods, properties, class attributes)."""
    names: set[str] = set()
    for item in node.body:
        if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(item.name)
        elif isinstance(item, (ast.Assign, ast.AnnAssign)):
            targets = item.targets if isinstance(item, ast.Assign) else [item.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def foreign_definer(cls: type, name: str, skip_own: bool) -> str | None:
    """The Lightning or torch class in ``cls``'s MRO that first defines ``name``, if any
    (``skip_own``: start above ``cls``, as ``super()`` does)."""
    for base in cls.__mro__[1:] if skip_own else cls.__mro__:
        if name in vars(base):
            return f"{base.__module__}.{base.__qualname__}" if is_foreign(base.__module__) else None
    return None


class Reaches(ast.NodeVisitor):
    """The private reaches of one module, as ``module:line what``."""

    def __init__(self, module: str) -> None:
        self.module = module
        self.live = importlib.import_module(module)
        self.aliases: dict[str, str] = {}  # local name -> the module or object it imports
        self.classes: list[type | None] = []
        self.found: list[str] = []

    def note(self, node: ast.AST, what: str) -> None:
        self.found.append(f"{self.module}:{node.lineno} {what}")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            local = alias.asname or alias.name.split(".")[0]
            self.aliases[local] = alias.name if alias.asname else alias.name.split(".")[0]
            if is_foreign(alias.name) and any(map(is_private, alias.name.split("."))):
                self.note(node, f"imports {alias.name}")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        source = node.module or ""
        for alias in node.names:
            self.aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
            if node.level == 0 and is_foreign(source):
                if any(map(is_private, source.split("."))) or is_private(alias.name):
                    self.note(node, f"imports {alias.name} from {source}")

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        owner = self.live
        for part in self._qualname(node):
            owner = getattr(owner, part, None)
        cls = owner if inspect.isclass(owner) else None
        if cls is not None:
            for name in sorted(filter(is_private, body_names(node))):
                where = foreign_definer(cls, name, skip_own=True)
                if where is not None:
                    self.note(node, f"class {node.name} overrides {where}.{name}")
        self.classes.append(cls)
        self.generic_visit(node)
        self.classes.pop()

    def _qualname(self, node: ast.ClassDef) -> list[str]:
        outer = [cls.__name__ for cls in self.classes if cls is not None]
        return [*outer, node.name]

    def dotted(self, node: ast.AST) -> str | None:
        """``node`` as a dotted path from the module it starts at (aliases resolved), or
        None when it is not a plain chain of names."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        return ".".join([self.aliases.get(node.id, node.id), *reversed(parts)])

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if self.dotted(node) in DOCUMENTED or self.dotted(node) in ATEN_OPERATORS:
            return
        if is_private(node.attr):
            self._check(node, node.value, node.attr)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        reflective = isinstance(node.func, ast.Name) and node.func.id in (
            "getattr",
            "setattr",
            "hasattr",
        )
        if reflective and len(node.args) >= 2:
            name = node.args[1]
            if isinstance(name, ast.Constant) and isinstance(name.value, str):
                if is_private(name.value):
                    self._check(node, node.args[0], name.value)
        self.generic_visit(node)

    def _check(self, node: ast.AST, value: ast.AST, name: str) -> None:
        root = value
        while isinstance(root, ast.Attribute):
            root = root.value
        cls = self.classes[-1] if self.classes else None
        if isinstance(value, ast.Name) and value.id in ("self", "cls") and cls is not None:
            where = foreign_definer(cls, name, skip_own=False)
            if where is not None:
                self.note(node, f"{value.id}.{name} is {where}'s")
            return
        if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "super":
            where = foreign_definer(cls, name, skip_own=True) if cls is not None else None
            if where is not None:
                self.note(node, f"super().{name} is {where}'s")
            return
        if isinstance(root, ast.Name) and root.id in self.aliases:
            if is_foreign(self.aliases[root.id]):
                self.note(node, f"{ast.unparse(value)}.{name} is a private name of {root.id}")
            if root is value:  # a module's own or imported name: decided above
                return
        if name not in OWN and (self.module, name) not in OTHER_LIBRARIES:
            self.note(node, f"{ast.unparse(value)}.{name}: not a name the package defines")


def reaches_of(module: str) -> list[str]:
    visitor = Reaches(module)
    visitor.visit(TREES[module])
    return visitor.found


@pytest.mark.parametrize("module", sorted(SOURCES))
def test_no_private_reach_outside_the_compat_module(module: str) -> None:
    found = reaches_of(module)
    assert not found, "move these into roformer_lit.training.lightning_compat:\n" + "\n".join(found)


def test_the_scan_sees_each_kind_of_reach(tmp_path, monkeypatch) -> None:
    """The oracle itself: a module written with one reach of each kind is caught on each
    line, and the package's own privates are not."""
    source = """
import torch
from lightning.fabric.utilities.rank_zero import _get_rank
from lightning.pytorch.cli import LightningCLI
from torch.utils.data import DataLoader


class CLI(LightningCLI):
    def _parse_ckpt_path(self):
        self._mine = 1
        return self._get(self.config, "seed_everything"), self._mine


class Loader(DataLoader):
    @property
    def _index_sampler(self):
        return super()._index_sampler


def reach(trainer):
    return torch._dynamo.config, trainer._signal_connector, getattr(trainer, "_fit_loop")


def documented():
    torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 8)
"""
    package = tmp_path / "scanned_module_of_the_test.py"
    package.write_text(source, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(TREES, "scanned_module_of_the_test", ast.parse(source))
    found = reaches_of("scanned_module_of_the_test")
    lines = sorted(int(line.split(":")[1].split()[0]) for line in found)
    assert lines == [3, 8, 11, 14, 17, 21, 21, 21], found


@pytest.mark.parametrize("path", sorted(ATEN_OPERATORS))
def test_the_aten_operators_called_directly_exist(path: str) -> None:
    import torch

    target = torch
    for part in path.split(".")[1:]:
        target = getattr(target, part)
    assert callable(target)
