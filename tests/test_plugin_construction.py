"""A plugin scheme or kernel whose constructor raises is one ``error:`` line naming it.

The harness builds every registered class in one place (:func:`roformer_lit.registry.
construct`): a plugin's ``__init__`` that raises anything but ``ConfigError`` (its own bug,
a signature the harness cannot call, ``sys.exit``) is one ConfigError line naming the
setting, its options and where the plugin raised, at every command that builds a model;
a built-in's own exception stays a traceback (a bug of the package)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from cli_helpers import probe_fit_args, refused_unchanged

from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.commands.prelaunch import check_model
from roformer_lit.encoder_config import EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.positions.rope import RotaryPosition
from roformer_lit.registry import construct

MODULE = """
import sys
from roformer_lit.attention.softmax import SoftmaxAttention
from roformer_lit.errors import ConfigError
from roformer_lit.positions.base import PositionScheme


class Raises(PositionScheme):
    def __init__(self, shape, *, x: float = 1.0):
        super().__init__(shape)
        raise RuntimeError("boom in init")


class TakesNoShape(PositionScheme):
    def __init__(self):
        super().__init__(None)


class Exits(PositionScheme):
    def __init__(self, shape):
        sys.exit(0)


class KernelRaises(SoftmaxAttention):
    def __init__(self, **options):
        raise ValueError("kernel boom")


class WritesTopPath(PositionScheme):  # its author wrote the path it saw, and no option=
    def __init__(self, shape, *, x: float = 1.0):
        super().__init__(shape)
        if not x > 0:
            raise ConfigError(f"model.position_kwargs.x must be > 0, got {x}")


class RefusesShape(PositionScheme):  # refuses the encoder it is given, naming no option
    def __init__(self, shape):
        super().__init__(shape)
        raise ConfigError("refuses every shape")


class WritesPlanPath(PositionScheme):
    def __init__(self, shape, *, x: float = 1.0):
        super().__init__(shape)
        if not x > 0:
            raise ConfigError(f"model.layer_plan.types.local.position_kwargs.x: must be > 0, got {x}")
"""


@pytest.fixture
def failing(tmp_path, monkeypatch):
    """A module ``failing_plugin`` on ``sys.path`` whose classes raise when built."""
    (tmp_path / "failing_plugin.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path / "failing_plugin.py"
    for registry in (POSITION_SCHEMES, ATTENTION_KERNELS):
        registry._resolved.clear()
    sys.modules.pop("failing_plugin", None)


@pytest.mark.parametrize(
    ("settings", "expected"),
    [
        (
            {"position": "failing_plugin:Raises", "position_kwargs": {"x": 2.0}},
            "position 'failing_plugin:Raises' failed to build with options {'x': 2.0}: "
            "RuntimeError: boom in init (at ",
        ),
        (
            {"position": "failing_plugin:TakesNoShape"},
            "position 'failing_plugin:TakesNoShape' failed to build with options {}: TypeError: ",
        ),
        (
            {"position": "failing_plugin:Exits"},
            "position 'failing_plugin:Exits' failed to build with options {}: SystemExit: 0",
        ),
        (
            {"attention": "failing_plugin:KernelRaises"},
            "attention 'failing_plugin:KernelRaises' failed to build with options {}: "
            "ValueError: kernel boom (at ",
        ),
    ],
)
def test_a_plugin_that_raises_when_built_is_one_line_naming_it(failing, settings, expected):
    for make in (lambda: EncoderConfig(**settings), lambda: check_model(settings, 64, None)):
        with pytest.raises(ConfigError) as info:
            make()
        message = str(info.value)
        assert expected in message and "\n" not in message, message
    if "(at " in expected:  # the plugin's own line, where it raised
        assert f"(at {failing}, line " in message, message


def test_a_plugin_inside_a_layer_plan_that_raises_when_built_is_one_line(failing):
    plan = {"pattern": ["a", "b"], "types": {"b": {"position": "failing_plugin:Raises"}}}
    with pytest.raises(ConfigError, match=r"^model.layer_plan.types.b.position: position "):
        EncoderConfig(num_layers=2, layer_plan=plan)


@pytest.mark.parametrize("plan", [False, True])
def test_a_plugin_that_fails_to_build_is_led_by_where_it_was_chosen_not_its_options(failing, plan):
    """Its options are not known to be at fault: the line is led by the setting that chose
    the plugin, once, whether the model or a layer type wrote its options."""
    options = {"position_kwargs": {"x": 2.0}}
    if plan:
        types = {"b": {"position": "failing_plugin:Raises", **options}}
        settings = {"num_layers": 2, "layer_plan": {"pattern": ["a", "b"], "types": types}}
        lead = "model.layer_plan.types.b.position: "
    else:
        settings = {"position": "failing_plugin:Raises", **options}
        lead = "model.position: "
    with pytest.raises(ConfigError) as info:
        EncoderConfig(**settings)
    message = str(info.value)
    assert message.startswith(lead + "position 'failing_plugin:Raises' failed"), message
    assert "position_kwargs" not in message.split("failed")[0], message


def test_a_builtins_own_exception_stays_a_traceback():
    """Not the user's mistake: a bug of the package is not dressed as one."""
    with pytest.raises(AttributeError):
        construct(RotaryPosition, "position", "rope", "not a shape")


@pytest.mark.trainer
def test_fit_with_a_plugin_that_raises_when_built_is_refused(
    failing, tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    line = refused_unchanged(
        tmp_path,
        capsys,
        probe_fit_args("copy", 2, 1, 4, "--model.position", "failing_plugin:Raises"),
    )
    assert "position 'failing_plugin:Raises' failed to build" in line, line
    assert "RuntimeError: boom in init" in line, line


def chosen_as(tmp_path: Path, scheme: str, options: str, plan: bool) -> tuple[list[str], str]:
    """The options choosing ``scheme`` with ``options`` (YAML) at the top level or as the
    type ``b`` of a two-layer plan (written to ``plan.yaml``), and the path of
    ``position_kwargs`` where the user wrote them."""
    if not plan:
        extra = ["--model.position", scheme, "--model.position_kwargs", options]
        return extra, "model.position_kwargs"
    types = f"{{b: {{position: '{scheme}', position_kwargs: {options}}}}}"
    (tmp_path / "plan.yaml").write_text(
        f"model:\n  num_layers: 2\n  layer_plan: {{pattern: [a, b], types: {types}}}\n"
    )
    return ["--config", "plan.yaml"], "model.layer_plan.types.b.position_kwargs"


@pytest.mark.trainer
@pytest.mark.parametrize("plugin", ["WritesTopPath", "WritesPlanPath"])
@pytest.mark.parametrize("plan", [False, True])
def test_a_plugin_message_that_writes_its_options_path_is_led_once_by_where_it_was_written(
    failing, tmp_path, monkeypatch, capsys, plugin, plan
):
    """A plugin that writes the path of the option it refuses (wherever its author saw it
    written) and gives no ``option=``: the line names that option once, where the user wrote
    it, at the top level or in a layer plan's type."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    extra, where = chosen_as(tmp_path, f"failing_plugin:{plugin}", "{x: -1.0}", plan)
    line = refused_unchanged(tmp_path, capsys, [*probe_fit_args("copy", 2, 1, 4), *extra])
    assert line == f"error: {where}.x: must be > 0, got -1.0", line


@pytest.mark.trainer
@pytest.mark.parametrize(
    ("inner", "said"),
    [
        ("Raises", "position 'failing_plugin:Raises' failed to build with options {}: "),
        ("RefusesShape", "refuses every shape"),
    ],
)
@pytest.mark.parametrize("plan", [False, True])
def test_a_failing_inner_scheme_of_ssmax_is_led_by_where_inner_was_chosen(
    failing, tmp_path, monkeypatch, capsys, inner, said, plan
):
    """ssmax builds its ``inner`` scheme: that scheme's failure to build (a plugin's bug, or
    a refusal naming no option) is led by the ``inner`` the user wrote, as a top-level
    plugin's is by ``model.position``, not by an ``inner_kwargs`` nobody wrote."""
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[1] / "examples"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    ssmax = "roformer_lit_examples.ssmax:ScalableSoftmax"
    extra, where = chosen_as(tmp_path, ssmax, f"{{inner: 'failing_plugin:{inner}'}}", plan)
    line = refused_unchanged(tmp_path, capsys, [*probe_fit_args("copy", 2, 1, 4), *extra])
    assert line.startswith(f"error: {where}.inner: {said}"), line
