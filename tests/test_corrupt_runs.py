"""Damaged, partial and hostile run files given to ``compare`` and ``extrapolate``.

Every case asserts: no traceback; stderr holds only ``warning:``/``error:`` lines (one per
problem, naming the file); a damaged run beside a good one is skipped or tabled with a note
while the good run is still tabled (exit 0); nothing usable left is one ``error:`` line and
exit 2; no table row is blank. Permission cases skip where chmod denies nothing (root).
"""

from __future__ import annotations

import os
import shutil
import struct
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from cli_helpers import fit_args
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c

from roformer_lit.commands import main


def _chmod_denies() -> bool:
    """Whether a file of mode 000 is unreadable here (not as root with CAP_DAC_OVERRIDE)."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        probe = Path(tmp) / "probe"
        probe.write_text("x")
        probe.chmod(0)
        try:
            probe.read_text()
        except PermissionError:
            return True
        finally:
            probe.chmod(0o600)
    return False


CHMOD_DENIES = _chmod_denies()
GOOD = "rope-softmax-seed0"
DAMAGED = "rope-softmax-seed1"


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A 4-step tiny run directory (events, config.yaml, hparams.yaml, checkpoints)."""
    workdir = tmp_path_factory.mktemp("corrupt")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        assert main(fit_args("rope.yaml", 4)) == 0
    return workdir / "runs" / "mlm" / GOOD


def _run(args: list[str], capsys) -> tuple[int, str, list[str]]:
    """Exit code, stdout and stderr lines of the CLI, after the no-traceback checks."""
    capsys.readouterr()
    code = main(args)
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    own = [line for line in lines if line.startswith(("warning:", "error:"))]
    if code != 0:
        assert len([line for line in own if line.startswith("error:")]) == 1, err
    return code, out, own


def _events(run: Path) -> Path:
    (path,) = sorted(run.glob("events.out.tfevents.*"))
    return path


def _record(data: bytes) -> bytes:
    header = struct.pack("<Q", len(data))
    return (
        header
        + struct.pack("<I", masked_crc32c(header))
        + data
        + struct.pack("<I", masked_crc32c(data))
    )


# ------------------------------------------------------------------------------ compare


def _cut_last_bytes(run: Path) -> None:
    events = _events(run)
    events.write_bytes(events.read_bytes()[:-7])


def _damaged_record_data(run: Path) -> None:
    """One byte of the data of a record in the middle of the file flipped: its framing and
    header are intact, its data fails its checksum (TensorBoard's reader stops there
    without a word, so the run would read as if it ended before it)."""
    events = _events(run)
    data = bytearray(events.read_bytes())
    starts, offset = [], 0
    while offset < len(data):
        (length,) = struct.unpack("<Q", data[offset : offset + 8])
        starts.append((offset + 12, length))
        offset += 12 + length + 4
    start, length = starts[len(starts) // 2]
    data[start + length // 2] ^= 0xFF
    events.write_bytes(bytes(data))


def _garbage_events(run: Path) -> None:
    _events(run).write_bytes(os.urandom(3000))


def _framed_garbage(run: Path) -> None:
    _events(run).write_bytes(_record(b"\xff" * 40))


def _empty_events(run: Path) -> None:
    _events(run).write_bytes(b"")


def _config_not_yaml(run: Path) -> None:
    (run / "config.yaml").write_text("model: [unclosed\n  position: rope\n")


def _config_edited_after_the_run(run: Path) -> None:
    """config.yaml's learning rate changed after the run (hparams.yaml, saved from the same
    configuration, still says what the run trained with)."""
    config = run / "config.yaml"
    text = config.read_text()
    edited = text.replace("  learning_rate: 0.001\n", "  learning_rate: 0.003\n")
    assert edited != text
    config.write_text(edited)


def _config_a_directory(run: Path) -> None:
    (run / "config.yaml").unlink()
    (run / "config.yaml").mkdir()


def _config_a_fifo(run: Path) -> None:
    (run / "config.yaml").unlink()
    os.mkfifo(run / "config.yaml")


def _hparams_alias_bomb(run: Path) -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)]
    (run / "hparams.yaml").write_text("\n".join(lines) + "\n")


def _hparams_a_list(run: Path) -> None:
    (run / "hparams.yaml").write_text("- 1\n- 2\n")


def _config_not_utf8(run: Path) -> None:
    (run / "config.yaml").write_bytes(b"\xff\xfe\x00garbage")


def _no_event_file(run: Path) -> None:
    _events(run).unlink()


def _emptied(run: Path) -> None:
    shutil.rmtree(run)
    run.mkdir()


def _replaced_by_a_file(run: Path) -> None:
    shutil.rmtree(run)
    run.write_text("not a run\n")


def _truncated_checkpoint(run: Path) -> None:
    ckpt = run / "checkpoints" / "last.ckpt"
    ckpt.write_bytes(ckpt.read_bytes()[:100])


def _extra_files(run: Path) -> None:
    (run / "evaluations.jsonl").write_bytes(b'{"not": json\n\xff')
    (run / "notes.txt").write_text("anything")
    (run / "checkpoints" / "config.yaml").write_text("[not, a, mapping")


def _directory_named_like_events(run: Path) -> None:
    (run / "events.out.tfevents.0.dir").mkdir()


def _unreadable_dir(run: Path) -> None:
    run.chmod(0)


def _unreadable_events(run: Path) -> None:
    _events(run).chmod(0)


def _unreadable_config(run: Path) -> None:
    (run / "config.yaml").chmod(0)


#: name -> (damage, outcome, words the warning must hold). outcome: "noted" (the damaged
#: run is tabled with a note), "unfinished" (noted, and what could be read ends before the
#: run's last validation: left out of the means), "skipped" (left out, one warning), "ignored" (not a run, no
#: warning), "fine" (compare does not read what was damaged).
COMPARE_CASES: dict[str, tuple[Callable[[Path], None], str, tuple[str, ...]]] = {
    "events cut short": (_cut_last_bytes, "noted", ("events.out.tfevents", "truncated")),
    "events record data damaged": (
        _damaged_record_data,
        "unfinished",
        ("events.out.tfevents", "damaged at byte", "fails its checksum"),
    ),
    "events garbage": (_garbage_events, "skipped", ("not a TensorBoard event file",)),
    "events framed garbage": (_framed_garbage, "skipped", ("TensorBoard cannot read",)),
    "events empty": (_empty_events, "skipped", ("no scalars",)),
    "config not YAML": (_config_not_yaml, "noted", ("config.yaml", "not valid YAML")),
    "config not UTF-8": (_config_not_utf8, "noted", ("config.yaml", "UTF-8")),
    "config a directory": (_config_a_directory, "noted", ("config.yaml", "not a regular file")),
    "config edited after the run": (
        _config_edited_after_the_run,
        "noted",
        ("config.yaml and hparams.yaml disagree", "model.learning_rate 0.003 in config.yaml"),
    ),
    "config a FIFO": (_config_a_fifo, "noted", ("config.yaml", "not a regular file")),
    "hparams alias bomb": (_hparams_alias_bomb, "noted", ("hparams.yaml", "refused")),
    "hparams a list": (_hparams_a_list, "noted", ("hparams.yaml", "not a YAML mapping")),
    "no event file": (_no_event_file, "skipped", ("no event file",)),
    "emptied run dir": (_emptied, "ignored", ()),
    "file instead of run dir": (_replaced_by_a_file, "ignored", ()),
    "truncated checkpoint": (_truncated_checkpoint, "fine", ()),
    "extra files in the run": (_extra_files, "fine", ()),
    # TensorBoard's reader fails on the whole directory: skipped, and said why
    "directory named like events": (_directory_named_like_events, "skipped", ("directory",)),
    "unreadable run dir": (_unreadable_dir, "skipped", ("cannot be read",)),
    "unreadable events": (_unreadable_events, "skipped", ("cannot be read",)),
    "unreadable config": (_unreadable_config, "noted", ("config.yaml", "cannot be read")),
}
_NEEDS_MODES = {"unreadable run dir", "unreadable events", "unreadable config"}


@pytest.fixture
def restore_permissions():
    """Paths whose modes a test took away, given back so that tmp_path can be removed."""
    paths: list[Path] = []
    yield paths
    for path in paths:
        if os.path.lexists(path):
            path.chmod(0o755)
            for child in path.rglob("*") if path.is_dir() else []:
                child.chmod(0o755)


def _logdir_with_damaged_copy(trained: Path, tmp_path: Path) -> tuple[Path, Path]:
    """``tmp/runs/mlm/{GOOD,DAMAGED}``: two copies of the trained run, the second seed 1."""
    logdir = tmp_path / "runs"
    good, damaged = logdir / "mlm" / GOOD, logdir / "mlm" / DAMAGED
    shutil.copytree(trained, good)
    shutil.copytree(trained, damaged)
    config = damaged / "config.yaml"
    config.write_text(config.read_text().replace("seed_everything: 0", "seed_everything: 1"))
    return logdir, damaged


def _table(out: str) -> tuple[list[str], list[list[str]]]:
    """Header and rows of the first markdown table printed."""
    lines = [line for line in out.split("\n\n")[0].splitlines() if line.startswith("| ")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    return cells[0], cells[2:]


@pytest.mark.parametrize("case", list(COMPARE_CASES))
def test_compare_survives_a_damaged_run(trained, tmp_path, capsys, restore_permissions, case):
    damage, outcome, words = COMPARE_CASES[case]
    if case in _NEEDS_MODES and not CHMOD_DENIES:
        pytest.skip("file modes deny nothing here (root)")
    logdir, damaged = _logdir_with_damaged_copy(trained, tmp_path)
    damage(damaged)
    restore_permissions.append(damaged)
    code, out, own = _run(["compare", str(logdir)], capsys)
    assert code == 0, own
    header, rows = _table(out)
    assert len(rows) == 1 and rows[0][0] == "rope-softmax"
    row = dict(zip(header, rows[0], strict=True))
    if outcome in ("noted", "fine"):
        assert row["seeds"] == "2 (0, 1)"
    elif outcome == "unfinished":
        assert row["seeds"] == "1 (0) + 1 unfinished"
    else:
        assert row["seeds"] == "1 (0)"
    # no blank row: the good run's numbers are there, and every missing number is explained
    assert row["final val/loss"] != "–"
    if outcome in ("noted", "unfinished"):
        assert row["note"].startswith("seed 1:") and all(w in row["note"] for w in words)
    else:
        assert "note" not in row
    if outcome in ("noted", "unfinished", "skipped"):
        assert len(own) == 1 and own[0].startswith("warning:"), own
        assert str(damaged) in own[0] and all(w in own[0] for w in words), own
        assert own[0].endswith("skipped") == (outcome == "skipped")
    else:
        assert own == []


def test_compare_with_nothing_usable_is_one_error_line(trained, tmp_path, capsys):
    logdir = tmp_path / "runs"
    for name, damage in (("a-seed0", _garbage_events), ("b-seed1", _no_event_file)):
        shutil.copytree(trained, logdir / name)
        damage(logdir / name)
    code, out, own = _run(["compare", str(logdir)], capsys)
    assert code == 2 and out == ""
    assert [line.split(":")[0] for line in own] == ["warning", "warning", "error"]
    assert "no usable runs" in own[-1] and str(logdir) in own[-1]


@pytest.mark.parametrize("what", ["missing", "a file", "glob matching nothing", "unreadable"])
def test_compare_bad_logdir_is_one_error_line(trained, tmp_path, capsys, restore_permissions, what):
    if what == "unreadable" and not CHMOD_DENIES:
        pytest.skip("file modes deny nothing here (root)")
    target = {
        "missing": tmp_path / "nope",
        "a file": tmp_path / "file.txt",
        "glob matching nothing": tmp_path / "runs-*",
        "unreadable": tmp_path / "runs",
    }[what]
    if what == "a file":
        target.write_text("x")
    if what == "unreadable":
        shutil.copytree(trained, target / GOOD)
        target.chmod(0)
        restore_permissions.append(target)
    code, out, own = _run(["compare", str(target)], capsys)
    assert code == 2 and out == "" and str(target) in own[0]


def test_compare_expands_a_quoted_glob_and_warns_about_the_rest(trained, tmp_path, capsys):
    shutil.copytree(trained, tmp_path / "runs-a" / GOOD)
    code, out, own = _run(["compare", str(tmp_path / "runs-*"), str(tmp_path / "missing")], capsys)
    assert code == 0 and _table(out)[1][0][0] == "rope-softmax"
    assert len(own) == 1 and "missing" in own[0] and own[0].startswith("warning:")


def test_compare_out_that_is_a_file_is_refused_untouched(trained, tmp_path, capsys):
    shutil.copytree(trained, tmp_path / "runs" / GOOD)
    out_file = tmp_path / "report"
    out_file.write_text("keep me")
    code, out, own = _run(["compare", str(tmp_path / "runs"), "--out", str(out_file)], capsys)
    assert code == 2 and "not a directory" in own[0]
    assert out_file.read_text() == "keep me"


def test_compare_out_that_cannot_be_written_is_one_error_line(
    trained, tmp_path, capsys, restore_permissions
):
    if not CHMOD_DENIES:
        pytest.skip("file modes deny nothing here (root)")
    shutil.copytree(trained, tmp_path / "runs" / GOOD)
    out_dir = tmp_path / "report"
    out_dir.mkdir()
    out_dir.chmod(0o555)
    restore_permissions.append(out_dir)
    code, _, own = _run(["compare", str(tmp_path / "runs"), "--out", str(out_dir)], capsys)
    assert code == 2 and "cannot write" in own[0] and str(out_dir) in own[0]


# --------------------------------------------------------------------------- extrapolate


def _damaged_checkpoint(kind: str, good: Path, tmp_path: Path) -> Path:
    """A path that is not a usable checkpoint, of the given ``kind``."""
    path = tmp_path / f"{kind.replace(' ', '-')}.ckpt"
    if kind == "missing":
        return path
    if kind == "directory":
        path.mkdir()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "truncated":
        path.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    elif kind == "garbage":
        path.write_bytes(os.urandom(5000))
    elif kind == "zip of text":
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("notes.txt", "hello")
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "no state_dict":
        torch.save({"weights": torch.zeros(2)}, path)
    elif kind == "foreign state_dict":
        torch.save({"state_dict": {"w": torch.zeros(2)}, "hyper_parameters": {}}, path)
    elif kind == "corpus gone":
        checkpoint = torch.load(good, map_location="cpu", weights_only=True)
        checkpoint["datamodule_hyper_parameters"]["train_files"] = [str(tmp_path / "gone.txt")]
        torch.save(checkpoint, path)
    elif kind == "unreadable":
        shutil.copy(good, path)
        path.chmod(0)
    elif kind == "glob matching nothing":
        return tmp_path / "nothing-*.ckpt"
    return path


CKPT_CASES = [
    "missing",
    "directory",
    "empty",
    "truncated",
    "garbage",
    "zip of text",
    "fifo",
    "no state_dict",
    "foreign state_dict",
    "corpus gone",
    "unreadable",
    "glob matching nothing",
]


@pytest.mark.parametrize("kind", CKPT_CASES)
def test_extrapolate_refuses_a_damaged_checkpoint(trained, tmp_path, capsys, kind):
    if kind == "unreadable" and not CHMOD_DENIES:
        pytest.skip("file modes deny nothing here (root)")
    good = trained / "checkpoints" / "last.ckpt"
    bad = _damaged_checkpoint(kind, good, tmp_path)
    # alone: one error line naming it, exit 2, no table
    code, out, own = _run(["extrapolate", str(bad), "--lengths", "32"], capsys)
    assert code == 2 and out == ""
    assert len(own) == 1 and str(bad) in own[0], own
    # beside a good one: one warning naming it, and the good checkpoint's row
    code, out, own = _run(["extrapolate", str(bad), str(good), "--lengths", "32"], capsys)
    assert code == 0
    rows = [line for line in out.splitlines() if line.startswith("| ") and "---" not in line]
    rows = [line for line in rows if not line.startswith("| baseline:")]
    assert len(rows) == 2 and str(good) in rows[1] and float(rows[1].split("|")[4]) > 0
    assert len(own) == 1 and own[0].startswith("warning:") and str(bad) in own[0], own


def test_extrapolate_warns_about_an_unreadable_run_config_and_goes_on(trained, tmp_path, capsys):
    run = tmp_path / "runs" / GOOD
    shutil.copytree(trained, run)
    (run / "config.yaml").write_text("trainer: {precision: [\n")
    ckpt = run / "checkpoints" / "last.ckpt"
    code, out, own = _run(["extrapolate", str(ckpt), "--lengths", "32"], capsys)
    assert code == 0 and float(out.splitlines()[-1].split("|")[4]) > 0
    assert len(own) == 1 and str(run / "config.yaml") in own[0] and "not valid YAML" in own[0]


class _Payload:
    """Unpickling this calls ``open(marker, "w")``: it creates the marker file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_extrapolate_refuses_a_malicious_checkpoint_without_running_it(trained, tmp_path, capsys):
    marker = tmp_path / "payload-ran"
    evil = tmp_path / "evil.ckpt"
    checkpoint = torch.load(
        trained / "checkpoints" / "last.ckpt", map_location="cpu", weights_only=True
    )
    checkpoint["hyper_parameters"]["position_kwargs"] = {"x": _Payload(marker)}
    torch.save(checkpoint, evil)
    code, out, own = _run(["extrapolate", str(evil), "--lengths", "32"], capsys)
    assert code == 2 and out == ""
    assert len(own) == 1 and "refused" in own[0] and str(evil) in own[0]
    assert not marker.exists()
    # the payload is live: an unrestricted unpickling runs it
    torch.load(evil, map_location="cpu", weights_only=False)
    assert marker.exists()


def test_every_record_s_data_is_checked(trained, tmp_path):
    """A byte flipped in any one record's data is found: TensorBoard's reader stops at such
    a record without a word, so one near the end (after the last ``val/loss``) would table
    an earlier validation's ``val/ppl`` as the run's last, with no note."""
    from roformer_lit.results.events import check_event_file

    data = _events(trained).read_bytes()
    offset, damaged = 0, tmp_path / "events.out.tfevents.damaged"
    while offset < len(data):
        (length,) = struct.unpack("<Q", data[offset : offset + 8])
        if length:
            copy = bytearray(data)
            copy[offset + 12 + length // 2] ^= 0xFF
            damaged.write_bytes(bytes(copy))
            assert check_event_file(damaged) is not None, offset
        offset += 12 + length + 4
    damaged.write_bytes(data)
    assert check_event_file(damaged) is None
