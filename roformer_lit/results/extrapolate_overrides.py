"""Where ``extrapolate --position_kwargs`` acts in a model with a layer plan.

A layer's scheme options are the model's ``position_kwargs`` with its type's own laid over
them (a type of another scheme has its own alone: :mod:`roformer_lit.layer_plan`). So an
override of the model's options reaches a layer only where the layer uses the model's
scheme and its type does not set that option itself: ``{base: 500}`` on the ModernBERT
recipe, whose every type sets its own ``base``, reaches no layer.

* An option that reaches no layer is refused in one line naming the types that keep their
  own and how to name them: an evaluation labelled with an override that did nothing would
  be a wrong answer.
* An option that reaches some layers acts on those; one ``note:`` line names the types it
  reaches and those it does not.
* A key that is neither an option of the model's scheme nor a type of the plan is refused
  in one line naming both kinds of valid keys.
* A key naming a type of the plan, with a mapping (``{global: {base: 500}}``), overrides
  that type's own options: laid over them, whatever its scheme (the rebuilt model checks
  them against it).
* An override of nothing (``{}``, or a type given ``{}``) is refused in one line: the
  row would be labelled with it and evaluate the run unchanged.

Without a plan every layer is the model's: every option reaches every layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from roformer_lit.errors import ConfigError
from roformer_lit.layer_plan import layer_types
from roformer_lit.plan_identity import plain
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.registry import option_names


def _types(hparams: Mapping[str, Any]) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """(the plan's type names in layer order, once each; each type's settings); none
    without a plan."""
    plan = plain(hparams.get("layer_plan"))
    if not isinstance(plan, Mapping):
        return [], {}
    names = list(dict.fromkeys(layer_types(plan, int(hparams.get("num_layers") or 0))))
    types = plan.get("types") or {}
    return names, {name: dict(types.get(name) or {}) for name in names}


def _reached(key: str, settings: Mapping[str, Any], position: Any) -> bool:
    scheme = settings.get("position", position)
    return scheme == position and key not in (settings.get("position_kwargs") or {})


def apply_overrides(
    hparams: Mapping[str, Any], overrides: Mapping[str, Any], label: str
) -> tuple[dict[str, Any], list[str]]:
    """(``hparams`` with ``overrides`` applied as the module says, the ``note:`` lines); a
    ConfigError line for an option that reaches no layer."""
    out = dict(hparams)
    names, types = _types(hparams)
    position = hparams.get("position")
    if not overrides:
        raise ConfigError(
            f"{label}: --position_kwargs {{}} overrides nothing (the row would be labelled "
            "with it); give the options to change, or leave --position_kwargs out"
        )
    model_level = {
        k: v for k, v in overrides.items() if k not in types or not isinstance(v, Mapping)
    }
    per_type = {k: dict(v) for k, v in overrides.items() if k not in model_level}
    empty = [name for name, options in per_type.items() if not options]
    if empty:
        raise ConfigError(
            f"{label}: --position_kwargs {empty[0]}={{}} overrides nothing of layer type "
            f"{empty[0]!r} (the row would be labelled with it); give the options to change, "
            "or leave the type out"
        )
    if names and position in POSITION_SCHEMES:  # a key neither an option nor a type
        valid = option_names(POSITION_SCHEMES[position])
        unknown = [key for key in model_level if key not in valid]
        if unknown:
            raise ConfigError(
                f"{label}: --position_kwargs key {unknown[0]!r} is neither an option of "
                f"position {position!r} ({', '.join(valid) or 'none'}) nor a layer type of "
                f"its plan ({', '.join(names)}, each taking a mapping of its own options)"
            )
    notes: list[str] = []
    for key, value in model_level.items():
        if not names:
            continue
        reached = [name for name in names if _reached(key, types[name], position)]
        kept = [name for name in names if name not in reached]
        if not reached:
            example = "{" + f"{kept[0]}: {{{key}: {value}}}" + "}"
            raise ConfigError(
                f"{label}: --position_kwargs {key}={value!r} reaches no layer: every layer type "
                f"sets its own {key} or uses another scheme ({', '.join(kept)}); override a "
                f"type's own options by naming it, e.g. --position_kwargs '{example}'"
            )
        if kept:
            notes.append(
                f"note: {label}: --position_kwargs {key}={value!r} acts on the layers of type "
                f"{', '.join(reached)}; {', '.join(kept)} keep their own {key} or scheme"
            )
    out["position_kwargs"] = {**(plain(hparams.get("position_kwargs")) or {}), **model_level}
    if per_type:
        plan = dict(plain(hparams.get("layer_plan")))
        plan["types"] = {**(plan.get("types") or {})}
        for name, options in per_type.items():
            settings = dict(plan["types"].get(name) or {})
            settings["position_kwargs"] = {**(settings.get("position_kwargs") or {}), **options}
            plan["types"][name] = settings
        out["layer_plan"] = plan
    return out, notes


__all__ = ["apply_overrides"]
