"""The one check before a pretraining run starts, shared by ``fit`` and ``sweep``.

:func:`check_fit_config` takes a parsed configuration (jsonargparse's namespace, nothing
instantiated) and applies every rule ``fit`` applies, without reading a corpus, training
a tokenizer or allocating a weight:

* ``seed_everything`` (:data:`~roformer_lit.validation.RUN_RULES`) and the trainer
  settings (:data:`~roformer_lit.validation.TRAINER_RULES`);
* the data settings (:func:`~roformer_lit.data.datamodule.check_data_arguments`: the
  rule table, the settings that must agree, the probe task and its lengths, the bytes the
  sizes allocate);
* the model settings (:data:`~roformer_lit.validation.MODEL_RULES` and the cross rules),
  the :class:`~roformer_lit.encoder_config.EncoderConfig` of its architecture, then the
  encoder built from it on PyTorch's ``meta`` device (shapes only, no memory): the scheme
  and kernel names, their options' types and ranges, a scheme that needs a score bias on
  a kernel that cannot take one; the bytes of the weights it would hold against this
  machine's memory; ``data.max_length`` against the scheme's position table;
* the pairings of data and model (``data.document_mask`` and the kernel,
  ``data.random_positions`` and the scheme).

``fit`` (``validate``, ``test``, ``predict``) runs it before it picks a run directory;
``sweep`` and ``sweep --dry-run`` run it on every combination before anything is
launched. The first failure is one :class:`~roformer_lit.errors.ConfigError` line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from roformer_lit.data.datamodule import check_data_arguments
from roformer_lit.data.probes.tasks import FIRST_SYMBOL
from roformer_lit.encoder_config import ENCODER_FIELDS, EncoderConfig
from roformer_lit.errors import ConfigError, one_line
from roformer_lit.model import Encoder, check_document_mask, check_random_positions
from roformer_lit.validation import (
    check_fits_in_memory,
    check_model_arguments,
    check_run_arguments,
    check_trainer_arguments,
)


def plain(section: Any) -> dict[str, Any]:
    """A config section (a jsonargparse Namespace or a mapping) as a plain dict."""
    if section is None:
        return {}
    as_dict = getattr(section, "as_dict", None)
    return dict(as_dict() if callable(as_dict) else section)


def check_fit_config(config: Any) -> None:
    """Every rule of a pretraining run, on the parsed ``config`` (see the module)."""
    check_run_arguments(config)
    trainer = config.get("trainer")
    if trainer is not None:
        check_trainer_arguments(trainer)
    data, model = plain(config.get("data")), plain(config.get("model"))
    task = check_data_arguments(data) if data else None
    if model:
        vocab = model.get("vocab_size")
        if data:  # linked from the data module: the probe's vocabulary, or the requested size
            vocab = FIRST_SYMBOL + data["probe_symbols"] if task is not None else data["vocab_size"]
        check_model(model, vocab, data.get("max_length"))
    check_document_mask(config)
    check_random_positions(config)


def check_model(model: Mapping[str, Any], vocab_size: Any, max_length: Any) -> None:
    """The model settings' rules, then the encoder on the ``meta`` device (nothing
    allocated): every scheme and kernel check runs, the bytes of its weights are compared
    with this machine's memory, and ``max_length`` with the scheme's position table."""
    training = {k: v for k, v in model.items() if k not in ENCODER_FIELDS}
    check_model_arguments(training)  # the architecture's when its config is made
    config = EncoderConfig.from_settings({**model, "vocab_size": vocab_size})
    try:
        with torch.device("meta"):
            encoder = Encoder(config)
    except (RuntimeError, OverflowError, ValueError, TypeError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"cannot build the model with these settings: {one_line(exc)}") from None
    tensors = [*encoder.parameters(), *encoder.buffers()]
    need = sum(t.numel() * t.element_size() for t in tensors)
    check_fits_in_memory(need, f"the model's weights ({sum(t.numel() for t in tensors):,} values)")
    limit = encoder.position.max_length
    if limit is not None and isinstance(max_length, int) and max_length > limit:
        raise ConfigError(
            f"data.max_length={max_length} exceeds the {config.position!r} position "
            f"table (model.max_positions={limit}); raise model.max_positions or use a "
            "scheme that extends"
        )
