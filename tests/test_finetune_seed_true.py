"""``finetune --seed_everything true``: ``seed_everything`` is linked to ``data.seed`` (the
training order), an integer. ``true`` used to reach it as ``True`` and be refused as
``data.seed: expected an integer, got True``, naming a setting the user never wrote; it now
takes the seed Lightning's ``seed_everything()`` takes for ``true`` (``PL_GLOBAL_SEED``,
else 0), and ``false`` leaves the order at ``data.seed``'s default."""

from __future__ import annotations

import os

import pytest

from roformer_lit.finetune.parse import validate_finetune_config

ARGS = ["--config", "configs/finetune/glue.yaml", "--model.pretrained", "p.ckpt"]


@pytest.mark.parametrize(
    ("seed", "environment", "order"),
    [("true", None, 0), ("true", "7", 7), ("false", None, 0), ("5", None, 5), ("5", "7", 5)],
)
def test_the_training_order_takes_the_seed_the_run_takes(seed, environment, order, monkeypatch):
    if environment is None:
        monkeypatch.delenv("PL_GLOBAL_SEED", raising=False)
    else:
        monkeypatch.setenv("PL_GLOBAL_SEED", environment)
    config = validate_finetune_config([*ARGS, "--seed_everything", seed], prelaunch=False)
    assert config.data.seed == order
    assert os.environ.get("PL_GLOBAL_SEED") == environment  # nothing seeded by parsing
