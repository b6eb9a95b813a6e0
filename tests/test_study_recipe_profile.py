"""The ModernBERT-against-transformers profile region of the performance page, read from
synthetic two-model profiler files and from the committed raw outputs.

Oracles: the seconds written into the synthetic files and sums and ratios of them computed
by hand; for the committed raw outputs, the operators' own ``Self CPU`` times (a column the
region does not read: it reads the shares and the total), summed independently.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from roformer_lit.errors import ConfigError
from roformer_lit.results.study import recipe_profile
from roformer_lit.results.study.places import bench_file

RULE = "-" * 53 + "  " + "  ".join(["-" * 12] * 6)
UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6}


def _table(rows: list[tuple[str, float]], total: float) -> list[str]:
    """One profiler table as torch prints it: operator, share, self time."""
    return [
        RULE,
        f"{'Name':>53}  {'Self CPU %':>12}  {'Self CPU':>12}",
        RULE,
        *(f"{op:>53}  {seconds / total:>11.2%}  {seconds:>11.3f}s" for op, seconds in rows),
        RULE,
        f"Self CPU time total: {total:.3f}s",
        "",
    ]


def _file(length: int, ours: list[tuple[str, float]], hf: list[tuple[str, float]]) -> str:
    lines = [
        f"# 2026-11-29T00:00:00Z python scripts/profile_vs_hf.py --length {length}",
        f"# modernbert recipe, L = {length}, 3 inference passes (batch 4), torch 2.13.0+cpu",
        "# CPU: Test CPU (2 cores, 2 torch threads), torch 2.13.0+cpu",
        "## ours",
        *_table(ours, 10.0),
        "## hf: ModernBertForMaskedLM (sdpa)",
        *_table(hf, 12.0),
    ]
    return "\n".join(lines) + "\n"


SDPA = "aten::_scaled_dot_product_flash_attention_for_cpu"


def _write(study_bench: Path, second_hf_attention: float) -> None:
    short, long = recipe_profile.FILES
    (study_bench / short).write_text(
        _file(
            512,
            [("aten::mm", 6.0), ("aten::addmm", 1.0), (SDPA, 1.0)],
            [("aten::mm", 7.0), (SDPA, 3.0)],
        )
    )
    (study_bench / long).write_text(
        _file(
            2048,
            [("aten::mm", 4.0), (SDPA, 5.0), ("aten::gelu", 0.5)],
            [("aten::addmm", 4.0), (SDPA, second_hf_attention)],
        )
    )


def test_each_model_is_split_into_products_attention_and_the_rest(study_bench: Path):
    _write(study_bench, second_hf_attention=7.0)
    text = recipe_profile.table()
    # ours at 512: products 6 + 1 of 10 s, attention 1, the rest 10 - 8
    assert "| 512 | ours | 10.00 s | 7.00 s (70%) | 1.00 s (10%) | 2.00 s (20%) |" in text
    assert "| 512 | ModernBertForMaskedLM (sdpa) | 12.00 s | 7.00 s (58%) | 3.00 s (25%) |" in text
    # 512: products 7 / 7; HF / ours 12 / 10; attention free: 12 / (10 - 1) = 1.33 (above)
    assert "At 512 tokens ours' matrix products take 1.00× transformers' time" in text
    assert "HF / ours is 1.20× here" in text
    assert "it would be 1.33×, above the 1.3× target" in text
    # 2,048: products 4 / 4; attention free: 12 / (10 - 5) = 2.40
    assert "it would be 2.40×, above" in text
    assert "on CPU: Test CPU" in text


def test_where_free_attention_stays_under_the_target_the_region_says_so(study_bench: Path):
    short, _ = recipe_profile.FILES
    _write(study_bench, second_hf_attention=7.0)
    # ours 10 s with 1 s of attention, HF 11 s: 11 / 9 = 1.22 < 1.3
    (study_bench / short).write_text(
        _file(512, [("aten::mm", 9.0), (SDPA, 1.0)], [("aten::mm", 9.0), (SDPA, 2.0)]).replace(
            "Self CPU time total: 12.000s", "Self CPU time total: 11.000s"
        )
    )
    text = recipe_profile.table()
    assert "it would be 1.22×, below the 1.3× target, so no attention of ours reaches it" in text


@pytest.mark.parametrize(
    ("cut", "words"),
    [("## hf: ModernBertForMaskedLM (sdpa)", "'## hf: ...'"), ("L = 2048", "'L = N'")],
)
def test_a_file_missing_a_model_or_its_length_is_refused_naming_it(study_bench: Path, cut, words):
    _, long = recipe_profile.FILES
    _write(study_bench, second_hf_attention=7.0)
    path = study_bench / long
    path.write_text(path.read_text().replace(cut, "## something else" if "##" in cut else "L ="))
    with pytest.raises(ConfigError, match=re.escape(words)) as info:
        recipe_profile.table()
    assert long in str(info.value)


def _self_seconds(lines: list[str], prefixes: tuple[str, ...]) -> float:
    """The ``Self CPU`` column (the third) summed over operators starting with ``prefixes``."""
    total = 0.0
    for line in lines:
        cells = re.split(r"\s{2,}", line.strip())
        if len(cells) > 2 and cells[0].startswith(prefixes) and cells[1].endswith("%"):
            value, unit = re.fullmatch(r"([0-9.]+)(s|ms|us)", cells[2]).groups()
            total += float(value) * UNITS[unit]
    return total


@pytest.mark.parametrize("name", recipe_profile.FILES)
def test_the_committed_profiles_split_as_their_own_time_column_says(name: str):
    """The region reads shares of the total; the raw output's own per-operator times must
    give the same products and attention to the printed precision."""
    length, ours, hf = recipe_profile.read_pair(name)
    text = bench_file(name).read_text(encoding="utf-8")
    ours_part, hf_part = text.split("## hf:")
    for split, part in ((ours, ours_part), (hf, hf_part)):
        lines = part.splitlines()
        products = _self_seconds(lines, recipe_profile.PRODUCTS)
        attention = _self_seconds(lines, ("aten::_scaled_dot_product",))
        assert split.products == pytest.approx(products, rel=2e-3, abs=2e-3)
        assert split.attention == pytest.approx(attention, rel=2e-3, abs=2e-3)
    assert length in (512, 2048)
