"""The MLM positions sweep (``docs/studies/positions-sweep.md``): every scheme's validation
loss over seeds, and ``t5``/``fire`` at ten times the position learning rate. Regions
``mlm-sweep`` and ``position-lr``.

Raw outputs read in ``docs/bench/``: :data:`MLM_RAW` (``extrapolate`` tables, one block per
scheme) and :data:`POSITION_LR_RAW` (final ``val/loss`` per seed). Each value is keyed by
the seed its run names, and every scheme must have each of :data:`SEEDS` once: a row
given twice (one run counted as two seeds) or missing (a mean over fewer seeds than the
table's heading says) is refused in one line naming the file, line or scheme."""

from __future__ import annotations

import math
import re
import statistics

from roformer_lit.errors import ConfigError
from roformer_lit.results.statistics import mean_interval, verdict
from roformer_lit.results.study.exact import floor_words
from roformer_lit.results.study.paired import holm_family
from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.probes import RUN
from roformer_lit.results.study.reading import read_text
from roformer_lit.results.study.t_basis import basis, head
from roformer_lit.results.study.words import names

MLM_RAW = "cpu-2026-11-23-extrapolation-every-scheme.txt"
POSITION_LR_RAW = "cpu-2026-11-23-position-lr.txt"


#: the MLM training length and the columns of MLM_RAW's tables (L=128 is column 3)
MLM_LENGTHS = {128: 3, 512: 4}
#: the seeds of the positions sweep (``configs/sweeps/positions.yaml``), in table order
SEEDS = (0, 1, 2)
_SEED = re.compile(r"-seed(\d+)$")


def _by_seed(found: dict[str, dict[int, float]], where: str) -> dict[str, list[float]]:
    """``scheme -> [value of each of SEEDS]``; ConfigError naming ``where`` and the scheme
    whose seeds are not :data:`SEEDS`."""
    for scheme, by_seed in found.items():
        if sorted(by_seed) != list(SEEDS):
            raise ConfigError(
                f"{where}: {scheme} has seeds {', '.join(map(str, sorted(by_seed))) or 'none'}, "
                f"not {', '.join(map(str, SEEDS))}: its mean would be over other seeds than "
                "the table says"
            )
    return {scheme: [by_seed[s] for s in SEEDS] for scheme, by_seed in found.items()}


def _add(found: dict[str, dict[int, float]], scheme: str, seed: int, value: float, at: str) -> None:
    """One seed's value; ConfigError naming ``at`` when the scheme has that seed already."""
    if seed in found.setdefault(scheme, {}):
        raise ConfigError(
            f"{at}: {scheme} seed {seed} a second time: one run is one seed, never two"
        )
    found[scheme][seed] = value


@cached
def mlm_losses(length: int = 128) -> dict[str, list[float]]:
    """``scheme -> [val/loss of seed 0, 1, 2]`` at ``length`` (128, the training length, where
    extrapolate equals validate, or 512 = 4×), from each scheme's block without scheme
    options; a scheme with a seed not evaluated at ``length`` is left out."""
    losses: dict[str, dict[int, float]] = {}
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
        seed = _SEED.search(match["name"])
        if seed is None:
            raise ConfigError(f"{path}: line {number}: no seed in the run name {match['name']!r}")
        at = f"{path}: line {number}"
        if cell.startswith("refused"):  # "refused (...)": not evaluated at this length
            _add(losses, block, int(seed[1]), math.nan, at)
            continue
        try:
            loss = float(cell)
        except ValueError:
            raise ConfigError(f"{at}: no loss at L={length} in this row: {cell!r}") from None
        _add(losses, block, int(seed[1]), loss, at)
    every = _by_seed(losses, str(path))
    return {k: v for k, v in every.items() if not any(math.isnan(x) for x in v)}


@cached
def position_lr_losses() -> dict[str, list[float]]:
    """``t5`` / ``fire`` at 10x the position learning rate: per seed final val/loss."""
    found: dict[str, dict[int, float]] = {}
    path = bench_file(POSITION_LR_RAW)
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        match = re.fullmatch(r"(t5|fire)-softmax position_lr_scale=10\.0,(\d+),([0-9.]+)", line)
        if match:
            _add(found, match[1], int(match[2]), float(match[3]), f"{path}: line {number}")
    return _by_seed(found, str(path))


def _every_below(a: list[float], b: list[float]) -> bool:
    return max(a) < min(b)


def mlm_sweep() -> str:
    losses = mlm_losses()
    order = sorted(losses, key=lambda k: statistics.fmean(losses[k]))
    lines = [
        f"| variant | val/loss, seeds {' / '.join(map(str, SEEDS))} | {head(len(SEEDS))} |",
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
    pairs = len(order) * (len(order) - 1) // 2
    tested = {
        f"`{a}` / `{b}`": (losses[a], losses[b])
        for i, a in enumerate(order)
        for b in order[i + 1 :]
    }
    lines += [
        "",
        f"In the table, {basis(len(SEEDS))}. Neighbours in this order whose seeds overlap (no "
        f"ordering holds on every seed): {names(overlapping)}. Every other neighbouring pair is "
        f"ordered on every seed (every seed of one below every seed of the other); in all, "
        f"{len(settled)} of {pairs} pairs of schemes are. {separation_caveat(len(SEEDS), pairs)} "
        f"{paired_result(tested, 'pairs of schemes')}",
    ]
    return "\n".join(lines)


def paired_result(cells: dict[str, tuple[list[float], list[float]]], what: str) -> str:
    """The project's test over ``cells`` (label -> two sides, in one seed order): the
    exact sign-flip test paired by seed, Holm over all of them
    (:func:`~.paired.holm_family`); the separated ones named, or "not separated" with the
    floor that decides it (:func:`~.exact.floor_words`)."""
    family = holm_family(cells)
    seeds = min(len(a) for a, _ in cells.values())
    separated = [label for label, (_, _, p) in family.items() if verdict(p) != "n.s."]
    test = f"By the exact sign-flip test paired by seed, with Holm over the {len(family)} {what}, "
    if not separated:
        return (
            f"{test}none is separated ({seeds} seeds: "
            f'{floor_words(seeds, len(family))}): "not separated" is the result for '
            "every one of them, the orderings above included."
        )
    return f"{test}separated: {names(separated)}; every other one is not separated."


def separation_caveat(seeds: int, pairs: int) -> str:
    """What "ordered on every seed" is worth with ``seeds`` seeds a side over ``pairs``
    comparisons: two equal schemes are so ordered, one way or the other, with probability
    ``2 / C(2n, n)`` (the exact rank test's smallest two-sided p), and that many of the pairs
    would be by chance alone, before any correction."""
    chance = 2 / math.comb(2 * seeds, seeds)
    reach = "is not below" if chance >= 0.05 else "is below"
    return (
        f"With {seeds} seeds a side this describes the runs and is not a test: two schemes "
        f"with equal losses are ordered on every seed with probability {chance:.3g} (the "
        f"exact rank test's smallest p, which {reach} α = 0.05 even before correcting for "
        f"the {pairs} comparisons), so about {chance * pairs:.1f} of {pairs} pairs would be "
        "ordered by chance alone."
    )


def _against_base(gains: list[float]) -> str:
    """How ×10 compares with ×1 over the seeds (``gains``: ×1 minus ×10 per seed), stating
    "on every seed" only where every seed agrees."""
    if all(g > 0 for g in gains):
        return f"is lower than ×1 on every seed by {min(gains):.2f}–{max(gains):.2f} nats"
    if all(g < 0 for g in gains):
        return f"is higher than ×1 on every seed by {-max(gains):.2f}–{-min(gains):.2f} nats"
    lower = sum(g > 0 for g in gains)
    return (
        f"is lower than ×1 on {lower} of {len(gains)} seeds only (×1 minus ×10 per seed: "
        f"{', '.join(f'{g:+.2f}' for g in gains)} nats)"
    )


def position_lr() -> str:
    tenfold, base = position_lr_losses(), mlm_losses()
    parts: list[str] = []
    tested: dict[str, tuple[list[float], list[float]]] = {}
    orderings = 0
    for scheme in ("fire", "t5"):
        gains = [b - a for a, b in zip(tenfold[scheme], base[scheme], strict=True)]
        below = [o for o in base if o != scheme and _every_below(tenfold[scheme], base[o])]
        above = [o for o in base if o != scheme and _every_below(base[o], tenfold[scheme])]
        parts.append(
            f"`{scheme}` ×10 {_against_base(gains)}; every seed of it is below every seed of "
            f"{names([f'`{o}`' for o in below])} and above every seed of "
            f"{names([f'`{o}`' for o in above])}"
        )
        tested[f"`{scheme}` ×10 / ×1"] = (tenfold[scheme], base[scheme])
        orderings += len(base) - 1
        tested |= {
            f"`{scheme}` ×10 / `{o}`": (tenfold[scheme], base[o]) for o in base if o != scheme
        }
    return (
        f"In the table above, {basis(len(SEEDS))}. Per seed (final val/loss, "
        f"`docs/bench/{POSITION_LR_RAW}`): {'; '.join(parts)}. "
        f"{separation_caveat(len(SEEDS), orderings)} "
        f"{paired_result(tested, 'comparisons (×10 against ×1 and against each other scheme)')}"
    )
