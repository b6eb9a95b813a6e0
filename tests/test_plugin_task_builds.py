"""A user's position task whose ``build`` returns what no batch can be, or draws from
anything but its generator, is one line naming it (roformer_lit/data/probes/built.py):
when a batch is made, and before any run, by the data module's pre-launch check."""

from __future__ import annotations

import sys

import pytest
from cli_helpers import REPO

from roformer_lit.commands import main as cli_main
from roformer_lit.data.probe_module import ProbeDataModule
from roformer_lit.data.probes.built import check_deterministic
from roformer_lit.data.probes.tasks import PROBE_TASKS, generate, probe_rng, probe_task
from roformer_lit.errors import PluginBuildFailed

CONFIG = REPO / "configs" / "probes" / "copy.yaml"

TASKS = """
import numpy as np
from roformer_lit.data.probes.tasks import ProbeTask

def _draw(rng, batch, n, symbols):
    return rng.integers(0, symbols, size=(batch, n), dtype=np.int64)

def _all(n):
    return np.ones(n, dtype=bool)

def good(rng, batch, n, symbols, hint=0.0):
    x = _draw(rng, batch, n, symbols)
    return x, np.roll(x, 1, axis=1), _all(n)

def too_high(rng, batch, n, symbols, hint=0.0):
    x = _draw(rng, batch, n, symbols)
    return x, x + 1, _all(n)

def negative(rng, batch, n, symbols, hint=0.0):
    x = _draw(rng, batch, n, symbols)
    return x, x - 1, _all(n)

def short(rng, batch, n, symbols, hint=0.0):
    x = _draw(rng, batch, n, symbols)
    return x, x[:, :-1], _all(n - 1)

def floats(rng, batch, n, symbols, hint=0.0):
    x = rng.random((batch, n)) * symbols
    return x, x, _all(n)

def mask_mismatch(rng, batch, n, symbols, hint=0.0):
    x = _draw(rng, batch, n, symbols)
    return x, x, _all(n + 2)

def no_answer(rng, batch, n, symbols, hint=0.0):
    x = _draw(rng, batch, n, symbols)
    return x, x, np.zeros(n, dtype=bool)

def extra_row(rng, batch, n, symbols, hint=0.0):
    x = _draw(rng, batch + 1, n, symbols)
    return x, x, _all(n)

def two_things(rng, batch, n, symbols, hint=0.0):
    x = _draw(rng, batch, n, symbols)
    return x, x

def raises(rng, batch, n, symbols, hint=0.0):
    raise RuntimeError("the task's own bug")

def global_state(rng, batch, n, symbols, hint=0.0):
    x = np.random.randint(0, symbols, size=(batch, n)).astype(np.int64)
    return x, x, _all(n)

GOOD = ProbeTask("good", good)
TOO_HIGH = ProbeTask("too_high", too_high)
NEGATIVE = ProbeTask("negative", negative)
SHORT = ProbeTask("short", short)
FLOATS = ProbeTask("floats", floats)
MASK_MISMATCH = ProbeTask("mask_mismatch", mask_mismatch)
NO_ANSWER = ProbeTask("no_answer", no_answer)
EXTRA_ROW = ProbeTask("extra_row", extra_row)
TWO_THINGS = ProbeTask("two_things", two_things)
RAISES = ProbeTask("raises", raises)
GLOBAL_STATE = ProbeTask("global_state", global_state)
# answers outside the alphabet it declares (the upper half), inside the symbols
HALF_ALPHABET = ProbeTask("half", good, alphabet=lambda symbols: (symbols // 2, symbols))
"""


@pytest.fixture
def tasks_module(tmp_path, monkeypatch):
    """A module ``my_tasks`` on ``sys.path`` holding the tasks above."""
    (tmp_path / "my_tasks.py").write_text(TASKS)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "my_tasks"
    PROBE_TASKS._resolved.clear()
    sys.modules.pop("my_tasks", None)


WRONG = [
    ("TOO_HIGH", "holds symbol 16, outside 0 .. 15"),
    ("NEGATIVE", "holds symbol -1, outside 0 .. 15"),
    ("SHORT", "built 16 tokens, but the task's sequence_length(8) is 17"),
    ("FLOATS", "prefix must hold integer symbol indices, got dtype float64"),
    ("MASK_MISMATCH", "answer marks 10 slots of a suffix of 8"),
    ("NO_ANSWER", "answer marks no slot"),
    ("EXTRA_ROW", "prefix has 5 rows for a batch of 4"),
    ("TWO_THINGS", "build must return (prefix, suffix, answer), got tuple"),
    ("RAISES", "RuntimeError: the task's own bug (at "),
    ("HALF_ALPHABET", "an answer slot (its alphabet) holds symbol"),
]


@pytest.mark.parametrize(("name", "expected"), WRONG)
def test_a_task_that_builds_no_batch_is_one_line_naming_it(tasks_module, name, expected):
    task = probe_task(f"{tasks_module}:{name}")
    with pytest.raises(PluginBuildFailed) as info:
        generate(task, probe_rng(0, "train", 0, 0), 4, 8, 16)
    message = str(info.value)
    assert "\n" not in message and expected in message, message
    assert message.startswith(f"data.probe {task.name!r} (build my_tasks."), message


def test_a_task_that_draws_from_numpys_global_state_is_refused(tasks_module):
    task = probe_task(f"{tasks_module}:GLOBAL_STATE")
    generate(task, probe_rng(0, "train", 0, 0), 4, 8, 16)  # one batch alone looks fine
    with pytest.raises(PluginBuildFailed, match="two builds from generators of one seed differ"):
        check_deterministic(task, 16, 8, 0.0, 0)


@pytest.mark.parametrize("name", list(PROBE_TASKS.builtin_names()))
def test_every_builtin_task_passes_the_checks(name):
    task = PROBE_TASKS[name]
    for n in (1, 4, 8):
        check_deterministic(task, 16, n, 0.5 if task.hint else 0.0, 3)


def test_a_good_plugin_task_passes(tasks_module):
    task = probe_task(f"{tasks_module}:GOOD")
    check_deterministic(task, 16, 8, 0.0, 0)
    input_ids, labels = generate(task, probe_rng(0, "val", 8, 0), 2, 8, 16)
    assert input_ids.shape == labels.shape == (2, 17)


@pytest.mark.parametrize("name", ["GLOBAL_STATE", "TOO_HIGH"])
def test_fit_refuses_a_wrong_task_before_any_run(tasks_module, name, tmp_path, monkeypatch, capsys):
    settings = {**ProbeDataModule.arguments(), "probe": f"{tasks_module}:{name}", "max_length": 33}
    with pytest.raises(PluginBuildFailed):
        ProbeDataModule.check_settings(settings)
    monkeypatch.chdir(tmp_path)
    args = ["fit", "--config", str(CONFIG), "--data.probe", f"{tasks_module}:{name}"]
    assert cli_main([*args, "--trainer.max_steps", "1"]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err and "data.probe" in lines[0], err
    assert not (tmp_path / "runs").exists()
