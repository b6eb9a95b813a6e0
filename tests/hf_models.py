"""One small model of ours per Hugging Face architecture of ``interop.ARCHITECTURES``
(keyed by HF ``model_type``), for the tests of export and import."""

from __future__ import annotations

from typing import Any

import torch

from roformer_lit.module import MaskedLM

SIZES: dict[str, Any] = {
    "vocab_size": 61,
    "hidden_size": 24,
    "num_layers": 3,
    "num_heads": 2,
    "intermediate_size": 40,
    "max_positions": 48,
    "layer_norm_eps": 1e-6,
}
#: model_type -> the settings of a model that exports as it
MODELS: dict[str, dict[str, Any]] = {
    "roformer": {"position": "rope"},
    "deberta-v2": {"position": "deberta"},
    "bert": {"position": "learned", "position_kwargs": {}},
    "modernbert": {
        "position": "rope",
        "pre_norm": True,
        "block": {"mlp": "geglu", "first_norm": False, "linear_bias": False},
        "layer_plan": {
            "pattern": ["local", "global", "global"],
            "types": {"local": {"window": 8}},
        },
    },
}


def small_model(model_type: str, seed: int = 0, **changes: Any) -> MaskedLM:
    """The model of ``model_type`` (eval mode), every weight pushed off its initialisation
    so that no zero bias or unit norm can hide a mapping error."""
    torch.manual_seed(seed)
    model = MaskedLM(**{**MODELS[model_type], **SIZES, **changes})
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.05 * torch.randn_like(param))
    return model.eval()
