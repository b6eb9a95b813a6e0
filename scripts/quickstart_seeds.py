"""Write the quick start's per-step validation curves of several seeds to a raw output.

    python scripts/quickstart_seeds.py runs/mlm/rope-softmax-seed{0,1,2} \\
        --out docs/bench/cpu-YYYY-MM-DD-quickstart-seeds.csv \\
        --command "python -m roformer_lit fit --config configs/rope.yaml --seed_everything N"

See :mod:`roformer_lit.results.study.seed_curves`.
"""

import argparse
import sys
from pathlib import Path

from roformer_lit.errors import ConfigError
from roformer_lit.results.study.seed_curves import write

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--command",
        default="python -m roformer_lit fit --config configs/rope.yaml --seed_everything N",
    )
    ns = parser.parse_args()
    try:
        write(ns.runs, ns.out, ns.command)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
