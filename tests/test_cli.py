"""End to end through the CLI, in-process, on CPU with tiny settings."""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from cli_helpers import CONFIGS, REPO, TINY, fit_args, fit_preempted, overridden

from roformer_lit.commands import EXIT_PREEMPTED, main
from roformer_lit.results.events import read_run

SCALARS = [
    "train/loss",
    "train/acc",
    "val/loss",
    "val/acc",
    "val/ppl",
    "perf/tokens_per_s",
    "perf/peak_mem_mb",
    "perf/model_tflops",
]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One short fit; later tests read its run directory."""
    workdir = tmp_path_factory.mktemp("fit")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        assert main(fit_args("rope.yaml", 40, "--model.learning_rate", "3e-3")) == 0
    return workdir, workdir / "runs" / "mlm" / "rope-softmax-seed0"


def test_fit_writes_scalars_checkpoints_and_config(trained):
    _, run = trained
    assert (run / "config.yaml").is_file()
    assert (run / "checkpoints" / "last.ckpt").is_file()
    assert (run / "checkpoints" / "best.ckpt").is_file()
    events = read_run(run)
    for tag in SCALARS:
        assert events.scalars.get(tag), f"missing scalar {tag}"
    losses = [s.value for s in events.scalars["train/loss"]]
    assert sum(losses[-2:]) / 2 < sum(losses[:2]) / 2 - 0.1, losses
    assert events.has_hparams
    ckpt = torch.load(run / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=False)
    assert ckpt["global_step"] == 40
    assert ckpt["hyper_parameters"]["position"] == "rope"
    # the vocabulary size came from the data, not from any config
    assert ckpt["hyper_parameters"]["vocab_size"] == ckpt["state_dict"]["head.bias"].numel()


def test_run_throughput_reads_the_runs_own_perf_log(trained):
    """``scripts/run_throughput.py`` (the GPU check's MFU table) over a real run: the
    medians of the logged points but the first, no MFU on a CPU."""
    _, run = trained
    events = read_run(run)
    out = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "run_throughput.py"), str(run), str(run / "no")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    tokens = [s.value for s in events.scalars["perf/tokens_per_s"]][1:]
    cells = [c.strip() for c in out.splitlines()[2].strip("|").split("|")]
    assert cells[:2] == [run.name, str(len(tokens))]
    assert float(cells[2].replace(",", "")) == pytest.approx(statistics.median(tokens), rel=1e-3)
    assert cells[4] == "-"  # a CPU has no nominal peak
    assert "no run directory" in out.splitlines()[3]


def test_second_run_gets_its_own_directory(trained):
    workdir, first = trained
    before = {p: p.stat().st_mtime_ns for p in first.rglob("*")}
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        assert main(fit_args("rope.yaml", 2)) == 0
    assert (workdir / "runs" / "mlm" / "rope-softmax-seed0-2" / "config.yaml").is_file()
    assert {p: p.stat().st_mtime_ns for p in first.rglob("*")} == before


def test_validate_from_checkpoint(trained, monkeypatch):
    workdir, run = trained
    monkeypatch.chdir(workdir)
    ckpt = run / "checkpoints" / "last.ckpt"
    args = ["validate", "--config", str(CONFIGS / "rope.yaml"), *TINY, "--ckpt_path", str(ckpt)]
    before = sorted((workdir / "runs" / "mlm").iterdir())
    assert main(args) == 0
    assert sorted((workdir / "runs" / "mlm").iterdir()) == before  # no run of its own
    record = json.loads((run / "evaluations.jsonl").read_text().splitlines()[-1])
    assert record["command"] == "validate" and record["checkpoint"] == str(ckpt)
    assert math.isfinite(record["metrics"]["val/loss"])


def test_export_from_checkpoint(trained, tmp_path):
    pytest.importorskip("transformers")
    from transformers import AutoModelForMaskedLM

    _, run = trained
    out = tmp_path / "hf"
    assert (
        main(["export", "--ckpt_path", str(run / "checkpoints" / "last.ckpt"), "--out", str(out)])
        == 0
    )
    hf = AutoModelForMaskedLM.from_pretrained(out).eval()
    assert type(hf).__name__ == "RoFormerForMaskedLM"


@pytest.mark.parametrize("config", sorted(p.name for p in CONFIGS.glob("*.yaml")))
def test_every_config_completes_two_steps(config, tmp_path, monkeypatch):
    """Each config as written (its model size included), for two optimiser steps."""
    monkeypatch.chdir(tmp_path)
    args = [
        "fit",
        "--config",
        str(CONFIGS / config),
        "--data.max_train_blocks",
        "64",
        "--data.max_val_blocks",
        "8",
        "--data.batch_size",
        "4",
        "--trainer.max_steps",
        "2",
        "--trainer.val_check_interval",
        "2",
        "--trainer.enable_progress_bar",
        "false",
    ]
    assert main(args) == 0
    (run,) = (p for p in (tmp_path / "runs").glob("*/*") if p.is_dir())
    assert torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)["global_step"] == 2


def test_base_overlay_switches_to_bert_base(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(
            [
                "fit",
                "--config",
                str(CONFIGS / "rope.yaml"),
                "--config",
                str(CONFIGS / "size" / "base.yaml"),
                "--print_config",
            ]
        )
    assert exit_info.value.code == 0
    printed = capsys.readouterr().out
    for line in [
        "hidden_size: 768",
        "num_layers: 12",
        "num_heads: 12",
        "max_length: 512",
        "precision: bf16-mixed",
        "position: rope",
    ]:
        assert line in printed


def _write(path: Path, data: bytes) -> str:
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize(
    "case",
    [
        "unknown_scheme",
        "unknown_key",
        "missing_file",
        "empty_file",
        "non_utf8",
        "jsonl_field",
        "learned_too_long",
        "odd_rope_heads",
        "xl_linear",
    ],
)
def test_bad_input_one_line_no_traceback(case, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    empty = _write(tmp_path / "e.txt", b"")
    binary = _write(tmp_path / "b.txt", b"ok\n\xff\xfe bad")
    jsonl = _write(tmp_path / "j.jsonl", b'{"text": "a b"}\n{"body": "c"}\n')
    extra, expected = {
        "unknown_scheme": (
            ["--model.position", "rotary"],
            "valid choices: alibi, deberta, fire, kerple, learned, nope, rope",
        ),
        "unknown_key": (["--model.hiden_size", "8"], "hiden_size"),
        "missing_file": (["--data.train_files", "[nowhere.txt]"], "nowhere.txt"),
        "empty_file": (["--data.train_files", f"[{empty}]"], "e.txt"),
        "non_utf8": (["--data.train_files", f"[{binary}]"], "b.txt"),
        "jsonl_field": (["--data.train_files", f"[{jsonl}]"], ":2"),
        "learned_too_long": (
            ["--model.position", "learned", "--model.max_positions", "16"],
            "max_length=32",
        ),
        "odd_rope_heads": (["--model.hidden_size", "30"], "even head size"),
        "xl_linear": (
            ["--model.position", "xl", "--model.attention", "linear"],
            "valid attention kernels for 'xl': softmax",
        ),
    }[case]
    assert main(fit_args("rope.yaml", 2, *extra)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) >= 1 and err[-1].startswith("error: ") and expected in err[-1]
    assert not any("Traceback" in line for line in err)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").rglob("*.ckpt"))


def test_command_line_user_error_exits_2_with_one_line(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "roformer_lit",
            "fit",
            "--config",
            str(CONFIGS / "rope.yaml"),
            "--model.position",
            "rotary",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith("error: unknown position 'rotary'")
    assert not (tmp_path / "runs").exists()
    assert REPO.is_dir()


def test_length_extrapolation_table_and_validate_at_longer_length(
    trained, tmp_path, monkeypatch, capsys
):
    workdir, rope_run = trained
    monkeypatch.chdir(workdir)
    learned = fit_args("learned.yaml", 2, "--model.max_positions", "64")
    assert main(learned) == 0
    learned_ckpt = workdir / "runs" / "mlm" / "learned-softmax-seed0" / "checkpoints" / "last.ckpt"
    rope_ckpt = rope_run / "checkpoints" / "last.ckpt"
    capsys.readouterr()
    args = [
        "extrapolate",
        str(rope_ckpt),
        str(learned_ckpt),
        "--lengths",
        "32",
        "128",
        "--tokens",
        "2048",
    ]
    assert main(args) == 0
    rows = {line.split("|")[2].strip(): line for line in capsys.readouterr().out.splitlines()[2:]}
    rope_cells = [c.strip() for c in rows["rope"].split("|")[4:6]]
    assert all(float(c) > 0 for c in rope_cells)  # rope runs past its training length
    learned_cells = [c.strip() for c in rows["learned"].split("|")[4:6]]
    assert float(learned_cells[0]) > 0 and learned_cells[1].startswith("refused (max_positions=64)")
    # the same through LightningCLI's validate: rope evaluates at 128, learned is refused
    validate = ["validate", "--config", str(CONFIGS / "rope.yaml"), *TINY]
    at_128 = ["--data.max_length", "128"]
    assert main(overridden(validate, ["--ckpt_path", str(rope_ckpt), *at_128])) == 0
    capsys.readouterr()
    learned = ["--model.position", "learned", "--model.max_positions", "64"]
    code = main(overridden(validate, [*learned, "--ckpt_path", str(learned_ckpt), *at_128]))
    assert code == 2
    assert "exceeds the 'learned' position table" in capsys.readouterr().err


def test_restart_from_last_ckpt_continues_in_its_own_run_directory(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    every_step = ["--trainer.log_every_n_steps", "1", "--trainer.val_check_interval", "2"]
    assert fit_preempted(fit_args("nope.yaml", 5, *every_step), 3) == EXIT_PREEMPTED
    run = tmp_path / "runs" / "mlm" / "nope-softmax-seed0"
    # preempted at step 3, not a validation step: last.ckpt must still hold it
    assert torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)["global_step"] == 3
    config_before = (run / "config.yaml").read_text()
    resume = ["--ckpt_path", str(run / "checkpoints" / "last.ckpt")]
    assert main(fit_args("nope.yaml", 5, *every_step, *resume)) == 0
    runs = sorted(p.name for p in (tmp_path / "runs" / "mlm").iterdir() if p.is_dir())
    assert runs == ["nope-softmax-seed0"]
    ckpt = torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)
    assert ckpt["global_step"] == 5  # the last step, not a validation step either
    assert (run / "config.yaml").read_text() == config_before
    assert (run / "config-resumed-1.yaml").is_file()  # the restart's config differs (ckpt_path)
    steps = [s.step for s in read_run(run).scalars["train/loss"]]
    assert steps == sorted(steps) and max(steps) >= 4


def test_explicit_existing_version_is_refused_without_touching_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    version = ["--trainer.logger.init_args.version", "mine"]
    assert main(fit_args("nope.yaml", 2, *version)) == 0
    run = tmp_path / "runs" / "mlm" / "mine"
    before = {p: p.stat().st_mtime_ns for p in run.rglob("*")}
    capsys.readouterr()
    assert main(fit_args("nope.yaml", 2, *version)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: run directory runs/mlm/mine already exists")
    assert {p: p.stat().st_mtime_ns for p in run.rglob("*")} == before
