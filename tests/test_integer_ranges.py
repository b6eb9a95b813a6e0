"""Every integer setting a user can type has a declared range, lower and upper bound, in
its rule table, and a huge value (``2**63``, ``10**30``) is one ``error:`` line naming the
setting, the value and the range: exit 2, no traceback, no run directory. A size inside its
range that cannot fit the machine is refused by the bytes it would allocate.

The cases are generated from the tables, so a setting declared tomorrow is tested the
moment it is declared; the completeness tests make sure no integer argument of the
classes a user configures is left out of them."""

from __future__ import annotations

import inspect
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import CONFIGS, fit_args, probe_fit_args
from lightning.pytorch import Trainer

from roformer_lit import validation
from roformer_lit.commands import EXIT_USER_ERROR, main
from roformer_lit.commands.prelaunch import check_fit_config
from roformer_lit.data.corpus_module import CORPUS_RULES, CorpusDataModule
from roformer_lit.data.datamodule import BASE_RULES, PretrainDataModule
from roformer_lit.data.modules import check_data_section
from roformer_lit.data.probe_module import PROBE_RULES, ProbeDataModule
from roformer_lit.errors import ConfigError
from roformer_lit.finetune.datamodule import TASK_DATA_RULES, TaskDataModule
from roformer_lit.finetune.module import CLASSIFIER_RULES, SequenceClassifier
from roformer_lit.module import MODEL_RULES, MaskedLM
from roformer_lit.validation import RUN_RULES, TRAINER_RULES, Rule

#: (prefix on the command line, rule table, the class whose arguments it holds)
TABLES: dict[str, tuple[str, dict[str, Rule], Any]] = {
    "model": ("model.", MODEL_RULES, MaskedLM),
    "corpus data": ("data.", CORPUS_RULES, CorpusDataModule),
    "probe data": ("data.", PROBE_RULES, ProbeDataModule),
    "trainer": ("trainer.", TRAINER_RULES, Trainer),
    "run": ("", RUN_RULES, None),
    "finetune data": ("data.", TASK_DATA_RULES, TaskDataModule),
    "finetune model": ("model.", CLASSIFIER_RULES, SequenceClassifier),
}
#: Every integer setting: (table, setting, its rule).
INTEGER_SETTINGS = [
    (table, name, rule)
    for table, (_, rules, _) in TABLES.items()
    for name, rule in rules.items()
    if rule.integers is not None
]
HUGE = [2**63, 10**30]
#: Integer arguments that are not user settings: filled by a link from another section.
LINKED = {("model", "vocab_size"), ("finetune model", "num_labels"), ("finetune data", "seed")}
#: Trainer arguments annotated with ``int`` that are not integer settings.
NOT_INTEGERS = {"gradient_clip_val", "max_time"}  # a float; a duration


def takes_int(annotation: Any) -> bool:
    """Whether an annotation admits an ``int`` that is not a ``bool`` alone."""
    if annotation is int:
        return True
    return any(takes_int(arg) for arg in typing.get_args(annotation))


def integer_arguments(cls: Any) -> list[str]:
    # a data module's arguments are its own and, through ``**kwargs``, its base's
    inits = [cls.__init__]
    if issubclass(cls, PretrainDataModule):
        inits = [k.__init__ for k in cls.__mro__ if issubclass(k, PretrainDataModule)]
    names = []
    for init in inits:
        hints = typing.get_type_hints(init)
        names += [
            name
            for name in inspect.signature(init).parameters
            if name in hints and takes_int(hints[name]) and name not in NOT_INTEGERS
        ]
    return names


@pytest.mark.parametrize("table", [t for t, (_, _, cls) in TABLES.items() if cls is not None])
def test_every_integer_argument_has_a_bounded_rule(table):
    _, rules, cls = TABLES[table]
    missing = [
        name for name in integer_arguments(cls) if name not in rules or rules[name].integers is None
    ]
    assert not missing, f"{table}: integer arguments without a declared range: {missing}"
    if table == "trainer":  # the integers of the other settings the table names
        return
    for name in rules:
        if rules[name].integers is not None:
            assert name in integer_arguments(cls), f"{table}.{name} is not an int argument"


def test_the_tables_hold_integer_settings():
    names = {(t, n) for t, n, _ in INTEGER_SETTINGS}
    for expected in [
        ("probe data", "probe_symbols"),
        ("corpus data", "random_positions"),
        ("probe data", "seed"),
        ("model", "hidden_size"),
        ("trainer", "max_steps"),
        ("run", "seed_everything"),
        ("finetune data", "batch_size"),
    ]:
        assert expected in names


@pytest.mark.parametrize(("table", "name", "rule"), INTEGER_SETTINGS)
def test_each_integer_rule_takes_its_bounds_and_nothing_beyond(table, name, rule):
    low, high = rule.integers
    assert low < high
    assert rule.accepts(low) and rule.accepts(high)
    for value in [high + 1, *HUGE, -(2**63), low - 1]:
        assert not rule.accepts(value), (table, name, value)
        prefix = TABLES[table][0]
        with pytest.raises(ConfigError) as info:
            validation.check(prefix + name, value, rule)
        message = str(info.value)
        assert "\n" not in message
        assert message.startswith(f"{prefix}{name} must be ") and message.endswith(repr(value))
        assert str(high) in message, message  # the valid range, upper bound included


def test_seeds_are_those_numpy_and_torch_take():
    import numpy as np
    import torch

    high = RUN_RULES["seed_everything"].integers[1]
    assert BASE_RULES["seed"].integers == (0, high)
    np.random.seed(high)  # the largest accepted seed works in both
    torch.manual_seed(high)
    with pytest.raises(ValueError):
        np.random.seed(high + 1)  # and the next one is what numpy refuses


# -- through the command line: one line, exit 2, nothing created --------------------------------


def snapshot(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def cli_setting(table: str, name: str) -> str:
    return f"{TABLES[table][0]}{name}"


PRETRAIN_CASES = [
    (table, name)
    for table, name, _ in INTEGER_SETTINGS
    if table in ("model", "data", "trainer", "run") and (table, name) not in LINKED
]
FINETUNE_CASES = [
    (table, name)
    for table, name, _ in INTEGER_SETTINGS
    if table.startswith("finetune") and (table, name) not in LINKED
]


def assert_refused(args: list[str], setting: str, value: int, work: Path, capsys) -> None:
    before = snapshot(work)
    capsys.readouterr()
    code = main(args)
    err = capsys.readouterr().err
    assert code == EXIT_USER_ERROR, err[-2000:]
    lines = err.strip().splitlines()
    assert [line for line in lines if line.startswith("error:")] == [lines[-1]], err[-2000:]
    assert "Traceback" not in err
    assert lines[-1].startswith(f"error: {setting} must be "), lines[-1]
    assert str(value) in lines[-1]
    assert snapshot(work) == before, "something was created"


@pytest.mark.parametrize(("table", "name"), PRETRAIN_CASES)
@pytest.mark.trainer
def test_a_huge_value_of_every_pretraining_integer_is_one_line(
    table, name, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    setting = cli_setting(table, name)
    assert_refused(
        fit_args("rope.yaml", 2, f"--{setting}", str(2**63)), setting, 2**63, tmp_path, capsys
    )


@pytest.mark.parametrize(("table", "name"), FINETUNE_CASES)
@pytest.mark.trainer
def test_a_huge_value_of_every_finetuning_integer_is_one_line(
    table, name, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    setting = cli_setting(table, name)
    args = [
        "finetune",
        "--config",
        str(CONFIGS / "finetune" / "movie_polarity.yaml"),
        "--model.pretrained",
        "missing.ckpt",  # read after the pre-launch check: the setting is refused first
        f"--{setting}",
        str(10**30),
    ]
    assert_refused(args, setting, 10**30, tmp_path, capsys)


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("data.probe_symbols", 2**63),
        pytest.param("data.random_positions", 10**30, marks=pytest.mark.slow),
        pytest.param("data.seed", 2**64, marks=pytest.mark.slow),
    ],
)
@pytest.mark.trainer  # a real process: outside the fast tier
def test_in_a_real_process_a_huge_probe_setting_is_one_line(setting, value, tmp_path):
    before = snapshot(tmp_path)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "roformer_lit",
            *probe_fit_args("copy", 2, 2, 4, f"--{setting}", str(value)),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == EXIT_USER_ERROR, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert [line for line in lines if line.startswith("error:")] == [lines[-1]]
    assert lines[-1].startswith(f"error: {setting} must be ") and str(value) in lines[-1]
    assert snapshot(tmp_path) == before


# -- sizes inside their ranges that cannot fit the machine --------------------------------------

GIB = 2**30


def probe_settings(**overrides: Any) -> dict[str, Any]:
    values = dict(probe="copy", max_length=40, probe_max_length=16, batch_size=32)
    values.update(overrides)
    return values


@pytest.fixture
def machine_of(monkeypatch):
    """Pretend this machine has ``n`` bytes of memory."""

    def set_memory(n: int) -> None:
        monkeypatch.setattr(validation, "physical_memory_bytes", lambda: n)

    return set_memory


def test_random_positions_are_refused_by_the_bytes_of_one_draw(machine_of):
    # one draw is a permutation of [0, R) in int64: 8 R bytes (plus a batch: 3 * 8 * B * L)
    batch = 3 * 8 * 32 * 40
    machine_of(8 * 2**27 + batch + 16 * 256 + 3 * 8 * 256 * 40 + 8 * 32 * 16)  # exactly enough
    check_data_section(probe_settings(random_positions=2**27))
    with pytest.raises(ConfigError) as info:
        check_data_section(probe_settings(random_positions=2**27 + 1))
    message = str(info.value)
    assert "data.random_positions=134217729" in message and "this machine has" in message


def test_probe_symbols_are_refused_by_the_bytes_of_the_vocabulary(machine_of):
    machine_of(GIB)
    check_data_section(probe_settings(probe_symbols=2**20))  # 2**20 * 256 + 2**20 * 8 * 32
    with pytest.raises(ConfigError, match=r"data.probe_symbols=16777216\b.*this machine has 1 GiB"):
        check_data_section(probe_settings(probe_symbols=2**24))


def test_a_batch_is_refused_by_its_bytes(machine_of):
    machine_of(GIB)
    with pytest.raises(ConfigError, match=r"data.batch_size=100000, data.max_length=1000\b"):
        check_data_section(probe_settings(probe=None, batch_size=100_000, max_length=1000))


def test_the_model_is_refused_by_the_bytes_of_its_weights_built_on_the_meta_device(
    machine_of, monkeypatch
):
    """The encoder's weights, counted on the meta device, against the memory; a position
    table (``learned``: max_positions x hidden) counts as much as the embeddings."""
    from roformer_lit.commands import prelaunch

    model = {k: p.default for k, p in inspect.signature(MaskedLM.__init__).parameters.items()}
    model.pop("self")
    model.update(position="learned", hidden_size=64, num_layers=1, intermediate_size=64)
    machine_of(GIB)
    prelaunch.check_model(model, 1000, 128)
    model["max_positions"] = 2**22  # 2**22 x 64 float32 = 1 GiB for the table alone
    with pytest.raises(ConfigError, match="the model's weights .* this machine has 1 GiB"):
        prelaunch.check_model(model, 1000, 128)


@pytest.mark.trainer
def test_a_probe_vocabulary_sized_embedding_is_refused_before_anything(
    tmp_path, monkeypatch, capsys, machine_of
):
    machine_of(4 * GIB)
    monkeypatch.chdir(tmp_path)
    code = main(
        probe_fit_args(
            "copy", 2, 2, 4, "--data.probe_symbols", str(2**24), "--model.hidden_size", "256"
        )
    )
    err = capsys.readouterr().err
    assert code == EXIT_USER_ERROR
    assert err.strip().splitlines()[-1].startswith("error: ")
    assert "this machine has 4 GiB" in err
    assert not (tmp_path / "runs").exists()


@pytest.mark.trainer
def test_check_fit_config_passes_the_shipped_configs():
    from roformer_lit.commands.pretrain import validate_config

    for config in ["rope.yaml", "alibi.yaml", "probes/copy.yaml"]:
        check_fit_config(validate_config(["--config", str(CONFIGS / config)]))


#: Lengths inside their ranges whose sample build alone would not fit: (overrides, what
#: the one line names). ``max_length`` is sized to hold the sequences where it must.
HUGE_LENGTHS = [
    ({"probe_max_length": 10**9}, "data.max_length=40 is too short"),
    ({"probe_min_length": 10**9, "probe_max_length": 10**9}, "data.max_length=40 is too short"),
    ({"probe_max_length": 10**8, "max_length": 2 * 10**9 + 1}, "this machine has 1 GiB"),
]


@pytest.mark.parametrize("task", ["copy", "reverse", "sort", "odds_first"])
@pytest.mark.parametrize(("overrides", "named"), HUGE_LENGTHS)
def test_a_task_is_built_only_after_its_sizes_are_known_to_fit(
    task, overrides, named, machine_of, monkeypatch
):
    """The pre-launch check builds a few sequences of the task (its determinism); before
    the lengths were checked against ``max_length`` and the memory, a
    ``probe_max_length`` of 10**9 allocated 30 GiB there: a traceback (MemoryError)
    instead of one line."""
    from roformer_lit.data import probe_module

    def no_huge_build(task: Any, symbols: int, n: int, *rest: Any) -> None:
        assert n <= 10**4, f"built {n}-long sequences before the sizes were checked"

    monkeypatch.setattr(probe_module, "check_deterministic", no_huge_build)
    machine_of(GIB)
    with pytest.raises(ConfigError, match=named):
        check_data_section(probe_settings(probe=task, **overrides))
