"""``--ckpt_path`` values that are not a file for the one reader: the words Lightning
resolves itself (``last``, ``best``, ``hpc``) and remote URLs.

Lightning resolves ``last`` to the newest checkpoint of the run the trainer is writing,
``best`` to the best checkpoint of a ``fit`` earlier in the same process, and ``hpc`` to
the newest ``hpc_ckpt_<n>.ckpt`` in ``trainer.default_root_dir`` (a SLURM requeue's). A
command of this CLI is a new process that starts a new run (an existing run directory is
refused) or writes none, so ``last`` and ``best`` never name a checkpoint here: given
them, ``fit`` and ``finetune`` trained a new run from untrained weights and ``validate``
evaluated untrained weights, exit 0 (Lightning only warns), or Lightning stopped with a
traceback after the run directory was made. They are refused in one line before anything
is built, as ``hpc`` is where there is no such file; an ``hpc`` that names one is left to
Lightning, whose load the modules check (``RunModule.on_load_checkpoint``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from roformer_lit.errors import ConfigError

#: ``--ckpt_path`` values Lightning resolves itself (not file paths).
SPECIAL_CKPT_PATHS = ("last", "best", "hpc")

#: The name of a checkpoint Lightning's SLURM requeue writes, which ``hpc`` resolves to.
HPC_CHECKPOINT = re.compile(r"hpc_ckpt_\d+\.ckpt")

#: What each word means to Lightning, and why a command here has no such checkpoint.
MEANINGS = {
    "last": "the newest checkpoint of the run this command writes, and every command here "
    "starts a new run or writes none, so there is none (Lightning would go on from untrained "
    "weights)",
    "best": "the best checkpoint of a fit earlier in the same Python process, which a "
    "command here never has",
    "hpc": "the newest hpc_ckpt_<n>.ckpt (a SLURM requeue's) in trainer.default_root_dir "
    "({root}), and it holds none",
}


def left_to_lightning(ckpt: Any, root: Any, example: str) -> bool:
    """Whether ``--ckpt_path`` (``ckpt``) is not a local file for the one reader to check:
    none given, a remote URL, or ``hpc`` with a requeue's checkpoint in ``root``
    (``trainer.default_root_dir``; None: the working directory). ``last``, ``best`` and an
    ``hpc`` with none are one ConfigError line, ending with ``example``, a checkpoint's
    path to give instead."""
    if ckpt is None or "://" in str(ckpt):
        return True
    word = str(ckpt)
    if word not in SPECIAL_CKPT_PATHS:
        return False
    folder = Path(root if root is not None else ".").expanduser()
    if word == "hpc" and folder.is_dir():
        if any(HPC_CHECKPOINT.fullmatch(p.name) for p in folder.iterdir() if p.is_file()):
            return True
    meaning = MEANINGS[word].format(root=folder)
    raise ConfigError(
        f"--ckpt_path {word}: to Lightning, {meaning}; give a checkpoint's path, such as {example}"
    )
