"""Global softmax attention with a score bias on its long-row paths against a float64
oracle, for every registered scheme that adds a bias (a new one is tested the moment it is
registered): in blocks of queries (on SDPA or on the fused CPU kernel) and dense on the
fused CPU kernel with its own bias gradient, outputs and gradients (queries, keys, values
and every parameter the bias reads), with padding, packed documents and per-example
positions; through whole models against the dense path; and never an ``[L, L]`` tensor,
forward or backward, in blocks."""

from __future__ import annotations

import math

import pytest
import torch
from model_factory import count_calls, small_model
from torch.utils._python_dispatch import TorchDispatchMode

from roformer_lit import POSITION_SCHEMES
from roformer_lit.attention import (
    cpu_fused_bias,
    cpu_offset_bias,
    documents,
    padded_rows,
    query_blocks,
    softmax,
)
from roformer_lit.attention.softmax import SoftmaxAttention
from roformer_lit.positions import fire as fire_module
from roformer_lit.positions.base import QKVWeights, segment_positions
from roformer_lit.score_bias import OffsetLookup, RowPieces, bias_rows, dense_from_lookup
from roformer_lit.testing.checks import unnamed_reads

BATCH, LENGTH = 2, 11
BIAS_SCHEMES = [name for name, scheme in POSITION_SCHEMES.items() if scheme.needs_score_bias]
#: Every scheme as built, and FIRE with its MLP in the piecewise-linear form it takes on
#: long rows (from ``PIECEWISE_FROM`` tokens, made 1 here).
FORMS = [(name, False) for name in BIAS_SCHEMES] + [
    ("fire", True) for name in BIAS_SCHEMES if name == "fire"
]
#: A kernel that takes the blocked path at every length here (blocks of 4: two full, one not).
BLOCKED = {"bias_block": 4, "bias_block_from": 2}

CASES = {
    "plain": (None, None, None),
    "padding": (torch.tensor([[True] * LENGTH, [True] * 7 + [False] * 4]), None, None),
    "documents": (None, torch.tensor([[0] * 4 + [1] * 7, [0] * 9 + [1] * 2]), None),
    "positions": (None, None, torch.tensor([[0, 2, 3, 7, 8, 9, 12, 15, 16, 20, 21]] * 2)),
}


#: The long-row paths, each made to run at LENGTH tokens: the kernel's options and the
#: length from which ``auto`` takes the fused CPU kernel.
PATHS = {
    "blocks on SDPA": ({"backend": "sdpa", **BLOCKED}, softmax.FUSED_FROM_LENGTH),
    "blocks on the fused kernel": (BLOCKED, 2),
    "dense on the fused kernel": ({}, 2),
}


@pytest.fixture(autouse=True)
def double_precision():
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def layer_inputs(position: str, segments, positions, frozen: bool = False):
    """A float64 model, random q, k, v and layer 0's score bias (segment positions or the
    given ones where the scheme reads them, as the encoder hands them on); ``frozen``: the
    scheme's parameters need no gradient."""
    model = small_model(position).double()
    model.encoder.position.requires_grad_(not frozen)
    scheme, attention = model.encoder.position, model.encoder.layers[0].attention
    heads, d = attention.num_heads, attention.head_size
    generator = torch.Generator().manual_seed(7)
    q, k, v = (
        torch.randn(BATCH, heads, LENGTH, d, generator=generator).requires_grad_() for _ in range(3)
    )
    if segments is not None and scheme.uses_segment_positions:
        positions = segment_positions(segments)
    ctx = scheme.prepare(LENGTH, torch.device("cpu"), torch.float64, positions)
    weights = QKVWeights(attention.qkv.weight, attention.qkv.bias, heads)
    return model, (q, k, v), scheme.layer(0).score(q, k, ctx, weights)


def oracle(q, k, v, score, pad, segments):
    """``softmax(q k^T scale + bias, -inf at padded keys and across segments) v`` in float64,
    the bias read entry by entry from the scheme's dense form (or its lookup)."""
    scores = q @ k.transpose(-1, -2) * score.scale
    dense = score.bias
    if dense is None:
        dense = dense_from_lookup(score.lookup, BATCH, q.shape[1], LENGTH)
    scores = scores + dense
    allowed = torch.ones(BATCH, 1, LENGTH, LENGTH, dtype=torch.bool)
    for b in range(BATCH):
        for i in range(LENGTH):
            for j in range(LENGTH):
                if pad is not None and not pad[b, j]:
                    allowed[b, :, i, j] = False
                if segments is not None and segments[b, i] != segments[b, j]:
                    allowed[b, :, i, j] = False
    return scores.masked_fill(~allowed, -math.inf).softmax(-1) @ v


def output_and_gradients(model, inputs, out, pad):
    """The output and the gradients of a fixed random weighting of its real rows with
    respect to q, k, v and every parameter the output reads."""
    weight = torch.randn(out.shape, generator=torch.Generator().manual_seed(3))
    real = torch.ones(BATCH, LENGTH, dtype=torch.bool) if pad is None else pad
    loss = (out * weight * real[:, None, :, None]).sum()
    params = list(model.parameters())
    grads = torch.autograd.grad(loss, [*inputs, *params], allow_unused=True)
    return out.detach(), grads


@pytest.mark.parametrize(("position", "piecewise"), FORMS)
@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("path", list(PATHS))
def test_long_row_paths_and_their_gradients_equal_the_float64_oracle(
    position, piecewise, case, path, monkeypatch
):
    """(The fused kernel's backward in chunks of 4 queries: three chunks, one not full.)"""
    if piecewise:
        monkeypatch.setattr(fire_module, "PIECEWISE_FROM", 1)
    pad, segments, positions = CASES[case]
    options, fused_from = PATHS[path]
    monkeypatch.setattr(softmax, "FUSED_FROM_LENGTH", fused_from)
    monkeypatch.setattr(cpu_fused_bias, "BACKWARD_ROWS", 4)
    calls = []

    def counted(function):
        def call(*args, **kwargs):
            calls.append(1)
            return function(*args, **kwargs)

        return call

    fused, rebuilding = (
        cpu_fused_bias.fused_attention_with_bias,
        cpu_fused_bias.fused_attention_rebuilding_mask,
    )
    monkeypatch.setattr(softmax, "fused_attention_with_bias", counted(fused))
    monkeypatch.setattr(query_blocks, "fused_attention_with_bias", counted(fused))
    monkeypatch.setattr(query_blocks, "fused_attention_rebuilding_mask", counted(rebuilding))
    monkeypatch.setattr(documents, "fused_attention_with_bias", counted(fused))
    document_calls = count_calls(
        monkeypatch, [softmax], "attend_documents", documents.attend_documents
    )
    offset_calls = count_calls(
        monkeypatch,
        [softmax, documents, padded_rows],
        "offset_bias_attention",
        cpu_offset_bias.offset_bias_attention,
    )
    monkeypatch.setattr(documents, "MIN_MEAN_DOCUMENT", 1)  # short rows: any document
    monkeypatch.setattr(cpu_offset_bias, "ROWS_TIMES_KEYS", 4 * BATCH * LENGTH)
    model, inputs, score = layer_inputs(position, segments, positions)
    assert score is not None and score.adds_bias
    assert score.has_blocks, f"{position}'s bias has no lookup or rows: it builds [L, L]"
    kernel = SoftmaxAttention(**options)
    got = kernel(*inputs, scale=score.scale, bias=score, key_padding_mask=pad, segment_ids=segments)
    # the path named is the path taken; on the fused kernel a bias of (h, i - j) alone
    # reads its [h, 2L - 1] table through a view instead (with documents, one view per
    # document: each is one run of its row here; with padding, one per row against its real
    # keys: the rows here are padded at their end); with documents shorter than
    # bias_block_from, another bias is attended one document's square at a time
    by_offset = isinstance(score.lookup, OffsetLookup)
    squares = score.has_squares and "dense" in path
    assert bool(document_calls) == (
        "fused" in path and segments is not None and (by_offset or squares)
    )
    assert bool(offset_calls) == ("fused" in path and by_offset)
    assert bool(calls) == ("fused" in path and not by_offset)
    got, got_grads = output_and_gradients(model, inputs, got, pad)

    model, inputs, score = layer_inputs(position, segments, positions)  # a fresh graph
    want = oracle(*inputs, score, pad, segments)
    want, want_grads = output_and_gradients(model, inputs, want, pad)
    real = torch.ones(BATCH, LENGTH, dtype=torch.bool) if pad is None else pad
    torch.testing.assert_close(got.transpose(1, 2)[real], want.transpose(1, 2)[real])
    own = {id(p) for p in model.encoder.position.parameters()}
    reached = [
        g is not None
        for p, g in zip(model.parameters(), got_grads[3:], strict=True)
        if id(p) in own
    ]
    assert any(reached) or not own  # the bias's parameters (fixed ALiBi: none) are reached
    for g, w in zip(got_grads, want_grads, strict=True):
        assert (g is None) == (w is None)
        if g is not None:
            torch.testing.assert_close(g, w, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize("position", BIAS_SCHEMES)
@pytest.mark.parametrize("case", ["padding", "documents"])
def test_a_model_on_long_rows_equals_the_dense_path(position, case):
    """The whole encoder (every layer, each scheme's own context) in blocks of queries gives
    the logits and parameter gradients of the dense path."""
    pad, segments, _ = CASES[case]
    ids = torch.randint(1, 97, (BATCH, LENGTH), generator=torch.Generator().manual_seed(1))
    mask = None if pad is None else pad.long()
    results = []
    for kwargs in ({}, BLOCKED):
        # training mode without dropout (the two paths draw its masks differently)
        model = small_model(position, attention_kwargs=kwargs, dropout=0.0).double().train()
        logits = model(ids, attention_mask=mask, segment_ids=segments)
        loss = (logits.softmax(-1)[..., 5] * (1 if pad is None else pad)).sum()
        names, params = zip(*model.named_parameters(), strict=True)
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        results.append((logits.detach(), dict(zip(names, grads, strict=True))))
    (dense, dense_grads), (blocked, blocked_grads) = results
    real = torch.ones(BATCH, LENGTH, dtype=torch.bool) if pad is None else pad
    torch.testing.assert_close(blocked[real], dense[real], atol=1e-10, rtol=1e-10)
    for name, want in dense_grads.items():
        got = blocked_grads[name]
        assert (got is None) == (want is None), name
        if want is not None:
            torch.testing.assert_close(got, want, atol=1e-10, rtol=1e-10, msg=name)


def test_attention_dropout_draws_the_same_mask_again_in_backward():
    """Checkpointed blocks recompute with the random state of their forward: the gradient
    is that of the dropped-out forward (checked against a finite difference of it)."""
    model, (q, k, v), score = layer_inputs("alibi", None, None)
    kernel = SoftmaxAttention(backend="sdpa", **BLOCKED)

    def run(query):
        torch.manual_seed(11)
        return kernel(query, k, v, scale=score.scale, bias=score, dropout_p=0.5).sum()

    (grad,) = torch.autograd.grad(run(q), q)
    step = torch.zeros_like(q)
    step[1, 2, 5, 3] = 1e-6
    with torch.no_grad():
        numeric = (run(q + step) - run(q - step)) / 2e-6
    torch.testing.assert_close(grad[1, 2, 5, 3], numeric, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("position", BIAS_SCHEMES)
@pytest.mark.parametrize("backend", ["auto", "sdpa"])
def test_short_rows_take_the_dense_path_bit_for_bit(position, backend):
    """Below ``FUSED_FROM_LENGTH`` and ``bias_block_from`` the kernel is dense SDPA with the
    merged mask, exactly (every curve trained on short rows is unchanged)."""
    pad, _, _ = CASES["padding"]
    _, (q, k, v), score = layer_inputs(position, None, None)
    assert LENGTH < softmax.FUSED_FROM_LENGTH
    with torch.no_grad():
        got = SoftmaxAttention(backend=backend)(
            q, k, v, scale=score.scale, bias=score, key_padding_mask=pad
        )
        mask = score.bias.masked_fill(~pad[:, None, None, :], -torch.inf)
        want = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, scale=score.scale
        )
    assert torch.equal(got, want)


class ShapeRecorder(TorchDispatchMode):
    """Records the shape of every tensor an operator returns and the elements its storage
    holds (a strided view of a small table, such as the Hankel view of a per-offset bias,
    has an ``[L, L]`` shape over ``2L - 1`` elements per head)."""

    def __init__(self) -> None:
        super().__init__()
        self.shapes: list[tuple[str, tuple[int, ...], int]] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, tuple | list) else (out,):
            if isinstance(t, torch.Tensor):
                held = t.untyped_storage().nbytes() // t.element_size()
                self.shapes.append((str(func), tuple(t.shape), held))
        return out


@pytest.mark.parametrize(("position", "piecewise"), FORMS)
@pytest.mark.parametrize("case", ["plain", "padding", "documents", "positions"])
def test_long_rows_never_build_an_l_by_l_tensor(position, piecewise, case, monkeypatch):
    """A training step's forward and backward on long rows (plain, padded, packed
    documents, or at per-example positions; on the fused CPU kernel from 16 tokens): no
    tensor with two dimensions of the row length holds ``L^2`` elements (no bias, index,
    distance or score matrix over all pairs; a view of a small table holds less)."""
    if piecewise:
        monkeypatch.setattr(fire_module, "PIECEWISE_FROM", 1)
    length = 50  # no other dimension of the small model is 50
    monkeypatch.setattr(softmax, "FUSED_FROM_LENGTH", 16)
    monkeypatch.setattr(cpu_offset_bias, "ROWS_TIMES_KEYS", 8 * BATCH * length)
    ids = torch.randint(1, 97, (BATCH, length), generator=torch.Generator().manual_seed(2))
    mask = torch.ones(BATCH, length, dtype=torch.long)
    if case != "plain":
        mask[1, 40:] = 0
    segments = positions = None
    if case == "documents":
        segments = torch.cat([torch.zeros(BATCH, 20), torch.ones(BATCH, 30)], 1).long()
    if case == "positions":  # randomized positions: per-example, not contiguous
        positions = torch.stack([torch.arange(length) * 2, torch.arange(length) + 7])
    model = small_model(
        position, attention_kwargs={"bias_block": 8, "bias_block_from": 16}, max_positions=128
    )
    recorder = ShapeRecorder()
    with recorder:
        logits = model.train()(
            ids, attention_mask=mask, segment_ids=segments, position_ids=positions
        )
        logits.sum().backward()
    square = [
        (op, s) for op, s, held in recorder.shapes if s.count(length) >= 2 and held >= length**2
    ]
    assert recorder.shapes and not square


@pytest.mark.parametrize(("position", "piecewise"), FORMS)
@pytest.mark.parametrize("case", ["plain", "positions"])
def test_rows_read_names_every_tensor_the_rows_need_a_gradient_of(
    position, piecewise, case, monkeypatch
):
    """A bias whose blocks of rows name what they read (``block_reads``: ``rows_read``, or
    the table of a bias of ``(h, i - j)``) is rebuilt in backward and its gradient sent to
    those tensors alone: its rows' graph reaches no other tensor that needs a gradient
    except through them (q, k, v, or a weight would lose their share)."""
    if piecewise:
        monkeypatch.setattr(fire_module, "PIECEWISE_FROM", 1)
    _, (q, _, _), score = layer_inputs(position, None, CASES[case][2])
    if score.block_reads is None:
        pytest.skip(f"{position}'s bias does not name what its rows read")
    if not bias_rows(score, BATCH, q.shape[1], 0, 1, LENGTH, q.device, q.dtype).requires_grad:
        pytest.skip(f"{position}'s bias needs no gradient")
    for start, stop in [(0, 4), (4, LENGTH)]:
        block = bias_rows(score, BATCH, q.shape[1], start, stop, LENGTH, q.device, q.dtype)
        assert unnamed_reads(block, score.block_reads) == []
        assert unnamed_reads(block, ())  # without the names, the walk reaches tensors


class OperatorCounter(TorchDispatchMode):
    """Counts calls of each operator."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: dict[str, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.calls[str(func)] = self.calls.get(str(func), 0) + 1
        return func(*args, **(kwargs or {}))


@pytest.mark.parametrize("position", BIAS_SCHEMES)
@pytest.mark.parametrize("frozen", [False, True])
def test_a_bias_naming_its_reads_is_attended_once_per_block(position, frozen, monkeypatch):
    """On the fused kernel in blocks, a bias that needs no gradient (fixed ALiBi, or a
    frozen one) or that names what its rows read runs the attention's forward once per
    block in a training step, not again in backward (no checkpoint); any other bias is
    checkpointed. Either way the gradients equal the float64 oracle's."""
    monkeypatch.setattr(softmax, "FUSED_FROM_LENGTH", 2)
    monkeypatch.setattr(cpu_fused_bias, "BACKWARD_ROWS", 4)
    # padded keys before real ones: a bias of (h, i - j) takes the blocked path too
    pad = torch.tensor([[True] * LENGTH, [True] * 3 + [False] * 2 + [True] * (LENGTH - 5)])
    weight = (
        torch.randn(BATCH, 1, LENGTH, 1, generator=torch.Generator().manual_seed(3))
        * pad[:, None, :, None]
    )

    def run(kernel):
        model, inputs, score = layer_inputs(position, None, None, frozen=frozen)
        out = kernel(*inputs, score, pad)
        wanted = [*inputs, *(p for p in model.parameters() if p.requires_grad)]
        grads = torch.autograd.grad((out * weight).sum(), wanted, allow_unused=True)
        return score, inputs[0].shape[1], grads

    counter = OperatorCounter()
    with counter:
        score, heads, got = run(
            lambda q, k, v, score, pad: SoftmaxAttention(**BLOCKED)(
                q, k, v, scale=score.scale, bias=score, key_padding_mask=pad
            )
        )
    forwards = counter.calls.get("aten._scaled_dot_product_flash_attention_for_cpu.default", 0)
    blocks = math.ceil(LENGTH / BLOCKED["bias_block"])
    # fixed: ALiBi's slopes by default, a frozen table; not XL's or DeBERTa's terms of q
    first_row = bias_rows(score, BATCH, heads, 0, 1, LENGTH, torch.device("cpu"), torch.float64)
    once = not first_row.requires_grad or score.block_reads is not None
    assert forwards == (blocks if once else 2 * blocks)
    _, _, want = run(lambda q, k, v, score, pad: oracle(q, k, v, score, pad, None))
    assert len(got) == len(want) > 3 or frozen
    for g, w in zip(got, want, strict=True):
        assert (g is None) == (w is None)
        if g is not None:
            torch.testing.assert_close(g, w, atol=1e-10, rtol=1e-10)


@pytest.mark.parametrize(("position", "piecewise"), FORMS)
@pytest.mark.parametrize("case", ["plain", "positions"])
def test_a_bias_is_laid_out_along_the_keys(position, piecewise, case, monkeypatch):
    """Every form of a scheme's bias a kernel reads (dense, a block of rows) holds each row's
    keys next to each other (stride 1), as the attention kernels read them: a bias laid out
    heads-innermost (as a lookup of a ``[S, h]`` table returns it) would make every read of
    it stride across heads."""
    if piecewise:
        monkeypatch.setattr(fire_module, "PIECEWISE_FROM", 1)
    _, (q, _, _), score = layer_inputs(position, None, CASES[case][2])
    forms = [bias_rows(score, BATCH, q.shape[1], 3, 9, LENGTH, q.device, q.dtype)]
    if score.bias is not None:
        forms.append(score.bias)
    for form in forms:
        assert form.stride(-1) == 1, form.stride()


@pytest.mark.parametrize(("start", "stop"), [(0, 4), (4, 8), (1, 3), (2, 7), (0, 10), (8, 10)])
def test_row_pieces_give_the_rows_and_send_their_gradient_to_their_pieces_alone(start, stop):
    """Rows of a tensor cut into pieces of 4 (the last of 2) equal its slice, values and
    gradient; the gradient reaches the pieces the rows fall in and no other (a slice of the
    whole would give every block a gradient of the whole)."""
    generator = torch.Generator().manual_seed(6)
    values = torch.randn(2, 3, 10, 5, generator=generator, dtype=torch.float64, requires_grad=True)
    cut = RowPieces(values, 2, 4)
    rows = cut.rows(start, stop)
    assert torch.equal(rows, values[:, :, start:stop])
    weight = torch.randn(rows.shape, generator=generator, dtype=torch.float64)
    grads = torch.autograd.grad((rows * weight).sum(), cut.pieces, allow_unused=True)
    for index, grad in enumerate(grads):
        first, last = 4 * index, min(4 * index + 4, 10)
        overlaps = first < stop and start < last
        assert (grad is not None) == overlaps
        if overlaps:
            want = torch.zeros(2, 3, last - first, 5, dtype=torch.float64)
            low, high = max(start, first), min(stop, last)
            want[:, :, low - first : high - first] = weight[:, :, low - start : high - start]
            assert torch.equal(grad, want)
