"""Attention with a bias of ``(h, i - j)`` read through a Hankel view of its ``[h, 2L - 1]``
table on the fused CPU kernel, against a float64 oracle that builds the dense bias entry by
entry: values and gradients (queries, keys, values, the table), one and several chunks of
the bias gradient (a partial last one), batch one and more; through whole models of every
scheme whose bias is such a table, against the dense path; and the kernel's choice of it."""

from __future__ import annotations

import pytest
import torch
from model_factory import (
    assert_same_logits_and_gradients,
    count_calls,
    on_both_cpu_paths,
    small_model,
)

from roformer_lit import POSITION_SCHEMES
from roformer_lit.attention import cpu_offset_bias, documents, softmax
from roformer_lit.attention.cpu_offset_bias import hankel_mask, offset_bias_attention
from roformer_lit.attention.softmax import SoftmaxAttention
from roformer_lit.positions.base import QKVWeights
from roformer_lit.score_bias import OffsetLookup, ScoreBias

BIAS_SCHEMES = [name for name, scheme in POSITION_SCHEMES.items() if scheme.needs_score_bias]


def dense_oracle(q, k, v, per_offset, scale, real_keys=None):
    """``softmax(q k^T scale + B) v`` with ``B[h, i, j] = per_offset[h, i - j + L - 1]``
    written entry by entry, in float64; with ``real_keys`` (``[B]``), ``-inf`` at row
    ``b``'s keys from ``real_keys[b]`` on (a padding mask)."""
    heads, length = q.shape[1], q.shape[2]
    bias = torch.empty(heads, length, length, dtype=per_offset.dtype)
    for i in range(length):
        for j in range(length):
            bias[:, i, j] = per_offset[:, i - j + length - 1]
    scores = q @ k.transpose(-1, -2) * scale + bias
    if real_keys is not None:
        for row, real in enumerate(real_keys):
            scores[row, :, :, real:] = -torch.inf
    return scores.softmax(-1) @ v


def test_the_hankel_view_reads_the_bias_of_reversed_queries():
    table = torch.randn(3, 2 * 7 - 1, dtype=torch.float64)
    flipped = table.flip(-1).contiguous()
    view = hankel_mask(flipped, 7)
    assert view.untyped_storage().nbytes() == flipped.untyped_storage().nbytes()
    for r in range(7):
        for j in range(7):
            i = 7 - 1 - r  # reversed row r is query L - 1 - r
            assert torch.equal(view[0, :, r, j], table[:, i - j + 7 - 1])


def assert_equal_to_the_oracle(
    attend, batch, heads, length, learned, real_keys=None, table_scale=3.0
):
    """``attend(q, k, v, table)`` against :func:`dense_oracle` in float64 on random inputs:
    values, and gradients of a random weighting of the output (the table's if ``learned``);
    ``table_scale`` 0: no bias."""
    generator = torch.Generator().manual_seed(length + sum(real_keys or []))
    q, k, v = (
        torch.randn(
            batch, heads, length, 5, dtype=torch.float64, generator=generator
        ).requires_grad_()
        for _ in range(3)
    )
    table = torch.randn(heads, 2 * length - 1, dtype=torch.float64, generator=generator)
    table = (table_scale * table).requires_grad_(learned)
    weight = torch.randn(batch, heads, length, 5, dtype=torch.float64, generator=generator)
    inputs = (q, k, v, table) if learned else (q, k, v)
    got = attend(q, k, v, table)
    got_grads = torch.autograd.grad((got * weight).sum(), inputs)
    want = dense_oracle(q, k, v, table, 0.3, real_keys)
    want_grads = torch.autograd.grad((want * weight).sum(), inputs)
    torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)
    for g, w in zip(got_grads, want_grads, strict=True):
        torch.testing.assert_close(g, w, atol=1e-11, rtol=1e-11)


@pytest.mark.parametrize(
    ("batch", "heads", "length", "rows_times_keys"),
    [(1, 2, 9, 1 << 20), (1, 3, 13, 4 * 13), (3, 2, 11, 3 * 11 * 4), (2, 1, 1, 1)],
    ids=["one chunk", "chunks of 4, batch 1", "chunks of 4, batch 3", "one token"],
)
@pytest.mark.parametrize("learned", [True, False], ids=["learned", "fixed"])
def test_values_and_gradients_equal_the_float64_oracle(
    batch, heads, length, rows_times_keys, learned, monkeypatch
):
    monkeypatch.setattr(cpu_offset_bias, "ROWS_TIMES_KEYS", rows_times_keys)
    assert_equal_to_the_oracle(
        lambda q, k, v, table: offset_bias_attention(q, k, v, table, 0.3),
        batch,
        heads,
        length,
        learned,
    )


@pytest.mark.parametrize(
    ("real_keys", "length", "rows_times_keys"),
    [([4], 9, 1 << 20), ([1], 6, 1 << 20), ([9, 3], 9, 2 * 3 * 2), ([5, 5, 2], 7, 3 * 5 * 3)],
    ids=["one chunk", "one real key", "chunks, a full row beside", "chunks, batch 3"],
)
def test_keys_that_are_the_rows_first_equal_the_padded_float64_oracle(
    real_keys, length, rows_times_keys, monkeypatch
):
    """Keys cut to the row's first ``n``: the function of a padding mask that is ``-inf``
    from key ``n`` on, padded queries included; values and gradients, the table's too (the
    cut keys get none)."""
    from roformer_lit.attention.padded_rows import attend_padded_rows

    monkeypatch.setattr(cpu_offset_bias, "ROWS_TIMES_KEYS", rows_times_keys)
    assert_equal_to_the_oracle(
        lambda q, k, v, table: attend_padded_rows(q, k, v, table, 0.3, real_keys),
        len(real_keys),
        2,
        length,
        True,
        real_keys,
    )


@pytest.mark.parametrize("real_keys", [[4], [9, 3]])
def test_padded_rows_without_a_bias_equal_the_padded_float64_oracle(real_keys):
    from roformer_lit.attention.padded_rows import attend_padded_rows

    assert_equal_to_the_oracle(
        lambda q, k, v, table: attend_padded_rows(q, k, v, None, 0.3, real_keys),
        len(real_keys),
        2,
        9,
        False,
        real_keys,
        table_scale=0.0,
    )


@pytest.mark.parametrize(
    ("mask", "lengths"),
    [
        ([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]], [3, 5]),
        ([[1, 0, 0, 0, 0]], [1]),
        ([[1, 1, 0, 1, 0]], None),  # a padded key before a real one
        ([[0, 1, 1, 1, 1]], None),  # padded at the start
        ([[1, 1, 1, 1, 1], [0, 0, 0, 0, 0]], None),  # a row with no real key
    ],
)
def test_real_prefix_lengths_only_for_rows_padded_at_their_end(mask, lengths):
    from roformer_lit.attention.padded_rows import real_prefix_lengths

    assert real_prefix_lengths(torch.tensor(mask, dtype=torch.bool)) == lengths


def test_float32_matches_the_float64_oracle_at_a_long_alibi_like_row():
    """Far distances drive most probabilities below float32's smallest normal number."""
    length, heads = 300, 2
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, heads, length, 8, generator=generator) for _ in range(3))
    offsets = torch.arange(-(length - 1), length).abs().float()
    table = -torch.tensor([[0.5], [0.0625]]) * offsets
    got = offset_bias_attention(q, k, v, table, 0.35)
    want = dense_oracle(q.double(), k.double(), v.double(), table.double(), 0.35)
    torch.testing.assert_close(got.double(), want, atol=1e-5, rtol=1e-5)


def _offset_scheme(position: str) -> bool:
    """Whether layer 0 of the scheme's small model gives an :class:`OffsetLookup`."""
    model = small_model(position)
    ctx = model.encoder.position.prepare(5, torch.device("cpu"), torch.float32, None)
    attention = model.encoder.layers[0].attention
    weights = QKVWeights(attention.qkv.weight, attention.qkv.bias, attention.num_heads)
    q = torch.zeros(1, attention.num_heads, 5, attention.head_size)
    score = model.encoder.position.layer(0).score(q, q, ctx, weights)
    return score is not None and isinstance(score.lookup, OffsetLookup)


OFFSET_SCHEMES = [name for name in BIAS_SCHEMES if _offset_scheme(name)]


def test_the_per_offset_schemes_are_the_expected_ones():
    """The schemes whose bias is a table of ``(h, i - j)`` take this path (so the model
    test below covers them); a scheme of ``max(i, j)`` (FIRE) or of the content cannot."""
    assert {"alibi", "t5", "kerple"} <= set(OFFSET_SCHEMES)
    assert not {"fire", "xl", "deberta"} & set(OFFSET_SCHEMES)


@pytest.mark.parametrize("position", OFFSET_SCHEMES)
@pytest.mark.parametrize("mask", ["none", "every key real", "rows padded at their end"])
def test_a_model_on_the_offset_path_equals_the_dense_path(position, mask, monkeypatch):
    """The whole encoder in float64 with the offset path taken from 2 tokens gives the
    logits (padded tokens' too) and every parameter gradient of the dense SDPA path."""
    from roformer_lit.attention import padded_rows

    ids = torch.randint(1, 97, (2, 12), generator=torch.Generator().manual_seed(1))
    attention_mask = None if mask == "none" else torch.ones(2, 12, dtype=torch.long)
    if mask == "rows padded at their end":
        attention_mask[0, 7:] = 0
    calls = count_calls(
        monkeypatch,
        [softmax, padded_rows],
        "offset_bias_attention",
        cpu_offset_bias.offset_bias_attention,
    )
    monkeypatch.setattr(cpu_offset_bias, "ROWS_TIMES_KEYS", 5 * 2 * 12)
    dense, offset = on_both_cpu_paths(monkeypatch, position, ids, attention_mask=attention_mask)
    assert calls  # the second model took the offset path
    assert_same_logits_and_gradients(offset, dense)


NO_BIAS_SCHEMES = [name for name, scheme in POSITION_SCHEMES.items() if not scheme.needs_score_bias]


@pytest.mark.parametrize("position", NO_BIAS_SCHEMES)
def test_a_model_without_a_bias_attends_padded_rows_against_their_real_keys(position, monkeypatch):
    """Rows padded at their end, with no score bias, on the fused CPU path: each row one
    SDPA call over its real keys, and the whole encoder in float64 gives the logits (padded
    tokens' too) and every parameter gradient of the masked SDPA path."""
    from roformer_lit.attention import padded_rows

    ids = torch.randint(1, 97, (2, 12), generator=torch.Generator().manual_seed(1))
    attention_mask = torch.ones(2, 12, dtype=torch.long)
    attention_mask[1, 5:] = 0
    calls = count_calls(
        monkeypatch, [softmax], "attend_padded_rows", padded_rows.attend_padded_rows
    )
    dense, padded = on_both_cpu_paths(monkeypatch, position, ids, attention_mask=attention_mask)
    assert calls  # the second model took the padded-rows path
    assert_same_logits_and_gradients(padded, dense)


@pytest.mark.parametrize(
    ("case", "taken"),
    [
        ("no mask", True),
        ("every key real", True),
        ("a row padded at its end", True),
        ("a padded key before a real one", False),
        ("a row with no real key", False),
        ("padding and documents", False),
        ("documents", True),
        ("a document in two runs", False),
        ("backend sdpa", False),
        ("dropout", False),
        ("short row", False),
    ],
)
def test_the_kernel_takes_the_offset_path_only_where_it_computes_the_same_function(
    case, taken, monkeypatch
):
    """With documents, each one run of its row, one view per document
    (:mod:`roformer_lit.attention.documents`)."""
    from roformer_lit.attention import padded_rows

    calls = count_calls(
        monkeypatch,
        [softmax, documents, padded_rows],
        "offset_bias_attention",
        cpu_offset_bias.offset_bias_attention,
    )
    monkeypatch.setattr(documents, "MIN_MEAN_DOCUMENT", 1)  # short rows: any document
    length = 8  # the fused path from 8 tokens on; the short row starts it at 16
    monkeypatch.setattr(softmax, "FUSED_FROM_LENGTH", 16 if case == "short row" else length)
    q = k = v = torch.randn(2, 2, length, 4)
    lookup = OffsetLookup(torch.randn(2, 2 * length - 1))
    bias = ScoreBias(scale=0.5, build=lookup.full, lookup=lookup)
    pad = {
        "every key real": torch.ones(2, length, dtype=torch.bool),
        "a row padded at its end": torch.arange(length).expand(2, length)
        < torch.tensor([[8], [5]]),
        "a padded key before a real one": torch.arange(length).expand(2, length) != 2,
        "a row with no real key": torch.tensor([[True] * length, [False] * length]),
        "padding and documents": torch.arange(length).expand(2, length) < 7,
    }.get(case)
    kernel = SoftmaxAttention(backend="sdpa" if case == "backend sdpa" else "auto")
    segments = {
        "documents": torch.tensor([[0] * 4 + [1] * 4] * 2),
        "padding and documents": torch.tensor([[0] * 4 + [1] * 4] * 2),
        "a document in two runs": torch.tensor([[0] * 3 + [1] * 2 + [0] * 3] * 2),
    }.get(case)
    kernel(
        q,
        k,
        v,
        scale=0.5,
        bias=bias,
        key_padding_mask=pad,
        segment_ids=segments,
        dropout_p=0.5 if case == "dropout" else 0.0,
    )
    assert bool(calls) == taken


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_stays_near_the_float64_oracle(dtype):
    """A model cast to bf16 or fp16 on a CPU takes the path too; the table's gradient (a
    sum of up to L entries per offset) is accumulated in float32."""
    length, heads = 160, 2
    generator = torch.Generator().manual_seed(5)
    exact = [torch.randn(1, heads, length, 8, generator=generator, dtype=torch.float64)]
    exact = [exact[0], *(torch.randn_like(exact[0]) for _ in range(2))]
    exact.append(torch.randn(heads, 2 * length - 1, generator=generator, dtype=torch.float64))
    low = [t.to(dtype).requires_grad_() for t in exact]
    exact = [t.requires_grad_() for t in exact]
    got = offset_bias_attention(*low, 0.3)
    got_grads = torch.autograd.grad(got.float().sum(), low)
    want = dense_oracle(*exact, 0.3)
    want_grads = torch.autograd.grad(want.sum(), exact)
    torch.testing.assert_close(got.double(), want, atol=1e-2, rtol=1e-2)
    for g, w in zip(got_grads, want_grads, strict=True):
        assert g.dtype == dtype
        assert (g.double() - w).abs().max() <= 3e-2 * w.abs().max()
