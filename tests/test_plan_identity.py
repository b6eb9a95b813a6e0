"""Per-layer settings are settings: a plan is compared as what it builds
(:mod:`roformer_lit.plan_identity`) by ``compare``, ``compare --select``, a resumed run and
``sweep``; every setting of a plan tells variants apart and the label says which."""

from __future__ import annotations

import pytest

from roformer_lit.plan_identity import canonical_plan, same_plan, shortest_period
from roformer_lit.results.compare.runs import RunSummary
from roformer_lit.results.compare.select import select
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
}

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
    "pattern": (
        {"pattern": THREE, "types": {"local": {"window": 8}}},
        {"pattern": ["local", "local", "global"], "types": {"local": {"window": 8}}},
        "pattern",
    ),
}


def model(plan, position="rope", position_kwargs=None) -> dict:
    return {"position": position, "position_kwargs": position_kwargs, "layer_plan": plan}


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


@pytest.mark.parametrize("case", sorted(DIFFERING))
def test_select_keeps_plans_that_differ_in_any_setting_in_groups_of_their_own(case):
    first, second, _ = DIFFERING[case]
    runs = [
        _run(plan, s, 0.5, lr) for plan in (first, second) for s in (0, 1) for lr in (1e-3, 3e-3)
    ]
    groups = select(runs, "learning_rate", "val_acc")
    assert len(groups) == 2 and all(len(g.runs) == 2 for g in groups)
