"""The scheme study's headline cell at ten seeds and six data seeds, read from synthetic
raw outputs.

Oracles: the values written into the synthetic files (each cell's seeds), the exact test's
floor at ten seeds with Holm over the family, the baselines' weighted mean computed by hand,
and refusals: a run at a rate the selection did not choose, a file scored on other
sequences.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from roformer_lit.results.study import places, scheme_seeds, selected
from roformer_lit.results.study.exact import smallest_p

LENGTHS = (16, 32, 64)
#: the rate every variant's selection picks in these files (its mean val_acc is higher)
PICKED, OTHER = 0.003, 0.01
SCHEMES = {  # the page's variant name -> (run-name scheme, run-name options)
    "rope": ("rope", "default"),
    "alibi": ("alibi", "default"),
    "kerple": ("kerple", "default"),
    "fire": ("fire", "default"),
    "t5 (num_buckets=136, max_distance=1024)": ("t5", "num_buckets=136+max_distance=1024"),
}


@pytest.fixture
def bench(study_bench: Path) -> Path:
    return study_bench


def _study_files(bench: Path, baseline: float = 0.2) -> None:
    """The scheme study's selection and ``reverse`` test files at seeds 0-4: ``rope`` 0.1,
    every other variant 0.5 at every length."""
    selection = ["path,val_acc"]
    test = ["name,length,metric,value"]
    for name, (scheme, options) in SCHEMES.items():
        for lr, val in ((PICKED, 0.9), (OTHER, 0.4)):
            for seed in range(5):
                run = f"runs/study_schemes_selected/{scheme}-{options}-reverse-learning_rate{lr}-seed{seed}"
                selection.append(f"{run},{val}")
                value = 0.1 if name == "rope" else 0.5
                for n in LENGTHS:
                    test += [
                        f"{run}/checkpoints/last.ckpt,{n},acc,{value}",
                        f"{run}/checkpoints/last.ckpt,{n},exact,0.0",
                    ]
    test += [f"baseline:majority,{n},acc,{baseline}" for n in LENGTHS]
    (bench / selected.SELECTION_FILES[0]).write_text("\n".join(selection) + "\n")
    (bench / selected.TEST_FILES[0].format(task="reverse")).write_text("\n".join(test) + "\n")


def _rerun(sweep: str, seed_word: str, seeds, baseline: float, lr: float = PICKED) -> str:
    lines = ["name,length,metric,value"]
    for name, (scheme, options) in SCHEMES.items():
        value = 0.1 if name == "rope" else 0.6
        for seed in seeds:
            run = f"runs/{sweep}/{scheme}-{options}-learning_rate{lr}-{seed_word}{seed}"
            for n in LENGTHS:
                lines += [
                    f"{run}/checkpoints/last.ckpt,{n},acc,{value}",
                    f"{run}/checkpoints/last.ckpt,{n},exact,0.0",
                ]
    lines += [f"baseline:majority,{n},acc,{baseline}" for n in LENGTHS]
    return "\n".join(lines) + "\n"


def test_ten_seeds_join_the_study_seeds_and_can_be_separated(bench: Path):
    _study_files(bench)
    (bench / scheme_seeds.SEEDS_FILE).write_text(
        _rerun("study_schemes_reverse_seeds", "seed", range(5, 10), 0.2)
    )
    study = scheme_seeds.seeds_study()
    assert study.order["reverse"] == scheme_seeds.VARIANTS
    expected = {s: 0.5 for s in range(5)} | {s: 0.6 for s in range(5, 10)}
    assert study.values("reverse", "kerple", 64) == expected
    family = len(scheme_seeds.VARIANTS[1:]) * len(LENGTHS)
    ref, other, p = study.pairs[("reverse", "alibi", 32)]
    assert len(ref) == len(other) == 10
    assert p == pytest.approx(min(1.0, family * smallest_p(10)))
    assert "separated above it" in study.findings()


def test_a_run_at_a_rate_the_selection_did_not_choose_is_refused(bench: Path):
    _study_files(bench)
    (bench / scheme_seeds.SEEDS_FILE).write_text(
        _rerun("study_schemes_reverse_seeds", "seed", range(5, 10), 0.2, lr=OTHER)
    )
    with pytest.raises(ValueError, match="not the one selected"):
        scheme_seeds.seeds_study()


def test_ten_seeds_scored_on_other_sequences_are_refused(bench: Path):
    _study_files(bench)
    (bench / scheme_seeds.SEEDS_FILE).write_text(
        _rerun("study_schemes_reverse_seeds", "seed", range(5, 10), 0.25)
    )
    with pytest.raises(ValueError, match="other test sequences"):
        scheme_seeds.seeds_study()


def test_data_seeds_pair_by_data_seed_and_average_the_test_sets(bench: Path):
    _study_files(bench, baseline=0.2)
    (bench / scheme_seeds.DATA_SEEDS_FILE).write_text(
        _rerun("study_schemes_reverse_data_seeds", "dataseed", range(1, 6), 0.3)
    )
    study = scheme_seeds.data_seeds_study()
    # data seed 0 is the study's seed-0 run; 1-5 the file's
    assert study.values("reverse", "fire", 16) == {0: 0.5} | {s: 0.6 for s in range(1, 6)}
    assert study.baselines[("reverse", "majority", 16)] == pytest.approx((5 * 0.3 + 0.2) / 6)
    assert len(study.pairs[("reverse", "fire", 16)][0]) == 6


def test_nothing_rerun_says_so_and_the_readme_rows_follow_the_files(bench: Path):
    from roformer_lit.results.study import readme

    _study_files(bench)
    assert scheme_seeds.seeds_study().table().startswith("_No slice")
    assert "reverse: ten seeds" not in readme.findings()
    (bench / scheme_seeds.SEEDS_FILE).write_text(
        _rerun("study_schemes_reverse_seeds", "seed", range(5, 10), 0.2)
    )
    places.read_from(bench, bench / "pages")  # clear the caches
    row = next(line for line in readme.findings().splitlines() if "reverse: ten seeds" in line)
    assert "each minus `rope`" in row
    assert "`alibi` n=16 (1×) **+0.450" in row  # (5 · 0.4 + 5 · 0.5) / 10, separated
    assert "12 of 12 paired cells separated after Holm" in row


def test_more_data_seeds_in_a_second_file_join_weighted_by_their_test_sets(bench: Path):
    _study_files(bench, baseline=0.2)
    (bench / scheme_seeds.DATA_SEEDS_FILE).write_text(
        _rerun("study_schemes_reverse_data_seeds", "dataseed", range(1, 6), 0.3)
    )
    (bench / scheme_seeds.MORE_DATA_SEEDS_FILE).write_text(
        _rerun("study_schemes_reverse_data_seeds", "dataseed", range(6, 10), 0.4)
    )
    study = scheme_seeds.data_seeds_study()
    assert set(study.values("reverse", "alibi", 32)) == set(range(10))
    # one test set at 0.2, five (mean 0.3), four (mean 0.4): the mean over all ten
    expected = (0.2 + 5 * 0.3 + 4 * 0.4) / 10
    assert study.baselines[("reverse", "majority", 32)] == pytest.approx(expected)
    assert len(study.pairs[("reverse", "alibi", 32)][0]) == 10


def test_a_data_seed_read_twice_is_refused(bench: Path):
    _study_files(bench)
    (bench / scheme_seeds.DATA_SEEDS_FILE).write_text(
        _rerun("study_schemes_reverse_data_seeds", "dataseed", range(1, 6), 0.3)
    )
    (bench / scheme_seeds.MORE_DATA_SEEDS_FILE).write_text(
        _rerun("study_schemes_reverse_data_seeds", "dataseed", range(5, 10), 0.3)
    )
    with pytest.raises(ValueError, match="data seed 5 is already read"):
        scheme_seeds.data_seeds_study()


def _fire_below_past_one(data: str) -> str:
    """fire's seed-0 run at its selected rate scored 0 past 1× (below every baseline)."""
    run = "fire-default-reverse-learning_rate0.01-seed0/"
    lines = data.splitlines(keepends=True)
    out = []
    for line in lines:
        fields = line.rstrip("\n").split(",")
        if run in line and fields[1] in ("32", "64") and fields[2] == "acc":
            line = ",".join([*fields[:3], "0.0"]) + "\n"
        out.append(line)
    return "".join(out)


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (None, "(the variants above the best baseline on every seed past 1× in the five-seed"),
        (_fire_below_past_one, "the five-seed table now names `alibi` and `kerple`, which is not"),
    ],
)
def test_the_rerun_variants_are_checked_against_the_five_seed_table(tmp_path, damage, says) -> None:
    """The page named the rerun's variants by hand ("the variants the README's finding
    names"); the region now says so only while the five-seed table agrees."""
    bench = tmp_path / "bench"
    shutil.copytree(Path(__file__).resolve().parent.parent / "docs" / "bench", bench)
    raw = bench / "cpu-2026-11-25-study-schemes-reverse.csv"
    if damage is not None:
        raw.write_text(damage(raw.read_text(encoding="utf-8")), encoding="utf-8")
    before = (places.PLACES.bench, places.PLACES.pages)
    places.read_from(bench, tmp_path)
    try:
        text = scheme_seeds.rerun_variants()
    finally:
        places.read_from(*before)
    assert text.startswith("The cell rerun: `reverse` with `alibi`, `kerple` and `fire` (")
    assert says in text, text
