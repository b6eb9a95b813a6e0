"""What an earlier version computed from one of its checkpoints (run on that version's code
by ``scripts/earlier_checkpoints.sh``): ``python scripts/earlier_checkpoint_record.py CKPT
RUN_DIR OUT.json ARGS...``.

OUT.json holds the command's arguments, fixed ids (two rows of 21 tokens drawn from seed
1234, the second padded after 15), the logits the checkpoint's model gives them in eval mode
(at the real tokens), and ``val/loss`` as each process's event file logged it, in order
(``val_loss[0]``: the run's, whose last value is the checkpoint's; ``val_loss[-1]``: the
resumed run's), read with TensorBoard's reader.
Only APIs every version has: ``MaskedLM.from_checkpoint`` and its forward; its arguments are
parsed as every script's (:func:`roformer_lit.tool_arguments.run_script`) where the code it
runs on has that, plainly where that code predates it."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from roformer_lit.module import MaskedLM

try:  # the code this runs on is an earlier version's, which may predate these
    from roformer_lit.tool_arguments import (
        INPUT_DIRECTORY,
        INPUT_FILE,
        OUTPUT_FILE,
        run_script,
        script_parser,
    )
except ImportError:
    INPUT_DIRECTORY = INPUT_FILE = OUTPUT_FILE = str

    def script_parser(script: str, **kwargs: Any) -> argparse.ArgumentParser:
        return argparse.ArgumentParser(**kwargs)

    def run_script(main: Any, script: str) -> int:
        return main(sys.argv[1:]) or 0


IDS_SEED = 1234
ROWS, LENGTH, PADDED_FROM = 2, 21, 15


def fixed_input(vocab_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The ids and attention mask every record is computed on."""
    generator = torch.Generator().manual_seed(IDS_SEED)
    ids = torch.randint(0, vocab_size, (ROWS, LENGTH), generator=generator)
    mask = torch.ones(ROWS, LENGTH, dtype=torch.bool)
    mask[1, PADDED_FROM:] = False
    return ids, mask


def build_parser() -> argparse.ArgumentParser:
    parser = script_parser(__file__, description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", type=INPUT_FILE, metavar="CKPT")
    parser.add_argument("run_dir", type=INPUT_DIRECTORY, metavar="RUN_DIR")
    parser.add_argument("out", type=OUTPUT_FILE, metavar="OUT.json")
    parser.add_argument("args", nargs=argparse.REMAINDER, metavar="ARGS", help="the run's")
    return parser


def main(argv: list[str]) -> None:
    ns = build_parser().parse_args(argv)
    checkpoint, run_dir, out, args = ns.checkpoint, ns.run_dir, ns.out, ns.args
    model = MaskedLM.from_checkpoint(checkpoint).eval()
    ids, mask = fixed_input(int(model.hparams["vocab_size"]))
    with torch.no_grad():
        logits = model(ids, attention_mask=mask)
    runs: list[list[float]] = []  # one list per process: the run, then its resumed run
    for events in sorted(Path(run_dir).glob("events.out.tfevents.*"), key=os.path.getmtime):
        reader = EventAccumulator(str(events), size_guidance={"scalars": 0})
        reader.Reload()
        runs.append([event.value for event in reader.Scalars("val/loss")])
    record = {
        "args": list(args),
        "ids": ids.tolist(),
        "mask": mask.tolist(),
        "logits": logits[mask].tolist(),
        "val_loss": runs,
    }
    Path(out).write_text(json.dumps(record) + "\n")


if __name__ == "__main__":
    sys.exit(run_script(main, __file__))
