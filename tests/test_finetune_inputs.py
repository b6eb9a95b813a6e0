"""Fine-tuning inputs: every record goes through one
check (texts are strings, labels finite numbers of a sane size), a resumed fine-tune keeps
its pretrained encoder, ``finetune validate`` needs no training file, and the CPU-sized
config trains on a task of any size."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from cli_helpers import fit_args, fit_preempted, overridden, tokenizer_section
from finetune_helpers import QUIET, keyword_rows, pretrained_checkpoint, write_csv
from lightning.pytorch.trainer.states import TrainerFn

from roformer_lit.commands import EXIT_PREEMPTED, EXIT_USER_ERROR, main
from roformer_lit.errors import ConfigError
from roformer_lit.finetune.examples import examples_from_rows, read_local
from roformer_lit.finetune.module import SequenceClassifier
from roformer_lit.finetune.pretrained import check_resumed_pretrained
from roformer_lit.training.checkpoint_io import read_checkpoint

CONFIGS = Path(__file__).resolve().parents[1] / "configs" / "finetune"


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pretrained_checkpoint(tmp_path_factory)


def local(pretrained: Path, train: Path | None, val: Path, *extra: str) -> list[str]:
    files = ["--data.train_files", str(train)] if train is not None else []
    defaults = [
        "finetune",
        "--config",
        str(CONFIGS / "local.yaml"),
        "--model.pretrained",
        str(pretrained),
        *files,
        "--data.val_files",
        str(val),
        "--trainer.max_steps",
        "1",
        *QUIET,
    ]
    return overridden(defaults, extra)


def error_line(args: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``args``; assert exit 2 and one ``error:`` line without a traceback; return it."""
    capsys.readouterr()
    assert main(args) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, err[-3000:]
    assert "Traceback" not in err
    return lines[0]


def _jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


GOOD = {"text": "the function returns a value", "label": 1}

#: record damage -> (file name, content, text_pair_field, text the error must hold)
RECORDS: dict[str, tuple[str, str, str | None, str]] = {
    "text_object": ("a.jsonl", json.dumps({"text": {"a": 1}, "label": 0}), None, "got dict"),
    "text_null": ("a.jsonl", json.dumps({"text": None, "label": 0}), None, "null or missing"),
    "text_list": ("a.jsonl", json.dumps({"text": ["a", "b"], "label": 0}), None, "got list"),
    "text_number": ("a.jsonl", json.dumps({"text": 42, "label": 0}), None, "got int"),
    "pair_object": (
        "a.jsonl",
        json.dumps({"text": "a", "second": {"b": 2}, "label": 0}),
        "second",
        "second must be a string, got dict",
    ),
    "pair_null": (
        "a.jsonl",
        json.dumps({"text": "a", "second": None, "label": 0}),
        "second",
        "second is null",
    ),
    "label_boolean": ("a.jsonl", json.dumps({"text": "a", "label": True}), None, "not a number"),
    "label_object": ("a.jsonl", json.dumps({"text": "a", "label": {"x": 1}}), None, "not a number"),
    "label_huge_integer": (
        "a.jsonl",
        json.dumps({"text": "a", "label": 10**40}),
        None,
        "out of range",
    ),
    "label_huge_float": ("a.jsonl", '{"text": "a", "label": 1e39}', None, "out of range"),
    "label_huge_string": ("a.csv", "text,label\na,1e300", None, "out of range"),
    "label_with_underscore": ("a.csv", "text,label\na,1_0", None, "'1_0' is not a number"),
    "label_in_other_digits": ("a.csv", "text,label\na,\u0661", None, "is not a number"),
    "json_key_twice": (
        "a.jsonl",
        '{"text": "a", "label": 0, "label": 1}',
        None,
        "key 'label' twice",
    ),
    "csv_row_without_label": ("a.csv", "text,label\nhello", None, "label=None is not a number"),
    "csv_row_without_text": ("a.csv", "label,text\n1", None, "text is null or missing"),
    "csv_row_with_extra_values": (
        "a.csv",
        "text,label\nhello, world,1",
        None,
        "more values than the header",
    ),
}


@pytest.mark.parametrize("case", list(RECORDS))
def test_a_bad_record_is_refused_in_one_line_naming_file_and_row(case, tmp_path):
    """The record check every local file goes through: a JSON object or null as text
    trained as its repr or as ''; now each is one line naming the file and the row."""
    name, bad, pair_field, expected = RECORDS[case]
    path = tmp_path / name
    if name.endswith(".jsonl"):
        good = dict(GOOD, second="a second text")
        path.write_text(json.dumps(good) + "\n" + bad + "\n", encoding="utf-8")
    else:  # a header, then the bad row
        path.write_text(bad + "\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        read_local([path], "text", pair_field, "label")
    message = str(info.value)
    assert "\n" not in message
    assert f"{path}:2" in message, message
    assert expected in message, message


#: file damage -> (file name, content, text_pair_field, text the error must hold)
FILES: dict[str, tuple[str, str, str | None, str]] = {
    "csv_label_column_twice": ("a.csv", "text,label,label\nx,0,1\ny,1,0\n", None, ":1: "),
    "csv_text_column_twice": ("a.csv", "text,text,label\nx,y,0\ny,x,1\n", None, ":1: "),
    "tsv_pair_column_twice": ("a.tsv", "text\tb\tb\tlabel\nx\ty\tz\t0\n", "b", ":1: "),
    "tsv_unbalanced_quote_swallows_rows": (
        "a.tsv",
        'text\tlabel\nok\t0\n"Hello he said\t1\nworld\t0\nthe end "\t1\nlast\t0\n',
        None,
        ":3: the value of 'text' spans lines and holds tabs",
    ),
    "tsv_unclosed_quote_to_the_end": (
        "a.tsv",
        'text\tlabel\nok\t0\n"Hello he said\t1\nworld\t0\n',
        None,
        ':3: a quote (") at the start of a value is never closed',
    ),
    "every_text_empty": ("a.csv", "text,label\n,0\n,1\n", None, "every text is empty"),
    "every_text_blank": ("a.jsonl", '{"text": " ", "label": 0}\n', None, "every text is empty"),
    "every_pair_blank": (
        "a.csv",
        "text,b,label\nx,,0\ny,\t,1\n",
        "b",
        "every b is empty",
    ),
}


@pytest.mark.parametrize("case", list(FILES))
def test_a_file_read_wrongly_without_a_word_is_refused(case, tmp_path):
    """A column named twice read the last one, a file of blank texts trained on
    ``[CLS] [SEP]`` alone, and an unbalanced quote in a TSV merged the rows after it into
    one text, all exit 0; now each is one line naming the file."""
    name, content, pair_field, expected = FILES[case]
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        read_local([path], "text", pair_field, "label")
    message = str(info.value)
    assert "\n" not in message and str(path) in message and expected in message, message


def test_unread_repeated_columns_and_a_few_blank_texts_are_kept(tmp_path):
    """What the checks above leave alone: repeated columns nothing reads (a spreadsheet's
    empty trailing ones), a blank text among real ones, a quoted TSV's line breaks."""
    path = tmp_path / "a.csv"
    path.write_text("text,label,,\nx,0,,\n ,1,,\n", encoding="utf-8")
    assert [e.label for e in read_local([path], "text", None, "label")] == [0, 1]
    quoted = tmp_path / "q.tsv"  # a TSV written quoted: a line break inside quotes is text
    quoted.write_text('text\tlabel\n"two\nlines"\t0\n"a ""quote"""\t1\n', encoding="utf-8")
    texts = [e.text for e in read_local([quoted], "text", None, "label")]
    assert texts == ["two\nlines", 'a "quote"']


#: case -> (training rows' texts, validation rows' texts, validation file is the training
#: file, the note's words or None)
OVERLAPS: dict[str, tuple[list[str], list[str], bool, str | None]] = {
    "the_same_file": (["a b", "c d", "e f"], [], True, "note: 3 of the 3 validation"),
    "a_copy": (["a b", "c d"], ["a b", "c d"], False, "note: 2 of the 2 validation"),
    "one_shared": (
        ["a b", "c d"],
        ["x y", "c d", "z w"],
        False,
        "note: 1 of the 3 validation examples (33%)",
    ),
    "disjoint": (["a b", "c d"], ["x y", "z w"], False, None),
}


@pytest.mark.parametrize("case", list(OVERLAPS))
def test_validation_texts_seen_in_training_get_a_note(case, tmp_path):
    """A validation file that is (or overlaps) the training file scored examples the model
    trained on without a word; now a ``note:`` line counts them (the fine-tune still runs:
    validating on training data can be meant)."""
    from roformer_lit.finetune import TaskDataModule

    train_texts, val_texts, same, expected = OVERLAPS[case]
    train = write_csv(
        tmp_path / "t.csv", [{"text": t, "label": i % 2} for i, t in enumerate(train_texts)]
    )
    val = (
        train
        if same
        else write_csv(
            tmp_path / "v.csv", [{"text": t, "label": i % 2} for i, t in enumerate(val_texts)]
        )
    )
    note = TaskDataModule(train_files=str(train), val_files=str(val)).overlap_note()
    if expected is None:
        assert note is None
    else:
        assert note is not None and expected in note and "\n" not in note, note
    assert TaskDataModule(val_files=str(val)).overlap_note() is None  # validate: no train


#: case -> (training labels, validation labels, the note's words or None)
UNSEEN_LABELS: dict[str, tuple[list[object], list[object], str | None]] = {
    "numbered_from_1_in_training": (
        [1, 2, 1, 2],
        [0, 1, 0, 1],
        "note: 2 of the 4 validation examples (50%) have labels no training example has (0;",
    ),
    "a_class_only_in_validation": ([0, 1, 0, 1], [0, 1, 2, 2], "(2; trained: 0, 1)"),
    "the_same_classes": ([0, 1, 2, 0], [2, 1, 0, 1], None),
    "fewer_classes_in_validation": ([0, 1, 2, 0], [1, 1, 1, 1], None),
    "a_regression": ([0.5, 1.5, 2.0, 0.0], [3.0, 7.25, 1.0, 0.0], None),
}


@pytest.mark.parametrize("case", list(UNSEEN_LABELS))
def test_validation_labels_never_trained_get_a_note(case, tmp_path):
    """A validation file whose classes are numbered otherwise than the training file's
    (train 1..2, val 0..1) was scored against a class the head never learned without a
    word; now a ``note:`` line counts those examples and names the labels."""
    from roformer_lit.finetune import TaskDataModule

    train_labels, val_labels, expected = UNSEEN_LABELS[case]
    train = write_csv(
        tmp_path / "t.csv",
        [{"text": f"the value {i}", "label": y} for i, y in enumerate(train_labels)],
    )
    val = write_csv(
        tmp_path / "v.csv", [{"text": f"a file {i}", "label": y} for i, y in enumerate(val_labels)]
    )
    notes = TaskDataModule(train_files=str(train), val_files=str(val)).notes()
    if expected is None:
        assert notes == []
    else:
        assert len(notes) == 1 and expected in notes[0] and "\n" not in notes[0], notes
    assert TaskDataModule(val_files=str(val)).notes() == []  # validate: no train


def test_a_fractional_label_for_a_classifier_is_named_as_not_a_class(pretrained, tmp_path):
    """A label 0.5 beside a two-class head was refused as 'outside the head's range 0..1',
    which it is not; the line now says it is not one of the classes, the integers 0..1."""
    from roformer_lit.finetune import TaskDataModule

    train = write_csv(
        tmp_path / "t.csv", [{"text": f"the value {i}", "label": i % 2} for i in range(4)]
    )
    val = write_csv(tmp_path / "v.csv", [{"text": "a file", "label": 0.5}])
    data = TaskDataModule(train_files=str(train), val_files=str(val), pretrained=str(pretrained))
    with pytest.raises(ConfigError) as caught:
        data.setup()
    line = str(caught.value)
    assert "label 0.5" in line and "the integers 0..1" in line and "outside" not in line, line


def test_the_text_checks_hold_for_the_shipped_rows_too():
    """GLUE rows and the shipped task go through the same record check."""
    rows = {"sentence": ["fine", None], "label": [0, 1]}
    with pytest.raises(ConfigError, match=r"sst2/train\[1\]: sentence is null"):
        examples_from_rows(rows, "sentence", None, "label", "sst2/train")


@pytest.mark.parametrize(
    ("case", "extra", "expected"),
    [
        ("label_1e12", [], "would need a head of 1000000000001 classes"),
        ("label_2_16", [], "would need a head of 65537 classes"),
        (
            "num_labels_1e12",
            ["--data.num_labels", str(10**12)],
            "data.num_labels must be null or an integer in 1..65536, got 1000000000000",
        ),
        ("text_object", [], "must be a string, got dict"),
        ("text_null", [], "text is null or missing"),
    ],
)
@pytest.mark.trainer
def test_fine_tuning_refuses_absurd_labels_and_non_text_before_building(
    case, extra, expected, pretrained, tmp_path, monkeypatch, capsys
):
    """An absurd integer label (or data.num_labels) would size the head hidden x label:
    terabytes. Refused in one line before anything is built or any run directory kept."""
    monkeypatch.chdir(tmp_path)
    rows: list[dict[str, object]] = [dict(r) for r in keyword_rows(16, seed=1)]
    if case == "label_1e12":
        rows[3]["label"] = 10**12
    elif case == "label_2_16":
        rows[3]["label"] = 2**16
    elif case == "text_object":
        rows[3]["text"] = {"title": "a", "body": "b"}
    elif case == "text_null":
        rows[3]["text"] = None
    train = _jsonl(tmp_path / "train.jsonl", rows)
    val = _jsonl(tmp_path / "val.jsonl", [dict(r) for r in keyword_rows(8, seed=2)])
    line = error_line(local(pretrained, train, val, *extra), capsys)
    assert expected in line, line
    assert not list(Path("runs").glob("finetune/*/")), "a refused run left its directory"


@pytest.fixture(scope="module")
def finetuned(pretrained: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(work directory, ``last.ckpt``) of a one-step fine-tune on the toy task."""
    work = tmp_path_factory.mktemp("finetuned_inputs")
    write_csv(work / "train.csv", keyword_rows(16, seed=1))
    write_csv(work / "val.csv", keyword_rows(8, seed=2))
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        assert main(local(pretrained, work / "train.csv", work / "val.csv")) == 0
    (ckpt,) = work.glob("runs/finetune/*/checkpoints/last.ckpt")
    return work, ckpt


@pytest.mark.trainer
def test_resuming_with_another_pretrained_encoder_is_refused(
    pretrained, finetuned, monkeypatch, capsys
):
    """Resuming a fine-tune with another pretrained checkpoint (here another scheme's) would
    build that encoder under the resumed weights and record it in last.ckpt: refused in one
    line naming both, the checkpoint untouched; the same one resumes."""
    work, ckpt = finetuned
    monkeypatch.chdir(work)
    assert main(fit_args("nope.yaml", 2)) == 0
    (other,) = Path("runs").glob("mlm/nope-*/checkpoints/last.ckpt")
    before = ckpt.read_bytes()
    args = local(other, work / "train.csv", work / "val.csv", "--trainer.max_steps", "2")
    line = error_line([*args, "--ckpt_path", str(ckpt)], capsys)
    assert str(pretrained) in line and str(other) in line, line
    assert ckpt.read_bytes() == before
    # the same pretrained checkpoint, named by another path to the same file, resumes a
    # run stopped before its end (a finished one is refused: test_resume_settings.py)
    alias = work / "same.ckpt"
    os.symlink(pretrained, alias)
    args = local(pretrained, work / "train.csv", work / "val.csv", "--trainer.max_steps", "2")
    version = ["--trainer.logger.init_args.version", "stopped"]
    assert fit_preempted([*args, *version], 1) == EXIT_PREEMPTED
    stopped = work / "runs" / "finetune" / "stopped" / "checkpoints" / "last.ckpt"
    assert torch.load(stopped, map_location="cpu", weights_only=True)["global_step"] == 1
    args = local(alias, work / "train.csv", work / "val.csv", "--trainer.max_steps", "2")
    assert main([*args, "--ckpt_path", str(stopped)]) == 0
    resumed = torch.load(stopped, map_location="cpu", weights_only=True)
    assert resumed["global_step"] == 2


@pytest.mark.parametrize(
    ("recorded", "named", "refused"),
    [
        ("a.ckpt", "a.ckpt", False),  # as written
        ("a.ckpt", "ABS/a.ckpt", False),  # the same file, another spelling
        ("a.ckpt", "link.ckpt", False),  # the same file through a link
        ("a.ckpt", "b.ckpt", True),  # another file
        ("gone/a.ckpt", "a.ckpt", True),  # the recorded one is not here: not provably it
        (None, "b.ckpt", False),  # nothing recorded: nothing to compare
    ],
)
def test_check_resumed_pretrained(recorded, named, refused, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("a.ckpt").write_bytes(b"a")
    Path("b.ckpt").write_bytes(b"b")
    os.symlink("a.ckpt", "link.ckpt")
    named = named.replace("ABS", str(tmp_path))
    if refused:
        with pytest.raises(ConfigError, match="was fine-tuned from") as info:
            check_resumed_pretrained("run.ckpt", recorded, named)
        assert str(recorded) in str(info.value) and named in str(info.value)
    else:
        check_resumed_pretrained("run.ckpt", recorded, named)


@pytest.mark.trainer
def test_finetune_validate_needs_no_training_files(finetuned, monkeypatch, capsys):
    """``finetune validate`` of a local task takes the head's size from the checkpoint and
    reads only the validation files."""
    work, ckpt = finetuned
    monkeypatch.chdir(work)
    evaluations = ckpt.parent.parent / "evaluations.jsonl"
    before = evaluations.read_text().splitlines() if evaluations.exists() else []
    args = ["finetune", "validate", "--config", str(CONFIGS / "local.yaml"), *QUIET]
    args += ["--data.val_files", str(work / "val.csv"), "--ckpt_path", str(ckpt)]
    capsys.readouterr()
    assert main(args) == 0, capsys.readouterr().err[-3000:]
    records = evaluations.read_text().splitlines()
    assert len(records) == len(before) + 1
    record = json.loads(records[-1])
    assert record["data"]["train_files"] is None
    assert "val/accuracy" in record["metrics"]


@pytest.mark.trainer
def test_finetune_validate_refuses_a_pretrained_of_another_tokenizer(
    pretrained, finetuned, monkeypatch, capsys
):
    """``finetune validate --model.pretrained`` with a copy of the run's pretrained
    checkpoint whose tokenizer swaps two ids evaluated the task through other token ids,
    exit 0 with a note blaming the files; now one line, and no evaluation is appended
    (the other cases: tests/test_finetune_validate_pretrained.py)."""
    work, ckpt = finetuned
    monkeypatch.chdir(work)
    checkpoint = read_checkpoint(pretrained)
    holder = next(k for k, v in checkpoint.items() if isinstance(v, dict) and "tokenizer_json" in v)
    tokenizer = json.loads(checkpoint[holder]["tokenizer_json"])
    vocab = tokenizer["model"]["vocab"]
    a, b = list(vocab)[10:12]
    vocab[a], vocab[b] = vocab[b], vocab[a]
    checkpoint[holder] = dict(checkpoint[holder], tokenizer_json=json.dumps(tokenizer))
    torch.save(checkpoint, work / "other_tokenizer.ckpt")
    evaluations = ckpt.parent.parent / "evaluations.jsonl"
    before = evaluations.read_text() if evaluations.exists() else None
    args = ["finetune", "validate", "--config", str(CONFIGS / "local.yaml"), *QUIET]
    args += ["--data.val_files", str(work / "val.csv"), "--ckpt_path", str(ckpt)]
    args += ["--model.pretrained", str(work / "other_tokenizer.ckpt")]
    assert "tokenizer is not the one" in error_line(args, capsys)
    assert (evaluations.read_text() if evaluations.exists() else None) == before


@pytest.mark.trainer
def test_fine_tuning_still_needs_training_files(pretrained, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    val = write_csv(tmp_path / "val.csv", keyword_rows(8, seed=2))
    for extra in ([], ["--data.num_labels", "2"]):
        line = error_line(local(pretrained, None, val, *extra), capsys)
        assert "data.train_files is not set" in line, line
        assert not list(Path("runs").glob("finetune/*/"))


@pytest.mark.trainer
def test_the_cpu_config_trains_max_steps_on_a_small_task(pretrained, tmp_path, monkeypatch):
    """configs/finetune/cpu.yaml over a task config: its settings apply, and max_steps
    decides the length even on a task of fewer batches than an epoch of it (16 examples,
    one batch an epoch)."""
    monkeypatch.chdir(tmp_path)
    train = write_csv(tmp_path / "train.csv", keyword_rows(16, seed=1))
    val = write_csv(tmp_path / "val.csv", keyword_rows(8, seed=2))
    args = local(pretrained, train, val, "--config", str(CONFIGS / "cpu.yaml"))
    assert main(overridden(args, ["--trainer.max_steps", "3"])) == 0
    (ckpt,) = Path("runs").glob("finetune/*/checkpoints/last.ckpt")
    checkpoint = torch.load(ckpt, map_location="cpu", weights_only=True)
    assert checkpoint["global_step"] == 3
    assert checkpoint["hyper_parameters"]["pooling"] == "mean"
    assert checkpoint["hyper_parameters"]["learning_rate"] == pytest.approx(2e-4)


def test_the_module_refuses_another_pretrained_encoder_when_resumed(pretrained, tmp_path):
    """Without the CLI (``Trainer.fit(model, ckpt_path=...)``) the module checks it too,
    when the checkpoint is loaded to resume a fit; evaluating loads it regardless."""
    model = SequenceClassifier(pretrained=str(pretrained), num_labels=2)
    other = tmp_path / "other.ckpt"
    other.write_bytes(b"x")
    checkpoint = {"state_dict": {}, "hyper_parameters": {"pretrained": str(other)}}
    for fn, refused in ((TrainerFn.FITTING, True), (TrainerFn.VALIDATING, False)):
        model._trainer = SimpleNamespace(state=SimpleNamespace(fn=fn), ckpt_path="run.ckpt")
        if refused:
            with pytest.raises(ConfigError, match="was fine-tuned from"):
                model.on_load_checkpoint(checkpoint)
        else:
            model.on_load_checkpoint(checkpoint)


#: (texts, share of their tokens that tiny_tokenizer cannot encode), by counting words:
#: ``w<i>`` with 5 <= i < 100 is a token of its own, anything else one [UNK].
UNKNOWN_SHARES = {
    "all known": (["w5 w6", "w7"], 0.0),
    "all unknown": (["the movie was great"], 1.0),
    "a third": (["w5 w6 movie", "w9 w10 fine"], 2 / 6),
    "out of range id": (["w5 w100"], 1 / 2),
    "no tokens": (["", "   "], 0.0),
}


@pytest.mark.parametrize("case", sorted(UNKNOWN_SHARES))
def test_unknown_share_counts_unknown_tokens(case):
    from tokenizer_factory import tiny_tokenizer

    from roformer_lit.finetune.pretrained import unknown_share

    texts, expected = UNKNOWN_SHARES[case]
    assert unknown_share(tiny_tokenizer(100), texts) == pytest.approx(expected)


@pytest.mark.trainer
def test_a_position_task_checkpoint_is_refused(tmp_path, monkeypatch, capsys):
    """A probe run's tokenizer encodes English as padding: fine-tuning it would train on
    nothing; refused in one line before a run directory is made."""
    from cli_helpers import probe_fit_args

    monkeypatch.chdir(tmp_path)
    assert main(probe_fit_args("copy", 2, 2)) == 0
    (probe,) = Path("runs").glob("probes/*/checkpoints/last.ckpt")
    write_csv(tmp_path / "train.csv", keyword_rows(16, seed=1))
    write_csv(tmp_path / "val.csv", keyword_rows(8, seed=2))
    line = error_line(local(probe, tmp_path / "train.csv", tmp_path / "val.csv"), capsys)
    assert str(probe) in line and "position task 'copy'" in line, line
    assert not list(Path("runs").glob("finetune/*/")), "a refused run left its directory"


@pytest.mark.trainer
def test_a_tokenizer_that_cannot_encode_the_task_is_refused(
    pretrained, tmp_path, monkeypatch, capsys
):
    """The pretrained checkpoint with a tokenizer of ``w<i>`` words only: every word of the
    task is [UNK]; refused in one line naming the share; the real tokenizer fine-tunes."""
    from tokenizer_factory import tiny_tokenizer

    from roformer_lit.data.stored_tokenizer import TOKENIZER_KEY

    monkeypatch.chdir(tmp_path)
    checkpoint = torch.load(pretrained, map_location="cpu", weights_only=True)
    tokenizer_section(checkpoint)[TOKENIZER_KEY] = tiny_tokenizer(100).to_str()
    other = tmp_path / "words.ckpt"
    torch.save(checkpoint, other)
    write_csv(tmp_path / "train.csv", keyword_rows(16, seed=1))
    write_csv(tmp_path / "val.csv", keyword_rows(8, seed=2))
    line = error_line(local(other, tmp_path / "train.csv", tmp_path / "val.csv"), capsys)
    assert str(other) in line and "100%" in line and "unknown or padding" in line, line
    assert not list(Path("runs").glob("finetune/*/")), "a refused run left its directory"
    assert main(local(pretrained, tmp_path / "train.csv", tmp_path / "val.csv")) == 0
