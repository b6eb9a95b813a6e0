"""Peak memory of one forward + backward, measured away from other allocations.

On CUDA: ``max_memory_allocated`` above what was allocated before the step. On CPU: a
fresh ``spawn`` subprocess builds the model and batch, notes its resident set size, runs
one forward + backward and reports the peak RSS (``VmHWM``, reset just before) above it.
"""

from __future__ import annotations

import multiprocessing
from typing import Any

import torch

from roformer_lit.benchmarks.runners import hf_reference, ours
from roformer_lit.training.denormals import flush_denormals


def status_mib(field: str) -> float:
    """``VmRSS`` / ``VmHWM`` (peak) of this process from ``/proc/self/status``, in MiB."""
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak_rss() -> None:
    """Linux: writing 5 to clear_refs resets the peak RSS (VmHWM) to the current RSS."""
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")


def _measure(
    position: str,
    attention: str,
    shape: Any,
    device_name: str,
    hf: bool,
    autocast: bool,
    attention_kwargs: dict | None = None,
) -> float:
    flush_denormals()  # as in the parent ``python -m roformer_lit``
    device = torch.device(device_name)
    torch.set_num_threads(max(torch.get_num_threads(), 1))
    runner = ours(
        position,
        attention,
        shape,
        device,
        autocast=autocast,
        compile=False,
        attention_kwargs=attention_kwargs,
    )
    if hf:
        runner = hf_reference(runner.model, shape, device, autocast=autocast)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        before = torch.cuda.memory_allocated(device)
        torch.cuda.reset_peak_memory_stats(device)
        runner.forward_loss().backward()
        torch.cuda.synchronize(device)
        return (torch.cuda.max_memory_allocated(device) - before) / 2**20
    _reset_peak_rss()
    before = status_mib("VmRSS")
    runner.forward_loss().backward()
    return status_mib("VmHWM") - before


def peak_step_memory_mb(
    position: str,
    attention: str,
    shape: Any,
    device: torch.device,
    hf: bool = False,
    autocast: bool = False,
    attention_kwargs: dict | None = None,
) -> float:
    """Peak MiB of one forward + backward of (position, attention) [or its HF reference],
    under bf16 autocast when ``autocast`` is set (as the timed steps were), with the
    kernel options ``attention_kwargs``."""
    args = (position, attention, shape)
    if device.type == "cuda":
        return _measure(*args, str(device), hf, autocast, attention_kwargs)
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_measure, (*args, "cpu", hf, autocast, attention_kwargs))
