"""The machine a run or a benchmark ran on, in one line.

Low-level on purpose: the training core records the processor in a run's numerics
(:mod:`roformer_lit.training.lifecycle`), and the benchmarks head their tables with
:func:`describe_machine`; neither has to import the other."""

from __future__ import annotations

import os
import platform

import torch


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo``), else what :mod:`platform` reports."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def describe_machine(device: torch.device | None = None) -> str:
    """E.g. ``CPU: Intel Xeon ... (2 cores, 2 torch threads), torch 2.13.0``."""
    if device is not None and device.type == "cuda":
        name = torch.cuda.get_device_name(device)
        return f"GPU: {name}, CUDA {torch.version.cuda}, torch {torch.__version__}"
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (
        f"CPU: {cpu_model()} ({cores} cores, {torch.get_num_threads()} torch threads), "
        f"torch {torch.__version__}"
    )
