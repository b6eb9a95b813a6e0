"""The checks of an attention kernel, each a function of the kernel class and its options.

Softmax and linear attention compute different functions, so no single oracle fits every
kernel: each check is a property any attention kernel must have, found by calling the kernel
(built with its options as a model builds it, in eval mode) on small random ``[B, h, L, d]``
heads (odd head counts and lengths) and comparing it with itself on other inputs. What a
check proves:

- ``shapes``: the output is ``[B, h, L, d]``, float32 for float32 inputs, and finite, at
  three shapes (one and five heads among them), plain and with a key-padding mask;
- ``deterministic``: in eval mode with no dropout, two calls on the same input agree, also
  after a call at another shape (nothing kept between calls changes the output): every
  other check compares calls, so a kernel that draws at random is named as such here;
  and a call leaves every tensor it is given (``q``, ``k``, ``v``, mask, bias, segment
  ids) as it was;
- ``batch``: each row of a batch (its own padding, bias and segments) gets the output it
  gets alone: nothing is shared across rows;
- ``padding``: the real queries' outputs ignore what sits in padded slots (queries, keys,
  values), an all-real mask equals none, a row padded at its end equals the row alone
  (also rotated, with a bias and a window where claimed), and a row padded anywhere equals
  the row without its padded tokens;
- ``segments`` (kernels whose capabilities claim ``segments``): every document of a packed
  row (``segment_ids``, padding after the last one) gets the output it gets alone, with the
  bias's square and the window where those are claimed; without ``segment_ids`` they do not;
- ``window`` (claimed ``window``): query ``i`` with window ``w`` gets the output of the same
  call without a window whose keys outside ``|i - j| <= w // 2`` are padding; keys beyond
  ``w // 2`` change nothing and the keys at exactly ``w // 2`` do; a window whose half-width
  reaches every key (``w // 2 >= L - 1``, :mod:`roformer_lit.attention.window`) is global;
- ``bias`` (claimed ``score_bias``): a bias given dense equals the same bias in its other
  forms (``build``, ``lookup``, ``rows``, ``squares``, an ``offset_lookup`` table, a batch
  of one and a query axis of one broadcast), padded and, where claimed, with segments and a
  window; a zero bias equals no bias and a bias that is not zero changes the output; the
  score scale is applied as ``q k^T * scale + bias`` (doubling it changes the output and
  equals doubling ``q``): a scheme's own scale (``ScoreBias.scale``) is not dropped;
- ``rotation``: an identity ``rotate`` equals none, a rotation the same at every position
  (an orthogonal map of the features) changes nothing, a rotation by position does; where
  the kernel ``rotates_inputs`` (the base's contract), ``rotate`` given equals rotating
  ``q`` and ``k`` first and passing none;
- ``dropout`` (claimed ``dropout``): ``dropout_p = 0`` in train mode equals eval mode, and
  ``dropout_p = 0.5`` changes the output and keeps it finite;
- ``refusals``: for each capability not claimed (score bias, packed documents, window,
  attention dropout), a model asking for it is refused in one line naming the kernel
  (:mod:`roformer_lit.architecture_rules`; ``segment_ids`` by the model's forward); each
  claimed one builds and runs in a model;
- ``float64``: the float32 output agrees with the same kernel's in float64 (and float64
  inputs give float64 outputs), over every case above;
- ``bfloat16``: under bfloat16 autocast with bfloat16 inputs (a ``bf16-mixed`` run), the
  output is finite at real queries and agrees with float32's on the same values to
  bfloat16's precision, over every case above;
- ``gradients`` (a kernel that trains on the CPU): in train mode (as training calls it),
  the gradients of the real queries' outputs with respect to ``q``, ``k``, ``v`` (and a
  dense bias, where claimed) are finite, agree with float64's, and are zero at padded keys
  and values;
- ``reference`` (a kernel class with the optional ``reference`` hook, below): the kernel's
  real queries' outputs equal it in float64, over every case above.

The ``reference`` hook, a staticmethod (or classmethod) of the kernel class::

    reference(kernel, q, k, v, scale, *, bias, key_padding_mask, rotate, segment_ids, window)

returns ``[B, h, L, d]`` in float64 written from the kernel's formula (loops allowed: slow
by design); ``kernel`` is the built instance, ``bias`` the dense ``[B or 1, h, L, L]`` bias
or None; the other keywords are ``forward``'s (None where a case does not use them).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import Tensor

from roformer_lit.attention.base import AttentionKernel, Rotation
from roformer_lit.capabilities import KernelCapabilities
from roformer_lit.errors import ConfigError
from roformer_lit.registry import check_options, construct
from roformer_lit.score_bias import ScoreBias, lookup_of_dense, offset_lookup
from roformer_lit.testing.checks import FLOAT32_AGAINST_FLOAT64, FLOAT32_TOL, FLOAT64_TOL
from roformer_lit.testing.kit import Check, Options, differs, nonfinite
from roformer_lit.testing.models import component_label, random_ids, small_model

#: ``(batch, heads, length, head size)`` of the ``shapes`` check: odd heads and lengths.
SHAPES = [(2, 3, 7, 8), (1, 5, 9, 6), (3, 1, 5, 4)]
#: The other checks' heads: ``[BATCH, HEADS, LENGTH, SIZE]``.
BATCH, HEADS, LENGTH, SIZE = 3, 3, 13, 8
#: Real tokens of each row (padded at its end, as batches are).
REAL = (13, 9, 6)
#: Row 2 of the ``padding`` check's scattered padding: its real tokens.
SCATTERED = (0, 2, 3, 6, 7, 10, 12)
#: Packed documents of each row (padding, after the last, is a segment of its own).
DOCUMENTS = ((4, 6, 3), (5, 4), (6,))
#: The window of the cases; the ``window`` check tries more.
WINDOW = 5
#: float32 gradients against float64 ones.
GRADIENT_TOL = {"rtol": 1e-5, "atol": 1e-5}
#: bfloat16 outputs against float32 ones of the same values: bfloat16 keeps 8 bits of
#: mantissa; the built-ins stay within 1e-2 at these sizes.
BFLOAT16_TOL = {"rtol": 3e-2, "atol": 3e-2}
#: The least difference that shows a change the kernel must make (:func:`differs`).
CHANGE = 1e-4


def scale_for(size: int) -> float:
    return size**-0.5


def heads(
    batch: int = BATCH,
    n_heads: int = HEADS,
    length: int = LENGTH,
    size: int = SIZE,
    seed: int = 0,
) -> tuple[Tensor, Tensor, Tensor]:
    """Random float32 queries, keys and values ``[B, h, L, d]``."""
    generator = torch.Generator().manual_seed(seed)
    q, k, v = torch.randn(3, batch, n_heads, length, size, generator=generator).unbind(0)
    return q, k, v


def rope(x: Tensor) -> Tensor:
    """A rotation by position (RoPE over feature pairs, positions ``0 .. L-1``, a base low
    enough for short rows to turn), in ``x``'s dtype."""
    length, size = x.shape[-2], x.shape[-1]
    frequencies = 3.0 ** -(torch.arange(0, size, 2, dtype=torch.float64) / size)
    angles = torch.arange(length, dtype=torch.float64)[:, None] * frequencies[None, :]
    cos, sin = angles.cos().to(x.dtype), angles.sin().to(x.dtype)
    even, odd = x[..., 0::2], x[..., 1::2]
    return torch.stack((even * cos - odd * sin, even * sin + odd * cos), dim=-1).flatten(-2)


def orthogonal(size: int, seed: int = 11) -> Tensor:
    """A random ``[d, d]`` orthogonal matrix, float64."""
    generator = torch.Generator().manual_seed(seed)
    matrix, _ = torch.linalg.qr(torch.randn(size, size, generator=generator, dtype=torch.float64))
    return matrix


def end_padding(batch: int = BATCH, length: int = LENGTH, real: tuple[int, ...] = REAL) -> Tensor:
    """Bool ``[B, L]``, True at each row's first ``real[b]`` tokens."""
    return torch.arange(length)[None, :] < torch.tensor(real[:batch])[:, None]


def packed_segments(documents: tuple[tuple[int, ...], ...] = DOCUMENTS) -> Tensor:
    """``[B, L]`` segment ids of ``documents`` (padding after the last: a segment of its own)."""
    rows = []
    for lengths in documents:
        ids = [index for index, n in enumerate(lengths) for _ in range(n)]
        rows.append(ids + [len(lengths)] * (LENGTH - len(ids)))
    return torch.tensor(rows)


def random_bias(
    batch: int = BATCH, n_heads: int = HEADS, length: int = LENGTH, seed: int = 3
) -> Tensor:
    """A dense float32 ``[B, h, L, L]`` bias, one per row, of the scores' size."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(batch, n_heads, length, length, generator=generator)


@dataclass(frozen=True)
class Case:
    """One call's settings besides ``q, k, v``: a key-padding mask, a rotation, a dense
    bias, segment ids and a window (None: not used)."""

    mask: Tensor | None = None
    rotate: Rotation | None = None
    bias: Tensor | None = None
    segments: Tensor | None = None
    window: int | None = None

    def keywords(self, dtype: torch.dtype, scale: float) -> dict[str, Any]:
        """The kernel's keywords, the bias a dense :class:`ScoreBias` in ``dtype``."""
        bias = None if self.bias is None else ScoreBias(self.bias.to(dtype), scale=scale)
        return {
            "scale": scale,
            "bias": bias,
            "key_padding_mask": self.mask,
            "rotate": self.rotate,
            "segment_ids": self.segments,
            "window": self.window,
        }

    def real(self, batch: int, length: int) -> Tensor:
        """Bool ``[B, L]``: the queries whose outputs are compared (the real tokens)."""
        if self.mask is None:
            return torch.ones(batch, length, dtype=torch.bool)
        return self.mask

    def row(self, b: int) -> Case:
        """The case of row ``b`` alone."""

        def cut(t: Tensor | None) -> Tensor | None:
            return None if t is None else t[b : b + 1] if t.shape[0] > 1 else t

        return replace(self, mask=cut(self.mask), bias=cut(self.bias), segments=cut(self.segments))


def capabilities(kernel: type[AttentionKernel], options: Options) -> KernelCapabilities:
    return kernel.capabilities(options)


def cases(kernel: type[AttentionKernel], options: Options) -> dict[str, Case]:
    """The settings every comparing check runs over: plain, padded, rotated, and each
    claimed capability (bias, packed documents, window) on padded rows, then all at once."""
    claims = capabilities(kernel, options)
    mask = end_padding()
    found = {
        "plain": Case(),
        "padded": Case(mask=mask),
        "rotated and padded": Case(mask=mask, rotate=rope),
    }
    every = Case(mask=mask, rotate=rope)
    if claims.score_bias:
        found["with a score bias, padded"] = Case(mask=mask, bias=random_bias())
        every = replace(every, bias=random_bias())
    if claims.segments:
        found["packed documents, padded"] = Case(mask=mask, segments=packed_segments())
        every = replace(every, segments=packed_segments())
    if claims.window:
        found[f"window {WINDOW}, padded"] = Case(mask=mask, window=WINDOW)
        every = replace(every, window=WINDOW)
    if len(found) > 4:
        found["every claim at once, rotated and padded"] = every
    return found


def built(
    kernel: type[AttentionKernel], options: Options, dtype: torch.dtype = torch.float32
) -> AttentionKernel:
    """The kernel built as a model builds it (options typed by the registry's checks, then
    :func:`~roformer_lit.registry.construct`), in ``dtype`` and eval mode."""
    label = component_label(kernel)
    typed = check_options(kernel, options, "attention", label)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        module = construct(kernel, "attention", label, **typed)
    return module.to(dtype).eval()


def attend(
    module: AttentionKernel, q: Tensor, k: Tensor, v: Tensor, case: Case = Case(), **extra: Any
) -> Tensor:
    """``module`` on ``q, k, v`` with ``case``'s settings (``extra`` keywords over them)."""
    keywords = {**case.keywords(q.dtype, scale_for(q.shape[-1])), **extra}
    out = module(q, k, v, **keywords)
    finite_at_real_queries(out, q, keywords)
    return out


def finite_at_real_queries(out: Any, q: Tensor, keywords: dict[str, Any]) -> None:
    """An ``AssertionError`` if ``out``, a ``[B, h, L, d]`` tensor, holds NaN or inf at a
    real query (a padded one's output is free), naming the call's inputs: every check
    compares calls, and NaN equals nothing, so a kernel that gives NaN only on some inputs
    (longer rows, packed documents) would otherwise fail whichever comparison met it first,
    in its words (``not deterministic``), blaming a property it may well have. What is not
    such a tensor is the ``shapes`` check's to name."""
    if not isinstance(out, Tensor) or out.dim() != 4 or out.shape[:3] != q.shape[:3]:
        return
    if not out.is_floating_point():
        return
    mask = keywords.get("key_padding_mask")
    real = out if mask is None else out[mask.bool()[:, None, :, None].expand_as(out)]
    if bool(torch.isfinite(real).all()):
        return
    given = [
        name
        for name in ("bias", "key_padding_mask", "rotate", "segment_ids", "window")
        if keywords.get(name) is not None
    ]
    if keywords.get("dropout_p"):
        given.append(f"dropout_p={keywords['dropout_p']}")
    raise nonfinite(
        real,
        "output",
        f"q, k, v of shape {tuple(q.shape)}",
        given,
        "the kernel gives NaN or inf at real queries on these inputs",
    )


def assert_same(got: Tensor, wanted: Tensor, what: str, tol: dict | None = None) -> None:
    torch.testing.assert_close(
        got, wanted, **(tol or FLOAT32_TOL), msg=lambda m: f"{what}: {m}", equal_nan=False
    )


def check_shapes(kernel: type[AttentionKernel], options: Options) -> None:
    """``[B, h, L, d]`` out, float32 for float32 in, finite, at every shape of
    :data:`SHAPES`, plain and with a key-padding mask."""
    module = built(kernel, options)
    for shape in SHAPES:
        batch, n_heads, length, size = shape
        q, k, v = heads(*shape)
        mask = torch.ones(batch, length, dtype=torch.bool)
        mask[0, length - 2 :] = False
        for where, case in {"plain": Case(), "padded": Case(mask=mask)}.items():
            with torch.no_grad():
                out = attend(module, q, k, v, case)
            assert isinstance(out, Tensor), f"returned {type(out).__name__}, not a tensor"
            assert tuple(out.shape) == shape, (
                f"wrong output shape: {tuple(out.shape)} for q, k, v of shape {shape} ({where}); "
                f"a kernel returns [B, h, L, d]"
            )
            assert out.dtype == torch.float32, f"float32 inputs give {out.dtype} output ({where})"
            real = case.real(batch, length)[:, None, :, None].expand_as(out)
            assert torch.isfinite(out[real]).all(), (
                f"non-finite output at real queries, shape {shape} ({where})"
            )


def check_deterministic(kernel: type[AttentionKernel], options: Options) -> None:
    """Two eval-mode calls on one input agree (every case), also with a call at another
    shape between them; after those calls, other values of the same shape give what a
    freshly built kernel gives (nothing computed for one input is reused for another); and a
    call leaves ``q``, ``k``, ``v``, the key-padding mask, the bias and the segment ids as
    they were (a kernel that writes into them changes them for the layer's other readers,
    the next layers sharing a mask or a bias; named as such, not as a kernel that is not
    deterministic)."""
    module = built(kernel, options)
    q, k, v = heads()
    with torch.no_grad():
        for where, case in cases(kernel, options).items():
            given = {
                "q": q,
                "k": k,
                "v": v,
                "key_padding_mask": case.mask,
                "bias": case.bias,  # the dense bias the kernel is given (float32: this one)
                "segment_ids": case.segments,
            }
            given = {name: tensor for name, tensor in given.items() if tensor is not None}
            before = {name: tensor.clone() for name, tensor in given.items()}
            first = attend(module, q, k, v, case)
            for name, tensor in given.items():
                assert torch.equal(tensor, before[name]), (
                    f"changes its input in place: {name} differs after a call ({where}); a "
                    "kernel must not write into the tensors it is given (clone them first)"
                )
            second = attend(module, q, k, v, case)
            attend(module, *heads(1, HEADS, 5, SIZE, seed=9))  # another shape in between
            third = attend(module, q, k, v, case)
            for again, when in ((second, "twice"), (third, "after a call at another shape")):
                assert_same(
                    again,
                    first,
                    f"not deterministic: one kernel in eval mode, called {when} on the same "
                    f"input ({where}), gives different outputs (a random draw, or state kept "
                    f"between calls?)",
                )
            other = heads(seed=17)  # other values, the same shape
            assert_same(
                attend(module, *other, case),
                attend(built(kernel, options), *other, case),
                f"keeps state between calls: after calls on one input, another input of the "
                f"same shape ({where}) gives other outputs than on a freshly built kernel "
                f"(is something computed for a shape reused for other values?)",
            )


def check_batch(kernel: type[AttentionKernel], options: Options) -> None:
    """Each row of a batch gets, at its real queries, the output it gets alone."""
    module = built(kernel, options)
    q, k, v = heads()
    with torch.no_grad():
        for where, case in cases(kernel, options).items():
            together = attend(module, q, k, v, case)
            real = case.real(BATCH, LENGTH)
            for b in range(BATCH):
                row = slice(b, b + 1)
                alone = attend(module, q[row], k[row], v[row], case.row(b))
                keep = real[b]
                assert_same(
                    together[b][:, keep],
                    alone[0][:, keep],
                    f"batch row {b} differs from that row alone ({where}): rows of a batch "
                    f"leak into each other",
                )


def check_padding(kernel: type[AttentionKernel], options: Options) -> None:
    """Padded slots change no real query's output; an all-real mask is no mask; a row
    padded at its end is the row alone; a row padded anywhere is the row without them."""
    claims = capabilities(kernel, options)
    module = built(kernel, options)
    q, k, v = heads()
    mask = end_padding()
    junk = heads(seed=5)
    pad = ~mask[:, None, :, None]
    other = [torch.where(pad, 10 * j, t) for j, t in zip(junk, (q, k, v), strict=True)]
    with torch.no_grad():
        for where, case in cases(kernel, options).items():
            if case.mask is None:
                continue
            first = attend(module, q, k, v, case)
            second = attend(module, *other, case)
            keep = mask[:, None, :, None].expand_as(first)
            assert_same(
                second[keep],
                first[keep],
                f"padded keys leak: what sits in padded slots changes the real queries' "
                f"outputs ({where})",
            )
        all_real = torch.ones(BATCH, LENGTH, dtype=torch.bool)
        assert_same(
            attend(module, q, k, v, Case(mask=all_real)),
            attend(module, q, k, v),
            "a key-padding mask with every token real changes the output",
        )
        end_cases = {"padded at its end": Case(mask=mask)}
        end_cases["rotated"] = Case(mask=mask, rotate=rope)
        if claims.score_bias:
            end_cases["with a score bias"] = Case(mask=mask, bias=random_bias())
        if claims.window:
            end_cases[f"window {WINDOW}"] = Case(mask=mask, window=WINDOW)
        for where, case in end_cases.items():
            padded = attend(module, q, k, v, case)
            for b, n in enumerate(REAL):
                row = (slice(b, b + 1), slice(None), slice(0, n))
                alone_case = case.row(b)
                alone_case = replace(
                    alone_case,
                    mask=None,
                    bias=None if alone_case.bias is None else alone_case.bias[..., :n, :n],
                )
                alone = attend(module, q[row], k[row], v[row], alone_case)
                assert_same(
                    padded[row],
                    alone,
                    f"row {b}, padded after {n} real tokens, differs from those {n} tokens "
                    f"alone ({where}): padded keys are not ignored",
                )
        scattered = torch.zeros(1, LENGTH, dtype=torch.bool)
        scattered[0, list(SCATTERED)] = True
        row = (slice(2, 3), slice(None), list(SCATTERED))
        got = attend(module, q[2:3], k[2:3], v[2:3], Case(mask=scattered))[:, :, list(SCATTERED)]
        alone = attend(module, q[row], k[row], v[row])
        assert_same(
            got,
            alone,
            "a row padded between its real tokens differs from its real tokens alone",
        )


def check_segments(kernel: type[AttentionKernel], options: Options) -> None:
    """Every packed document gets the output it gets alone (padded rows; with the bias's
    square and the window where claimed); without ``segment_ids`` documents see each
    other."""
    claims = capabilities(kernel, options)
    module = built(kernel, options)
    q, k, v = heads()
    segments, mask = packed_segments(), end_padding()
    variants = {"packed documents": Case(mask=mask, segments=segments)}
    if claims.score_bias:
        variants["with a score bias"] = Case(mask=mask, segments=segments, bias=random_bias())
    if claims.window:
        variants[f"window {WINDOW}"] = Case(mask=mask, segments=segments, window=WINDOW)
    with torch.no_grad():
        for where, case in variants.items():
            packed = attend(module, q, k, v, case)
            for b, lengths in enumerate(DOCUMENTS):
                start = 0
                for index, n in enumerate(lengths):
                    stop = start + n
                    part = (slice(b, b + 1), slice(None), slice(start, stop))
                    bias = None if case.bias is None else case.bias[part][..., start:stop]
                    alone = attend(
                        module, q[part], k[part], v[part], Case(bias=bias, window=case.window)
                    )
                    assert_same(
                        packed[part],
                        alone,
                        f"packed document {index} of row {b} (tokens {start}..{stop - 1}) "
                        f"differs from it alone ({where}): documents leak into each other",
                    )
                    start = stop
        unmasked = attend(module, q, k, v, Case(mask=mask))
        packed = attend(module, q, k, v, Case(mask=mask, segments=segments))
    assert differs(unmasked[0], packed[0], at_least=CHANGE), (
        "segment_ids change no output of a packed row"
    )


def check_window(kernel: type[AttentionKernel], options: Options) -> None:
    """Query ``i`` with window ``w`` attends to its band only: the call without a window
    with keys outside the band padded; keys beyond ``w // 2`` change nothing, those at
    ``w // 2`` do; a window reaching every key is global."""
    claims = capabilities(kernel, options)
    module = built(kernel, options)
    q, k, v = heads()
    mask = end_padding()
    index = torch.arange(LENGTH)
    bias = random_bias() if claims.score_bias else None
    with torch.no_grad():
        for window in (1, 2, 4, WINDOW):
            half = window // 2
            j = LENGTH // 2
            moved_k, moved_v = k.clone(), v.clone()
            moved_k[:, :, j] += 3.0
            moved_v[:, :, j] += 3.0
            moved = attend(module, q, moved_k, moved_v, Case(window=window))
            plain = attend(module, q, k, v, Case(window=window))
            far = (index - j).abs() > half
            assert_same(
                moved[:, :, far],
                plain[:, :, far],
                f"keys beyond w // 2 = {half} change the output (window {window}): the window "
                f"is not applied",
            )
            edge = [j - half, j + half]
            assert differs(moved[:, :, edge], plain[:, :, edge], at_least=CHANGE), (
                f"the key at distance w // 2 = {half} changes nothing (window {window}): the "
                f"band is too narrow"
            )
            windowed = attend(module, q, k, v, Case(mask=mask, bias=bias, window=window))
            for i in range(LENGTH):
                band = mask & ((index - i).abs() <= half)[None, :]
                global_ = attend(module, q, k, v, Case(mask=band, bias=bias))
                real = mask[:, i]
                assert_same(
                    windowed[real, :, i],
                    global_[real, :, i],
                    f"query {i} with window {window} differs from attending to the keys "
                    f"|i - j| <= {half} only",
                )
        plain = attend(module, q, k, v, Case(mask=mask, bias=bias))
        for window in (2 * LENGTH - 2, 4 * LENGTH):
            assert_same(
                attend(module, q, k, v, Case(mask=mask, bias=bias, window=window)),
                plain,
                f"window {window} (w // 2 >= L - 1 = {LENGTH - 1}) differs from global attention",
            )


def bias_forms(dense: Tensor, scale: float) -> dict[str, ScoreBias]:
    """``dense`` (``[B, h, L, L]``) in every form a :class:`ScoreBias` takes besides the
    tensor itself (each form beside the dense ``build``, as the base requires)."""
    return {
        "build": ScoreBias(build=lambda: dense, scale=scale),
        "lookup": ScoreBias(build=lambda: dense, lookup=lookup_of_dense(dense), scale=scale),
        "rows": ScoreBias(build=lambda: dense, rows=lambda s, e: dense[:, :, s:e], scale=scale),
        "squares": ScoreBias(
            build=lambda: dense,
            squares=lambda runs: [
                [dense[b, :, s:e, s:e] for s, e in row] for b, row in enumerate(runs)
            ],
            scale=scale,
        ),
    }


def offset_table(n_heads: int = HEADS, length: int = LENGTH, seed: int = 4) -> Tensor:
    """A bias of ``(h, i - j)`` only, as its ``[h, 2L - 1]`` values."""
    generator = torch.Generator().manual_seed(seed)
    return torch.randn(n_heads, 2 * length - 1, generator=generator)


def check_bias(kernel: type[AttentionKernel], options: Options) -> None:
    """A dense bias equals its other forms (and broadcast shapes); a zero bias is no bias;
    a bias that is not zero changes the output; the scale multiplies ``q k^T``."""
    claims = capabilities(kernel, options)
    module = built(kernel, options)
    q, k, v = heads()
    scale = scale_for(SIZE)
    mask = end_padding()
    settings = {"padded": Case(mask=mask)}
    if claims.segments:
        settings["packed documents"] = Case(mask=mask, segments=packed_segments())
    if claims.window:
        settings[f"window {WINDOW}"] = Case(mask=mask, window=WINDOW)
    dense = random_bias()
    table = offset_table()
    lookup = offset_lookup(table)
    by_offset = lookup.full()
    one_row = random_bias(1, HEADS, LENGTH, seed=6)
    one_query = torch.randn(BATCH, HEADS, 1, LENGTH, generator=torch.Generator().manual_seed(7))

    def call(case: Case, bias: ScoreBias | None) -> Tensor:
        return attend(module, q, k, v, case, bias=bias)

    with torch.no_grad():
        for where, case in settings.items():
            real = case.real(BATCH, LENGTH)[:, None, :, None].expand(BATCH, HEADS, LENGTH, SIZE)
            wanted = call(case, ScoreBias(dense, scale=scale))
            assert differs(wanted, call(case, None), at_least=CHANGE), (
                f"claims supports_score_bias, but a score bias changes nothing ({where}): the "
                f"bias is dropped"
            )
            for form, given in bias_forms(dense, scale).items():
                assert_same(
                    call(case, given)[real],
                    wanted[real],
                    f"the bias given as {form} differs from the same bias dense ({where})",
                )
            expected = {
                "offset_lookup": (
                    ScoreBias(build=lookup.full, lookup=lookup, scale=scale),
                    ScoreBias(by_offset.expand(BATCH, -1, -1, -1).clone(), scale=scale),
                ),
                "a batch of one": (
                    ScoreBias(one_row, scale=scale),
                    ScoreBias(one_row.expand(BATCH, -1, -1, -1).clone(), scale=scale),
                ),
                "a query axis of one": (
                    ScoreBias(one_query, scale=scale),
                    ScoreBias(one_query.expand(-1, -1, LENGTH, -1).clone(), scale=scale),
                ),
            }
            for form, (given, full) in expected.items():
                assert_same(
                    call(case, given)[real],
                    call(case, full)[real],
                    f"the bias given as {form} differs from the same bias dense, "
                    f"[B, h, L, L] ({where})",
                )
            assert_same(
                call(case, ScoreBias(torch.zeros(1, HEADS, LENGTH, LENGTH), scale=scale)),
                call(case, None),
                f"a zero bias differs from no bias ({where})",
            )
            assert_same(
                call(case, ScoreBias(scale=scale)),
                call(case, None),
                f"a ScoreBias adding no bias (scale only) differs from none ({where})",
            )
            scaled = ScoreBias(dense, scale=2 * scale)
            doubled = attend(module, q, k, v, case, scale=2 * scale, bias=scaled)
            assert differs(doubled, wanted, at_least=CHANGE), (
                f"claims supports_score_bias, but the score scale changes nothing ({where}): "
                f"a scheme's scale (ScoreBias.scale, given as scale) is dropped"
            )
            assert_same(
                doubled,
                attend(module, 2 * q, k, v, case, scale=scale, bias=scaled),
                f"scale 2s on q differs from scale s on 2q ({where}): the scores are not "
                f"q k^T * scale + bias",
            )


def check_rotation(kernel: type[AttentionKernel], options: Options) -> None:
    """An identity ``rotate`` is none; one rotation at every position changes nothing; a
    rotation by position changes the output; with ``rotates_inputs``, ``rotate`` is
    applied to ``q`` and ``k`` as given."""
    module = built(kernel, options)
    q, k, v = heads()
    matrix = orthogonal(SIZE)

    def same_everywhere(x: Tensor) -> Tensor:
        return x @ matrix.to(x.dtype)

    with torch.no_grad():
        for where, case in cases(kernel, options).items():
            case = replace(case, rotate=None)
            plain = attend(module, q, k, v, case)
            assert_same(
                attend(module, q, k, v, case, rotate=lambda x: x),
                plain,
                f"an identity rotate changes the output ({where})",
            )
            assert_same(
                attend(module, q, k, v, case, rotate=same_everywhere),
                plain,
                f"a rotation the same at every position changes the output ({where}): "
                f"rotated queries and keys should meet only in their dot products",
            )
            turned = attend(module, q, k, v, case, rotate=rope)
            assert differs(turned, plain, at_least=CHANGE), (
                f"rotate is ignored: a rotation by position ({where}) changes nothing"
            )
            if kernel.rotates_inputs:
                assert_same(
                    turned,
                    attend(module, rope(q), rope(k), v, case),
                    f"rotate given differs from rotating q and k first and passing none "
                    f"({where}); the kernel declares rotates_inputs",
                )


def check_dropout(kernel: type[AttentionKernel], options: Options) -> None:
    """``dropout_p = 0`` in train mode is eval mode; ``dropout_p = 0.5`` changes the output
    and keeps it finite."""
    module = built(kernel, options)
    q, k, v = heads()
    case = Case(mask=end_padding())
    with torch.no_grad():
        evaluated = attend(module, q, k, v, case)
        module.train()
        trained = attend(module, q, k, v, case, dropout_p=0.0)
        torch.manual_seed(0)
        dropped = attend(module, q, k, v, case, dropout_p=0.5)
    assert_same(trained, evaluated, "dropout_p = 0 in train mode differs from eval mode")
    assert torch.isfinite(dropped).all(), "dropout_p = 0.5 gives non-finite outputs"
    assert differs(dropped, evaluated, at_least=CHANGE), (
        "claims supports_dropout, but dropout_p = 0.5 in train mode changes nothing"
    )


def _refused(build: Callable[[], Any], what: str, label: str, claimed: bool) -> None:
    """``build()`` must raise one line (a ConfigError or ValueError) naming ``label``
    where the capability is not ``claimed``, and succeed where it is."""
    try:
        build()
    except (ConfigError, ValueError) as error:
        message = str(error)
        assert claimed is False, f"claims {what}, but a model with it is refused: {message}"
        assert "\n" not in message, f"{what} unclaimed: refused in several lines: {message!r}"
        return
    assert claimed, f"does not claim {what}, but a model using it was built and ran unrefused"


def check_refusals(kernel: type[AttentionKernel], options: Options) -> None:
    """Each capability not claimed is refused by the model in one line; each claimed one
    builds and runs (through :func:`~roformer_lit.testing.models.small_model`)."""
    claims = capabilities(kernel, options)
    label = component_label(kernel)
    base = {"num_layers": 1, "attention_kwargs": dict(options) or None}
    ids = random_ids(1, 9)

    def run(position: str, **kwargs: Any) -> Callable[[], Any]:
        def build() -> Any:
            with torch.no_grad():
                return small_model(position, kernel, **base, **kwargs)(ids)

        return build

    def packed() -> Any:
        model = small_model("nope", kernel, **base)
        with torch.no_grad():
            return model(ids, segment_ids=torch.tensor([[0] * 4 + [1] * 5]))

    plan = {"pattern": ["local"], "types": {"local": {"window": 4}}}
    _refused(run("alibi"), "a score bias (position alibi)", label, claims.score_bias)
    _refused(run("nope", layer_plan=plan), "a window (layer plan window 4)", label, claims.window)
    _refused(run("nope", attention_dropout=0.1), "attention dropout 0.1", label, claims.dropout)
    _refused(packed, "packed documents (segment_ids)", label, claims.segments)


def check_float64(kernel: type[AttentionKernel], options: Options) -> None:
    """float32 outputs agree with the same kernel's in float64 (every case); float64
    inputs give float64 outputs."""
    module = built(kernel, options)
    double = copy.deepcopy(module).double()
    q, k, v = heads()
    with torch.no_grad():
        for where, case in cases(kernel, options).items():
            got = attend(module, q, k, v, case)
            wanted = attend(double, q.double(), k.double(), v.double(), case)
            assert wanted.dtype == torch.float64, f"float64 inputs give {wanted.dtype} ({where})"
            real = case.real(BATCH, LENGTH)
            assert_same(
                got[real[:, None].expand(-1, HEADS, -1)].double(),
                wanted[real[:, None].expand(-1, HEADS, -1)],
                f"float32 disagrees with float64 ({where})",
                FLOAT32_AGAINST_FLOAT64,
            )


def check_bfloat16(kernel: type[AttentionKernel], options: Options) -> None:
    """Under bfloat16 autocast with bfloat16 inputs (what a ``bf16-mixed`` run hands a
    kernel), the output is floating, finite at real queries, and agrees with the float32
    output of the same values (every case) to bfloat16's precision."""
    module = built(kernel, options)
    q, k, v = (t.to(torch.bfloat16) for t in heads())
    with torch.no_grad():
        for where, case in cases(kernel, options).items():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                got = attend(module, q, k, v, case)
            wanted = attend(module, q.float(), k.float(), v.float(), case)
            assert got.is_floating_point(), f"bfloat16 inputs give {got.dtype} ({where})"
            real = case.real(BATCH, LENGTH)[:, None].expand(-1, HEADS, -1)
            assert_same(
                got[real].float(),
                wanted[real],
                f"under bfloat16 autocast, bfloat16 inputs give other outputs than float32 "
                f"on the same values ({where})",
                BFLOAT16_TOL,
            )


def _gradients(
    module: AttentionKernel, case: Case, dtype: torch.dtype, bias: bool
) -> dict[str, Tensor]:
    """Gradients of a random weighting of the real queries' outputs, by input name."""
    inputs = dict(zip("qkv", (t.to(dtype) for t in heads()), strict=True))
    if bias:
        inputs["bias"] = random_bias().to(dtype)
    for t in inputs.values():
        t.requires_grad_()
    keywords = case.keywords(dtype, scale_for(SIZE))
    if bias:
        keywords["bias"] = ScoreBias(inputs["bias"], scale=keywords["scale"])
    out = module(inputs["q"], inputs["k"], inputs["v"], **keywords)
    weights = torch.randn(out.shape, generator=torch.Generator().manual_seed(8)).to(dtype)
    real = case.real(BATCH, LENGTH)[:, None, :, None].to(dtype)
    (out * weights * real).sum().backward()
    grads = {}
    for name, t in inputs.items():
        grads[name] = torch.zeros_like(t) if t.grad is None else t.grad
    return grads


def check_gradients(kernel: type[AttentionKernel], options: Options) -> None:
    """The real queries' outputs have finite gradients in ``q, k, v`` (and a dense bias
    where claimed) that agree with float64's and vanish at padded keys and values, the
    kernel in train mode (as training calls it; ``dropout_p`` 0): every other check but
    ``dropout`` calls it in eval mode, where a path taken only in training goes unseen."""
    module = built(kernel, options).train()
    double = copy.deepcopy(module).double()
    for where, case in cases(kernel, options).items():
        bias = case.bias is not None
        case = replace(case, bias=None)
        got = _gradients(module, case, torch.float32, bias)
        wanted = _gradients(double, case, torch.float64, bias)
        for name, grad in got.items():
            assert torch.isfinite(grad).all(), f"non-finite gradient of {name} ({where})"
            assert_same(
                grad.double(),
                wanted[name],
                f"the float32 gradient of {name} disagrees with float64's ({where})",
                GRADIENT_TOL,
            )
        if case.mask is not None:
            padded = ~case.mask[:, None, :, None]
            for name in "kv":
                leaked = (got[name] * padded).abs().max()
                assert leaked == 0, (
                    f"padded {name} gets a gradient ({leaked:.3g}) from the real queries "
                    f"({where}): padded keys are read"
                )


def check_reference(kernel: type[AttentionKernel], options: Options) -> None:
    """The kernel's real queries' outputs equal its ``reference`` in float64 (every case)."""
    reference: Callable[..., Tensor] = kernel.reference  # type: ignore[attr-defined]
    module = built(kernel, options, torch.float64)
    q, k, v = (t.double() for t in heads())
    with torch.no_grad():
        for where, case in cases(kernel, options).items():
            got = attend(module, q, k, v, case)
            wanted = reference(
                module,
                q,
                k,
                v,
                scale_for(SIZE),
                bias=None if case.bias is None else case.bias.double(),
                key_padding_mask=case.mask,
                rotate=case.rotate,
                segment_ids=case.segments,
                window=case.window,
            )
            real = case.real(BATCH, LENGTH)[:, None].expand(-1, HEADS, -1)
            assert_same(
                got[real],
                wanted.to(got.dtype)[real],
                f"differs from the reference ({where})",
                FLOAT64_TOL,
            )


def _claims(name: str) -> Callable[[type[AttentionKernel], Options], bool]:
    def applies(kernel: type[AttentionKernel], options: Options) -> bool:
        return bool(getattr(capabilities(kernel, options), name))

    return applies


def _trains_on_cpu(kernel: type[AttentionKernel], options: Options) -> bool:
    devices = capabilities(kernel, options).training_devices
    return devices is None or "cpu" in devices


KERNEL_CHECKS: dict[str, Check] = {
    check.name: check
    for check in (
        Check("shapes", check_shapes),
        Check("deterministic", check_deterministic),
        Check("batch", check_batch),
        Check("padding", check_padding),
        Check("segments", check_segments, _claims("segments")),
        Check("window", check_window, _claims("window")),
        Check("bias", check_bias, _claims("score_bias")),
        Check("rotation", check_rotation),
        Check("dropout", check_dropout, _claims("dropout")),
        Check("refusals", check_refusals),
        Check("float64", check_float64),
        Check("bfloat16", check_bfloat16),
        Check("gradients", check_gradients, _trains_on_cpu),
        Check(
            "reference",
            check_reference,
            lambda kernel, options: hasattr(kernel, "reference"),
        ),
    )
}
