"""The block's building options (``model.block``): MLP, norm, biases, ModernBERT's conventions.

    mlp gelu (BERT):   FFN(x) = W_2 gelu(W_1 x + b_1) + b_2,            W_1 [I, H]
    mlp geglu:         FFN(x) = W_2 (gelu(a) * g) + b_2,  [a, g] = W_1 x + b_1,  W_1 [2I, H]
    mlp swiglu:        FFN(x) = W_2 (silu(a) * g) + b_2,  [a, g] = W_1 x + b_1,  W_1 [2I, H]
    norm layernorm:    LN(x) = (x - mean) / sqrt(var + eps) * w (+ b with norm_bias)
    norm rmsnorm:      RMS(x) = x / sqrt(mean(x^2) + eps) * w             (no bias)

``a`` is the first half of ``W_1 x`` and ``g`` the second (ModernBERT's
``input, gate = Wi(x).chunk(2)``). ``linear_bias false`` drops the bias of every linear
layer of the blocks (fused QKV, attention output, both MLP layers) and of the MLM head's
dense layer (ModernBERT's ``attention_bias``, ``mlp_bias``, ``classifier_bias``); the
head's output bias stays. ``first_norm false`` (pre-norm only) replaces layer 0's
attention norm by the identity, as ModernBERT does (the embeddings are already
normalised). Every norm of the model (embeddings, blocks, final, head) is built by
:meth:`BlockOptions.norm`.

The defaults are BERT's block, bit for bit: the same modules, parameter names and
initialisation order as a model built without ``model.block``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from torch import Tensor, nn

from roformer_lit.errors import ConfigError
from roformer_lit.validation import Rule, boolean, check, one_of, optional

MLPS = ("gelu", "geglu", "swiglu")
NORMS = ("layernorm", "rmsnorm")
_GLU_ACTIVATION = {"geglu": nn.functional.gelu, "swiglu": nn.functional.silu}

#: ``model.block`` key -> what it accepts.
BLOCK_RULES: dict[str, Rule] = {
    "mlp": one_of(*MLPS),
    "norm": one_of(*NORMS),
    "norm_bias": optional(boolean),
    "linear_bias": boolean,
    "first_norm": boolean,
}


@dataclass(frozen=True)
class BlockOptions:
    """``model.block``, checked: see the module docstring. ``norm_bias`` None is the
    norm's own (LayerNorm with a bias, RMSNorm without)."""

    mlp: str = "gelu"
    norm: str = "layernorm"
    norm_bias: bool | None = None
    linear_bias: bool = True
    first_norm: bool = True

    @classmethod
    def from_config(cls, block: Mapping[str, Any] | None, pre_norm: bool) -> BlockOptions:
        """The checked options of ``model.block`` (None: BERT's block); a wrong key or
        value is one ConfigError line naming it and the valid ones."""
        block = dict(block or {})
        for key, value in block.items():
            if key not in BLOCK_RULES:
                raise ConfigError(
                    f"model.block has no option {key!r}; valid: {', '.join(BLOCK_RULES)}"
                )
            check(f"model.block.{key}", value, BLOCK_RULES[key])
        options = cls(**block)
        if options.norm == "rmsnorm" and options.norm_bias:
            raise ConfigError(
                "model.block.norm_bias true needs norm layernorm; rmsnorm has no bias "
                "(valid norm_bias with rmsnorm: null, false)"
            )
        if not options.first_norm and not pre_norm:
            raise ConfigError(
                "model.block.first_norm false needs model.pre_norm true (post-norm blocks "
                "normalise after the attention); valid first_norm with pre_norm false: true"
            )
        return options

    @property
    def is_default(self) -> bool:
        return self == BlockOptions()

    def canonical(self) -> BlockOptions:
        """These options in the one spelling of the block they build: ``norm_bias`` written
        at the norm's own (``true`` with layernorm, ``false`` with rmsnorm) is None, as a
        block without it builds the same norms, bit for bit."""
        own = self.norm == "layernorm"
        if self.norm_bias is not None and self.norm_bias == own:
            return replace(self, norm_bias=None)
        return self

    def as_setting(self) -> dict[str, Any] | None:
        """The ``model.block`` mapping of these options: those that differ from BERT's
        block (:meth:`changed`), None for BERT's own (what a config without
        ``model.block`` holds), in the spelling of :meth:`canonical`.
        ``EncoderConfig(block=options)`` reads it so."""
        return self.canonical().changed() or None

    def changed(self) -> dict[str, Any]:
        """The options that differ from BERT's block, in declaration order."""
        default = BlockOptions()
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if getattr(self, f.name) != getattr(default, f.name)
        }

    def norm_layer(self, hidden_size: int, eps: float) -> nn.Module:
        """A norm over the last ``hidden_size`` features."""
        if self.norm == "rmsnorm":
            return nn.RMSNorm(hidden_size, eps=eps)
        bias = True if self.norm_bias is None else self.norm_bias
        return nn.LayerNorm(hidden_size, eps=eps, bias=bias)

    def ffn_widths(self, intermediate_size: int) -> int:
        """The output width of the MLP's first layer (twice ``I`` for a GLU)."""
        return intermediate_size if self.mlp == "gelu" else 2 * intermediate_size

    def ffn_activation(self, hidden: Tensor) -> Tensor:
        """The MLP's nonlinearity on ``W_1 x``: ``gelu`` or ``act(a) * g``."""
        if self.mlp == "gelu":
            return nn.functional.gelu(hidden)
        a, g = hidden.chunk(2, dim=-1)
        return _GLU_ACTIVATION[self.mlp](a) * g
