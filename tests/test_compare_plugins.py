"""``compare`` never averages, as seeds of one variant, runs of one plugin name that trained
other code: each run's checkpoint records which class its plugin name was and the plugin's
options over its defaults (:mod:`roformer_lit.component_origins`), and runs whose records
differ are tabled apart (:mod:`roformer_lit.results.compare.components`)."""

from __future__ import annotations

import pytest
import torch
from test_compare_identity import table, write_run

from roformer_lit.component_origins import COMPONENTS_KEY


def plugin(value: str = "my_pkg:Log", version: str = "1.0", power: int | None = 1) -> dict:
    """A components record: the entry point ``logdist`` as ``value`` with ``power`` (None:
    no options recorded, a checkpoint from before their record)."""
    origin = {
        "source": "entry_point",
        "group": "roformer_lit.positions",
        "value": value,
        "distribution": "my-schemes",
        "version": version,
    }
    if power is not None:
        origin["options"] = [{"power": power}]
    return {"position:logdist": origin, "attention:softmax": {"source": "builtin"}}


#: case -> (seed 0's record, seed 1's record, whether they are one variant); None: no
#: checkpoint.
CASES = {
    "the same plugin": (plugin(), plugin(), True),
    "another class under the name": (plugin(), plugin(value="my_pkg:Other"), False),
    "another default of an option": (plugin(), plugin(power=2), False),
    "another version of the same plugin": (plugin(), plugin(version="1.1"), True),
    "a run without a checkpoint": (plugin(), None, True),
    "a run from before the options' record": (plugin(), plugin(power=None), True),
    "built-ins recorded alike": (
        {"position:logdist": {"source": "builtin"}},
        {"position:logdist": {"source": "builtin"}},
        True,
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_runs_of_one_plugin_name_that_trained_other_code_are_not_seeds(case, tmp_path, capsys):
    """Runs of ``logdist`` trained when the name meant two classes were averaged as
    seeds of one variant."""
    first, second, same = CASES[case]
    for seed, record in ((0, first), (1, second)):
        run = write_run(tmp_path / "runs" / f"logdist-seed{seed}", seed, 2.0 + seed)
        if record is not None:
            torch.save({COMPONENTS_KEY: record}, run / "checkpoints" / "last.ckpt")
    rows, _ = table(capsys, str(tmp_path / "runs"))
    if same:
        assert [cells[1] for cells in rows.values()] == ["2 (0, 1)"], rows
        return
    assert len(rows) == 2, rows
    for variant, cells in rows.items():
        assert "plugin" in variant and cells[1] in ("1 (0)", "1 (1)"), rows
