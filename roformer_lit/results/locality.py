"""``python -m roformer_lit locality CKPT [CKPT ...] [--length L] [--window W]``.

How local a checkpoint's position bias makes attention before any content is read. For a
scheme whose score bias does not depend on the queries and keys (ALiBi, T5, KERPLE, FIRE),
head ``h`` of layer ``l`` would attend, with every content score ``q.k`` equal, with

    p_lh(j | i) = softmax_j( bias_lh[i, j] ),   i = L // 2 (a query in the middle)

and the table gives the mass that prior puts within ``W`` tokens of the query,

    local_lh = sum_{|j - i| <= W} p_lh(j | i),

as the largest and the median over heads and layers, beside what uniform attention gives,
``(2W + 1) / L``. A bias that has learned nothing is near uniform; a strongly local head
puts most of its mass on the nearest tokens. It answers "did this run's learned position
bias learn anything?" without data: read from the weights alone.

Schemes whose bias changes with the content (``xl``, ``deberta``) or that add none (the
embedding schemes, RoPE) get a line saying so instead of numbers. ``L`` defaults to the
length the checkpoint was trained at. Checkpoints are read as ``extrapolate`` reads them
(one ``error:`` line for a file that is not one; others are skipped with a ``warning:``).
"""

from __future__ import annotations

import argparse
import statistics
from collections.abc import Sequence

import torch
from torch import Tensor

from roformer_lit.errors import ConfigError
from roformer_lit.model import Encoder
from roformer_lit.module import MaskedLM
from roformer_lit.positions.base import QKVWeights
from roformer_lit.results.extrapolate import readable_checkpoints
from roformer_lit.run_files import warn
from roformer_lit.score_bias import dense_from_lookup
from roformer_lit.tool_arguments import ToolParser, integer

#: The bias is built as ``[heads, L, L]`` (the schemes' own form): 4096 keeps it near 1 GB.
MAX_LENGTH = 4096


def bias_prior(encoder: Encoder, length: int) -> Tensor | str:
    """``[layers, heads, L]``: ``softmax_j bias[i = L // 2, j]`` per layer and head, or a
    sentence saying why the scheme has no content-free bias."""
    if len(encoder.position_schemes()) > 1:
        return "a layer plan with several position schemes or options (one prior per scheme)"
    scheme = encoder.position
    # what the scheme declares with its options, as the rule table reads it (a plugin
    # may declare it in ``capabilities`` rather than its class attribute)
    if not encoder.config.layers[0].scheme_capabilities.needs_score_bias:
        return "no score bias (positions enter through the embeddings or the queries and keys)"
    heads = encoder.layers[0].attention.num_heads
    head_size = encoder.layers[0].attention.head_size
    query = length // 2
    generator = torch.Generator().manual_seed(0)
    priors = []
    with torch.no_grad():
        ctx = scheme.prepare(length, torch.device("cpu"), torch.float32)
        for index, layer in enumerate(encoder.layers):
            qkv = QKVWeights(layer.attention.qkv.weight, layer.attention.qkv.bias, heads)
            rows = []
            for scale in (0.0, 1.0):  # equal content scores, then random queries and keys
                q, k = (
                    scale * torch.randn(1, heads, length, head_size, generator=generator)
                    for _ in range(2)
                )
                score = scheme.layer(index).score(q, k, ctx, qkv)
                if score is None or not score.adds_bias:
                    return "no score bias"
                bias = score.bias
                if bias is None:
                    assert score.lookup is not None
                    bias = dense_from_lookup(score.lookup, 1, heads, length)
                rows.append(bias.expand(1, heads, length, length)[0, :, query, :].float())
            if not torch.allclose(rows[0], rows[1], rtol=1e-5, atol=1e-5):
                return "its bias depends on the queries and keys (no content-free prior)"
            priors.append(rows[0].softmax(-1))
    return torch.stack(priors)


def local_mass(prior: Tensor, window: int) -> Tensor:
    """``[layers, heads]``: the prior's mass within ``window`` tokens of the query."""
    length = prior.shape[-1]
    query = length // 2
    return prior[..., max(0, query - window) : query + window + 1].sum(-1)


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser("locality", description=__doc__)
    parser.add_argument("checkpoints", nargs="+", help="checkpoint files (quoted globs too)")
    parser.add_argument(
        "--length",
        type=integer(8, MAX_LENGTH),
        default=None,
        help="sequence length (default: the training one)",
    )
    parser.add_argument(
        "--window",
        type=integer(0, MAX_LENGTH),
        default=2,
        help="count keys within this many tokens (default 2)",
    )
    return parser


def main(args: Sequence[str]) -> int:
    ns = build_parser().parse_args(list(args))
    ready = [
        (path, ns.length or settings.train_length or 128)
        for path, settings in readable_checkpoints(ns.checkpoints)
    ]
    shortest = min(length for _, length in ready)
    if ns.window >= shortest // 2:
        raise ConfigError(f"--window must be < L / 2 = {shortest // 2}, got {ns.window}")
    header = [
        f"| checkpoint | scheme | L | mass within ±{ns.window} of the query: max | median | "
        "uniform |",
        "|---|---|---|---|---|---|",
    ]
    for path, length in ready:
        try:
            model = MaskedLM.from_checkpoint(path)
        except ConfigError as exc:
            if len(ready) == 1:  # refused before a line of the table is printed
                raise
            warn(f"{exc}; skipped")
            continue
        prior = bias_prior(model.encoder, length)
        lead = f"| {path} | {model.hparams.position} | {length} |"
        if isinstance(prior, str):
            row = f"{lead} {prior} | | |"
        else:
            mass = local_mass(prior, ns.window).flatten().tolist()
            uniform = (2 * ns.window + 1) / length
            row = f"{lead} {max(mass):.3f} | {statistics.median(mass):.3f} | {uniform:.3f} |"
        print("\n".join([*header, row]))
        header = []  # the table's head, once its first row is ready
    if header:
        raise ConfigError(
            f"none of the {len(ready)} checkpoints could be read (each said why above)"
        )
    return 0
