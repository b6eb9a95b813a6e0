"""A length past a ``learned`` table is refused naming the lengths it takes, and the remedy
fits where the weights come from: ``validate --ckpt_path X --data.max_length 2048`` of a
512-row checkpoint said "raise model.max_positions", which then failed to load the
checkpoint ("encoder.position.table.weight has shape (512, 64) there and (4096, 64) here")."""

from __future__ import annotations

import pytest
from cli_helpers import CONFIGS

from roformer_lit.commands.prelaunch import check_fit_config
from roformer_lit.commands.pretrain import validate_config
from roformer_lit.errors import ConfigError

LEARNED = ["--model.position", "learned", "--model.max_positions", "64", "--data.max_length", "128"]


def _refusal(ckpt_path: str | None, training: bool) -> str:
    parsed = validate_config(["--config", str(CONFIGS / "rope.yaml"), *LEARNED], prelaunch=False)
    parsed["ckpt_path"] = ckpt_path  # as the subcommand's --ckpt_path gives it
    with pytest.raises(ConfigError) as info:
        check_fit_config(parsed, training=training)
    return str(info.value)


@pytest.mark.parametrize("training", [True, False], ids=["fit", "validate"])
def test_a_new_model_may_take_a_larger_table(training: bool) -> None:
    line = _refusal(None, training)
    assert "data.max_length=128" in line and "valid: data.max_length up to 64" in line, line
    assert "larger model.max_positions" in line, line


@pytest.mark.parametrize("training", [True, False], ids=["resume", "validate"])
def test_a_checkpoints_table_is_not_offered_to_grow(tmp_path, training: bool) -> None:
    ckpt = tmp_path / "last.ckpt"
    ckpt.write_bytes(b"")  # only its path is read here
    line = _refusal(str(ckpt), training)
    assert "valid: data.max_length up to 64" in line, line
    assert "max_positions" not in line.split("valid:")[1], line
