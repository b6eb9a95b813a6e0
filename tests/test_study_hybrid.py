"""The hybrid-result slices of the layer-plan page, read from synthetic raw outputs.

Oracles: the numbers written into the synthetic files (each cell's seeds, the baselines'
weighted mean computed by hand), the exact test's floor at ten seeds, and refusals of a file
scored on other sequences.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from roformer_lit.results.study import hybrid, places
from roformer_lit.results.study.exact import smallest_p

SHORT = "runs/study_plans_recall_short/{plan}-seed{seed}/checkpoints/last.ckpt"
SEEDS = "runs/study_plans_recall_seeds/{plan}-seed{seed}/checkpoints/last.ckpt"
DATA = "runs/study_plans_recall_data_seeds/{plan}-dataseed{seed}/checkpoints/last.ckpt"
LONG = "runs/study_plans_recall_long/{plan}-seed{seed}/checkpoints/last.ckpt"
LENGTHS = (4, 8, 16)


def _real_majority(file_name: str = hybrid.RECALL_SHORT_FILE) -> dict[int, str]:
    """A setting's majority baseline per length, as its raw output holds it (the present-
    values baseline regenerates the real test sequences and checks against it)."""
    real = places.REPOSITORY / "docs" / "bench" / file_name
    return {
        int(line.split(",")[1]): line.split(",")[3]
        for line in real.read_text().splitlines()
        if line.startswith("baseline:majority") and ",acc," in line
    }


def _rows(pattern: str, values: dict[tuple[str, int], float], baseline, lengths=LENGTHS):
    """An ``extrapolate --csv`` file: ``baseline`` one value, or one per length."""
    if not isinstance(baseline, dict):
        baseline = dict.fromkeys(lengths, baseline)
    lines = ["name,length,metric,value"]
    for (plan, seed), value in values.items():
        for n in lengths:
            name = pattern.format(plan=plan, seed=seed)
            lines += [f"{name},{n},acc,{value}", f"{name},{n},exact,{value}"]
    for n in lengths:
        lines += [f"baseline:majority,{n},acc,{baseline[n]}", f"baseline:majority,{n},exact,0.0"]
    return "\n".join(lines) + "\n"


@pytest.fixture
def bench(tmp_path: Path):
    pages = tmp_path / "pages"
    pages.mkdir()
    places.read_from(tmp_path, pages)
    yield tmp_path
    places.read_from(places.REPOSITORY / "docs" / "bench", places.REPOSITORY / "docs" / "studies")


def _short(bench: Path, baseline=None) -> None:
    baseline = _real_majority() if baseline is None else baseline
    values = {("layer_plan=none", s): 0.5 for s in range(5)}
    values |= {("local8x2-global.nope", s): 0.9 for s in range(5)}
    (bench / hybrid.RECALL_SHORT_FILE).write_text(_rows(SHORT, values, baseline))


def test_ten_seeds_join_the_first_five_and_can_be_separated(bench: Path):
    _short(bench)
    values = {("layer_plan=none", s): 0.5 for s in range(5, 10)}
    values |= {("local8x2-global.nope", s): 0.9 for s in range(5, 10)}
    (bench / hybrid.SEEDS_FILE).write_text(_rows(SEEDS, values, _real_majority()))
    study = hybrid.seeds_study()
    assert study.values("recall", hybrid.LAST, 4) == {s: 0.9 for s in range(10)}
    ref, other, p = study.pairs[("recall", hybrid.LAST, 4)]
    assert len(ref) == len(other) == 10
    # every seed on one side: the exact floor, Holm over three cells
    assert p == pytest.approx(min(1.0, 3 * smallest_p(10)))
    assert p < 0.05


def test_a_file_scored_on_other_sequences_is_refused(bench: Path):
    _short(bench)
    other = {n: float(v) + 0.01 for n, v in _real_majority().items()}
    values = {("layer_plan=none", 5): 0.5, ("local8x2-global.nope", 5): 0.9}
    (bench / hybrid.SEEDS_FILE).write_text(_rows(SEEDS, values, other))
    with pytest.raises(ValueError, match="other test sequences"):
        hybrid.seeds_study()


def test_data_seeds_pair_by_data_seed_and_average_the_test_sets(bench: Path):
    _short(bench, baseline=0.3)
    values = {("layer_plan=none", s): 0.4 for s in range(1, 6)}
    values |= {("local8x2-global.nope", s): 0.8 for s in range(1, 6)}
    (bench / hybrid.DATA_SEEDS_FILE).write_text(_rows(DATA, values, 0.36))
    study = hybrid.data_seeds_study()
    assert study.values("recall", hybrid.REFERENCE, 8) == {
        0: 0.5,
        1: 0.4,
        2: 0.4,
        3: 0.4,
        4: 0.4,
        5: 0.4,
    }
    # the file's baseline is the mean over its five test sets; data seed 0's is 0.3
    assert study.baselines[("recall", "majority", 8)] == pytest.approx((5 * 0.36 + 0.3) / 6)
    assert len(study.pairs[("recall", hybrid.LAST, 8)][0]) == 6


def test_the_placement_family_holds_the_setting_runs_and_the_new_plans(bench: Path):
    real = places.REPOSITORY / "docs" / "bench" / hybrid.RECALL_SHORT_FILE
    shutil.copy(real, bench / hybrid.RECALL_SHORT_FILE)
    majority = _real_majority()
    lines = ["name,length,metric,value"]
    for label in hybrid.PLACEMENT_PLANS:
        for seed in range(5):
            for n in LENGTHS:
                name = f"runs/study_plans_recall_placement/{label}-seed{seed}/checkpoints/last.ckpt"
                lines += [f"{name},{n},acc,0.7", f"{name},{n},exact,0.7"]
    lines += [f"baseline:majority,{n},acc,{majority[n]}" for n in LENGTHS]
    (bench / hybrid.PLACEMENT_FILE).write_text("\n".join(lines) + "\n")
    study = hybrid.placement_study()
    assert study.order["recall"][:3] == [hybrid.REFERENCE, hybrid.FIRST, hybrid.LAST]
    assert set(study.order["recall"][3:]) == set(hybrid.PLACEMENT_PLANS.values())
    for name in hybrid.PLACEMENT_PLANS.values():
        assert study.values("recall", name, 16) == {s: 0.7 for s in range(5)}
    assert "No slice" not in study.table()


def test_the_long_pilot_says_what_one_seed_shows(bench: Path):
    lengths = tuple(hybrid.LONG_LENGTHS)
    values = {("layer_plan=none", 0): 0.2, ("local8x2-global.nope", 0): 0.95}
    majority = _real_majority(hybrid.LONG_FILE)  # the present-values rule checks against it
    (bench / hybrid.LONG_FILE).write_text(_rows(LONG, values, majority, lengths))
    text = hybrid.long_findings()
    assert f"`{hybrid.LAST}` solves up to n=64 (16×)" in text
    assert f"`{hybrid.REFERENCE}` solves no length" in text
    assert f"not above the best baseline ({float(majority[4]):.3f})" in text
    assert "0.950 (exact 0.950) · solved" in hybrid.long_table()


def test_nothing_run_says_so(bench: Path):
    for region in (hybrid.long_table, lambda: hybrid.seeds_study().table()):
        assert region().startswith("_No slice")


def test_the_readme_row_states_the_ten_seed_comparison(bench: Path):
    from roformer_lit.results.study import readme

    _short(bench)
    values = {("layer_plan=none", s): 0.5 for s in range(5, 10)}
    values |= {("local8x2-global.nope", s): 0.9 for s in range(5, 10)}
    (bench / hybrid.SEEDS_FILE).write_text(_rows(SEEDS, values, _real_majority()))
    row = next(line for line in readme.findings().splitlines() if "recall: ten seeds" in line)
    assert f"`{hybrid.LAST}` minus `{hybrid.REFERENCE}`" in row
    assert "+0.400" in row and "10↑0↓" in row
    assert "3 of 3 paired cells separated after Holm" in row


def test_the_global_last_layout_joins_the_task_and_mlm_tables(bench: Path):
    from roformer_lit.results.study import plans

    lines = ["name,length,metric,value"]
    last = ["name,length,metric,value"]
    for seed in range(5):
        name = f"runs/study_plans/layer_plan=none-copy-seed{seed}/checkpoints/last.ckpt"
        lines += [f"{name},{n},acc,0.5" for n in (16, 32, 64)]
        name = f"runs/study_plans_last/local8x2-global.nope-copy-seed{seed}/checkpoints/last.ckpt"
        last += [f"{name},{n},acc,0.6" for n in (16, 32, 64)]
    for rows in (lines, last):
        rows += [f"baseline:majority,{n},acc,0.2" for n in (16, 32, 64)]
    (bench / plans.TEST_FILES.format(task="copy")).write_text("\n".join(lines) + "\n")
    (bench / plans.LAST_FILES.format(task="copy")).write_text("\n".join(last) + "\n")
    study = plans.study()
    name = plans.LAST_PLANS["local8x2-global.nope"]
    assert study.order["copy"][-1] == name
    assert study.values("copy", name, 32) == {s: 0.6 for s in range(5)}
    assert ("copy", name, 32) in study.pairs


def test_an_mlm_file_scored_on_other_blocks_is_refused(bench: Path):
    from roformer_lit.results.study import plans

    def rows(path: str, plan: str, unigram: float) -> str:
        out = ["name,length,metric,value"]
        out += [f"runs/{path}/seed{s}-{plan}/checkpoints/last.ckpt,128,loss,4.5" for s in range(5)]
        return "\n".join([*out, f"baseline:unigram,128,loss,{unigram}"]) + "\n"

    (bench / plans.MLM_FILE).write_text(rows("study_plans_mlm", "layer_plan=none", 5.5))
    (bench / plans.MLM_LAST_FILE).write_text(
        rows("study_plans_mlm_last", "local32x3-global.nope", 5.6)
    )
    with pytest.raises(ValueError, match="other test sequences"):
        plans.mlm_study()


def test_a_variant_missing_a_length_shows_a_dash(bench: Path):
    from roformer_lit.results.study.seed_study import SeedStudy

    study = SeedStudy([16, 32], "ref")
    for name, value in (("ref", 0.5), ("other", 0.7)):
        for seed in range(3):
            study.cells.setdefault(("copy", name, 16, "acc"), {})[seed] = value
    study.cells[("copy", "ref", 32, "acc")] = {0: 0.4, 1: 0.4, 2: 0.4}
    study.order["copy"] = ["ref", "other"]
    row = next(line for line in study.pairs_table().splitlines() if "`other`" in line)
    assert row.rstrip().endswith("| – |")
