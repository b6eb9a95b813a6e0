"""A checkpoint is read only where each scheme and kernel it records is, here, the object it
trained with (:mod:`roformer_lit.component_origins`).

Each case writes a checkpoint whose ``components`` record says where a name came from, and
installs (a ``.dist-info`` on ``sys.path``) what that name is now; the one reader of
checkpoints (``read_checkpoint``, behind ``validate``, resume, ``extrapolate``, ``export``
and ``finetune``) refuses, in one line naming both, a name that now means another object,
and reads one whose only change is the distribution's version."""

from __future__ import annotations

import shutil
import sys

import pytest
import torch
from fake_distribution import write_distribution

from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.component_origins import COMPONENTS_KEY, record, recorded_origins
from roformer_lit.data.probes.tasks import PROBE_TASKS
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.finetune.pretrained import encoder_config as pretrained_encoder_config
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.positions.nope import NoPosition
from roformer_lit.registry import _entry_points_of
from roformer_lit.training.checkpoint_io import read_checkpoint

PLUGIN = """
from roformer_lit.positions.nope import NoPosition
from roformer_lit.attention.softmax import SoftmaxAttention

class Trained(NoPosition):
    pass

class Other(NoPosition):
    pass

class TrainedKernel(SoftmaxAttention):
    pass

class OtherKernel(SoftmaxAttention):
    pass

from roformer_lit.data.probes.tasks import PROBE_TASKS
TRAINED_TASK = PROBE_TASKS["copy"]
OTHER_TASK = PROBE_TASKS["reverse"]
"""


def entry_point(value: str, version: str = "1.0.0") -> dict[str, str]:
    """An entry point's origin as ``fit`` records it."""
    return {
        "source": "entry_point",
        "group": "roformer_lit.positions",
        "value": value,
        "distribution": "my-plugins",
        "version": version,
    }


class Registered(NoPosition):
    """A scheme registered in this process (a notebook's ``register``)."""


#: (case, the checkpoint's record, what is installed now, the refusal's words or None).
CASES = [
    (
        "an entry point that now names another class",
        {"position:mine": entry_point("my_plugin:Trained")},
        "[roformer_lit.positions]\nmine = my_plugin:Other\n",
        ["'mine'", "'my_plugin:Trained'", "'my_plugin:Other'", "install the plugin"],
    ),
    (
        "a kernel's entry point that now names another class",
        {"attention:mine": entry_point("my_plugin:TrainedKernel")},
        "[roformer_lit.kernels]\nmine = my_plugin:OtherKernel\n",
        ["attention 'mine'", "'my_plugin:TrainedKernel'", "'my_plugin:OtherKernel'"],
    ),
    (
        "an entry point whose name is now a built-in's",
        {"position:rope": entry_point("my_plugin:Trained")},
        "",
        ["position 'rope'", "'my_plugin:Trained'", "the built-in"],
    ),
    (
        "a built-in whose name is now an entry point's",
        {"position:mine": {"source": "builtin"}},
        "[roformer_lit.positions]\nmine = my_plugin:Trained\n",
        ["position 'mine'", "from the built-in", "'my_plugin:Trained'"],
    ),
    (
        "a registered class of another module",
        {"position:registered": {"source": "registered", "module": "my_notebook"}},
        "",
        ["position 'registered'", "'my_notebook'", f"{Registered.__module__!r}"],
    ),
    (
        "one layer type's scheme of several",
        {
            "position:rope": {"source": "builtin"},
            "position:mine": entry_point("my_plugin:Trained"),
            "attention:softmax": {"source": "builtin"},
        },
        "[roformer_lit.positions]\nmine = my_plugin:Other\n",
        ["'mine'", "'my_plugin:Other'"],
    ),
    (
        "a task's entry point that now names another task",
        {"probe:mytask": {**entry_point("my_plugin:TRAINED_TASK"), "group": "roformer_lit.tasks"}},
        "[roformer_lit.tasks]\nmytask = my_plugin:OTHER_TASK\n",
        [
            "probe 'mytask'",
            "'my_plugin:TRAINED_TASK'",
            "'my_plugin:OTHER_TASK'",
            # a task holds no weights: seen worded 'its weights would be loaded into
            # another class than the one they trained in' for a re-pointed task
            "read with another probe than the one it trained with",
        ],
    ),
    (
        "a task's entry point unchanged",
        {"probe:mytask": {**entry_point("my_plugin:TRAINED_TASK"), "group": "roformer_lit.tasks"}},
        "[roformer_lit.tasks]\nmytask = my_plugin:TRAINED_TASK\n",
        None,
    ),
    (
        "the same entry point of another version",
        {"position:mine": entry_point("my_plugin:Trained", version="0.9")},
        "[roformer_lit.positions]\nmine = my_plugin:Trained\n",
        None,
    ),
    (
        "built-ins only",
        {"position:rope": {"source": "builtin"}, "attention:softmax": {"source": "builtin"}},
        "",
        None,
    ),
    (
        "an import path",
        {"position:my_plugin:Trained": {"source": "import_path", "module": "my_plugin"}},
        "",
        None,
    ),
    (
        "a name that no longer resolves (the lookup refuses it)",
        {"position:gone": entry_point("gone_plugin:Trained")},
        "",
        None,
    ),
]


@pytest.fixture
def installed(tmp_path, monkeypatch):
    """``install(entry_points)``: ``my_plugin`` on ``sys.path`` with those entry points in
    a distribution ``my-plugins 1.0.0``; ``registered`` is registered for the test."""
    (tmp_path / "my_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))

    def install(entry_points: str) -> None:
        write_distribution(tmp_path, "my-plugins", "1.0.0", entry_points, top_level="my_plugin")
        _entry_points_of.cache_clear()

    POSITION_SCHEMES.register("registered", Registered)
    yield install
    POSITION_SCHEMES.unregister("registered")
    for registry in (POSITION_SCHEMES, ATTENTION_KERNELS, PROBE_TASKS):
        registry._resolved.clear()
    _entry_points_of.cache_clear()
    sys.modules.pop("my_plugin", None)


def test_a_run_records_the_position_task_it_trained_on(installed) -> None:
    """``fit`` writes the record from the model and the data module's settings: a task
    plugin's origin is recorded beside the schemes', a built-in task as the built-in, and
    a corpus run (no ``probe``) records none."""
    installed("[roformer_lit.tasks]\nmytask = my_plugin:TRAINED_TASK\n")
    config = EncoderConfig(**SMALL)
    found = record(config, {"probe": "mytask"})
    assert found["probe:mytask"]["value"] == "my_plugin:TRAINED_TASK", found
    assert record(config, {"probe": "copy"})["probe:copy"] == {"source": "builtin"}
    assert not any(key.startswith("probe:") for key in record(config, {"train_files": None}))


@pytest.mark.parametrize(
    ("record", "entry_points", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_a_checkpoint_is_read_only_with_the_components_it_trained_with(
    installed, tmp_path, record, entry_points, expected
):
    installed(entry_points)
    path = tmp_path / "last.ckpt"
    torch.save({"state_dict": {}, COMPONENTS_KEY: record}, path)
    if expected is None:
        assert read_checkpoint(path)[COMPONENTS_KEY] == record
        return
    with pytest.raises(ConfigError) as refused:
        read_checkpoint(path)
    message = str(refused.value)
    assert "\n" not in message and str(path) in message, message
    for words in expected:
        assert words in message, (words, message)


#: The plugin ``my_options`` at fit (``power`` defaults to 1.0), for the options cases.
OPTIONS_PLUGIN = """
from roformer_lit.positions.nope import NoPosition

class Powered(NoPosition):
    def __init__(self, shape, *, power: float = {power}{extra}):
        super().__init__(shape)
        self.power = power
"""

SMALL = {"vocab_size": 40, "hidden_size": 16, "num_heads": 2, "num_layers": 2}
PLAN = {"pattern": ["a", "b"], "types": {"a": {"position": "pw"}, "b": {"position": "rope"}}}

#: (case, the model's settings, the plugin's source here, the refusal's words or None).
OPTION_CASES = [
    (
        "a default changed since",
        {"position": "pw"},
        {"power": "2.0"},
        ["position 'pw'", "power: 1 then, 2 here", "'my_options:Powered'"],
    ),
    (
        "a default changed, in one layer type of a plan",
        {"position": "rope", "layer_plan": PLAN},
        {"power": "2.0"},
        ["position 'pw'", "power: 1 then, 2 here"],
    ),
    (
        "a default changed, the option written at fit",
        {"position": "pw", "position_kwargs": {"power": 1.0}},
        {"power": "2.0"},
        None,
    ),
    (
        "an option added since (its default its old way)",
        {"position": "pw"},
        {"extra": ", gain: float = 1.0"},
        None,
    ),
    ("nothing changed", {"position": "pw"}, {}, None),
]


@pytest.fixture
def powered(tmp_path, monkeypatch):
    """``write(power, extra)``: the module ``my_options`` (entry point ``pw``) as given,
    loaded afresh."""
    monkeypatch.syspath_prepend(str(tmp_path))
    write_distribution(
        tmp_path,
        "my-options",
        "1.0.0",
        "[roformer_lit.positions]\npw = my_options:Powered\n",
        top_level="my_options",
    )

    def write(power: str = "1.0", extra: str = "") -> None:
        (tmp_path / "my_options.py").write_text(OPTIONS_PLUGIN.format(power=power, extra=extra))
        sys.modules.pop("my_options", None)
        POSITION_SCHEMES._resolved.clear()
        _entry_points_of.cache_clear()

    yield write
    POSITION_SCHEMES._resolved.clear()
    _entry_points_of.cache_clear()
    sys.modules.pop("my_options", None)


@pytest.mark.parametrize(
    ("settings", "here", "expected"),
    [case[1:] for case in OPTION_CASES],
    ids=[case[0] for case in OPTION_CASES],
)
def test_a_checkpoint_is_read_only_where_its_plugins_options_are_the_ones_it_trained_with(
    powered, tmp_path, settings, here, expected
):
    powered()
    config = EncoderConfig.from_settings({**SMALL, **settings})
    path = tmp_path / "last.ckpt"
    saved = {"state_dict": {}, "hyper_parameters": {**SMALL, **settings}}
    torch.save({**saved, COMPONENTS_KEY: record(config)}, path)
    powered(**here)
    if expected is None:
        read_checkpoint(path)
        return
    with pytest.raises(ConfigError) as refused:
        read_checkpoint(path)
    message = str(refused.value)
    assert "\n" not in message and str(path) in message, message
    for words in expected:
        assert words in message, (words, message)


def test_only_a_plugins_options_are_recorded(powered):
    """A built-in's defaults are the package's own (its earlier checkpoints' tests)."""
    powered()
    found = record(EncoderConfig.from_settings({**SMALL, "position": "rope", "layer_plan": PLAN}))
    assert found["position:pw"]["options"] == [{"power": 1}]
    assert "options" not in found["position:rope"] and "options" not in found["attention:softmax"]


#: (case, the pretrained checkpoint's scheme, its record, the words of the one line).
GONE_CASES = [
    (
        "an entry point no longer installed",
        "gone",
        {"position:gone": entry_point("gone_plugin:Trained")},
        ["unknown position 'gone'", "records position 'gone' from my-plugins 1.0.0"],
    ),
    (
        "an import path no longer importable",
        "gone_plugin:Trained",
        {"position:gone_plugin:Trained": {"source": "import_path", "module": "gone_plugin"}},
        ["cannot import 'gone_plugin'", "records position 'gone_plugin:Trained' from gone_pl"],
    ),
]


@pytest.mark.parametrize(
    ("position", "components", "expected"),
    [case[1:] for case in GONE_CASES],
    ids=[case[0] for case in GONE_CASES],
)
def test_finetune_names_the_pretrained_checkpoints_plugin_that_is_gone(
    position, components, expected
):
    """``finetune --model.pretrained`` of a run whose plugin is gone said ``unknown
    position 'gone'``, a name the user never typed, without saying it was the pretrained
    checkpoint's nor where it came from (as ``validate`` and ``extrapolate`` say)."""
    checkpoint = {"hyper_parameters": {**SMALL, "position": position}, COMPONENTS_KEY: components}
    with pytest.raises(ConfigError) as refused:
        pretrained_encoder_config(checkpoint)
    message = str(refused.value)
    assert message.startswith("model.pretrained: ") and "\n" not in message, message
    for words in expected:
        assert words in message, (words, message)


@pytest.mark.trainer
def test_validate_refuses_a_run_whose_task_name_now_means_another_task(
    installed, tmp_path, monkeypatch, capsys
):
    """A probe run trained on the entry point ``mytask`` (copy); the entry point re-pointed
    to another task since: ``validate`` would evaluate the copy-trained model on reverse,
    exit 0. It is one line naming both, and the run's files are unchanged."""
    from cli_helpers import probe_fit_args

    from roformer_lit.commands import EXIT_USER_ERROR, main

    installed("[roformer_lit.tasks]\nmytask = my_plugin:TRAINED_TASK\n")
    monkeypatch.chdir(tmp_path)
    assert main(probe_fit_args("copy", 2, 2, 4, "--data.probe", "mytask")) == 0
    (last,) = tmp_path.glob("runs/*/*/checkpoints/last.ckpt")
    before = last.read_bytes()
    shutil.rmtree(tmp_path / "my_plugins-1.0.0.dist-info")  # the plugin reinstalled:
    installed("[roformer_lit.tasks]\nmytask = my_plugin:OTHER_TASK\n")
    PROBE_TASKS._resolved.clear()
    capsys.readouterr()
    argv = probe_fit_args("copy", 2, 2, 4, "--data.probe", "mytask")
    assert main(["validate", *argv[1:], "--ckpt_path", str(last)]) == EXIT_USER_ERROR
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "probe 'mytask'" in errors[0], errors
    assert "'my_plugin:OTHER_TASK'" in errors[0] and "'my_plugin:TRAINED_TASK'" in errors[0]
    assert last.read_bytes() == before


#: (case, the checkpoint's record, the error, whether the line names the record's plugin).
ORIGIN_CASES = [
    (
        "an error about a plugin gone",
        {"position:gone": entry_point("gone_plugin:Trained")},
        "unknown position 'gone'; valid choices: rope",
        True,
    ),
    (
        "another error, beside a plugin gone",
        {"position:gone": entry_point("gone_plugin:Trained")},
        "test needs a held-out test split",
        False,
    ),
    (
        "an error naming a plugin that loads",
        {"position:my_plugin:Trained": {"source": "import_path", "module": "my_plugin"}},
        "position 'my_plugin:Trained' refused its option base",
        False,
    ),
    (
        "a task that loads, another error",
        {"probe:mytask": {**entry_point("my_plugin:TRAINED_TASK"), "group": "roformer_lit.tasks"}},
        "test needs a held-out test split",
        False,
    ),
]


@pytest.mark.parametrize(
    ("components", "error", "named"),
    [case[1:] for case in ORIGIN_CASES],
    ids=[case[0] for case in ORIGIN_CASES],
)
def test_an_error_names_where_a_plugin_came_from_only_when_it_is_about_that_plugin_gone(
    installed, components, error, named
):
    installed("[roformer_lit.tasks]\nmytask = my_plugin:TRAINED_TASK\n")
    suffix = recorded_origins({COMPONENTS_KEY: components}, ConfigError(error))
    (key,) = components
    what, _, name = key.partition(":")
    expected = f"; the checkpoint records {what} {name!r} from " if named else ""
    assert suffix.startswith(expected) and bool(suffix) == named, suffix


@pytest.mark.trainer
def test_test_on_a_task_plugins_run_is_refused_without_naming_the_plugin(
    installed, tmp_path, monkeypatch, capsys
):
    """``test`` on a probe run of the entry-point task ``mytask`` is refused (no held-out
    test split): its line ended '; the checkpoint records probe 'mytask' from my-plugins
    1.0.0', a plugin that loads and has nothing to do with the refusal. A recorded plugin
    is named only where the error is about that plugin not loading: uninstalled,
    ``validate``'s line names where it came from, ``test``'s still does not."""
    from cli_helpers import one_error_line, probe_fit_args

    from roformer_lit.commands import main

    installed("[roformer_lit.tasks]\nmytask = my_plugin:TRAINED_TASK\n")
    monkeypatch.chdir(tmp_path)
    argv = probe_fit_args("copy", 2, 2, 4, "--data.probe", "mytask")
    assert main(argv) == 0
    (last,) = tmp_path.glob("runs/*/*/checkpoints/last.ckpt")
    before = last.read_bytes()
    test = ["test", *argv[1:], "--ckpt_path", str(last)]
    line = one_error_line(test, capsys)
    assert "test needs a held-out test split" in line and "records" not in line, line
    shutil.rmtree(tmp_path / "my_plugins-1.0.0.dist-info")  # the plugin uninstalled
    _entry_points_of.cache_clear()
    PROBE_TASKS._resolved.clear()
    line = one_error_line(["validate", *argv[1:], "--ckpt_path", str(last)], capsys)
    assert "'mytask'" in line and "the checkpoint records probe 'mytask' from my-plugins" in line
    line = one_error_line(test, capsys)
    assert "test needs a held-out test split" in line and "records" not in line, line
    assert last.read_bytes() == before
