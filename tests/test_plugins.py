"""Schemes, kernels and tasks from the user's own code: import paths and entry points.

A plugin module is written into a temporary directory on ``sys.path`` (an import path), and
an entry point is a temporary distribution (a ``.dist-info`` with ``entry_points.txt``) on
``sys.path``: what ``pip install`` leaves, without installing anything."""

from __future__ import annotations

import sys

import pytest
import torch
from fake_distribution import write_distribution

from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.attention.linear import LinearAttention
from roformer_lit.commands import main as cli_main
from roformer_lit.commands.prelaunch import check_model
from roformer_lit.data.probes.tasks import PROBE_TASKS, probe_task
from roformer_lit.encoder_config import NAMED_COMPONENTS, EncoderConfig
from roformer_lit.errors import ConfigError
from roformer_lit.module import MaskedLM
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.registry import _entry_points_of
from roformer_lit.testing.models import compatible_kernels

PLUGIN = '''
import dataclasses
import torch
from roformer_lit.positions.base import PositionScheme, LayerPosition, ScoreBias, default_scale
from roformer_lit.attention.softmax import SoftmaxAttention
from roformer_lit.data.probes.tasks import PROBE_TASKS
from roformer_lit.errors import ConfigError

class DistanceBias(LayerPosition):
    def __init__(self, slope):
        super().__init__()
        self.slope = slope
    def score(self, q, k, ctx, qkv):
        n = q.shape[-2]
        i = torch.arange(n, device=q.device)
        return ScoreBias(-self.slope * (i[:, None] - i[None, :]).abs().to(q.dtype),
                         default_scale(q.shape[-1]))

class MyScheme(PositionScheme):
    """-slope |i - j| on every layer."""
    needs_score_bias = True
    def __init__(self, shape, *, slope: float = 0.5):
        super().__init__(shape)
        self.hook = DistanceBias(slope)
    def layer(self, index):
        return self.hook

class TypoInOneHint(MyScheme):
    """One option's annotation does not resolve (a typo); the other's does."""
    def __init__(self, shape, *, slope: float = 0.5, flavour: "Flavuor" = None):
        super().__init__(shape, slope=slope)

class Positional(MyScheme):
    """An author's slip: ``scale`` before the ``*``, so not an option."""
    def __init__(self, shape, scale: float = 1.0, *, slope: float = 0.5):
        super().__init__(shape, slope=slope)

class Ranged(MyScheme):
    """Refuses a negative ``x``, naming the option (``ConfigError.option``)."""
    def __init__(self, shape, *, slope: float = 0.5, x: float = 1.0):
        super().__init__(shape, slope=slope)
        if x < 0:
            raise ConfigError(f"ranged x must be >= 0, got {x}", option="x")

class OldStyle(MyScheme):
    """Writes the option's path into its message itself (no ``option``)."""
    def __init__(self, shape, *, slope: float = 0.5, x: float = 1.0):
        super().__init__(shape, slope=slope)
        if x < 0:
            raise ConfigError(f"model.position_kwargs.x={x} must be >= 0")

class MyKernel(SoftmaxAttention):
    pass

class NotAScheme:
    pass

def not_a_class():
    pass

AN_INT = 3
AN_INSTANCE = MyKernel()

MY_TASK = PROBE_TASKS["copy"]
NO_SUCH_BASELINE = dataclasses.replace(MY_TASK, baselines=("majority", "oracle"))
ZERO_WIDTH = dataclasses.replace(MY_TASK, width=0)
ONE_STRING = dataclasses.replace(MY_TASK, baselines="uniform")
NOT_CALLABLE = dataclasses.replace(MY_TASK, build=None)
'''


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch):
    """A module ``my_plugin`` on ``sys.path``, one that raises on import, and a
    distribution ``my-plugins 1.2.3`` with entry points in the three groups."""
    (tmp_path / "my_plugin.py").write_text(PLUGIN)
    (tmp_path / "broken_plugin.py").write_text("raise RuntimeError('boom at import')\n")
    (tmp_path / "exiting_plugin.py").write_text("import sys\nsys.exit(0)\n")
    (tmp_path / "needs_dependency.py").write_text("import not_installed_dependency\n")
    entry_points = """\
        [roformer_lit.positions]
        mine = my_plugin:MyScheme
        broken = broken_plugin:Anything
        wrongkind = my_plugin:NotAScheme
        exiting = exiting_plugin:Anything
        badvalue = not an import path!
        rope = my_plugin:MyScheme
        [roformer_lit.kernels]
        mykernel = my_plugin:MyKernel
        brokenkernel = broken_plugin:Anything
        [roformer_lit.tasks]
        mytask = my_plugin:MY_TASK
        """
    write_distribution(tmp_path, "my-plugins", "1.2.3", entry_points, top_level="my_plugin")
    monkeypatch.syspath_prepend(str(tmp_path))
    _entry_points_of.cache_clear()
    registries = (POSITION_SCHEMES, ATTENTION_KERNELS, PROBE_TASKS)
    yield tmp_path
    for registry in registries:
        registry._resolved.clear()
    _entry_points_of.cache_clear()
    for name in ("my_plugin", "broken_plugin", "exiting_plugin", "needs_dependency"):
        sys.modules.pop(name, None)


def small(**changes):
    settings = dict(vocab_size=40, hidden_size=16, num_heads=2, num_layers=2, intermediate_size=32)
    return {**settings, **changes}


@pytest.mark.parametrize("name", ["my_plugin:MyScheme", "mine"])
def test_a_plugin_scheme_is_used_by_import_path_or_entry_point(plugin_dir, name):
    model = MaskedLM(**small(position=name, position_kwargs={"slope": 0.25}))
    ids = torch.randint(0, 40, (2, 9))
    logits = model(ids)
    assert logits.shape == (2, 9, 40) and torch.isfinite(logits).all()
    assert type(model.encoder.position).__name__ == "MyScheme"
    assert model.encoder.position.hook.slope == 0.25


def test_a_plugin_kernel_and_task_by_both_spellings(plugin_dir):
    for name in ("my_plugin:MyKernel", "mykernel"):
        config = EncoderConfig(**small(attention=name))
        assert config.layers[0].kernel.__name__ == "MyKernel"
    assert probe_task("mytask") is PROBE_TASKS["copy"]
    assert probe_task("my_plugin:MY_TASK") is PROBE_TASKS["copy"]


def test_a_plugin_scheme_inside_a_layer_plan(plugin_dir):
    plan = {"pattern": ["a", "b"], "types": {"a": {"window": 4}, "b": {"position": "mine"}}}
    config = EncoderConfig(**small(position="nope", layer_plan=plan))
    assert [layer.scheme.__name__ for layer in config.layers] == ["NoPosition", "MyScheme"]


@pytest.mark.parametrize(
    ("position", "options", "expected"),
    [
        ("mine", {"slope": "steep"}, r"slope='steep'.*wrong type: expected float"),
        ("mine", {"slop": 1.0}, r"unknown position_kwargs key\(s\) 'slop'.*valid keys: slope"),
        # one annotation that does not resolve leaves the other options typed
        ("my_plugin:TypoInOneHint", {"slope": "steep"}, r"slope='steep'.*wrong type"),
        (
            "my_plugin:TypoInOneHint",
            {"flavour": "x"},
            r"flavour='x'.*cannot be checked: the option's annotation 'Flavuor' in "
            r"my_plugin.TypoInOneHint does not resolve \(NameError",
        ),
        # a parameter before the '*' is no option: the refusal says why, not only the keys
        (
            "my_plugin:Positional",
            {"scale": 2.0},
            r"unknown position_kwargs key\(s\) 'scale'.*valid keys: slope \('scale' is a "
            r"parameter of Positional.__init__ but not keyword-only: options are the arguments "
            r"after '\*'",
        ),
        # the harness's own argument is not an author's slip
        ("my_plugin:Positional", {"shape": 2.0}, r"'shape'.*valid keys: slope$"),
    ],
)
def test_plugin_options_are_typed_like_a_builtins(plugin_dir, position, options, expected):
    with pytest.raises(ConfigError, match=expected):
        EncoderConfig(**small(position=position, position_kwargs=options))


@pytest.mark.parametrize(
    ("position", "options", "plan", "expected"),
    [
        ("my_plugin:Ranged", {"x": -1.0}, None, "model.position_kwargs.x: ranged x must be >= 0"),
        (
            "my_plugin:Ranged",
            {"x": -1.0, "slope": 0.1},
            None,
            "model.position_kwargs.x: ranged x must be >= 0",
        ),
        (
            "my_plugin:Ranged",
            {},
            {"l": {"position_kwargs": {"x": -1.0, "slope": 0.1}}},
            "model.layer_plan.types.l.position_kwargs.x: ranged x must be >= 0",
        ),
        # a message that already begins with the option's path is not led by it again
        ("my_plugin:OldStyle", {"x": -1.0}, None, "model.position_kwargs.x=-1.0 must be >= 0"),
    ],
)
def test_a_plugins_range_error_is_led_by_the_option_it_names(
    plugin_dir, position, options, plan, expected
):
    layer_plan = None if plan is None else {"pattern": ["g", "l"], "types": plan}
    with pytest.raises(ConfigError) as error:
        EncoderConfig(**small(position=position, position_kwargs=options, layer_plan=layer_plan))
    message = str(error.value)
    assert message.startswith(expected) and "\n" not in message, message


def test_plugin_capabilities_apply_the_same_rules(plugin_dir):
    """MyScheme declares a score bias: the linear kernel cannot take it, as for a built-in."""
    with pytest.raises(ConfigError, match="position 'mine' adds a score bias.*valid attention"):
        EncoderConfig(**small(position="mine", attention="linear"))


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("no_such_module:X", "cannot import 'no_such_module'"),
        ("no_such_package.module:X", "cannot import 'no_such_package.module'"),
        (
            "needs_dependency:X",
            "importing 'needs_dependency' failed: it imports 'not_installed_dependency', which",
        ),
        ("my_plugin:Missing", "has no attribute 'Missing'; candidates there: MyScheme"),
        ("my_plugin:NotAScheme", "is the class my_plugin.NotAScheme, not a subclass of"),
        ("my_plugin:not_a_class", "is a function, not a subclass of"),
        ("my_plugin:AN_INT", "is an instance of int, not a subclass of"),
        ("my_plugin:AN_INSTANCE", "is an instance of my_plugin.MyKernel, not a subclass of"),
        ("broken_plugin:X", "importing 'broken_plugin' raised RuntimeError: boom at import"),
        ("broken", "entry point 'broken_plugin:Anything'"),
        ("exiting_plugin:X", "importing 'exiting_plugin' raised SystemExit: 0"),
        ("exiting", "entry point 'exiting_plugin:Anything'"),
        ("badvalue", "value 'not an import path!' in group 'roformer_lit.positions' is not of"),
        ("wrongkind", "'wrongkind' is the class my_plugin.NotAScheme, not a subclass"),
        ("my_plugin:", "is not an import path"),
        ("unknown_name", "unknown position 'unknown_name'; valid choices: alibi,"),
    ],
)
def test_a_bad_plugin_is_one_line_naming_it(plugin_dir, name, expected, capsys):
    for make in (
        lambda: EncoderConfig(position=name),
        lambda: check_model({"position": name}, 64, None),
    ):
        with pytest.raises(ConfigError) as info:
            make()
        message = str(info.value)
        assert "\n" not in message and expected in message and name in message, message
    assert cli_main(["schemes", "--import", name if ":" in name else f"x:{name}"]) == 2
    assert capsys.readouterr().err.startswith("error: schemes")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("my_plugin:NO_SUCH_BASELINE", "baselines=('majority', 'oracle') must be a tuple of"),
        ("my_plugin:ZERO_WIDTH", "width=0 must be an int >= 1"),
        ("my_plugin:ONE_STRING", "baselines='uniform' must be a tuple of baseline rules"),
        ("my_plugin:NOT_CALLABLE", "build=None is not callable"),
    ],
)
def test_a_plugin_task_the_commands_cannot_use_is_one_line_when_named(plugin_dir, name, expected):
    """Checked when resolved, not when extrapolate first scores its baselines (a KeyError)."""
    with pytest.raises(ConfigError) as info:
        probe_task(name)
    message = str(info.value)
    assert (
        "\n" not in message and message.startswith(f"data.probe {name!r}: ") and expected in message
    )


def test_the_listing_names_plugins_with_their_distribution(plugin_dir, capsys):
    code = cli_main(["schemes", "--import", "my_plugin:MyScheme"])
    out, err = capsys.readouterr()
    assert code == 2  # the entry point named rope is never used (below)
    assert "mine  (entry point, my-plugins 1.2.3)" in out
    assert "options: slope: float = 0.5" in out
    # the broken entry point is a note, the listing goes on
    assert "note: schemes: skipped position 'broken', which cannot be loaded" in err
    assert "broken" not in out and "mykernel  (entry point" in out
    assert (
        "my_plugin:MyScheme  (import path my_plugin)" in out
        or "my_plugin:MyScheme  (import path, my-plugins" in out
    )
    assert "mytask  (entry point" in out


def test_an_entry_point_named_like_a_builtin_is_listed_as_never_used(plugin_dir, capsys):
    """``rope = my_plugin:MyScheme`` cannot replace the built-in: the name stays the
    built-in's, and the listing says the entry point is unused instead of hiding it."""
    assert POSITION_SCHEMES["rope"].__module__ == "roformer_lit.positions.rope"
    assert POSITION_SCHEMES.origin("rope") == {"source": "builtin"}
    assert list(POSITION_SCHEMES.shadowing()) == ["rope"]
    assert cli_main(["schemes"]) == 2
    out, err = capsys.readouterr()
    assert (
        "  rope: error: position 'rope': the entry point 'my_plugin:MyScheme' in group "
        "'roformer_lit.positions' (my-plugins 1.2.3) has a built-in's name and is never used"
    ) in out
    assert "exiting" not in out  # an entry point that exits is a note, the listing goes on
    assert "note: schemes: skipped position 'exiting', which cannot be loaded" in err
    assert "mytask  (entry point" in out


def test_a_name_two_distributions_declare_is_refused_naming_both(plugin_dir, capsys):
    """A second installed distribution declaring ``mine`` for another class: which one the
    name meant would depend on the order of ``sys.path``, so the name is refused, naming
    both entry points and their import paths (which stay usable)."""
    write_distribution(
        plugin_dir,
        "other-plugins",
        "2.0",
        "[roformer_lit.positions]\nmine = my_plugin:Ranged\nrope = my_plugin:Ranged\n",
    )
    _entry_points_of.cache_clear()
    for make in (
        lambda: EncoderConfig(position="mine"),
        lambda: check_model({"position": "mine"}, 64, None),
    ):
        with pytest.raises(ConfigError) as raised:
            make()
        message = str(raised.value)
        assert "\n" not in message and message.startswith("position 'mine' is ambiguous: 2 ")
        assert "'my_plugin:MyScheme' (my-plugins 1.2.3)" in message
        assert "'my_plugin:Ranged' (other-plugins 2.0)" in message
    assert EncoderConfig(position="my_plugin:Ranged").layers[0].scheme.__name__ == "Ranged"
    assert cli_main(["schemes"]) == 2
    out, err = capsys.readouterr()
    assert (
        "note: schemes: skipped position 'mine', which cannot be loaded: position 'mine' "
        "is ambiguous"
    ) in err
    assert "the entry point 'my_plugin:MyScheme' in group 'roformer_lit.positions' " in out
    assert "and the entry point 'my_plugin:Ranged' in group" in out  # both never used


def test_the_kit_skips_a_kernel_plugin_that_fails_to_load(plugin_dir):
    """Another package's broken kernel is not a failure of the scheme under test."""
    kernels = compatible_kernels(POSITION_SCHEMES["nope"])
    assert "brokenkernel" not in kernels and {"softmax", "linear", "mykernel"} <= set(kernels)


def test_a_checkpoint_records_where_its_plugin_came_from(plugin_dir, tmp_path):
    model = MaskedLM(**small(position="mine"))
    record = model.config.origins()
    assert record["position:mine"] == {
        "source": "entry_point",
        "group": "roformer_lit.positions",
        "value": "my_plugin:MyScheme",
        "distribution": "my-plugins",
        "version": "1.2.3",
    }
    assert record["attention:softmax"] == {"source": "builtin"}


def test_the_registry_lists_builtins_and_installed_plugins(plugin_dir):
    names = list(POSITION_SCHEMES)
    assert names[:10] == POSITION_SCHEMES.builtin_names()
    assert {"mine", "broken", "wrongkind"} <= set(names)
    assert "my_plugin:MyScheme" in POSITION_SCHEMES and "no_such:X" not in POSITION_SCHEMES


#: (setting, built-in's short name, its import path): every built-in scheme and kernel
BY_IMPORT_PATH = [
    pytest.param(key, name, f"{cls.__module__}:{cls.__qualname__}", id=f"{key}-{name}")
    for key, registry in NAMED_COMPONENTS.items()
    for name in registry.builtin_names()
    for cls in [registry[name]]
]


@pytest.mark.parametrize(("key", "name", "path"), BY_IMPORT_PATH)
def test_a_builtin_named_by_its_import_path_is_the_builtin(key, name, path):
    """``--model.position roformer_lit.positions.rope:RotaryPosition`` trained a model that
    recorded the import path, which ``export`` refused (no HF counterpart): a built-in is
    one component under any spelling, kept by its short name in what a model records."""
    by_name = EncoderConfig(**small(**{key: name}))
    config = EncoderConfig(**small(**{key: path}))
    assert getattr(config, key) == name and config == by_name
    assert {getattr(layer.spec, key) for layer in config.layers} == {name}
    assert config.origins() == by_name.origins()
    assert MaskedLM(model=config).hparams[key] == name


def test_a_builtin_named_by_its_import_path_in_a_layer_plan_is_the_builtin():
    nope = "roformer_lit.positions.nope:NoPosition"
    plan = {"pattern": ["local", "global"], "types": {"global": {"position": nope}}}
    config = EncoderConfig(**small(layer_plan=plan))
    assert config.layer_plan["types"] == {"global": {"position": "nope"}}
    assert [layer.spec.position for layer in config.layers] == ["rope", "nope"]
    assert plan["types"]["global"]["position"] == nope  # the caller's mapping is not changed


def test_only_a_builtin_is_renamed(plugin_dir):
    """A plugin keeps the name it was given; a name that resolves to nothing is left to the
    lookup, which reports it in one line."""
    assert POSITION_SCHEMES.canonical("my_plugin:MyScheme") == "my_plugin:MyScheme"
    assert POSITION_SCHEMES.canonical("mine") == "mine"
    assert POSITION_SCHEMES.canonical("no_such:Scheme") == "no_such:Scheme"
    with pytest.raises(ConfigError, match="cannot import 'no_such'"):
        EncoderConfig(**small(position="no_such:Scheme"))


# -- the architecture's rules, as declared (no name is special) ------------------------------


def test_flex_backend_with_attention_dropout_is_refused_when_the_config_is_made():
    settings = small(attention_kwargs={"backend": "flex"}, attention_dropout=0.1)
    for make in (lambda: EncoderConfig(**settings), lambda: check_model(settings, 40, None)):
        with pytest.raises(
            ConfigError,
            match="attention_dropout=0.1 needs a kernel with attention dropout.*backend='flex'",
        ):
            make()


def test_null_attention_dropout_means_none_where_the_kernel_has_none():
    model = MaskedLM(**small(attention_kwargs={"backend": "flex"}, dropout=0.1))
    assert {layer.attention.attention_dropout for layer in model.encoder.layers} == {0.0}
    model = MaskedLM(**small(dropout=0.1))
    assert {layer.attention.attention_dropout for layer in model.encoder.layers} == {0.1}


def test_a_plan_gives_each_layer_its_own_kernel_and_options():
    plan = {
        "pattern": ["soft", "lin"],
        "types": {"lin": {"attention": "linear", "attention_kwargs": {"eps": 1e-3}}},
    }
    model = MaskedLM(**small(position="rope", layer_plan=plan))
    kernels = [layer.attention.kernel for layer in model.encoder.layers]
    assert type(kernels[0]).__name__ == "SoftmaxAttention"
    assert isinstance(kernels[1], LinearAttention) and kernels[1].eps == 1e-3
    with pytest.raises(ConfigError, match="type 'lin' has window 4, which attention 'linear'"):
        EncoderConfig(
            **small(
                layer_plan={
                    "pattern": ["lin"],
                    "types": {"lin": {"attention": "linear", "window": 4}},
                }
            )
        )


def test_reading_a_config_checks_nothing_about_this_machine():
    """A checkpoint's config of any size is read anywhere; allocating it is refused."""
    huge = small(vocab_size=2**31 - 1, hidden_size=2**16, num_heads=2**4)
    config = EncoderConfig(**huge)
    assert config.vocab_size == 2**31 - 1
    with pytest.raises(ConfigError, match="weights alone need at least"):
        MaskedLM(**huge)


def test_randomized_positions_read_every_layers_scheme():
    from roformer_lit.commands.prelaunch import random_positions_need_a_reader

    plan = {"pattern": ["a", "b"], "types": {"b": {"position": "rope"}}}
    random_positions_need_a_reader(
        EncoderConfig(**small(position="nope", layer_plan=plan)), {"random_positions": 64}
    )
    with pytest.raises(ConfigError, match="reads none"):
        random_positions_need_a_reader(
            EncoderConfig(**small(position="nope")), {"random_positions": 64}
        )


def test_a_scheme_that_reads_key_padding_gets_the_mask_and_others_do_not():
    from roformer_lit.positions.base import PositionScheme

    seen = []

    class CountsKeys(PositionScheme):
        reads_key_padding = True

        def prepare(self, length, device, dtype, positions=None, *, key_padding_mask=None):
            seen.append(key_padding_mask)

    POSITION_SCHEMES.register("counts_keys", CountsKeys)
    try:
        model = MaskedLM(**small(position="counts_keys"))
        ids = torch.randint(0, 40, (2, 6))
        mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2])
        model(ids, mask)
        model(ids)
    finally:
        POSITION_SCHEMES.unregister("counts_keys")
    assert torch.equal(seen[0], mask.bool()) and seen[1] is None
    MaskedLM(**small(position="rope"))(ids, mask)  # a scheme without it: called as before


def test_a_run_of_a_builtin_name_an_entry_point_declares_says_so(plugin_dir, capsys, monkeypatch):
    """``rope = my_plugin:MyScheme`` installed: ``fit --model.position rope`` trains the
    built-in; the pre-launch check says so in one note, once per process (a sweep checks
    every run), and says nothing for a name no entry point shadows."""
    from roformer_lit.commands import prelaunch

    monkeypatch.setattr(prelaunch, "_noted", set())
    prelaunch.check_fit_config({"model": small(position="alibi")})
    assert "note:" not in capsys.readouterr().err
    for _ in range(2):
        prelaunch.check_fit_config({"model": small(position="rope")})
    notes = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note:")]
    assert len(notes) == 1, notes
    assert "'my_plugin:MyScheme'" in notes[0] and "this run uses the built-in" in notes[0]
