"""``import_hf``: build a ``MaskedLM`` from a Hugging Face ``*ForMaskedLM`` directory or model.

One loader for every architecture: the HF config (``config.json`` read as plain data and
built by the architecture's config class), the version floor it records, the state dict
(read from the weight files, :mod:`roformer_lit.interop.weights`, or the model's own),
its tensors' names and shapes checked against the model the config describes, then the
architecture's checks and its name mapping onto a ``MaskedLM`` built from the same
config. Only configurations our encoder computes exactly are accepted; anything else is
one ConfigError line naming the setting or tensor. What is particular to one architecture
is its hooks in :mod:`roformer_lit.interop.architectures`.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch

from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.interop._hf import require_transformers
from roformer_lit.interop.architectures.base import HFArchitecture
from roformer_lit.interop.config_keys import hf_keys
from roformer_lit.interop.mapping import ARCHITECTURES, supported
from roformer_lit.interop.spelling import SPELLING_KEY, as_written
from roformer_lit.interop.versions import FLOOR_KEY, check_floor
from roformer_lit.interop.weights import build_config, check_state, read_config, read_weights
from roformer_lit.module import MaskedLM


def _from_directory(path: Path, transformers: Any) -> tuple[Any, dict[str, torch.Tensor], Any]:
    """(architecture, state dict, HF config) of an HF model directory."""
    if not path.is_dir():
        raise ConfigError(
            f"import_hf needs a local Hugging Face model directory, got {str(path)!r}"
        )
    settings = read_config(path)
    arch = ARCHITECTURES.get(settings["model_type"])
    if arch is None:
        raise ConfigError(
            f"cannot import model_type {settings['model_type']!r} from {str(path)!r}; "
            f"supported: {supported()}"
        )
    if FLOOR_KEY in settings:
        check_floor(settings[FLOOR_KEY], transformers, f"{str(path)!r}")
    check_floor(arch.transformers_floor, transformers, f"importing {arch.model_class}")
    config = build_config(arch, settings, transformers)
    return arch, read_weights(path), config


def _from_model(hf: Any, transformers: Any) -> tuple[Any, dict[str, torch.Tensor], Any]:
    """(architecture, state dict, HF config) of an HF model instance."""
    for arch in ARCHITECTURES.values():
        model_class = getattr(transformers, arch.model_class, None)
        if model_class is not None and isinstance(hf, model_class):
            check_floor(arch.transformers_floor, transformers, f"importing {arch.model_class}")
            arch.check_import_settings(hf.config.to_dict())  # as a directory's config.json
            return arch, dict(hf.state_dict()), hf.config
    raise ConfigError(f"cannot import a {type(hf).__name__}; supported: {supported()}")


def encoder_config(config: Any, arch: HFArchitecture) -> EncoderConfig:
    """Our architecture of the HF ``config``: the mapped fields read back
    (:func:`~roformer_lit.interop.config_keys.hf_keys`), softmax attention, the
    architecture's scheme and layout, and the fields its hooks give; for an export of ours,
    the fields as its model's config wrote them where they build the same model
    (:func:`~roformer_lit.interop.spelling.as_written`)."""
    settings = {name: getattr(config, key) for name, key in hf_keys(arch).items()}
    settings["dropout"] = float(settings["dropout"])
    attention_dropout = float(settings["attention_dropout"])
    settings["attention_dropout"] = (
        None if attention_dropout == settings["dropout"] else attention_dropout
    )
    try:
        imported = EncoderConfig.from_settings(
            settings,
            position=arch.position,
            pre_norm=arch.pre_norm,
            attention="softmax",
            **arch.import_settings(config),
        )
    except ConfigError as exc:  # our rules refused a value: name it as the HF config has it
        raise ConfigError(import_refusal(str(exc), config, arch)) from None
    # an export of ours: its settings as they were written, where they build this model
    return as_written(imported, getattr(config, SPELLING_KEY, None), arch)


_OUR_SETTING = re.compile(r"model\.([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)")


def _hf_value(config: Any, key: str) -> Any:
    value = config
    for part in key.split("."):
        value = value.get(part) if isinstance(value, Mapping) else getattr(value, part, None)
    return value


def import_refusal(message: str, config: Any, arch: HFArchitecture) -> str:
    """The line of an import our config rules refused (``message``, which names our
    settings, ``model.position_kwargs.max_relative_positions: ...``): each of our settings
    it names that comes from an HF config field (:func:`hf_keys` and the architecture's
    :meth:`~roformer_lit.interop.architectures.base.HFArchitecture.import_sources`) named
    by that field, and the first one's value in the HF config given."""
    sources = {**hf_keys(arch), **arch.import_sources()}

    def source(path: str) -> str | None:
        for ours in sorted(sources, key=len, reverse=True):
            if path == ours or path.startswith(f"{ours}."):
                return sources[ours]
        return None

    named = [(m, source(m.group(1))) for m in _OUR_SETTING.finditer(message)]
    named = [(m, key) for m, key in named if key is not None]
    head = f"cannot import this {arch.model_class}"
    if not named:
        return f"{head}: {message}"
    first, key = named[0]
    if first.start() == 0 and message[first.end() :].startswith(": "):
        message = message[first.end() + 2 :]  # the lead says where, as the HF field
    text = _OUR_SETTING.sub(lambda m: source(m.group(1)) or m.group(0), message)
    return f"{head}: its config's {key}={_hf_value(config, key)!r} is refused: {text}"


def common_dtype(tensors: Iterable[torch.Tensor]) -> torch.dtype:
    """The dtype every one of ``tensors`` converts to without changing a value: their
    promotion (float16 and float32: float32; float16 and bfloat16: float32)."""
    return functools.reduce(torch.promote_types, {tensor.dtype for tensor in tensors})


def import_hf(path_or_model: Any) -> MaskedLM:
    """A ``MaskedLM`` (eval mode) equal to an HF MLM given as a directory or a model instance.

    The architecture is the one whose ``ARCHITECTURES`` entry names the HF ``model_type``
    (:mod:`roformer_lit.interop`). A directory is read by this package (never downloads,
    never fills a missing tensor): its tensors must be exactly those its config describes.
    The model takes the widest dtype among the weights (:func:`common_dtype`), to which every
    weight is cast exactly: a float16 or bfloat16 tensor beside float32 ones keeps its value.

    Raises:
        ConfigError: a missing or unreadable ``config.json`` or weight file; an unsupported
            ``model_type``; a ``transformers`` older than the architecture's or the
            directory's floor; a missing, unexpected, wrong-shaped or untied tensor; a
            config or weights our encoder cannot represent exactly; a weight that is not
            floating-point or holds a NaN or inf. One line each.
    """
    transformers = require_transformers()
    if isinstance(path_or_model, (str, os.PathLike)):
        arch, state, config = _from_directory(Path(path_or_model), transformers)
    else:
        arch, state, config = _from_model(path_or_model, transformers)
    arch.check_import_config(config)
    check_state(state, arch, config, transformers)
    links = arch.links(config)
    dtype = common_dtype(state.values())
    state = {name: tensor.detach().to(device="cpu", dtype=dtype) for name, tensor in state.items()}
    arch.check_import_weights(state)
    model = MaskedLM.from_config(encoder_config(config, arch), init_std=config.initializer_range)
    model = model.to(dtype)
    heads = config.num_attention_heads
    fused: dict[str, list[torch.Tensor | None]] = {}
    values: dict[str, torch.Tensor] = {}
    for link in links:
        tensor = arch.to_ours(link, state[link.theirs], heads)
        if link.slot is None:
            values[link.ours] = tensor
        else:
            fused.setdefault(link.ours, [None, None, None])[link.slot] = tensor
    values.update({name: torch.cat(parts) for name, parts in fused.items()})
    arch.fold_import_weights(values, state)
    ours = dict(model.named_parameters())
    if set(values) != set(ours):
        raise RuntimeError(
            f"interop mapping error: unmatched parameters {sorted(set(values) ^ set(ours))}"
        )
    with torch.no_grad():
        for name, param in ours.items():
            param.copy_(values[name])
    return model.eval()
