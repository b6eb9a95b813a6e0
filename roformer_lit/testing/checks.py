"""The checks of a position scheme, each a function of the scheme class and one kernel.

Every check builds small models around the class (:mod:`roformer_lit.testing.models`) and
compares what the class computes with an oracle that does not go through the scheme's own
code path for the property at stake:

- ``shapes``: logits ``[B, L, V]`` in float32, finite, at three encoder shapes (odd head
  counts; head sizes its declared ``head_size_multiple`` refuses are left out); before the
  model runs, each layer's ``score`` returns a ``ScoreBias`` (or None) whose dense bias
  broadcasts to ``[B, h, L, L]``, and its ``rotate`` keeps the shape of queries and keys;
- ``deterministic``: one model in eval mode gives the same logits when called twice on the
  same input (plain, with a key-padding mask, at drawn positions), and leaves that input
  as it was (a hook that writes into the positions it is given shifts them for every
  later reader: another layer type's scheme, the next call);
- ``padding``: the real tokens' logits ignore what sits in padded slots, and equal those
  of the unpadded row;
- ``translation``: prepending padding shifts every real token's position; the logits stay
  the same if the scheme declares ``translation_invariant``, and change if it does not;
- ``segments``: every document of a packed block (``segment_ids``) gets the logits it gets
  alone (on kernels that declare segments: ``capabilities().segments``);
- ``positions``: tokens at sorted, distinct, non-contiguous positions (``position_ids``,
  past the cached tables) get, in float64, the logits of a longer row holding them at those
  indices and padding elsewhere; ``0 .. L-1`` given changes nothing; one model called with
  positions and then without (and the reverse) at the same length gives what fresh models
  give (nothing built for a length is reused for other positions); a scheme that declares
  ``reads_positions = False`` must ignore any positions;
- ``float64``: the float32 model agrees with the same weights in float64;
- ``bfloat16``: under bfloat16 autocast (a ``bf16-mixed`` run), the logits (padded, and at
  drawn positions) are finite and agree with float32's to bfloat16's precision;
- ``gradients``: the MLM loss's gradient is finite and reaches every parameter;
- ``reference``: where the class provides the optional ``reference`` hook (below), every
  layer's attention logits built from its hooks equal it in float64;
- ``rows_read``: a score bias that names what its ``rows`` read (``ScoreBias.rows_read``,
  which lets long rows rebuild each block's bias in backward and send its gradient to
  those tensors alone) names every tensor they read that needs a gradient: the autograd
  graph of each block of rows, walked back, reaches no other (a tensor left out would
  silently lose its gradient through the bias). A scheme naming nothing passes;
- ``rows``: a score bias that gives blocks of query rows otherwise than by slicing its
  dense form (``ScoreBias.rows``, or a lookup: what a kernel reads on long rows) gives
  ``bias[:, :, start:stop]`` of its dense form, in float64, at ``0 .. L-1``, at segment
  positions and at drawn positions. A bias given only dense passes;
- ``squares``: a score bias that gives packed documents' squares (``ScoreBias.squares``,
  or its lookup: ``ScoreBias.has_squares``, which lets packed documents on long rows be
  attended one at a time) gives ``bias[b, :, s:e, s:e]`` of its dense form, in float64, for
  documents at the start of a row, inside it and at its end, at ``0 .. L-1``, at the
  positions packed documents get (restarting at each) and at drawn positions. A scheme
  giving neither passes.

Every check builds the scheme with its ``test_kwargs`` (options under which its position
dependence shows on short rows) updated by the options it is given; where those differ from
the options given alone, :func:`~roformer_lit.testing.run_check` runs the check again at them
(:func:`~roformer_lit.testing.models.at_defaults`: what a run builds), its failure naming the
default options, so a scheme broken at its defaults alone fails the kit. At the defaults,
``translation`` asserts only a claim of invariance: a dependence too small to see on short
rows is what ``test_kwargs`` are for.

Inside :func:`~roformer_lit.testing.run_check` every call of a model must give finite logits
(:func:`finite_logits`): NaN or inf fails the check that met it as such, naming the inputs.

The ``reference`` hook, a staticmethod (or classmethod) of the scheme class::

    reference(scheme, q, k, positions, layer) -> Tensor  # [B, h, L, L], float64

returns the pre-softmax logits ``scale * q'.k' + bias`` of encoder layer ``layer``, written
from the paper's formula (loops and float64 allowed: it is slow by design): ``q`` and ``k``
are that layer's projected queries and keys ``[B, h, L, d]`` before any rotation,
``positions`` the ``[B, L]`` positions or None for ``0 .. L-1``, ``scheme`` the built
instance (read its parameters).

The claims ``translation_invariant`` and ``reads_positions`` are read from the built
instance, so a scheme whose claims follow its options (one composed over another) may set
them in ``__init__``; ``needs_score_bias`` and ``head_size_multiple`` are what the class
declares with the options checked (``capabilities``, as the rule table reads them), and a
kernel keeps packed documents apart where it declares so (``capabilities().segments``). The kit builds the same logits from the hooks: ``rotate``
(when the layer ``rotates``) and ``score``. What a scheme adds in ``embed`` is outside it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import torch
from torch import Tensor
from torch.nn.modules.module import register_module_forward_hook

from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.hook_outputs import bias_problem
from roformer_lit.module import MaskedLM
from roformer_lit.positions.base import (
    PositionScheme,
    QKVWeights,
    ScoreBias,
    default_scale,
    segment_positions,
)
from roformer_lit.score_bias import bias_rows, bias_squares, dense_from_lookup
from roformer_lit.testing.kit import Check, Options, default_dtype, differs, nonfinite
from roformer_lit.testing.models import (
    PAD,
    SHAPES,
    VOCAB,
    building_at_defaults,
    kit_options,
    random_ids,
    random_positions,
    small_model,
    visible_model,
)

#: Three documents packed into one block of 28 (the ``segments`` check).
PACKED_LENGTHS = (9, 14, 5)
#: Positions drawn from ``[0, SPAN)``, past the cached tables of ``MAX_POSITIONS`` rows.
SPAN, MAX_POSITIONS, LENGTH, BATCH = 40, 16, 7, 3
#: Float64 comparisons (sinusoid tables are float32 by design: ~1e-9 apart).
FLOAT64_TOL = {"rtol": 1e-7, "atol": 1e-8}
#: float32 logits against float64 ones: float32 rounding alone leaves ~4e-7 at these sizes
#: for every built-in; a float32 path through bfloat16 leaves ~4e-5.
FLOAT32_AGAINST_FLOAT64 = {"rtol": 1e-6, "atol": 5e-6}
#: Logits under bfloat16 autocast against float32 ones: the built-ins stay within 1e-2
#: (logits of magnitude about 1) at these sizes.
BFLOAT16_AGAINST_FLOAT32 = {"rtol": 5e-2, "atol": 5e-2}
#: Positions the ``bfloat16`` check draws from (an unbounded scheme): bfloat16 holds the
#: integers exactly only up to 256, so a scheme that casts positions to it shows here.
BFLOAT16_SPAN = 1024
#: Float32 forward passes of one model against each other.
FLOAT32_TOL = {"rtol": 1e-4, "atol": 1e-5}


@contextmanager
def finite_logits() -> Iterator[None]:
    """Inside the block, a call of a model that gives logits with NaN or inf is an
    ``AssertionError`` saying so, with the inputs it was given: every check compares calls
    of models, and NaN equals nothing, so a scheme whose hooks give NaN only on some inputs
    (longer rows, padding, drawn positions) would otherwise fail whichever comparison
    first met them, in that comparison's words (``not deterministic``, ``padded slots
    leak``), blaming a property it may well have."""

    def hook(module: Any, args: tuple, kwargs: dict, output: Any) -> None:
        if not isinstance(module, MaskedLM) or not isinstance(output, Tensor):
            return
        if not output.is_floating_point() or bool(torch.isfinite(output).all()):
            return
        given = {**dict(zip(_FORWARD_ARGUMENTS, args, strict=False)), **kwargs}
        ids = given.get("input_ids")
        shape = tuple(ids.shape) if isinstance(ids, Tensor) else "?"
        extra = [name for name in _FORWARD_ARGUMENTS[1:] if given.get(name) is not None]
        raise nonfinite(
            output,
            "logits",
            f"input_ids of shape {shape}",
            extra,
            "the scheme's hooks give NaN or inf on these inputs",
        )

    try:
        handle = register_module_forward_hook(hook, with_kwargs=True)
    except TypeError:  # a torch whose global hooks take no keywords: the inputs go unnamed
        handle = register_module_forward_hook(lambda m, a, out: hook(m, a, {}, out))
    try:
        yield
    finally:
        handle.remove()


#: ``MaskedLM.forward``'s arguments in order (a call may give them positionally).
_FORWARD_ARGUMENTS = ("input_ids", "attention_mask", "segment_ids", "position_ids")


def check_shapes(scheme: type[PositionScheme], attention: str, options: Options) -> None:
    """Logits ``[B, L, V]``, float32 and finite, at every shape the class accepts."""
    tried = 0
    options = kit_options(scheme, options)
    multiple = scheme.capabilities(options).head_size_multiple  # as declared, with options
    for hidden_size, num_heads in SHAPES:
        if (hidden_size // num_heads) % multiple:
            continue
        model = small_model(
            scheme, attention, hidden_size, num_heads, num_layers=1, position_kwargs=options
        )
        shape = (hidden_size, num_heads)
        check_hook_outputs(model, shape)  # named here, not as a size mismatch in a kernel
        with torch.no_grad():
            out = model(random_ids(2, 7))
        assert out.shape == (2, 7, VOCAB), f"logits {tuple(out.shape)} at {shape}, not (2, 7, 97)"
        assert out.dtype == torch.float32, f"logits are {out.dtype}, not float32, at {shape}"
        assert torch.isfinite(out).all(), f"non-finite logits at (hidden, heads) {shape}"
        tried += 1
    assert tried, f"no test shape has a head size that is a multiple of {multiple}"


def check_hook_outputs(model: MaskedLM, shape: tuple[int, int]) -> None:
    """What each layer's hooks return, before a kernel reads it: ``score`` a ``ScoreBias``
    (or None) whose dense bias is a floating tensor broadcasting to ``[B, h, L, L]``,
    ``rotate`` queries and keys of the shape it was given."""
    built = model.encoder.position
    q, k, _ = layer_inputs(model, seed=3)
    batch, heads, length, _ = q.shape
    wanted = (batch, heads, length, length)
    with torch.no_grad():
        ctx = built.prepare(length, q.device, q.dtype, None)
        for index, block in enumerate(model.encoder.layers):
            hooks = built.layer(index)
            qkv = QKVWeights(block.attention.qkv.weight, block.attention.qkv.bias, heads)
            score = hooks.score(q, k, ctx, qkv)
            assert score is None or isinstance(score, ScoreBias), (
                f"layer {index}'s score hook returned {type(score).__name__}, not a "
                f"ScoreBias or None, at (hidden, heads) {shape}"
            )
            bias = None if score is None else score.bias
            got = None if bias is None else bias_problem(bias, wanted)
            assert got is None, (
                f"layer {index}'s score bias has {got}, which does not fit: a score bias is "
                f"a floating tensor that broadcasts to [B, h, L, L] = {wanted}, at (hidden, "
                f"heads) {shape}"
            )
            if hooks.rotates:
                for name, x in (("queries", q), ("keys", k)):
                    turned = hooks.rotate(x, ctx)
                    assert turned.shape == x.shape, (
                        f"layer {index}'s rotate turns {name} of shape {tuple(x.shape)} into "
                        f"{tuple(turned.shape)} at (hidden, heads) {shape}"
                    )


def check_deterministic(scheme: type[PositionScheme], attention: str, options: Options) -> None:
    """One model in eval mode, called twice on the same input (plain, with a key-padding
    mask, at drawn positions), gives the same logits and leaves the input as it was: every
    other check compares calls of a model, so a scheme that draws at random (or keeps state
    between calls) fails here, named as such, rather than as padding that leaks; and a
    hook that writes into its inputs (``positions.add_(1)``: invisible in the logits of a
    translation-invariant scheme) would change them for every later reader."""
    model = visible_model(scheme, attention, options=options)
    ids = random_ids(2, 13)
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[:, 9:] = False
    calls = {"plain": {}, "with a key-padding mask": {"attention_mask": mask}}
    if model.encoder.position.reads_positions:
        calls["at drawn positions"] = {"position_ids": random_positions(2, 13, SPAN)}
    with torch.no_grad():
        for where, inputs in calls.items():
            given = {"input_ids": ids, **inputs}
            before = {name: tensor.clone() for name, tensor in given.items()}
            first, second = model(ids, **inputs), model(ids, **inputs)
            for name, tensor in given.items():
                assert torch.equal(tensor, before[name]), (
                    f"changes its input in place: the model's {name} differ after a call "
                    f"({where}); a hook must not write into the tensors it is given (clone "
                    "them first)"
                )
            torch.testing.assert_close(
                second,
                first,
                **FLOAT32_TOL,
                msg=lambda m, w=where: (
                    f"not deterministic: one model in eval mode, called twice on the same "
                    f"input ({w}), gives different logits (a random draw, or state kept "
                    f"between calls?): {m}"
                ),
            )


def check_padding(scheme: type[PositionScheme], attention: str, options: Options) -> None:
    """What sits in padded slots changes nothing, and a padded row equals the row alone."""
    model = visible_model(scheme, attention, options=options)
    ids = random_ids(2, 13)
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[:, 9:] = False
    other = ids.clone()
    other[:, 9:] = random_ids(2, 4, seed=7)
    with torch.no_grad():
        padded = model(ids, mask)[:, :9]
        other_padding = model(other, mask.int())[:, :9]  # an integer 0/1 mask means the same
        alone = model(ids[:, :9])
    torch.testing.assert_close(
        other_padding, padded, **FLOAT32_TOL, msg=lambda m: f"padded slots leak: {m}"
    )
    torch.testing.assert_close(
        padded, alone, **FLOAT32_TOL, msg=lambda m: f"a padded row differs from it alone: {m}"
    )


def check_translation(
    scheme: type[PositionScheme],
    attention: str,
    options: Options,
    shapes: tuple[tuple[int, int], ...] = tuple(SHAPES[:2]),
) -> None:
    """Prepended padding shifts every position: nothing changes iff the class declares
    ``translation_invariant``."""
    multiple = scheme.capabilities(kit_options(scheme, options)).head_size_multiple
    for hidden_size, num_heads in shapes:
        if (hidden_size // num_heads) % multiple:
            continue
        model = visible_model(scheme, attention, hidden_size, num_heads, options=options)
        ids = random_ids(2, 11)
        n_pad = 5
        padded = torch.cat([torch.full((2, n_pad), PAD), ids], dim=1)
        mask = torch.ones_like(padded, dtype=torch.bool)
        mask[:, :n_pad] = False
        with torch.no_grad():
            plain = model(ids, torch.ones_like(ids))
            shifted = model(padded, mask)[:, n_pad:]
        if model.encoder.position.translation_invariant:  # the built instance's claim
            torch.testing.assert_close(
                shifted,
                plain,
                atol=1e-4,
                rtol=1e-4,
                msg=lambda m: f"declares translation_invariant, but a shift changes logits: {m}",
            )
        elif not building_at_defaults():  # a dependence test_kwargs make visible
            assert differs(shifted, plain, at_least=1e-3), (
                "declares translation_invariant = False, but shifting every position by "
                f"{n_pad} changes no logit by 1e-3 (declare it True, or show the dependence "
                "on short rows with test_kwargs / amplify_for_tests)"
            )


def packed_documents() -> tuple[list[Tensor], Tensor, Tensor]:
    """Three documents, the block packing them, and its segment ids."""
    documents = [random_ids(1, n, seed=10 + i) for i, n in enumerate(PACKED_LENGTHS)]
    block = torch.cat(documents, dim=1)
    segments = torch.cat([torch.full((1, n), i) for i, n in enumerate(PACKED_LENGTHS)], dim=1)
    return documents, block, segments


def check_segments(scheme: type[PositionScheme], attention: str, options: Options) -> None:
    """Every document of a packed block gets the logits it gets alone."""
    options = kit_options(scheme, options)
    model = small_model(scheme, attention, max_positions=32, position_kwargs=options)
    documents, block, segments = packed_documents()
    with torch.no_grad():
        packed = model(block, segment_ids=segments)
        unmasked = model(block)
        start = 0
        for index, document in enumerate(documents):
            alone = model(document)
            stop = start + document.shape[1]
            torch.testing.assert_close(
                packed[:, start:stop],
                alone,
                rtol=1e-4,
                atol=1e-5,
                msg=lambda m, i=index: f"packed document {i} differs from it alone: {m}",
            )
            start = stop
    # without segments the later documents see the others: the check is not vacuous
    first = PACKED_LENGTHS[0]
    assert not torch.allclose(unmasked[:, first:], packed[:, first:], atol=1e-4), (
        "segment_ids change no logit of a packed block"
    )


def placed_in_longer_rows(ids: Tensor, positions: Tensor) -> tuple[Tensor, Tensor]:
    """The tokens at indices ``positions`` of longer rows, other tokens elsewhere (masked
    out as padding keys), and the key-padding mask."""
    longer = int(positions.max()) + 1
    rows = random_ids(ids.shape[0], longer, seed=9)
    mask = torch.zeros(ids.shape[0], longer, dtype=torch.bool)
    for b in range(ids.shape[0]):
        rows[b, positions[b]] = ids[b]
        mask[b, positions[b]] = True
    return rows, mask


def positions_model(scheme: type[PositionScheme], attention: str, options: Options) -> MaskedLM:
    """A visible model whose cached tables are shorter than the positions drawn (a bounded
    scheme's table holds the whole range)."""
    bounded = scheme.max_length is not PositionScheme.max_length
    max_positions = SPAN if bounded else MAX_POSITIONS
    return visible_model(scheme, attention, max_positions=max_positions, options=options)


def check_positions(scheme: type[PositionScheme], attention: str, options: Options) -> None:
    """Arbitrary increasing positions are a longer padded row's (float64); ``0 .. L-1``
    given is the fast path; a class that reads no positions ignores them."""
    ids = random_ids(BATCH, LENGTH)
    positions = random_positions(BATCH, LENGTH, SPAN)
    model = visible_model(scheme, attention, options=options)
    if not model.encoder.position.reads_positions:  # the built instance's claim
        with torch.no_grad():
            plain, given = model(ids), model(ids, position_ids=positions)
        torch.testing.assert_close(
            given,
            plain,
            **FLOAT32_TOL,
            msg=lambda m: f"declares reads_positions = False, but position_ids change logits: {m}",
        )
        return
    model = positions_model(scheme, attention, options)
    arange = torch.arange(LENGTH).expand(BATCH, LENGTH)
    with torch.no_grad():
        plain, given = model(ids), model(ids, position_ids=arange)
        # the same model, having run at 0 .. L-1 at this length, against a fresh one: a
        # scheme that keeps what it built for a length and reuses it for other positions
        # (a cache keyed by length alone) passes every check made on fresh models
        later = model(ids, position_ids=positions)
        fresh = positions_model(scheme, attention, options)(ids, position_ids=positions)
    torch.testing.assert_close(
        given, plain, **FLOAT32_TOL, msg=lambda m: f"position_ids 0 .. L-1 change logits: {m}"
    )
    torch.testing.assert_close(
        later,
        fresh,
        **FLOAT32_TOL,
        msg=lambda m: (
            "after a call at 0 .. L-1, position_ids of the same length give other logits "
            "than on a fresh model (is something built for a length reused for other "
            "positions?): " + str(m)
        ),
    )
    assert int(positions.max()) >= MAX_POSITIONS  # some positions lie past the cached tables
    with default_dtype(torch.float64):
        model = positions_model(scheme, attention, options).double()
        with torch.no_grad():
            got = model(ids, position_ids=positions)  # first: before a longer row grows a cache
            rows, mask = placed_in_longer_rows(ids, positions)
            longer = model(rows, mask)
        again = model(ids)  # 0 .. L-1 after the drawn positions at this length
        fresh = positions_model(scheme, attention, options).double()(ids)
    expected = torch.stack([longer[b, positions[b]] for b in range(BATCH)])
    torch.testing.assert_close(
        got,
        expected,
        **FLOAT64_TOL,
        msg=lambda m: f"tokens at positions differ from a longer padded row's: {m}",
    )
    torch.testing.assert_close(
        again,
        fresh,
        **FLOAT64_TOL,
        msg=lambda m: (
            "after a call with position_ids, 0 .. L-1 of the same length gives other logits "
            "than on a fresh model (is something built for a length reused for other "
            "positions?): " + str(m)
        ),
    )


def check_float64(scheme: type[PositionScheme], attention: str, options: Options) -> None:
    """The float32 model agrees with the same weights in float64 (padding included)."""
    model = visible_model(scheme, attention, options=options)
    ids = random_ids(2, 13)
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, 10:] = False
    with default_dtype(torch.float64):
        double = copy.deepcopy(model).double()
        with torch.no_grad():
            wanted = double(ids, mask)
    with torch.no_grad():
        got = model(ids, mask)
    assert wanted.dtype == torch.float64, f"the float64 model gives {wanted.dtype} logits"
    torch.testing.assert_close(
        got.double(),
        wanted,
        **FLOAT32_AGAINST_FLOAT64,
        msg=lambda m: f"float32 disagrees with float64: {m}",
    )


def check_bfloat16(scheme: type[PositionScheme], attention: str, options: Options) -> None:
    """Under bfloat16 autocast (what a ``bf16-mixed`` run does), the logits (padding
    included, and at drawn positions where the scheme reads them) are finite and agree
    with float32's to bfloat16's precision."""
    model = visible_model(scheme, attention, options=options)
    ids = random_ids(2, 13)
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, 10:] = False
    calls = {"padded": {"attention_mask": mask}}
    if model.encoder.position.reads_positions:
        bounded = scheme.max_length is not PositionScheme.max_length
        span = SPAN if bounded else BFLOAT16_SPAN  # past 256: bfloat16 rounds positions there
        model = visible_model(scheme, attention, max_positions=span, options=options)
        calls["at drawn positions"] = {"position_ids": random_positions(2, 13, span)}
    with torch.no_grad():
        for where, inputs in calls.items():
            wanted = model(ids, **inputs)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                got = model(ids, **inputs)  # NaN is named as such (finite_logits)
            torch.testing.assert_close(
                got.float()[mask],
                wanted[mask],
                **BFLOAT16_AGAINST_FLOAT32,
                msg=lambda m, w=where: (
                    f"under bfloat16 autocast the logits ({w}) disagree with float32's: {m}"
                ),
            )


def check_gradients(scheme: type[PositionScheme], attention: str, options: Options) -> None:
    """The MLM loss's gradient is finite and reaches every parameter (the scheme's too)."""
    model = visible_model(scheme, attention, options=options).train()
    ids = random_ids(2, 10)
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, 8:] = False
    labels = torch.where(mask, ids, -100)
    loss = model.mlm_loss(ids, labels, mask)
    assert torch.isfinite(loss), f"the loss is {loss.item()}"
    loss.backward()
    named = list(model.named_parameters())
    non_finite = [n for n, p in named if p.grad is not None and not torch.isfinite(p.grad).all()]
    assert non_finite == [], f"non-finite gradients: {non_finite}"
    missing = [n for n, p in named if p.grad is None or not p.grad.any()]
    assert missing == [], f"no gradient reaches {missing}"


def seam_logits(
    scheme: PositionScheme, layer: int, q: Tensor, k: Tensor, positions: Tensor | None, qkv
) -> Tensor:
    """``scale * q'.k' + bias`` of layer ``layer`` as its hooks give them (no mask)."""
    length = q.shape[-2]
    ctx = scheme.prepare(length, q.device, q.dtype, positions)
    hooks = scheme.layer(layer)
    score = hooks.score(q, k, ctx, qkv)
    if hooks.rotates:
        q, k = hooks.rotate(q, ctx), hooks.rotate(k, ctx)
    scale = default_scale(q.shape[-1]) if score is None else score.scale
    logits = scale * q @ k.transpose(-1, -2)
    if score is not None and score.bias is not None:
        logits = logits + score.bias
    return logits


def layer_inputs(model: MaskedLM, seed: int) -> tuple[Tensor, Tensor, Tensor | None]:
    """Random queries and keys ``[B, h, L, d]`` of ``model``'s layer shape (in the default
    dtype), and drawn positions ``[B, L]`` where its scheme reads positions (else None)."""
    heads = model.hparams.num_heads
    head_size = model.hparams.hidden_size // heads
    generator = torch.Generator().manual_seed(seed)
    q, k = torch.randn(2, BATCH, heads, LENGTH, head_size, generator=generator).unbind(0)
    reads = model.encoder.position.reads_positions
    return q, k, random_positions(BATCH, LENGTH, SPAN) if reads else None


def check_reference(scheme: type[PositionScheme], attention: str, options: Options) -> None:
    """Every layer's logits from the hooks equal the class's ``reference`` in float64."""
    reference: Callable[..., Tensor] = scheme.reference  # type: ignore[attr-defined]
    with default_dtype(torch.float64):
        model = visible_model(scheme, attention, options=options).double()
        built = model.encoder.position
        q, k, drawn = layer_inputs(model, seed=4)
        heads = q.shape[1]
        with torch.no_grad():
            for index, block in enumerate(model.encoder.layers):
                attention_block = block.attention
                qkv = QKVWeights(attention_block.qkv.weight, attention_block.qkv.bias, heads)
                for positions in (None, drawn) if drawn is not None else (None,):
                    got = seam_logits(built, index, q, k, positions, qkv)
                    wanted = reference(built, q, k, positions, index)
                    where = "0 .. L-1" if positions is None else "random positions"
                    torch.testing.assert_close(
                        got.expand_as(wanted),
                        wanted,
                        **FLOAT64_TOL,
                        msg=lambda m, i=index, w=where: (
                            f"layer {i} at {w} differs from the reference: {m}"
                        ),
                    )


def unnamed_reads(tensor: Tensor, named: tuple[Tensor, ...]) -> list[str]:
    """The tensors needing a gradient that ``tensor``'s autograd graph reaches without
    passing through one of ``named`` (leaves not named, by their shapes)."""
    stops = {t.grad_fn for t in named if t.grad_fn is not None}
    leaves = {id(t) for t in named if t.grad_fn is None}
    missed, seen, stack = [], set(), [tensor.grad_fn]
    while stack:
        node = stack.pop()
        if node is None or node in seen or node in stops:
            continue
        seen.add(node)
        variable = getattr(node, "variable", None)
        if variable is not None and id(variable) not in leaves:
            missed.append(str(tuple(variable.shape)))
        stack.extend(child for child, _ in node.next_functions)
    return missed


def check_rows_read(scheme: type[PositionScheme], attention: str, options: Options) -> None:
    """Every layer's blocks of rows, at ``0 .. L-1`` and at drawn positions, reach no
    tensor needing a gradient but through those their ``block_reads`` names (``rows_read``,
    or the table of a bias of ``(h, i - j)``)."""
    model = visible_model(scheme, attention, options=options).train()
    built = model.encoder.position
    q, k, drawn = layer_inputs(model, seed=6)
    q.requires_grad_(), k.requires_grad_()
    heads = q.shape[1]
    for positions in (None, drawn) if drawn is not None else (None,):
        ctx = built.prepare(LENGTH, q.device, q.dtype, positions)
        for index, block in enumerate(model.encoder.layers):
            qkv = QKVWeights(block.attention.qkv.weight, block.attention.qkv.bias, heads)
            score = built.layer(index).score(q, k, ctx, qkv)
            reads = None if score is None else score.block_reads
            if reads is None:
                continue
            for start, stop in ((0, 3), (3, LENGTH)):
                rows = bias_rows(score, q.shape[0], heads, start, stop, LENGTH, q.device, q.dtype)
                missed = unnamed_reads(rows, reads)
                assert missed == [], (
                    f"layer {index}'s rows({start}, {stop}) read tensors needing a gradient "
                    f"that rows_read does not name (shapes {', '.join(missed)})"
                )


#: The blocks of query rows ``[start, stop)`` the ``rows`` check reads: the first rows, the
#: rest, rows inside.
ROW_BLOCKS = [(0, 3), (3, LENGTH), (2, 5)]


def layer_biases(
    scheme: type[PositionScheme],
    attention: str,
    options: Options,
    wanted: Callable[[Any], bool],
) -> Iterator[tuple[int, str, Any, Tensor, int, int]]:
    """Every layer's score bias (float64) that ``wanted(score)`` keeps, at ``0 .. L-1``, at
    segment positions and at drawn positions: ``(layer index, where, score, its dense bias
    [B or 1, h, L, L], batch, heads)``, for the checks that compare a bias's other forms
    with its dense one."""
    with default_dtype(torch.float64):
        model = visible_model(scheme, attention, options=options).double()
        built = model.encoder.position
        q, k, drawn = layer_inputs(model, seed=8)
        batch, heads = q.shape[:2]
        cases = {"0 .. L-1": None}
        if built.reads_positions:
            cases["segment positions"] = segment_positions(SEGMENTS)
        if drawn is not None:
            cases["random positions"] = drawn
        with torch.no_grad():
            for where, positions in cases.items():
                ctx = built.prepare(LENGTH, q.device, q.dtype, positions)
                for index, block in enumerate(model.encoder.layers):
                    qkv = QKVWeights(block.attention.qkv.weight, block.attention.qkv.bias, heads)
                    score = built.layer(index).score(q, k, ctx, qkv)
                    if score is None or not score.adds_bias or not wanted(score):
                        continue
                    dense = score.bias
                    if dense is None:
                        dense = dense_from_lookup(score.lookup, batch, heads, LENGTH)
                    yield index, where, score, dense.expand(-1, heads, LENGTH, LENGTH), batch, heads


def check_rows(scheme: type[PositionScheme], attention: str, options: Options) -> None:
    """Every layer's blocks of query rows (``bias_rows``: what a kernel reads on long rows,
    from ``rows`` or a lookup) are slices of its dense bias (float64), at ``0 .. L-1``, at
    segment positions and at drawn positions. A bias given only dense passes (its rows
    are its slices)."""
    with default_dtype(torch.float64):
        for index, where, score, dense, batch, heads in layer_biases(
            scheme, attention, options, lambda s: s.rows is not None or s.lookup is not None
        ):
            for start, stop in ROW_BLOCKS:
                got = bias_rows(score, batch, heads, start, stop, LENGTH, dense.device, dense.dtype)
                wanted = dense[:, :, start:stop]
                shape = torch.broadcast_shapes(got.shape, wanted.shape)
                torch.testing.assert_close(
                    got.expand(shape),
                    wanted.expand(shape),
                    **FLOAT64_TOL,
                    msg=lambda m, i=index, w=where, r=(start, stop): (
                        f"layer {i}'s rows (start, stop) = {r} at {w} are not those "
                        f"rows of its dense bias (a kernel reads them on long rows): {m}"
                    ),
                )


#: The documents ``[start, stop)`` of each row the ``squares`` check reads: a row's first
#: tokens and its end, its inside, a whole row.
SQUARES = [[(0, 3), (3, LENGTH)], [(2, 5)], [(0, LENGTH)]]
#: Packed documents of the ``BATCH`` rows: squares read at their positions (0 at each start).
SEGMENTS = torch.tensor([[0] * 3 + [1] * 4, [0] * 2 + [1] * 3 + [2] * 2, [0] * 7])


def check_squares(scheme: type[PositionScheme], attention: str, options: Options) -> None:
    """Every layer's squares (``bias_squares``) are slices of its dense bias (float64), at
    ``0 .. L-1``, at segment positions and at drawn positions."""
    with default_dtype(torch.float64):
        for index, where, score, dense, _, heads in layer_biases(
            scheme, attention, options, lambda s: s.has_squares
        ):
            squares = bias_squares(score, SQUARES, heads, dense.device, dense.dtype)
            for row, (runs, got_row) in enumerate(zip(SQUARES, squares, strict=True)):
                for (start, stop), got in zip(runs, got_row, strict=True):
                    wanted = dense[min(row, dense.shape[0] - 1), :, start:stop, start:stop]
                    torch.testing.assert_close(
                        got,
                        wanted.expand_as(got),
                        **FLOAT64_TOL,
                        msg=lambda m, i=index, w=where, r=(row, start, stop): (
                            f"layer {i}'s square (row, start, stop) = {r} at {w} is "
                            f"not that slice of its dense bias: {m}"
                        ),
                    )


CHECKS: dict[str, Check] = {
    check.name: check
    for check in (
        Check("shapes", check_shapes),
        Check("deterministic", check_deterministic),
        Check("padding", check_padding),
        Check("translation", check_translation),
        Check(
            "segments",
            check_segments,
            lambda scheme, attention: ATTENTION_KERNELS[attention].capabilities().segments,
        ),
        Check("positions", check_positions),
        Check("float64", check_float64),
        Check("bfloat16", check_bfloat16),
        Check("gradients", check_gradients),
        Check("reference", check_reference, lambda scheme, attention: hasattr(scheme, "reference")),
        Check("rows", check_rows),
        Check("rows_read", check_rows_read),
        Check("squares", check_squares),
    )
}
