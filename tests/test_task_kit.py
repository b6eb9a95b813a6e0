"""The task kit's checks (roformer_lit/testing/task_checks.py) over every registered
position task: the same functions an author runs with ``check_task(MY_TASK)``, parametrised
over :data:`~roformer_lit.data.probes.tasks.PROBE_TASKS`, so a task registered (or installed
as an entry point) is checked the moment it is; the kit's refusals of options and names it
does not take. That the kit fails broken tasks is tests/test_task_kit_fails.py."""

from __future__ import annotations

import pytest

from roformer_lit.data.probes.tasks import PROBE_TASKS
from roformer_lit.errors import ConfigError
from roformer_lit.testing import TASK_CHECKS, check_task, run_task_check, task_checks

CASES = [(task, check) for task, probe in PROBE_TASKS.items() for check in task_checks(probe)]


@pytest.mark.parametrize("task,check", CASES)
def test_registered_task_passes_the_kit(task, check):
    run_task_check(check, PROBE_TASKS[task])


def test_every_builtin_task_gets_every_check():
    """The default options leave every built-in task every check (recall's extrapolation
    lengths too: 7 and 8 pairs of 16 symbols)."""
    for name in PROBE_TASKS.builtin_names():
        assert task_checks(name) == list(TASK_CHECKS), name


def test_a_task_by_name_or_import_path_with_other_options_passes():
    check_task("recall", symbols=8, min_length=2, max_length=3, hint=0.9, seed=7)
    check_task("sort", checks=["seeds", "baselines"], symbols=4, max_length=12)


@pytest.mark.parametrize(
    "options,words",
    [
        ({"symbol": 16}, "unknown option(s) symbol; valid: symbols, min_length"),
        ({"symbols": 1}, "symbols=1 must be >= 2"),
        ({"max_length": 0}, "max_length=0 must be an int >= 1"),
        ({"min_length": 5, "max_length": 4}, "min_length=5 must be <= max_length=4"),
        ({"extrapolate_to": 3}, "extrapolate_to=3 must be None or an int >= max_length"),
        ({"hint": 1.0}, "hint=1.0 must be a number in [0, 1)"),
        ({"seed": "0"}, "seed='0' must be an int"),
    ],
)
def test_options_a_run_would_refuse_are_one_line(options, words):
    with pytest.raises(ConfigError) as refused:
        check_task("copy", **options)
    assert words in str(refused.value) and "\n" not in str(refused.value)


def test_unknown_checks_tasks_and_objects_are_refused():
    with pytest.raises(ValueError, match="unknown check 'seed'; valid: fields, alphabet"):
        check_task("copy", checks=["seed"])
    with pytest.raises(ValueError, match="checks is empty"):
        check_task("copy", checks=[])
    with pytest.raises(ConfigError, match="data.probe='cpoy' is not a probe task"):
        check_task("cpoy")
    with pytest.raises(TypeError, match="check_task takes a ProbeTask"):
        check_task(3)
