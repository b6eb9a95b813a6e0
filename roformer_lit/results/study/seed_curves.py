"""Writing the quick start's per-step validation curves to a raw output under ``docs/bench/``.

    python scripts/quickstart_seeds.py runs/mlm/rope-softmax-seed{0,1,2} \\
        --out docs/bench/cpu-YYYY-MM-DD-quickstart-seeds.csv

Each run directory is read through :func:`~roformer_lit.results.events.read_run` (the
package's own reader, which reports a damaged event file instead of tabling what came
before it); the CSV has one row per run and validation step, ``seed,step,val_loss,val_acc``,
after one comment line naming the CPU (``lscpu``'s model name, its cores and torch's
threads: those the runs had, run with the defaults), the torch version and the command. A
run whose event files are damaged, that logged no ``val/loss``, or whose seed is not in its
name, and an ``--out`` that exists already, are refused in one line: a raw output is never
overwritten.
"""

from __future__ import annotations

import csv
import io
import os
import platform
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from roformer_lit.errors import ConfigError
from roformer_lit.results.events import read_run

_SEED = re.compile(r"-seed(\d+)$")


def cpu_name() -> str:
    """``lscpu``'s model name (the platform's processor string where lscpu is missing)."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        out = ""
    for line in out.splitlines():
        if line.startswith("Model name:"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def rows(run_dirs: Sequence[Path]) -> list[tuple[int, int, float, float]]:
    """``(seed, step, val/loss, val/acc)`` of every validation of every run."""
    found = []
    for run in map(Path, run_dirs):
        seed = _SEED.search(run.name)
        if seed is None:
            raise ConfigError(f"{run}: no seed in the run's name (…-seedN)")
        events = read_run(run)
        if events.problems:
            raise ConfigError(f"{run}: {events.problems[0]}")
        loss = {s.step: s.value for s in events.scalars.get("val/loss", [])}
        acc = {s.step: s.value for s in events.scalars.get("val/acc", [])}
        if not loss or sorted(loss) != sorted(acc):
            raise ConfigError(f"{run}: no val/loss and val/acc at the same steps")
        found += [(int(seed[1]), step, loss[step], acc[step]) for step in sorted(loss)]
    return found


def write(run_dirs: Sequence[Path], out: Path, command: str) -> None:
    """The CSV at ``out``; ConfigError if ``out`` exists or a run cannot give its curve."""
    import torch

    if out.exists():
        raise ConfigError(f"{out}: exists already; a raw output is never overwritten")
    buffer = io.StringIO()
    machine = f"{cpu_name()} ({os.cpu_count()} cores, {torch.get_num_threads()} torch threads)"
    buffer.write(f"# {machine}; torch {torch.__version__}; {command}\n")
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["seed", "step", "val_loss", "val_acc"])
    writer.writerows(rows(run_dirs))
    out.write_text(buffer.getvalue(), encoding="utf-8")
