"""The extrapolation guide's study: every scheme trained at 128 tokens, evaluated at 128 …
2048 (regions ``extrapolation-table``, ``extrapolation-nope`` and ``extrapolation-findings``
of ``docs/guide/extrapolation.md``).

Raw outputs: :data:`~.mlm.MLM_RAW` (one ``extrapolate`` block per scheme, and one per YaRN
factor for ``rope``) and :data:`~.mlm.POSITION_LR_RAW` (t5 and fire at 10× the position
learning rate: their ``extrapolate`` blocks and a ``locality`` table). The guide typed the
summary table, its per-seed ranges and the locality shares by hand; here the table is each
block's "Over seeds" row as ``extrapolate`` printed it, and every range is computed from the
per-checkpoint rows, seed for seed, so "on every seed" is said only where it holds. A block
whose rows or over-seeds row are missing or damaged is refused in one line naming the file
and line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from roformer_lit.errors import ConfigError
from roformer_lit.results.study.chance import by_chance, caveat
from roformer_lit.results.study.exact import floor_words
from roformer_lit.results.study.locality import LOCALITY_RAW, masses
from roformer_lit.results.study.mlm import MLM_RAW, POSITION_LR_RAW
from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.reading import read_text
from roformer_lit.results.study.words import span

LENGTHS = (128, 512, 1024, 2048)
TIMES = {128: "1×", 512: "4×", 1024: "8×", 2048: "16×"}
SEEDS = (0, 1, 2)
_SEED = re.compile(r"-seed(\d+)/")
_FACTOR = re.compile(r"factor: (\d+)")
_LOCALITY = re.compile(
    r"^\| runs/[a-z_]+/(?P<scheme>[a-z0-9]+)-softmax-seed(?P<seed>\d+)/checkpoints/last\.ckpt "
    r"\| [a-z0-9]+ \| (?P<length>\d+) \| (?P<max>[0-9.]+) \| [0-9.]+ \| [0-9.]+ \|$"
)


@dataclass
class Block:
    """One ``extrapolate`` call: its over-seeds cells as printed, and each seed's values."""

    label: str
    summary: list[str] = field(default_factory=list)
    seeds: dict[int, list[float]] = field(default_factory=dict)


def _label(header: str, tenfold: bool) -> str | None:
    """The guide's name of a block, from its ``##`` header; None for a block of no scheme."""
    if tenfold:
        match = re.search(r"runs/position_lr/([a-z0-9]+)-softmax", header)
        return None if match is None else f"{match[1]}, position lr ×10"
    words = header.split()
    if not words:
        return None
    factor = _FACTOR.search(header)
    return f"{words[0]} + YaRN, factor {factor[1]}" if factor else words[0]


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _value(cell: str, at: str) -> float:
    if cell.startswith("refused"):
        return math.nan
    try:
        return float(cell)
    except ValueError:
        raise ConfigError(f"{at}: not a loss: {cell!r}") from None


def _read(name: str, tenfold: bool) -> dict[str, Block]:
    path = bench_file(name)
    blocks: dict[str, Block] = {}
    block: Block | None = None
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        at = f"{path}: line {number}"
        if line.startswith("## "):
            label = _label(line[3:].strip(), tenfold)
            if tenfold and "extrapolate" not in line:
                label = None
            if label in blocks:
                raise ConfigError(f"{at}: block {label!r} a second time")
            block = None if label is None else blocks.setdefault(label, Block(label))
            continue
        if block is None or not line.startswith("| "):
            continue
        cells = _cells(line)
        if cells[0].startswith("runs/"):
            seed = _SEED.search(cells[0])
            if seed is None or len(cells) != 3 + len(LENGTHS):
                raise ConfigError(f"{at}: {block.label}: a row of {len(cells)} cells or no seed")
            if int(seed[1]) in block.seeds:
                raise ConfigError(f"{at}: {block.label} seed {seed[1]} a second time")
            block.seeds[int(seed[1])] = [_value(c, at) for c in cells[3:]]
        elif cells[0].endswith("-softmax") and len(cells) == 2 + len(LENGTHS):
            if cells[1] != str(len(SEEDS)):
                raise ConfigError(f"{at}: {block.label} over {cells[1]} seeds, not {len(SEEDS)}")
            block.summary = cells[2:]
    for label, found in blocks.items():
        if sorted(found.seeds) != list(SEEDS) or not found.summary:
            raise ConfigError(
                f"{path}: {label} has seeds {sorted(found.seeds)} and "
                f"{'an' if found.summary else 'no'} over-seeds row: it needs seeds "
                f"{list(SEEDS)} and one over-seeds row"
            )
    return blocks


@cached
def blocks() -> dict[str, Block]:
    """Every block of both raw outputs, by the guide's label."""
    found = _read(MLM_RAW, tenfold=False)
    found.update(_read(POSITION_LR_RAW, tenfold=True))
    return found


def _at(label: str, length: int) -> list[float]:
    """Each seed's loss of ``label`` at ``length``."""
    column = LENGTHS.index(length)
    return [blocks()[label].seeds[s][column] for s in SEEDS]


def _change(label: str, length: int) -> list[float]:
    """Each seed's change from 1× minus the same seed's ``nope`` change."""
    own = [b - a for a, b in zip(_at(label, 128), _at(label, length), strict=True)]
    nope = [b - a for a, b in zip(_at("nope", 128), _at("nope", length), strict=True)]
    return [a - b for a, b in zip(own, nope, strict=True)]


def _mean128(label: str) -> float:
    return float(blocks()[label].summary[0].split()[0])


def table() -> str:
    """The summary table: each block's over-seeds row, ordered by the mean at 1×."""
    head = " | ".join(f"L={n} ({TIMES[n]})" for n in LENGTHS)
    rows = [
        f"| {label} | " + " | ".join(blocks()[label].summary) + " |"
        for label in sorted(blocks(), key=_mean128)
    ]
    return "\n".join(
        [
            f"| scheme (val/loss, mean ± sample std over seeds {', '.join(map(str, SEEDS))}) "
            f"| {head} |",
            "|---" * (1 + len(LENGTHS)) + "|",
            *rows,
            "",
            f"Ordered by the mean at 1×. Each row is the over-seeds row `extrapolate` printed in "
            f"`docs/bench/{MLM_RAW}` (the position lr ×10 rows: `docs/bench/{POSITION_LR_RAW}`).",
        ]
    )


def _span(values: list[float], sign: bool = False) -> str:
    form = "{:+.2f}" if sign else "{:.2f}"
    low, high = form.format(min(values)), form.format(max(values))
    return low if low == high else f"{low} to {high}"


def _every(values: list[float], above: bool = True) -> str:
    """``on every seed`` when every value is on that side of 0, else how many are."""
    count = sum((v > 0) if above else (v < 0) for v in values)
    return "on every seed" if count == len(values) else f"on {count} of {len(values)} seeds"


#: What passes a seed-for-seed comparison of these pages by chance: two settings whose
#: losses differ only by noise are on one side of each other on a seed with probability 1/2.
NULL = "a setting at the level of what it is compared with"


def _confidence(compared: list[list[float]], above: list[bool], what: str, null: str = NULL) -> str:
    """How far "on every seed" goes here: three seeds cannot reach α under the exact paired
    test, and how many of the comparisons stated would hold on every seed by chance alone."""
    passed = sum(
        all((v > 0) if up else (v < 0) for v in values)
        for values, up in zip(compared, above, strict=True)
    )
    return (
        f"{len(SEEDS)} seeds, compared seed for seed, with no test able to separate a "
        f'comparison ({floor_words(len(SEEDS), len(compared))}): "on every seed" is the '
        f"strongest evidence they give, not a test-backed difference. "
        f"On every seed, {caveat(passed, [len(v) for v in compared], what, null)}."
    )


def nope() -> str:
    """How ``nope``'s own loss moves with length, seed for seed, and what three seeds say."""
    parts, compared = [], []
    for n in (512, 2048):
        below = [a - b for a, b in zip(_at("nope", 128), _at("nope", n), strict=True)]
        compared.append(below)
        parts.append(f"{TIMES[n]} is {_span(below)} nats below 1× ({_every(below)})")
    return (
        "`nope` has no position information at all, yet its loss moves between lengths: "
        + " and ".join(parts)
        + ". "
        + _confidence(
            compared,
            [True] * len(compared),
            "lengths below 1×",
            "a length that leaves `nope`'s loss at its 1× level",
        )
    )


#: The schemes whose rows past 1× the guide reads as saying little about extrapolation,
#: because at 1× they have learnt little position use in 600 steps.
UNLEARNT = ("learned", "sinusoidal", "t5", "fire")


def _side(values: list[float]) -> str:
    """Which side of 0 the seeds' values are on, every seed or how many."""
    if all(v > 0 for v in values):
        return "above on every seed"
    if all(v < 0 for v in values):
        return "below on every seed"
    return f"above on {sum(v > 0 for v in values)} of {len(values)} seeds"


def at_training_length() -> str:
    """How far :data:`UNLEARNT` are from ``nope`` at 1×, seed for seed, and how local the
    biases of t5 and fire are there (``locality``): what the guide's reading of their flat
    rows rests on."""
    parts, gaps = [], []
    for scheme in UNLEARNT:
        gap = _diff(_at(scheme, 128), _at("nope", 128))
        gaps.append(gap)
        low, high = f"{min(gap):+.3f}", f"{max(gap):+.3f}"
        ends = low if low == high else f"{low} to {high}"
        parts.append(f"`{scheme}` {ends} ({_side(gap)})")
    null = "a scheme at `nope`'s level"
    above = sum(all(v > 0 for v in gap) for gap in gaps)
    below = sum(all(v < 0 for v in gap) for gap in gaps)
    seeds = [len(gap) for gap in gaps]
    found = masses()
    shares = [f"`{s}` {span(found[('positions', s)][0])}" for s in ("t5", "fire")]
    uniform = {found[("positions", s)][1] for s in ("t5", "fire")}
    return (
        f"At 1× (L=128), each seed's loss minus the same seed's `nope` loss, nats (range over "
        f"the {len(SEEDS)} seeds; a description of these runs, not a test): "
        + "; ".join(parts)
        + f". {len(SEEDS)} seeds, with no test able to separate a comparison "
        f'({floor_words(len(SEEDS), len(gaps))}): "on every seed" is the strongest evidence '
        f"they give. Above on every seed, {caveat(above, seeds, 'schemes', null)}. Below on "
        f"every seed: {below} of {len(gaps)} schemes, about {by_chance(seeds):.1f} by chance "
        "alone"
        + ". The most local head's attention mass within ±2 tokens of a middle query at 128 "
        f"(`locality`, `docs/bench/{LOCALITY_RAW}`): "
        + ", ".join(shares)
        + f", against {' / '.join(f'{u:.3f}' for u in sorted(uniform))} for uniform attention."
    )


def _yarn(factor: int) -> str:
    return f"rope + YaRN, factor {factor}"


def _diff(a: list[float], b: list[float]) -> list[float]:
    """``a_i - b_i``, seed for seed."""
    return [x - y for x, y in zip(a, b, strict=True)]


def findings() -> str:
    """The bullets: every range and every "on every seed" computed from the per-seed rows,
    each bold lead saying what it is compared against, and one line on what three seeds
    can say and how many of the comparisons would hold on every seed by chance alone."""
    at16 = {label: _at(label, 2048) for label in blocks()}
    rope_vs_nope = {n: _change("rope", n) for n in LENGTHS[1:]}
    gain = _diff(at16["rope"], at16[_yarn(8)])
    lowest = sum(
        at16[_yarn(8)][k] == min(at16[_yarn(f)][k] for f in (4, 8, 16)) for k in range(len(SEEDS))
    )
    worse16 = _diff(at16[_yarn(16)], at16[_yarn(8)])
    cost = _diff(_at(_yarn(8), 128), _at("rope", 128))
    others = [v for label, vs in at16.items() if label != "xl" for v in vs if not math.isnan(v)]
    xl_below = max(at16["xl"]) < min(others)
    start = {s: _diff(_at(s, 128), _at("rope", 128)) for s in ("alibi", "kerple")}
    end = {s: _diff(at16["rope"], at16[s]) for s in ("alibi", "kerple")}
    tenfold = []
    for scheme in ("t5", "fire"):
        label = f"{scheme}, position lr ×10"
        tenfold.append(
            f"{scheme} "
            + ", ".join(f"{_span(_change(label, n), True)} at {TIMES[n]}" for n in LENGTHS[1:])
        )
    fire_vs_deberta = {
        n: _diff(_change("fire, position lr ×10", n), _change("deberta", n)) for n in (1024, 2048)
    }
    compared = [
        *rope_vs_nope.values(),
        gain,
        worse16,
        cost,
        *start.values(),
        *end.values(),
        *fire_vs_deberta.values(),
    ]
    shares = _locality()
    return "\n".join(
        [
            _confidence(compared, [True] * len(compared), "seed-for-seed comparisons below"),
            "",
            "- **Unscaled RoPE past its training length, against `nope`'s change from 1× "
            "(the baseline; not test-backed)**: its change from 1× is above `nope`'s "
            + "; ".join(f"{_every(v)} at {TIMES[n]}" for n, v in rope_vs_nope.items())
            + " (the `rope` row of the table of changes).",
            "- **YaRN applied at evaluation time, against unscaled RoPE (not test-backed).** "
            f"At 16×, factor 8 is {_span(gain)} nats below unscaled RoPE ({_every(gain)}), and "
            f"the lowest of the factors 4, 8 and 16 on {lowest} of {len(SEEDS)} seeds. Factor "
            f"16, the ratio 2048/128, is {_span(worse16)} nats worse than factor 8 "
            f"({_every(worse16)}). Scaling costs at the training length: {_span(cost, True)} "
            f"nats at L=128 with factor 8 ({_every(cost)}).",
            "- **xl at 16×, against every other run (a ranking of "
            f"{len(SEEDS)} runs per scheme, not a test)**: every xl seed there "
            f"({_span(at16['xl'])}) is "
            + ("below" if xl_below else "not below")
            + " every run of every other scheme and factor; its change stays close to `nope`'s "
            "(the `xl` row).",
            "- **ALiBi and KERPLE against unscaled RoPE (not test-backed)**: at 1× their loss "
            "is above RoPE's (alibi "
            f"{_every(start['alibi'])}, kerple {_every(start['kerple'])}); at 16× unscaled RoPE's "
            f"is above theirs (alibi {_every(end['alibi'])}, kerple {_every(end['kerple'])}).",
            "- **Trained at 10× the position learning rate**, against `nope`'s change, seed for "
            "seed (range over the seeds, nats): "
            + "; ".join(tenfold)
            + ". Fire ×10's change is above deberta's "
            + " and ".join(f"{_every(v)} at {TIMES[n]}" for n, v in fire_vs_deberta.items())
            + ". The most local head's attention mass within ±2 tokens of a middle query "
            f"(`locality`, `docs/bench/{POSITION_LR_RAW}`): "
            + "; ".join(f"{name} {text}" for name, text in shares.items())
            + ".",
        ]
    )


@cached
def _masses() -> dict[tuple[str, int], list[float]]:
    """``(scheme, length) -> [max mass within ±2 per seed]`` of the ``locality`` table."""
    path = bench_file(POSITION_LR_RAW)
    found: dict[tuple[str, int], dict[int, float]] = {}
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        match = _LOCALITY.match(line)
        if match is None:
            continue
        by_seed = found.setdefault((match["scheme"], int(match["length"])), {})
        if int(match["seed"]) in by_seed:
            raise ConfigError(f"{path}: line {number}: {match['scheme']} seed a second time")
        by_seed[int(match["seed"])] = float(match["max"])
    return {key: [v for _, v in sorted(by_seed.items())] for key, by_seed in found.items()}


def _locality() -> dict[str, str]:
    masses = _masses()
    return {
        "t5 ×10": f"{span(masses[('t5', 128)])} at 128, {span(masses[('t5', 2048)])} at 2048",
        "fire ×10": f"{span(masses[('fire', 128)])} at 128, {span(masses[('fire', 2048)])} at 2048",
        "alibi": f"{span(masses[('alibi', 2048)])} at 2048",
        "kerple": f"{span(masses[('kerple', 2048)])} at 2048",
    }
