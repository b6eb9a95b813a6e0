"""How an exported model's settings were written, so that its import gives back its config.

An HF config holds what a model computes, not how its settings were written: DeBERTa's
``max_relative_positions`` left null (derived from the other sizes) is a number there, and
a ModernBERT layer plan written ``pattern: [g, l, l]`` is a list of ``layer_types`` that
import reads back as ``pattern: [global, local, local]`` with each type's RoPE base. Each
spelling builds the same model, but a config is held as written (the plan's notes name its
types as written, a checkpoint's digest is of its record), so the import of an export was
another config: unequal, another hash and digest.

Export records, under :data:`SPELLING_KEY` in ``config.json``, the fields of
:data:`SPELLED_FIELDS` as the model's config holds them (:func:`spelling`). Import takes
them over the ones it reads from the HF fields only where they build the same model
(:func:`as_written`): a plan written otherwise must give every layer alike
(:func:`~roformer_lit.plan_identity.same_layers`, through
:func:`~roformer_lit.layer_plan.resolve_plan`, the one reading of a plan), and a model of
either must export the same HF config
(:func:`~roformer_lit.interop.config_keys.hf_config_kwargs`: an option derived from the
others, such as DeBERTa's, is compared as the scheme resolves it), one export would not
refuse (a block or plan the HF class cannot hold, which its config would not show). A record that does not
(an edited ``config.json``, one copied from another model), one not well formed, or none
(an HF model from elsewhere) leaves the import as the HF fields give it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import torch

from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.interop.config_keys import check_every_field_exports, hf_config_kwargs
from roformer_lit.module import MaskedLM
from roformer_lit.plan_identity import same_layers

if TYPE_CHECKING:
    from roformer_lit.interop.architectures.base import HFArchitecture

#: The ``config.json`` key export records the spelling under.
SPELLING_KEY = "roformer_lit_spelling"

#: The fields one HF config holds in more than one spelling of ours.
SPELLED_FIELDS = ("position_kwargs", "block", "layer_plan")


def spelling(config: EncoderConfig) -> dict[str, Any]:
    """The fields of :data:`SPELLED_FIELDS` as ``config`` holds them (plain data)."""
    settings = config.as_dict()
    return {field: settings.get(field) for field in SPELLED_FIELDS}


def as_written(imported: EncoderConfig, record: Any, arch: HFArchitecture) -> EncoderConfig:
    """``imported`` (read from an HF config of ``arch``) with the fields ``record`` (what
    export recorded: :func:`spelling`) spells otherwise, where that builds the same model:
    a plan giving every layer alike, and the same HF config exported from a model of each
    (built on the ``meta`` device); else ``imported`` as it is."""
    if not isinstance(record, Mapping) or set(record) - set(SPELLED_FIELDS):
        return imported
    settings = imported.as_dict()
    written = {**settings, **{field: record[field] for field in record}}
    if written == settings:
        return imported
    try:
        candidate = EncoderConfig(**written)
    except (ConfigError, TypeError, ValueError):
        return imported
    plan_differs = candidate.layer_plan != imported.layer_plan
    if plan_differs and not same_layers(candidate.as_dict(), settings):
        return imported
    try:
        same = _exported(candidate, arch) == _exported(imported, arch)
    except (ConfigError, RuntimeError, TypeError, ValueError, NotImplementedError):
        return imported  # the record's model does not build or export: not ours to say
    return candidate if same else imported


def _exported(config: EncoderConfig, arch: HFArchitecture) -> dict[str, Any]:
    """The HF config export writes for a model of ``config`` (built without weights), or
    a ConfigError where export would refuse it (a field, block or plan ``arch`` cannot
    hold: the HF config would not say so, and two such models would look the same)."""
    with torch.device("meta"):
        model = MaskedLM.from_config(config)
    check_every_field_exports(config, arch)
    arch.check_export(model)
    return hf_config_kwargs(model, arch)
