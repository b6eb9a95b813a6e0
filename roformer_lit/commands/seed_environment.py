"""Parsing a run's settings in this process leaves this process's seed as it was.

LightningCLI seeds as it parses (``_set_seed``, before it builds anything), and Lightning's
``seed_everything`` writes the seed it took to this process's environment
(``PL_GLOBAL_SEED``, ``PL_SEED_WORKERS``). ``seed_everything: true`` (or no seed) takes its
seed from ``PL_GLOBAL_SEED``, else 0. A ``sweep`` parses every run in its own process before
it launches them, and each ``fit`` it launches inherits its environment: without
:func:`seed_environment_kept` the last parsed run's seed became the seed of every
``seed_everything: true`` run (a grid ``[true, 5]`` trained seed 5 twice, exit 0), and each
run parsed took the seed of the run parsed before it.
"""

from __future__ import annotations

import os
import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import torch

#: The environment variables Lightning's ``seed_everything`` sets.
SEED_VARIABLES = ("PL_GLOBAL_SEED", "PL_SEED_WORKERS")


@contextmanager
def seed_environment_kept() -> Iterator[None]:
    """Inside, seeding may happen; after, :data:`SEED_VARIABLES` and the random states of
    Python, numpy and torch (CPU) are what they were before."""
    saved = {name: os.environ.get(name) for name in SEED_VARIABLES}
    states = (random.getstate(), np.random.get_state(), torch.random.get_rng_state())
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.random.set_rng_state(states[2])
