"""A run's numerics (processor, torch, CPU threads): recorded in its checkpoints and named
when a run resumes under others (sums split over another number of threads, or rounded by
another processor's kernels, add up differently, so they are part of what makes a run's
numbers). ``sweep`` fixing the thread count whatever ``--jobs`` is: tests/test_sweep.py."""

from __future__ import annotations

import pytest
import torch
from cli_helpers import fit_preempted, probe_fit_args

from roformer_lit.commands import EXIT_PREEMPTED
from roformer_lit.commands import main as cli_main
from roformer_lit.training.lifecycle import NUMERICS_KEY, numerics_record, numerics_warning
from roformer_lit.training.numerics_history import HISTORY_KEY, extended, read_history, read_record

CPU = {"processor": "Intel Xeon", "torch": "2.13.0", "cpu_threads": 1}


@pytest.mark.parametrize(
    ("saved", "now", "names"),
    [
        (CPU, CPU, None),
        (None, CPU, None),  # a checkpoint from before the numerics were recorded
        (CPU, {**CPU, "cpu_threads": 2}, ["cpu_threads 2", "cpu_threads 1", "OMP_NUM_THREADS=1"]),
        (CPU, {**CPU, "processor": "AMD EPYC"}, ["processor AMD EPYC", "processor Intel Xeon"]),
        (CPU, {**CPU, "torch": "2.14.0"}, ["torch 2.14.0", "torch 2.13.0"]),
        # ran on a GPU, resumed on the CPU: the processor differs, the threads were unrecorded
        (
            {"processor": "NVIDIA H100", "torch": "2.13.0"},
            CPU,
            [
                "processor Intel Xeon, cpu_threads 1",
                "processor NVIDIA H100, cpu_threads unrecorded",
            ],
        ),
        # ran on the CPU, resumed on a GPU: threads play no part there
        (CPU, {"processor": "NVIDIA H100", "torch": "2.13.0"}, ["processor NVIDIA H100"]),
    ],
)
def test_numerics_warning(saved, now, names):
    message = numerics_warning(saved, now)
    if names is None:
        assert message is None
        return
    assert message is not None and "not bit for bit" in message
    for name in names:
        assert name in message
    # the OMP_NUM_THREADS hint only when the thread count is all that changed
    assert ("OMP_NUM_THREADS" in message) == any("OMP_NUM_THREADS" in n for n in names)


def test_the_cpu_record_names_this_machine():
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        record = numerics_record(torch.device("cpu"))
    finally:
        torch.set_num_threads(before)
    assert record["cpu_threads"] == 1 and record["torch"] == torch.__version__
    assert record["processor"]


#: One run of 12 steps, trained in stretches: each preempted at its last step (a finished
#: run is not continued), the last one ends the run.
RUN = probe_fit_args("copy", 12, 2)


def stretch(until: int, *extra: str) -> None:
    """Train ``RUN`` (with ``extra``: ``--ckpt_path``) up to step ``until``."""
    if until == 12:
        assert cli_main([*RUN, *extra]) == 0
    else:
        assert fit_preempted([*RUN, *extra], until) == EXIT_PREEMPTED


@pytest.mark.trainer
def test_a_checkpoint_records_its_threads_and_a_resume_with_others_says_so(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        stretch(4)
        (ckpt,) = tmp_path.rglob("last.ckpt")
        saved = torch.load(ckpt, map_location="cpu", weights_only=True)
        assert saved[NUMERICS_KEY] == numerics_record_at(1)
        capsys.readouterr()

        # resumed at the same count: nothing said
        stretch(6, "--ckpt_path", str(ckpt))
        assert "resumes with" not in capsys.readouterr().err

        # resumed at another count: one warning line naming both counts
        (ckpt,) = tmp_path.rglob("last.ckpt")
        torch.set_num_threads(2)
        stretch(8, "--ckpt_path", str(ckpt))
        lines = [line for line in capsys.readouterr().err.splitlines() if "resumes with" in line]
        expected = numerics_warning(numerics_record_at(1), numerics_record_at(2))
        assert lines == ["warning: " + expected]
        resumed = torch.load(ckpt, map_location="cpu", weights_only=True)
        assert resumed[NUMERICS_KEY] == numerics_record_at(2)  # the count of the run that wrote it
        # the history keeps both counts, each from the step its stretch began at
        assert resumed[HISTORY_KEY] == [
            {"from_step": 0, **numerics_record_at(1)},
            {"from_step": 6, **numerics_record_at(2)},
        ]

        # a tampered record (a string, a list) resumes with one warning, never a traceback
        for steps, damaged in ((10, "tampered"), (12, ["tampered"])):
            resumed[NUMERICS_KEY] = damaged
            torch.save(resumed, ckpt)
            capsys.readouterr()
            stretch(steps, "--ckpt_path", str(ckpt))
            err = capsys.readouterr().err
            warned = [line for line in err.splitlines() if "numerics record is a" in line]
            assert len(warned) == 1 and type(damaged).__name__ in warned[0], err[-2000:]
            resumed = torch.load(ckpt, map_location="cpu", weights_only=True)
            assert resumed[NUMERICS_KEY] == numerics_record_at(2)
    finally:
        torch.set_num_threads(before)


DAMAGED_HISTORY = {
    "absent, with a record": (None, CPU, [{"from_step": None, **CPU}], False),
    "absent, no record": (None, None, [], False),
    "a list of records": ([{"from_step": 0, **CPU}], CPU, [{"from_step": 0, **CPU}], False),
    "a string": ("x", CPU, [], True),
    "a list with a string": (["x", {"from_step": 3, **CPU}], CPU, [{"from_step": 3, **CPU}], True),
    "a mapping": ({"from_step": 0}, CPU, [], True),
}


@pytest.mark.parametrize("value", ["tampered", ["tampered"], 3, 2.5, True])
def test_a_damaged_record_reads_as_absent_with_a_warning(value):
    record, warning = read_record(value, "x.ckpt")
    assert record is None and warning is not None and "\n" not in warning
    assert warning.startswith("x.ckpt:") and type(value).__name__ in warning
    assert numerics_warning(record, CPU) is None  # what crashed the resume: now nothing to compare


@pytest.mark.parametrize("value", [None, CPU, {}])
def test_a_record_that_reads_is_kept(value):
    assert read_record(value, "x.ckpt") == (value, None)


@pytest.mark.parametrize("case", sorted(DAMAGED_HISTORY))
def test_the_history_keeps_every_entry_that_reads(case):
    value, record, kept, warned = DAMAGED_HISTORY[case]
    history, warning = read_history(value, record, "x.ckpt")
    assert history == kept and (warning is not None) == warned


def test_a_stretch_under_other_numerics_adds_an_entry():
    first = extended([], CPU, 0)
    assert first == [{"from_step": 0, **CPU}]
    assert extended(first, CPU, 40) == first  # the same numerics: one stretch
    other = {**CPU, "cpu_threads": 2}
    assert extended(first, other, 40) == [*first, {"from_step": 40, **other}]


def numerics_record_at(threads: int) -> dict:
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(threads)
        return numerics_record(torch.device("cpu"))
    finally:
        torch.set_num_threads(before)
