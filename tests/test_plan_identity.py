"""Per-layer settings are settings: a plan is compared as what it builds
(:mod:`roformer_lit.plan_identity`) by ``compare``, ``compare --select``, a resumed run and
``sweep``; every setting of a plan tells variants apart and the label says which."""

from __future__ import annotations

import inspect
import typing
from typing import Any

import pytest

from roformer_lit import ATTENTION_KERNELS, POSITION_SCHEMES
from roformer_lit.plan_identity import (
    canonical_plan,
    number,
    plain,
    same_layers,
    same_plan,
    shortest_period,
)
from roformer_lit.plan_labels import plan_label, read_label, written_plan
from roformer_lit.registry import option_hints
from roformer_lit.results.compare.runs import RunSummary
from roformer_lit.results.compare.select import select, to_csv, to_markdown
from roformer_lit.results.compare.variants import variant_labels

THREE = ["global", "local", "local"]
MODERN = {
    "pattern": THREE,
    "types": {
        "global": {"position_kwargs": {"base": 160000.0}},
        "local": {"window": 128, "position_kwargs": {"base": 10000.0}},
    },
}

#: (plan, another way to write the same network), over a RoPE model without options.
EQUIVALENT = {
    "layers for a pattern": (
        {"pattern": ["l", "g"], "types": {"l": {"window": 8}}},
        {"layers": ["l", "g", "l", "g"], "types": {"l": {"window": 8}}},
    ),
    "a pattern repeated": (
        {"pattern": THREE, "types": {"local": {"window": 8}}},
        {"pattern": THREE * 2, "types": {"local": {"window": 8}}},
    ),
    "the model's own scheme named": (
        {"pattern": ["a", "b"], "types": {"b": {"position": "nope"}}},
        {"pattern": ["a", "b"], "types": {"a": {"position": "rope"}, "b": {"position": "nope"}}},
    ),
    "an integral float": (
        MODERN,
        {
            **MODERN,
            "types": {
                "global": {"position_kwargs": {"base": 160000}},
                "local": {"window": 128, "position_kwargs": {"base": 10000}},
            },
        },
    ),
    "empty settings": (
        {"pattern": ["l", "g"], "types": {"l": {"window": 8}, "g": {}}},
        {"pattern": ["l", "g"], "types": {"l": {"window": 8}, "g": None}},
    ),
    "one plain type everywhere is no plan": ({"pattern": ["all"]}, None),
    "the model's own kernel named": (
        {"pattern": ["a", "b"], "types": {"b": {"window": 8}}},
        {"pattern": ["a", "b"], "types": {"a": {"attention": "softmax"}, "b": {"window": 8}}},
    ),
    "the model's own options written": (
        {"pattern": ["l", "g"], "types": {"l": {"window": 8}}},
        {"pattern": ["l", "g"], "types": {"l": {"window": 8, "position_kwargs": {"base": 1e4}}}},
    ),
    "an odd window and the even one below it": (  # both read w // 2 = 32 keys each side
        {"pattern": ["l", "g"], "types": {"l": {"window": 64}}},
        {"pattern": ["l", "g"], "types": {"l": {"window": 65}}},
    ),
}

#: Cases of :data:`EQUIVALENT` whose labels differ as written (a sweep's grid labels);
#: ``fit`` names a plan as it builds, where they are one.
WRITTEN_APART = (
    "the model's own scheme named",
    "the model's own kernel named",
    "the model's own options written",
    "an odd window and the even one below it",
)

#: (setting of the plan, plan A, plan B that differs only in it, the label's name for it).
DIFFERING = {
    "scheme": (
        {"pattern": THREE, "types": {"global": {"position": "nope"}}},
        {"pattern": THREE, "types": {"global": {"position": "alibi"}}},
        "global.position",
    ),
    "options": (
        {"pattern": THREE, "types": {"global": {"position_kwargs": {"base": 1e5}}}},
        {"pattern": THREE, "types": {"global": {"position_kwargs": {"base": 2e5}}}},
        "global.base",
    ),
    "window": (
        {"pattern": THREE, "types": {"local": {"window": 8}}},
        {"pattern": THREE, "types": {"local": {"window": 16}}},
        "local.window",
    ),
    "kernel options": (
        {"pattern": THREE, "types": {"global": {"attention_kwargs": {"window_block": 8}}}},
        {"pattern": THREE, "types": {"global": {"attention_kwargs": {"window_block": 16}}}},
        "global.window_block",
    ),
    "pattern": (
        {"pattern": THREE, "types": {"local": {"window": 8}}},
        {"pattern": ["local", "local", "global"], "types": {"local": {"window": 8}}},
        "pattern",
    ),
}


def model(plan, position="rope", position_kwargs=None) -> dict:
    return {
        "position": position,
        "position_kwargs": position_kwargs,
        "attention": "softmax",
        "layer_plan": plan,
    }


@pytest.mark.parametrize("case", sorted(EQUIVALENT))
def test_equivalent_plans_are_one_plan(case):
    first, second = EQUIVALENT[case]
    assert same_plan(model(first), model(second))
    labels = variant_labels(
        [
            {"position": "rope", "attention": "softmax", "layer_plan": first, "seed": 0},
            {"position": "rope", "attention": "softmax", "layer_plan": second, "seed": 1},
        ]
    )
    assert labels[0] == labels[1] == "rope-softmax"


@pytest.mark.parametrize("case", sorted(DIFFERING))
def test_every_setting_of_a_plan_tells_variants_apart_and_the_label_names_it(case):
    first, second, name = DIFFERING[case]
    assert not same_plan(model(first), model(second))
    base = {"position": "rope", "attention": "softmax"}
    labels = variant_labels(
        [
            {**base, "layer_plan": first, "seed": 0},
            {**base, "layer_plan": first, "seed": 1},
            {**base, "layer_plan": second, "seed": 0},
        ]
    )
    assert labels[0] == labels[1] != labels[2]
    assert all(f" {name}=" in label for label in labels[::2]), labels


def test_a_layers_own_kernel_is_part_of_the_plan():
    """A type's ``attention`` was once left out of a plan's form: a plan of linear layers
    among softmax ones compared as no plan (a resumed run took the other kernel without a
    word, ``compare`` averaged the two as seeds of one variant, their run names were one)."""
    linear = {"pattern": THREE, "types": {"global": {"attention": "linear"}}}
    assert canonical_plan(linear, "rope", None, "softmax") == linear
    assert not same_plan(model(linear), model(None))
    assert plan_label(linear) != plan_label(None)
    base = {"position": "rope", "attention": "softmax"}
    labels = variant_labels([{**base, "layer_plan": linear}, {**base, "layer_plan": None}])
    assert labels[0] != labels[1] and "global.attention=linear" in labels[0], labels


def test_a_type_with_the_models_options_has_none_of_its_own():
    plan = {"pattern": ["a", "b"], "types": {"b": {"position_kwargs": {"base": 500}}}}
    assert canonical_plan(plan, "rope", {"base": 500}) is None
    assert canonical_plan(plan, "rope", {"base": 10000}) == {
        "pattern": ["a", "b"],
        "types": {"b": {"position_kwargs": {"base": 500}}},
    }


@pytest.mark.parametrize(
    "names,period",
    [
        (["a"], ["a"]),
        (["a", "a"], ["a"]),
        (["a", "b", "a", "b"], ["a", "b"]),
        (["a", "b", "a"], ["a", "b", "a"]),
    ],
)
def test_shortest_period(names, period):
    assert shortest_period(names) == period


def test_a_malformed_plan_is_compared_as_written():
    plan = {"pattern": "global", "layers": ["x"]}
    assert canonical_plan(plan, "rope") == plan


def _run(plan, seed: int, acc: float, lr: float = 1e-3) -> RunSummary:
    hparams = {"position": "rope", "attention": "softmax", "learning_rate": lr}
    if plan is not None:
        hparams["layer_plan"] = plan
    return RunSummary(
        path=__import__("pathlib").Path(f"run-{id(plan)}-{seed}-{lr}"),
        position="rope",
        attention="softmax",
        seed=seed,
        hparams=hparams,
        final_val_loss=2 - acc,
        val_acc=acc,
    )


@pytest.mark.parametrize("key", ["layer_plan.pattern", "layer_plan", "model.layer_plan.layers"])
def test_select_over_a_plan_key_picks_the_best_plan(key):
    """A list-valued key (``layer_plan.pattern``) raised TypeError; the whole plan and its
    ``layers`` spelling select the same way."""
    best = {"pattern": ["local", "global"], "types": {"local": {"window": 8}}}
    worse = {"pattern": ["global", "local"], "types": {"local": {"window": 8}}}
    runs = [_run(best, s, 0.9 + s / 100) for s in range(2)]
    runs += [_run(worse, s, 0.5 + s / 100) for s in range(2)]
    (group,) = select(runs, key, "val/acc")
    assert len(group.runs) == 2 and all(r.hparams["layer_plan"] is best for r in group.runs)
    assert len(group.candidates) == 2
    table, rows = to_markdown([group], "val/acc"), to_csv([group], "val/acc")
    if key != "layer_plan":  # the chosen pattern, as compact JSON
        assert '["local","global"]' in table and '""local"",""global""' in rows


@pytest.mark.parametrize("case", sorted(DIFFERING))
def test_select_keeps_plans_that_differ_in_any_setting_in_groups_of_their_own(case):
    first, second, _ = DIFFERING[case]
    runs = [
        _run(plan, s, 0.5, lr) for plan in (first, second) for s in (0, 1) for lr in (1e-3, 3e-3)
    ]
    groups = select(runs, "learning_rate", "val_acc")
    assert len(groups) == 2 and all(len(g.runs) == 2 for g in groups)


# -- labels: injective over settings, one spelling --------------------------------------------

#: Pairs of plans that build different layers but whose labels once collided (or could).
COLLIDING = {
    "a type named local8 against local with window 8": (
        {"pattern": ["local8", "global"], "types": {"local8": {"position": "nope"}}},
        {"pattern": ["local", "global"], "types": {"local": {"window": 8, "position": "nope"}}},
    ),
    "a type named localx against local repeated": (
        {"pattern": ["localx", "g"], "types": {"localx": {"window": 2}, "g": {"window": 4}}},
        {"pattern": ["local", "local", "g"], "types": {"local": {"window": 4}, "g": {"window": 4}}},
    ),
    "a scheme with digits against an option": (
        {"pattern": ["g", "l"], "types": {"g": {"position": "t5"}, "l": {"window": 8}}},
        {"pattern": ["g", "l"], "types": {"g": {"position_kwargs": {"t": 5}}, "l": {"window": 8}}},
    ),
    "a fractional option against two fields": (
        {
            "pattern": ["g", "l"],
            "types": {"g": {"position_kwargs": {"a": 0.5}}, "l": {"window": 8}},
        },
        {
            "pattern": ["g", "l"],
            "types": {"g": {"position_kwargs": {"a": 0, "b": 5}}, "l": {"window": 8}},
        },
    ),
    "a type named like a digest": (
        {"pattern": ["l", "deadbeef"], "types": {"l": {"window": 8}}},
        {"pattern": ["l"], "types": {"l": {"window": 8}}},
    ),
}


@pytest.mark.parametrize("case", sorted(COLLIDING))
def test_labels_of_different_plans_differ(case):
    first, second = COLLIDING[case]
    assert plan_label(first) != plan_label(second)
    for plan in (first, second):  # a label read back is its plan, or it carries a digest
        label = plan_label(plan)
        assert read_label(label) == written_plan(plan) or read_label(label) is None


@pytest.mark.parametrize("case", sorted(EQUIVALENT))
def test_one_plan_written_two_ways_has_one_label_where_its_types_write_the_same(case):
    first, second = EQUIVALENT[case]
    if case in WRITTEN_APART:
        return
    assert plan_label(first) == plan_label(second)


@pytest.mark.parametrize("case", sorted(EQUIVALENT))
def test_runs_of_one_model_get_one_name_however_its_plan_is_written(case):
    """``{l: {window: 8, position: rope}}`` in a RoPE model was named ``...-l8.rope-g``,
    ``{l: {window: 8}}`` (the same model) ``...-l8-g``; windows 65 and 64 (one layer) were
    ``l65`` and ``l64``: ``fit`` named a plan as written. It names it as it builds."""
    from roformer_lit.training.run_name import run_stem

    def stem(plan: Any) -> str:
        config = {"config": [], "seed_everything": 0, "data": {}, "model": model(plan)}
        return run_stem(config)

    first, second = EQUIVALENT[case]
    assert stem(first) == stem(second)


@pytest.mark.parametrize(
    "plan,label",
    [
        (MODERN, "global.base160000-local128.base10000x2"),
        (
            {"pattern": ["local", "local", "global"], "types": {"local": {"window": 128}}},
            "local128x2-global",
        ),
        (
            {"pattern": THREE, "types": {"global": {"position": "nope"}, "local": {"window": 8}}},
            "global.nope-local8x2",
        ),
    ],
)
def test_plain_plans_keep_short_labels_in_one_spelling(plan, label):
    assert plan_label(plan) == label
    assert read_label(label) == written_plan(plan)


def test_a_recipe_run_is_named_for_its_recipe_and_what_differs():
    import yaml
    from cli_helpers import CONFIGS

    from roformer_lit.training.run_name import run_stem

    recipe = CONFIGS / "recipes" / "modernbert.yaml"
    own = yaml.safe_load(recipe.read_text(encoding="utf-8"))["model"]
    size = CONFIGS / "size" / "base.yaml"

    def stem(files=(), **model) -> str:
        section = {"attention": "softmax", **own, **model}
        config = {"config": [recipe, *files], "seed_everything": 0, "model": section}
        return run_stem({**config, "data": {}})

    typed = {
        "pattern": ["global", "local", "local"],
        "types": {
            "global": {"position_kwargs": {"base": 160000}},
            "local": {"window": 128, "position_kwargs": {"base": 10000}},
        },
    }
    assert stem() == "modernbert-seed0"
    assert stem([size]) == "modernbert-seed0"
    assert stem(layer_plan=typed) == "modernbert-seed0"  # the recipe's plan, typed
    assert stem(block={**own["block"], "mlp": "swiglu"}) == "modernbert-seed0-mlpswiglu"
    assert stem(attention="linear") == "modernbert-linear-seed0"
    replaced = stem(block={"mlp": "gelu"})  # a whole block replaces the recipe's
    assert replaced.startswith("modernbert-seed0-") and "mlpgelu" in replaced
    assert "normdefault" in replaced
    plain = {"config": [], "seed_everything": 0, "data": {}}
    plain["model"] = {"position": "rope", "attention": "softmax", "layer_plan": typed}
    # named as it builds: base 10000 is RoPE's default, the model's own, so no part of it
    assert run_stem(plain) == "rope-softmax-seed0-global.base160000-local128x2"
    plain["model"]["position_kwargs"] = {"base": 500}  # now both types' bases are their own
    assert run_stem(plain).endswith("-base500-global.base160000-local128.base10000x2")


#: A recipe's plan dropped -> how it was written. Each run was named ``modernbert-seed0``,
#: the recipe's own name, though its every layer is global: another experiment, exit 0.
DROPPED_PLANS: dict[str, Any] = {
    "null": None,
    "one plain type": {"pattern": ["all"]},
    "types without settings": {"pattern": ["global", "local", "local"], "types": {"local": {}}},
}


@pytest.mark.parametrize("case", sorted(DROPPED_PLANS))
def test_a_recipe_run_without_its_plan_says_so_in_its_name(case):
    import yaml
    from cli_helpers import CONFIGS

    from roformer_lit.training.run_name import run_stem

    recipe = CONFIGS / "recipes" / "modernbert.yaml"
    own = yaml.safe_load(recipe.read_text(encoding="utf-8"))["model"]
    section = {"attention": "softmax", **own, "layer_plan": DROPPED_PLANS[case]}
    config = {"config": [recipe], "seed_everything": 0, "model": section, "data": {}}
    assert run_stem(config) == "modernbert-seed0-layer_plandefault"


# -- options at their defaults: the model they build is the plain one ------------------------


def _defaults(cls: type) -> dict[str, Any]:
    """Every option of ``cls`` at its default value."""
    params = inspect.signature(cls.__init__).parameters
    return {name: params[name].default for name in option_hints(cls)}


def _another(hint: Any, default: Any) -> Any:
    """A value of type ``hint`` other than ``default`` (an identity need not build)."""
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is typing.Literal:
        return next(choice for choice in args if choice != default)
    if args and default is None:  # ``X | None`` at None: a value of X
        hint = typing.get_origin(args[0]) or args[0]
    if hint is bool:
        return not default
    if hint is int:
        return 1 if default is None else default + 1
    if hint is float:
        return 1.0 if default is None else default + 1.0
    if hint is dict:
        return {"factor": 2.0}
    raise AssertionError(f"no other value of {hint!r} written for this test: add one")


def _with_options(registry) -> list[str]:
    """The built-ins of ``registry`` that have options."""
    return [name for name in registry.builtin_names() if option_hints(registry[name])]


SCHEMES_WITH_OPTIONS = _with_options(POSITION_SCHEMES)
KERNELS_WITH_OPTIONS = _with_options(ATTENTION_KERNELS)


def test_the_registries_have_components_with_options():
    """The oracle of the tests below: they run over real options."""
    assert "t5" in SCHEMES_WITH_OPTIONS and "softmax" in KERNELS_WITH_OPTIONS


@pytest.mark.parametrize("position", SCHEMES_WITH_OPTIONS)
def test_a_type_writing_its_schemes_defaults_is_the_plain_model(position):
    """A type that writes the model's scheme's options at their defaults (``num_buckets:
    32`` in a T5 model) builds the model without a plan, bit for bit (layers share a scheme
    by :func:`~roformer_lit.architecture_rules.scheme_key`): a resumed run takes it, and
    ``compare`` counts both as seeds of one variant. Each option on its own, and all."""
    defaults = _defaults(POSITION_SCHEMES[position])
    plain = model(None, position)
    for written in [*({k: v} for k, v in defaults.items()), defaults]:
        plan = {"pattern": ["a", "b"], "types": {"b": {"position_kwargs": written}}}
        assert canonical_plan(plan, position, None, "softmax") is None, written
        assert same_plan(model(plan, position), plain), written
        labels = variant_labels([{**model(plan, position), "seed": 0}, {**plain, "seed": 1}])
        assert labels[0] == labels[1], (written, labels)


@pytest.mark.parametrize("position", SCHEMES_WITH_OPTIONS)
def test_another_scheme_at_its_defaults_is_that_scheme_without_options(position):
    """A type of another scheme than the model's, written with that scheme's defaults, is
    the type without them."""
    model_position = "nope" if position != "nope" else "rope"
    defaults = _defaults(POSITION_SCHEMES[position])
    bare = {"pattern": ["a", "b"], "types": {"b": {"position": position}}}
    written = {
        "pattern": ["a", "b"],
        "types": {"b": {"position": position, "position_kwargs": defaults}},
    }
    assert same_plan(model(bare, model_position), model(written, model_position))
    assert canonical_plan(written, model_position, None, "softmax") == bare


@pytest.mark.parametrize("position", SCHEMES_WITH_OPTIONS)
def test_an_option_off_its_default_is_another_plan(position):
    """Only the defaults are read away: any other value of any option is a plan of its own,
    for the model's scheme and for another one."""
    cls = POSITION_SCHEMES[position]
    defaults, hints = _defaults(cls), option_hints(cls)
    for key, default in defaults.items():
        value = _another(hints[key], default)
        own = {"pattern": ["a", "b"], "types": {"b": {"position_kwargs": {key: value}}}}
        assert not same_plan(model(own, position), model(None, position)), key
        form = canonical_plan(own, position, None, "softmax")
        assert form["types"]["b"]["position_kwargs"] == {key: number(plain(value))}, form
        other = {"position": position, "position_kwargs": {key: value}}
        other_plan = {"pattern": ["a", "b"], "types": {"b": other}}
        bare = {"pattern": ["a", "b"], "types": {"b": {"position": position}}}
        assert not same_plan(model(other_plan, "nope"), model(bare, "nope")), key


def test_the_default_against_the_models_own_option_is_a_plan_of_its_own():
    """``num_buckets: 32`` (the default) in a type of a model with ``num_buckets: 64`` is
    not the model's value: the type keeps it."""
    plan = {"pattern": ["a", "b"], "types": {"b": {"position_kwargs": {"num_buckets": 32}}}}
    assert canonical_plan(plan, "t5", {"num_buckets": 64}, "softmax") == plan
    assert not same_plan(model(plan, "t5", {"num_buckets": 64}), model(None, "t5"))


@pytest.mark.parametrize("attention", KERNELS_WITH_OPTIONS)
def test_a_type_writing_its_kernels_defaults_is_the_plain_model(attention):
    """The same reading for a kernel's options: at their defaults they are none, off them
    they are a plan of their own."""
    cls = ATTENTION_KERNELS[attention]
    defaults, hints = _defaults(cls), option_hints(cls)
    base = {"position": "nope", "attention": attention, "layer_plan": None}
    plan = {"pattern": ["a", "b"], "types": {"b": {"attention_kwargs": defaults}}}
    assert same_plan({**base, "layer_plan": plan}, base)
    for key, default in defaults.items():
        changed = {"pattern": ["a", "b"], "types": {"b": {"attention_kwargs": {key: None}}}}
        changed["types"]["b"]["attention_kwargs"][key] = _another(hints[key], default)
        assert not same_plan({**base, "layer_plan": changed}, base), key


def test_same_layers_reads_what_each_layer_builds_whatever_its_type_is_called():
    """``pattern: [g, l]`` with the base on the model and ``layers: [global, local, ...]``
    with it on each type build one network: :func:`same_layers` says so where
    :func:`same_plan` (which keeps the names runs are grouped by) does not; a window or a
    base changed is another network for both."""
    short = {
        "position": "rope",
        "num_layers": 4,
        "position_kwargs": {"base": 500.0},
        "layer_plan": {"pattern": ["g", "l"], "types": {"l": {"window": 8}}},
    }
    base = {"base": 500}
    long = {
        "position": "rope",
        "num_layers": 4,
        "position_kwargs": None,
        "layer_plan": {
            "layers": ["global", "local"] * 2,
            "types": {
                "global": {"position_kwargs": base},
                "local": {"window": 9, "position_kwargs": base},  # 9 builds window 8
            },
        },
    }
    assert same_layers(short, long) and not same_plan(short, long)
    wider = {**short, "layer_plan": {"pattern": ["g", "l"], "types": {"l": {"window": 16}}}}
    assert not same_layers(wider, long)
    assert not same_layers({**short, "position_kwargs": None}, long)
    assert not same_layers({**short, "num_layers": 6}, long)
