"""The flat ``--model.<key>`` spelling of :class:`~roformer_lit.module.MaskedLM`'s two configs.

``MaskedLM(model: EncoderConfig, training: TrainingConfig)`` takes its architecture and its
training settings whole. YAML, the command line, sweeps and every checkpoint's
``hyper_parameters`` spell the same settings flat, one key per field
(``model.hidden_size``, ``model.learning_rate``). :data:`FLAT_KEYS` is the alias table
between the two spellings, derived from the two dataclasses' fields (written once, there):

    flat key k  ->  EncoderConfig.k   if k is a field of EncoderConfig
                    TrainingConfig.k  if k is a field of TrainingConfig

:func:`flat_signature` is the flat keyword signature jsonargparse reads (types, defaults and
help from the dataclasses), and what Lightning saves and loads as ``hyper_parameters``, so
checkpoints of every earlier version load unchanged. :func:`configs_from` turns a call in
either spelling into the two configs.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Mapping
from typing import Any

import docstring_parser

from roformer_lit.encoder_config import ENCODER_FIELDS, EncoderConfig
from roformer_lit.training_config import TRAINING_FIELDS, TrainingConfig
from roformer_lit.validation import as_data

#: The two typed sections of ``MaskedLM``: parameter name -> its config class.
SECTIONS: dict[str, type] = {"model": EncoderConfig, "training": TrainingConfig}

#: The alias table: each flat key -> the section whose field it is.
FLAT_KEYS: dict[str, str] = {
    **{name: "model" for name in ENCODER_FIELDS},
    **{name: "training" for name in TRAINING_FIELDS},
}
if len(FLAT_KEYS) != len(ENCODER_FIELDS) + len(TRAINING_FIELDS):  # pragma: no cover
    raise TypeError("EncoderConfig and TrainingConfig share a field name: a flat key is ambiguous")


def flat_parameters() -> list[inspect.Parameter]:
    """One keyword parameter per flat key, in field order (architecture first): its type
    and default are the field's."""
    parameters = []
    for config_class in SECTIONS.values():
        hints = typing.get_type_hints(config_class)
        for field in dataclasses.fields(config_class):
            parameters.append(
                inspect.Parameter(
                    field.name,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=field.default,
                    annotation=hints[field.name],
                )
            )
    return parameters


def flat_signature() -> inspect.Signature:
    """``(self, *, position=..., ..., skip_nonfinite=...)``: what jsonargparse turns into the
    ``--model.<key>`` options and what Lightning saves as ``hyper_parameters``."""
    self_parameter = inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return inspect.Signature([self_parameter, *flat_parameters()], return_annotation=None)


def flat_help() -> str:
    """A Google-style ``Args:`` section with each flat key's help, taken from the two
    dataclasses' ``Attributes:`` (an entry naming several fields is each field's)."""
    lines = ["Args:"]
    for config_class in SECTIONS.values():
        for entry in docstring_parser.parse(config_class.__doc__ or "").params:
            text = " ".join((entry.description or "").split())
            for name in (part.strip() for part in entry.arg_name.split(",")):
                lines.append(f"    {name}: {text}")
    return "\n".join(lines) + "\n"


def flat_hyperparameters(model: EncoderConfig, training: TrainingConfig) -> dict[str, Any]:
    """What a checkpoint stores: every flat key with its value as plain data, the
    spelling every version saved (so every checkpoint loads through the flat signature)."""
    return {key: as_data(value) for key, value in {**model.as_dict(), **training.as_dict()}.items()}


def configs_from(
    model: EncoderConfig | Mapping[str, Any] | None,
    training: TrainingConfig | Mapping[str, Any] | None,
    flat: Mapping[str, Any],
) -> tuple[EncoderConfig, TrainingConfig]:
    """The architecture and the training settings of a ``MaskedLM(...)`` call: each section
    given whole (a config or a mapping of its fields) or by its flat keys, never both; a
    section given neither way takes its defaults. Unknown keys are a TypeError naming the
    valid ones, as for any Python call."""
    unknown = sorted(set(flat) - set(FLAT_KEYS))
    if unknown:
        raise TypeError(
            f"MaskedLM got unexpected argument(s) {', '.join(unknown)}; it takes model= (an "
            f"EncoderConfig), training= (a TrainingConfig) or their fields: "
            f"{', '.join(FLAT_KEYS)}"
        )
    given = {"model": model, "training": training}
    built: dict[str, Any] = {}
    for section, config_class in SECTIONS.items():
        keys = {k: v for k, v in flat.items() if FLAT_KEYS[k] == section}
        whole = given[section]
        if whole is not None and keys:
            raise TypeError(
                f"MaskedLM got {section}= and its fields {', '.join(keys)}: give the "
                f"{section} section once, whole or field by field"
            )
        if whole is None:
            built[section] = config_class(**keys)
        elif isinstance(whole, config_class):
            built[section] = whole
        elif isinstance(whole, Mapping):
            built[section] = config_class(**whole)
        else:
            raise TypeError(
                f"MaskedLM's {section}= must be a {config_class.__name__} or a mapping of its "
                f"fields, got {type(whole).__name__}"
            )
    return built["model"], built["training"]
