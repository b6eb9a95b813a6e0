"""``python -m roformer_lit schemes``: every position scheme, attention kernel and position
task this installation can use, with each one's options and what it declares it supports.

Built-ins come first, then the installed plugins (entry points in the groups
``roformer_lit.positions``, ``roformer_lit.kernels``, ``roformer_lit.tasks``), each with
where it comes from. ``--import PATH`` (repeatable) adds components named by import path
(``my_pkg.schemes:CoPE``) to the listing, checked as a run would check them (one that does
not load is refused in one line). An installed plugin that fails to load is skipped as
every command over every registered name skips it
(:meth:`~roformer_lit.registry.Registry.loadable`): one ``note:`` line on stderr naming it
and why, and the listing goes on. An entry point named like a built-in (never used: the
name means the built-in) is listed with its one-line error (exit code 2).
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Sequence
from typing import Any

from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.data.probes.tasks import PROBE_TASKS
from roformer_lit.errors import ConfigError
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.registry import Registry, describe_type, is_import_path, option_hints
from roformer_lit.tool_arguments import ToolParser


def options_of(cls: type) -> str:
    """``name: type = default`` for each keyword-only option of ``cls``."""
    parameters = inspect.signature(cls.__init__).parameters
    parts = []
    for name, hint in option_hints(cls).items():
        default = parameters[name].default
        shown = "" if default is inspect.Parameter.empty else f" = {default!r}"
        parts.append(f"{name}: {describe_type(hint) if hint is not Any else 'any'}{shown}")
    return ", ".join(parts) or "none"


def _origin(registry: Registry, name: str) -> str:
    origin = registry.origin(name)
    if origin["source"] == "builtin":
        return "built-in"
    if "distribution" in origin:
        return f"{origin['source'].replace('_', ' ')}, {origin['distribution']} {origin['version']}"
    return f"{origin['source'].replace('_', ' ')} {origin.get('module', '')}".strip()


def describe(registry: Registry, name: str) -> list[str]:
    """The lines that describe one component (or its one-line error)."""
    try:
        component = registry[name]
    except ConfigError as exc:
        return [f"  {name}: error: {exc}"]
    lines = [f"  {name}  ({_origin(registry, name)})"]
    if registry is PROBE_TASKS:
        hint = f"; hint: {component.hint}" if component.hint else ""
        lines.append(f"      tokens per symbol: {component.width}{hint}")
        return lines
    lines.append(f"      options: {options_of(component)}")
    capabilities = (
        component.capabilities() if registry is POSITION_SCHEMES else component.capabilities({})
    )
    lines.append(
        f"      {'claims' if registry is POSITION_SCHEMES else 'supports'}: "
        f"{capabilities.described()}"
    )
    return lines


def main(argv: Sequence[str]) -> int:
    parser = ToolParser("schemes", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--import",
        dest="imports",
        action="append",
        default=[],
        metavar="PATH",
        help="also list this import path (package.module:Class); repeatable",
    )
    args = parser.parse_args(list(argv))
    failed = False
    sections = [
        ("position schemes (model.position, layer_plan types' position)", POSITION_SCHEMES),
        ("attention kernels (model.attention, layer_plan types' attention)", ATTENTION_KERNELS),
        ("position tasks (data.probe)", PROBE_TASKS),
    ]
    for path in args.imports:  # each must resolve in one registry, before anything prints
        if not is_import_path(path):
            raise ConfigError(
                f"schemes: --import {path!r} is not an import path package.module:Class"
            )
        errors = []
        for _, registry in sections:
            try:
                registry[path]
                break
            except ConfigError as exc:
                errors.append(str(exc))
        else:
            raise ConfigError(f"schemes: --import {path!r}: {errors[0]}")
    for title, registry in sections:
        loaded = registry.loadable()
        for note in loaded.notes("schemes"):
            print(note, file=sys.stderr, flush=True)
        print(f"{title}:")
        names = loaded.names
        for path in args.imports:
            try:
                registry[path]
            except (ConfigError, KeyError):
                continue  # not this registry's kind
            names.append(path)
        for name in names:
            lines = describe(registry, name)
            failed |= ": error: " in lines[0]
            print("\n".join(lines))
        for name, error in registry.shadowing().items():
            print(f"  {name}: error: {error}")
            failed = True
        print()
    return 2 if failed else 0
