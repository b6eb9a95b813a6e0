"""What a run prints is what the user asked for: no advertisement for Lightning's cloud
logger, no deprecation warnings from inside Lightning, no FLOPs column that always reads 0,
no checkpoint-directory warning from an evaluation or a resume."""

from __future__ import annotations

from pathlib import Path

from cli_helpers import CONFIGS, TINY, fit_args, fit_preempted

from roformer_lit.commands import EXIT_PREEMPTED, main

NOISE = (
    "litlogger",
    "LeafSpec",
    "FLOPs",
    "dirpath has changed",
    "already configured with model",
    "exists and is not empty",
)


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


def test_a_resume_prints_no_noise(tmp_path, monkeypatch, capfd, recwarn):
    """Lightning warned 'Checkpoint directory <run>/checkpoints exists and is not empty',
    with its source line, on every resume: into the run's own checkpoints, as it should."""
    monkeypatch.chdir(tmp_path)
    args = fit_args("rope.yaml", 4)
    assert fit_preempted(args, 2) == EXIT_PREEMPTED
    capfd.readouterr()
    recwarn.clear()
    ckpt = Path("runs/mlm/rope-softmax-seed0/checkpoints/last.ckpt")
    assert main([*args, "--ckpt_path", str(ckpt)]) == 0
    out, err = capfd.readouterr()
    assert "finished at step 4/4" in out + err  # it resumed and ended
    said = [str(w.message) for w in recwarn] + [out + err]  # pytest keeps warnings apart
    for noise in NOISE:
        assert not any(noise in text for text in said), noise
