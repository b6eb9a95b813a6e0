"""Arguments, checked in one way: declarative tables of :class:`Rule`.

Every class that takes user arguments declares them in a table (name -> rule) and calls
:func:`check_arguments`: the architecture (:mod:`roformer_lit.architecture_rules`), the optimiser
here (:data:`TRAINING_RULES`), the data
modules (each class's ``RULES``: :mod:`roformer_lit.data.datamodule` and its subclasses), fine-tuning's module and
data module, the trainer settings (:func:`check_trainer_arguments`); schemes and kernels
check their options with :func:`check` and the same rules.

:data:`TRAINING_RULES` maps every training argument of :class:`~roformer_lit.module.MaskedLM`
to a :class:`Rule` (its type and valid range, in words); :data:`TRAINING_CROSS_RULES` are the
checks that need several arguments at once. :func:`check_training_arguments` applies both and
raises one :class:`~roformer_lit.errors.ConfigError` line such as

    model.init_std must be > 0 and finite, got -1.0

Every rule refuses ``bool`` where a number is expected and NaN/inf everywhere. The same
rules (:func:`check`) serve the position schemes and attention kernels for their options'
ranges (``rope base must be > 1 and finite, got 0.5``); their options' *types* are checked
from their signatures by :func:`roformer_lit.registry.check_options`.
"""

from __future__ import annotations

import math
import numbers
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from roformer_lit.errors import ConfigError

#: Largest finite float32 (the dtype of the weights and of AdamW's step arithmetic).
FLOAT32_MAX = 3.4028234663852886e38
PREFIX = "model."


#: The largest size a user may give (a tensor dimension, a vocabulary, a count of
#: sequences or workers): a C ``int``, the widest index every kernel, tokenizer and numpy
#: build takes. A size below it that cannot fit the machine is refused by a memory check.
INT32_MAX = 2**31 - 1
#: The largest count of steps, epochs or batches (Lightning counts them in int64).
INT64_MAX = 2**63 - 1
#: The largest seed: numpy's legacy seeding (``seed_everything``) takes ``0 .. 2**32 - 1``.
SEED_MAX = 2**32 - 1


@dataclass(frozen=True)
class Rule:
    """One argument's check: ``accepts(value)``, and the valid values in words.

    ``integers`` is the range ``(low, high)`` of the integers the rule accepts (None: it
    takes no integers): every integer setting declares both bounds, so a huge value is
    refused in one line before it reaches numpy or torch (and the tests try one above
    ``high`` for every such setting)."""

    expected: str
    accepts: Callable[[Any], bool]
    integers: tuple[int, int] | None = None


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_finite_number(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)


def at_least_int(low: int) -> Rule:
    """An integer (never a bool) ``>= low``."""
    return Rule(
        "a positive integer" if low == 1 else f"an integer >= {low}",
        lambda v: _is_int(v) and v >= low,
    )


def finite_float_above(low: float) -> Rule:
    """A finite real number (never a bool) ``> low``."""
    return Rule(f"> {low:g} and finite", lambda v: _is_finite_number(v) and v > low)


def finite_float_at_least(low: float) -> Rule:
    """A finite real number (never a bool) ``>= low``."""
    return Rule(f">= {low:g} and finite", lambda v: _is_finite_number(v) and v >= low)


def optional(rule: Rule) -> Rule:
    """``None`` or what ``rule`` accepts."""
    return Rule(f"null or {rule.expected}", lambda v: v is None or rule.accepts(v), rule.integers)


def pair(rule: Rule) -> Rule:
    """Two values, each accepted by ``rule``."""
    return Rule(
        f"two numbers, each {rule.expected}",
        lambda v: (
            isinstance(v, Sequence)
            and not isinstance(v, str)
            and len(v) == 2
            and all(rule.accepts(x) for x in v)
        ),
    )


#: Smallest positive normal float32: a learning rate below it is zero or denormal in the
#: optimiser's float32 arithmetic (the parameters would never move).
FLOAT32_TINY = 1.1754943508222875e-38
#: A positive number that stays one in float32 (neither zero, a denormal nor inf there): a
#: norm's epsilon, which the weights' float32 arithmetic adds (1e300 is inf there, and
#: every norm's output its bias; 1e-50 is 0, and a constant row's output NaN).
float32_positive = Rule(
    f"in [{FLOAT32_TINY:.4g}, {FLOAT32_MAX:.4g}) (a positive float32)",
    lambda v: _is_finite_number(v) and FLOAT32_TINY <= v < FLOAT32_MAX,
)
positive_int = at_least_int(1)
non_negative_int = at_least_int(0)
finite_positive_float = finite_float_above(0)
finite_non_negative_float = finite_float_at_least(0)
#: ``0 <= p < 1``: a dropout probability, an Adam beta.
unit_interval_open_right = Rule("in [0, 1)", lambda v: _is_finite_number(v) and 0 <= v < 1)
#: ``0 <= r <= 1``.
unit_interval = Rule("in [0, 1]", lambda v: _is_finite_number(v) and 0 <= v <= 1)
#: ``0 < p < 1``: a masking rate, a held-out fraction.
unit_interval_open = Rule("in (0, 1)", lambda v: _is_finite_number(v) and 0 < v < 1)
boolean = Rule("true or false", lambda v: isinstance(v, bool))


def one_of(*choices: Any) -> Rule:
    """One of ``choices`` (compared with ``==``; a bool is not taken for 0 or 1)."""
    return Rule(
        f"one of {', '.join(map(str, choices))}",
        lambda v: not isinstance(v, bool) and any(v == c for c in choices),
    )


def int_in(low: int, high: int) -> Rule:
    """An integer (never a bool) in ``[low, high]``."""
    return Rule(
        f"an integer in {low}..{high}", lambda v: _is_int(v) and low <= v <= high, (low, high)
    )


def size(low: int = 1) -> Rule:
    """A size (a length, a width, a count of items): an integer in ``low ..``
    :data:`INT32_MAX`."""
    return int_in(low, INT32_MAX)


def steps(low: int = 0) -> Rule:
    """A count of steps, epochs or batches: an integer in ``low ..`` :data:`INT64_MAX`."""
    return int_in(low, INT64_MAX)


#: A seed: ``0 .. 2**32 - 1`` (what numpy and ``seed_everything`` take).
seed = int_in(0, SEED_MAX)
#: Worker processes (data loading, tokenizing): at most this many (each is a process).
MAX_WORKERS = 1024


#: A string with something in it (a field name, a dataset name).
non_empty_text = Rule("a non-empty string", lambda v: isinstance(v, str) and bool(v))
text = Rule("a string", lambda v: isinstance(v, str))
mapping = Rule("a mapping of option names to values", lambda v: isinstance(v, Mapping))

#: The training settings of ``MaskedLM`` (optimiser, schedule, run switches) and what each
#: accepts. The architecture's fields are :data:`roformer_lit.architecture_rules.FIELD_RULES`.
TRAINING_RULES: dict[str, Rule] = {
    "learning_rate": finite_positive_float,
    "weight_decay": finite_non_negative_float,
    "betas": pair(unit_interval_open_right),
    "warmup_steps": steps(0),
    "min_lr_ratio": unit_interval,
    "position_lr_scale": finite_positive_float,
    "lr_schedule": one_of("linear", "constant", "wsd"),
    "decay_fraction": Rule("in (0, 1]", lambda v: _is_finite_number(v) and 0 < v <= 1),
    "init_std": finite_positive_float,
    "compile": boolean,
    "skip_nonfinite": boolean,
}


def check(label: str, value: Any, rule: Rule, option: str | None = None) -> None:
    """A ConfigError ``"<label> must be <expected>, got <value>"`` unless ``rule`` accepts;
    ``option``: the scheme's or kernel's option checked (the error's ``option``, which leads
    the line with where the user wrote it)."""
    if not rule.accepts(value):
        raise ConfigError(f"{label} must be {rule.expected}, got {value!r}", option=option)


def as_data(value: Any) -> Any:
    """A copy of ``value`` as plain YAML data: tuples as lists, mappings and lists item by
    item, and another library's numbers (NumPy's ``int64`` and ``float64``, which the rules
    accept as numbers) as Python's ``int`` and ``float``; what a safe YAML loader and
    ``torch.load(weights_only=True)`` read back (``hparams.yaml``, TensorBoard's hparams
    tab, every checkpoint). Nothing else changes: a string stays a string."""
    if isinstance(value, Mapping):
        return {key: as_data(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_data(item) for item in value]
    if type(value) in (bool, int, float):  # NumPy's float64 is a float subclass: not these
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        return float(value)
    return value


# -- checks of several arguments at once ----------------------------------------------------


def divisors(n: int) -> list[int]:
    """The divisors of ``n >= 1`` in increasing order (``O(sqrt n)``)."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return small + [n // d for d in reversed(small) if d * d != n]


def _adamw_step_fits_float32(args: Mapping[str, Any]) -> None:
    """AdamW turns ``lr / (1 - beta1)`` (its largest bias-corrected step size) and
    ``lr * weight_decay`` into float32 scalars; beyond float32 it fails mid-step."""
    lr, decay, (beta1, _) = args["learning_rate"], args["weight_decay"], args["betas"]
    step, shrink = lr / (1.0 - beta1), lr * decay
    if step >= FLOAT32_MAX or shrink >= FLOAT32_MAX:
        raise ConfigError(
            f"{PREFIX}learning_rate={lr!r} is too large: AdamW's step size "
            f"learning_rate / (1 - betas[0]) = {step:.3g} and learning_rate * weight_decay = "
            f"{shrink:.3g} must stay below the float32 maximum {FLOAT32_MAX:.3g}"
        )


def _position_lr_fits_float32(args: Mapping[str, Any]) -> None:
    """The position scheme's parameters train at ``learning_rate * position_lr_scale``: the
    product of two values each checked alone must itself be a usable AdamW rate (finite,
    not zero in float32, its step size and decay below the float32 maximum)."""
    lr, scale = args["learning_rate"], args["position_lr_scale"]
    decay, (beta1, _) = args["weight_decay"], args["betas"]
    if scale == 1.0:  # one rate for everything: learning_rate's own check covers it
        return
    rate = lr * scale
    step, shrink = rate / (1.0 - beta1), rate * decay
    if math.isfinite(rate) and FLOAT32_TINY <= rate and max(step, shrink) < FLOAT32_MAX:
        return
    change = "raise" if rate < FLOAT32_TINY else "lower"
    raise ConfigError(
        f"{PREFIX}position_lr_scale={scale!r} times {PREFIX}learning_rate={lr!r} is "
        f"{rate:.3g}, not a usable learning rate: the position parameters' AdamW rate must be "
        f">= {FLOAT32_TINY:.3g}, with rate / (1 - betas[0]) and rate * weight_decay below the "
        f"float32 maximum {FLOAT32_MAX:.3g}; {change} {PREFIX}position_lr_scale"
    )


def physical_memory_bytes() -> int | None:
    """This machine's memory in bytes (None where the platform does not say): what every
    size check compares a size's bytes with, before anything is allocated."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):  # not every platform has them
        return None


def check_weights_fit_in_memory(args: Mapping[str, Any]) -> None:
    """A lower bound on the float32 weights, ``4 (V H + N (4 H^2 + 2 H I))`` bytes (word
    embeddings; per layer the q, k, v, output and FFN matrices), must fit in this
    machine's memory: absurd sizes are refused before anything is allocated. A host check:
    run where weights are allocated (``MaskedLM``) and before a launch, never when a
    config is only read."""
    vocab, hidden = args["vocab_size"], args["hidden_size"]
    layers, inner = args["num_layers"], args["intermediate_size"]
    need = 4 * (vocab * hidden + layers * (4 * hidden * hidden + 2 * hidden * inner))
    have = physical_memory_bytes()
    if have is not None and need > have:
        raise ConfigError(
            f"the model's weights alone need at least {need / 2**30:.3g} GiB ({PREFIX}vocab_size="
            f"{vocab}, {PREFIX}hidden_size={hidden}, {PREFIX}num_layers={layers}, "
            f"{PREFIX}intermediate_size={inner}); this machine has {have / 2**30:.3g} GiB"
        )


#: (training settings needed, check): run when every needed setting is given (and valid).
TRAINING_CROSS_RULES: list[tuple[tuple[str, ...], Callable[[Mapping[str, Any]], None]]] = [
    (("learning_rate", "weight_decay", "betas"), _adamw_step_fits_float32),
    (
        ("learning_rate", "position_lr_scale", "weight_decay", "betas"),
        _position_lr_fits_float32,
    ),
]


def check_arguments(arguments: Mapping[str, Any], rules: Mapping[str, Rule], prefix: str) -> None:
    """Check each of ``arguments`` that ``rules`` knows: the one way every class of the
    project checks its arguments (the model, the data modules, fine-tuning, the schemes
    and kernels through :func:`check`). The first failure is one ConfigError line,
    ``<prefix><argument> must be <expected>, got <value>``."""
    for name, value in arguments.items():
        rule = rules.get(name)
        if rule is not None:
            check(prefix + name, value, rule)


def check_training_arguments(arguments: Mapping[str, Any]) -> None:
    """Check each of ``arguments`` that :data:`TRAINING_RULES` knows, then the cross rules
    whose arguments are all present; the first failure is one ConfigError line naming
    ``model.<argument>``, the wrong value and the valid ones."""
    check_arguments(arguments, TRAINING_RULES, PREFIX)
    for needed, cross_check in TRAINING_CROSS_RULES:
        if all(name in arguments for name in needed):
            cross_check(arguments)


#: A validation interval: a number of training batches (``>= 1``), a fraction of an epoch in
#: ``(0, 1]``, or a duration Lightning parses. (Lightning takes 0 and then divides by it.)
val_interval = Rule(
    f"an integer in 1..{INT64_MAX} (batches), a fraction of an epoch in (0, 1], or a duration",
    lambda v: (
        (_is_int(v) and 1 <= v <= INT64_MAX)
        or (_is_finite_number(v) and not _is_int(v) and 0 < v <= 1)
        or not isinstance(v, numbers.Number)  # a duration ('DD:HH:MM:SS', ...): Lightning's
    ),
    (1, INT64_MAX),
)


def _as_count(value: Any) -> int | None:
    """``value`` as the integer Lightning reads it as (``3``, ``"3"``, ``"-1"``), or None
    for anything else (``"auto"``, a list of device ids)."""
    if _is_int(value):
        return int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


#: ``-1`` (no limit) or a positive count.
limit_or_unbounded = Rule(
    f"-1 (no limit) or an integer in 1..{INT64_MAX}",
    lambda v: _is_int(v) and (v == -1 or 1 <= v <= INT64_MAX),
    (-1, INT64_MAX),
)
#: ``limit_*_batches``: a count of batches or a fraction of them.
batch_limit = Rule(
    f"an integer in 0..{INT64_MAX} (batches) or a fraction in [0, 1]",
    lambda v: (
        (_is_int(v) and 0 <= v <= INT64_MAX)
        or (_is_finite_number(v) and not _is_int(v) and 0 <= v <= 1)
    ),
    (0, INT64_MAX),
)

#: The ``Trainer`` settings Lightning does not check itself (it crashes later, or divides by
#: zero); ``None`` is always left to Lightning (its own default).
TRAINER_RULES: dict[str, Rule] = {
    "max_steps": limit_or_unbounded,
    "max_epochs": limit_or_unbounded,
    "min_steps": steps(0),
    "min_epochs": steps(0),
    "val_check_interval": val_interval,
    "check_val_every_n_epoch": steps(1),
    "log_every_n_steps": steps(0),
    "accumulate_grad_batches": size(1),
    "num_sanity_val_steps": steps(-1),
    "num_nodes": size(1),
    "devices": Rule(
        f"'auto', a list of device ids, -1 (every device) or an integer in 1..{MAX_WORKERS}",
        lambda v: _as_count(v) is None or _as_count(v) == -1 or 1 <= _as_count(v) <= MAX_WORKERS,
        (-1, MAX_WORKERS),
    ),
    "fast_dev_run": Rule(
        f"true, false or an integer in 0..{INT64_MAX} (batches)",
        lambda v: isinstance(v, bool) or (_is_int(v) and 0 <= v <= INT64_MAX),
        (0, INT64_MAX),
    ),
    "overfit_batches": batch_limit,
    "reload_dataloaders_every_n_epochs": steps(0),
    "gradient_clip_val": finite_non_negative_float,
    "limit_train_batches": batch_limit,
    "limit_val_batches": batch_limit,
    "limit_test_batches": batch_limit,
    "limit_predict_batches": batch_limit,
}


def check_fits_in_memory(need: int, what: str) -> None:
    """A ConfigError ``"<what> need <n> GiB; this machine has <m> GiB"`` when ``need`` bytes
    exceed this machine's memory: a size refused before it is allocated."""
    have = physical_memory_bytes()
    if have is not None and need > have:
        raise ConfigError(
            f"{what} need {need / 2**30:.3g} GiB; this machine has {have / 2**30:.3g} GiB"
        )


#: The top-level settings of a run beside ``model.``, ``data.`` and ``trainer.``:
#: ``seed_everything`` is ``true`` (Lightning's ``seed_everything()`` without a seed:
#: ``PL_GLOBAL_SEED``, else 0; not a random seed), ``false`` (none) or a seed.
RUN_RULES: dict[str, Rule] = {
    "seed_everything": Rule(
        f"true, false or {seed.expected}",
        lambda v: isinstance(v, bool) or seed.accepts(v),
        seed.integers,
    ),
}


def check_run_arguments(arguments: Mapping[str, Any]) -> None:
    """Each top-level setting of :data:`RUN_RULES` that is set (not None)."""
    for name, rule in RUN_RULES.items():
        value = arguments.get(name)
        if value is not None:
            check(name, value, rule)


def check_trainer_arguments(arguments: Mapping[str, Any]) -> None:
    """Each ``trainer.<key>`` of :data:`TRAINER_RULES` that is set (not None), as one
    ConfigError line naming it, the wrong value and the valid ones."""
    for name, rule in TRAINER_RULES.items():
        value = arguments.get(name)
        if value is not None:
            check(f"trainer.{name}", value, rule)
