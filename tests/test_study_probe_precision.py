"""The position-task regions compare a run's accuracy, read at the three decimals of an
``extrapolate`` table, with a baseline at those same decimals: compared in float64 instead,
a run printed 0.153 was "above" a baseline of 0.1526, which the table prints as 0.153 too,
so the printed verdict contradicted the printed numbers (and the other way round at 0.1534)."""

from __future__ import annotations

import pytest

from roformer_lit.data.probes import BaselineScore
from roformer_lit.results.study import probes

#: copy's majority rule at each length; at 2x it prints as 0.153 (rounded up from 0.1526)
MAJORITY = {16: 0.189, 32: 0.1526, 64: 0.124, 128: 0.104, 256: 0.091}
#: sort's relative-place rule; at 2x it prints as 0.384 (rounded up from 0.3836)
RELATIVE_PLACE = {16: 0.286, 32: 0.3836, 64: 0.471, 128: 0.608, 256: 0.697}


def _constructed(monkeypatch, copy_at_2x: float, sort_at_2x: float) -> None:
    """Every scheme x task of the main sweeps at accuracy 0 on seeds 0-2, but for ``rope`` x
    ``copy`` and every scheme's ``sort`` at 2x; the baselines above."""
    found = {}
    for sweep, task in [("probes_quick", t) for t in probes.TASKS] + [("probes_sort", "sort")]:
        for scheme in probes.SCHEMES:
            for seed in probes.SEEDS:
                key = probes.Key(sweep, scheme, task, False, 0.0, "ordinary", seed)
                cells = {n: (0.0, 0.0) for n in probes.LENGTHS}
                if task == "sort":
                    cells[32] = (sort_at_2x, 0.0)
                elif (scheme, task) == ("rope", "copy"):
                    cells[32] = (copy_at_2x, 0.0)
                found[key] = cells

    def scores(task: str, n: int) -> dict[str, BaselineScore]:
        rules = {"majority": BaselineScore("majority", MAJORITY[n], 0.0)}
        if task == "sort":
            rules["relative_place"] = BaselineScore("relative_place", RELATIVE_PLACE[n], 0.0)
        return rules

    monkeypatch.setattr(probes, "runs", lambda: found)
    monkeypatch.setattr(probes, "scores", scores)


@pytest.mark.parametrize(
    ("copy_at_2x", "above"),
    [
        (0.153, False),  # prints 0.153 beside a baseline printed 0.153: not above (float64: above)
        (0.154, True),  # prints above the printed baseline
    ],
)
def test_above_the_baseline_at_2x_is_read_at_the_printed_precision(
    monkeypatch, copy_at_2x, above
) -> None:
    _constructed(monkeypatch, copy_at_2x, 0.0)
    text = probes.beyond()
    assert ("| rope | copy |" in text) is above, text
    assert f"{int(above)} of 40 scheme × task pairs" in text
    assert "| baseline:majority | copy | 0.153 |" in text


@pytest.mark.parametrize(
    ("sort_at_2x", "under"),
    [
        (0.384, 30),  # prints 0.384 beside the rule printed 0.384: at it (float64: above it)
        (0.385, 0),
    ],
)
def test_at_or_below_the_relative_place_rule_is_read_at_the_printed_precision(
    monkeypatch, sort_at_2x, under
) -> None:
    _constructed(monkeypatch, 0.0, sort_at_2x)
    text = probes.past_one()
    assert f"On `sort`, {under} of the 30 runs" in text, text
    assert "relative-place rule at 2× (0.384)" in text
