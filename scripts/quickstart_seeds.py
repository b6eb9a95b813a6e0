"""Write the quick start's per-step validation curves of several seeds to a raw output.

    python scripts/quickstart_seeds.py runs/mlm/rope-softmax-seed{0,1,2} \\
        --out docs/bench/cpu-YYYY-MM-DD-quickstart-seeds.csv \\
        --command "python -m roformer_lit fit --config configs/rope.yaml --seed_everything N"

See :mod:`roformer_lit.results.study.seed_curves`.
"""

import sys
from pathlib import Path

from roformer_lit.results.study.seed_curves import write
from roformer_lit.tool_arguments import (
    INPUT_DIRECTORY,
    OUTPUT_FILE,
    ToolParser,
    run_script,
    script_parser,
)


def build_parser() -> ToolParser:
    parser = script_parser(__file__, description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=INPUT_DIRECTORY)
    parser.add_argument("--out", type=OUTPUT_FILE, required=True)
    parser.add_argument(
        "--command",
        default="python -m roformer_lit fit --config configs/rope.yaml --seed_everything N",
    )
    return parser


def main(argv: list[str]) -> None:
    ns = build_parser().parse_args(argv)
    write([Path(run) for run in ns.runs], Path(ns.out), ns.command)


if __name__ == "__main__":
    sys.exit(run_script(main, __file__))
