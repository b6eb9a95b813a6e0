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
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from lightning.fabric.utilities.seed import seed_everything

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


def seed_taken(value: Any) -> Any:
    """The seed ``seed_everything: value`` seeds with: ``true`` as Lightning's
    ``seed_everything()`` without a seed takes it (``PL_GLOBAL_SEED``, else 0), found by
    calling it inside :func:`seed_environment_kept`, so nothing is seeded; any other value
    (a seed, ``false``: none) as it is."""
    if value is not True:
        return value
    with seed_environment_kept(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "No seed found, seed set to 0": fit says its seed
        return seed_everything(None, verbose=False)
