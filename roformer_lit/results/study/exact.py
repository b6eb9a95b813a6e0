"""Paired tests by seed that do not lean on normality, and what they can detect.

For paired differences ``d_i = b_i - a_i`` over ``n`` seeds:

* :func:`sign_flip_p`: the exact two-sided sign-flip (permutation) test. Under the null
  hypothesis each ``d_i`` is as likely to be ``-d_i``; the p-value is the share of the
  ``2**n`` sign patterns whose ``|mean|`` is at least the observed one. It is exact, so it
  is never 0: its smallest value is :func:`smallest_p` ``= 2 / 2**n`` (0.0625 at n = 5,
  0.25 at n = 3). Under Holm over ``m`` cells the smallest adjusted p-value any cell can
  get is :func:`holm_floor` ``= m · smallest_p(n)``: at n = 6 (floor 0.03125) a family of
  five cells cannot separate any cell at α = 0.05, though each test alone could.
* :func:`median_interval`: the distribution-free interval ``[d_(k), d_(n+1-k)]`` of the
  sorted differences for the median difference, with coverage
  ``1 - 2 P(Binomial(n, 1/2) < k)``; the largest ``k`` whose coverage is at least 95 %, or
  ``k = 1`` (the range of the differences) with the coverage it has (93.75 % at n = 5).
* :func:`detectable`: the smallest mean difference a paired test of ``n`` seeds detects
  with 80 % power at two-sided α = 0.05 (before any multiplicity correction), by the
  t-approximation ``(t_{1-α/2, n-1} + t_{0.8, n-1}) · s_d / sqrt(n)`` with the observed
  spread ``s_d`` of the differences; the exact test cannot reach α at all when
  ``smallest_p(n) > α``, whatever the difference.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from roformer_lit.results.statistics import t_quantile

ALPHA = 0.05
POWER = 0.8
#: The largest n enumerated exactly (2**n sign patterns).
EXACT_UP_TO = 16


def differences(a: Sequence[float], b: Sequence[float]) -> list[float]:
    """``b_i - a_i``, paired by index."""
    if len(a) != len(b) or not a:
        raise ValueError("a paired test needs two equally long, non-empty sequences")
    return [y - x for x, y in zip(a, b, strict=True)]


def sign_flip_p(a: Sequence[float], b: Sequence[float]) -> float:
    """Exact two-sided sign-flip p-value of ``b`` against ``a`` (module docstring)."""
    d = differences(a, b)
    if len(d) > EXACT_UP_TO:
        raise ValueError(f"exact sign-flip test enumerates up to {EXACT_UP_TO} pairs, got {len(d)}")
    observed = abs(math.fsum(d))
    tolerance = 1e-12 * max(1.0, observed)
    hits = sum(
        abs(math.fsum(s * x for s, x in zip(signs, d, strict=True))) >= observed - tolerance
        for signs in itertools.product((1.0, -1.0), repeat=len(d))
    )
    return hits / 2.0 ** len(d)


def smallest_p(n: int) -> float:
    """The smallest two-sided p-value the exact sign-flip test can give with ``n`` pairs."""
    return 2.0 / 2.0**n


def holm_floor(n: int, m: int) -> float:
    """The smallest Holm-adjusted p-value a cell of ``m`` cells with ``n`` pairs can get
    (every cell at :func:`smallest_p`: Holm multiplies the smallest by ``m``)."""
    return min(1.0, max(1, m) * smallest_p(n))


def can_separate(n: int, m: int, alpha: float = ALPHA) -> bool:
    """Whether any cell of a Holm family of ``m`` cells with ``n`` pairs can reach ``alpha``."""
    return holm_floor(n, m) < alpha


def floor_words(n: int, m: int, alpha: float = ALPHA) -> str:
    """The floor in words: ``the exact test's floor p = 0.0625 > 0.05``, or with a floor
    below ``alpha`` that Holm over ``m`` cells lifts above it, ``...; Holm over 5 cells: at
    best p = 0.156 ≥ 0.05``."""
    floor = smallest_p(n)
    text = f"the exact test's floor p = {floor:.4g}"
    if floor >= alpha:
        return f"{text} > {alpha}" if floor > alpha else f"{text} = {alpha}"
    if not can_separate(n, m, alpha):
        return f"{text}; Holm over {m} cells: at best p = {holm_floor(n, m):.3g} ≥ {alpha}"
    return text


@dataclass(frozen=True)
class Effect:
    """A paired effect: mean difference, an interval for the median difference and its
    coverage, and how many pairs lie above and below 0."""

    mean: float
    low: float
    high: float
    coverage: float
    up: int
    down: int
    n: int

    def text(self) -> str:
        """``+0.123 [−0.010, +0.200] 4↑1↓``."""
        return f"{self.mean:+.3f} [{self.low:+.3f}, {self.high:+.3f}] {self.up}↑{self.down}↓"


def median_interval(d: Sequence[float], confidence: float = 0.95) -> tuple[float, float, float]:
    """``(low, high, coverage)`` of the order-statistic interval (module docstring)."""
    n = len(d)
    ordered = sorted(d)
    best = 1
    for k in range(1, n // 2 + 1):
        if _coverage(n, k) >= confidence:
            best = k
    return ordered[best - 1], ordered[n - best], _coverage(n, best)


def _coverage(n: int, k: int) -> float:
    return 1.0 - 2.0 * math.fsum(math.comb(n, i) for i in range(k)) / 2.0**n


def effect(a: Sequence[float], b: Sequence[float]) -> Effect:
    """The paired effect of ``b`` against ``a``."""
    d = differences(a, b)
    low, high, coverage = median_interval(d)
    return Effect(
        statistics.fmean(d),
        low,
        high,
        coverage,
        sum(x > 0 for x in d),
        sum(x < 0 for x in d),
        len(d),
    )


def detectable(spread: float, n: int, alpha: float = ALPHA, power: float = POWER) -> float:
    """The t-approximation's smallest detectable mean difference (module docstring)."""
    if n < 2:
        return math.inf
    return (t_quantile(1 - alpha / 2, n - 1) + t_quantile(power, n - 1)) * spread / math.sqrt(n)


def p_text(p: float) -> str:
    """A p-value as a page writes it: two significant figures, never ``0``."""
    if p <= 0.0:
        raise ValueError("an exact p-value is never 0")
    return f"p={p:.2g}"
