"""Out-of-range and wrongly typed model, optimiser, scheme and kernel arguments: each is
refused with one ``error:`` line naming the argument, the wrong value and the valid ones
(exit code 2, no traceback, nothing on disk changed); an absurd learning rate never
leaves a NaN checkpoint behind (exit 3, or exit 2 when it is refused up front)."""

from __future__ import annotations

import inspect
import math
import subprocess
import sys
import typing
from pathlib import Path
from typing import Any

import pytest
import torch
from cli_helpers import fit_args

from roformer_lit import ATTENTION_KERNELS, POSITION_SCHEMES, MaskedLM
from roformer_lit.commands import EXIT_DIVERGED, EXIT_USER_ERROR, main
from roformer_lit.encoder_config import ENCODER_FIELDS
from roformer_lit.errors import ConfigError, TrainingDiverged
from roformer_lit.module import MODEL_RULES
from roformer_lit.registry import option_hints, option_names
from roformer_lit.training.checkpoint_io import first_nonfinite, refuse_nonfinite

EXISTING_RUN = Path("runs") / "mlm" / "rope-softmax-seed0"


# -- helpers ---------------------------------------------------------------------------------


def snapshot(root: Path) -> dict[str, tuple[int, int] | None]:
    """Every path under ``root``: files with their mtime and size, directories by name (a
    run directory created and removed again changes only its parent's mtime)."""
    return {
        str(p.relative_to(root)): None if p.is_dir() else (p.stat().st_mtime_ns, p.stat().st_size)
        for p in root.rglob("*")
    }


def tiny_model(**kwargs: Any) -> MaskedLM:
    args: dict[str, Any] = dict(
        vocab_size=50, hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32
    )
    args.update(kwargs)
    return MaskedLM(**args)


def refused(**kwargs: Any) -> str:
    """The one-line ConfigError message ``tiny_model(**kwargs)`` raises."""
    with pytest.raises(ConfigError) as info:
        tiny_model(**kwargs)
    message = str(info.value)
    assert "\n" not in message
    return message


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding a finished-looking run that no case may touch."""
    run = tmp_path / EXISTING_RUN
    (run / "checkpoints").mkdir(parents=True)
    (run / "config.yaml").write_text("model:\n  position: rope\n")
    (run / "checkpoints" / "last.ckpt").write_bytes(b"previous checkpoint")
    monkeypatch.chdir(tmp_path)
    return tmp_path


# -- 1. model and optimiser arguments through the CLI ----------------------------------------

#: name -> (extra fit arguments, text the one error line must contain: argument and value)
CLI_CASES: dict[str, tuple[list[str], str]] = {
    # trainer settings Lightning accepts and then divides by (tracebacks before)
    "val_check_interval_zero": (
        ["--trainer.val_check_interval", "0"],
        "trainer.val_check_interval must be an integer in 1..9223372036854775807 (batches)",
    ),
    "accumulate_grad_batches_zero": (
        ["--trainer.accumulate_grad_batches", "0"],
        "trainer.accumulate_grad_batches must be an integer in 1..2147483647, got 0",
    ),
    "max_steps_zero": (
        ["--trainer.max_steps", "0"],
        "trainer.max_steps must be -1 (no limit) or an integer in 1..9223372036854775807, got 0",
    ),
    "limit_val_batches_negative": (
        ["--trainer.limit_val_batches", "-2"],
        "trainer.limit_val_batches must be an integer in 0..9223372036854775807",
    ),
    "init_std_negative": (
        ["--model.init_std", "-1"],
        "model.init_std must be > 0 and finite, got -1.0",
    ),
    "init_std_nan": (
        ["--model.init_std", ".nan"],
        "model.init_std must be > 0 and finite, got nan",
    ),
    "betas_above_one": (
        ["--model.betas", "[1.5, 0.9]"],
        "model.betas must be two numbers, each in [0, 1), got (1.5, 0.9)",
    ),
    "beta_of_one": (["--model.betas", "[0.9, 1.0]"], "model.betas must be two numbers"),
    "dropout_nan": (["--model.dropout", ".nan"], "model.dropout must be in [0, 1), got nan"),
    "attention_dropout_one": (
        ["--model.attention_dropout", "1.0"],
        "model.attention_dropout must be null or in [0, 1), got 1.0",
    ),
    "layer_norm_eps_zero": (
        ["--model.layer_norm_eps", "0"],
        "model.layer_norm_eps must be in [1.175e-38, 3.403e+38) (a positive float32), got 0.0",
    ),
    "learning_rate_overflows_to_inf": (
        ["--model.learning_rate", "1e400"],
        "model.learning_rate must be > 0 and finite, got inf",
    ),
    "learning_rate_beyond_float32": (
        ["--model.learning_rate", "1e38"],
        "model.learning_rate=1e+38 is too large",
    ),
    "position_lr_scale_times_learning_rate_beyond_float32": (
        ["--model.position", "t5", "--model.position_lr_scale", "1e300"],
        "model.position_lr_scale=1e+300 times model.learning_rate=0.001 is 1e+297",
    ),
    "weight_decay_negative": (
        ["--model.weight_decay", "-0.01"],
        "model.weight_decay must be >= 0 and finite, got -0.01",
    ),
    "warmup_negative": (
        ["--model.warmup_steps", "-1"],
        "model.warmup_steps must be an integer in 0..9223372036854775807, got -1",
    ),
    "min_lr_ratio_above_one": (
        ["--model.min_lr_ratio", "1.5"],
        "model.min_lr_ratio must be in [0, 1], got 1.5",
    ),
    "max_positions_zero": (
        ["--model.max_positions", "0"],
        "model.max_positions must be an integer in 1..2147483647, got 0",
    ),
    "heads_do_not_divide": (
        ["--model.num_heads", "3"],
        "model.hidden_size 32 is not divisible by num_heads 3; valid model.num_heads for it: "
        "[1, 2, 4, 8, 16, 32]",
    ),
    "absurd_size": (
        ["--model.intermediate_size", "2000000000", "--model.num_layers", "1000"],
        "intermediate_size=2000000000); this machine has",
    ),
    # settings of a datasets source given without one (silently ignored before)
    "dataset_streaming_without_dataset": (
        ["--data.dataset_streaming", "true"],
        "data.dataset_streaming=True needs data.dataset",
    ),
    "dataset_config_without_dataset": (
        ["--data.dataset_config", "wikitext-103-raw-v1"],
        "data.dataset_config='wikitext-103-raw-v1' needs data.dataset",
    ),
    "dataset_split_without_dataset": (
        ["--data.dataset_split", "test"],
        "data.dataset_split='test' needs data.dataset",
    ),
    # scheme and kernel options
    "rope_base_wrong_type": (
        ["--model.position_kwargs", "{base: abc}"],
        "model.position_kwargs.base='abc' for position 'rope' has the wrong type: expected float",
    ),
    "rope_base_below_one": (
        ["--model.position_kwargs", "{base: 0.5}"],
        "rope base must be > 1 and finite, got 0.5",
    ),
    "rope_base_inf": (
        ["--model.position_kwargs", "{base: .inf}"],
        "model.position_kwargs.base=inf for position 'rope' must be finite",
    ),
    "deberta_odd_buckets": (
        ["--model.position", "deberta", "--model.position_kwargs", "{position_buckets: 7}"],
        "deberta position_buckets must be an even integer >= 2, got 7",
    ),
    "xl_flag_number": (
        ["--model.position", "xl", "--model.position_kwargs", "{per_layer: 2}"],
        "model.position_kwargs.per_layer=2 for position 'xl' has the wrong type: expected bool",
    ),
    "linear_eps_zero": (
        ["--model.attention", "linear", "--model.attention_kwargs", "{eps: 0}"],
        "linear attention eps must be > 0 and finite, got 0",
    ),
    # a kernel that declares the devices it trains on (refused at its first training step,
    # after the sanity validation and with the run directory claimed, before)
    "flex_trains_on_cuda_only": (
        [
            "--model.position",
            "alibi",
            "--model.attention_kwargs",
            "{backend: flex}",
            "--trainer.accelerator",
            "cpu",
        ],
        "attention 'softmax', backend='flex' trains on cuda only; trainer.accelerator='cpu' "
        "trains on cpu here; valid attention kernels on cpu (with their default options): "
        "linear, softmax",
    ),
}


@pytest.mark.parametrize("case", list(CLI_CASES))
@pytest.mark.trainer
def test_bad_argument_is_refused_with_one_line(case, work, capsys):
    extra, expected = CLI_CASES[case]
    before = snapshot(work)
    capsys.readouterr()
    code = main(fit_args("rope.yaml", 2, *extra))
    err = capsys.readouterr().err
    assert code == EXIT_USER_ERROR, err[-2000:]
    lines = err.strip().splitlines()
    assert error_lines(err) == [lines[-1]], err[-2000:]  # exactly one, and the last
    assert expected in lines[-1], lines[-1]
    assert "Traceback" not in err
    assert snapshot(work) == before, "a run directory was created or changed"


@pytest.mark.parametrize(
    "case",
    [
        "rope_base_wrong_type",
        pytest.param("learning_rate_overflows_to_inf", marks=pytest.mark.slow),
    ],
)
@pytest.mark.trainer  # a real process: outside the fast tier
def test_in_a_real_process_only_the_error_line_reaches_stderr(case, work):
    extra, expected = CLI_CASES[case]
    before = snapshot(work)
    proc = subprocess.run(
        [sys.executable, "-m", "roformer_lit", *fit_args("rope.yaml", 2, *extra)],
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == EXIT_USER_ERROR, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr + proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert error_lines(proc.stderr) == [lines[-1]]
    assert expected in lines[-1]
    assert snapshot(work) == before


# -- 2. the rule table, in-process (fast) ----------------------------------------------------

#: argument -> values it must refuse (type, range, NaN/inf)
BAD_VALUES: dict[str, list[Any]] = {
    "vocab_size": [1, 0, -5, True, 3.0],
    "hidden_size": [0, -32, True, 16.0],
    "num_layers": [0, False, "2"],
    "num_heads": [0, -2, True],
    "intermediate_size": [0, 2.5],
    "max_positions": [0, -1, True],
    "dropout": [-0.1, 1.0, math.nan, math.inf, True],
    "attention_dropout": [1.0, -0.5, math.nan],
    "layer_norm_eps": [0.0, -1e-5, math.inf, math.nan, True, 1e39, 1e300, 1e-39, 1e-50],
    "pre_norm": [1, "yes", None],
    "learning_rate": [0.0, -1e-3, math.inf, math.nan, True],
    "weight_decay": [-0.01, math.inf, math.nan],
    "betas": [(1.0, 0.9), (0.9, -0.1), (math.nan, 0.9), (0.9,), (0.9, 0.98, 0.99), "ab", 0.9],
    "warmup_steps": [-1, 1.5, True],
    "min_lr_ratio": [-0.1, 1.1, math.nan],
    "position_lr_scale": [0.0, -1.0, math.inf, math.nan],
    "lr_schedule": ["cosine", None, 1],
    "decay_fraction": [0.0, -0.1, 1.5, math.nan, True],
    "init_std": [0.0, -0.02, math.inf, math.nan],
    "compile": [0, "false"],
    "skip_nonfinite": [1, None],
    "position": [3, None],
    "attention": [["softmax"]],
    "position_kwargs": [[1, 2], "base=3"],
    "attention_kwargs": [5],
    "block": [[1], "geglu"],
    "layer_plan": [["local"], 3],
}


def test_every_argument_has_a_rule_and_a_bad_value_case():
    params = set(inspect.signature(MaskedLM.__init__).parameters) - {"self"}
    assert set(MODEL_RULES) == params
    assert set(BAD_VALUES) == params
    assert set(ENCODER_FIELDS) <= set(MODEL_RULES)


@pytest.mark.parametrize(
    "name,value", [(name, value) for name, values in BAD_VALUES.items() for value in values]
)
def test_bad_value_is_one_line_naming_argument_value_and_range(name, value):
    message = refused(**{name: value})
    assert message.startswith(f"model.{name} must be {MODEL_RULES[name].expected}, got "), message
    assert message.endswith(repr(value)), message


def _numeric_arguments() -> list[str]:
    params = inspect.signature(MaskedLM.__init__).parameters.values()
    return [
        p.name
        for p in params
        if isinstance(p.default, (int, float)) and not isinstance(p.default, bool)
    ]


@pytest.mark.parametrize("name", _numeric_arguments())
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, True])
def test_no_numeric_argument_takes_nan_inf_or_a_bool(name, value):
    assert f"model.{name} must be" in refused(**{name: value})


@pytest.mark.parametrize("beta", [math.nan, math.inf, True])
def test_betas_take_no_nan_inf_or_bool(beta):
    assert "model.betas must be" in refused(betas=(0.9, beta))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"dropout": 0.0, "attention_dropout": 0.0},
        {"min_lr_ratio": 0.0, "warmup_steps": 0, "weight_decay": 0.0, "betas": (0.0, 0.0)},
        {"min_lr_ratio": 1.0, "betas": [0.5, 0.999]},
        {"learning_rate": 1e30},  # absurd but finite: left to the divergence guard
        {"position": "nope", "vocab_size": 2, "hidden_size": 1, "num_heads": 1, "max_positions": 1},
        {"position": "deberta", "position_kwargs": {"max_relative_positions": None}},
    ],
)
def test_boundary_values_are_accepted(kwargs):
    tiny_model(**kwargs)


def test_the_divisibility_line_lists_every_divisor():
    message = refused(hidden_size=36, num_heads=5)
    assert message.endswith("[1, 2, 3, 4, 6, 9, 12, 18, 36]")


#: (learning_rate, position_lr_scale, weight_decay): each finite and in range alone, their
#: product not a usable float32 AdamW rate for the position parameters
BAD_POSITION_RATES = [
    (1e-3, 1e300, 0.01),  # the product 1e297: beyond float32
    (1e30, 1e300, 0.01),  # the product overflows to inf
    (1.0, 1e38, 0.0),  # the product 1e38 fits float32, its AdamW step 1e39 (beta1 0.9) not
    (1e-30, 1e-30, 0.01),  # the product 1e-60: zero in float32, the parameters never move
    (1.0, 1e38, 10.0),  # rate * weight_decay beyond float32
]


@pytest.mark.parametrize(("lr", "scale", "decay"), BAD_POSITION_RATES)
def test_position_lr_scale_times_learning_rate_must_be_a_float32_rate(lr, scale, decay):
    message = refused(position="t5", learning_rate=lr, position_lr_scale=scale, weight_decay=decay)
    assert message.startswith(
        f"model.position_lr_scale={scale!r} times model.learning_rate={lr!r} is "
    ), message
    rate = torch.tensor(lr * scale, dtype=torch.float64)
    step = torch.stack([rate / (1 - 0.9), rate * decay]).to(torch.float32)
    # the oracle: in float32 the rate vanishes, or a step or decay is no longer finite
    assert float(rate.to(torch.float32)) < torch.finfo(torch.float32).tiny or not bool(
        torch.isfinite(step).all()
    )


@pytest.mark.parametrize(
    ("lr", "scale"), [(1e-3, 10.0), (1e-3, 1e-3), (1.0, 1e37), (1e-38, 1.0), (1e-20, 1e-10)]
)
def test_usable_position_rates_are_accepted(lr, scale):
    tiny_model(position="t5", learning_rate=lr, position_lr_scale=scale)


# -- 3. scheme and kernel options: typed from their signatures -------------------------------

REGISTRIES = {"position": POSITION_SCHEMES, "attention": ATTENTION_KERNELS}
OPTIONS = [
    (what, name, option)
    for what, registry in REGISTRIES.items()
    for name, cls in registry.items()
    for option in option_names(cls)
]


def build(what: str, name: str, options: dict[str, Any]) -> MaskedLM:
    """A tiny model using ``name`` with ``options``, paired with a partner that fits it."""
    if what == "position":
        return tiny_model(position=name, attention="softmax", position_kwargs=options)
    return tiny_model(position="nope", attention=name, attention_kwargs=options)


def admitted_types(hint: Any) -> set[type]:
    """The runtime types an annotation admits (``int`` also for ``float``, as JSON does)."""
    if hint is Any:
        return {object}
    origin = typing.get_origin(hint)
    if origin is typing.Union or (
        origin is not None and str(origin) == "<class 'types.UnionType'>"
    ):
        return set().union(*(admitted_types(arg) for arg in typing.get_args(hint)))
    if origin is typing.Literal:
        return {type(arg) for arg in typing.get_args(hint)}
    base = origin or hint
    return {base, int} if base is float else {base}


def wrong_values(hint: Any) -> list[Any]:
    """Values of types the annotation does not admit (a bool is never an int here)."""
    admitted = admitted_types(hint)
    candidates = ["abc", [1, 2], {"a": 1}, True, 2.5]
    return [v for v in candidates if object not in admitted and type(v) not in admitted]


def test_every_option_is_annotated_so_its_type_is_checked():
    for what, name, option in OPTIONS:
        hint = option_hints(REGISTRIES[what][name])[option]
        assert hint is not Any, f"{what} {name!r} option {option!r} has no type annotation"
        assert wrong_values(hint), f"{what} {name!r} option {option!r}: no wrong value to try"


@pytest.mark.parametrize("what,name,option", OPTIONS)
def test_a_wrong_typed_option_is_refused_in_one_line(what, name, option):
    hint = option_hints(REGISTRIES[what][name])[option]
    for value in wrong_values(hint):
        with pytest.raises(ConfigError) as info:
            build(what, name, {option: value})
        message = str(info.value)
        assert "\n" not in message
        assert message.startswith(f"model.{what}_kwargs.{option}={value!r} for {what} {name!r}")
        assert "has the wrong type: expected " in message


@pytest.mark.parametrize(
    "what,name,option",
    [o for o in OPTIONS if float in admitted_types(option_hints(REGISTRIES[o[0]][o[1]])[o[2]])],
)
@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_float_option_takes_no_nan_or_inf(what, name, option, value):
    with pytest.raises(ConfigError, match="must be finite"):
        build(what, name, {option: value})


#: (what, name, options, text naming the scheme, option and value)
OUT_OF_RANGE = [
    ("position", "rope", {"base": 1.0}, "rope base must be > 1 and finite, got 1.0"),
    ("position", "rope", {"base": -3}, "rope base must be > 1 and finite, got -3.0"),
    ("position", "sinusoidal", {"base": 0.5}, "sinusoidal base must be > 1 and finite, got 0.5"),
    ("position", "deberta", {"position_buckets": 0}, "deberta position_buckets must be an even"),
    ("position", "deberta", {"position_buckets": 9}, "got 9"),
    (
        "position",
        "deberta",
        {"position_buckets": 8, "max_relative_positions": 5},
        "deberta max_relative_positions must be null or an integer >= 6 (position_buckets // 2 "
        "+ 2: past the exact offsets), got 5",
    ),
    ("position", "deberta", {"max_relative_positions": 0}, "max_relative_positions must be"),
    ("position", "deberta", {"c2p": False, "p2c": False}, "use position=nope"),
    ("attention", "linear", {"eps": 0.0}, "linear attention eps must be > 0 and finite, got 0.0"),
    ("attention", "linear", {"eps": -1e-6}, "linear attention eps must be > 0"),
]


@pytest.mark.parametrize("what,name,options,expected", OUT_OF_RANGE)
def test_each_scheme_refuses_its_out_of_range_options(what, name, options, expected):
    with pytest.raises(ConfigError) as info:
        build(what, name, options)
    assert expected in str(info.value)
    assert "\n" not in str(info.value)


def test_each_scheme_checks_its_ranges_itself_when_built_directly():
    from roformer_lit.positions import EncoderShape

    shape = EncoderShape(hidden_size=16, num_heads=2, num_layers=1, max_positions=8)
    with pytest.raises(ConfigError, match="rope base must be > 1"):
        POSITION_SCHEMES["rope"](shape, base=0.5)
    with pytest.raises(ConfigError, match="xl per_layer must be true or false, got 'no'"):
        POSITION_SCHEMES["xl"](shape, per_layer="no")
    with pytest.raises(ConfigError, match="linear attention eps"):
        ATTENTION_KERNELS["linear"](eps=math.nan)


def test_options_are_converted_as_the_cli_converts_them():
    model = tiny_model(position="rope", position_kwargs={"base": "1e4"})
    assert model.encoder.position.base == 10000.0
    model = tiny_model(position="deberta", position_kwargs={"position_buckets": 8, "c2p": "false"})
    assert model.encoder.position.c2p is False


def test_wrong_options_container_is_one_line():
    assert "model.position_kwargs must be null or a mapping" in refused(
        position_kwargs=[("base", 2.0)]
    )


# -- 4. never a NaN checkpoint ----------------------------------------------------------------


def _random_state_dict(seed: int) -> tuple[dict[str, torch.Tensor], str | None]:
    """Random tensors of several dtypes, some tied, some huge, maybe one NaN/inf; and the
    name an element-wise oracle says is the first non-finite one."""
    gen = torch.Generator().manual_seed(seed)
    dtypes = [torch.float32, torch.float16, torch.bfloat16, torch.float64]
    state: dict[str, torch.Tensor] = {}
    for i in range(8):
        dtype = dtypes[int(torch.randint(0, 4, (1,), generator=gen))]
        shape = tuple(int(s) for s in torch.randint(0, 6, (2,), generator=gen))
        tensor = torch.randn(shape, generator=gen).to(dtype)
        if i % 3 == 0 and tensor.numel():  # finite, but its sum overflows
            tensor.fill_(torch.finfo(dtype).max)
        state[f"t{i}"] = tensor
    state["tied"] = state["t1"]
    state["steps"] = torch.tensor([3, 4])  # not floating: never checked
    candidates = [name for name, t in state.items() if t.is_floating_point() and t.numel()]
    if seed % 4 and candidates:
        victim = candidates[int(torch.randint(0, len(candidates), (1,), generator=gen))]
        flat = state[victim].view(-1)
        flat[int(torch.randint(0, flat.numel(), (1,), generator=gen))] = [math.nan, math.inf][
            seed % 2
        ]
    oracle = next(
        (
            name
            for name, t in state.items()
            if t.is_floating_point() and not all(math.isfinite(float(x)) for x in t.flatten())
        ),
        None,
    )
    return state, oracle


@pytest.mark.parametrize("seed", range(24))
def test_first_nonfinite_matches_an_element_wise_oracle(seed):
    state, oracle = _random_state_dict(seed)
    found = first_nonfinite(state)
    if oracle == "tied":  # the same tensor as t1: reported under its first name
        oracle = "t1"
    assert found == oracle


def test_a_nonfinite_checkpoint_is_refused():
    weights = torch.ones(4, 4)
    weights[2, 3] = math.inf
    checkpoint = {"state_dict": {"ok": torch.zeros(3), "layer.weight": weights}, "global_step": 7}
    with pytest.raises(TrainingDiverged, match=r"by step 7: .*\(first: layer.weight\)") as info:
        refuse_nonfinite(checkpoint, "last.ckpt")
    assert info.value.step == 7
    checkpoint["state_dict"]["layer.weight"] = torch.ones(4, 4)
    refuse_nonfinite(checkpoint, "last.ckpt")  # finite: accepted


def test_the_module_refuses_to_checkpoint_nonfinite_weights_on_every_rank():
    """``on_save_checkpoint`` (run by every rank) is where the refusal happens."""
    from roformer_lit.module import MaskedLM

    model = MaskedLM(
        vocab_size=100, hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32
    )
    with torch.no_grad():
        model.head.bias[3] = math.nan
    with pytest.raises(TrainingDiverged, match=r"\(first: head.bias\)"):
        model.on_save_checkpoint({"state_dict": model.state_dict(), "global_step": 3})


def _checkpoints_are_finite(root: Path) -> list[Path]:
    found = sorted(p for p in root.rglob("*.ckpt") if EXISTING_RUN.name + "/" not in str(p))
    for path in found:
        state = torch.load(path, map_location="cpu", weights_only=True)["state_dict"]
        assert all(torch.isfinite(t).all() for t in state.values() if t.is_floating_point()), path
    return found


@pytest.mark.trainer
def test_absurd_finite_learning_rate_stops_with_exit_3_and_no_nan_checkpoint(work, capsys):
    capsys.readouterr()
    code = main(fit_args("rope.yaml", 4, "--model.learning_rate", "1e30"))
    err = capsys.readouterr().err
    assert code == EXIT_DIVERGED, err[-2000:]
    lines = err.strip().splitlines()
    assert error_lines(err) == [lines[-1]]
    assert lines[-1].startswith("error: training diverged at step ")
    assert "Traceback" not in err
    _checkpoints_are_finite(work / "runs")


def poison_weights_after(monkeypatch: pytest.MonkeyPatch, step: int) -> None:
    """After optimiser step ``step`` the MLM head's bias is inf, with finite gradients: as if
    the update itself overflowed."""
    real = MaskedLM.on_train_batch_end

    def on_train_batch_end(self, outputs, batch, batch_idx):
        real(self, outputs, batch, batch_idx)
        if self.trainer.global_step == step:
            with torch.no_grad():
                self.head.bias.fill_(math.inf)

    monkeypatch.setattr(MaskedLM, "on_train_batch_end", on_train_batch_end)


@pytest.mark.trainer
def test_weights_made_inf_by_the_last_update_are_never_saved(work, monkeypatch, capsys):
    # validation (and checkpoints) at steps 2 and 4; step 5 is the last: only the final
    # last.ckpt save (LastCheckpointAtEnd) would write the inf weights
    poison_weights_after(monkeypatch, 5)
    capsys.readouterr()
    code = main(fit_args("rope.yaml", 5, "--trainer.val_check_interval", "2"))
    err = capsys.readouterr().err
    assert code == EXIT_DIVERGED, err[-2000:]
    line = err.strip().splitlines()[-1]
    assert error_lines(err) == [line]
    # the validation after the last step sees the inf weights first (val/loss nan)
    assert line.startswith("error: training diverged by step 5: ")
    last = Path("runs/mlm/rope-softmax-seed0-2/checkpoints/last.ckpt")
    assert line.endswith(f"last checkpoint: {last} (step 4)")
    assert torch.load(last, weights_only=True)["global_step"] == 4
    _checkpoints_are_finite(work / "runs")


@pytest.mark.trainer
def test_weights_made_inf_between_saves_stop_the_next_step(work, monkeypatch, capsys):
    poison_weights_after(monkeypatch, 3)  # step 4 then trains on inf weights: NaN loss
    capsys.readouterr()
    code = main(fit_args("rope.yaml", 6, "--trainer.val_check_interval", "2"))
    err = capsys.readouterr().err
    assert code == EXIT_DIVERGED, err[-2000:]
    line = err.strip().splitlines()[-1]
    assert line.startswith("error: training diverged at step 4: train/loss is nan")
    assert line.endswith("(step 2)")
    _checkpoints_are_finite(work / "runs")


# -- inputs past a position table (the Python API) ---------------------------------------------

#: The registered schemes bounded by a table of ``model.max_positions`` (``learned``).
BOUNDED = [name for name in POSITION_SCHEMES if POSITION_SCHEMES[name].capabilities().bounded]


def test_the_registry_has_a_bounded_scheme():
    assert "learned" in BOUNDED


@pytest.mark.parametrize("name", BOUNDED)
@pytest.mark.parametrize("past", ["length", "position_ids"])
def test_an_input_past_the_position_table_is_one_value_error(name, past):
    """A row longer than a bounded scheme's table, or ``position_ids`` reaching past it, is
    an input error of ``forward``: one ``ValueError`` line naming the limit and the schemes
    without a table (not a ConfigError from inside a scheme, nor an ``IndexError``)."""
    model = tiny_model(position=name, max_positions=16).eval()
    ids = torch.randint(0, 50, (1, 17 if past == "length" else 8))
    where = {} if past == "length" else {"position_ids": torch.arange(8)[None] * 3}
    with pytest.raises(ValueError) as info, torch.no_grad():
        model(ids, **where)
    message = str(info.value)
    assert not isinstance(info.value, ConfigError) and "\n" not in message, message
    assert "is past model.max_positions=16" in message, message
    unbounded = [n for n in POSITION_SCHEMES if n not in BOUNDED]
    assert message.endswith(", ".join(sorted(unbounded))), message
    with torch.no_grad():  # within the table: answered
        assert model(torch.randint(0, 50, (1, 16))).shape == (1, 16, 50)
        assert model(ids[:, :5], position_ids=torch.arange(5)[None] * 3).shape == (1, 5, 50)
