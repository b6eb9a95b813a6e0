"""What each scheme's bias alone does to attention (``locality``), and the position learning
rate's table: regions ``locality`` and ``position-lr-table`` of
``docs/studies/positions-sweep.md``.

Raw outputs: :data:`LOCALITY_RAW` (the positions sweep's t5, fire, alibi and kerple runs) and
:data:`~.mlm.POSITION_LR_RAW` (t5 and fire at 10× the position learning rate), each a
``locality`` table whose column ``max`` is the attention mass the most local head of a run
puts within ±2 tokens of a middle query, every content score equal, and ``uniform`` what
uniform attention puts there; rows at the training length :data:`LENGTH` only.
"""

from __future__ import annotations

import re

from roformer_lit.results.statistics import mean_interval
from roformer_lit.results.study.mlm import (
    POSITION_LR_RAW,
    SEEDS,
    mlm_losses,
    position_lr_losses,
)
from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.reading import read_text
from roformer_lit.results.study.t_basis import head

LOCALITY_RAW = "cpu-2026-11-23-locality.txt"
LENGTH = 128
ROW = re.compile(
    r"\| runs/(?P<sweep>[a-z_]+)/(?P<scheme>[a-z0-9]+)-softmax-seed(?P<seed>\d)/checkpoints/"
    r"last\.ckpt \| [a-z0-9]+ \| (?P<length>\d+) \| (?P<max>[0-9.]+) \| [0-9.]+ \| "
    r"(?P<uniform>[0-9.]+) \|"
)


@cached
def masses() -> dict[tuple[str, str], tuple[list[float], float]]:
    """``(sweep, scheme) -> (max mass within ±2 per seed, uniform's)`` at :data:`LENGTH`."""
    found: dict = {}
    for name in (LOCALITY_RAW, POSITION_LR_RAW):
        for match in ROW.finditer(read_text(bench_file(name))):
            if int(match["length"]) != LENGTH:
                continue
            values, _ = found.setdefault((match["sweep"], match["scheme"]), ([], 0.0))
            values.append(float(match["max"]))
            found[(match["sweep"], match["scheme"])] = (values, float(match["uniform"]))
    return found


def _range(values: list[float]) -> str:
    low, high = min(values), max(values)
    return f"{low:.1%}" if f"{low:.1%}" == f"{high:.1%}" else f"{low:.1%}–{high:.1%}"


def locality() -> str:
    """The sentence of the positions sweep's most local heads against uniform attention."""
    found = masses()
    schemes = [s for sweep, s in found if sweep == "positions"]
    uniform = {u for _, u in found.values()}
    parts = [f"any `{s}` run {_range(found[('positions', s)][0])}" for s in schemes]
    return (
        f"At L = {LENGTH} (`{LOCALITY_RAW}`), the most local head puts this share of a middle "
        f"query's attention within ±2 tokens: "
        + ", ".join(parts)
        + "; uniform attention "
        + " / ".join(f"{u:.1%}" for u in sorted(uniform))
        + "."
    )


def position_lr_table() -> str:
    """t5 and fire at ×10 and ×1: final val/loss per seed, mean ± std, most local head."""
    tenfold, base = position_lr_losses(), mlm_losses()
    found = masses()
    lines = [
        f"| variant | final val/loss (seeds {' / '.join(map(str, SEEDS))}) | {head(len(SEEDS))} | "
        "most local head, mass within ±2 |",
        "| --- | --- | ---: | --- |",
    ]
    for scheme in ("fire", "t5"):
        for label, losses, sweep in (
            ("position lr ×10", tenfold[scheme], "position_lr"),
            ("×1", base[scheme], "positions"),
        ):
            seeds = " / ".join(f"{v:.3f}" for v in losses)
            mass = found.get((sweep, scheme))
            lines.append(
                f"| {scheme}, {label} | {seeds} | {mean_interval(losses).text(3)} | "
                f"{'–' if mass is None else _range(mass[0])} |"
            )
    return "\n".join(lines)
