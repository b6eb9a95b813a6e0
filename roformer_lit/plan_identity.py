"""What a layer plan *is*, whatever way it is written: the one comparison of plans.

Two plans build the same network when every layer gets the same scheme, kernel, their
options and window: each layer as :func:`~roformer_lit.layer_plan.resolve_plan` reads it
(the one reading of a plan, which lays a type's options over the model's).
:func:`canonical_plan` writes a plan in one form so that such plans compare equal:

- the layers' types as the shortest pattern that repeats into them (``layers: [l, g, l, g]``,
  ``pattern: [l, g, l, g]`` and ``pattern: [l, g]`` are all ``pattern: [l, g]``);
- per type only what differs from the model: ``position`` where it is not
  ``model.position``, the options where the layer's differ from ``model.position_kwargs``
  (with another scheme: from that scheme's defaults), ``window`` where set, and the same
  for the kernel (``attention``, ``attention_kwargs``); a type without settings is left
  out. Options are read over their class's defaults (:func:`all_options`, by
  :func:`~roformer_lit.registry.with_defaults`, the reading by which layers share a
  scheme instance), so an option written at its default (``num_buckets: 32`` for T5) is
  the plan without it, as the model built from either is one, bit for bit;
- numbers as ``int`` where integral (``base: 10000`` and ``base: 10000.0`` are one value);
- a window as the layer it builds (:func:`built_window`): a query reads the keys within
  ``w // 2`` each side, so an odd window ``2k + 1`` (``k >= 1``) is window ``2k``
  (``65`` and ``64`` build one layer; ``1``, which reads only the query, stays ``1``);
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

from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.errors import ConfigError
from roformer_lit.layer_plan import resolve_plan
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.registry import Registry, check_options, lookup, with_defaults


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


def built_window(window: Any) -> Any:
    """The window ``window`` builds, in one spelling: a query reads the keys within
    ``window // 2`` each side, so an odd window ``2k + 1`` with ``k >= 1`` builds what
    ``2k`` builds and is written ``2k``; window ``1`` (the query alone: no smaller valid
    window reads the same) and anything not an integer above 1 stay as they are."""
    if isinstance(window, int) and not isinstance(window, bool) and window > 1:
        return window // 2 * 2
    return window


def shortest_period(names: Sequence[Any]) -> list[Any]:
    """The shortest prefix of ``names`` (type names, or any items that compare by ``==``)
    whose repetition is ``names`` (its length divides theirs)."""
    count = len(names)
    for size in range(1, count + 1):
        if count % size == 0 and list(names[:size]) * (count // size) == list(names):
            return list(names[:size])
    return list(names)


def canonical_plan(
    plan: Any,
    position: Any,
    position_kwargs: Any = None,
    attention: Any = None,
    attention_kwargs: Any = None,
) -> Any:
    """``plan`` (``model.layer_plan``) in the one form of the module docstring, for a model
    whose scheme is ``position`` with options ``position_kwargs`` and whose kernel is
    ``attention`` with ``attention_kwargs``; None for no plan; a plan that is not well
    formed as plain data, as it is."""
    well_formed, form = plan_form(plan, position, position_kwargs, attention, attention_kwargs)
    return form if well_formed else number(plain(plan))


#: The registry a layer's scheme (``position``) or kernel (``attention``) is named in.
REGISTRIES: dict[str, Registry[Any]] = {
    "position": POSITION_SCHEMES,
    "attention": ATTENTION_KERNELS,
}


def all_options(what: str, name: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """Every option of the scheme or kernel ``name`` (``what``: ``position``,
    ``attention``) given ``options``: the checked options over its class's defaults
    (:func:`~roformer_lit.registry.with_defaults`, the reading by which layers share a
    scheme), numbers as :func:`number` writes them. Where ``name`` does not resolve or an
    option does not check (the model build refuses it, in one line), the options as
    written."""
    try:
        cls = lookup(REGISTRIES[what], name, what)
        checked = check_options(cls, options, what, name)
    except ConfigError:
        return number(plain(dict(options)))
    return number(plain(with_defaults(cls, checked)))


def _own(
    what: str, name: Any, options: Mapping[str, Any], model: Any, base: Mapping[str, Any]
) -> dict[str, Any]:
    """A layer's options that are its own, every option read over its class's defaults
    (:func:`all_options`): with the model's scheme or kernel (``name`` is ``model``) those
    that differ from the model's ``base``; with another, those that differ from its
    defaults. An option written at the value it would have anyway is none of its own."""
    options = all_options(what, name, options)
    reference = all_options(what, name, base if name == model else {})
    return {k: v for k, v in options.items() if k not in reference or reference[k] != v}


def plan_form(
    plan: Any,
    position: Any,
    position_kwargs: Any = None,
    attention: Any = None,
    attention_kwargs: Any = None,
    built: bool = True,
) -> tuple[bool, Any]:
    """(whether ``plan`` is well formed, its one form): :func:`canonical_plan`, saying
    whether it could be read. Each layer is what :func:`~roformer_lit.layer_plan.resolve_plan`
    (the one reading of a plan) gives it: its scheme and kernel with their options, its
    window (as it builds, :func:`built_window`; as written where ``built`` is false: a
    sweep's grid labels, which name runs as their sweep file writes them); a type's entry
    holds what differs from the model's."""
    plan = plain(plan)
    if plan is None:
        return True, None
    base = number(plain(position_kwargs) or {})
    base_kernel = number(plain(attention_kwargs) or {})
    if not isinstance(plan, Mapping) or not isinstance(base, Mapping):
        return False, plan
    if not isinstance(base_kernel, Mapping):
        return False, plan
    names = plan.get("pattern", plan.get("layers"))
    try:
        specs = resolve_plan(
            plan,
            len(names) if isinstance(names, list) else 0,
            position,
            base,
            attention,
            base_kernel,
        )
    except ConfigError:
        return False, plan
    pattern = shortest_period([spec.type for spec in specs])
    canonical: dict[str, dict[str, Any]] = {}
    for spec in specs[: len(pattern)]:
        entry: dict[str, Any] = {}
        if spec.position != position:
            entry["position"] = spec.position
        options = _own("position", spec.position, spec.position_kwargs, position, base)
        if options:
            entry["position_kwargs"] = dict(sorted(options.items()))
        if spec.window is not None:
            entry["window"] = built_window(number(spec.window)) if built else number(spec.window)
        if spec.attention != attention:
            entry["attention"] = spec.attention
        kernel_options = _own(
            "attention", spec.attention, spec.attention_kwargs, attention, base_kernel
        )
        if kernel_options:
            entry["attention_kwargs"] = dict(sorted(kernel_options.items()))
        canonical[spec.type] = entry
    if not any(canonical.values()):
        return True, None
    return True, {"pattern": pattern, "types": {n: e for n, e in canonical.items() if e}}


def model_plan(model: Mapping[str, Any]) -> Any:
    """The canonical plan of a model's settings (``layer_plan``, ``position``,
    ``position_kwargs``: a run's flat hyperparameters or a config's ``model`` section)."""
    return canonical_plan(
        model.get("layer_plan"),
        model.get("position"),
        model.get("position_kwargs"),
        model.get("attention"),
        model.get("attention_kwargs"),
    )


def same_plan(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> bool:
    """Whether two models' settings give every layer the same scheme, kernel, their
    options and window."""
    return model_plan(plain(ours)) == model_plan(plain(theirs))


def built_layers(model: Mapping[str, Any]) -> list[tuple[Any, ...]] | None:
    """Every layer of a model's settings (flat: ``num_layers``, ``position``,
    ``position_kwargs``, ``attention``, ``attention_kwargs``, ``layer_plan``) as it builds,
    whatever its plan calls the layer's type: its scheme, options (:func:`all_options`), its
    window (:func:`built_window`), its kernel and options; None where the plan is not well
    formed."""
    model = plain(model)
    try:
        specs = resolve_plan(
            model.get("layer_plan"),
            model.get("num_layers", 0),
            model.get("position"),
            model.get("position_kwargs"),
            model.get("attention"),
            model.get("attention_kwargs"),
        )
    except (ConfigError, TypeError, AttributeError):
        return None
    return [
        (
            spec.position,
            all_options("position", spec.position, spec.position_kwargs),
            built_window(number(spec.window)),
            spec.attention,
            all_options("attention", spec.attention, spec.attention_kwargs),
        )
        for spec in specs
    ]


def same_layers(ours: Mapping[str, Any], theirs: Mapping[str, Any]) -> bool:
    """Whether two models' settings build every layer alike (:func:`built_layers`), whatever
    their plans call the types and whichever options the model or a type holds:
    ``pattern: [g, l]`` and ``pattern: [global, local]`` of the same types are one network,
    which :func:`same_plan`, grouping runs by what their plans say, tells apart."""
    built = built_layers(ours)
    return built is not None and built == built_layers(theirs)


__all__ = [
    "all_options",
    "built_layers",
    "built_window",
    "canonical_plan",
    "model_plan",
    "number",
    "plain",
    "plan_form",
    "same_layers",
    "same_plan",
    "shortest_period",
]
