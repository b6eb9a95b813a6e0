"""The layer-plan study: the regions ``plans-*`` of ``docs/studies/layer-plans.md``
(written by ``scripts/study_pages.py``).

Runs: ``configs/sweeps/study_plans.yaml`` (four layer plans of a three-layer RoPE encoder ×
task × seeds 0-4, 1,500 steps), one task at a time with ``sweep --only data.probe=TASK``.
Raw outputs read: :data:`TEST_FILES` in ``docs/bench/``, ``extrapolate --split test --csv``
of every run's last checkpoint with the task's ``baseline:<rule>`` rows on the same
sequences. Each plan is compared with all-global RoPE (no plan) by seed
(:class:`~roformer_lit.results.study.seed_study.SeedStudy`).

The ``recall`` slice (regions ``plans-recall-*``) is its own sweep,
``configs/sweeps/study_plans_recall.yaml`` (the same four plans on ``recall`` with 256
symbols, trained at 4-8 key-value pairs, 4,000 steps), read from :data:`RECALL_FILE` at
:data:`RECALL_LENGTHS` pairs; it is its own Holm family. So is the setting all-global RoPE
learns (regions ``plans-recall-short-*``): ``configs/sweeps/study_plans_recall_short.yaml``
(32 symbols, trained at 2-4 pairs), :data:`RECALL_SHORT_FILE` at :data:`RECALL_SHORT_LENGTHS`.

MLM (regions ``plans-mlm-*``): ``configs/sweeps/study_plans_mlm.yaml`` (the quick-start
recipe with the four plans, window 32 of 128 tokens), ``extrapolate --csv`` of every run's
last checkpoint on its own validation text at :data:`MLM_LENGTHS` tokens, with the
``baseline:unigram`` rows (in-sample: shown, never the baseline a finding uses):
masked-token loss, lower is better. The baseline, ``baseline:train_unigram`` (the training
split's unigram), is read from :data:`MLM_TRAIN_UNIGRAM_FILE`: ``extrapolate`` of a 2-step
checkpoint of the same recipe, whose baseline rows depend on the data alone; its in-sample
rows must equal the study file's (the same tokenizer, blocks and masks), or it is refused.
"""

from __future__ import annotations

import re

from roformer_lit.results.statistics import verdict
from roformer_lit.results.study.exact import floor_words
from roformer_lit.results.study.places import bench_file, cached
from roformer_lit.results.study.present import add_present
from roformer_lit.results.study.seed_study import (
    Parse,
    SeedStudy,
    by_data_seed,
    join_cells,
    merge_file,
    read_test_csv,
    renamed,
    run_pattern,
)
from roformer_lit.results.study.words import PROBE_LENGTHS, SOLVED, STUDY_TASKS

TEST_FILES = "cpu-study-plans-{task}.csv"
#: the global-last layout on the tasks (``study_plans_last.yaml``), beside the four plans
LAST_FILES = "cpu-study-plans-last-{task}.csv"
LAST_RUN = run_pattern("study_plans_last", r"(?P<plan>.+?)", STUDY_TASKS)
LAST_PLANS = {"local8x2-global.nope": "local RoPE ×2, global NoPE last (iRoPE / RNoPE order)"}
#: run-name plan label (:func:`roformer_lit.plan_labels.plan_label`) -> what the page calls it
PLANS = {
    "layer_plan=none": "all-global RoPE",
    "global.base160000.0-local8x2": "ModernBERT: global (base 160 K) first, local ×2",
    "global.nope-local8x2": "global NoPE first, local RoPE ×2",
    "local8": "all-local",
}
RUN = run_pattern("study_plans", r"(?P<plan>.+?)", STUDY_TASKS)
RECALL_FILE = "cpu-study-plans-recall.csv"
RECALL_LENGTHS = [8, 16, 32, 64, 128]
#: the symbols of each recall sweep (its ``data.probe_symbols``)
RECALL_SYMBOLS = 256
RECALL_SHORT_SYMBOLS = 32
RECALL_RUN = re.compile(r"study_plans_recall/(?P<plan>.+?)-seed(?P<seed>\d+)(?:/|$)")
RECALL_SHORT_FILE = "cpu-study-plans-recall-short.csv"
RECALL_SHORT_LENGTHS = [4, 8, 16]
RECALL_SHORT_RUN = re.compile(r"study_plans_recall_short/(?P<plan>.+?)-seed(?P<seed>\d+)(?:/|$)")
#: the recall_short sweep's plans: the four, then the windowed two with the global layer last
RECALL_SHORT_PLANS = {
    **PLANS,
    "local8x2-global.base160000.0": "local ×2, global (base 160 K) last",
    "local8x2-global.nope": "local RoPE ×2, global NoPE last (iRoPE / RNoPE order)",
}
MLM_FILE = "cpu-study-plans-mlm.csv"
#: the split the MLM files hold: a corpus run's one held-out split, its validation text
#: (``extrapolate --split test`` is for position tasks only)
MLM_SPLIT = "val"
MLM_LENGTHS = [128, 256, 512, 1024, 2048]
#: What the MLM table calls ``extrapolate``'s ``baseline:unigram`` row: the entropy of the
#: masked tokens' own frequencies on the evaluated blocks, an in-sample reference, not a
#: baseline a model could reach from its training split.
IN_SAMPLE = "in-sample unigram"
#: the training split's unigram (``baseline:train_unigram``): the MLM study's baseline
TRAIN_UNIGRAM = "unigram (training split)"
#: ``extrapolate``'s MLM baseline rules -> what the MLM tables call them
MLM_RULES = {"unigram": IN_SAMPLE, "train_unigram": TRAIN_UNIGRAM}
MLM_TRAIN_UNIGRAM_FILE = "cpu-2026-11-27-mlm-train-unigram.csv"
#: the MLM sweep's plan labels (four layers: ModernBERT's global layers are the first and last)
MLM_PLANS = {
    "layer_plan=none": PLANS["layer_plan=none"],
    "global.base160000.0-local32x2-global.base160000.0": "ModernBERT: global (base 160 K), local ×2, global",
    "global.nope-local32x2-global.nope": "global NoPE, local RoPE ×2, global NoPE",
    "local32": "all-local",
}
MLM_RUN = re.compile(r"study_plans_mlm/seed(?P<seed>\d+)-(?P<plan>.+?)(?:/|$)")
#: the global-last layout on MLM (``study_plans_mlm_last.yaml``)
MLM_LAST_FILE = "cpu-study-plans-mlm-last.csv"
MLM_LAST_RUN = re.compile(r"study_plans_mlm_last/seed(?P<seed>\d+)-(?P<plan>.+?)(?:/|$)")
MLM_LAST_PLANS = {"local32x3-global.nope": "local RoPE ×3, global NoPE last (1:3)"}
#: seeds 5-9 of all-global RoPE and the 1:3 layout (``study_plans_mlm_seeds.yaml``)
MLM_SEEDS_FILE = "cpu-study-plans-mlm-seeds.csv"
MLM_SEEDS_RUN = re.compile(r"study_plans_mlm_seeds/seed(?P<seed>\d+)-(?P<plan>.+?)(?:/|$)")
#: data seeds 1-5 of the same pair at seed 0 (``study_plans_mlm_data_seeds.yaml``)
MLM_DATA_SEEDS_FILE = "cpu-study-plans-mlm-data-seeds.csv"
MLM_DATA_SEEDS_RUN = re.compile(
    r"study_plans_mlm_data_seeds/dataseed(?P<seed>\d+)-(?P<plan>.+?)(?:/|$)"
)
MLM_SEEDS_PLANS = {
    "layer_plan=none": MLM_PLANS["layer_plan=none"],
    **MLM_LAST_PLANS,
}


def spelled_today(label: str) -> str:
    """A plan label with its integral numbers spelled as run names spell them since
    2026-11-27 (``160000.0`` -> ``160000``): the raw outputs keep the names they had, and a
    rerun sweep's runs are read as the same plans."""
    return re.sub(r"(\d+)\.0(?=-|$|\.|x)", r"\1", label)


def plan_called(plans: dict[str, str], label: str) -> str | None:
    """What the page calls the run's plan ``label``, in either spelling (None: not a plan
    of the study)."""
    if label in plans:
        return plans[label]
    today = {spelled_today(known): name for known, name in plans.items()}
    return today.get(spelled_today(label))


def _task_parser(pattern: re.Pattern[str], plans: dict[str, str]) -> Parse:
    """``parse`` for a sweep over the tasks whose run names hold ``plan``, ``task``, ``seed``."""

    def parse(name: str) -> tuple[str, str, int] | None:
        match = pattern.search(name)
        called = None if match is None else plan_called(plans, match["plan"])
        if called is None:
            return None
        return match["task"], called, int(match["seed"])

    return parse


_parse = _task_parser(RUN, PLANS)


def one_task_parser(pattern: re.Pattern[str], task: str, plans: dict[str, str]) -> Parse:
    """``parse`` for a one-task sweep whose run names hold ``plan`` and ``seed`` groups."""

    def parse(name: str) -> tuple[str, str, int] | None:
        match = pattern.search(name)
        called = None if match is None else plan_called(plans, match["plan"])
        if called is None:
            return None
        return task, called, int(match["seed"])

    return parse


def _study(
    lengths: list[int],
    files: dict[str, str],
    parse: Parse,
    plans: dict[str, str] = PLANS,
    metric: str = "acc",
    length_name: str = "n",
    split: str = "test",
) -> SeedStudy:
    """The plans against all-global RoPE over the tasks whose ``files[task]`` exist."""
    result = SeedStudy(
        lengths, plans["layer_plan=none"], metric=metric, length_name=length_name, split=split
    )
    for task, name in files.items():
        path = bench_file(name)
        if path.is_file():
            cells, baselines = read_test_csv(path, parse, metric, split)
            join_cells(result.cells, cells, str(path))
            result.baselines.update(baselines)
            result.order[task] = list(plans.values())
    return result


@cached
def study() -> SeedStudy:
    """The four position tasks (regions ``plans-*``), with the global-last layout where its
    raw outputs exist (the same setting and seeds: :func:`~.seed_study.merge_file`)."""
    result = _study(PROBE_LENGTHS, {t: TEST_FILES.format(task=t) for t in STUDY_TASKS}, _parse)
    for task in result.tasks():
        if merge_file(
            result, bench_file(LAST_FILES.format(task=task)), _task_parser(LAST_RUN, LAST_PLANS)
        ):
            result.order[task] = [*result.order[task], *LAST_PLANS.values()]
    return result


@cached
def recall_study() -> SeedStudy:
    """``recall`` at longer contexts (regions ``plans-recall-*``), its own Holm family."""
    result = _study(
        RECALL_LENGTHS, {"recall": RECALL_FILE}, one_task_parser(RECALL_RUN, "recall", PLANS)
    )
    add_present(result.baselines, RECALL_SYMBOLS, RECALL_LENGTHS, RECALL_FILE)
    return result


@cached
def recall_short_study() -> SeedStudy:
    """``recall`` where all-global RoPE learns 1× (regions ``plans-recall-short-*``)."""
    parse = one_task_parser(RECALL_SHORT_RUN, "recall", RECALL_SHORT_PLANS)
    result = _study(RECALL_SHORT_LENGTHS, {"recall": RECALL_SHORT_FILE}, parse, RECALL_SHORT_PLANS)
    add_present(result.baselines, RECALL_SHORT_SYMBOLS, RECALL_SHORT_LENGTHS, RECALL_SHORT_FILE)
    return result


@cached
def mlm_study() -> SeedStudy:
    """MLM on the bundled corpus (regions ``plans-mlm-*``): loss, lower is better, with the
    global-last layout where its raw output exists and the training split's unigram as the
    baseline (the in-sample unigram a reference only)."""
    parse = one_task_parser(MLM_RUN, "mlm", MLM_PLANS)
    result = _study(MLM_LENGTHS, {"mlm": MLM_FILE}, parse, MLM_PLANS, "loss", "L", MLM_SPLIT)
    if not result.tasks():
        return result
    last = one_task_parser(MLM_LAST_RUN, "mlm", MLM_LAST_PLANS)
    if merge_file(result, bench_file(MLM_LAST_FILE), last, "loss"):
        result.order["mlm"] = [*result.order["mlm"], *MLM_LAST_PLANS.values()]
    path = bench_file(MLM_TRAIN_UNIGRAM_FILE)
    if path.is_file():  # its one run is a 2-step model: only its baseline rows are read
        _, rows = read_test_csv(path, lambda name: ("mlm", name, 0), "loss", MLM_SPLIT)
        for key, value in rows.items():
            if result.baselines.setdefault(key, value) != value:
                raise ValueError(
                    f"{MLM_TRAIN_UNIGRAM_FILE}: its {key[1]} at L={key[2]} is {value}, not "
                    f"{result.baselines[key]}: it was scored on other blocks or masks"
                )
    result.baselines = renamed(result.baselines, MLM_RULES)
    result.references = (IN_SAMPLE,)
    return result


def _mlm_pair() -> SeedStudy:
    """:func:`mlm_study`'s runs of all-global RoPE and the 1:3 layout (seeds 0-4)."""
    return mlm_study().only(list(MLM_SEEDS_PLANS.values()))


@cached
def mlm_seeds_study() -> SeedStudy:
    """MLM's headline pair at seeds 0-9 (regions ``plans-mlm-seeds-*``): all-global RoPE and
    the 1:3 layout, seeds 0-4 from :func:`mlm_study`'s runs, 5-9 from
    :data:`MLM_SEEDS_FILE` (the same blocks and masks: its baselines must equal), their own
    Holm family; empty until that file exists."""
    study = _mlm_pair()
    parse = one_task_parser(MLM_SEEDS_RUN, "mlm", MLM_SEEDS_PLANS)
    if not study.cells or not merge_file(
        study, bench_file(MLM_SEEDS_FILE), parse, "loss", MLM_RULES
    ):
        return SeedStudy(
            MLM_LENGTHS, study.reference, metric="loss", length_name="L", split=MLM_SPLIT
        )
    return study


@cached
def mlm_data_seeds_study() -> SeedStudy:
    """MLM's headline pair at seed 0 by data seed 0-5 (regions ``plans-mlm-data-*``): data
    seed 0 is :func:`mlm_study`'s seed-0 runs, 1-5 :data:`MLM_DATA_SEEDS_FILE`'s, paired by
    data seed; baselines the mean over the six data seeds' masks."""
    return by_data_seed(
        _mlm_pair(),
        bench_file(MLM_DATA_SEEDS_FILE),
        one_task_parser(MLM_DATA_SEEDS_RUN, "mlm", MLM_SEEDS_PLANS),
        rules=MLM_RULES,
    )


def recall_order() -> str:
    """Region ``plans-recall-order``: per plan of the ``recall`` setting all-global RoPE
    learns, the longest length solved on every seed, whether every seed is below the best
    baseline at 1×, and what the paired tests can say about the ordering."""
    study = recall_short_study()
    if not study.tasks():
        return "_Not run yet._"
    first, last = study.lengths[0], study.lengths[-1]
    rows = []
    for name in study.order["recall"]:
        solved = [
            n
            for n in study.lengths
            if study.solved("recall", name, n)[0] == study.solved("recall", name, n)[1] > 0
        ]
        longest = study.times(max(solved)) if solved else "none"
        below = (
            " (every seed below the best baseline at 1×: the lookup is not learnt)"
            if study.below_baseline("recall", name, first)
            else ""
        )
        rows.append(f"`{name}`: {longest}{below}")
    separated = [key for key, (_, _, p) in study.pairs.items() if verdict(p) != "n.s."]
    seeds = min(len(a) for a, _, _ in study.pairs.values())
    tested = (
        f"{len(separated)} of {len(study.pairs)} paired cells against `{study.reference}` are "
        "separated after Holm"
        if separated
        else f"No paired cell against `{study.reference}` is separated (with {seeds} seeds "
        f"{floor_words(seeds, len(study.pairs))}), so this ordering rests on solved counts "
        "over seeds, not on a test"
    )
    return (
        f"Longest length solved on every seed (exact match ≥ {SOLVED}), of "
        f"{', '.join(study.times(n) for n in study.lengths)}; 16 keys cap the test at "
        f"{study.times(last)}: " + "; ".join(rows) + f". {tested}."
    )
