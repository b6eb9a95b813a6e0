"""A fine-tuned checkpoint's record of the pretrained weights it started from.

The encoder record (:mod:`roformer_lit.finetune.encoder_record`) seals the pretrained
encoder's architecture, not its weights: a pretraining run retrained at the same path (same
settings, another seed or more steps) has the same record. A ``command: finetune`` sweep
skipped the fine-tune of the old checkpoint as the fine-tune of the new one, exit 0. So a
fine-tuned checkpoint also records :func:`weights_digest` of the encoder weights it was
fine-tuned from (:data:`PRETRAINED_WEIGHTS_KEY`), which the sweep compares with the file now
at ``model.pretrained`` before it skips or resumes the run
(:mod:`roformer_lit.sweep.pretrained_changed`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import torch

from roformer_lit.training.architecture_digest import PRETRAINED_WEIGHTS_KEY

__all__ = ["PRETRAINED_WEIGHTS_KEY", "checkpoint_weights_digest", "weights_digest"]
#: The prefix of the encoder's weights in a pretraining checkpoint's ``state_dict``.
ENCODER_PREFIX = "encoder."


def weights_digest(weights: Mapping[str, Any]) -> str:
    """``sha256:<hex>`` of an encoder's weights (name -> tensor, names without
    :data:`ENCODER_PREFIX`): each name, shape and value as float32 (what the fine-tune's
    encoder holds after loading them), in name order."""
    digest = hashlib.sha256()
    for name in sorted(weights):
        tensor = weights[name]
        if not isinstance(tensor, torch.Tensor):
            continue
        values = tensor.detach().to("cpu", torch.float32).contiguous()
        digest.update(f"{name}:{tuple(values.shape)}\n".encode())
        digest.update(values.numpy().tobytes())
    return f"sha256:{digest.hexdigest()}"


def checkpoint_weights_digest(checkpoint: Mapping[str, Any]) -> str:
    """:func:`weights_digest` of a pretraining checkpoint's encoder (its ``encoder.*``)."""
    state = checkpoint.get("state_dict") or {}
    return weights_digest(
        {k[len(ENCODER_PREFIX) :]: v for k, v in state.items() if k.startswith(ENCODER_PREFIX)}
    )
