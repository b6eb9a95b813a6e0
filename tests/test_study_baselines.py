"""The studies' own baselines and statements read from files: recall's "guess among the
values present", and which seeds the study sweeps vary."""

from __future__ import annotations

import numpy as np
import pytest

from roformer_lit.data.probes.tasks import FIRST_SYMBOL, SEP_ID
from roformer_lit.errors import ConfigError
from roformer_lit.results.study import streams
from roformer_lit.results.study.present import RULE, add_present, present_scores


def _sequence(pairs: list[tuple[int, int]]) -> list[int]:
    prefix = [FIRST_SYMBOL + s for kv in pairs for s in kv]
    return [*prefix, SEP_ID, *([0] * len(prefix))]


def test_values_present_is_one_over_the_distinct_values_by_hand() -> None:
    # values 20, 20, 21: two distinct, each slot right with 1/2, all three with 1/8;
    # values 20, 21, 22: three distinct, 1/3 and 1/27
    ids = np.array([_sequence([(0, 20), (1, 20), (2, 21)]), _sequence([(0, 20), (1, 21), (2, 22)])])
    acc, exact = present_scores(ids)
    assert acc == pytest.approx((1 / 2 + 1 / 3) / 2)
    assert exact == pytest.approx((1 / 8 + 1 / 27) / 2)


def test_values_present_is_scored_on_the_files_sequences_or_refused() -> None:
    # the study's test sequences of recall at n=4, 32 symbols: the file's majority row
    baselines = {("recall", "majority", 4): 0.3515625}
    add_present(baselines, 32, [4], "file.csv")
    # a guess among D values is never better than the majority rule, right on 1/D or more
    assert 0.0625 < baselines[("recall", RULE, 4)] <= baselines[("recall", "majority", 4)]
    with pytest.raises(ConfigError, match="file.csv: the regenerated test sequences at n=4"):
        add_present({("recall", "majority", 4): 0.5}, 32, [4], "file.csv")


def _sweep(root, name: str, grid: str, base: str | None = None) -> None:
    path = root / "configs" / "sweeps" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text((f"base: {base}\n" if base else "") + f"grid:\n{grid}", encoding="utf-8")


def test_the_data_seed_sentence_follows_the_sweep_files(tmp_path, monkeypatch) -> None:
    (tmp_path / "base.yaml").write_text("data:\n  seed: 3\n", encoding="utf-8")
    _sweep(tmp_path, "a.yaml", "  seed_everything: [0, 1]\n")
    _sweep(tmp_path, "b.yaml", "  seed_everything: [0, 1]\n", base="base.yaml")
    _sweep(tmp_path, "c.yaml", "  seed_everything: [0, 1]\n  data.seed: [0, 1]\n")
    monkeypatch.setattr(streams, "REPOSITORY", tmp_path)
    monkeypatch.setattr(streams, "SWEEPS", ["a.yaml", "b.yaml", "c.yaml"])
    assert streams.data_seeds() == {
        "a.yaml": ([0, 1], {0}),
        "b.yaml": ([0, 1], {3}),
        "c.yaml": ([0, 1], {0, 1}),
    }
    text = streams.data_seed()
    assert "In `a.yaml` and `b.yaml` the grid varies `seed_everything` only" in text
    assert "`data.seed` 0 and 3" in text and "`c.yaml` varies `data.seed` as well" in text


def test_every_study_sweep_but_the_data_seed_slice_shares_one_data_seed() -> None:
    """What the pages state today (the sentence is regenerated on --check): three sweeps vary
    the data (the headline recall, reverse and MLM cells), every other runs on
    data.seed 0."""
    found = streams.data_seeds()
    varied = {name: data for name, (_, data) in found.items() if data != {0}}
    assert varied == {
        "study_plans_recall_data_seeds.yaml": set(range(1, 10)),
        "study_schemes_reverse_data_seeds.yaml": set(range(1, 10)),
        "study_plans_mlm_data_seeds.yaml": {1, 2, 3, 4, 5},
    }


@pytest.mark.parametrize("base", [10000.0, 100.0])
def test_prope_turns_are_the_angles_the_rope_module_would_give(base) -> None:
    """The pairs p-RoPE zeroes in the model (its ``inv_freq`` 0) would turn, at full RoPE of
    the same base, by the page's angles over the training sequence."""
    import torch

    from roformer_lit.positions.base import EncoderShape
    from roformer_lit.positions.rope import RotaryPosition
    from roformer_lit.results.study import selected

    shape = EncoderShape(64, 4, 2, 64)
    assert shape.head_size == selected.HEAD_SIZE
    full = RotaryPosition(shape, base=base)
    prope = RotaryPosition(shape, base=base, unrotated_fraction=selected.PROPE_FRACTION)
    distance = selected.TRAINING_TOKENS - 1
    angles = full.tables_at(torch.tensor([distance]))  # cos/sin at the largest distance
    zeroed = (prope.inv_freq == 0).nonzero().flatten().tolist()
    pairs = selected.HEAD_SIZE // 2
    expected = [distance * base ** (-2 * i / selected.HEAD_SIZE) for i in zeroed]
    assert selected.unrotated_turns(base) == pytest.approx(expected, rel=1e-12)
    # and the module's own table at that distance holds those angles: each pair's cosine
    # sits at columns 2i and 2i + 1 (tables_from_angles), its signed sine at 2i + 1
    cos, sin = angles[0][0, 0::2].double(), angles[1][0, 1::2].double()
    measured = torch.atan2(sin, cos)[zeroed]
    wrapped = [float(np.angle(np.exp(1j * a))) for a in expected]
    assert measured.tolist() == pytest.approx(wrapped, abs=1e-6)
    assert len(zeroed) == pairs - int((1 - selected.PROPE_FRACTION) * pairs)


def test_no_page_prints_p_equal_to_zero() -> None:
    """An exact test's p is never 0; a page must not say so."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for page in [*(root / "docs" / "studies").glob("*.md"), root / "README.md"]:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"\bp ?= ?0(?![.\d])", text), page
