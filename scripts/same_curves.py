"""Compare two runs' logged curves bit for bit: ``python scripts/same_curves.py RUN_A RUN_B``.

For every scalar tag either run logged under ``train/`` and ``val/``, prints how many points
each has and whether every (step, value) pair is identical (float equality, no tolerance);
a tag only one run logged is a difference; exits 1 if any differs. Used to prove that a
refactor changes no number (the quick-start run before and after, on one machine)."""

from __future__ import annotations

import sys

from roformer_lit.errors import ConfigError
from roformer_lit.results.events import event_files, read_run
from roformer_lit.tool_arguments import INPUT_DIRECTORY, ToolParser, run_script, script_parser


def build_parser() -> ToolParser:
    parser = script_parser(__file__, description=__doc__.splitlines()[0])
    parser.add_argument("run_a", type=INPUT_DIRECTORY, metavar="RUN_A")
    parser.add_argument("run_b", type=INPUT_DIRECTORY, metavar="RUN_B")
    return parser


def main(argv: list[str]) -> int:
    ns = build_parser().parse_args(argv)
    for path in (ns.run_a, ns.run_b):
        if not event_files(path):
            raise ConfigError(f"{path} holds no TensorBoard event file; give a run's directory")
    a, b = (read_run(path).scalars for path in (ns.run_a, ns.run_b))
    logged = {t for t in set(a) | set(b) if t.startswith(("train/", "val/"))}
    only = sorted(logged - (set(a) & set(b)))
    for tag in only:  # a curve one run logs and the other does not is a difference too
        print(f"{tag}: logged by {'the first' if tag in a else 'the second'} run only, DIFFERENT")
    tags = sorted(logged - set(only))
    different = len(only)
    for tag in tags:
        left = [(s.step, s.value) for s in a[tag]]
        right = [(s.step, s.value) for s in b[tag]]
        same = left == right
        different += not same
        print(f"{tag}: {len(left)} vs {len(right)} points, {'identical' if same else 'DIFFERENT'}")
    return 1 if different or not tags else 0


if __name__ == "__main__":
    sys.exit(run_script(main, __file__))
