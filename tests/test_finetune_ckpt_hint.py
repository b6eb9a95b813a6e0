"""``finetune --ckpt_path`` given a checkpoint that is not a fine-tuning one says what to do
with it: give it as ``--model.pretrained`` only where it would be taken there. Before, a
position task's checkpoint (and one with no encoder) was sent to ``--model.pretrained``,
which then refused it: the hint led to a second error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from cli_helpers import CONFIGS, one_error_line

from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.module_arguments import flat_hyperparameters
from roformer_lit.training_config import TrainingConfig

#: What fit records of a RoPE encoder: every setting, so only the case's point differs.
RECORDED = flat_hyperparameters(EncoderConfig(position="rope"), TrainingConfig())

#: name -> (the checkpoint, words the one line must hold, words it must not)
CASES: dict[str, tuple[dict[str, Any], str, str | None]] = {
    "corpus pretraining": (
        {"hyper_parameters": RECORDED, "state_dict": {"encoder.w": torch.zeros(1)}},
        "give it as --model.pretrained",
        None,
    ),
    "position task": (
        {
            "hyper_parameters": RECORDED,
            "state_dict": {"encoder.w": torch.zeros(1)},
            "datamodule_hyper_parameters": {"probe": "copy"},
        },
        "trained on the position task 'copy'",
        "give it as --model.pretrained",
    ),
    "damaged architecture record": (
        {
            "hyper_parameters": {k: v for k, v in RECORDED.items() if k != "hidden_size"},
            "state_dict": {"encoder.w": torch.zeros(1)},
        },
        "lack hidden_size",
        "give it as --model.pretrained",
    ),
    "no encoder": (
        {"hyper_parameters": RECORDED, "state_dict": {"head.w": torch.zeros(1)}},
        "is not a pretraining checkpoint",
        "give it as --model.pretrained",
    ),
}


@pytest.mark.parametrize(("checkpoint", "says", "never"), CASES.values(), ids=CASES.keys())
def test_a_checkpoint_of_another_kind_gets_a_hint_that_works(
    checkpoint, says, never, tmp_path: Path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "given.ckpt"
    torch.save(checkpoint, path)
    (tmp_path / "va.csv").write_text("text,label\na b,0\nc d,1\n")
    line = one_error_line(
        [
            "finetune",
            "validate",
            "--config",
            str(CONFIGS / "finetune" / "local.yaml"),
            "--ckpt_path",
            str(path),
            "--data.val_files",
            "va.csv",
        ],
        capsys,
    )
    assert "is not a fine-tuning checkpoint" in line and says in line, line
    assert never is None or never not in line, line
