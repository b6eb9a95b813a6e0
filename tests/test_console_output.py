"""What a run prints is what the user asked for: no advertisement for Lightning's cloud
logger, no deprecation warnings from inside Lightning, no FLOPs column that always reads 0,
no checkpoint-directory warning from an evaluation."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import CONFIGS, TINY, fit_args

from roformer_lit.commands import main

NOISE = ("litlogger", "LeafSpec", "FLOPs", "dirpath has changed", "already configured with model")


def test_fit_and_validate_print_no_noise(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    args = fit_args("rope.yaml", 2, "--trainer.enable_model_summary", "true")
    assert main(args) == 0
    ckpt = Path("runs/mlm/rope-softmax-seed0/checkpoints/last.ckpt")
    validate = ["validate", "--config", str(CONFIGS / "rope.yaml"), *TINY, "--ckpt_path", str(ckpt)]
    assert main(validate) == 0
    out, err = capfd.readouterr()
    for noise in NOISE:
        assert noise not in out + err, noise
    assert "trainable params" in out  # the summary itself is still there
