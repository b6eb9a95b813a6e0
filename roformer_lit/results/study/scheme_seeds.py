"""The scheme study's headline cell at ten seeds and at ten data seeds: regions
``schemes-seeds-*`` and ``schemes-data-*`` of ``docs/studies/position-tasks.md`` (written by
``scripts/study_pages.py``).

The cell: ``reverse``, where ``alibi``, ``kerple`` and ``fire`` stay above the best baseline
past 1× at five seeds, with sized ``t5`` and the ``rope`` reference (:data:`VARIANTS`), each
at the learning rate :func:`~.selected.chosen` picked on seeds 0-4's validation accuracy,
then fixed:

* **ten seeds** (``schemes-seeds-*``): seeds 0-4 are the scheme study's runs
  (:func:`~.selected.study`), seeds 5-9 ``study_schemes_reverse_seeds.yaml``
  (:data:`SEEDS_FILE`), all at ``data.seed`` 0: one test set (their baseline rows must
  equal the study's: :func:`~.seed_study.merge_file`), so the exact sign-flip test can reach
  p = 2 / 2**10;
* **data seeds** (``schemes-data-*``): ``seed_everything`` 0 and ``data.seed`` 0-5 (0: the
  study's seed-0 runs; 1-5: ``study_schemes_reverse_data_seeds.yaml``,
  :data:`DATA_SEEDS_FILE`), each data seed its own training stream and test set, paired by
  data seed (:func:`~.seed_study.by_data_seed`).

A raw output whose runs trained at another rate than the one selected is refused
(ValueError): the fixed rates of the sweep files must be the selection's.
"""

from __future__ import annotations

import re

from roformer_lit.results.study import selected
from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.seed_study import Parse, SeedStudy, by_data_seed, merge_file
from roformer_lit.results.study.words import names

TASK = "reverse"
#: the variants of the cell, as the scheme study's page names them
VARIANTS = ["rope", "alibi", "kerple", "fire", "t5 (num_buckets=136, max_distance=1024)"]
SEEDS_FILE = "cpu-study-schemes-reverse-seeds.csv"
DATA_SEEDS_FILE = "cpu-study-schemes-reverse-data-seeds.csv"
#: data seeds 6-9 of the same sweep, evaluated later into a file of their own
MORE_DATA_SEEDS_FILE = "cpu-study-schemes-reverse-data-seeds-6-9.csv"
_NAME = (
    r"/(?P<scheme>[A-Za-z0-9_.]+)-(?P<options>.+?)-learning_rate(?P<lr>[0-9.e-]+)"
    r"-{seed}(?P<seed>\d+)(?:/|$)"
)
SEEDS_RUN = re.compile("study_schemes_reverse_seeds" + _NAME.format(seed="seed"))
DATA_SEEDS_RUN = re.compile("study_schemes_reverse_data_seeds" + _NAME.format(seed="dataseed"))


def _parser(pattern: re.Pattern[str]) -> Parse:
    """``parse`` of the sweep's run names: (``reverse``, variant, seed), refusing a run at a
    rate the selection did not choose."""

    def parse(name: str) -> tuple[str, str, int] | None:
        match = pattern.search(name)
        if match is None:
            return None
        called = selected.variant(match["scheme"], match["options"])
        if called not in VARIANTS:
            return None
        pick = selected.chosen().get((TASK, called))
        if pick is None or float(match["lr"]) != pick:
            raise ValueError(
                f"{name}: learning rate {match['lr']} is not the one selected on seeds 0-4 "
                f"for `{called}` on `{TASK}` ({pick})"
            )
        return TASK, called, int(match["seed"])

    return parse


def _study_cell() -> SeedStudy:
    """The scheme study's runs of the cell (seeds 0-4, their selected rates)."""
    return selected.study().only(VARIANTS, TASK)


@cached
def seeds_study() -> SeedStudy:
    """The cell at seeds 0-9 (data seed 0); empty until :data:`SEEDS_FILE` exists."""
    study = _study_cell()
    if not study.cells or not merge_file(study, bench_file(SEEDS_FILE), _parser(SEEDS_RUN)):
        return SeedStudy(selected.LENGTHS, selected.REFERENCE)
    return study


@cached
def data_seeds_study() -> SeedStudy:
    """The cell at seed 0 by data seed (0-5, and 6-9 where their file exists), paired by
    data seed."""
    files = [bench_file(DATA_SEEDS_FILE), bench_file(MORE_DATA_SEEDS_FILE)]
    return by_data_seed(_study_cell(), files, _parser(DATA_SEEDS_RUN))


def rerun_variants() -> str:
    """Region ``schemes-seeds-why``: which variants the cell reruns, checked against the
    five-seed table's variants above the best baseline on every seed past 1× (the page
    named them by hand, beside "the variants the README's finding names")."""
    study = selected.study()
    past = selected.LENGTHS[1:]
    above = [
        v for v in study.order.get(TASK, []) if any(study.above_baseline(TASK, v, n) for n in past)
    ]
    rerun = [v for v in VARIANTS if v != selected.REFERENCE and not v.startswith("t5 (")]
    listed = names([f"`{v}`" for v in rerun])
    if sorted(above) == sorted(rerun):
        why = (
            "the variants above the best baseline on every seed past 1× in the five-seed "
            "table, as the README's finding for `reverse` names them"
        )
    else:
        why = (
            "chosen as the variants above the best baseline on every seed past 1× at five "
            "seeds; the five-seed table now names "
            + (names([f"`{v}`" for v in above]) if above else "none")
            + ", which is not the set rerun"
        )
    return (
        f"The cell rerun: `{TASK}` with {listed} ({why}), sized `t5` and the "
        f"`{selected.REFERENCE}` reference."
    )
