"""Layer plans (``model.layer_plan``): each layer's scheme, kernel, their options and window.

A plan names layer *types* and says which layer has which, either as a repeating pattern
or as one entry per layer, plus each type's settings::

    layer_plan:
      pattern: [local, local, global]          # repeats; its length divides num_layers
      types:
        local:  {window: 128, position_kwargs: {base: 10000}}
        global: {position_kwargs: {base: 160000}}

    layer_plan:
      layers: [global, local, local, global]   # or: one entry per layer
      types: {local: {window: 128}}

A type's settings (all optional; a type without settings is a plain global layer, and so
is a name ``types`` does not define: :func:`undefined_types` lists those other than
:data:`GLOBAL`, which ``fit`` names in a ``note:`` line, since ``locl`` for ``local`` is
more likely a typo than a global layer):

- ``window``: ``w >= 1`` or null (global). Query ``i`` attends to key ``j`` only where
  ``|i - j| <= w // 2`` (bidirectional; ModernBERT's ``local_attention`` convention, 128:
  64 tokens each side). A window at least as long as the sequence is global.
- ``position``: the layer's position scheme (``nope`` for none); default ``model.position``.
- ``position_kwargs``: the layer's scheme options. With the model's scheme they are laid
  over ``model.position_kwargs`` (a type sets only what differs, e.g. RoPE's ``base``);
  with another scheme they are that scheme's options alone.
- ``attention``: the layer's attention kernel; default ``model.attention``.
- ``attention_kwargs``: the layer's kernel options, laid over ``model.attention_kwargs`` the
  same way (with the model's kernel) or alone (with another kernel).

This module checks the plan's structure and resolves it into one :class:`LayerSpec` per
layer; the encoder checks schemes, options and kernels against the registries. A plan of
one type everywhere (or no plan) is the model without a plan, bit for bit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from roformer_lit.errors import ConfigError
from roformer_lit.validation import (
    PREFIX,
    Rule,
    check,
    mapping,
    non_empty_text,
    optional,
    size,
)

PLAN_KEYS = ("pattern", "layers", "types")
#: A layer type's settings and what each accepts.
TYPE_RULES: dict[str, Rule] = {
    "window": optional(size()),
    "position": non_empty_text,
    "position_kwargs": mapping,
    "attention": non_empty_text,
    "attention_kwargs": mapping,
}
_LABEL = "model.layer_plan"
#: The name a plan may use for a plain global layer without defining it under ``types``.
GLOBAL = "global"
_TYPE_NAME = re.compile(r"[A-Za-z0-9_]+")


@dataclass(frozen=True)
class LayerSpec:
    """One layer's resolved plan: its type's name, scheme and options, window, kernel and
    options. A layer is built from its spec (``EncoderLayer(config, spec)``)."""

    type: str
    position: str
    position_kwargs: Mapping[str, Any]
    window: int | None
    attention: str = "softmax"
    attention_kwargs: Mapping[str, Any] = field(default_factory=dict)
    #: What the layer type wrote itself (``position``, ``position_kwargs.base``, ...); the
    #: rest is the model's. Only where messages point (:meth:`path`): never compared.
    written: frozenset[str] = field(default=frozenset(), compare=False)

    def path(self, key: str, option: str | None = None) -> str:
        """The setting the user wrote for ``key`` (``position``, ``attention``,
        ``position_kwargs``...) or one of its options, as a dotted path:
        ``model.layer_plan.types.local.position_kwargs.base`` where the layer type wrote
        it, ``model.position_kwargs.base`` where the layer took the model's. A nested
        option (``inner_kwargs.base``) is the layer type's where it wrote its first part."""
        name = key if option is None else f"{key}.{option}"
        top = key if option is None else f"{key}.{option.partition('.')[0]}"
        if top in self.written:
            return f"{_LABEL}.types.{self.type}.{name}"
        return f"{PREFIX}{name}"

    def written_path(self, *keys: str) -> str | None:
        """The narrowest path of what the layer type wrote among ``keys`` and their options:
        ``model.layer_plan.types.local.position_kwargs.base`` where it wrote that alone,
        ``model.layer_plan.types.local`` where it wrote several; None where it wrote none
        (the layer's settings are then the model's)."""
        names = sorted(
            name
            for name in self.written
            if name.partition(".")[0] in keys
            and name not in ("position_kwargs", "attention_kwargs")
        )
        if not names:
            return None
        return f"{_LABEL}.types.{self.type}" + (f".{names[0]}" if len(names) == 1 else "")


def _names(value: Any, key: str) -> list[str]:
    if (
        not isinstance(value, Sequence)
        or isinstance(value, str)
        or not value
        or not all(isinstance(v, str) and _TYPE_NAME.fullmatch(v) for v in value)
    ):
        raise ConfigError(
            f"{_LABEL}.{key} must be a non-empty list of layer type names (letters, digits, "
            f"underscores: they name runs), got {value!r}"
        )
    return list(value)


def layer_types(plan: Mapping[str, Any], num_layers: int) -> list[str]:
    """Each layer's type name, from ``pattern`` (repeated) or ``layers`` (one per layer)."""
    check(_LABEL, plan, mapping)
    unknown = sorted(set(plan) - set(PLAN_KEYS))
    if unknown:
        raise ConfigError(
            f"{_LABEL} has no key(s) {', '.join(map(repr, unknown))}; valid: {', '.join(PLAN_KEYS)}"
        )
    if ("pattern" in plan) == ("layers" in plan):
        raise ConfigError(
            f"{_LABEL} needs exactly one of pattern (repeated) or layers (one per layer)"
        )
    if "pattern" in plan:
        pattern = _names(plan["pattern"], "pattern")
        if num_layers % len(pattern):
            valid = [n for n in range(1, num_layers + 1) if num_layers % n == 0]
            raise ConfigError(
                f"{_LABEL}.pattern {pattern} has {len(pattern)} entries, which does not divide "
                f"model.num_layers={num_layers}; valid pattern lengths: {valid} (or list every "
                f"layer under {_LABEL}.layers)"
            )
        return pattern * (num_layers // len(pattern))
    layers = _names(plan["layers"], "layers")
    if len(layers) != num_layers:
        raise ConfigError(
            f"{_LABEL}.layers has {len(layers)} entries; model.num_layers={num_layers} needs "
            f"{num_layers}"
        )
    return layers


def _settings(value: Any, label: str) -> Mapping[str, Any]:
    """``types`` or one type's settings: a mapping, or null (none: ``{}``). Any other
    value, falsy ones too (``false``, ``0``, ``[]``, ``''``), is one ConfigError line."""
    if value is None:
        return {}
    check(label, value, mapping)
    return value


def resolve_plan(
    plan: Mapping[str, Any] | None,
    num_layers: int,
    position: str,
    position_kwargs: Mapping[str, Any] | None,
    attention: str = "softmax",
    attention_kwargs: Mapping[str, Any] | None = None,
) -> list[LayerSpec]:
    """One :class:`LayerSpec` per layer (no plan: every layer global with the model's
    scheme and kernel); a malformed plan is one ConfigError line naming the key and the
    valid values."""
    base_kwargs = dict(position_kwargs or {})
    base_kernel_kwargs = dict(attention_kwargs or {})
    if plan is None:
        return [
            LayerSpec("all", position, base_kwargs, None, attention, base_kernel_kwargs)
        ] * num_layers
    names = layer_types(plan, num_layers)
    types = _settings(plan.get("types"), f"{_LABEL}.types")
    dotted = [key for key in types if isinstance(key, str) and "." in key]
    if dotted:  # --model.layer_plan.types.local.window 8: jsonargparse's one key, not a path
        raise ConfigError(
            f"{_LABEL}.types.{dotted[0]} cannot be set on its own: the command line reads it as "
            f"one layer type named {dotted[0]!r} (value {types[dotted[0]]!r}) and drops the "
            f"other types; give {_LABEL} whole (--model.layer_plan '{{pattern: [...], types: "
            f"{{{dotted[0].partition('.')[0]}: {{...}}}}}}') or in a --config file; the layers' "
            f"types: {', '.join(dict.fromkeys(names))}"
        )
    unused = sorted(set(types) - set(names))
    if unused:
        raise ConfigError(
            f"{_LABEL}.types {', '.join(map(repr, unused))} is used by no layer; the layers' "
            f"types: {', '.join(dict.fromkeys(names))}"
        )
    specs: dict[str, LayerSpec] = {}
    for name in dict.fromkeys(names):
        settings = _settings(types.get(name), f"{_LABEL}.types.{name}")
        for key, value in settings.items():
            if key not in TYPE_RULES:
                raise ConfigError(
                    f"{_LABEL}.types.{name} has no setting {key!r}; valid: {', '.join(TYPE_RULES)}"
                )
            check(f"{_LABEL}.types.{name}.{key}", value, TYPE_RULES[key])
        scheme = settings.get("position", position)
        own = dict(settings.get("position_kwargs") or {})
        kwargs = {**base_kwargs, **own} if scheme == position else own
        kernel = settings.get("attention", attention)
        own_kernel = dict(settings.get("attention_kwargs") or {})
        kernel_kwargs = {**base_kernel_kwargs, **own_kernel} if kernel == attention else own_kernel
        written = {*settings, *(f"position_kwargs.{k}" for k in own)}
        written |= {f"attention_kwargs.{k}" for k in own_kernel}
        specs[name] = LayerSpec(
            name,
            scheme,
            kwargs,
            settings.get("window"),
            kernel,
            kernel_kwargs,
            frozenset(written),
        )
    return [specs[name] for name in names]


def undefined_types(plan: Mapping[str, Any] | None, num_layers: int) -> str | None:
    """The ``note:`` text (without ``note:``) for the layer types of a well-formed ``plan``
    that ``types`` does not define, other than :data:`GLOBAL`: their layers are plain
    global layers of the model's scheme, as documented, so ``layers: [local, locl]`` with
    ``types: {local: {window: 8}}`` trains its second layer without a window, in a run
    named ``local8-locl``; None where every such name is defined (or there is no plan)."""
    if plan is None:
        return None
    names = list(dict.fromkeys(layer_types(plan, num_layers)))
    types = _settings(plan.get("types"), f"{_LABEL}.types")
    undefined = [name for name in names if name not in types and name != GLOBAL]
    if not undefined:
        return None
    defined = ", ".join(map(repr, types)) or "none"
    if GLOBAL not in types:
        defined += f" (and {GLOBAL!r}, which needs no definition)"
    named = ", ".join(map(repr, undefined))
    verb, them = ("is", "its") if len(undefined) == 1 else ("are", "their")
    return (
        f"{_LABEL} type {named} {verb} not defined under {_LABEL}.types (a typo?): {them} "
        f"layers are plain global layers of model.position; defined types: {defined}; "
        "define it as {} to keep it global"
    )
