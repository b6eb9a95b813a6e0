"""Small models over every registered scheme x kernel pair, for the tests."""

from __future__ import annotations

import torch

from roformer_lit import ATTENTION_KERNELS, POSITION_SCHEMES, MaskedLM

VOCAB = 97
PAD = 0

#: (hidden_size, num_heads): odd head counts, head sizes 16, 8 and 6.
SHAPES = [(48, 3), (40, 5), (36, 6)]


def compatible(position: str, attention: str) -> bool:
    return not (
        POSITION_SCHEMES[position].needs_score_bias
        and not ATTENTION_KERNELS[attention].supports_score_bias
    )


VALID_PAIRS = [(p, a) for p in POSITION_SCHEMES for a in ATTENTION_KERNELS if compatible(p, a)]
INVALID_PAIRS = [
    (p, a) for p in POSITION_SCHEMES for a in ATTENTION_KERNELS if not compatible(p, a)
]


def small_model(
    position: str,
    attention: str = "softmax",
    hidden_size: int = 48,
    num_heads: int = 3,
    num_layers: int = 2,
    seed: int = 0,
    **kwargs,
) -> MaskedLM:
    """A randomly initialised small model in eval mode, with non-trivial biases and norms."""
    torch.manual_seed(seed)
    model = MaskedLM(
        position=position,
        attention=attention,
        vocab_size=VOCAB,
        hidden_size=hidden_size,
        num_layers=num_layers,
        num_heads=num_heads,
        intermediate_size=2 * hidden_size,
        max_positions=kwargs.pop("max_positions", 64),
        **kwargs,
    )
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.05 * torch.randn_like(param))
    return model.eval()


def visible_model(position: str, attention: str = "softmax", *args, **kwargs) -> MaskedLM:
    """:func:`small_model` with the scheme's ``test_kwargs`` (options under which its
    position dependence shows on short rows), its parameters amplified where their effect
    would be too small to see (``amplify_for_tests``): no test names a scheme."""
    options = dict(POSITION_SCHEMES[position].test_kwargs)
    if options:
        kwargs["position_kwargs"] = {**options, **(kwargs.get("position_kwargs") or {})}
    model = small_model(position, attention, *args, **kwargs)
    for scheme in model.encoder.position_schemes():
        scheme.amplify_for_tests()
    return model


def random_ids(batch: int, length: int, seed: int = 1) -> torch.Tensor:
    """Token ids that are never the pad id."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randint(1, VOCAB, (batch, length), generator=generator)
