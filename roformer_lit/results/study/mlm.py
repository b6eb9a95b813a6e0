"""The MLM positions sweep (``docs/studies/positions-sweep.md``): every scheme's validation
loss over seeds, and ``t5``/``fire`` at ten times the position learning rate. Regions
``mlm-sweep`` and ``position-lr``.

Raw outputs read in ``docs/bench/``: :data:`MLM_RAW` (``extrapolate`` tables, one block per
scheme) and :data:`POSITION_LR_RAW` (final ``val/loss`` per seed)."""

from __future__ import annotations

import math
import re
import statistics

from roformer_lit.errors import ConfigError
from roformer_lit.results.statistics import mean_interval
from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.probes import RUN
from roformer_lit.results.study.reading import read_text
from roformer_lit.results.study.words import names

MLM_RAW = "cpu-2026-11-23-extrapolation-every-scheme.txt"
POSITION_LR_RAW = "cpu-2026-11-23-position-lr.txt"


#: the MLM training length and the columns of MLM_RAW's tables (L=128 is column 3)
MLM_LENGTHS = {128: 3, 512: 4}


@cached
def mlm_losses(length: int = 128) -> dict[str, list[float]]:
    """``scheme -> [val/loss of seed 0, 1, 2]`` at ``length`` (128, the training length, where
    extrapolate equals validate, or 512 = 4×), from each scheme's block without scheme
    options; a scheme with a seed not evaluated at ``length`` is left out."""
    losses: dict[str, list[float]] = {}
    block = None
    path = bench_file(MLM_RAW)
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if line.startswith("## "):
            block = line[3:].strip()
            continue
        match = RUN.search(line.replace("runs/positions/", "runs/probes_x/"))
        if block is None or " " in block or match is None or not line.startswith("| "):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        cell = cells[MLM_LENGTHS[length]] if len(cells) > MLM_LENGTHS[length] else ""
        if cell.startswith("refused"):  # "refused (...)": not evaluated at this length
            losses.setdefault(block, []).append(math.nan)
            continue
        try:
            losses.setdefault(block, []).append(float(cell))
        except ValueError:
            raise ConfigError(
                f"{path}: line {number}: no loss at L={length} in this row: {cell!r}"
            ) from None
    return {k: v for k, v in losses.items() if not any(math.isnan(x) for x in v)}


@cached
def position_lr_losses() -> dict[str, list[float]]:
    """``t5`` / ``fire`` at 10x the position learning rate: per seed final val/loss."""
    found: dict[str, list[float]] = {}
    for line in read_text(bench_file(POSITION_LR_RAW)).splitlines():
        match = re.fullmatch(r"(t5|fire)-softmax position_lr_scale=10\.0,(\d),([0-9.]+)", line)
        if match:
            found.setdefault(match[1], []).append(float(match[3]))
    return found


def _every_below(a: list[float], b: list[float]) -> bool:
    return max(a) < min(b)


def mlm_sweep() -> str:
    losses = mlm_losses()
    order = sorted(losses, key=lambda k: statistics.fmean(losses[k]))
    lines = [
        "| variant | val/loss, seeds 0 / 1 / 2 | mean [95 % t-interval] |",
        "| --- | --- | ---: |",
    ]
    for scheme in order:
        seeds_text = " / ".join(f"{v:.3f}" for v in losses[scheme])
        lines.append(
            f"| {scheme}-softmax | {seeds_text} | {mean_interval(losses[scheme]).text(3)} |"
        )
    settled = [
        f"`{a}` < `{b}`"
        for i, a in enumerate(order)
        for b in order[i + 1 :]
        if _every_below(losses[a], losses[b])
    ]
    overlapping = [
        f"`{a}` / `{b}`"
        for a, b in zip(order, order[1:], strict=False)
        if not _every_below(losses[a], losses[b])
    ]
    lines += [
        "",
        f"Neighbours in this order whose seeds overlap (no ordering holds on every seed): "
        f"{names(overlapping)}. Every other neighbouring pair is ordered on every seed "
        f"(every seed of one below every seed of the other); in all, {len(settled)} of "
        f"{len(order) * (len(order) - 1) // 2} pairs of schemes are.",
    ]
    return "\n".join(lines)


def position_lr() -> str:
    tenfold, base = position_lr_losses(), mlm_losses()
    parts = []
    for scheme in ("fire", "t5"):
        gains = [b - a for a, b in zip(tenfold[scheme], base[scheme], strict=True)]
        below = [o for o in base if o != scheme and _every_below(tenfold[scheme], base[o])]
        above = [o for o in base if o != scheme and _every_below(base[o], tenfold[scheme])]
        parts.append(
            f"`{scheme}` ×10 is lower than ×1 on every seed by {min(gains):.2f}–{max(gains):.2f} "
            f"nats; every seed of it is below every seed of {names([f'`{o}`' for o in below])} "
            f"and above every seed of {names([f'`{o}`' for o in above])}"
        )
    return (
        "Per seed (final val/loss, `docs/bench/" + POSITION_LR_RAW + "`): " + "; ".join(parts) + "."
    )
