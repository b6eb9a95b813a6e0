"""Reading input is one guarded layer: every damaged file, in every
format and compression, for pretraining corpora and fine-tuning examples alike, is refused
with one ConfigError line naming it, and nothing read before the damage is accepted."""

from __future__ import annotations

import gzip
import json
import lzma
import random
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from cli_helpers import fit_args

from roformer_lit.commands import EXIT_USER_ERROR, main
from roformer_lit.data.hf_source import HFSource
from roformer_lit.data.sources import iter_file_documents
from roformer_lit.errors import ConfigError
from roformer_lit.finetune.examples import read_local

#: Enough lines that a damage in the middle comes after many documents were read.
N = 4000
TEXTS = [f"document {i} of the corpus says something about reader number {i * 7}" for i in range(N)]


def _corpus(fmt: str) -> bytes:
    if fmt == ".txt":
        return "".join(t + "\n" for t in TEXTS).encode()
    return "".join(json.dumps({"text": t}) + "\n" for t in TEXTS).encode()


def _task(fmt: str) -> bytes:
    if fmt == ".jsonl":
        rows = [json.dumps({"text": t, "label": i % 2}) + "\n" for i, t in enumerate(TEXTS)]
        return "".join(rows).encode()
    sep = "\t" if fmt == ".tsv" else ","
    return (
        f"text{sep}label\n" + "".join(f"{t}{sep}{i % 2}\n" for i, t in enumerate(TEXTS))
    ).encode()


def _zst(data: bytes) -> bytes:
    """Two frames: a reader must go across frames, and must not stop at a frame's end."""
    c = zstandard.ZstdCompressor()
    half = len(data) // 2
    return c.compress(data[:half]) + c.compress(data[half:])


COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    ".gz": gzip.compress,
    ".xz": lzma.compress,
    ".zst": _zst,
}


def _truncate(data: bytes) -> bytes:
    return data[: len(data) * 3 // 5]


def _corrupt_second_gzip_member(data: bytes) -> bytes:
    half = len(data) // 2
    second = bytearray(gzip.compress(data[half:]))
    for i in range(len(second) // 2, len(second) // 2 + 64):
        second[i] ^= 0xA5
    return gzip.compress(data[:half]) + bytes(second)


def _invalid_utf8(data: bytes) -> bytes:
    middle = data.index(b"document 3000 ")
    return data[:middle] + b"caf\xe9 " + data[middle:]


def _binary(data: bytes) -> bytes:
    rng = random.Random(0)
    return bytes(rng.randrange(256) for _ in range(8192)) + b"\x00" * 16


def _nul_in_the_middle(data: bytes) -> bytes:
    middle = data.index(b"document 3000 ")
    return data[:middle] + b"\x00" + data[middle:]


def _zstd_garbage(data: bytes) -> bytes:
    return _zst(data)[:64] + b"not zstd at all " * 64


#: damage -> (the compressions it applies to, what it does, the text the error must hold).
#: ``truncated`` cuts the compressed bytes; the others build the file from its content.
DAMAGES: dict[str, tuple[tuple[str, ...], Callable[[bytes], bytes], str]] = {
    "truncated": ((".gz", ".xz", ".zst"), _truncate, "truncated"),
    "corrupt_gzip_member": ((".gz",), _corrupt_second_gzip_member, ""),
    "zstd_garbage_after_a_frame": ((".zst",), _zstd_garbage, "cannot read"),
    "invalid_utf8": (("",), _invalid_utf8, ""),
    "binary_named_as_text": (("",), _binary, ""),
    "nul_in_the_middle": (("",), _nul_in_the_middle, ""),
}

CORPUS_FORMATS = (".txt", ".jsonl")
TASK_FORMATS = (".csv", ".tsv", ".jsonl")


def _write(tmp_path: Path, fmt: str, compression: str, damage: str, content: bytes) -> Path:
    _, apply, _ = DAMAGES[damage]
    path = tmp_path / f"data{fmt}{compression}"
    if damage == "truncated":
        content = COMPRESS[compression](content)
    path.write_bytes(apply(content))
    return path


def _cases(formats: tuple[str, ...]) -> list[tuple[str, str, str]]:
    return [
        (fmt, comp, damage)
        for damage, (compressions, _, _) in DAMAGES.items()
        for fmt in formats
        for comp in compressions
    ]


def _read_corpus(path: Path) -> list[str]:
    return list(iter_file_documents(path, "text"))


def _read_task(path: Path) -> list[object]:
    return list(read_local([path], "text", None, "label"))


def _assert_one_line_naming(exc: ConfigError, path: Path, expected: str) -> None:
    message = str(exc)
    assert "\n" not in message, message
    assert str(path) in message, message
    assert expected in message, message


@pytest.mark.parametrize("compression", ["", *COMPRESS])
@pytest.mark.parametrize(
    ("reader", "fmt"),
    [("corpus", f) for f in CORPUS_FORMATS] + [("task", f) for f in TASK_FORMATS],
)
def test_undamaged_files_read_to_their_end(reader, fmt, compression, tmp_path):
    """The control: the same content undamaged gives every record, in every compression
    (a two-frame .zst included)."""
    content = _corpus(fmt) if reader == "corpus" else _task(fmt)
    path = tmp_path / f"data{fmt}{compression}"
    path.write_bytes(COMPRESS[compression](content) if compression else content)
    if reader == "corpus":
        assert _read_corpus(path) == TEXTS
    else:
        examples = _read_task(path)
        assert [e.text for e in examples] == TEXTS
        assert [e.label for e in examples] == [i % 2 for i in range(N)]


@pytest.mark.parametrize(("fmt", "compression", "damage"), _cases(CORPUS_FORMATS))
def test_a_damaged_corpus_file_is_one_line_naming_it(fmt, compression, damage, tmp_path):
    path = _write(tmp_path, fmt, compression, damage, _corpus(fmt))
    with pytest.raises(ConfigError) as info:
        _read_corpus(path)  # raises before the reading ends: nothing partial is returned
    _assert_one_line_naming(info.value, path, DAMAGES[damage][2])


@pytest.mark.parametrize(("fmt", "compression", "damage"), _cases(TASK_FORMATS))
def test_a_damaged_task_file_is_one_line_naming_it(fmt, compression, damage, tmp_path):
    path = _write(tmp_path, fmt, compression, damage, _task(fmt))
    with pytest.raises(ConfigError) as info:
        _read_task(path)
    _assert_one_line_naming(info.value, path, DAMAGES[damage][2])


#: Damage inside one record of an otherwise good file: (file name, content, expected text).
RECORD_DAMAGES: dict[str, tuple[str, bytes, str]] = {
    "csv_field_over_the_csv_limit": (
        "long.csv",
        b'text,label\nshort,0\n"' + b"x" * 200_000 + b'",1\n',
        "field larger than field limit",
    ),
    "tsv_field_over_the_csv_limit": (
        "long.tsv",
        b"text\tlabel\nshort\t0\n" + b"y" * 200_000 + b"\t1\n",
        "field larger than field limit",
    ),
    "jsonl_integer_beyond_the_digit_limit": (
        "digits.jsonl",
        b'{"text": "a", "label": 0}\n{"text": "b", "label": ' + b"9" * 5000 + b"}\n",
        ":2: not JSON",
    ),
    "jsonl_nested_beyond_the_recursion_limit": (
        "deep.jsonl",
        b'{"text": "a", "label": 0}\n' + b"[" * 200_000 + b"]" * 200_000 + b"\n",
        ":2: not JSON",
    ),
}


@pytest.mark.parametrize("case", list(RECORD_DAMAGES))
def test_a_damaged_record_in_a_task_file_is_one_line_naming_it(case, tmp_path):
    name, content, expected = RECORD_DAMAGES[case]
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ConfigError) as info:
        _read_task(path)
    _assert_one_line_naming(info.value, path, expected)


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("jsonl_integer_beyond_the_digit_limit", ":2: line is not valid JSON"),
        ("jsonl_nested_beyond_the_recursion_limit", ":2: line is not valid JSON"),
    ],
)
def test_a_damaged_record_in_a_corpus_file_is_one_line_naming_it(case, expected, tmp_path):
    _, content, _ = RECORD_DAMAGES[case]
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(content)
    with pytest.raises(ConfigError) as info:
        _read_corpus(path)
    _assert_one_line_naming(info.value, path, expected)


#: Parquet text columns: the column's Arrow type -> whether it is text.
PARQUET_COLUMNS: dict[str, tuple[pa.Array, bool]] = {
    "string": (pa.array(["one text", "two texts"], pa.string()), True),
    "large_string": (pa.array(["one text", "two texts"], pa.large_string()), True),
    "dictionary": (pa.array(["one text", "two texts"]).dictionary_encode(), True),
    "list_of_strings": (pa.array([["one", "text"], ["two"]], pa.list_(pa.string())), False),
    "large_list_of_strings": (
        pa.array([["one"], ["two"]], pa.large_list(pa.large_string())),
        False,
    ),
    "struct_of_strings": (pa.array([{"s": "one"}, {"s": "two"}]), False),
    "map_of_strings": (
        pa.array([[("k", "v")], [("k", "w")]], pa.map_(pa.string(), pa.string())),
        False,
    ),
    "integers": (pa.array([1, 2]), False),
}


@pytest.mark.parametrize("column", list(PARQUET_COLUMNS))
def test_a_parquet_text_column_must_hold_plain_strings(column, tmp_path):
    values, is_text = PARQUET_COLUMNS[column]
    path = tmp_path / "corpus.parquet"
    pq.write_table(pa.table({"text": values}), path)
    if is_text:
        assert _read_corpus(path) == ["one text", "two texts"]
        return
    with pytest.raises(ConfigError) as info:
        _read_corpus(path)
    _assert_one_line_naming(info.value, path, "must hold strings")


@pytest.mark.parametrize("damage", ["cut_short", "corrupt_pages"])
def test_a_damaged_parquet_file_is_one_line_naming_it(damage, tmp_path):
    path = tmp_path / "corpus.parquet"
    pq.write_table(pa.table({"text": TEXTS}), path, row_group_size=500, compression="snappy")
    data = bytearray(path.read_bytes())
    if damage == "cut_short":
        data = data[: len(data) // 2]
    else:  # the data pages of the middle row groups, the footer intact
        for i in range(len(data) // 3, len(data) // 2):
            data[i] ^= 0x5A
    path.write_bytes(bytes(data))
    with pytest.raises(ConfigError) as info:
        _read_corpus(path)
    _assert_one_line_naming(info.value, path, "")


@pytest.mark.parametrize(
    ("name", "damage"),
    [("corpus.txt.zst", _truncate), ("corpus.jsonl.gz", _corrupt_second_gzip_member)],
)
@pytest.mark.trainer
def test_fit_on_a_damaged_corpus_exits_2_with_one_line(name, damage, tmp_path, monkeypatch, capsys):
    """Through the CLI: exit 2, one ``error:`` line naming the file, no traceback, no
    checkpoint (a truncated .zst trained on part of the file with exit 0)."""
    monkeypatch.chdir(tmp_path)
    content = _corpus(".jsonl" if ".jsonl" in name else ".txt")
    data = damage(content) if name.endswith(".gz") else damage(COMPRESS[".zst"](content))
    (tmp_path / name).write_bytes(data)
    capsys.readouterr()
    assert main(fit_args("rope.yaml", 2, "--data.train_files", name)) == EXIT_USER_ERROR
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and name in lines[0], err[-2000:]
    assert "Traceback" not in err
    assert not list(tmp_path.rglob("*.ckpt"))


@pytest.mark.parametrize(
    ("values", "is_text"),
    [
        (["one text", "two texts"], True),
        ([["one", "text"], ["two"]], False),
        ([{"s": "one"}, {"s": "two"}], False),
        ([1, 2], False),
    ],
    ids=["string", "list_of_strings", "struct_of_strings", "integers"],
)
def test_a_dataset_text_field_must_hold_plain_strings(values, is_text, tmp_path):
    """The same rule for a ``save_to_disk`` dataset (data.dataset): a struct passed the
    old dtype test and failed per row."""
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_dict({"text": values}).save_to_disk(str(tmp_path / "ds"))
    source = HFSource(str(tmp_path / "ds"))
    if is_text:
        assert list(source.documents()) == values
        return
    with pytest.raises(ConfigError) as info:
        list(source.documents())
    message = str(info.value)
    assert "\n" not in message and str(tmp_path / "ds") in message
    assert "not text" in message, message
