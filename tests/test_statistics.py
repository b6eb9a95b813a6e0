"""The seed statistics (:mod:`roformer_lit.results.statistics`) against scipy on fixed inputs,
and Holm's correction against its step-down definition."""

from __future__ import annotations

import itertools

import pytest

from roformer_lit.results import statistics as st

stats = pytest.importorskip("scipy.stats")

SAMPLES = [
    [0.112, 0.164, 0.131],
    [1.0, 0.909, 0.407, 1.0, 0.95],
    [0.38, 0.41, 0.39, 0.40, 0.37, 0.42, 0.36],
    [8.7844, 8.7830, 8.7858],
    [0.5, 0.5001],
]


@pytest.mark.parametrize("df", [1, 2, 3, 4, 7, 30, 200])
@pytest.mark.parametrize("p", [0.001, 0.025, 0.3, 0.5, 0.8, 0.975, 0.9995])
def test_t_quantile_and_cdf_match_scipy(df: int, p: float) -> None:
    assert st.t_quantile(p, df) == pytest.approx(stats.t.ppf(p, df), rel=1e-9, abs=1e-12)
    for t in (-12.0, -2.5, -0.3, 0.0, 0.7, 3.1, 40.0):
        assert st.t_cdf(t, df) == pytest.approx(stats.t.cdf(t, df), rel=1e-9, abs=1e-14)


@pytest.mark.parametrize("values", SAMPLES)
def test_mean_interval_matches_scipy(values: list[float]) -> None:
    got = st.mean_interval(values)
    low, high = stats.t.interval(
        0.95, len(values) - 1, loc=sum(values) / len(values), scale=stats.sem(values)
    )
    assert got.mean == pytest.approx(sum(values) / len(values))
    assert (got.low, got.high) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))


@pytest.mark.parametrize("values", SAMPLES)
def test_prediction_interval_matches_scipy(values: list[float]) -> None:
    """One further draw: scipy's t interval with scale ``s · sqrt(1 + 1/n)``, and it holds
    the mean's interval (wider by ``sqrt(n + 1)`` in half-width)."""
    n = len(values)
    got = st.prediction_interval(values)
    scale = stats.tstd(values) * (1 + 1 / n) ** 0.5
    low, high = stats.t.interval(0.95, n - 1, loc=sum(values) / n, scale=scale)
    assert (got.low, got.high) == (pytest.approx(low, rel=1e-9), pytest.approx(high, rel=1e-9))
    narrow = st.mean_interval(values)
    assert got.high - got.mean == pytest.approx((narrow.high - narrow.mean) * (n + 1) ** 0.5)


def test_clipped_cuts_only_what_leaves_the_range() -> None:
    wide = st.mean_interval([1.0, 1.0, 0.41, 1.0, 0.91])
    assert wide.high > 1.0  # the t-interval of a bounded metric leaves its range
    cut = wide.clipped()
    assert (cut.mean, cut.low, cut.high, cut.n) == (wide.mean, wide.low, 1.0, wide.n)
    low = st.mean_interval([0.0, 0.01, 0.3])
    assert low.low < 0.0 and low.clipped().low == 0.0 and low.clipped().high == low.high


def test_one_value_has_no_interval() -> None:
    interval = st.mean_interval([0.3])
    assert (interval.low, interval.high, interval.text()) == (None, None, "0.300")


PAIRS = [
    ([0.10, 0.12, 0.08, 0.11, 0.09], [0.15, 0.16, 0.12, 0.18, 0.13]),
    ([1.0, 1.0, 0.41, 1.0, 0.91], [0.95, 1.0, 1.0, 0.40, 0.91]),
    ([0.2, 0.3, 0.4], [0.25, 0.28, 0.47]),
    ([0.5, 0.6, 0.7, 0.8, 0.9, 1.0], [0.4, 0.5, 0.6, 0.7, 0.85, 0.99]),
]


@pytest.mark.parametrize(("a", "b"), PAIRS)
def test_paired_tests_match_scipy(a: list[float], b: list[float]) -> None:
    assert st.paired_t_test(a, b) == pytest.approx(stats.ttest_rel(b, a).pvalue, rel=1e-9)
    up = sum(y > x for x, y in zip(a, b, strict=True))
    m = up + sum(y < x for x, y in zip(a, b, strict=True))
    assert st.sign_test(a, b) == pytest.approx(stats.binomtest(up, m, 0.5).pvalue, rel=1e-12)


def test_degenerate_pairs() -> None:
    assert st.paired_t_test([1.0, 1.0], [1.0, 1.0]) == 1.0
    assert st.paired_t_test([0.0, 1.0], [0.5, 1.5]) == 0.0
    assert st.sign_test([1.0, 2.0], [1.0, 2.0]) == 1.0
    # five seeds all one way: the smallest p the exact sign test can give
    assert st.sign_test([0] * 5, [1] * 5) == pytest.approx(2 / 32)


@pytest.mark.parametrize(
    "pvalues",
    [[0.01, 0.04, 0.03, 0.005], [0.2, 0.01, 0.011, 0.5, 0.012], [0.049], [0.5, 0.5, 0.001]],
)
def test_holm_is_the_step_down_procedure(pvalues: list[float]) -> None:
    """Adjusted p <= alpha exactly when Holm's step-down rejects at alpha, for every alpha."""
    adjusted = st.holm(pvalues)
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    alphas = sorted({*pvalues, *(p * k for p in pvalues for k in range(1, m + 1))})
    for alpha in [a * f for a in alphas for f in (0.999, 1.001)]:
        rejected = set()
        for rank, index in enumerate(order):
            if pvalues[index] > alpha / (m - rank):
                break
            rejected.add(index)
        assert {i for i in range(m) if adjusted[i] <= alpha} == rejected
    assert all(a >= p for a, p in zip(adjusted, pvalues, strict=True))


def test_verdict_reads_ns_when_not_separated() -> None:
    assert st.verdict(0.05) == "n.s."
    assert st.verdict(0.2) == "n.s."
    assert st.verdict(0.01) == "p=0.01"
    assert list(itertools.islice((st.verdict(p) for p in st.holm([0.01, 0.02])), 2)) == [
        "p=0.02",
        "p=0.02",
    ]


PAIRS = [
    ([2.1, 2.3, 2.2, 2.9, 3.4, 3.3], [0.9, 0.8, 0.95, 0.4, 0.5, 0.45]),
    ([1.0, 0.909, 0.407, 1.0, 0.95, 0.2, 0.3], [8.78, 8.79, 8.80, 8.77, 8.81, 8.83, 8.76]),
    ([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0], [3, 1, 2, 5, 4, 7, 6, 9, 8, 10]),
    ([0.5, 0.5, 0.7, 0.1], [1.0, 2.0, 3.0, 3.0]),
]


@pytest.mark.parametrize("a,b", PAIRS)
def test_spearman_matches_scipy(a: list[float], b: list[float]) -> None:
    import math

    got = st.spearman(a, b)
    expected = stats.spearmanr(a, b)
    assert got.rho == pytest.approx(expected.statistic, rel=1e-12, abs=1e-12)
    assert got.p == pytest.approx(expected.pvalue, rel=1e-8, abs=1e-12)
    # the interval: Fisher's z with Bonett-Wright's standard error, from scipy's normal
    half = stats.norm.ppf(0.975) * math.sqrt((1 + expected.statistic**2 / 2) / (len(a) - 3))
    z = math.atanh(expected.statistic)
    assert (got.low, got.high) == (
        pytest.approx(math.tanh(z - half), rel=1e-9),
        pytest.approx(math.tanh(z + half), rel=1e-9),
    )
    assert got.low < got.rho < got.high


def test_ranks_average_ties_like_scipy() -> None:
    values = [3.0, 1.0, 3.0, 2.0, 3.0, 0.5]
    assert st.ranks(values) == list(stats.rankdata(values))
