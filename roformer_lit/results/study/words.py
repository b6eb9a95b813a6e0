"""How a study page writes what it states, and the constants the studies share."""

from __future__ import annotations

#: Exact match at or above which a run "solves" a length.
SOLVED = 0.9
#: The position tasks of the later studies (selected rates, layer plans), in page order.
STUDY_TASKS = ["copy", "reverse", "sort", "odds_first"]
#: The probe lengths of the position-task studies: 1× to 16× the training length 16.
PROBE_LENGTHS = [16, 32, 64, 128, 256]
TIMES = {16: "1×", 32: "2×", 64: "4×", 128: "8×", 256: "16×"}
NOT_RUN = "_No slice of the sweep has been run yet._"


def names(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``; ``none`` for no items."""
    if not items:
        return "none"
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def span(values: list[float]) -> str:
    """``low–high`` to three places, or one value when both round alike."""
    low, high = min(values), max(values)
    return f"{low:.3f}" if f"{low:.3f}" == f"{high:.3f}" else f"{low:.3f}–{high:.3f}"
