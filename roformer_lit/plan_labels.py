"""A layer plan's label in run names: short, one spelling per value, and never shared by two
plans that build different layers.

A plan is labelled as it builds where the model it belongs to is given (``fit``'s run
names: :func:`~roformer_lit.plan_identity.plan_form` with the model's scheme, kernel and
their options, the canonical form by which plans compare: a type naming the model's own
scheme, an option at the model's value and window ``65`` for ``64`` are the same label),
else as it is written (a sweep's grid label: ``plan_form`` with no model scheme, windows
as written). Either way: its shortest repeating pattern, each type's own settings,
integral numbers as integers, one part per run of equal types, joined with ``-``::

    <type>[<window>][.<scheme>][.<option><value>...][x<count>]

``local128x2-global`` (two windowed layers, then a global one), ``global.nope``,
``global.base160000`` (an option of the model's scheme), ``local8.base10000x2``. Values
are spelled one way (:func:`spelled`): ``160000.0`` and ``160000`` are both ``160000``.

**Injective.** That form can be read in more than one way (a type literally named
``local8`` and a type ``local`` with window 8 both write ``local8``; an option value with a
``.`` or ``-``, a scheme name with digits, such as ``t5``). So the label is read back
(:func:`read_label`, which takes the first reading of each piece: a type name ends before
its trailing digits, a field with digits is an option); where that reading is not the
plan, an 8-hex-digit digest of the plan is appended (``local8-global-1c0ffee5``). Two plans
with one label therefore read back to one plan, or share a digest. A label longer than
:data:`MAX_LABEL` characters is cut and ends in the digest too.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from typing import Any

from roformer_lit.plan_identity import plain, plan_form

#: The longest plan label in a run name; a longer one is cut and given a digest of the whole.
MAX_LABEL = 80
_COUNT = re.compile(r"^(?P<rest>.+?)x(?P<count>[1-9][0-9]*)$")
_HEAD = re.compile(r"^(?P<name>[A-Za-z0-9_]*?[A-Za-z_])(?P<window>[1-9][0-9]*)?$")
_OPTION = re.compile(r"^(?P<key>[A-Za-z_]+)(?P<value>[0-9]+)$")
_SCHEME = re.compile(r"^[A-Za-z_]+$")
_DIGEST = re.compile(r"^[0-9a-f]{8}$")


def spelled(value: Any) -> str:
    """A setting's value in a run name, one way: an integral number as an integer
    (``160000.0`` -> ``160000``), any other float as Python's shortest round-trip
    (``0.25``, ``1e-05``), booleans ``true``/``false``, anything else as compact JSON or
    text."""
    if isinstance(value, bool) or value is None:
        return str(value).lower()
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return str(int(value))
    if isinstance(value, int | float | str):
        return str(value)
    return json.dumps(plain(value), sort_keys=True, separators=(",", ":"))


def written_plan(plan: Any) -> dict[str, Any] | None:
    """The plan as written, in one form (no model scheme to compare a type's with: every
    setting a type writes counts, a window as written); None for no plan or a plan of one
    plain type."""
    well_formed, written = plan_form(plan, None, None, built=False)
    return written if well_formed else None


def built_plan(plan: Any, model: Mapping[str, Any]) -> dict[str, Any] | None:
    """The plan as it builds in ``model`` (flat model settings: ``position``,
    ``position_kwargs``, ``attention``, ``attention_kwargs``), the form by which plans
    compare (:func:`~roformer_lit.plan_identity.plan_form`); None for no plan or one that
    builds the model without a plan; a plan that does not read with the model's settings
    (its checks refuse it where the model is built) as written."""
    well_formed, form = plan_form(
        plan,
        model.get("position"),
        model.get("position_kwargs"),
        model.get("attention"),
        model.get("attention_kwargs"),
    )
    return form if well_formed else written_plan(plan)


def _part(name: str, settings: Mapping[str, Any]) -> str:
    text = name + (spelled(settings["window"]) if settings.get("window") is not None else "")
    if settings.get("position") is not None:
        text += f".{settings['position']}"
    options = settings.get("position_kwargs") or {}
    return text + "".join(f".{key}{spelled(value)}" for key, value in options.items())


def readable(plan: Mapping[str, Any]) -> str:
    """The label's readable part (before any digest), of a :func:`written_plan`."""
    types = plan.get("types") or {}
    runs: list[list[Any]] = []
    for name in plan["pattern"]:
        part = _part(name, types.get(name) or {})
        if runs and runs[-1][0] == part:
            runs[-1][1] += 1
        else:
            runs.append([part, 1])
    return "-".join(part if count == 1 else f"{part}x{count}" for part, count in runs)


def _read_part(text: str) -> tuple[str, dict[str, Any], int] | None:
    count = 1
    match = _COUNT.match(text)
    if match and int(match["count"]) >= 2:
        text, count = match["rest"], int(match["count"])
    head, *fields = text.split(".")
    parts = _HEAD.match(head)
    if parts is None:
        return None
    settings: dict[str, Any] = {}
    if parts["window"]:
        settings["window"] = int(parts["window"])
    options: dict[str, Any] = {}
    for index, field in enumerate(fields):
        option = _OPTION.match(field)
        if option:
            options[option["key"]] = int(option["value"])
        elif index == 0 and _SCHEME.match(field):
            settings["position"] = field
        else:
            return None
    if options:
        settings["position_kwargs"] = options
    return parts["name"], settings, count


def read_label(label: str) -> dict[str, Any] | None:
    """The plan a readable label reads as (see the module), in :func:`written_plan`'s form;
    None where it reads as none (or its last part looks like a digest)."""
    pieces = label.split("-")
    if not label or _DIGEST.match(pieces[-1]):
        return None
    names: list[str] = []
    types: dict[str, dict[str, Any]] = {}
    for piece in pieces:
        read = _read_part(piece)
        if read is None:
            return None
        name, settings, count = read
        if types.setdefault(name, settings) != settings:
            return None
        names += [name] * count
    return written_plan({"layers": names, "types": types})


def _digest(plan: Mapping[str, Any]) -> str:
    text = json.dumps(plan, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha1(text.encode()).hexdigest()[:8]


def plan_label(plan: Any, model: Mapping[str, Any] | None = None) -> str:
    """The label of ``model.layer_plan`` in run names (see the module): as it builds in
    ``model`` (flat model settings, scheme and kernel names as their registries spell
    them) where given, else as written; ``""`` for no plan (or one that builds the model
    without a plan)."""
    written = written_plan(plan) if model is None else built_plan(plan, model)
    if written is None:
        return ""
    text = readable(written)
    if len(text) > MAX_LABEL:
        return f"{text[: MAX_LABEL - 9]}-{_digest(written)}"
    if read_label(text) != written:
        return f"{text}-{_digest(written)}"
    return text


__all__ = [
    "MAX_LABEL",
    "built_plan",
    "plan_label",
    "read_label",
    "readable",
    "spelled",
    "written_plan",
]
