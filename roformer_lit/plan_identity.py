"""What a layer plan *is*, whatever way it is written: the one comparison of plans.

Two plans build the same network when every layer gets the same scheme, options and window.
:func:`canonical_plan` writes a plan in one form so that such plans compare equal:

- the layers' types as the shortest pattern that repeats into them (``layers: [l, g, l, g]``,
  ``pattern: [l, g, l, g]`` and ``pattern: [l, g]`` are all ``pattern: [l, g]``);
- per type only what differs from the model: ``position`` where it is not
  ``model.position``, the options where the layer's differ from ``model.position_kwargs``
  (with another scheme: all of its options), ``window`` where set; a type without
  settings is left out;
- numbers as ``int`` where integral (``base: 10000`` and ``base: 10000.0`` are one value);
- a plan whose every layer is a plain global layer of the model's scheme is no plan (None):
  the model without a plan, bit for bit.

``compare`` groups runs by it, a resumed run accepts an equivalent plan written otherwise
(``layers:`` for ``pattern:``), and ``sweep`` compares a finished run's plan by it before
skipping it. A plan that is not well formed is returned as plain data, unchanged: the
checks of :mod:`roformer_lit.layer_plan` report it where a model is built.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any


def plain(value: Any) -> Any:
    """``value`` as plain data: mappings (a jsonargparse Namespace too) as dicts, tuples as
    lists."""
    as_dict = getattr(value, "as_dict", None)
    if callable(as_dict):
        value = as_dict()
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def number(value: Any) -> Any:
    """An integral finite float as ``int`` (``10000.0`` -> ``10000``), containers item by
    item; anything else as it is. Booleans stay booleans."""
    if isinstance(value, float) and math.isfinite(value) and value == int(value):
        return int(value)
    if isinstance(value, Mapping):
        return {k: number(v) for k, v in value.items()}
    if isinstance(value, list):
        return [number(v) for v in value]
    return value


def shortest_period(names: Sequence[str]) -> list[str]:
    """The shortest prefix of ``names`` whose repetition is ``names`` (its length divides
    theirs)."""
    count = len(names)
    for size in range(1, count + 1):
        if count % size == 0 and list(names[:size]) * (count // size) == list(names):
            return list(names[:size])
    return list(names)


def _layer_names(plan: Mapping[str, Any]) -> list[str] | None:
    if ("pattern" in plan) == ("layers" in plan):
        return None
    names = plan.get("pattern", plan.get("layers"))
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        return None
    return names


def canonical_plan(plan: Any, position: Any, position_kwargs: Any = None) -> Any:
    """``plan`` (``model.layer_plan``) in the one form of the module docstring, for a model
    whose scheme is ``position`` with options ``position_kwargs``; None for no plan; a
    plan that is not well formed as plain data, as it is."""
    well_formed, form = plan_form(plan, position, position_kwargs)
    return form if well_formed else number(plain(plan))


def plan_form(plan: Any, position: Any, position_kwargs: Any = None) -> tuple[bool, Any]:
    """(whether ``plan`` is well formed, its one form): :func:`canonical_plan`, saying
    whether it could be read."""
    plan = plain(plan)
    if plan is None:
        return True, None
    if not isinstance(plan, Mapping):
        return False, plan
    names = _layer_names(plan)
    types = plan.get("types") if plan.get("types") is not None else {}
    base = number(plain(position_kwargs) or {})
    if names is None or not isinstance(types, Mapping) or not isinstance(base, Mapping):
        return False, plan
    pattern = shortest_period(names)
    canonical: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys(pattern):
        settings = types.get(name) if types.get(name) is not None else {}
        own = settings.get("position_kwargs") if isinstance(settings, Mapping) else None
        if not isinstance(settings, Mapping) or not isinstance(own or {}, Mapping):
            return False, plan
        scheme = settings.get("position", position)
        own = number(own or {})
        if scheme == position:
            options = {k: v for k, v in own.items() if k not in base or base[k] != v}
        else:
            options = dict(own)
        entry: dict[str, Any] = {}
        if scheme != position:
            entry["position"] = scheme
        if options:
            entry["position_kwargs"] = dict(sorted(options.items()))
        if settings.get("window") is not None:
            entry["window"] = number(settings["window"])
        canonical[name] = entry
    if not any(canonical.values()):
        return True, None
    return True, {"pattern": pattern, "types": {n: e for n, e in canonical.items() if e}}


def model_plan(model: Mapping[str, Any]) -> Any:
    """The canonical plan of a model's settings (``layer_plan``, ``position``,
    ``position_kwargs``: a run's flat hyperparameters or a config's ``model`` section)."""
    return canonical_plan(
        model.get("layer_plan"), model.get("position"), model.get("position_kwargs")
    )


def same_plan(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> bool:
    """Whether two models' settings give every layer the same scheme, options and window."""
    return model_plan(plain(ours)) == model_plan(plain(theirs))


__all__ = [
    "canonical_plan",
    "model_plan",
    "number",
    "plain",
    "plan_form",
    "same_plan",
    "shortest_period",
]
