"""Where an inference pass of the ModernBERT recipe spends its CPU time, ours beside
transformers' ``ModernBertForMaskedLM``, from ``scripts/profile_vs_hf.py``'s raw outputs
(region ``modernbert-vs-hf-profile`` of the performance page).

Each raw output holds two torch.profiler tables, one per model (a ``## ours`` and a
``## hf: ...`` section), over the same passes in one process. Per model the region splits
the passes' self CPU time into the matrix products (``aten::mm``, ``aten::addmm``,
``aten::bmm``, ``aten::baddbmm``: the projections, the FFN and the head, on the same shapes
on both sides), the attention (SDPA's operators) and the rest, and states the bound the
profile sets: were ours' attention free, HF / ours would be

    T_hf / (T_ours - A_ours)

so where that is below the target no attention of ours can reach it.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from roformer_lit.errors import ConfigError
from roformer_lit.results.study.cpu_profiles import Profile, parse_profile
from roformer_lit.results.study.cpu_speed import command, raw_outputs
from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.reading import read_text
from roformer_lit.results.study.recipe_speed import TARGET

#: Raw outputs of ``python scripts/profile_vs_hf.py --length L`` (batch 4, 3 passes).
FILES = (
    "cpu-2026-11-29-profile-modernbert-vs-hf-512.txt",
    "cpu-2026-11-29-profile-modernbert-vs-hf-2048.txt",
)
PRODUCTS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")
ATTENTION = "scaled_dot_product"
OURS = "ours"
HF = "hf"


class Split(NamedTuple):
    """One model's passes: self CPU seconds in all, in matrix products, in attention."""

    label: str
    total: float
    products: float
    attention: float

    @property
    def rest(self) -> float:
        return self.total - self.products - self.attention


def _split(label: str, profile: Profile) -> Split:
    def seconds(ops: list[str]) -> float:
        return sum(profile.shares[op] for op in ops) / 100 * profile.total

    products = seconds([op for op in profile.shares if op in PRODUCTS])
    attention = seconds([op for op in profile.shares if ATTENTION in op])
    return Split(label, profile.total, products, attention)


@cached
def read_pair(name: str) -> tuple[int, Split, Split]:
    """``(L, ours, hf)`` of raw output ``name``; ConfigError naming the file where a section
    or its length is missing."""
    path = bench_file(name)
    lines = read_text(path).splitlines()
    length = re.search(r"\bL = (\d+)", "\n".join(lines[:3]))
    starts = [i for i, line in enumerate(lines) if line.startswith("## ")]
    sections = {
        lines[start][3:].strip(): lines[start + 1 : end]
        for start, end in zip(starts, starts[1:] + [len(lines)], strict=True)
    }
    ours = next((key for key in sections if key == OURS), None)
    hf = next((key for key in sections if key.startswith(f"{HF}:")), None)
    if length is None or ours is None or hf is None:
        raise ConfigError(f"{path}: needs 'L = N' on its header and '## ours', '## hf: ...' tables")
    return (
        int(length.group(1)),
        _split(ours, parse_profile(sections[ours], f"{path} ({ours})")),
        _split(hf[len(HF) + 1 :].strip(), parse_profile(sections[hf], f"{path} ({hf})")),
    )


def _cells(split: Split) -> str:
    return " | ".join(
        f"{seconds:.2f} s ({seconds / split.total:.0%})"
        for seconds in (split.products, split.attention, split.rest)
    )


def table() -> str:
    """Region ``modernbert-vs-hf-profile``: each model's passes split into matrix products,
    attention and the rest; the products' ratio, and the bound with ours' attention free."""
    lines = [
        "| L | model | passes' self CPU time | matrix products | attention (SDPA) | the rest |",
        "|---|---|---|---|---|---|",
    ]
    sentences = []
    for name in FILES:
        length, ours, hf = read_pair(name)
        for split in (ours, hf):
            lines.append(f"| {length:,} | {split.label} | {split.total:.2f} s | {_cells(split)} |")
        bound = hf.total / (ours.total - ours.attention)
        verdict = (
            f"below the {TARGET}× target, so no attention of ours reaches it there"
            if bound < TARGET
            else f"above the {TARGET}× target: there the FLOP ratio above is the bound"
        )
        sentences.append(
            f"At {length:,} tokens ours' matrix products take {ours.products / hf.products:.2f}× "
            f"transformers' time, and HF / ours is {hf.total / ours.total:.2f}× here; with ours' "
            f"attention taking no time at all it would be {bound:.2f}×, {verdict}."
        )
    commands = "; ".join(f"`{command(name)}`" for name in FILES)
    return "\n".join(lines) + "\n\n" + " ".join(sentences) + "\n\n" + raw_outputs(FILES, commands)
