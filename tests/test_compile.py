"""torch.compile: every registered pair traces as one graph and computes what eager does."""

from __future__ import annotations

import pytest
import torch
from model_factory import VALID_PAIRS, random_ids, small_model

from roformer_lit import POSITION_SCHEMES


@pytest.mark.parametrize("with_mask", [False, True])
@pytest.mark.parametrize("position,attention", VALID_PAIRS)
def test_no_graph_breaks_and_same_outputs(position, attention, with_mask):
    model = small_model(position, attention)
    ids = random_ids(2, 12)
    mask = None
    if with_mask:
        mask = torch.ones_like(ids, dtype=torch.bool)
        mask[1, 8:] = False
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(model.encoder)(ids, mask)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    assert explanation.graph_count == 1
    compiled = torch.compile(model.encoder, backend="aot_eager")
    with torch.no_grad():
        torch.testing.assert_close(
            compiled(ids, mask), model.encoder(ids, mask), atol=1e-5, rtol=1e-5
        )


@pytest.mark.slow
@pytest.mark.parametrize("position", ["rope", "deberta"])
def test_inductor_compiled_model_trains_like_eager(position):
    """The real backend (slow on CPU: it compiles C++)."""
    eager = small_model(position)
    compiled = small_model(position, compile=True)
    ids = random_ids(2, 16)
    labels = torch.where(
        torch.rand(2, 16, generator=torch.Generator().manual_seed(0)) < 0.3, ids, -100
    )
    torch.testing.assert_close(
        compiled.mlm_loss(ids, labels), eager.mlm_loss(ids, labels), atol=1e-4, rtol=1e-4
    )


@pytest.mark.parametrize("position,attention", VALID_PAIRS)
def test_training_steps_after_the_first_do_not_recompile(position, attention):
    """Caches a scheme fills on its first call must not invalidate the compiled graph."""
    model = small_model(position, attention).train()
    ids = random_ids(2, 12)
    torch._dynamo.reset()
    compiled = torch.compile(model.encoder, backend="aot_eager")
    compiled(ids, None).sum().backward()
    with torch._dynamo.config.patch(error_on_recompile=True):
        for _ in range(2):
            compiled(ids, None).sum().backward()


@pytest.mark.parametrize("position", ["rope", "alibi", "t5"])
def test_a_layer_plan_with_windows_traces_as_one_graph(position):
    """Per-layer schemes and windows (the banded path: rows longer than window_block) add
    no graph break."""
    plan = {
        "pattern": ["local", "global"],
        "types": {"local": {"window": 4}, "global": {"position": "nope"}},
    }
    model = small_model(
        position, layer_plan=plan, block={"mlp": "geglu"}, attention_kwargs={"window_block": 4}
    )
    ids = random_ids(2, 12)
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, 8:] = False
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(model.encoder)(ids, mask)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    compiled = torch.compile(model.encoder, backend="aot_eager")
    with torch.no_grad():
        torch.testing.assert_close(
            compiled(ids, mask), model.encoder(ids, mask), atol=1e-5, rtol=1e-5
        )


@pytest.mark.parametrize(
    "position", [name for name, scheme in POSITION_SCHEMES.items() if scheme.needs_score_bias]
)
def test_bias_in_blocks_of_queries_traces_as_one_graph_and_trains_like_eager(position):
    """Long rows with a score bias (checkpointed blocks of queries) compile without a graph
    break, and the compiled backward gives eager's gradients."""
    kernel = {"bias_block": 4, "bias_block_from": 4}
    model = small_model(position, attention_kwargs=kernel, dropout=0.0).train()
    ids = random_ids(2, 12)
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, 8:] = False
    torch._dynamo.reset()
    explanation = torch._dynamo.explain(model.encoder)(ids, mask)
    assert explanation.graph_break_count == 0, explanation.break_reasons
    compiled = torch.compile(model.encoder, backend="aot_eager")
    grads = []
    for encoder in (compiled, model.encoder):
        model.zero_grad()
        encoder(ids, mask).sum().backward()
        grads.append({n: p.grad for n, p in model.named_parameters() if p.grad is not None})
    assert grads[0].keys() == grads[1].keys()
    for name, grad in grads[0].items():
        torch.testing.assert_close(grad, grads[1][name], atol=1e-5, rtol=1e-5, msg=name)
