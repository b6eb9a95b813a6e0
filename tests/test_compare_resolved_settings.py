"""``compare`` reads a run's ``config.yaml`` against its ``hparams.yaml`` and notes a run
whose files disagree (a file edited after the run). A setting the run resolves as it starts
is null in one and its answer in the other by design: every fine-tuning run that left
``data.num_labels`` to its task or its labels (the shipped configs all do) was noted as
edited, on every row of its table, before. Edits are still noted, the same key included."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from roformer_lit.results.compare.runs import summarize_run

#: name -> (config.yaml's sections, hparams.yaml, whether compare notes a disagreement)
CASES: dict[str, tuple[dict[str, Any], dict[str, Any], bool]] = {
    "num_labels left to the task": ({"data": {"num_labels": None}}, {"num_labels": 2}, False),
    "num_labels given and kept": ({"data": {"num_labels": 2}}, {"num_labels": 2}, False),
    "num_labels edited": ({"data": {"num_labels": 3}}, {"num_labels": 2}, True),
    "a data setting edited": ({"data": {"batch_size": 8}}, {"batch_size": 16}, True),
    "a data setting edited to null": (
        {"data": {"max_val_blocks": None}},
        {"max_val_blocks": 4},
        True,
    ),
    "a model setting edited to null": (
        {"model": {"learning_rate": None}},
        {"learning_rate": 0.001},
        True,
    ),
}


@pytest.mark.parametrize(("config", "hparams", "noted"), CASES.values(), ids=CASES.keys())
def test_only_an_edit_is_noted_as_one(config, hparams, noted, tmp_path: Path):
    run = tmp_path / "local-rope-seed0"
    run.mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump({"seed_everything": 0, **config}))
    (run / "hparams.yaml").write_text(yaml.safe_dump({"position": "rope", **hparams}))
    problems = summarize_run(run).problems
    assert any("config.yaml and hparams.yaml disagree" in p for p in problems) == noted, problems
