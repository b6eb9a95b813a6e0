"""The study pages' figures, drawn by ``scripts/study_pages.py`` from the same cells as the tables.

Each figure is a function returning its plotted values (:data:`Figure`: panels of series,
each a mean with its 95 % t-interval over seeds, and baselines as flat or length-dependent
lines). :func:`sidecars` gives, per figure, the JSON of those values; the command writes it
beside the PNG (``docs/studies/figures/NAME.json``) and ``--check`` compares it with the
file, so a figure whose data changed is stale even where PNG bytes differ between
matplotlib versions. :func:`draw` makes the PNG from the JSON's values alone (Agg backend,
no date or software in its metadata, so one matplotlib version gives the same bytes), and
:func:`write` stamps it with the digests of that JSON and of its own bytes
(:mod:`.stamp`): ``--check`` also fails on a PNG drawn from other values, edited since,
or missing.

* ``schemes``: test accuracy against length per scheme at its selected rate, one panel per
  task (:mod:`.selected`);
* ``budget``: accuracy at 1× against training step, randomized positions off/on, one panel
  per (task, rate, scheme) (:mod:`.budget`);
* ``plans``: accuracy against length per layer plan, one panel per task, with ``recall``
  where all-global RoPE learns 1× (:mod:`.plans`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from roformer_lit.results.statistics import mean_interval
from roformer_lit.results.study import budget, plans, selected
from roformer_lit.results.study.places import PLACES
from roformer_lit.results.study.seed_study import SeedStudy
from roformer_lit.results.study.stamp import problem, stamp

#: A figure's plotted values: ``{"title", "xlabel", "ylabel", "panels": [{"title", "x",
#: "series": [{"label", "mean", "low", "high"}], "baselines": [{"label", "y"}]}]}``.
Figure = dict[str, Any]
DIGITS = 6
#: Written into every sidecar: raise it when :func:`draw` changes, so every PNG is redrawn
#: (a sidecar that differs makes its figure stale).
STYLE = 3
#: A baseline's line style by a word of its label (others dotted).
LINES = {"majority": "--", "relative_place": "-.", "values present": (0, (1, 1, 5, 1))}


def _series(label: str, by_x: list[dict[int, float]]) -> dict[str, Any]:
    means, lows, highs = [], [], []
    for values in by_x:
        interval = mean_interval(list(values.values())).clipped()
        means.append(round(interval.mean, DIGITS))
        lows.append(round(interval.mean if interval.low is None else interval.low, DIGITS))
        highs.append(round(interval.mean if interval.high is None else interval.high, DIGITS))
    return {"label": label, "mean": means, "low": lows, "high": highs}


def _study_panels(study: SeedStudy, label: Callable[[str], str] = str) -> list[dict[str, Any]]:
    panels = []
    for task in study.tasks():
        series = [
            _series(label(name), [study.values(task, name, n) for n in study.lengths])
            for name in study.order[task]
            if all(study.values(task, name, n) for n in study.lengths)
        ]
        rules = sorted({r for t, r, _ in study.baselines if t == task})
        lines = [
            {
                "label": f"baseline: {rule}",
                "y": [round(study.baselines[(task, rule, n)], DIGITS) for n in study.lengths],
            }
            for rule in rules
            if all((task, rule, n) in study.baselines for n in study.lengths)
        ]
        panels.append({"title": task, "x": study.lengths, "series": series, "baselines": lines})
    return panels


def schemes() -> Figure:
    return {
        "title": "Each scheme at its selected learning rate: test accuracy, mean and 95 % "
        "interval over seeds",
        "xlabel": "input length n (trained up to 16)",
        "ylabel": "answer-token accuracy",
        "panels": _study_panels(selected.study()),
    }


def budget_curves() -> Figure:
    cells, baselines = budget.budget_cells()
    panels = []
    for arm in budget.budget_arms():
        task, rate, scheme = arm
        steps = budget.budget_steps(arm)
        series = [
            _series(
                "randomized positions" if on else "ordinary positions",
                [cells[(*arm, on, step, 16, "acc")] for step in steps],
            )
            for on in (False, True)
            if all((*arm, on, step, 16, "acc") in cells for step in steps)
        ]
        lines = [
            {"label": name.replace("baseline:", "baseline: "), "y": [round(v, DIGITS)] * len(steps)}
            for (t, name, n, metric), v in sorted(baselines.items())
            if (t, n, metric) == (task, 16, "acc")
        ]
        panels.append(
            {
                "title": f"{scheme} × {task}, rate {rate:g}",
                "x": steps,
                "series": series,
                "baselines": lines,
            }
        )
    return {
        "title": "Training budget: test accuracy at 1× (n = 16), mean and 95 % interval over seeds",
        "xlabel": "training step",
        "ylabel": "answer-token accuracy",
        "panels": panels,
    }


def plan_comparison() -> Figure:
    panels = _study_panels(plans.study()) + [
        {**panel, "title": f"{panel['title']} (32 symbols; n in key-value pairs)"}
        for panel in _study_panels(plans.recall_short_study())
    ]
    return {
        "title": "Layer plans: test accuracy, mean and 95 % interval over seeds",
        "xlabel": "input length n",
        "ylabel": "answer-token accuracy",
        "panels": panels,
    }


FIGURES: dict[str, Callable[[], Figure]] = {
    "schemes": schemes,
    "budget": budget_curves,
    "plans": plan_comparison,
}


def figure_dir() -> Path:
    return PLACES.pages / "figures"


def sidecars(wanted: list[str]) -> dict[str, str]:
    """Figure name -> the JSON text of its plotted values, for each of ``wanted`` that has
    panels."""
    found = {}
    for name in wanted:
        figure = {"style": STYLE, **FIGURES[name]()}
        if figure["panels"]:
            found[name] = json.dumps(figure, indent=1, ensure_ascii=False) + "\n"
    return found


def draw(figure: Figure, path: Path) -> None:
    """The PNG of ``figure``'s values at ``path`` (Agg, fixed metadata)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = figure["panels"]
    columns = 2 if len(panels) == 4 else min(3, len(panels))
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(
        rows,
        columns,
        figsize=(4.6 * columns + 3.2, 3.4 * rows),
        squeeze=False,
        layout="constrained",
    )
    labels = list(dict.fromkeys(s["label"] for p in panels for s in p["series"]))
    cmap = plt.get_cmap("tab10" if len(labels) <= 10 else "tab20")
    colors = {label: cmap(i % cmap.N) for i, label in enumerate(labels)}
    handles: dict[str, Any] = {}
    for ax, panel in zip(axes.flat, panels, strict=False):
        for series in panel["series"]:
            color = colors[series["label"]]
            (line,) = ax.plot(panel["x"], series["mean"], marker="o", ms=3, color=color)
            ax.fill_between(panel["x"], series["low"], series["high"], color=color, alpha=0.15)
            handles.setdefault(series["label"], line)
        for baseline in panel["baselines"]:
            style = next((s for key, s in LINES.items() if key in baseline["label"]), ":")
            (line,) = ax.plot(panel["x"], baseline["y"], linestyle=style, color="0.15", lw=1.2)
            handles.setdefault(baseline["label"], line)
        ax.set_title(panel["title"], fontsize=9)
        ax.set_xscale("log", base=2)
        ax.set_xticks(panel["x"], [str(x) for x in panel["x"]])
        ax.set_ylim(0, 1.02)
        ax.set_xlabel(figure["xlabel"], fontsize=8)
        ax.set_ylabel(figure["ylabel"], fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels) :]:
        ax.set_visible(False)
    fig.legend(list(handles.values()), list(handles), loc="outside right upper", fontsize=7)
    fig.suptitle(figure["title"], fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90, metadata={"Software": None})
    plt.close(fig)


def stale(wanted: list[str]) -> dict[str, str]:
    """Figure name -> its new JSON, for each of ``wanted`` whose sidecar differs or whose
    PNG is missing or not the drawing of that JSON (:func:`why_stale`)."""
    return {name: text for name, text in sidecars(wanted).items() if why_stale(name, text)}


def why_stale(name: str, text: str) -> str | None:
    """Why figure ``name`` on disk is not the drawing of sidecar ``text``; None if it is."""
    json_path, png = figure_dir() / f"{name}.json", figure_dir() / f"{name}.png"
    current = json_path.read_text(encoding="utf-8") if json_path.is_file() else None
    if current != text:
        return f"{json_path.name}: its plotted values differ from the data's"
    if not png.is_file():
        return f"{png.name}: missing"
    reason = problem(png.read_bytes(), text)
    return None if reason is None else f"{png.name}: {reason}"


def write(name: str, text: str) -> None:
    """Write a figure's PNG, stamped with ``text`` (:mod:`.stamp`), and its sidecar."""
    figure_dir().mkdir(parents=True, exist_ok=True)
    png = figure_dir() / f"{name}.png"
    draw(json.loads(text), png)  # the PNG first: a failed drawing leaves it stale
    png.write_bytes(stamp(png.read_bytes(), text))
    (figure_dir() / f"{name}.json").write_text(text, encoding="utf-8")


def embed(name: str, alt: str, prefix: str = "figures/") -> str:
    """The Markdown image of figure ``name``, with where its plotted values are."""
    return (
        f"![{alt}]({prefix}{name}.png)\n\n"
        f"*Figure drawn by `python scripts/study_pages.py` from the cells of the tables; its "
        f"plotted values are [`{name}.json`]({prefix}{name}.json), compared on `--check`.*"
    )
