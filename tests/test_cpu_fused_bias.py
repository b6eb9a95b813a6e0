"""The fused CPU kernel with a float score bias and its own bias gradient, and the Toeplitz
rows of a bias of ``(h, i - j)``: each against an independent float64 form (the softmax
written out, an index gather), for every shape a mask broadcasts from, in several chunks
of queries; and where the kernel is (and is not) taken."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from roformer_lit.attention import cpu_fused_bias
from roformer_lit.attention.cpu_fused_bias import (
    fused_attention_rebuilding_mask,
    fused_attention_with_bias,
    fused_bias_available,
)
from roformer_lit.score_bias import OffsetLookup

BATCH, HEADS, LENGTH, HEAD_SIZE = 2, 3, 10, 4
SCALE = 0.37
MASK_SHAPES = {
    "per head, shared by the batch": (1, HEADS, LENGTH, LENGTH),
    "per example and head": (BATCH, HEADS, LENGTH, LENGTH),
    "per example, shared by the heads": (BATCH, 1, LENGTH, LENGTH),
    "one row per head": (1, HEADS, 1, LENGTH),
}


def written_out(q, k, v, mask):
    """``softmax(q k^T * scale + mask) v``, the softmax written out."""
    scores = q @ k.transpose(-1, -2) * SCALE + mask
    weights = (scores - scores.amax(-1, keepdim=True)).exp()
    return weights / weights.sum(-1, keepdim=True) @ v


def inputs(shape, seed: int, batch: int = BATCH):
    generator = torch.Generator().manual_seed(seed)
    qkv = [
        torch.randn(batch, HEADS, LENGTH, HEAD_SIZE, generator=generator, dtype=torch.float64)
        for _ in range(3)
    ]
    bias = torch.randn(shape, generator=generator, dtype=torch.float64)
    hidden = torch.rand(shape, generator=generator) < 0.25
    hidden[..., 0] = False  # every row keeps a key
    return [t.requires_grad_() for t in qkv], bias.requires_grad_(), hidden


@pytest.mark.parametrize("batch", [BATCH, 1])
@pytest.mark.parametrize("shape", list(MASK_SHAPES))
@pytest.mark.parametrize("chunk", [3, 256])
def test_output_and_every_gradient_equal_the_written_out_softmax(shape, chunk, batch, monkeypatch):
    """With one example too: a mask of its own rows then takes its gradient in place."""
    monkeypatch.setattr(cpu_fused_bias, "BACKWARD_ROWS", chunk)
    mask_shape = MASK_SHAPES[shape]
    mask_shape = (min(mask_shape[0], batch), *mask_shape[1:])
    (q, k, v), bias, hidden = inputs(mask_shape, seed=1, batch=batch)
    weight = torch.randn(batch, HEADS, LENGTH, HEAD_SIZE, dtype=torch.float64)
    results = []
    for attend in (fused_attention_with_bias, lambda q, k, v, m, s: written_out(q, k, v, m)):
        mask = bias.masked_fill(hidden, -math.inf)
        out = attend(q, k, v, mask, SCALE)
        grads = torch.autograd.grad((out * weight).sum(), (q, k, v, bias))
        results.append((out, grads))
    (got, got_grads), (want, want_grads) = results
    torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)
    for g, w in zip(got_grads, want_grads, strict=True):
        torch.testing.assert_close(g, w, atol=1e-12, rtol=1e-12)


def test_a_fixed_bias_takes_the_fused_backward_and_gives_the_same_gradients():
    (q, k, v), bias, hidden = inputs(MASK_SHAPES["per head, shared by the batch"], seed=2)
    mask = bias.detach().masked_fill(hidden, -math.inf)
    got = torch.autograd.grad(fused_attention_with_bias(q, k, v, mask, SCALE).sum(), (q, k, v))
    want = torch.autograd.grad(written_out(q, k, v, mask).sum(), (q, k, v))
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, atol=1e-12, rtol=1e-12)


def test_float32_inputs_give_float32_gradients_close_to_float64():
    (q, k, v), bias, hidden = inputs(MASK_SHAPES["per example and head"], seed=3)
    single = [t.detach().float().requires_grad_() for t in (q, k, v, bias)]
    out = fused_attention_with_bias(*single[:3], single[3].masked_fill(hidden, -math.inf), SCALE)
    grads = torch.autograd.grad(out.sum(), single)
    want = torch.autograd.grad(
        written_out(q, k, v, bias.masked_fill(hidden, -math.inf)).sum(), (q, k, v, bias)
    )
    for g, w in zip(grads, want, strict=True):
        assert g.dtype == torch.float32
        torch.testing.assert_close(g.double(), w, atol=1e-5, rtol=1e-4)


def test_the_kernel_is_refused_where_it_does_not_apply():
    q = torch.zeros(1, 1, 4, 2)
    assert fused_bias_available(q, 0.0)
    assert not fused_bias_available(q, 0.1)  # it has no dropout
    assert not fused_bias_available(q.to(torch.int32), 0.0)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not fused_bias_available(q, 0.0)


@pytest.mark.parametrize(("start", "stop"), [(0, LENGTH), (0, 1), (3, 7), (LENGTH - 1, LENGTH)])
def test_toeplitz_rows_and_their_gradient_equal_an_index_gather(start, stop):
    """Row ``i`` holds ``per_offset[h, i - j + L - 1]``; the gradient of the table is the
    gather's (a scatter-add over the same index)."""
    generator = torch.Generator().manual_seed(4)
    per_offset = torch.randn(HEADS, 2 * LENGTH - 1, generator=generator, dtype=torch.float64)
    per_offset.requires_grad_()
    i = torch.arange(start, stop)[:, None]
    j = torch.arange(LENGTH)[None, :]
    want = per_offset[:, i - j + LENGTH - 1][None]
    got = OffsetLookup(per_offset).rows(start, stop)
    assert torch.equal(got, want)
    weight = torch.randn(want.shape, generator=generator, dtype=torch.float64)
    (got_grad,) = torch.autograd.grad((got * weight).sum(), per_offset)
    (want_grad,) = torch.autograd.grad((want * weight).sum(), per_offset)
    torch.testing.assert_close(got_grad, want_grad, atol=1e-12, rtol=1e-12)


def test_the_full_rows_are_built_once_per_lookup():
    lookup = OffsetLookup(torch.randn(HEADS, 2 * LENGTH - 1))
    assert lookup.full() is lookup.full()
    assert lookup.full().shape == (1, HEADS, LENGTH, LENGTH)


def test_a_fixed_mask_rebuilt_in_backward_gives_the_same_gradients():
    """A mask that needs no gradient is built once in forward and once in backward (never
    kept), and the gradients are the written-out softmax's."""
    (q, k, v), bias, hidden = inputs(MASK_SHAPES["per example and head"], seed=5)
    mask = bias.detach().masked_fill(hidden, -math.inf)
    built = []

    def rebuild():
        built.append(1)
        return mask.clone()

    out = fused_attention_rebuilding_mask(q, k, v, rebuild, SCALE)
    got = torch.autograd.grad(out.sum(), (q, k, v))
    want_out = written_out(q, k, v, mask)
    want = torch.autograd.grad(want_out.sum(), (q, k, v))
    assert len(built) == 2
    torch.testing.assert_close(out, want_out, atol=1e-12, rtol=1e-12)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, atol=1e-12, rtol=1e-12)


@pytest.mark.parametrize("named", [1, 2])
def test_a_mask_rebuilt_in_backward_sends_its_gradient_to_what_it_reads(named):
    """``fused_attention_rebuilding_mask``: a mask computed from a tensor that needs a
    gradient (named once, or twice by mistake) gives that tensor SDPA's gradient once, and
    q, k, v theirs."""
    generator = torch.Generator().manual_seed(4)
    q, k, v = (
        torch.randn(2, 2, 9, 4, dtype=torch.float64, generator=generator).requires_grad_()
        for _ in range(3)
    )
    table = torch.randn(2, 9, 9, dtype=torch.float64, generator=generator).requires_grad_()
    inputs = [q, k, v, table]
    got = cpu_fused_bias.fused_attention_rebuilding_mask(
        q, k, v, lambda: (table * 2)[None], 0.5, (table,) * named
    )
    want = F.scaled_dot_product_attention(q, k, v, attn_mask=(table * 2)[None], scale=0.5)
    weight = torch.randn(got.shape, dtype=torch.float64, generator=generator)
    got_grads = torch.autograd.grad((got * weight).sum(), inputs)
    want_grads = torch.autograd.grad((want * weight).sum(), inputs)
    torch.testing.assert_close(got, want)
    for g, w in zip(got_grads, want_grads, strict=True):
        torch.testing.assert_close(g, w)
