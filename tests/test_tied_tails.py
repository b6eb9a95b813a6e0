"""Tied tails of a per-offset table (T5: every offset from about ``max_distance`` on reads
the last bucket of its direction): the table's gradient from the band ``|i - j| < m`` and
one causal call for the tail, against a float64 oracle that writes the bias entry by entry
and differentiates the parameters the table reads; where the tails start
(``tied_tail_start``) against a search over every ``m``; whole T5 models on the path
against the dense path."""

from __future__ import annotations

import pytest
import torch
from model_factory import assert_same_logits_and_gradients, count_calls, on_both_cpu_paths
from test_cpu_offset_bias import dense_oracle

from roformer_lit.attention import cpu_offset_bias, documents, padded_rows, softmax
from roformer_lit.attention.cpu_offset_bias import offset_bias_attention
from roformer_lit.attention.padded_rows import attend_padded_rows
from roformer_lit.positions.t5 import offset_buckets
from roformer_lit.score_bias import OffsetLookup, tied_tail_start


def tail_start_by_search(ids: torch.Tensor) -> int | None:
    """The smallest ``m`` in ``1 .. L - 1`` whose tails ``o >= m`` and ``o <= -m`` each
    hold one id (column ``o + L - 1``), by trying every ``m``."""
    length = (ids.shape[0] + 1) // 2
    for m in range(1, length):
        after, before = ids[length - 1 + m :], ids[: length - m]
        if len(set(after.tolist())) == 1 and len(set(before.tolist())) == 1:
            return m
    return None


@pytest.mark.parametrize(
    ("num_buckets", "max_distance", "length"),
    [(32, 128, 1024), (32, 128, 100), (8, 16, 12), (8, 16, 40), (4, 3, 9), (32, 2048, 1024)],
)
def test_t5_tails_start_where_a_search_over_every_m_finds_them(num_buckets, max_distance, length):
    ids = offset_buckets(length, num_buckets, max_distance, torch.device("cpu")).flip(0)
    assert tied_tail_start(ids) == tail_start_by_search(ids)


def test_tail_starts_of_random_ids_match_the_search():
    generator = torch.Generator().manual_seed(3)
    for _ in range(200):
        length = int(torch.randint(1, 12, (1,), generator=generator))
        ids = torch.randint(0, 3, (2 * length - 1,), generator=generator)
        assert tied_tail_start(ids) == tail_start_by_search(ids), ids.tolist()


def test_a_lookup_without_ids_has_no_tied_tails():
    assert OffsetLookup(torch.zeros(2, 9)).tied_from is None
    ids = torch.tensor([5, 5, 5, 1, 0, 2, 7, 7, 7])
    assert OffsetLookup(torch.zeros(2, 9), ids).tied_from == 2
    assert OffsetLookup(torch.zeros(2, 9), ids).cast(torch.float64).tied_from == 2


def tied_parameters(heads: int, length: int, m: int, generator: torch.Generator):
    """A ``[h, 2m + 1]`` parameter and the ``[2L - 1]`` column of it each offset reads:
    offsets ``|o| < m`` one each, ``o >= m`` one, ``o <= -m`` one."""
    values = torch.randn(heads, 2 * m + 1, dtype=torch.float64, generator=generator)
    offsets = torch.arange(-(length - 1), length)
    ids = offsets.clamp(-m, m) + m
    return (3.0 * values).requires_grad_(), ids


@pytest.mark.parametrize(
    ("batch", "heads", "length", "m", "real_keys", "rows_times_keys"),
    [
        (1, 2, 16, 4, None, 1 << 20),
        (2, 3, 21, 3, None, 2 * 21 * 4),
        (1, 2, 33, 2, None, 33 * 5),
        (2, 2, 20, 2, [20, 9], 2 * 20 * 3),
        (3, 1, 17, 3, [12, 17, 14], 3 * 17 * 2),
        (1, 2, 24, 6, [24], 1 << 20),
    ],
    ids=[
        "one chunk",
        "chunks, batch 2",
        "chunks of 5, long tails",
        "padded rows",
        "padded rows, batch 3",
        "the band at its widest",
    ],
)
def test_tied_tails_equal_the_float64_oracle(
    batch, heads, length, m, real_keys, rows_times_keys, monkeypatch
):
    """Values and gradients of the queries, keys, values and of the parameters the table
    reads, with the tails' path taken (counted)."""
    monkeypatch.setattr(cpu_offset_bias, "ROWS_TIMES_KEYS", rows_times_keys)
    calls = count_calls(
        monkeypatch, [cpu_offset_bias], "_add_tail_totals", cpu_offset_bias._add_tail_totals
    )
    generator = torch.Generator().manual_seed(length + m)
    q, k, v = (
        torch.randn(
            batch, heads, length, 5, dtype=torch.float64, generator=generator
        ).requires_grad_()
        for _ in range(3)
    )
    values, ids = tied_parameters(heads, length, m, generator)
    weight = torch.randn(batch, heads, length, 5, dtype=torch.float64, generator=generator)
    inputs = (q, k, v, values)
    if real_keys is None:
        got = offset_bias_attention(q, k, v, values[:, ids], 0.3, tied_from=m)
    else:
        got = attend_padded_rows(q, k, v, values[:, ids], 0.3, real_keys, tied_from=m)
    got_grads = torch.autograd.grad((got * weight).sum(), inputs)
    want = dense_oracle(q, k, v, values[:, ids], 0.3, real_keys)
    want_grads = torch.autograd.grad((want * weight).sum(), inputs)
    assert len(calls) == (1 if real_keys is None else batch)
    torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)
    for g, w in zip(got_grads, want_grads, strict=True):
        torch.testing.assert_close(g, w, atol=1e-10, rtol=1e-10)


def test_tails_too_wide_for_the_keys_take_every_diagonal(monkeypatch):
    """``4 m > n``: the band would be the whole row, so the table's gradient is summed on
    every diagonal (the tails' path is not taken), still the oracle's."""
    calls = count_calls(
        monkeypatch, [cpu_offset_bias], "_add_tail_totals", cpu_offset_bias._add_tail_totals
    )
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, 10, 4, dtype=torch.float64, generator=generator) for _ in "qkv")
    values, ids = tied_parameters(2, 10, 3, generator)
    got = offset_bias_attention(q, k, v, values[:, ids], 0.3, tied_from=3)
    (got_grad,) = torch.autograd.grad(got.sum(), values)
    (want_grad,) = torch.autograd.grad(dense_oracle(q, k, v, values[:, ids], 0.3).sum(), values)
    assert not calls
    torch.testing.assert_close(got_grad, want_grad, atol=1e-11, rtol=1e-11)


def gathered_oracle(q, k, v, per_offset, scale):
    """:func:`dense_oracle`'s function with the bias gathered by an ``[L, L]`` index of
    ``i - j + L - 1`` (float64; for rows too long to write entry by entry)."""
    length = q.shape[-2]
    positions = torch.arange(length)
    bias = per_offset[:, positions[:, None] - positions[None, :] + length - 1]
    return (q @ k.transpose(-1, -2) * scale + bias).softmax(-1) @ v


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_tied_tails_in_low_precision_stay_near_the_float64_oracle(dtype):
    """The tail's total is minus the rest of a sum that is zero in exact arithmetic: in a
    low precision it must still be near the oracle's (accumulated in float32)."""
    length, heads, m = 256, 2, 16
    generator = torch.Generator().manual_seed(7)
    exact = [
        torch.randn(2, heads, length, 8, generator=generator, dtype=torch.float64) for _ in range(3)
    ]
    values, ids = tied_parameters(heads, length, m, generator)
    low = [t.to(dtype).requires_grad_() for t in exact]
    low_values = values.detach().to(dtype).requires_grad_()
    got = offset_bias_attention(*low, low_values[:, ids], 0.3, tied_from=m)
    (got_grad,) = torch.autograd.grad(got.float().sum(), low_values)
    want = gathered_oracle(*exact, values[:, ids], 0.3)
    (want_grad,) = torch.autograd.grad(want.sum(), values)
    tolerance = 3e-2 if dtype == torch.bfloat16 else 1e-5
    assert (got_grad.double() - want_grad).abs().max() <= tolerance * want_grad.abs().max()


@pytest.mark.parametrize("mask", ["none", "rows padded at their end", "documents"])
def test_a_t5_model_on_the_tails_path_equals_the_dense_path(mask, monkeypatch):
    """The whole T5 encoder (test buckets: 8, max distance 16, tails from offset 6) in
    float64 with the tails' path taken from 2 tokens (``TAIL_BAND_FRACTION`` 1) gives the
    logits and every parameter gradient, the bucket table's included, of the dense path."""
    monkeypatch.setattr(cpu_offset_bias, "TAIL_BAND_FRACTION", 1)
    monkeypatch.setattr(documents, "MIN_MEAN_DOCUMENT", 1)
    calls = count_calls(
        monkeypatch, [cpu_offset_bias], "_add_tail_totals", cpu_offset_bias._add_tail_totals
    )
    length = 16
    ids = torch.randint(1, 97, (2, length), generator=torch.Generator().manual_seed(1))
    inputs: dict[str, torch.Tensor | None] = {}
    if mask == "rows padded at their end":
        inputs["attention_mask"] = torch.ones(2, length, dtype=torch.long)
        inputs["attention_mask"][0, 11:] = 0
    if mask == "documents":
        inputs["segment_ids"] = torch.tensor([[0] * length, [0] * 3 + [1] * (length - 3)])
    dense, tails = on_both_cpu_paths(monkeypatch, "t5", ids, **inputs)
    assert calls  # the second model took the tails' path
    assert_same_logits_and_gradients(tails, dense)


def test_the_kernel_hands_the_tails_of_a_t5_lookup_to_every_offset_path(monkeypatch):
    """Whole rows, rows padded at their end and documents each pass the lookup's
    ``tied_from`` to the per-offset kernel."""
    seen: list[int | None] = []

    def spy(q, k, v, per_offset, scale, tied_from=None):
        seen.append(tied_from)
        return cpu_offset_bias.offset_bias_attention(q, k, v, per_offset, scale, tied_from)

    for module in (softmax, padded_rows, documents):
        monkeypatch.setattr(module, "offset_bias_attention", spy)
    monkeypatch.setattr(softmax, "FUSED_FROM_LENGTH", 8)
    monkeypatch.setattr(documents, "MIN_MEAN_DOCUMENT", 1)
    length = 8
    q = torch.randn(2, 2, length, 4)
    ids = torch.arange(-(length - 1), length).clamp(-2, 2)
    lookup = OffsetLookup(torch.randn(2, 2 * length - 1), ids)
    from roformer_lit.score_bias import ScoreBias

    bias = ScoreBias(scale=0.5, build=lookup.full, lookup=lookup)
    kernel = softmax.SoftmaxAttention()
    padding = torch.arange(length).expand(2, length) < torch.tensor([[8], [5]])
    segments = torch.tensor([[0] * 4 + [1] * 4] * 2)
    for extra in ({}, {"key_padding_mask": padding}, {"segment_ids": segments}):
        seen.clear()
        kernel(q, q, q, scale=0.5, bias=bias, **extra)
        assert seen and set(seen) == {2}, extra
