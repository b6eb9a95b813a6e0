"""The README quick start's result: the base experiment's final val/loss and accuracy over
the model seeds (region ``readme-quickstart`` of ``README.md``).

The quick start's three runs (``fit --config configs/rope.yaml --seed_everything N``,
N = 0, 1, 2) are the positions sweep's ``rope`` runs, so their committed raw outputs are
:data:`~.mlm.MLM_RAW` (``extrapolate`` at L = 128, where it equals ``validate``: each
seed's final val/loss) and :data:`~.mlm.POSITION_LR_RAW` (``compare``'s row
``rope-softmax``: val/acc over the seeds). The README typed these, and a loss curve (6.80 at
step 50) of which no raw output is committed; the region states only what the files hold,
with the machine they name.
"""

from __future__ import annotations

import re
import statistics

from roformer_lit.errors import ConfigError
from roformer_lit.results.study.mlm import MLM_RAW, POSITION_LR_RAW, SEEDS, mlm_losses
from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.reading import read_text

SCHEME = "rope"
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
        "between machines in the last bits. No per-step curve of these runs is committed, so "
        "none is stated here."
    )
