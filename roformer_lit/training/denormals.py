"""Flush subnormal floats to zero on a CPU (x86's FTZ and DAZ flags).

A float32 below 1.2e-38 is *subnormal*; on x86 every arithmetic operation that reads or
writes one takes a microcode assist, tens of times slower than a normal one. Attention with
a distance bias makes them in bulk: under ALiBi's ``-m |i - j|`` most probabilities of a
2,048-token row are ``exp(x)`` with ``x`` between -103 and -87, and with them kept a
training step of ``alibi`` takes about 2.6x the step of ``nope`` on a 2-core CPU instead of
1.1x (docs/performance.md, "Bias schemes on a CPU": the "subnormals kept" column, from
``bench`` with ``ROFORMER_LIT_KEEP_SUBNORMALS=1``).

:func:`flush_denormals` sets the flags through ``torch.set_flush_denormal``: the only change
to any number is that values below 1.2e-38 read and are written as zero (the practice of
TensorFlow's and XLA's CPU runtimes). The flags belong to each thread and a new thread
inherits its creator's, so this must run before torch starts its thread pool: ``python -m
roformer_lit`` calls it before any command runs a tensor operation. A process started with
``ROFORMER_LIT_KEEP_SUBNORMALS=1`` keeps them (slower; on rows shorter than 1,024 tokens,
bit for bit with the runs made before this setting existed).
"""

from __future__ import annotations

import os

import torch

OPT_OUT = "ROFORMER_LIT_KEEP_SUBNORMALS"


def flush_denormals() -> bool:
    """Set FTZ and DAZ on this thread (and the threads it starts from now on); True if the
    CPU has them and the process did not opt out."""
    if os.environ.get(OPT_OUT, "") not in ("", "0"):
        return False
    return bool(torch.set_flush_denormal(True))
