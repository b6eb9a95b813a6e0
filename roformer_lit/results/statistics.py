"""Statistics over seeds, with the standard library alone (no scipy at run time).

* :func:`mean_interval`: the 95 % **Student-t interval** of a mean over ``n`` seeds,

      mean ± t_{1-α/2, n-1} · s / sqrt(n)      s: the sample std (ddof = 1)

  (it assumes the seeds' values are independent draws of a roughly normal quantity; with
  bimodal outcomes such as 1.000 / 0.4 it is wide, as it should be, and can leave [0, 1]).
* :func:`prediction_interval`: where **one more run** (another seed) is expected to land,
  the 95 % Student-t prediction interval ``mean ± t_{1-α/2, n-1} · s · sqrt(1 + 1/n)``
  (what a single retrained run is checked against; the mean's interval is narrower by
  ``sqrt(n + 1)``, and one seed's value falls outside it often).
* :func:`paired_t_test`: two variants paired by seed (randomized positions off/on): the
  two-sided p-value of the one-sample t-test of the per-seed differences ``d_s = b_s - a_s``,

      t = mean(d) / (sd(d) / sqrt(n)),    p = 2 · (1 - F_{n-1}(|t|)).

  Differences that are all zero give p = 1; equal nonzero differences (sd 0) give p = 0.
* :func:`sign_test`: the exact two-sided sign test of the same pairs (ties dropped):
  ``p = min(1, 2 · P(X <= min(k, m - k)))``, ``X ~ Binomial(m, 1/2)``. It assumes nothing
  about the shape of the outcomes (bimodal ones included), but with ``m`` pairs its
  smallest p-value is ``2^(1-m)``: 0.0625 with 5 seeds, so it can never separate two
  variants at α = 0.05 with five seeds. The seed tables therefore use the paired t-test and
  report the sign test beside it (see ``docs/guide/compare.md``).
* :func:`holm`: Holm's step-down correction of ``m`` p-values (family-wise error ≤ α):
  with ``p_(1) <= ... <= p_(m)``, the adjusted ``p̃_(i) = max_{j<=i} min(1, (m-j+1) p_(j))``.
* :func:`verdict`: a compared cell's text, ``"n.s."`` when its adjusted p-value is ≥ α.
* :func:`mann_whitney`: two independent samples: ``U`` counts the pairs with the first
  above the second (ties a half); the two-sided p-value by the normal approximation with
  continuity and tie correction, ``z = (|U - mn/2| - 1/2) / sqrt(mn/12 · ((N + 1) -
  Σ(t³ - t) / (N (N - 1))))`` (scipy's ``mannwhitneyu(method="asymptotic")``).
* :func:`spearman`: the rank correlation ``ρ`` of two paired samples (Pearson's ``r`` of their
  ranks, ties given their average rank), with the two-sided p-value of
  ``t = ρ · sqrt((n - 2) / (1 - ρ²))`` against ``t_{n-2}`` (scipy's ``spearmanr``), and a 95 %
  interval by Fisher's transform with Bonett and Wright's (2000) standard error:
  ``tanh(atanh(ρ) ± z_{1-α/2} · sqrt((1 + ρ²/2) / (n - 3)))`` (needs ``n >= 4``).

The t distribution's CDF is ``1 - I_x(ν/2, 1/2) / 2`` at ``x = ν / (ν + t²)`` for ``t >= 0``,
with ``I`` the regularized incomplete beta function (Lentz's continued fraction, as in
Numerical Recipes §6.4); its quantile is found by bisection of the CDF. Tests check all of
these against scipy on fixed inputs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: Confidence of the intervals and level of the tests.
CONFIDENCE = 0.95
ALPHA = 0.05


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 1e-16
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function ``I_x(a, b)`` for ``0 <= x <= 1``."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """The CDF of Student's t with ``df`` degrees of freedom at ``t``."""
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (bisection)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        low, high = high, high * 2.0
    for _ in range(200):
        middle = 0.5 * (low + high)
        if t_cdf(middle, df) < p:
            low = middle
        else:
            high = middle
        if high - low <= 1e-15 * max(1.0, high):
            break
    return 0.5 * (low + high)


@dataclass(frozen=True)
class Interval:
    """A mean over ``n`` values and its t-interval (``low``/``high`` None when ``n < 2``)."""

    mean: float
    low: float | None
    high: float | None
    n: int

    def clipped(self, low: float = 0.0, high: float = 1.0) -> Interval:
        """The interval cut to a metric's range (an accuracy's ``[0, 1]``): the t-interval of
        a bounded quantity can leave it, and a bound outside the range says nothing more."""
        if self.low is None or self.high is None:
            return self
        return Interval(self.mean, max(self.low, low), min(self.high, high), self.n)

    def text(self, decimals: int = 3) -> str:
        """``mean [low, high]``, the mean alone when there is no interval."""
        if self.low is None or self.high is None:
            return f"{self.mean:.{decimals}f}"
        return f"{self.mean:.{decimals}f} [{self.low:.{decimals}f}, {self.high:.{decimals}f}]"


def mean_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """The mean of ``values`` and its two-sided Student-t interval (module docstring)."""
    if not values:
        raise ValueError("no values")
    n = len(values)
    mean = math.fsum(values) / n
    if n < 2:
        return Interval(mean, None, None, n)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(0.5 + confidence / 2.0, n - 1) * sd / math.sqrt(n)
    return Interval(mean, mean - half, mean + half, n)


def prediction_interval(values: Sequence[float], confidence: float = CONFIDENCE) -> Interval:
    """The mean of ``values`` and the Student-t interval of one further draw (module
    docstring): ``mean ± t · s · sqrt(1 + 1/n)``."""
    mean = mean_interval(values, confidence)
    if mean.low is None or mean.high is None:
        return mean
    half = (mean.high - mean.mean) * math.sqrt(mean.n + 1)  # s/sqrt(n) -> s*sqrt(1 + 1/n)
    return Interval(mean.mean, mean.mean - half, mean.mean + half, mean.n)


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided p-value of the paired t-test of ``b`` against ``a`` (paired by index)."""
    if len(a) != len(b) or len(a) < 2:
        raise ValueError("a paired test needs two equally long sequences of >= 2 values")
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    n = len(diffs)
    mean = math.fsum(diffs) / n
    sd = math.sqrt(math.fsum((d - mean) ** 2 for d in diffs) / (n - 1))
    if sd == 0.0:
        return 1.0 if mean == 0.0 else 0.0
    t = mean / (sd / math.sqrt(n))
    return min(1.0, 2.0 * (1.0 - t_cdf(abs(t), n - 1)))


def sign_test(a: Sequence[float], b: Sequence[float]) -> float:
    """Exact two-sided sign test of ``b`` against ``a`` (paired by index, ties dropped)."""
    if len(a) != len(b):
        raise ValueError("a paired test needs two equally long sequences")
    up = sum(y > x for x, y in zip(a, b, strict=True))
    down = sum(y < x for x, y in zip(a, b, strict=True))
    m = up + down
    if m == 0:
        return 1.0
    k = min(up, down)
    tail = math.fsum(math.comb(m, i) for i in range(k + 1)) / 2.0**m
    return min(1.0, 2.0 * tail)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the order given (module docstring)."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    adjusted = [0.0] * m
    running = 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[index]))
        adjusted[index] = running
    return adjusted


def verdict(adjusted_p: float, alpha: float = ALPHA) -> str:
    """``"n.s."`` when the data do not separate the pair at level ``alpha``, else ``p=…``."""
    return "n.s." if not adjusted_p < alpha else f"p={adjusted_p:.3g}"


@dataclass(frozen=True)
class RankCorrelation:
    """Spearman's ``rho`` over ``n`` pairs, its p-value and 95 % interval (module docstring)."""

    rho: float
    p: float
    low: float | None
    high: float | None
    n: int

    def text(self, decimals: int = 2) -> str:
        interval = (
            ""
            if self.low is None or self.high is None
            else f" [{self.low:.{decimals}f}, {self.high:.{decimals}f}]"
        )
        return f"ρ = {self.rho:+.{decimals}f}{interval} (n = {self.n}, p = {self.p:.2g})"


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for k in range(start, end + 1):
            out[order[k]] = (start + end) / 2.0 + 1.0
        start = end + 1
    return out


def spearman(
    a: Sequence[float], b: Sequence[float], confidence: float = CONFIDENCE
) -> RankCorrelation:
    """Spearman's rank correlation of ``a`` and ``b`` (paired by index), module docstring."""
    from statistics import NormalDist

    n = len(a)
    if n != len(b) or n < 3:
        raise ValueError("a rank correlation needs two equally long sequences of >= 3 values")
    ra, rb = ranks(a), ranks(b)
    ma, mb = math.fsum(ra) / n, math.fsum(rb) / n
    sab = math.fsum((x - ma) * (y - mb) for x, y in zip(ra, rb, strict=True))
    saa = math.fsum((x - ma) ** 2 for x in ra)
    sbb = math.fsum((y - mb) ** 2 for y in rb)
    if saa == 0.0 or sbb == 0.0:
        raise ValueError("a rank correlation needs values that are not all equal")
    rho = max(-1.0, min(1.0, sab / math.sqrt(saa * sbb)))
    if abs(rho) == 1.0:
        p = 0.0
    else:
        t = rho * math.sqrt((n - 2) / (1.0 - rho * rho))
        p = min(1.0, 2.0 * (1.0 - t_cdf(abs(t), n - 2)))
    low = high = None
    if n >= 4 and abs(rho) < 1.0:
        z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
        half = z * math.sqrt((1.0 + rho * rho / 2.0) / (n - 3))
        low, high = math.tanh(math.atanh(rho) - half), math.tanh(math.atanh(rho) + half)
    return RankCorrelation(rho, p, low, high, n)


def mann_whitney(high: Sequence[float], low: Sequence[float]) -> tuple[float, float]:
    """``(U, two-sided p)``: U counts the pairs with ``high`` above ``low`` (ties a half);
    p by the normal approximation with continuity and tie correction (module docstring)."""
    u = sum((a > b) + 0.5 * (a == b) for a in high for b in low)
    m, n = len(high), len(low)
    pooled = [*high, *low]
    ties = sum(c**3 - c for c in (pooled.count(v) for v in set(pooled)))
    total = m + n
    variance = m * n / 12 * ((total + 1) - ties / (total * (total - 1)))
    if variance <= 0:
        return u, 1.0
    z = (abs(u - m * n / 2) - 0.5) / math.sqrt(variance)
    return u, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))
