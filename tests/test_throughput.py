"""The throughput callback's FLOP rate and MFU against torch's own FLOP counter."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from lightning.pytorch import LightningModule
from model_factory import random_ids, small_model
from torch.utils.flop_counter import FlopCounterMode

from roformer_lit.training.throughput import Throughput


def _logged_by(callback: Throughput, module: LightningModule, batch: dict) -> dict:
    """What the callback logs for the second of two training batches 0.5 s apart."""
    logged: dict = {}
    module.log = lambda name, value, **_: logged.__setitem__(name, value)
    trainer = SimpleNamespace(world_size=1)
    for index in range(2):
        callback.on_train_batch_end(trainer, module, None, batch, index)
    return logged


@pytest.mark.parametrize("block", [{}, {"mlp": "geglu"}], ids=["bert", "geglu"])
def test_logged_flop_rate_is_torchs_count_of_the_step_over_its_seconds(block):
    model = small_model("nope", "softmax", num_layers=2, block=block).train()
    ids = random_ids(3, 20)
    labels = torch.where(torch.arange(20) % 3 == 0, ids, -100)
    with FlopCounterMode(display=False) as counter:
        model.mlm_loss(ids, labels).backward()
    counts = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
    products = sum(counts.get(op, 0) for op in ("aten.mm", "aten.addmm", "aten.bmm"))
    clock = iter([10.0, 10.5])
    callback = Throughput(clock=lambda: next(clock), peak_flops=4e6)
    logged = _logged_by(callback, model, {"input_ids": ids, "labels": labels})
    assert logged["perf/tokens_per_s"] == pytest.approx(60 / 0.5)
    assert logged["perf/model_tflops"] * 1e12 * 0.5 == pytest.approx(products)
    assert logged["perf/mfu"] == pytest.approx(products / 0.5 / 4e6)


def test_no_mfu_without_a_known_peak_and_no_flops_for_other_modules():
    model = small_model("nope", "softmax", num_layers=1).train()
    ids = random_ids(2, 8)
    batch = {"input_ids": ids, "labels": ids}
    clock = iter([0.0, 1.0, 2.0, 3.0])
    logged = _logged_by(Throughput(clock=lambda: next(clock)), model, batch)  # a CPU: no peak
    assert "perf/model_tflops" in logged and "perf/mfu" not in logged
    logged = _logged_by(Throughput(clock=lambda: next(clock)), LightningModule(), batch)
    assert set(logged) == {"perf/tokens_per_s", "perf/peak_mem_mb"}
