"""The study pages' paired tests (:mod:`roformer_lit.results.study.exact`) against
independent oracles: scipy's permutation test and binomial and t distributions."""

from __future__ import annotations

import math
import random

import pytest
from scipy import stats

from roformer_lit.results.study.exact import (
    detectable,
    effect,
    median_interval,
    p_text,
    sign_flip_p,
    smallest_p,
)


def _cases() -> list[tuple[list[float], list[float]]]:
    rng = random.Random(7)
    cases = []
    for n in (3, 5, 8, 10):
        for shift in (0.0, 0.01, 0.05):
            a = [rng.random() for _ in range(n)]
            cases.append((a, [x + shift + rng.gauss(0, 0.02) for x in a]))
    return cases


@pytest.mark.parametrize("a,b", _cases())
def test_sign_flip_p_is_scipys_exact_paired_permutation_test(a, b) -> None:
    d = [y - x for x, y in zip(a, b, strict=True)]
    oracle = stats.permutation_test(
        (d,),
        lambda x, axis: abs(x.mean(axis=axis)),
        permutation_type="samples",
        n_resamples=math.inf,
        alternative="greater",
    ).pvalue
    assert sign_flip_p(a, b) == pytest.approx(oracle, rel=1e-12)


@pytest.mark.parametrize("n", [3, 5, 8])
def test_every_seed_on_one_side_gives_the_floor_and_it_is_never_zero(n) -> None:
    a = [0.0] * n
    assert sign_flip_p(a, [1.0 + i for i in range(n)]) == smallest_p(n) == 2 / 2**n
    assert sign_flip_p(a, a) == 1.0  # zero differences: no evidence, not p = 0
    assert smallest_p(5) == 0.0625
    with pytest.raises(ValueError):
        p_text(0.0)


@pytest.mark.parametrize("n", [3, 5, 6, 9, 12])
def test_the_median_interval_has_its_binomial_coverage(n) -> None:
    d = [float(i) for i in range(n)]
    low, high, coverage = median_interval(d)
    k = int(low) + 1  # the k-th smallest difference is the low end
    assert high == d[n - k]
    oracle = stats.binom.cdf(n - k, n, 0.5) - stats.binom.cdf(k - 1, n, 0.5)
    assert coverage == pytest.approx(oracle)
    # the largest k whose coverage reaches 95 %, or the range when none does
    better = k + 1
    if better <= n // 2:
        assert stats.binom.cdf(n - better, n, 0.5) - stats.binom.cdf(better - 1, n, 0.5) < 0.95
    if k > 1:
        assert coverage >= 0.95


def test_effect_counts_and_mean() -> None:
    e = effect([0.0, 0.0, 0.0, 0.0, 0.0], [0.1, 0.2, -0.1, 0.3, 0.0])
    assert (e.up, e.down, e.n) == (3, 1, 5)
    assert e.mean == pytest.approx(0.1)
    assert (e.low, e.high) == (-0.1, 0.3) and e.coverage == pytest.approx(1 - 2 / 32)


@pytest.mark.parametrize("n,spread", [(5, 0.03), (10, 0.1), (20, 1.0)])
def test_detectable_is_the_t_power_formula(n, spread) -> None:
    oracle = (stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1)) * spread / math.sqrt(n)
    assert detectable(spread, n) == pytest.approx(oracle, rel=1e-9)


@pytest.mark.parametrize(
    ("n", "m", "separable", "words"),
    [
        (5, 1, False, "the exact test's floor p = 0.0625 > 0.05"),
        (6, 1, True, "the exact test's floor p = 0.03125"),
        (6, 5, False, "the exact test's floor p = 0.03125; Holm over 5 cells: at best p = 0.156"),
        (10, 12, True, "the exact test's floor p = 0.001953"),
        (10, 26, False, "the exact test's floor p = 0.001953; Holm over 26 cells: at best"),
    ],
)
def test_a_family_that_holm_keeps_from_alpha_says_so(n, m, separable, words) -> None:
    """Whether a cell can be separated depends on the family: at n = 6 each test alone can
    reach 0.03125 < 0.05, but Holm over 5 cells lifts the best to 0.156, and the pages
    said "which a cell reaches only if every seed agrees in sign"."""
    from roformer_lit.results.study.exact import can_separate, floor_words
    from roformer_lit.results.study.paired import holm_family, power

    assert can_separate(n, m) is separable
    assert floor_words(n, m).startswith(words)
    family = holm_family({k: ([0.0] * n, [1.0 + 0.01 * i for i in range(n)]) for k in range(m)})
    assert any(p < 0.05 for _, _, p in family.values()) is separable
    text = power(family)
    assert ("no cell can be separated" in text) is not separable, text
    assert ("which a cell reaches only if every seed agrees" in text) is separable, text


@pytest.mark.parametrize(
    ("seeds", "pairs", "chance", "words"),
    [
        (3, 45, 0.1, "is not below α = 0.05 even before correcting for the 45 comparisons"),
        (4, 45, 2 / 70, "is below α = 0.05 even before correcting for the 45 comparisons"),
        (5, 1, 2 / 252, "is below α = 0.05"),
    ],
)
def test_ordered_on_every_seed_says_what_chance_gives(seeds, pairs, chance, words) -> None:
    """ "40 of 45 pairs are ordered on every seed" at three seeds was stated with no word that
    equal schemes are so ordered with probability 0.1, about 4.5 of 45 pairs by chance."""
    from roformer_lit.results.study.mlm import mlm_sweep, separation_caveat

    text = separation_caveat(seeds, pairs)
    assert f"probability {chance:.3g}" in text and words in text, text
    assert f"about {chance * pairs:.1f} of {pairs} pairs" in text, text
    assert "is not a test" in mlm_sweep()
