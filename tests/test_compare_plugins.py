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


def other(value: str) -> dict:
    """A components record of the import path ``value``."""
    module = value.partition(":")[0]
    return {f"position:{value}": {"source": "import_path", "module": module, "options": [{}]}}


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
        assert "position:logdist=" in variant and cells[1] in ("1 (0)", "1 (1)"), rows


def test_runs_of_two_plugins_are_labelled_by_their_names_alone(tmp_path, capsys):
    """Two plugins' runs differ by name: their records' identities add nothing to the
    labels (the study's cope and ssmax beside rope read as before)."""
    names = {"a-seed0": ("my_pkg:A", 0), "b-seed0": ("my_pkg:B", 0), "rope-seed0": (None, 0)}
    for run_name, (value, seed) in names.items():
        position = value or "rope"
        run = write_run(tmp_path / "runs" / run_name, seed, 2.0, hparams={"position": position})
        if value is not None:
            torch.save({COMPONENTS_KEY: other(value)}, run / "checkpoints" / "last.ckpt")
    rows, _ = table(capsys, str(tmp_path / "runs"))
    assert sorted(rows) == ["my_pkg:A-softmax", "my_pkg:B-softmax", "rope-softmax"], rows
