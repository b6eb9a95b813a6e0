"""What the seeds of the study sweeps vary: the region ``data-seed`` of every study page.

A run has two seeds: ``seed_everything`` (initialisation, dropout and masking draws) and
``data.seed`` (the generator of the training stream and of the validation and test
sequences, default 0). :func:`data_seed` reads each study sweep of :data:`SWEEPS`
(``configs/sweeps/``): its ``grid`` and ``overrides`` keys and its ``base`` file's
``data.seed``, and states which of the two the seeds vary, so the pages' sentence about it
is checked against the sweep files on every ``--check``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from roformer_lit.results.study.places import REPOSITORY
from roformer_lit.results.study.reading import read_text
from roformer_lit.results.study.words import names
from roformer_lit.safe_input import safe_yaml_load

#: The sweeps behind the study pages' seed tables.
SWEEPS = [
    "study_schemes_selected.yaml",
    "study_budget_lr.yaml",
    "study_plans.yaml",
    "study_plans_recall.yaml",
    "study_plans_recall_short.yaml",
    "study_plans_mlm.yaml",
    "study_plans_recall_placement.yaml",
    "study_plans_recall_seeds.yaml",
    "study_plans_recall_data_seeds.yaml",
    "study_plans_recall_long.yaml",
    "study_plans_last.yaml",
    "study_plans_mlm_last.yaml",
    "study_schemes_reverse_seeds.yaml",
    "study_schemes_reverse_data_seeds.yaml",
    "study_plans_recall_interleave8.yaml",
    "study_plans_mlm_seeds.yaml",
    "study_plans_mlm_data_seeds.yaml",
    "study_plans_recall_long_seeds.yaml",
    "study_plans_recall_long_budget.yaml",
]
#: ``data.seed`` when no file sets it (``PretrainDataModule`` / ``TaskDataModule``).
DEFAULT_DATA_SEED = 0


def _load(path: Path) -> dict[str, Any]:
    return safe_yaml_load(read_text(path)) or {}


def _base_data_seed(sweep: dict[str, Any]) -> int:
    base = sweep.get("base")
    if not base:
        return DEFAULT_DATA_SEED
    data = _load(REPOSITORY / base).get("data") or {}
    return int(data.get("seed", DEFAULT_DATA_SEED))


def data_seeds() -> dict[str, tuple[list[Any], set[int]]]:
    """Sweep file -> (its ``seed_everything`` values, the ``data.seed`` values its runs get)."""
    found = {}
    for name in SWEEPS:
        sweep = _load(REPOSITORY / "configs" / "sweeps" / name)
        grid, overrides = sweep.get("grid") or {}, sweep.get("overrides") or {}
        seeds = list(grid.get("seed_everything", []))
        if "data.seed" in grid:
            data = {int(v) for v in grid["data.seed"]}
        elif "data.seed" in overrides:
            data = {int(overrides["data.seed"])}
        else:
            data = {_base_data_seed(sweep)}
        found[name] = (seeds, data)
    return found


def data_seed() -> str:
    """The sentence: which seeds vary, and what the intervals therefore cover."""
    found = data_seeds()
    shared = sorted(name for name, (_, data) in found.items() if len(data) == 1)
    values = sorted({v for name in shared for v in found[name][1]})
    varied = sorted(set(found) - set(shared))
    text = (
        f"**What the seeds vary.** In {names([f'`{n}`' for n in shared])} the grid varies "
        f"`seed_everything` only; every run has `data.seed` "
        f"{names([str(v) for v in values])}, so all seeds of a cell train on one stream of "
        "sequences and are scored on one test set. The intervals and paired tests here cover "
        "the initialisation and whatever else `seed_everything` seeds, not the data: a difference that holds over seeds may still belong to this one stream and "
        "test set, and another `data.seed` may move every run of a cell together."
    )
    if varied:
        verb = "varies" if len(varied) == 1 else "vary"
        text += f" {names([f'`{n}`' for n in varied])} {verb} `data.seed` as well."
    return text
