"""Packed documents attended one at a time on the fused CPU path: the runs of each row
against the ids they come from, the block-diagonal attention (no bias, and a bias of
``(h, i - j)`` read per document) against a float64 masked softmax, gradients included;
whole models of every registered scheme against the masked dense path; and where the kernel
takes it."""

from __future__ import annotations

import math

import pytest
import torch
from model_factory import (
    assert_same_logits_and_gradients,
    count_calls,
    on_both_cpu_paths,
)

from roformer_lit import POSITION_SCHEMES
from roformer_lit.attention import documents, softmax
from roformer_lit.attention.documents import attend_documents, document_runs
from roformer_lit.attention.softmax import SoftmaxAttention
from roformer_lit.score_bias import run_pieces


@pytest.fixture(autouse=True)
def any_document_length(monkeypatch):
    """Documents of any mean length take the path (the rows here are short)."""
    monkeypatch.setattr(documents, "MIN_MEAN_DOCUMENT", 1)


@pytest.mark.parametrize(("minimum", "taken"), [(5, True), (6, False)])
def test_documents_shorter_than_the_minimum_on_average_keep_the_mask(minimum, taken, monkeypatch):
    """Two rows of 10 tokens in 4 documents: 5 tokens each on average."""
    monkeypatch.setattr(documents, "MIN_MEAN_DOCUMENT", minimum)
    segments = torch.tensor([[0] * 4 + [1] * 6, [2] * 3 + [0] * 7])
    assert (document_runs(segments) is not None) == taken


def test_runs_cover_each_row_in_order_and_carry_one_id_each():
    """Random rows of contiguous documents (sizes 1 and up, ids in any order): the runs
    tile the row, each holds one id, and neighbouring runs differ."""
    generator = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(6):
        sizes = torch.randint(1, 6, (8,), generator=generator).tolist()
        ids = torch.randperm(20, generator=generator)[: len(sizes)].tolist()
        rows.append(sum(([i] * n for i, n in zip(ids, sizes, strict=True)), [])[:24])
    rows = [row + [row[-1]] * (24 - len(row)) for row in rows]
    segment_ids = torch.tensor(rows)
    runs = document_runs(segment_ids)
    assert runs is not None
    for row, row_runs in zip(rows, runs, strict=True):
        assert row_runs[0][0] == 0 and row_runs[-1][1] == len(row)
        for (_, stop), (start, _) in zip(row_runs, row_runs[1:], strict=False):
            assert stop == start
        for start, stop in row_runs:
            assert len(set(row[start:stop])) == 1
        assert all(row[a] != row[b] for (a, _), (b, _) in zip(row_runs, row_runs[1:], strict=False))


@pytest.mark.parametrize(
    "row", [[0, 0, 1, 1, 0], [3, 1, 3], [0, 1, 2, 0]], ids=["back at the end", "short", "late"]
)
def test_an_id_that_comes_back_is_not_a_run(row):
    """One document in two runs would be split in two: the caller must keep the mask."""
    assert document_runs(torch.tensor([[5] * len(row), row])) is None


def masked_oracle(q, k, v, segments, per_offset, scale):
    """``softmax(q k^T scale + B + mask) v`` in float64, ``B[h, i, j] = per_offset[h, i - j +
    L - 1]`` written entry by entry, ``-inf`` across documents."""
    batch, heads, length, _ = q.shape
    bias = torch.zeros(heads, length, length, dtype=torch.float64)
    if per_offset is not None:
        for i in range(length):
            for j in range(length):
                bias[:, i, j] = per_offset[:, i - j + length - 1]
    same = segments[:, None, :, None] == segments[:, None, None, :]
    scores = (q @ k.transpose(-1, -2) * scale + bias).masked_fill(~same, -math.inf)
    return scores.softmax(-1) @ v


@pytest.mark.parametrize("bias", ["none", "per offset"])
def test_documents_one_at_a_time_equal_the_masked_softmax(bias):
    """Rows cut differently (a one-token document, a whole row), values and gradients of
    the queries, keys, values and the table."""
    generator = torch.Generator().manual_seed(3)
    length, heads = 9, 2
    segments = torch.tensor([[0] * 4 + [1] + [2] * 4, [7] * 9, [1, 1, 2, 2, 2, 2, 2, 0, 0]])
    q, k, v = (
        torch.randn(3, heads, length, 4, generator=generator, dtype=torch.float64).requires_grad_()
        for _ in range(3)
    )
    table = None
    inputs = [q, k, v]
    if bias == "per offset":
        table = torch.randn(heads, 2 * length - 1, generator=generator, dtype=torch.float64)
        inputs.append(table.requires_grad_())
    weight = torch.randn(3, heads, length, 4, generator=generator, dtype=torch.float64)
    runs = document_runs(segments)
    assert runs is not None
    got = attend_documents(q, k, v, runs, 0.4, table)
    want = masked_oracle(q, k, v, segments, table, 0.4)
    torch.testing.assert_close(got, want, atol=1e-12, rtol=1e-12)
    got_grads = torch.autograd.grad((got * weight).sum(), inputs)
    want_grads = torch.autograd.grad((want * weight).sum(), inputs)
    for g, w in zip(got_grads, want_grads, strict=True):
        torch.testing.assert_close(g, w, atol=1e-11, rtol=1e-11)


@pytest.mark.parametrize("position", sorted(POSITION_SCHEMES))
def test_a_model_with_documents_equals_the_masked_dense_path(position, monkeypatch):
    """Every registered scheme, the whole encoder in float64 with the fused CPU path from 2
    tokens (documents one at a time where the scheme's bias allows it) against the masked
    SDPA path: logits and every parameter gradient."""
    ids = torch.randint(1, 97, (2, 12), generator=torch.Generator().manual_seed(1))
    segments = torch.tensor([[0] * 5 + [1] * 7, [0] * 2 + [1] * 6 + [2] * 4])
    calls = count_calls(monkeypatch, [softmax], "attend_documents", documents.attend_documents)
    chosen = []
    choose = SoftmaxAttention._unmasked_cpu_path

    def recorded(self, q, bias, *args):
        path = choose(self, q, bias, *args)
        if softmax.FUSED_FROM_LENGTH <= q.shape[-2]:  # the second model, on the fused path
            chosen.append((bias, path))
        return path

    monkeypatch.setattr(SoftmaxAttention, "_unmasked_cpu_path", recorded)
    dense, split = on_both_cpu_paths(monkeypatch, position, ids, segment_ids=segments)
    # on the fused path every layer whose bias is absent or compact (a bias of (h, i - j),
    # or one that gives each document's square) attends the documents one at a time; a
    # bias given only dense keeps the mask
    assert chosen, "no layer reached the fused CPU path"
    for bias, path in chosen:
        compact = bias is None or not bias.adds_bias or bias.has_squares
        assert (path is not None) == compact
    assert bool(calls) == any(path is not None for _, path in chosen)
    assert_same_logits_and_gradients(split, dense)


@pytest.mark.parametrize(
    ("case", "taken"),
    [
        ("documents", True),
        ("a document in two runs", False),
        ("a padded key", False),
        ("every key real", True),
        ("backend sdpa", False),
        ("dropout", False),
        ("short row", False),
        ("window", False),
    ],
)
def test_the_kernel_attends_documents_one_at_a_time_only_where_it_is_the_same_function(
    case, taken, monkeypatch
):
    """No bias: each document one SDPA call with no mask, where the runs are the documents."""
    calls = count_calls(monkeypatch, [softmax], "attend_documents", documents.attend_documents)
    length = 8
    monkeypatch.setattr(softmax, "FUSED_FROM_LENGTH", 16 if case == "short row" else length)
    q, k, v = (
        torch.randn(2, 2, length, 4, generator=torch.Generator().manual_seed(s)) for s in range(3)
    )
    segments = torch.tensor([[0] * 3 + [1] * 5, [4] * 8])
    if case == "a document in two runs":
        segments = torch.tensor([[0] * 3 + [1] * 2 + [0] * 3, [4] * 8])
    pad = None
    if case in ("every key real", "a padded key"):
        pad = torch.ones(2, length, dtype=torch.bool)
        pad[1, -1] = case == "every key real"
    kernel = SoftmaxAttention(backend="sdpa" if case == "backend sdpa" else "auto")
    got = kernel(
        q,
        k,
        v,
        scale=0.5,
        key_padding_mask=pad,
        segment_ids=segments,
        dropout_p=0.5 if case == "dropout" else 0.0,
        window=4 if case == "window" else None,
    )
    assert bool(calls) == taken
    if case in ("documents", "a document in two runs"):  # either way, the same function
        want = masked_oracle(q.double(), k.double(), v.double(), segments, None, 0.5)
        torch.testing.assert_close(got.double(), want, atol=1e-6, rtol=1e-6)


def test_run_pieces_are_the_runs_and_carry_their_gradients():
    """Pieces of runs that do not tile the row equal its slices, values and gradients;
    overlapping runs are refused."""
    generator = torch.Generator().manual_seed(5)
    values = torch.randn(3, 10, 2, generator=generator, dtype=torch.float64, requires_grad=True)
    runs = [(1, 4), (4, 5), (7, 10)]
    pieces = run_pieces(values, 1, runs)
    weights = [torch.randn(p.shape, generator=generator, dtype=torch.float64) for p in pieces]
    got = torch.autograd.grad(
        sum((p * w).sum() for p, w in zip(pieces, weights, strict=True)), values
    )[0]
    want = torch.zeros_like(values)
    for (start, stop), piece, weight in zip(runs, pieces, weights, strict=True):
        assert torch.equal(piece, values[:, start:stop])
        want[:, start:stop] += weight
    assert torch.equal(got, want)
    with pytest.raises(AssertionError, match="runs overlap"):
        run_pieces(values, 1, [(0, 5), (3, 7)])
