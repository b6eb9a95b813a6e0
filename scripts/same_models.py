"""Prove a refactor changes no number: ``python scripts/same_models.py dump OUT.pt`` on each
side, then ``python scripts/same_models.py compare BEFORE.pt AFTER.pt``.

``dump`` builds one small :class:`~roformer_lit.module.MaskedLM` per architecture (every
built-in scheme, linear attention, windowed and mixed layer plans, the ModernBERT block)
from one seed, runs a training-mode forward and backward on fixed, padded input, and saves
every weight, the loss and every gradient. ``compare`` prints, per architecture, whether
weights, loss and gradients are identical (``torch.equal``: no tolerance) and exits 1 on
any difference. Run ``dump`` with ``PYTHONPATH`` pointing at each checkout (a worktree of
the commit before the change) on one machine."""

from __future__ import annotations

import sys
from typing import Any

import torch

from roformer_lit.errors import ConfigError
from roformer_lit.tool_arguments import (
    INPUT_FILE,
    OUTPUT_FILE,
    ToolParser,
    run_script,
    script_parser,
)

CASES: dict[str, dict[str, Any]] = {
    **{
        s: {"position": s}
        for s in [
            "nope",
            "learned",
            "sinusoidal",
            "xl",
            "deberta",
            "rope",
            "alibi",
            "kerple",
            "t5",
            "fire",
        ]
    },
    "rope_linear": {"position": "rope", "attention": "linear"},
    "plan": {
        "position": "rope",
        "num_layers": 3,
        "layer_plan": {
            "pattern": ["local", "local", "global"],
            "types": {"local": {"window": 8}, "global": {"position": "nope"}},
        },
    },
    "plan_t5": {
        "position": "t5",
        "num_layers": 4,
        "layer_plan": {
            "pattern": ["a", "b"],
            "types": {"a": {"window": 4}, "b": {"position": "alibi"}},
        },
    },
    "modern": {
        "position": "rope",
        "pre_norm": True,
        "block": {"mlp": "geglu", "norm_bias": False, "linear_bias": False, "first_norm": False},
        "layer_plan": {
            "pattern": ["local", "global"],
            "types": {
                "local": {"window": 8, "position_kwargs": {"base": 10000.0}},
                "global": {"position_kwargs": {"base": 160000.0}},
            },
        },
    },
}


def dump(path: str) -> None:
    from roformer_lit.module import MaskedLM

    out = {}
    for name, settings in CASES.items():
        settings = dict(settings)
        torch.manual_seed(0)
        model = MaskedLM(
            vocab_size=50,
            hidden_size=32,
            num_heads=4,
            num_layers=settings.pop("num_layers", 2),
            intermediate_size=64,
            **settings,
        )
        model.train()
        generator = torch.Generator().manual_seed(1)
        ids = torch.randint(0, 50, (2, 24), generator=generator)
        mask = torch.ones_like(ids)
        mask[1, 18:] = 0
        labels = torch.where(torch.rand(ids.shape, generator=generator) < 0.3, ids, -100)
        torch.manual_seed(2)
        loss = model.mlm_loss(ids, labels, mask)
        loss.backward()
        out[name] = {
            "state": {k: v.clone() for k, v in model.state_dict().items()},
            "loss": loss.detach(),
            "grads": {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None},
        }
    torch.save(out, path)
    print(f"saved {len(out)} architectures to {path}")


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return list(a) == list(b) and all(torch.equal(a[k], b[k]) for k in a)


def load(path: str) -> dict[str, Any]:
    """What ``dump`` saved at ``path``; anything else is a ConfigError naming it."""
    try:
        saved = torch.load(path)
    except OSError:
        raise
    except Exception as exc:  # torch.load of another file raises what its unpickler met
        raise ConfigError(
            f"{path} is not a file `same_models.py dump` wrote (torch.load: {type(exc).__name__})"
        ) from None
    parts = ("state", "loss", "grads")
    if not isinstance(saved, dict) or not all(
        isinstance(v, dict) and all(p in v for p in parts) for v in saved.values()
    ):
        raise ConfigError(f"{path} is not a file `same_models.py dump` wrote")
    return saved


def compare(before: str, after: str) -> int:
    a, b = load(before), load(after)
    different = 0
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            print(f"{name}: in one file only, DIFFERENT")
            different += 1
            continue
        weights = _same(a[name]["state"], b[name]["state"])
        loss = torch.equal(a[name]["loss"], b[name]["loss"])
        grads = _same(a[name]["grads"], b[name]["grads"])
        different += not (weights and loss and grads)
        words = ["identical" if ok else "DIFFERENT" for ok in (weights, loss, grads)]
        print(f"{name:12s} weights {words[0]:9s} loss {words[1]:9s} gradients {words[2]}")
    return 1 if different else 0


def build_parser() -> ToolParser:
    parser = script_parser(__file__, description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True, metavar="{dump,compare}")
    dumping = commands.add_parser("dump", tool=f"{parser.tool} dump", help="save the numbers")
    dumping.add_argument("out", type=OUTPUT_FILE, metavar="OUT.pt")
    comparing = commands.add_parser(
        "compare", tool=f"{parser.tool} compare", help="compare two dumps"
    )
    comparing.add_argument("before", type=INPUT_FILE, metavar="BEFORE.pt")
    comparing.add_argument("after", type=INPUT_FILE, metavar="AFTER.pt")
    return parser


def main(argv: list[str]) -> int | None:
    ns = build_parser().parse_args(argv)
    if ns.command == "dump":
        return dump(ns.out)
    return compare(ns.before, ns.after)


if __name__ == "__main__":
    sys.exit(run_script(main, __file__))
