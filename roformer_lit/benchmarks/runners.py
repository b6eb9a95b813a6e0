"""What the benchmarks time: one training step of our encoder (:func:`ours`) or of its
Hugging Face reference with the same weights (:func:`hf_reference`), on a fixed random
batch of a :class:`Shape`, with the step's wall time kept in :class:`Timings`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode

from roformer_lit.attention.softmax import SoftmaxAttention
from roformer_lit.errors import ConfigError
from roformer_lit.module import MaskedLM
from roformer_lit.safe_input import safe_yaml_load


@dataclass
class Shape:
    batch: int
    length: int
    hidden: int
    layers: int
    heads: int
    intermediate: int
    vocab: int

    def model_kwargs(self) -> dict:
        return dict(
            vocab_size=self.vocab,
            hidden_size=self.hidden,
            num_layers=self.layers,
            num_heads=self.heads,
            intermediate_size=self.intermediate,
            max_positions=max(512, self.length),
            attention_dropout=0.0,
        )


@dataclass
class Timings:
    step: list[float] = field(default_factory=list)  # forward + backward + optimiser
    fwd_bwd: list[float] = field(default_factory=list)
    inference: list[float] = field(default_factory=list)  # logits at every token, no grad


def make_batch(
    shape: Shape, device: torch.device, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    ids = torch.randint(5, shape.vocab, (shape.batch, shape.length), generator=gen)
    chosen = torch.rand(shape.batch, shape.length, generator=gen) < 0.15
    return ids.to(device), torch.where(chosen, ids, -100).to(device)


def sync_device(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Runner:
    """One model, its optimiser and a function computing its loss on the benchmark batch."""

    def __init__(
        self,
        model: torch.nn.Module,
        loss: Callable[[], torch.Tensor],
        device: torch.device,
        autocast: bool,
        logits: Callable[[], torch.Tensor] | None = None,
    ):
        self.model, self.loss, self.device, self.autocast = model, loss, device, autocast
        self.logits = logits
        self.optimizer = torch.optim.AdamW(  # fused on GPU, as MaskedLM's own optimiser
            model.parameters(), lr=1e-5, fused=device.type == "cuda" or None
        )
        self.timings = Timings()

    def forward_loss(self) -> torch.Tensor:
        """The loss, under bf16 autocast when the benchmark asks for it."""
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
            return self.loss()

    def step(self, record: bool = True) -> None:
        sync_device(self.device)
        start = time.perf_counter()
        self.forward_loss().backward()
        sync_device(self.device)
        middle = time.perf_counter()
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        sync_device(self.device)
        if record:
            self.timings.fwd_bwd.append(middle - start)
            self.timings.step.append(time.perf_counter() - start)

    def infer(self, record: bool = True) -> None:
        """One inference pass: the logits at every token, without gradients."""
        assert self.logits is not None, "this runner has no inference pass"
        sync_device(self.device)
        start = time.perf_counter()
        with (
            torch.no_grad(),
            torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast),
        ):
            self.logits()
        sync_device(self.device)
        if record:
            self.timings.inference.append(time.perf_counter() - start)


def inference_flops(runner: Runner) -> int:
    """The FLOPs of one inference pass of ``runner``, counted by torch's
    ``FlopCounterMode`` with every softmax layer on SDPA's math backend (the fused CPU
    kernel reports none, and FlexAttention's compiled kernel cannot run under the counter:
    found on an H200; the math form counts each call at the keys it is given: the full row
    under a mask, a block's window in a banded layer)."""
    assert runner.logits is not None, "this runner has no inference pass"
    with (
        torch.no_grad(),
        softmax_on_sdpa(runner.model),
        sdpa_kernel([SDPBackend.MATH]),
        FlopCounterMode(display=False) as count,
    ):
        runner.logits()
    return count.get_total_flops()


@contextmanager
def softmax_on_sdpa(model: torch.nn.Module) -> Iterator[None]:
    """Every :class:`SoftmaxAttention` of ``model`` on backend ``sdpa`` for the block, then
    back on its own (the same function: the backends agree to float rounding)."""
    kernels = [module for module in model.modules() if isinstance(module, SoftmaxAttention)]
    backends = [kernel.backend for kernel in kernels]
    try:
        for kernel in kernels:
            kernel.backend = "sdpa"
        yield
    finally:
        for kernel, backend in zip(kernels, backends, strict=True):
            kernel.backend = backend


def document_segments(shape: Shape, documents: int, device: torch.device) -> torch.Tensor:
    """``[B, L]`` segment ids: each block split into ``documents`` equal runs."""
    ids = torch.arange(shape.length, device=device) * documents // shape.length
    return ids.expand(shape.batch, shape.length)


def ours(
    position: str,
    attention: str,
    shape: Shape,
    device: torch.device,
    autocast: bool,
    compile: bool,
    documents: int | None = None,
    layer_plan: dict | None = None,
    attention_kwargs: dict | None = None,
) -> Runner:
    """Our model on the benchmark batch; with ``documents``, each block holds that many
    documents kept apart by ``segment_ids`` (``--data.document_mask``); with
    ``layer_plan``, the model has that plan (``--plans``); ``attention_kwargs``: the
    kernel's options."""
    torch.manual_seed(0)
    model = MaskedLM(
        position=position,
        attention=attention,
        compile=compile,
        layer_plan=layer_plan,
        attention_kwargs=attention_kwargs,
        **shape.model_kwargs(),
    )
    model.to(device).train()
    ids, labels = make_batch(shape, device)
    segments = None if documents is None else document_segments(shape, documents, device)
    return Runner(
        model,
        lambda: model.mlm_loss(ids, labels, segment_ids=segments),
        device,
        autocast,
        logits=lambda: model(ids, segment_ids=segments),
    )


#: Model settings a recipe fixes for itself; bench's shape flags set the rest.
SHAPE_FIELDS = ("hidden_size", "num_layers", "num_heads", "intermediate_size", "max_positions")
RECIPE_DIR = Path(__file__).resolve().parents[2] / "configs" / "recipes"


def recipe_settings(name: str, num_layers: int) -> dict[str, Any]:
    """The ``model:`` settings of ``configs/recipes/<name>.yaml`` without its size (bench's
    shape flags give that): the recipe's architecture at the benchmark's shape. A layer
    pattern is repeated and cut to ``num_layers`` as an explicit list of layers (so any
    ``--layers`` takes it)."""
    path = RECIPE_DIR / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(f"bench: recipe {name!r} needs {path}, which does not exist")
    settings = safe_yaml_load(path.read_text(encoding="utf-8"))["model"]
    settings = {key: value for key, value in settings.items() if key not in SHAPE_FIELDS}
    plan = settings.get("layer_plan")
    if plan and "pattern" in plan:
        pattern = plan["pattern"]
        layers = [pattern[index % len(pattern)] for index in range(num_layers)]
        types = {key: value for key, value in plan.get("types", {}).items() if key in layers}
        settings["layer_plan"] = {"layers": layers, "types": types}
    return settings


def recipe(name: str, shape: Shape, device: torch.device, autocast: bool) -> Runner:
    """Our model built from recipe ``name`` at ``shape``, on the benchmark batch."""
    torch.manual_seed(0)
    model = MaskedLM(**(shape.model_kwargs() | recipe_settings(name, shape.layers)))
    model.to(device).train()
    ids, labels = make_batch(shape, device)
    return Runner(
        model, lambda: model.mlm_loss(ids, labels), device, autocast, logits=lambda: model(ids)
    )


def hf_reference(our: MaskedLM, shape: Shape, device: torch.device, autocast: bool) -> Runner:
    from roformer_lit.interop.export import to_hf_model

    hf = to_hf_model(our)
    if type(hf).__name__ == "BertForMaskedLM" and hasattr(hf, "set_attn_implementation"):
        hf.set_attn_implementation("sdpa")
    best = best_attention(hf, device)
    if best is not None:
        hf.set_attn_implementation(best)
    hf.to(device).train()
    ids, labels = make_batch(shape, device)
    return Runner(
        hf,
        lambda: hf(input_ids=ids, labels=labels).loss,
        device,
        autocast,
        logits=lambda: hf(input_ids=ids).logits,
    )


def best_attention(hf: Any, device: torch.device) -> str | None:
    """The fastest attention implementation the HF model takes on ``device``:
    FlashAttention 2 on CUDA where the model supports it and the package is installed;
    None keeps the model's own (SDPA where it has it)."""
    if device.type != "cuda" or not getattr(hf, "_supports_flash_attn", False):
        return None
    from transformers.utils import is_flash_attn_2_available

    return "flash_attention_2" if is_flash_attn_2_available() else None
