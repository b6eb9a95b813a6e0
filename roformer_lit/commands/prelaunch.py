"""The one check before a pretraining run starts, shared by ``fit`` and ``sweep``; the one
place that decides which combinations of model, data and trainer settings are valid.

:func:`check_fit_config` takes a parsed configuration (jsonargparse's namespace, nothing
instantiated) and applies every rule ``fit`` applies, without reading a corpus, training
a tokenizer or allocating a weight:

* ``seed_everything`` (:data:`~roformer_lit.validation.RUN_RULES`) and the trainer
  settings (:data:`~roformer_lit.validation.TRAINER_RULES`);
* the data settings, by the class the section builds
  (:func:`~roformer_lit.data.modules.complete_settings`, then its
  :meth:`~roformer_lit.data.datamodule.PretrainDataModule.check_settings`: the rule table,
  the settings that must agree, a position task and its lengths, the bytes the sizes
  allocate);
* the model settings (:data:`~roformer_lit.validation.MODEL_RULES` and the cross rules),
  the :class:`~roformer_lit.encoder_config.EncoderConfig` of its architecture, then the
  encoder built from it on PyTorch's ``meta`` device (shapes only, no memory): the scheme
  and kernel names, their options' types and ranges, a scheme that needs a score bias on
  a kernel that cannot take one; the bytes of the weights it would hold against this
  machine's memory; ``data.max_length`` against the scheme's position table;
* the rules that pair the sections (:data:`CROSS_SECTION_RULES`: ``data.document_mask``
  and the kernel, ``data.random_positions`` and the scheme and its table).

``fit`` (``validate``, ``test``, ``predict``) runs it before it picks a run directory;
``sweep`` and ``sweep --dry-run`` run it on every combination before anything is
launched. The first failure is one :class:`~roformer_lit.errors.ConfigError` line. The
network and the datasets keep plain assertions of the same facts, never a second copy
of a rule.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch

from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.data.modules import complete_settings
from roformer_lit.encoder_config import ENCODER_FIELDS, EncoderConfig
from roformer_lit.errors import ConfigError, one_line
from roformer_lit.model import Encoder
from roformer_lit.positions import POSITION_SCHEMES, PositionScheme
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
    section = config.get("data")
    data: dict[str, Any] = {}
    if section:
        data_class, data = complete_settings(section)
        data_class.check_settings(data)
    model = plain(config.get("model"))
    if model:
        vocab = model.get("vocab_size")
        if section:  # linked from the data module: its tokenizer's (planned) size
            vocab = data_class.planned_vocab_size(data)
        check_model(model, vocab, data.get("max_length"))
    if model and data:
        for rule in CROSS_SECTION_RULES:
            rule(model, data)


def document_mask_needs_segments(model: Mapping[str, Any], data: Mapping[str, Any]) -> None:
    """``data.document_mask`` with a kernel that cannot keep documents apart: one line
    naming the kernels that can."""
    if not data.get("document_mask"):
        return
    attention = model.get("attention")
    kernel = ATTENTION_KERNELS.get(attention)
    if kernel is not None and not kernel.supports_segments:
        valid = sorted(name for name, k in ATTENTION_KERNELS.items() if k.supports_segments)
        raise ConfigError(
            f"data.document_mask true needs an attention kernel that keeps documents apart; "
            f"model.attention={attention!r} cannot; valid: {', '.join(valid)}"
        )


def random_positions_need_a_reader(model: Mapping[str, Any], data: Mapping[str, Any]) -> None:
    """``data.random_positions`` (the range ``R`` randomized positions are drawn from) with
    a scheme that reads no positions (they would change nothing): one line naming those
    that read them."""
    span, position = data.get("random_positions"), model.get("position")
    scheme = POSITION_SCHEMES.get(position)
    if span is None or scheme is None:  # an unknown name is refused by the encoder
        return
    if not scheme.reads_positions:
        valid = sorted(name for name, cls in POSITION_SCHEMES.items() if cls.reads_positions)
        raise ConfigError(
            f"data.random_positions={span} needs a position scheme that reads positions; "
            f"model.position={position!r} reads none; valid: {', '.join(valid)}"
        )


def random_positions_fit_the_table(model: Mapping[str, Any], data: Mapping[str, Any]) -> None:
    """``data.random_positions`` past the table of a scheme bounded by one (its
    ``max_length``: ``learned``) when ``R > model.max_positions``: one line."""
    span, position = data.get("random_positions"), model.get("position")
    scheme = POSITION_SCHEMES.get(position)
    if span is None or scheme is None:
        return
    limit = model.get("max_positions")
    bounded = scheme.max_length is not PositionScheme.max_length  # overridden: a table's size
    if bounded and isinstance(limit, int) and isinstance(span, int) and span > limit:
        raise ConfigError(
            f"data.random_positions={span} exceeds model.max_positions={limit}, the size of "
            f"the {position!r} position table; lower data.random_positions or raise "
            "model.max_positions"
        )


#: The rules that pair the model's settings with the data's, each ``rule(model, data)``
#: on plain settings (the data's complete: every argument of its class), raising one
#: ConfigError line. A new rule that needs several sections at once is one function
#: here and one entry of this table. (A rule inside one section belongs to that
#: section's class: ``validation.CROSS_RULES`` for the model, a data module's
#: ``check_combinations``.)
CROSS_SECTION_RULES: tuple[Callable[[Mapping[str, Any], Mapping[str, Any]], None], ...] = (
    document_mask_needs_segments,
    random_positions_need_a_reader,
    random_positions_fit_the_table,
)


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
