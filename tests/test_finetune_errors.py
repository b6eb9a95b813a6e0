"""Bad fine-tuning input: one ``error:`` line, exit 2, no traceback, no run left behind."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from cli_helpers import overridden, tokenizer_section
from finetune_helpers import QUIET, keyword_rows, pretrained_checkpoint, write_csv

from roformer_lit.commands import EXIT_USER_ERROR, main
from roformer_lit.training.architecture_digest import DIGEST_KEY, architecture_digest

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "finetune"


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pretrained_checkpoint(tmp_path_factory)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    return (
        write_csv(tmp_path / "train.csv", keyword_rows(16, seed=1)),
        write_csv(tmp_path / "val.csv", keyword_rows(8, seed=2)),
    )


def refused(args: list[str], capsys: pytest.CaptureFixture[str], *expected: str) -> str:
    """Run ``args``; assert exit 2, one ``error:`` line holding ``expected``, no run dir."""
    assert main(args) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("error: "), err
    assert "Traceback" not in err
    for text in expected:
        assert text in lines[-1], lines[-1]
    for dump in ("Union subtypes", "Namespace(", "<class '"):  # the project's line, not a dump
        assert dump not in lines[-1], lines[-1]
    assert not list(Path("runs").glob("finetune/*/")), "a failed run left its directory"
    print(lines[-1])
    return lines[-1]


def local(pretrained: Path, train: Path, val: Path, *extra: str) -> list[str]:
    defaults = [
        "finetune",
        "--config",
        str(CONFIGS / "local.yaml"),
        "--model.pretrained",
        str(pretrained),
        "--data.train_files",
        str(train),
        "--data.val_files",
        str(val),
        "--trainer.max_steps",
        "1",
        *QUIET,
    ]
    return overridden(defaults, extra)


def test_a_missing_column(pretrained, files, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    train, val = files
    refused(
        local(pretrained, train, val, "--data.text_pair_field", "second"),
        capsys,
        "no column 'second'",
        str(train),
    )


def test_a_label_outside_the_head(pretrained, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rows = keyword_rows(16, seed=1)
    rows[5]["label"] = 3
    train = write_csv(tmp_path / "train.csv", rows)
    val = write_csv(tmp_path / "val.csv", keyword_rows(8, seed=2))
    refused(
        local(pretrained, train, val, "--data.num_labels", "2"),
        capsys,
        "label 3",
        "num_labels=2",
    )
    negative = keyword_rows(8, seed=2)
    negative[0]["label"] = -1
    write_csv(val, negative)
    refused(local(pretrained, train, val, "--data.num_labels", "4"), capsys, "label -1")


def test_a_label_that_is_not_a_number(pretrained, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    rows = keyword_rows(16, seed=1)
    rows[2]["label"] = "positive"
    train = write_csv(tmp_path / "train.csv", rows)
    refused(local(pretrained, train, train), capsys, "'positive' is not a number")


@pytest.mark.parametrize("label", [0, 1, "0.25"], ids=["class-0", "class-1", "one-target"])
def test_a_training_split_of_one_label(label, pretrained, files, tmp_path, monkeypatch, capsys):
    """A classifier trained on one class answers it whatever the text (a regression of one
    target has no correlation): refused, however num_labels was found, before a run."""
    monkeypatch.chdir(tmp_path)
    _, val = files
    rows = keyword_rows(16, seed=1)
    for row in rows:
        row["label"] = label
    train = write_csv(tmp_path / "one.csv", rows)
    shown = repr(float(label)) if isinstance(label, str) else str(label)
    line = refused(local(pretrained, train, val), capsys, f"every training label is {shown}")
    assert str(train) in line and "label_field='label'" in line
    if not isinstance(label, str):
        assert "labels 0..1" in line
        refused(local(pretrained, train, val, "--data.num_labels", "3"), capsys, "labels 0..2")


@pytest.mark.parametrize("content", ["", "text,label\n"], ids=["empty", "header-only"])
def test_an_empty_file(content, pretrained, files, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    train, _ = files
    empty = tmp_path / "empty.csv"
    empty.write_text(content)
    refused(local(pretrained, train, empty), capsys, "holds no examples", str(empty))


def test_a_checkpoint_without_a_tokenizer(pretrained, files, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    checkpoint = torch.load(pretrained, weights_only=True)
    del tokenizer_section(checkpoint)["tokenizer_json"]
    old = tmp_path / "old.ckpt"
    torch.save(checkpoint, old)
    refused(local(old, *files), capsys, "holds no tokenizer", str(old))


def test_a_checkpoint_of_another_vocabulary(pretrained, files, tmp_path, monkeypatch, capsys):
    """A tokenizer larger than the encoder's embedding table (another run's) is refused."""
    monkeypatch.chdir(tmp_path)
    checkpoint = torch.load(pretrained, weights_only=True)
    checkpoint["hyper_parameters"]["vocab_size"] = 100
    # another run's record: sealed as that run's save would have (not an edit)
    checkpoint[DIGEST_KEY] = architecture_digest(checkpoint["hyper_parameters"])
    other = tmp_path / "other.ckpt"
    torch.save(checkpoint, other)
    refused(local(other, *files), capsys, "vocab_size=100")


def test_a_missing_checkpoint(files, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    refused(local(tmp_path / "nope.ckpt", *files), capsys, "not found", "nope.ckpt")


def test_a_file_that_is_not_a_checkpoint(files, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    bogus = tmp_path / "bogus.ckpt"
    bogus.write_text("hello")
    refused(local(bogus, *files), capsys, "bogus.ckpt")


def test_an_unknown_task_names_the_valid_ones(pretrained, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    args = [
        "finetune",
        "--config",
        str(CONFIGS / "glue.yaml"),
        "--model.pretrained",
        str(pretrained),
        "--data.task",
        "sst3",
    ]
    refused(args, capsys, "'sst3'", "valid: movie_polarity, local, cola, sst2")


@pytest.mark.parametrize("which", ["train", "val"])
def test_a_missing_data_file_is_named(which, pretrained, files, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    train, val = files
    missing = tmp_path / "nowhere.csv"
    args = (
        local(pretrained, missing, val) if which == "train" else local(pretrained, train, missing)
    )
    refused(args, capsys, "nowhere.csv")


def test_local_needs_its_files(pretrained, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    args = [
        "finetune",
        "--config",
        str(CONFIGS / "local.yaml"),
        "--model.pretrained",
        str(pretrained),
    ]
    refused(args, capsys, "data.train_files")


def test_a_pretraining_checkpoint_as_ckpt_path(pretrained, files, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    refused(
        local(pretrained, *files, "--ckpt_path", str(pretrained)),
        capsys,
        "not a fine-tuning checkpoint",
        "--model.pretrained",
    )


def test_learned_positions_refuse_a_longer_max_length(files, tmp_path, monkeypatch, capsys):
    """A ``learned`` encoder has no positions past its table: a longer data.max_length is
    refused in one line (schemes that extrapolate take it)."""
    from cli_helpers import fit_args

    monkeypatch.chdir(tmp_path)
    assert main(fit_args("learned.yaml", 1, "--model.max_positions", "32")) == 0
    capsys.readouterr()
    learned = Path("runs") / "mlm" / "learned-softmax-seed0" / "checkpoints" / "last.ckpt"
    refused(
        local(learned, *files, "--data.max_length", "64"),
        capsys,
        "data.max_length=64",
        "32 positions",
    )


def test_a_missing_pretrained_checkpoint_is_named(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    args = ["finetune", "--config", str(CONFIGS / "movie_polarity.yaml"), *QUIET]
    refused(args, capsys, "model.pretrained is required")


def test_finetune_validate_refusals(pretrained, files, tmp_path, monkeypatch, capsys):
    """No checkpoint, a pretraining checkpoint, a checkpoint of another task, and the
    subcommand ``fit`` (finetune fits by default): one line each, naming what to do."""
    monkeypatch.chdir(tmp_path)
    base = ["finetune", "validate", "--config", str(CONFIGS / "local.yaml"), *QUIET]
    base += ["--data.train_files", str(files[0]), "--data.val_files", str(files[1])]
    refused(base, capsys, "needs --ckpt_path")
    refused([*base, "--ckpt_path", str(pretrained)], capsys, "not a fine-tuning checkpoint")
    assert main([*local(pretrained, *files)]) == 0
    (ckpt,) = Path("runs").glob("finetune/*/checkpoints/last.ckpt")
    before = ckpt.read_bytes()
    refused_args = [*base, "--ckpt_path", str(ckpt), "--data.task", "movie_polarity"]
    assert main(refused_args) == EXIT_USER_ERROR
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("error: ") and "'local'" in line and "movie_polarity" in line, line
    assert ckpt.read_bytes() == before
    assert main(["finetune", "fit", *base[2:]]) == EXIT_USER_ERROR
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith("error: ") and "finetune validate" in line, line


@pytest.fixture(scope="module")
def finetuned(pretrained, tmp_path_factory) -> Path:
    """``last.ckpt`` of a one-step fine-tuning run on the toy task."""
    work = tmp_path_factory.mktemp("finetuned")
    train = write_csv(work / "train.csv", keyword_rows(16, seed=1))
    val = write_csv(work / "val.csv", keyword_rows(8, seed=2))
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        assert main(local(pretrained, train, val)) == 0
    (ckpt,) = work.glob("runs/finetune/*/checkpoints/last.ckpt")
    return ckpt


@pytest.mark.parametrize(
    "command",
    [
        ["fit", "--config", "RAW/rope.yaml", "--trainer.max_steps", "1", "--ckpt_path"],
        ["validate", "--config", "RAW/rope.yaml", "--ckpt_path"],
        ["export", "--out", "exported", "--ckpt_path"],
        ["extrapolate", "--lengths", "32", "--"],
        ["locality", "--"],
    ],
    ids=["fit", "validate", "export", "extrapolate", "locality"],
)
def test_a_fine_tuning_checkpoint_given_to_a_pretraining_command(
    command, finetuned, tmp_path, monkeypatch, capsys
):
    """Every command that reads a pretraining checkpoint refuses a fine-tuned one in one
    line that names `finetune validate`, and leaves the checkpoint and the disk as they were."""
    monkeypatch.chdir(tmp_path)
    configs = str(CONFIGS.parent)
    args = [a.replace("RAW", configs) for a in command] + [str(finetuned)]
    before = finetuned.read_bytes()
    assert main(args) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err
    assert lines[-1].startswith(f"error: {finetuned} is a fine-tuning checkpoint"), lines[-1]
    assert "finetune validate" in lines[-1]
    # a resume of the fine-tune too (before: fit --ckpt_path <it> was told to evaluate it)
    resume = "resume its run with: python -m roformer_lit finetune --config <its task config> "
    assert f"{resume}--ckpt_path {finetuned}" in lines[-1], lines[-1]
    assert finetuned.read_bytes() == before
    assert not list(tmp_path.iterdir()), "a refused command left files behind"
