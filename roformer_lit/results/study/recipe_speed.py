"""The ModernBERT recipe against transformers' ``ModernBertForMaskedLM`` on a CPU, from
``bench --vs-hf``'s raw outputs (region ``modernbert-vs-hf`` of the performance page).

Each row is the recipe's line of one raw output's recipe table: the medians of per-round
HF / ours times for a training step and for inference, and the inference FLOPs of the two
models as torch's FLOP counter counts them. At an equal FLOP rate ours would be
``HF FLOPs / ours`` times faster, so where that ratio is below ``TARGET`` no cheaper
attention of ours reaches the target: only running the products both models share faster.
"""

from __future__ import annotations

import re

from roformer_lit.errors import ConfigError
from roformer_lit.results.study.cpu_speed import bench_table, command
from roformer_lit.results.study.places import bench_file
from roformer_lit.results.study.reading import read_text

#: The raw outputs: 512 and 2,048 tokens (batch 4), and 8,192 tokens (batch 1).
FILES = (
    "cpu-2026-11-27-modernbert-vs-hf-flops.txt",
    "cpu-2026-11-27-modernbert-vs-hf-flops-8192.txt",
)
RECIPE = "modernbert"
TARGET = 1.3
TRAIN = "training step speed-up (median paired)"
INFER = "inference speed-up (median paired)"
FLOPS = "inference FLOPs, HF / ours"


def _value(cell: str) -> float:
    return float(cell.rstrip("x×"))


def _batch(name: str) -> int:
    """The batch a raw output states on its shape line (``..., batch 4; ...``)."""
    found = re.search(r"\bbatch (\d+)\b", read_text(bench_file(name)))
    if found is None:
        raise ConfigError(f"{bench_file(name)}: no 'batch N' on its shape line")
    return int(found.group(1))


def _rows() -> list[tuple[int, dict[str, str], int]]:
    """``(L, row, batch)`` for every length of every raw output, by length."""
    found = []
    for name in FILES:
        for (recipe, length), row in bench_table(name, "| recipe |").items():
            if recipe == RECIPE:
                found.append((length, row, _batch(name)))
    return sorted(found, key=lambda item: item[0])


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def table() -> str:
    """Region ``modernbert-vs-hf``: the ratios per length, which meet the target, and the
    FLOP ratio that bounds inference where it does not."""
    rows = _rows()
    lines = [
        "| L | batch | HF attention | training step: HF time / ours "
        "| inference: HF time / ours | inference FLOPs: HF / ours |",
        "|---|---|---|---|---|---|",
    ]
    for length, row, batch in rows:
        attention = row["HF reference (attention)"].split("(")[-1].rstrip(")")
        lines.append(
            f"| {length:,} | {batch} | {attention} | {_value(row[TRAIN]):.2f}× | {_value(row[INFER]):.2f}× "
            f"| {_value(row[FLOPS]):.2f}× |"
        )
    train_short = [f"{length:,}" for length, row, _ in rows if _value(row[TRAIN]) < TARGET]
    infer_short = [(length, row) for length, row, _ in rows if _value(row[INFER]) < TARGET]
    sentences = [
        f"The training step meets the {TARGET}× target at every length."
        if not train_short
        else f"The training step misses the {TARGET}× target at {_and(train_short)} tokens."
    ]
    if infer_short:
        bounded = [(length, row) for length, row in infer_short if _value(row[FLOPS]) < TARGET]
        sentences.append(
            f"Inference misses it at {_and([f'{length:,}' for length, _ in infer_short])} "
            "tokens (" + ", ".join(f"{_value(row[INFER]):.2f}×" for _, row in infer_short) + ")."
        )
        if bounded:
            sentences.append(
                "There the FLOP ratio is "
                + _and([f"{_value(row[FLOPS]):.2f}× at {length:,}" for length, row in bounded])
                + f": at transformers' FLOP rate ours would be that much faster, below {TARGET}×; "
                "reaching the target there needs ours to run the matrix products both models "
                "share faster than transformers runs them, or to compute less than the forward "
                "returns, not a cheaper attention."
            )
    else:
        sentences.append("Inference meets it at every length too.")
    sources = " and ".join(f"[`docs/bench/{n}`](bench/{n}) (`{command(n)}`)" for n in FILES)
    return "\n".join(lines) + "\n\n" + " ".join(sentences) + f" Raw outputs: {sources}.\n"
