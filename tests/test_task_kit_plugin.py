"""The task kit's pytest option, run as an author runs it: pytest in a fresh process, in a
directory of its own, with ``-p roformer_lit.testing.pytest_plugin --task-kit``."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_distribution import write_distribution
from test_scheme_kit_plugin import pytest_in

from roformer_lit.data.probes.tasks import PROBE_TASKS
from roformer_lit.testing import task_checks

#: A conftest that registers a task making its own generator (the same data every seed).
CONSTANT_CONFTEST = """
import numpy as np

from roformer_lit.data.probes.tasks import PROBE_TASKS, ProbeTask


def constant(rng, batch, n, symbols, hint=0.0):
    x = np.random.default_rng(0).integers(0, symbols, size=(batch, n))
    return x, x.copy(), np.ones(n, dtype=bool)


PROBE_TASKS.register("constant", ProbeTask("constant", constant))
"""


def test_one_test_per_registered_task_and_check(tmp_path):
    listed = pytest_in(tmp_path, "--task-kit", "--collect-only")
    items = [line for line in listed.stdout.splitlines() if "task-kit[" in line]
    expected = [
        f"task-kit[{name}-{check}]"
        for name, task in PROBE_TASKS.items()
        for check in task_checks(task)
    ]
    assert [item.split("::")[-1] for item in items] == expected
    assert pytest_in(tmp_path, "--collect-only").stdout.count("task-kit[") == 0


def test_a_failing_task_check_is_reported_by_name_and_an_unknown_task_refused(tmp_path):
    (tmp_path / "conftest.py").write_text(CONSTANT_CONFTEST, encoding="utf-8")
    run = pytest_in(tmp_path, "--task-kit=constant,copy", "-k", "seeds or fields")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 failed, 3 passed" in run.stdout, run.stdout
    assert "seeds check failed for task 'constant' (options {}): AssertionError: seeds 0" in (
        run.stdout
    )
    refused = pytest_in(tmp_path, "--task-kit=cpoy")
    assert refused.returncode != 0
    assert "--task-kit: unknown task(s) cpoy; valid choices: constant, copy" in refused.stderr


def broken_task_installed(directory: Path) -> None:
    """A distribution in ``directory`` whose task entry point raises on import, and a
    module ``my_tasks`` beside it holding a task (``my_tasks:MINE``)."""
    (directory / "broken_task.py").write_text("raise RuntimeError('boom at import')\n")
    (directory / "my_tasks.py").write_text(
        "from roformer_lit.data.probes.tasks import PROBE_TASKS\nMINE = PROBE_TASKS['sort']\n"
    )
    write_distribution(
        directory, "broken-tasks", "0.1", "[roformer_lit.tasks]\nbroken = broken_task:TASK\n"
    )


@pytest.mark.parametrize(
    ("args", "code", "stream", "expected"),
    [
        # another package's broken task does not stop the kit over the tasks asked for
        (["--task-kit=copy", "-k", "seeds"], 0, "stdout", "1 passed"),
        # an import path is a task too
        (["--task-kit=my_tasks:MINE", "-k", "seeds"], 0, "stdout", "1 passed"),
        # the broken one asked for by name: one usage line naming it
        (["--task-kit=broken"], 4, "stderr", "--task-kit: data.probe 'broken' (entry point"),
        # over every task it is one failing test with the registry's line, not a skip
        (["--task-kit", "-k", "broken"], 1, "stdout", "RuntimeError: boom at import"),
    ],
)
def test_a_broken_task_plugin_is_reported_not_an_internal_error(
    tmp_path, args, code, stream, expected
):
    broken_task_installed(tmp_path)
    run = pytest_in(tmp_path, *args)
    assert run.returncode == code, run.stdout + run.stderr
    assert expected in getattr(run, stream), run.stdout + run.stderr
    assert "INTERNALERROR" not in run.stdout + run.stderr
