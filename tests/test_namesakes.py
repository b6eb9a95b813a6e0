"""A rerun of ``fit`` after a Ctrl-C starts a new run (``<stem>-k``); a note names the
runs of the same name that stopped before their end and the ``--ckpt_path`` that would
continue one, so the interrupted run is not silently left behind."""

from __future__ import annotations

import pytest

from roformer_lit.training import namesakes

STEM = "rope-softmax-seed0"

#: case -> (existing runs: name -> finished?, the new run's version, runs the note names)
CASES = {
    "first run": ({}, STEM, []),
    "one interrupted": ({STEM: False}, f"{STEM}-2", [STEM]),
    "one finished": ({STEM: True}, f"{STEM}-2", []),
    "interrupted and finished": (
        {STEM: False, f"{STEM}-2": True},
        f"{STEM}-3",
        [STEM],
    ),
    "numeric order": (
        {STEM: True, **{f"{STEM}-{k}": k != 10 for k in range(2, 11)}},
        f"{STEM}-11",
        [f"{STEM}-10"],
    ),
    "another variant": ({"rope-softmax-seed1": False, f"{STEM}-x": False}, STEM, []),
}


@pytest.mark.parametrize("case", list(CASES))
def test_the_note_names_the_unfinished_runs_of_the_same_name(case, tmp_path, monkeypatch):
    existing, version, expected = CASES[case]
    finished = {}
    for name, done in {**existing, version: False}.items():
        (tmp_path / name / "checkpoints").mkdir(parents=True)
        last = tmp_path / name / "checkpoints" / "last.ckpt"
        last.write_bytes(b"")
        finished[str(last)] = done
    monkeypatch.setattr(namesakes, "at_its_end", lambda path: finished[str(path)])
    found = namesakes.unfinished_namesakes(tmp_path, STEM, version)
    assert [p.name for p in found] == expected
    note = namesakes.namesakes_note(tmp_path, STEM, version)
    if expected:
        assert f"new run, {version}" in note, note
        assert note.endswith(f"--ckpt_path {tmp_path / expected[-1] / 'checkpoints' / 'last.ckpt'}")
    else:
        assert note is None
