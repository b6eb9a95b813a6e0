"""Malformed input, table-driven: each case is answered by one ``error:`` line naming the
problem, a non-zero exit code, no traceback, and no change to an existing run directory."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml
from cli_helpers import CONFIGS, TINY, fit_args

from roformer_lit.commands import main

RUN = Path("runs") / "mlm" / "rope-softmax-seed0"
CKPT = str(RUN / "checkpoints" / "last.ckpt")


def _files(work: Path) -> None:
    """Every bad file the cases refer to, written once into the shared work directory."""
    raw = (work / CKPT).read_bytes()
    (work / "truncated.ckpt").write_bytes(raw[: len(raw) // 2])
    (work / "notes.ckpt").write_text("not a checkpoint\n")
    torch.save({"weights": torch.ones(3)}, work / "foreign.ckpt")
    (work / "empty.txt").write_bytes(b"")
    rng = random.Random(0)
    (work / "binary.txt").write_bytes(bytes(rng.randrange(256) for _ in range(4096)))
    (work / "latin1.txt").write_bytes("café naïve\n".encode("latin-1") * 50)
    (work / "one_line.txt").write_text(" ".join(f"w{i % 3000}" for i in range(700_000)) + "\n")
    (work / "small.txt").write_text(
        "\n".join(f"the quick brown fox {i} jumps over the lazy dog {i * 7}" for i in range(300))
    )
    (work / "bad_key.yaml").write_text("model:\n  hiden_size: 8\n")
    (work / "broken.yaml").write_text("model: [unclosed\n")
    sweep = {"name": "s", "base": str(CONFIGS / "rope.yaml"), "grid": {"model.position": ["rope"]}}
    (work / "sweep_unknown.yaml").write_text(yaml.safe_dump({**sweep, "gird": {}}))
    (work / "sweep_no_base.yaml").write_text(
        yaml.safe_dump({**sweep, "base": str(work / "missing.yaml")})
    )


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory with one finished tiny run (the run every case must leave untouched)."""
    work = tmp_path_factory.mktemp("bad_input")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        assert main(fit_args("rope.yaml", 2)) == 0
    _files(work)
    return work


def fit(*extra: str) -> list[str]:
    return fit_args("rope.yaml", 4, *extra)


#: name -> (argv, text the error line must contain)
CASES: dict[str, tuple[list[str], str]] = {
    # configs
    "unknown_key": (fit("--model.hiden_size", "8"), "hiden_size"),
    "wrong_type": (fit("--model.hidden_size", "abc"), "model.hidden_size"),
    "impossible_pair": (
        fit("--model.position", "deberta", "--model.attention", "linear"),
        "valid attention kernels for 'deberta': softmax",
    ),
    "unknown_scheme": (fit("--model.position", "rotary"), "rotary"),
    "negative_hidden": (
        fit("--model.hidden_size", "-32"),
        "hidden_size must be an integer in 1..2147483647, got -32",
    ),
    "zero_heads": (
        fit("--model.num_heads", "0"),
        "num_heads must be an integer in 1..2147483647, got 0",
    ),
    "negative_batch": (
        fit("--data.batch_size", "-8"),
        "data.batch_size must be an integer in 1..2147483647, got -8",
    ),
    "negative_steps": (fit("--trainer.max_steps", "-5"), "max_steps"),
    "config_unknown_key": (
        ["fit", "--config", str(CONFIGS / "rope.yaml"), "--config", "bad_key.yaml", *TINY],
        "hiden_size",
    ),
    "config_missing": (["fit", "--config", "nowhere.yaml"], "nowhere.yaml"),
    "config_broken_yaml": (["fit", "--config", "broken.yaml"], "Problems parsing config"),
    # corpora
    "corpus_missing": (
        fit("--data.train_files", "[nowhere.txt]"),
        "error: corpus file not found: nowhere.txt",
    ),
    "corpus_extension": (
        fit("--data.train_files", "[notes.ckpt]"),
        "error: unsupported corpus file extension for notes.ckpt: expected one of .txt",
    ),
    "val_corpus_missing": (
        fit("--data.val_files", "[nowhere.txt]"),
        "error: corpus file not found: nowhere.txt",
    ),
    "corpus_empty": (fit("--data.train_files", "[empty.txt]"), "empty.txt"),
    "corpus_binary": (fit("--data.train_files", "[binary.txt]"), "binary.txt"),
    "corpus_latin1": (fit("--data.train_files", "[latin1.txt]"), "latin1.txt"),
    "corpus_directory": (
        fit("--data.train_files", "[runs]"),
        "directory runs holds no corpus file",
    ),
    "corpus_one_huge_line": (  # 4 MB on one line, no validation file: refused, no hang
        fit("--data.train_files", "[one_line.txt]"),
        "cannot split 1 document(s)",
    ),
    # command line
    "unknown_subcommand": (["fitt"], "unknown command 'fitt'; did you mean fit?"),
    "unknown_flag": (["fit", "--frobnicate", "1"], "--frobnicate"),
    # checkpoints
    "ckpt_missing": (fit("--ckpt_path", "nowhere.ckpt"), "checkpoint not found: nowhere.ckpt"),
    "ckpt_truncated": (fit("--ckpt_path", "truncated.ckpt"), "truncated.ckpt: not a PyTorch"),
    "ckpt_not_a_checkpoint": (fit("--ckpt_path", "notes.ckpt"), "notes.ckpt: not a PyTorch"),
    "ckpt_foreign_torch_file": (fit("--ckpt_path", "foreign.ckpt"), "foreign.ckpt is not a"),
    "ckpt_other_scheme": (
        fit("--model.position", "xl", "--ckpt_path", CKPT),
        "was trained with position='rope', this run has model.position='xl'",
    ),
    "ckpt_other_size": (
        fit("--model.hidden_size", "64", "--ckpt_path", CKPT),
        "was trained with hidden_size=32, this run has model.hidden_size=64",
    ),
    "ckpt_other_vocabulary": (
        fit("--data.train_files", "[small.txt]", "--data.vocab_size", "300", "--ckpt_path", CKPT),
        "was trained with train_files=None, this run has data.train_files=['small.txt']",
    ),
    "validate_other_scheme": (
        ["validate", "--config", str(CONFIGS / "rope.yaml"), *TINY, "--model.position", "nope"]
        + ["--ckpt_path", CKPT],
        "this run has model.position='nope'",
    ),
    "export_truncated": (
        ["export", "--ckpt_path", "truncated.ckpt", "--out", "hf"],
        "cannot read checkpoint truncated.ckpt",
    ),
    # sweep files
    "sweep_unknown_key": (["sweep", "--config", "sweep_unknown.yaml"], "gird"),
    "sweep_missing_base": (["sweep", "--config", "sweep_no_base.yaml"], "missing.yaml"),
    "sweep_file_missing": (["sweep", "--config", "no_sweep.yaml"], "no_sweep.yaml"),
}


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(root)): (p.stat().st_mtime_ns, p.stat().st_size) for p in root.rglob("*")
    }


def test_at_least_twenty_cases():
    assert len(CASES) >= 20


@pytest.mark.parametrize("case", list(CASES))
def test_bad_input_is_refused_with_one_line(case, work, monkeypatch, capsys):
    argv, expected = CASES[case]
    monkeypatch.chdir(work)
    run_before = snapshot(work / RUN)
    runs_before = sorted(p.name for p in (work / "runs" / "mlm").iterdir())
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code != 0
    assert lines and lines[-1].startswith("error: "), err[-2000:]
    assert expected in lines[-1], lines[-1]
    assert "Traceback" not in err
    # the line is the project's own, not a parser's dump of its union and namespace
    for dump in ("Union subtypes", "Namespace(", "<class '"):
        assert dump not in lines[-1], lines[-1]
    assert snapshot(work / RUN) == run_before, "the existing run directory was modified"
    # nothing trained: no new checkpoints anywhere
    runs_after = sorted(p.name for p in (work / "runs" / "mlm").iterdir())
    for name in set(runs_after) - set(runs_before):
        assert not list((work / "runs" / "mlm" / name).rglob("*.ckpt"))


@pytest.mark.parametrize(
    "case",
    [
        "ckpt_truncated",
        "ckpt_other_scheme",
        pytest.param("corpus_binary", marks=pytest.mark.slow),
        pytest.param("unknown_subcommand", marks=pytest.mark.slow),
    ],
)
def test_in_a_real_process_no_traceback_reaches_the_terminal(case, work):
    argv, expected = CASES[case]
    before = snapshot(work / RUN)
    proc = subprocess.run(
        [sys.executable, "-m", "roformer_lit", *argv],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    assert proc.stderr.strip().splitlines()[-1].startswith("error: ")
    assert expected in proc.stderr.strip().splitlines()[-1]
    assert snapshot(work / RUN) == before


def test_one_huge_line_with_a_validation_file_trains(work, monkeypatch):
    """The same 4 MB single-line corpus works when validation text is given."""
    monkeypatch.chdir(work)
    code = main(
        fit_args(
            "rope.yaml",
            1,
            "--data.train_files",
            "[one_line.txt]",
            "--data.val_files",
            "[small.txt]",
            "--data.vocab_size",
            "300",
            "--trainer.logger.init_args.version",
            "huge-line",
        )
    )
    assert code == 0
    assert (work / "runs" / "mlm" / "huge-line" / "checkpoints" / "last.ckpt").is_file()


NO_GPU = not torch.cuda.is_available() and not (
    getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available()
)


@pytest.mark.skipif(not NO_GPU, reason="this machine has a GPU: the run would train")
@pytest.mark.parametrize("accelerator", ["gpu", "cuda", "mps"])
def test_an_accelerator_this_machine_lacks_is_named_with_those_it_has(
    accelerator, work, monkeypatch, capsys
):
    monkeypatch.chdir(work)
    before = snapshot(work / RUN)
    capsys.readouterr()
    for argv in (
        fit("--trainer.accelerator", accelerator),
        ["validate", "--trainer.accelerator", accelerator, "--ckpt_path", CKPT],
    ):
        assert main(argv) != 0
        lines = capsys.readouterr().err.strip().splitlines()
        assert lines[-1] == (
            f"error: trainer.accelerator={accelerator!r}: this machine has no such device that "
            "PyTorch can use; valid here: cpu, auto"
        ), lines
    assert snapshot(work / RUN) == before


@pytest.mark.skipif(not NO_GPU, reason="checks what a machine without a GPU accepts")
def test_a_sweep_for_gpu_nodes_is_checked_on_a_machine_without_one(tmp_path, monkeypatch):
    """``sweep`` checks every run where it is started (a SLURM login node, say), which need
    not have the GPU the runs will train on: the accelerator is checked by ``fit`` itself."""
    monkeypatch.chdir(tmp_path)
    spec = {
        "name": "gpu_sweep",
        "base": str(CONFIGS / "rope.yaml"),
        "grid": {"model.position": ["rope", "nope"]},
        "overrides": {"trainer.accelerator": "gpu"},
    }
    Path("sweep.yaml").write_text(yaml.safe_dump(spec))
    assert main(["sweep", "--config", "sweep.yaml", "--dry-run"]) == 0
