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
LONG_SEEDS = "runs/study_plans_recall_long_seeds/{plan}-seed{seed}/checkpoints/last.ckpt"
INTERLEAVE8 = "runs/study_plans_recall_interleave8/{plan}-seed{seed}/checkpoints/last.ckpt"
LENGTHS = (4, 8, 16)
MLM_LENGTHS = (128, 256, 512, 1024, 2048)


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
def bench(study_bench: Path) -> Path:
    return study_bench


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
    assert f"`{hybrid.LAST}`: solves up to n=64 (16×) on its one seed" in text
    assert f"`{hybrid.REFERENCE}`: solves no length" in text
    assert f"not above the best baseline (`majority`, {float(majority[4]):.3f})" in text
    assert "0.950 (exact 0.950) · 1/1 solved" in hybrid.long_table()


def test_the_long_pilot_counts_every_seed_and_its_floor(bench: Path):
    lengths = tuple(hybrid.LONG_LENGTHS)
    majority = _real_majority(hybrid.LONG_FILE)
    first = {("layer_plan=none", 0): 0.2, ("local8x2-global.nope", 0): 0.95}
    (bench / hybrid.LONG_FILE).write_text(_rows(LONG, first, majority, lengths))
    more = {("layer_plan=none", 1): 0.3, ("layer_plan=none", 2): 0.3}
    more |= {("local8x2-global.nope", 1): 0.95, ("local8x2-global.nope", 2): 0.5}
    (bench / hybrid.LONG_SEEDS_FILE).write_text(_rows(LONG_SEEDS, more, majority, lengths))
    assert hybrid.long_seeds() == 3
    table = hybrid.long_table()
    # the mean over three seeds, each seed's value, and one seed of three not solving
    assert f"{(0.95 + 0.95 + 0.5) / 3:.3f}: 0.950 (exact 0.950), 0.950" in table
    assert "2/3 solved" in table
    text = hybrid.long_findings()
    assert (
        f"3 seeds for each 16,000-step plan: the exact paired test cannot go below p = {smallest_p(3):.4g}"
        in text
    )
    assert (
        f"`{hybrid.LAST}`: no length is solved on all 3 seeds; on some seeds: n=4 (1×) 2/3" in text
    )


def test_a_long_seeds_file_scored_on_other_sequences_is_refused(bench: Path):
    lengths = tuple(hybrid.LONG_LENGTHS)
    majority = _real_majority(hybrid.LONG_FILE)
    (bench / hybrid.LONG_FILE).write_text(
        _rows(LONG, {("layer_plan=none", 0): 0.2}, majority, lengths)
    )
    other = {n: float(v) + 0.01 for n, v in majority.items()}
    (bench / hybrid.LONG_SEEDS_FILE).write_text(
        _rows(LONG_SEEDS, {("layer_plan=none", 1): 0.2}, other, lengths)
    )
    with pytest.raises(ValueError, match="other test sequences"):
        hybrid.long_study()


def test_the_interleave_at_eight_layers_is_its_own_family(bench: Path):
    values = {("layer_plan=none", s): 0.4 for s in range(5)}
    values |= {("local8x3-global.nope", s): 0.95 for s in range(5)}
    (bench / hybrid.INTERLEAVE8_FILE).write_text(_rows(INTERLEAVE8, values, _real_majority()))
    study = hybrid.interleave8_study()
    reference, interleave = hybrid.INTERLEAVE8_PLANS.values()
    assert study.reference == reference
    assert study.order["recall"] == [reference, interleave]
    assert study.solved("recall", interleave, 16) == (5, 5)
    assert set(study.pairs) == {("recall", interleave, n) for n in LENGTHS}
    # every seed on one side, five seeds: the floor, Holm over three cells
    assert study.pairs[("recall", interleave, 8)][2] == pytest.approx(3 * smallest_p(5))
    assert ("recall", "values present", 4) in study.baselines


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


def _mlm_rows(path: str, values: dict[tuple[str, int], float], unigram: float) -> str:
    out = ["name,length,metric,value"]
    for n in MLM_LENGTHS:
        for (plan, seed), value in values.items():
            out.append(f"runs/{path}/seed{seed}-{plan}/checkpoints/last.ckpt,{n},loss,{value}")
        out += [f"baseline:unigram,{n},loss,{unigram}", f"baseline:train_unigram,{n},loss,6.6"]
    return "\n".join(out) + "\n"


def test_mlm_ten_seeds_pair_the_two_plans_only(bench: Path):
    from roformer_lit.results.study import plans

    first = {("layer_plan=none", s): 4.5 for s in range(5)}
    first |= {("local32x2-global.nope", s): 4.4 for s in range(5)}  # not a plan of the pair
    (bench / plans.MLM_FILE).write_text(_mlm_rows("study_plans_mlm", first, 5.5))
    last = {("local32x3-global.nope", s): 4.2 for s in range(5)}
    (bench / plans.MLM_LAST_FILE).write_text(_mlm_rows("study_plans_mlm_last", last, 5.5))
    assert not plans.mlm_seeds_study().tasks()
    more = {("layer_plan=none", s): 4.6 for s in range(5, 10)}
    more |= {("local32x3-global.nope", s): 4.3 for s in range(5, 10)}
    (bench / plans.MLM_SEEDS_FILE).write_text(_mlm_rows("study_plans_mlm_seeds", more, 5.5))
    places.read_from(bench, bench / "pages")
    study = plans.mlm_seeds_study()
    one_three = plans.MLM_LAST_PLANS["local32x3-global.nope"]
    assert study.order["mlm"] == [plans.MLM_PLANS["layer_plan=none"], one_three]
    assert study.values("mlm", one_three, 128) == {s: 4.2 for s in range(5)} | {
        s: 4.3 for s in range(5, 10)
    }
    ref, other, p = study.pairs[("mlm", one_three, 128)]
    assert len(ref) == 10 and p == pytest.approx(len(MLM_LENGTHS) * smallest_p(10))
    assert "separated lower (better)" in study.findings()


def test_mlm_ten_seeds_scored_on_other_blocks_are_refused(bench: Path):
    from roformer_lit.results.study import plans

    first = {("layer_plan=none", s): 4.5 for s in range(5)}
    (bench / plans.MLM_FILE).write_text(_mlm_rows("study_plans_mlm", first, 5.5))
    more = {("layer_plan=none", s): 4.6 for s in range(5, 10)}
    (bench / plans.MLM_SEEDS_FILE).write_text(_mlm_rows("study_plans_mlm_seeds", more, 5.7))
    with pytest.raises(ValueError, match="other test sequences"):
        plans.mlm_seeds_study()


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


def test_mlm_data_seeds_pair_by_data_seed_with_the_baselines_named_as_the_table(bench: Path):
    from roformer_lit.results.study import plans

    first = {("layer_plan=none", s): 4.5 for s in range(5)}
    (bench / plans.MLM_FILE).write_text(_mlm_rows("study_plans_mlm", first, 5.5))
    last = {("local32x3-global.nope", s): 4.2 for s in range(5)}
    (bench / plans.MLM_LAST_FILE).write_text(_mlm_rows("study_plans_mlm_last", last, 5.5))
    runs = ["name,length,metric,value"]
    for n in MLM_LENGTHS:
        for seed in range(1, 6):
            for plan, value in (("layer_plan=none", 4.7), ("local32x3-global.nope", 4.1)):
                name = (
                    f"runs/study_plans_mlm_data_seeds/dataseed{seed}-{plan}/checkpoints/last.ckpt"
                )
                runs.append(f"{name},{n},loss,{value}")
        runs += [f"baseline:unigram,{n},loss,5.8", f"baseline:train_unigram,{n},loss,6.9"]
    (bench / plans.MLM_DATA_SEEDS_FILE).write_text("\n".join(runs) + "\n")
    study = plans.mlm_data_seeds_study()
    one_three = plans.MLM_LAST_PLANS["local32x3-global.nope"]
    assert study.values("mlm", one_three, 512) == {0: 4.2} | {s: 4.1 for s in range(1, 6)}
    # the file's rows are renamed as the table names them, then averaged with data seed 0's
    assert study.baselines[("mlm", plans.TRAIN_UNIGRAM, 512)] == pytest.approx((5 * 6.9 + 6.6) / 6)
    assert study.baselines[("mlm", plans.IN_SAMPLE, 512)] == pytest.approx((5 * 5.8 + 5.5) / 6)
    assert study.best_baseline("mlm", 512)[0] == plans.TRAIN_UNIGRAM
    assert len(study.pairs[("mlm", one_three, 128)][0]) == 6


def test_the_long_budget_run_joins_the_pilot_as_its_own_row(bench: Path):
    lengths = tuple(hybrid.LONG_LENGTHS)
    majority = _real_majority(hybrid.LONG_FILE)
    first = {("layer_plan=none", 0): 0.2, ("local8x2-global.nope", 0): 0.95}
    (bench / hybrid.LONG_FILE).write_text(_rows(LONG, first, majority, lengths))
    budget = "runs/study_plans_recall_long_budget/{plan}-seed{seed}/checkpoints/last.ckpt"
    (bench / hybrid.LONG_BUDGET_FILE).write_text(
        _rows(budget, {("layer_plan=none", 0): 0.97}, majority, lengths)
    )
    study = hybrid.long_study()
    assert study.order["recall"] == [hybrid.REFERENCE, hybrid.LAST, hybrid.LONG_BUDGET]
    # the budget run is its own row, never a seed of the 16,000-step reference
    assert study.values("recall", hybrid.REFERENCE, 4) == {0: 0.2}
    assert study.values("recall", hybrid.LONG_BUDGET, 4) == {0: 0.97}
    assert f"`{hybrid.LONG_BUDGET}` | 0.970 (exact 0.970) · 1/1 solved" in hybrid.long_table()
    reach = hybrid.long_reach()
    assert reach[hybrid.LONG_BUDGET] == "solves up to n=64 (16×) on its one seed"
    assert "is one run (seed 0)" in hybrid.long_findings()


def test_the_long_budget_is_the_sweep_files_budget():
    import yaml

    sweep = places.REPOSITORY / "configs" / "sweeps" / "study_plans_recall_long_budget.yaml"
    overrides = yaml.safe_load(sweep.read_text())["overrides"]
    assert overrides["trainer.max_steps"] == hybrid.LONG_BUDGET_STEPS
    pilot = places.REPOSITORY / "configs" / "sweeps" / "study_plans_recall_long.yaml"
    settings = yaml.safe_load(pilot.read_text())["overrides"]
    # the same setting as the pilot but for the budget
    assert {k: v for k, v in overrides.items() if k != "trainer.max_steps"} == {
        k: v for k, v in settings.items() if k != "trainer.max_steps"
    }
