"""One seed of ``study_budget_copy.yaml`` trained with one thread and with two (region
``sweeps-threads`` of ``docs/guide/sweeps.md``).

Raw output: :data:`RAW`, each checkpoint's ``extrapolate --csv`` rows prefixed by the code
revision and ``OMP_NUM_THREADS`` it was trained with. The guide typed the two accuracies by
hand; here they are the rows of one code revision, one per thread count, at the step the
checkpoints name. A revision without both thread counts, or a row that is not
``…,length,metric,value``, is refused in one line naming the file and line.
"""

from __future__ import annotations

import re

from roformer_lit.errors import ConfigError
from roformer_lit.results.study.places import bench_file
from roformer_lit.results.study.reading import read_text

RAW = "cpu-2026-11-26-budget-numerics.txt"
_ROW = re.compile(
    r"^code (?P<code>[0-9a-f]+) OMP_NUM_THREADS=(?P<threads>\d+) \S*step=(?P<step>\d+)\.ckpt,"
    r"(?P<length>\d+),(?P<metric>[a-z]+),(?P<value>[0-9.]+)$"
)


def accuracies() -> tuple[str, int, dict[int, float]]:
    """``(code revision, step, threads -> accuracy)`` of the first revision trained with
    both one and two threads."""
    path = bench_file(RAW)
    found: dict[str, dict[int, float]] = {}
    steps: set[int] = set()
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.startswith("code "):
            continue
        row = _ROW.match(line)
        if row is None:
            raise ConfigError(f"{path}: line {number}: not a 'code REV OMP_NUM_THREADS=N …' row")
        if row["metric"] == "acc":
            found.setdefault(row["code"], {})[int(row["threads"])] = float(row["value"])
            steps.add(int(row["step"]))
    both = [code for code, by in found.items() if {1, 2} <= set(by)]
    if not both or len(steps) != 1:
        raise ConfigError(
            f"{path}: needs one code revision with accuracy rows for OMP_NUM_THREADS=1 and 2, "
            f"all at one step (revisions: {sorted(found)}, steps: {sorted(steps)})"
        )
    return both[0], steps.pop(), found[both[0]]


def threads() -> str:
    """The guide's sentence on what the thread count does to one run."""
    code, step, by_threads = accuracies()
    return (
        "A run's numbers depend on it: floating-point sums split over two threads add in "
        f"another order, and at a {step:,}-step position task that order is enough to move a "
        f"run (the same seed of `study_budget_copy.yaml`, code {code}, reached "
        f"{by_threads[1]:.3f} accuracy at step {step:,} with one thread, {by_threads[2]:.3f} "
        f"with two: `docs/bench/{RAW}`, which names the commands)."
    )
