"""Read an HF model directory ourselves and verify its tensors against its config.

``import_hf`` never lets ``from_pretrained`` fill gaps: it reads ``config.json`` and the
weights (``model.safetensors``, ``pytorch_model.bin`` or their sharded ``*.index.json``)
itself, then compares the tensors' names and shapes with those of the HF model the config
describes (built on the meta device, so nothing is allocated). Every missing, unexpected
or wrong-shaped tensor is refused in one line naming it; a tied tensor a file omits (the
MLM decoder, where the config ties it: ``tie_word_embeddings``) is not missing, and what transformers itself never reads is not unexpected
(non-persistent buffers such as BERT's ``position_ids``, the class's ignore patterns, the
heads an MLM has not: BERT's pooler and next-sentence head). Every parameter of that model
must be read by import, through a link of the architecture or as a tied copy or a checked
tensor: one it would not read (a parameter a newer transformers added) is refused too.
Every failure to read is one line too.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import torch

from roformer_lit.errors import ConfigError, one_line
from roformer_lit.interop.architectures.base import HFArchitecture
from roformer_lit.training.checkpoint_io import first_nonfinite

SAFETENSORS = "model.safetensors"
PICKLE = "pytorch_model.bin"
#: the weight files, in the order they are looked for (a shard index lists the others)
WEIGHT_FILES = (SAFETENSORS, f"{SAFETENSORS}.index.json", PICKLE, f"{PICKLE}.index.json")
_NAMED = 6  # names listed per kind of mismatch in one message


def read_config(directory: Path) -> dict[str, Any]:
    """``config.json`` of ``directory`` as plain data, with a ``model_type``."""
    path = directory / "config.json"
    if not path.is_file():
        raise ConfigError(f"cannot import {str(directory)!r}: it has no config.json")
    data = _read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("model_type"), str):
        raise ConfigError(f"cannot import {str(directory)!r}: config.json names no model_type")
    return data


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ConfigError(f"cannot read {str(path)!r}: {short_message(err)}") from err


def read_weights(directory: Path) -> dict[str, torch.Tensor]:
    """Every tensor of ``directory``'s weight files (:data:`WEIGHT_FILES`), on the CPU."""
    for name in WEIGHT_FILES:
        path = directory / name
        if path.is_file():
            break
    else:
        raise ConfigError(
            f"cannot import {str(directory)!r}: it has no weights (looked for "
            f"{', '.join(WEIGHT_FILES)})"
        )
    if not name.endswith(".index.json"):
        return _read_file(path)
    index = _read_json(path)
    shards = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(shards, dict) or not all(isinstance(f, str) for f in shards.values()):
        raise ConfigError(f"cannot read {str(path)!r}: it has no weight_map of tensor -> file")
    state: dict[str, torch.Tensor] = {}
    for shard in sorted(set(shards.values())):
        shard_path = directory / shard
        if shard_path.parent != directory or not shard_path.is_file():
            raise ConfigError(f"cannot import {str(directory)!r}: shard {shard!r} is missing")
        state.update(_read_file(shard_path))
    return state


def _read_file(path: Path) -> dict[str, torch.Tensor]:
    try:
        if path.name.endswith(".safetensors"):
            from safetensors.torch import load_file

            return load_file(str(path), device="cpu")
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # safetensors and pickle raise many kinds on a damaged file
        raise ConfigError(f"cannot read the weights {str(path)!r}: {short_message(err)}") from err
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ConfigError(f"cannot read the weights {str(path)!r}: not a dict of tensors")
    return state


def short_message(err: BaseException, limit: int = 240) -> str:
    """``err``'s message on one line, cut at ``limit`` characters (torch and transformers
    explain at length)."""
    text = one_line(err) or type(err).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


def build_config(arch: HFArchitecture, settings: Mapping[str, Any], transformers: Any) -> Any:
    """``arch``'s HF config of ``settings``; what its class rejects is one ConfigError."""
    arch.check_import_settings(settings)
    config_class = getattr(transformers, arch.config_class)
    try:
        return config_class.from_dict(dict(settings))
    except Exception as err:  # transformers validates fields with exceptions of its own
        raise ConfigError(
            f"cannot import this {arch.model_class}: its config.json is not a valid "
            f"{arch.config_class}: {short_message(err)}"
        ) from err


def check_state(
    state: Mapping[str, torch.Tensor], arch: HFArchitecture, config: Any, transformers: Any
) -> None:
    """Refuse (one ConfigError line) tensors of ``state`` that the HF model of ``config``
    lacks or holds in another shape, tensors it needs that ``state`` lacks, and parameters
    of that model that import would not read (:func:`check_every_parameter_read`)."""
    model_class = getattr(transformers, arch.model_class)
    try:
        with torch.device("meta"):
            expected_model = model_class(config)
    except Exception as err:
        raise ConfigError(
            f"cannot import this {arch.model_class}: transformers cannot build it from its "
            f"config: {short_message(err)}"
        ) from err
    expected = {name: tuple(t.shape) for name, t in expected_model.state_dict().items()}
    ignored = {name for name, _ in expected_model.named_buffers()} - set(expected)
    patterns = getattr(model_class, "_keys_to_ignore_on_load_unexpected", None) or []
    tied = arch.tied(config)
    # a file may omit a tied tensor only where transformers ties it in the model it builds
    # (``tie_word_embeddings``): an untied decoder the file lacks is missing, which
    # from_pretrained would fill with fresh initialisation
    parameters = dict(expected_model.named_parameters(remove_duplicate=False))
    omittable = {
        name
        for name, twin in tied.items()
        if name in parameters and parameters[name] is parameters.get(twin)
    }
    missing = [name for name in expected if name not in state and name not in omittable]
    unexpected = [
        name
        for name in state
        if name not in expected
        and name not in ignored
        and not any(re.search(pattern, name) for pattern in patterns)
        and not name.startswith(arch.unused())
    ]
    wrong = [
        f"{name} {list(state[name].shape)} (config: {list(shape)})"
        for name, shape in expected.items()
        if name in state and tuple(state[name].shape) != shape
    ]
    problems = [
        f"{kind} {_listed(names)}"
        for kind, names in (
            ("missing", missing),
            ("unexpected", unexpected),
            ("wrong shape", wrong),
        )
        if names
    ]
    if problems:
        raise ConfigError(
            f"cannot import this {arch.model_class}: its weights do not match its config: "
            + "; ".join(problems)
        )
    check_every_parameter_read(parameters, arch, config, transformers)
    for name, twin in tied.items():
        if name in state and not torch.equal(state[name], state[twin]):
            arch.refuse(f"{name} is not tied to {twin}")
    _refuse_unusable_values({name: state[name] for name in parameters if name in state}, arch)


def check_every_parameter_read(
    parameters: Iterable[str], arch: HFArchitecture, config: Any, transformers: Any
) -> None:
    """Refuse (one line) a parameter of the HF model of ``config`` that no link of ``arch``
    reads and that it does not read otherwise (:meth:`HFArchitecture.read_without_link`):
    its value would be dropped, and the imported model would compute something else."""
    read = {link.theirs for link in arch.links(config)} | arch.read_without_link(config)
    unread = [name for name in parameters if name not in read]
    if unread:
        arch.refuse(
            f"transformers' model has weights this import does not read: {_listed(unread)} "
            f"(a parameter of transformers {transformers.__version__} that roformer-lit "
            "does not map)"
        )


def _refuse_unusable_values(weights: Mapping[str, torch.Tensor], arch: HFArchitecture) -> None:
    """Refuse (one line) a weight that is not floating-point (an integer tensor would be cast
    silently) or holds a NaN or inf (what our own checkpoints are refused for:
    :func:`~roformer_lit.training.checkpoint_io.first_nonfinite`)."""
    integral = [
        f"{name} ({weights[name].dtype})"
        for name in weights
        if not weights[name].is_floating_point()
    ]
    if integral:
        raise ConfigError(
            f"cannot import this {arch.model_class}: weights that are not floating-point: "
            f"{_listed(integral)}"
        )
    nonfinite = first_nonfinite(weights)
    if nonfinite is not None:
        raise ConfigError(
            f"cannot import this {arch.model_class}: its weights hold NaN or inf (first: "
            f"{nonfinite})"
        )


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:_NAMED])
    return shown if len(names) <= _NAMED else f"{shown} (and {len(names) - _NAMED} more)"
