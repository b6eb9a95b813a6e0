"""Windowed softmax attention (a layer plan's ``window``) against a dense masked float64
oracle, for every registered position scheme (a new scheme is tested with windows the
moment it is registered), with padding and packed documents: the banded computation
(blocks of queries, CPU and any device), dense SDPA with the band in its mask, and
FlexAttention (forward on CPU; with a block mask on CUDA, skipped without one). Gradients of
the banded computation equal the oracle's."""

from __future__ import annotations

import math
from functools import partial

import pytest
import torch
from model_factory import small_model

from roformer_lit import POSITION_SCHEMES
from roformer_lit.attention.flex import flex_softmax
from roformer_lit.attention.softmax import SoftmaxAttention
from roformer_lit.positions.base import QKVWeights, default_scale
from roformer_lit.score_bias import dense_from_lookup

BATCH, LENGTH = 2, 11


@pytest.fixture(autouse=True)
def double_precision():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def kernel_inputs(position: str, device: str = "cpu"):
    """Random q, k, v and the scheme's score bias and rotation for layer 0 of a model."""
    model = small_model(position).double().to(device)
    scheme, attention = model.encoder.position, model.encoder.layers[0].attention
    heads, d = attention.num_heads, attention.head_size
    generator = torch.Generator().manual_seed(7)
    q, k, v = (
        torch.randn(BATCH, heads, LENGTH, d, generator=generator).to(device) for _ in range(3)
    )
    ctx = scheme.prepare(LENGTH, torch.device(device), torch.float64)
    hooks = scheme.layer(0)
    weights = QKVWeights(attention.qkv.weight, attention.qkv.bias, heads)
    score = hooks.score(q, k, ctx, weights)
    rotate = partial(hooks.rotate, ctx=ctx) if hooks.rotates else None
    return q, k, v, score, rotate, d


def oracle(q, k, v, score, rotate, d, half, pad, segments):
    """``softmax(q k^T scale + bias, -inf outside the band, padding and segments) v``."""
    if rotate is not None:
        q, k = rotate(q), rotate(k)
    scale = default_scale(d) if score is None else score.scale
    scores = q @ k.transpose(-1, -2) * scale
    if score is not None and score.adds_bias:
        dense = score.bias
        if dense is None:
            dense = dense_from_lookup(score.lookup, BATCH, q.shape[1], LENGTH, q.device)
        scores = scores + dense
    allowed = torch.ones(BATCH, 1, LENGTH, LENGTH, dtype=torch.bool, device=q.device)
    for i in range(LENGTH):
        for j in range(LENGTH):
            if abs(i - j) > half:
                allowed[:, :, i, j] = False
    if pad is not None:
        allowed = allowed & pad[:, None, None, :]
    if segments is not None:
        allowed = allowed & (segments[:, None, :, None] == segments[:, None, None, :])
    for i in range(LENGTH):  # in a band a query always sees itself, padded or not
        allowed[:, :, i, i] = True
    weights = scores.masked_fill(~allowed, -math.inf).softmax(-1)
    return weights @ v


CASES = {
    "plain": (None, None),
    "padding": (torch.tensor([[True] * LENGTH, [True] * 7 + [False] * 4]), None),
    "documents": (None, torch.tensor([[0] * 4 + [1] * 7, [0] * 9 + [1] * 2])),
}


@pytest.mark.parametrize("position", list(POSITION_SCHEMES))
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("window", [1, 4, 7])
@pytest.mark.parametrize("path", ["banded", "dense", "flex"])
def test_windowed_kernel_equals_the_dense_masked_oracle(position, case, window, path):
    pad, segments = CASES[case]
    q, k, v, score, rotate, d = kernel_inputs(position)
    scale = default_scale(d) if score is None else score.scale
    with torch.no_grad():
        if path == "flex":  # the score_mod a windowed layer runs on CUDA (forward here)
            if score is not None and score.adds_bias and score.lookup is None:
                pytest.skip(f"{position}'s bias is dense only: windows take the banded path")
            if rotate is not None:
                q, k = rotate(q), rotate(k)
            got = flex_softmax(
                q,
                k,
                v,
                scale=scale,
                lookup=None if score is None else score.lookup,
                key_padding_mask=pad,
                segment_ids=segments,
                half_window=window // 2,
            )
            rotate = None
        else:
            kernel = SoftmaxAttention(backend="sdpa", window_block=3 if path == "banded" else 99)
            got = kernel(
                q,
                k,
                v,
                scale=scale,
                bias=score,
                key_padding_mask=pad,
                rotate=rotate,
                segment_ids=segments,
                window=window,
            )
    want = oracle(q, k, v, score, rotate, d, window // 2, pad, segments)
    # every row, padded ones too: all three paths compute one function
    torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("position", list(POSITION_SCHEMES))
def test_banded_gradients_equal_the_oracles(position):
    pad, _ = CASES["padding"]
    q, k, v, score, rotate, d = kernel_inputs(position)
    inputs = [t.clone().requires_grad_() for t in (q, k, v)]
    kernel = SoftmaxAttention(backend="sdpa", window_block=3)
    scale = default_scale(d) if score is None else score.scale
    got = kernel(*inputs, scale=scale, bias=score, key_padding_mask=pad, rotate=rotate, window=5)
    weight = torch.randn(got.shape, generator=torch.Generator().manual_seed(3))
    real = pad[:, None, :, None]
    grads = torch.autograd.grad((got * weight * real).sum(), inputs, retain_graph=True)
    again = [t.clone().requires_grad_() for t in (q, k, v)]
    want = oracle(*again, score, rotate, d, 2, pad, None)
    want_grads = torch.autograd.grad((want * weight * real).sum(), again)
    for g, w in zip(grads, want_grads, strict=True):
        torch.testing.assert_close(g, w, atol=1e-10, rtol=1e-10)


def test_a_window_wider_than_the_rows_is_the_global_kernel_bit_for_bit():
    q, k, v, score, rotate, d = kernel_inputs("t5")
    kernel = SoftmaxAttention(window_block=2)
    args = dict(scale=score.scale, bias=score, rotate=rotate)
    with torch.no_grad():
        assert torch.equal(kernel(q, k, v, window=2 * LENGTH, **args), kernel(q, k, v, **args))


DEVICES_AND_BACKENDS = [
    pytest.param("cpu", "sdpa", id="cpu-sdpa"),
    pytest.param("cpu", "auto", id="cpu-auto"),
    pytest.param(
        "cuda",
        "auto",  # FlexAttention's block mask, or the band for a dense-only bias
        id="cuda",
        marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
    ),
]


@pytest.mark.parametrize(("device", "backend"), DEVICES_AND_BACKENDS)
@pytest.mark.parametrize("position", list(POSITION_SCHEMES))
@pytest.mark.parametrize("case", list(CASES))
def test_float32_windows_of_a_float64_scheme_equal_the_oracle(device, backend, position, case):
    """Float32 queries with a scheme whose tables are float64 (XL's and FIRE's dense bias
    stays float64): every path casts what it hands its kernel (on a GPU, SDPA refuses a
    float64 mask beside float32 queries: found on an H200, 2026-11-27)."""
    pad, segments = CASES[case]
    q, k, v, score, rotate, d = kernel_inputs(position, device)
    pad = None if pad is None else pad.to(device)
    segments = None if segments is None else segments.to(device)
    with torch.no_grad():  # rotated in float64 (the scheme's tables are), then float32
        q32, k32 = (t.float() for t in ((q, k) if rotate is None else (rotate(q), rotate(k))))
        got = SoftmaxAttention(backend=backend)(
            q32,
            k32,
            v.float(),
            scale=default_scale(d) if score is None else score.scale,
            bias=score,
            key_padding_mask=pad,
            segment_ids=segments,
            window=5,
        )
    want = oracle(q, k, v, score, rotate, d, 2, pad, segments)
    real = torch.ones(BATCH, LENGTH, dtype=torch.bool, device=device) if pad is None else pad
    torch.testing.assert_close(
        got.double().transpose(1, 2)[real], want.transpose(1, 2)[real], atol=2e-5, rtol=2e-5
    )
