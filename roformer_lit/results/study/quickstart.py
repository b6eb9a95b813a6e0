"""The README quick start's result: the base experiment's final val/loss and accuracy over
the model seeds (region ``readme-quickstart`` of ``README.md``).

The quick start's three runs (``fit --config configs/rope.yaml --seed_everything N``,
N = 0, 1, 2) are the positions sweep's ``rope`` runs, so their committed raw outputs are
:data:`~.mlm.MLM_RAW` (``extrapolate`` at L = 128, where it equals ``validate``: each
seed's final val/loss) and :data:`~.mlm.POSITION_LR_RAW` (``compare``'s row
``rope-softmax``: val/acc over the seeds). The README typed these, and a loss curve (6.80 at
step 50) of which no raw output is committed; the region states only what the files hold,
with the machine they name. The per-step curve comes from a rerun of the same three commands
on another machine, :data:`CURVES_RAW` (``scripts/quickstart_seeds.py`` read it off the
runs' event files: :mod:`~roformer_lit.results.study.seed_curves`): its mean and sample std
over the seeds at :data:`CURVE_STEPS`, and its final mean beside the first machine's.
"""

from __future__ import annotations

import io
import re
import statistics

from roformer_lit.csv_records import ClosedQuotesReader
from roformer_lit.errors import ConfigError
from roformer_lit.results.study.mlm import MLM_RAW, POSITION_LR_RAW, SEEDS, mlm_losses
from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.reading import read_text

SCHEME = "rope"
#: The rerun's per-step curve: ``seed,step,val_loss,val_acc`` after a comment line naming
#: the CPU, the torch version and the command; ``step`` as TensorBoard logs it, the 0-based
#: index of the last optimiser step (the console's "step 50" is logged at 49).
CURVES_RAW = "cpu-2026-11-30-quickstart-seeds.csv"
#: The optimiser steps done at the validations the sentence gives.
CURVE_STEPS = (50, 300, 600)
_CURVES_HEADER = re.compile(r"^# (?P<cpu>[^;]+); torch (?P<torch>[^;]+); (?P<command>.+)$")
_FILE_DATE = re.compile(r"cpu-(?P<date>\d{4}-\d\d-\d\d)-")
_MACHINE = re.compile(r"on the (?P<machine>[^,]+CPU), (?P<date>\d{4}-\d\d-\d\d)")
_COMPARE = re.compile(
    r"^\| rope-softmax \| (?P<n>\d+) \((?P<seeds>[0-9, ]+)\) \| [^|]+ \| [^|]+ \| "
    r"(?P<acc>[0-9.]+) ± (?P<std>[0-9.]+) \|"
)


def machine() -> tuple[str, str]:
    """The machine and date :data:`~.mlm.MLM_RAW`'s header names."""
    path = bench_file(MLM_RAW)
    match = _MACHINE.search(read_text(path))
    if match is None:
        raise ConfigError(f"{path}: its header names no machine ('on the ... CPU, YYYY-MM-DD')")
    return match["machine"], match["date"]


@cached
def accuracy() -> tuple[float, float]:
    """``compare``'s val/acc of ``rope-softmax``: mean and sample std over :data:`SEEDS`."""
    path = bench_file(POSITION_LR_RAW)
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        match = _COMPARE.match(line)
        if match is None:
            continue
        seeds = tuple(int(s) for s in match["seeds"].split(","))
        if seeds != SEEDS:
            raise ConfigError(
                f"{path}: line {number}: rope-softmax over seeds {seeds}, not {SEEDS}"
            )
        return float(match["acc"]), float(match["std"])
    raise ConfigError(f"{path}: no compare row for rope-softmax")


@cached
def curves() -> tuple[str, str, dict[int, dict[int, tuple[float, float]]]]:
    """The rerun's CPU, its date and ``{steps done: {seed: (val/loss, val/acc)}}``;
    ConfigError if the file has no header, a row is not numbers, no seed is in it, a seed is
    not one of :data:`SEEDS`, or a step of :data:`CURVE_STEPS` lacks one of its seeds."""
    path = bench_file(CURVES_RAW)
    first, _, body = read_text(path).partition("\n")
    header = _CURVES_HEADER.match(first)
    date = _FILE_DATE.match(CURVES_RAW)
    if header is None or date is None:
        raise ConfigError(f"{path}: line 1 names no CPU ('# <cpu>; torch <version>; <command>')")
    found: dict[int, dict[int, tuple[float, float]]] = {}
    for number, row in enumerate(
        ClosedQuotesReader(io.StringIO(body, newline=""), str(path), first=2), start=2
    ):
        try:
            seed, done = int(row["seed"]), int(row["step"]) + 1
            found.setdefault(done, {})[seed] = (float(row["val_loss"]), float(row["val_acc"]))
        except (KeyError, TypeError, ValueError):
            raise ConfigError(f"{path}: line {number}: not seed,step,val_loss,val_acc") from None
    seeds = sorted({seed for by_seed in found.values() for seed in by_seed})
    if not seeds or not set(seeds) <= set(SEEDS):
        raise ConfigError(f"{path}: seeds {seeds}, not some of {list(SEEDS)}")
    for step in CURVE_STEPS:
        if sorted(found.get(step, {})) != seeds:
            raise ConfigError(
                f"{path}: after {step} steps, seeds {sorted(found.get(step, {}))}, not {seeds}"
            )
    return header["cpu"].strip(), date["date"], found


def _over_seeds(values: list[float], digits: int = 2) -> str:
    """One seed's value, or the seeds' mean ± sample std."""
    if len(values) == 1:
        return f"{values[0]:.{digits}f}"
    return f"{statistics.fmean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f}"


def curve_words() -> str:
    """The rerun's curve: val/loss at :data:`CURVE_STEPS` and accuracy at the first and
    last (one seed's values, or mean ± sample std over the seeds), and each seed's final
    val/loss beside the first machine's, at the 3 decimals that machine's table printed
    (a mean of rounded values would differ from the mean of the exact ones in its last
    digit without any seed differing)."""
    cpu, date, found = curves()
    seeds = sorted(found[CURVE_STEPS[0]])
    losses = [
        f"{_over_seeds([found[step][s][0] for s in seeds])} after {step}" for step in CURVE_STEPS
    ]
    first, last = CURVE_STEPS[0], CURVE_STEPS[-1]
    acc = [_over_seeds([100 * found[step][s][1] for s in seeds], 1) for step in (first, last)]
    whose = (
        f"seed {seeds[0]} (the command as written)"
        if len(seeds) == 1
        else f"seeds {', '.join(map(str, seeds))} (mean ± sample std)"
    )
    before = mlm_losses()[SCHEME]
    again = [f"{found[last][s][0]:.3f}" for s in seeds]
    then = [f"{before[SEEDS.index(s)]:.3f}" for s in seeds]
    each = "its final val/loss" if len(seeds) == 1 else "each seed's final val/loss"
    final = (
        f"{each}, {' / '.join(again)}, is the first machine's to the 3 decimals it printed"
        if again == then
        else f"{each} is {' / '.join(again)} where the first machine's is {' / '.join(then)}"
    )
    return (
        f"The per-step curve, of {whose} rerun on the {cpu} ({date}; raw output "
        f"`docs/bench/{CURVES_RAW}`, written by `scripts/quickstart_seeds.py` from the run's "
        f"event files): val/loss {', '.join(losses[:-1])} and {losses[-1]} steps, masked-token "
        f"accuracy {acc[0]} % → {acc[1]} %; {final}."
    )


def sentence() -> str:
    """The README's sentence: each seed's final val/loss, their mean ± std, the accuracy."""
    losses = mlm_losses()[SCHEME]
    acc, std = accuracy()
    name, date = machine()
    seeds = ", ".join(map(str, SEEDS))
    return (
        f"After its 600 steps the final val/loss of model seeds {seeds} "
        f"(`--seed_everything N`) is {' / '.join(f'{v:.3f}' for v in losses)}: "
        f"**{statistics.fmean(losses):.2f} ± {statistics.stdev(losses):.2f}** (mean ± sample "
        f"std), masked-token accuracy {100 * acc:.1f} ± {100 * std:.1f} %, on the {name} "
        f"({date}; raw outputs `docs/bench/{MLM_RAW}`, the `rope` block at L = 128, where "
        f"`extrapolate` equals `validate`, and `docs/bench/{POSITION_LR_RAW}`, `compare`'s "
        "`rope-softmax` row). Compare with the spread, not one number: CPU kernels differ "
        f"between machines in the last bits. {curve_words()}"
    )
