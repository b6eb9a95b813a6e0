"""The check after every export: the written directory, loaded by ``transformers`` alone,
gives the model's logits.

On a fixed batch (:func:`probe_batch`: two rows of seeded random ids, the second padded,
long enough to pass every window of the plan) the logits at real positions of
``AutoModelForMaskedLM.from_pretrained(directory)`` and of our model (float32, CPU, eval
mode) must satisfy

    max |ours - theirs| <= TOLERANCE * max(1, max |ours|).

Both sides compute the same function in float32 in different orders (split or fused
q/k/v, eager or SDPA attention, RoPE pairs or halves, sinusoid tables built by each),
which leaves differences of float32 rounding, far below ``TOLERANCE``; a tensor left at
its initialisation, a wrong layer count, a permuted head or a setting HF reads otherwise
moves the logits by orders of magnitude more. The scale ``max(1, max |ours|)`` keeps the
bound relative for large logits.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from roformer_lit.errors import ConfigError
from roformer_lit.interop._hf import quiet_transformers, require_transformers
from roformer_lit.interop.weights import short_message

if TYPE_CHECKING:
    from roformer_lit.encoder_config import EncoderConfig
    from roformer_lit.module import MaskedLM

TOLERANCE = 1e-3
_SHORTEST = 24  # the probe's length without windows (or the table's length if shorter)
_LONGEST = 512


def probe_batch(config: EncoderConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, attention mask): two seeded random rows past twice the widest window, the
    second with its last third padded."""
    windows = [spec.window for spec in config.layer_specs if spec.window is not None]
    length = min(
        config.max_positions, max(_SHORTEST, min(_LONGEST, 2 * max(windows, default=0) + 9))
    )
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, config.vocab_size, (2, length), generator=generator)
    mask = torch.ones_like(ids)
    mask[1, length - max(1, length // 3) :] = 0
    return ids, mask


def _our_logits(model: MaskedLM, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    param = next(model.parameters())
    if param.dtype != torch.float32 or param.device.type != "cpu":
        model = copy.deepcopy(model).to(device="cpu", dtype=torch.float32)
    training = model.training
    model.eval()
    try:
        with torch.no_grad():
            return model(ids, mask)
    finally:
        model.train(training)


def check_written(model: MaskedLM, directory: Path, shown: Path) -> None:
    """Refuse (one ConfigError line) a written export in ``directory`` whose logits differ
    from ``model``'s (see the module); ``shown`` is the path the user asked for."""
    transformers = require_transformers()
    try:
        with quiet_transformers(transformers):  # its load report would repeat this check
            hf = transformers.AutoModelForMaskedLM.from_pretrained(directory, local_files_only=True)
    except Exception as err:
        raise ConfigError(
            f"export to {str(shown)!r} failed its check: transformers cannot load the written "
            f"files ({type(err).__name__}: {short_message(err)})"
        ) from err
    ids, mask = probe_batch(model.config)
    ours = _our_logits(model, ids, mask)
    with torch.no_grad():
        theirs = hf.eval().float()(input_ids=ids, attention_mask=mask).logits
    real = mask.bool()
    ours, theirs = ours[real].float(), theirs[real]
    bound = TOLERANCE * max(1.0, ours.abs().max().item())
    difference = (ours - theirs).abs().max().item()
    if not difference <= bound:  # NaN fails too
        raise ConfigError(
            f"export to {str(shown)!r} failed its check: {type(hf).__name__} loaded from the "
            f"written files gives logits up to {difference:.3g} away from the model's "
            f"(tolerance {bound:.3g}); nothing was written"
        )
