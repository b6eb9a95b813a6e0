"""Probe accuracy against MLM loss: does a scheme's rank on the position tasks follow its
rank in the MLM positions sweep? Region ``bridge`` of ``docs/studies/position-tasks.md``."""

from __future__ import annotations

import statistics

from roformer_lit.results.statistics import mean_interval, spearman
from roformer_lit.results.study import selected
from roformer_lit.results.study.mlm import SEEDS, mlm_losses
from roformer_lit.results.study.t_basis import head
from roformer_lit.results.study.words import names


def bridge() -> str:
    """Probe accuracy (each scheme at its selected learning rate, test sequences) against the
    MLM validation loss of the positions sweep (600 steps, seeds 0-2), at 1× (probe n = 16,
    MLM L = 128) and at 4× (n = 64, L = 512), per task and averaged over the tasks run:
    Spearman's ρ with its interval and p-value; then the numbers it is computed from."""
    tasks = selected.tasks()
    if not tasks:
        return "_No slice of the scheme study has been run yet._"
    first = selected.LENGTHS[0]
    scales = [(1, first, 128), (4, 4 * first, 512)]

    def variant_of(task: str, scheme: str) -> str | None:
        names_ = selected.variants(task)
        if scheme in names_:
            return scheme
        sized = [v for v in names_ if v.startswith(f"{scheme} (")]
        return sized[0] if len(sized) == 1 else None

    def probe_acc(scheme: str, task_list: list[str], n: int) -> float | None:
        accs = []
        for t in task_list:
            name = variant_of(t, scheme)
            values = selected.reported(t, name, n) if name else {}
            if not values:
                return None
            accs.append(statistics.fmean(values.values()))
        return statistics.fmean(accs)

    groups = [*tasks, "mean"] if len(tasks) > 1 else tasks
    rows = []
    for times, n, length in scales:
        losses = mlm_losses(length)
        for task in groups:
            pairs = []
            for scheme in losses:
                acc = probe_acc(scheme, tasks if task == "mean" else [task], n)
                if acc is not None:
                    pairs.append((acc, statistics.fmean(losses[scheme])))
            if len(pairs) < 4:
                continue
            result = spearman([a for a, _ in pairs], [b for _, b in pairs])
            label = f"`{task}`" if task != "mean" else f"mean of {names([f'`{t}`' for t in tasks])}"
            holds = (
                "holds 0: no evidence either way"
                if result.low <= 0.0 <= result.high
                else "excludes 0"
            )
            rows.append(
                f"| {times}× (n={n}; MLM L={length}) | {label} | {result.text()} | {holds} |"
            )
    beside = []
    for scheme in mlm_losses(128):
        cells = []
        for _, n, _length in scales:
            acc = probe_acc(scheme, tasks, n)
            cells.append("–" if acc is None else f"{acc:.3f}")
        for _, _, length in scales:
            values = mlm_losses(length).get(scheme)
            cells.append("–" if values is None else mean_interval(values).text())
        beside.append(f"| `{scheme}` | " + " | ".join(cells) + " |")
    task_list = names([f"`{t}`" for t in tasks])
    return "\n".join(
        [
            "| length | probe accuracy | rank correlation with MLM val/loss (600 steps) | "
            "interval |",
            "|---|---|---|---|",
            *rows,
            "",
            f"| scheme | probe accuracy at 1×, mean of {task_list} | at 4× | MLM val/loss at "
            f"L=128 (1×), {head(len(SEEDS))} over seeds {SEEDS[0]}–{SEEDS[-1]} | at L=512 (4×) |",
            "|---|---|---|---|---|",
            *beside,
        ]
    )
