"""What the benchmarks time: one training step of our encoder (:func:`ours`) or of its
Hugging Face reference with the same weights (:func:`hf_reference`), on a fixed random
batch of a :class:`Shape`, with the step's wall time kept in :class:`Timings`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from roformer_lit.module import MaskedLM


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
    ):
        self.model, self.loss, self.device, self.autocast = model, loss, device, autocast
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
        model, lambda: model.mlm_loss(ids, labels, segment_ids=segments), device, autocast
    )


def hf_reference(our: MaskedLM, shape: Shape, device: torch.device, autocast: bool) -> Runner:
    from roformer_lit.interop.export import to_hf_model

    hf = to_hf_model(our)
    if type(hf).__name__ == "BertForMaskedLM" and hasattr(hf, "set_attn_implementation"):
        hf.set_attn_implementation("sdpa")
    hf.to(device).train()
    ids, labels = make_batch(shape, device)
    return Runner(hf, lambda: hf(input_ids=ids, labels=labels).loss, device, autocast)
