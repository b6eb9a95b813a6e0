"""The pre-launch check's held-back notes belong to the thread that runs the check.

A sweep checks its runs in threads at once (``tests/test_sweep.py``'s one process per GPU).
When the held notes were one module-level list, two overlapping checks swapped lists: the
second to finish met ``None`` (a ``TypeError`` out of the sweep) and left a list behind, so
every later ``note:`` line of the process was held and never printed.
"""

from __future__ import annotations

import threading

import pytest

from roformer_lit.commands import prelaunch

pytestmark = pytest.mark.fast


def _check_in_thread(
    entered: threading.Event, leave: threading.Event, note: str, errors: list
) -> None:
    try:
        with prelaunch.notes_after_checks():
            prelaunch.note_once(note)
            entered.set()
            assert leave.wait(10)
    except BaseException as error:  # noqa: BLE001 - reported to the test's thread
        errors.append(error)


def test_overlapping_checks_in_two_threads_each_print_their_notes(capsys) -> None:
    first_in, second_in = threading.Event(), threading.Event()
    first_out, second_out = threading.Event(), threading.Event()
    errors: list[BaseException] = []
    first = threading.Thread(
        target=_check_in_thread, args=(first_in, first_out, "held-per-thread first", errors)
    )
    second = threading.Thread(
        target=_check_in_thread, args=(second_in, second_out, "held-per-thread second", errors)
    )
    first.start()
    assert first_in.wait(10)
    second.start()
    assert second_in.wait(10)
    first_out.set()  # the first check ends while the second is still under way
    first.join(10)
    second_out.set()
    second.join(10)
    assert errors == []
    printed = capsys.readouterr().err.splitlines()
    assert printed.count("note: held-per-thread first") == 1
    assert printed.count("note: held-per-thread second") == 1
    # and nothing is left held: a later note of this thread prints at once
    prelaunch.note_once("held-per-thread after")
    assert capsys.readouterr().err.splitlines() == ["note: held-per-thread after"]
