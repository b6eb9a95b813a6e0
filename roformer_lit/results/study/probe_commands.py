"""The README's two position-task commands and what the raw outputs say of their size and
time (region ``readme-probe-commands``).

The README typed "under a minute" for a ``fit`` of one task and "63 runs, 20 min" for the
``probes_quick`` sweep. The count of runs is the sweep file's grid as ``sweep`` expands it
(:func:`~roformer_lit.sweep.spec.load_sweep`, exclusions applied); the only committed raw
output with a time in it is the sweep's ``compare`` table (:data:`COMPARE_RAW`), whose
``wall time (s)`` is each run's span from its first to its last logged metric (start-up
left out), mean ± std over a variant's seeds. No raw output records how long the whole
sweep or a lone ``fit`` took from the command line, so no such time is stated. The table
must cover the runs the sweep expands to (one row per variant, its seeds adding up to the
count), or it is refused in one line: a changed sweep needs a new table.
"""

from __future__ import annotations

import re
from pathlib import Path

from roformer_lit.errors import ConfigError
from roformer_lit.results.study.places import REPOSITORY, bench_file
from roformer_lit.results.study.reading import read_text
from roformer_lit.sweep.spec import load_sweep

#: The sweep files of the position-task study, in the checkout.
SWEEPS = REPOSITORY / "configs" / "sweeps"
#: The whole study's grid, and its parts with the committed ``compare`` table of each.
WHOLE = "probes.yaml"
PARTS = {
    "probes_quick.yaml": "cpu-2026-11-24-probes-quick-compare.txt",
    "probes_others.yaml": "cpu-2026-11-24-probes-others-compare.txt",
    "probes_sort.yaml": "cpu-2026-11-24-probes-sort-compare.txt",
}
#: The sweep the README runs, and its table.
SWEEP = SWEEPS / "probes_quick.yaml"
COMPARE_RAW = PARTS["probes_quick.yaml"]
#: The single ``fit`` the README shows: this scheme on this task, ordinary positions.
SCHEME, TASK = "alibi", "copy"
#: The variant grid keys (every grid key but the seed).
VARIANT_KEYS = ("model.position", "data.probe", "data.random_positions")
_SEEDS = re.compile(r"(\d+) \(")
_MEAN_STD = re.compile(r"([0-9.]+) ± ([0-9.]+)")


def sweep_runs(path: Path | None = None) -> tuple[int, str]:
    """The number of runs ``sweep`` expands ``path`` (default :data:`SWEEP`) to, and the
    grid in words (``4 `model.position` × ... = 72 combinations, less 9 its `exclude`
    removes``)."""
    sweep = load_sweep(path or SWEEP, validate=False)
    sizes = [f"{len(values)} `{key}`" for key, values in sweep.grid.items()]
    total = 1
    for values in sweep.grid.values():
        total *= len(values)
    runs = len(sweep.runs)
    less = f", less {total - runs} its `exclude` removes" if total != runs else ""
    return runs, f"{' × '.join(sizes)} = {total} combinations{less}"


def _variants(path: Path) -> int:
    """How many variants (grid combinations but the seed) the sweep ``path`` runs."""
    sweep = load_sweep(path, validate=False)
    return len({tuple(v for k, v in run.values if k in VARIANT_KEYS) for run in sweep.runs})


def _shown(path: Path) -> str:
    return str(path.relative_to(REPOSITORY)) if path.is_relative_to(REPOSITORY) else str(path)


def covered(path: Path, raw: str) -> tuple[int, dict[str, tuple[int, float, float]]]:
    """The runs of sweep ``path`` and the rows of its compare table ``raw``; ConfigError
    naming the table when it does not cover exactly those runs (one row per variant, its
    seeds adding up to the sweep's count)."""
    runs, _ = sweep_runs(path)
    rows = compare_rows(raw)
    seeds = sum(n for n, _, _ in rows.values())
    if seeds != runs or len(rows) != _variants(path):
        raise ConfigError(
            f"{bench_file(raw)}: its table covers {seeds} runs in {len(rows)} variants; "
            f"{_shown(path)} expands to {runs} runs in {_variants(path)}: the table is of "
            "another sweep (rerun it and commit its compare table)"
        )
    return runs, rows


def minutes(rows: dict[str, tuple[int, float, float]]) -> float:
    """The rows' logged wall times added up (each row's mean × its seeds), in minutes."""
    return sum(n * mean for n, mean, _ in rows.values()) / 60


def compare_rows(raw: str = COMPARE_RAW) -> dict[str, tuple[int, float, float]]:
    """``variant -> (seeds, mean wall time s, its std)`` from the ``compare`` table ``raw``;
    ConfigError naming the file and line for a row without them."""
    path = bench_file(raw)
    rows: dict[str, tuple[int, float, float]] = {}
    head: list[str] | None = None
    for number, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.startswith("| ") or line.startswith("| ---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if head is None:
            head = cells
            if "seeds" not in head or "wall time (s)" not in head:
                raise ConfigError(f"{path}: line {number}: no 'seeds' and 'wall time (s)' columns")
            continue
        seeds = _SEEDS.match(cells[head.index("seeds")]) if len(cells) == len(head) else None
        wall = _MEAN_STD.fullmatch(cells[head.index("wall time (s)")]) if seeds else None
        if seeds is None or wall is None:
            raise ConfigError(f"{path}: line {number}: not a row of seeds and wall time: {line!r}")
        if cells[0] in rows:
            raise ConfigError(f"{path}: line {number}: variant {cells[0]!r} a second time")
        rows[cells[0]] = (int(seeds[1]), float(wall[1]), float(wall[2]))
    if not rows:
        raise ConfigError(f"{path}: no compare table")
    return rows


def sentence() -> str:
    """The two commands and, under them, the sweep's count of runs and the times the raw
    output records (see the module docstring)."""
    runs, rows = covered(SWEEP, COMPARE_RAW)
    _, grid = sweep_runs(SWEEP)
    path = bench_file(COMPARE_RAW)
    key = f"{SCHEME}-softmax probe={TASK} random_positions=null"
    if key not in rows:
        raise ConfigError(f"{path}: no row {key!r}")
    seeds, mean, std = rows[key]
    return (
        "```bash\n"
        f"python -m roformer_lit fit --config configs/probes/{TASK}.yaml --model.position {SCHEME}\n"
        f"python -m roformer_lit sweep --config {_shown(SWEEP)} --jobs 2\n"
        "```\n\n"
        f"The sweep is {runs} runs ({grid}, as `sweep` expands it). How long the sweep or a "
        "lone `fit` takes from the command line is in no committed raw output; the sweep's "
        f"`compare` table (`docs/bench/{COMPARE_RAW}`) gives each run's wall time from its "
        f"first to its last logged metric, start-up left out: `{SCHEME}` on `{TASK}` "
        f"(ordinary positions, the sweep's settings) {mean:.1f} ± {std:.1f} s, mean ± std over "
        f"{seeds} seeds; the {runs} runs' times add up to {minutes(rows):.1f} min (each row's mean × "
        "seeds), run on a machine the table does not name."
    )


def guide_sweeps() -> str:
    """The study's sweep files for ``docs/guide/position-tasks.md`` and the study page (region
    ``guide-probe-sweeps``): the whole grid's count, each part's count and the logged wall
    time its committed compare table adds up to; refused when the parts do not add up to the
    whole."""
    whole, grid = sweep_runs(SWEEPS / WHOLE)
    parts = {name: covered(SWEEPS / name, raw) for name, raw in PARTS.items()}
    total = sum(runs for runs, _ in parts.values())
    if total != whole:
        raise ConfigError(
            f"{_shown(SWEEPS)}: {', '.join(PARTS)} expand to {total} runs, {WHOLE} to "
            f"{whole}: the parts no longer split the whole grid"
        )
    each = [f"`{name}` ({runs} runs)" for name, (runs, _) in parts.items()]
    times = [f"{minutes(rows):.1f}" for _, rows in parts.values()]
    tables = ", ".join(f"`docs/bench/{raw}`" for raw in PARTS.values())
    return (
        f"The study's sweep files: `configs/sweeps/{WHOLE}` is the whole grid ({grid}: "
        f"{whole} runs, as `sweep` expands it); {', '.join(each[:-1])} and {each[-1]} split "
        "it into the parts the [position-task study](../studies/position-tasks.md) ran. Their "
        f"committed `compare` tables ({tables}) give each run's wall time from its first to "
        f"its last logged metric, start-up left out: added up, {', '.join(times[:-1])} and "
        f"{times[-1]} run-minutes, on a machine the tables do not name; how long a sweep "
        "takes from the command line, which depends on `--jobs` and on the machine, is in no "
        "committed raw output."
    )
