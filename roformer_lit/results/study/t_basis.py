"""What a table's "95 % t-interval" rests on, in words: the seed count and the t quantile.

With ``n`` seeds the interval of a mean is ``mean ± t_{0.975, n-1} · s / √n``
(:func:`~roformer_lit.results.statistics.mean_interval`); at n = 3 the quantile is 4.30, so
the half-width is 2.48 sample standard deviations, and the interval describes three runs
under a normality assumption: it is no test between two rows. A page states the quantile it
used rather than leaving "95 %" to be read as a normal interval of a few standard errors.
"""

from __future__ import annotations

import math

from roformer_lit.results.statistics import CONFIDENCE, t_quantile


def quantile(n: int, confidence: float = CONFIDENCE) -> float:
    """``t_{(1 + confidence) / 2, n - 1}``, the quantile :func:`mean_interval` uses."""
    if n < 2:
        raise ValueError(f"a t-interval needs at least 2 values, got {n}")
    return t_quantile(0.5 + confidence / 2.0, n - 1)


def head(n: int, confidence: float = CONFIDENCE) -> str:
    """A table column's heading: ``mean [95 % t-interval, n = 3, t = 4.30]``."""
    return (
        f"mean [{confidence:.0%} t-interval, n = {n}, t = {quantile(n, confidence):.2f}]".replace(
            "%", " %"
        )
    )


def basis(n: int, confidence: float = CONFIDENCE) -> str:
    """The interval's basis and width in a sentence (no trailing period)."""
    t = quantile(n, confidence)
    level = f"{confidence:.0%}".replace("%", " %")
    return (
        f"each interval is the {level} Student-t interval of a mean over n = {n} seeds, "
        f"mean ± t · s / √{n} with t = t({0.5 + confidence / 2:.3g}, {n - 1}) = {t:.2f} (a "
        f"half-width of {t / math.sqrt(n):.2f} sample standard deviations): it describes "
        f"these {n} runs, assuming their values are normal, and is no test between two rows"
    )
