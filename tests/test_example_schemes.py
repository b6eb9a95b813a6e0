"""The example plugins of examples/ (CoPE, scalable softmax) against the scheme kit and the
float64 references of their papers, imported from their source tree without installing
them (CI installs only roformer-lit and has no network)."""

from __future__ import annotations

import sys
from importlib import import_module
from pathlib import Path

import pytest
import tomllib
import torch

from roformer_lit.errors import ConfigError
from roformer_lit.testing import check_scheme
from roformer_lit.testing.checks import default_dtype
from roformer_lit.testing.models import random_ids, small_model, visible_model

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))

from roformer_lit_examples import CoPE, ScalableSoftmax  # noqa: E402
from roformer_lit_examples.cope import contextual_positions  # noqa: E402
from roformer_lit_examples.ssmax import keys_per_query  # noqa: E402


def test_cope_passes_the_kit():
    check_scheme(CoPE)


def test_cope_passes_the_kit_with_a_short_table():
    """Positions past ``npos_max`` clamp to the last row: still every property."""
    check_scheme(CoPE, npos_max=3, checks=["padding", "segments", "reference", "gradients"])


@pytest.mark.parametrize("inner", ["nope", "rope", "alibi"])
def test_scalable_softmax_passes_the_kit(inner):
    """Over a scheme without a bias, one that rotates, and one that adds a bias."""
    check_scheme(ScalableSoftmax, inner=inner)


def test_keys_per_query_counts_each_packed_document_and_real_keys():
    segments = torch.tensor([[0, 1, 2, 0, 1, 0, 1, 2, 3]])
    assert keys_per_query(9, torch.device("cpu"), segments).tolist() == [
        [3.0] * 3 + [2.0] * 2 + [4.0] * 4
    ]
    randomized = torch.tensor([[3, 9, 10, 40]])
    assert keys_per_query(4, torch.device("cpu"), randomized).tolist() == [[4.0] * 4]
    mask = torch.tensor([[True, True, True, False], [True, False, False, False]])
    assert keys_per_query(4, torch.device("cpu"), None, mask).tolist() == [[3.0] * 4, [1.0] * 4]
    assert keys_per_query(5, torch.device("cpu")).tolist() == [[5.0] * 5]


def test_contextual_positions_with_every_gate_open_are_distances_plus_one():
    """All gates 1: ``p_ij`` counts the tokens from i to j, both ends included."""
    length = 6
    index = torch.arange(length, dtype=torch.float64)
    expected = (index[:, None] - index[None, :]).abs() + 1
    assert torch.equal(
        contextual_positions(torch.ones(2, length, length, dtype=torch.float64)),
        expected.expand(2, -1, -1),
    )
    closed = torch.zeros(length, length, dtype=torch.float64)
    assert torch.equal(contextual_positions(closed), closed)


def attention_by_reference(block, scheme_cls, scheme, x, mask):
    """Layer 0's attention output from the scheme's ``reference`` logits, in float64."""
    batch, length, hidden = x.shape
    heads = block.num_heads
    q, k, v = block.qkv(x).view(batch, length, 3, heads, hidden // heads).permute(2, 0, 3, 1, 4)
    logits = scheme_cls.reference(scheme, q, k, None, 0)
    logits = logits.masked_fill(~mask[:, None, None, :], -torch.inf)
    out = torch.softmax(logits, -1) @ v
    return block.out(out.transpose(1, 2).reshape(batch, length, hidden))


@pytest.mark.parametrize(
    "scheme_cls,options",
    [(CoPE, {}), (ScalableSoftmax, {"inner": "nope"}), (ScalableSoftmax, {"inner": "rope"})],
    ids=["cope", "ssmax-nope", "ssmax-rope"],
)
def test_the_forward_equals_the_papers_formula(scheme_cls, options):
    """The attention the encoder computes through the kernel (rotation, bias and scale where
    the kernel applies them) is softmax of the reference logits, padded keys masked."""
    with default_dtype(torch.float64):
        model = visible_model(scheme_cls, options=options).double()
        scheme, block = model.encoder.position, model.encoder.layers[0].attention
        x = torch.randn(2, 9, model.hparams.hidden_size, generator=torch.Generator().manual_seed(3))
        mask = torch.ones(2, 9, dtype=torch.bool)
        with torch.no_grad():
            ctx = scheme.prepare(9, x.device, x.dtype, None)
            got = block(x, ctx, mask, scheme.layer(0))
            expected = attention_by_reference(block, scheme_cls, scheme, x, mask)
    torch.testing.assert_close(got, expected, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize(
    "scheme_cls,options,words",
    [
        (
            CoPE,
            {"npos_max": 1},
            "model.position_kwargs.npos_max: cope npos_max must be an integer >= 2",
        ),
        (
            ScalableSoftmax,
            {"inner": "ropee"},
            "model.position_kwargs.inner: ssmax inner: unknown position 'ropee'; valid choices: "
            "alibi",
        ),
        (
            ScalableSoftmax,
            {"inner": "roformer_lit_examples.ssmax:ScalableSoftmax"},
            "model.position_kwargs.inner: ssmax inner 'roformer_lit_examples.ssmax:"
            "ScalableSoftmax' cannot be ssmax itself",
        ),
        (
            ScalableSoftmax,
            {"inner_kwargs": {"bsae": 2}},
            "model.position_kwargs.inner_kwargs: unknown position_kwargs key(s) 'bsae' for "
            "position 'nope' (inner_kwargs.bsae)",
        ),
        (
            ScalableSoftmax,
            {"inner": "no_such_module:Scheme"},
            "model.position_kwargs.inner: ssmax inner: position 'no_such_module:Scheme': cannot "
            "import 'no_such_module'",
        ),
        (
            ScalableSoftmax,
            {"inner": "rope", "inner_kwargs": {"base": 0.5}},
            "model.position_kwargs.inner_kwargs.base: rope base must be > 1",
        ),
        (
            ScalableSoftmax,
            {"initial_s": 0.0},
            "model.position_kwargs.initial_s: ssmax initial_s must be a finite number > 0, got 0.0",
        ),
        (
            ScalableSoftmax,
            {"inner": "learned"},
            "model.position_kwargs.inner: ssmax inner 'learned' adds to the embeddings; ssmax "
            "scales the logits of a per-layer scheme: alibi",
        ),
    ],
)
def test_bad_options_are_refused_in_one_line(scheme_cls, options, words):
    with pytest.raises(ConfigError) as refused:
        small_model(scheme_cls, position_kwargs=options)
    message = str(refused.value)
    assert "\n" not in message and words in message, message


def test_scalable_softmax_refuses_the_linear_kernel():
    with pytest.raises(ValueError, match="valid attention kernels.*softmax"):
        small_model(ScalableSoftmax, "linear")


def test_the_entry_points_name_the_example_classes():
    declared = tomllib.loads((EXAMPLES / "pyproject.toml").read_text(encoding="utf-8"))
    entry_points = declared["project"]["entry-points"]["roformer_lit.positions"]
    assert set(entry_points) == {"cope", "ssmax"}
    for target in entry_points.values():
        module, name = target.split(":")
        assert getattr(import_module(module), name) in (CoPE, ScalableSoftmax)


def test_the_examples_never_import_the_attention_side():
    """The seam is one-directional for a plugin too (tests/test_seam.py)."""
    for path in (EXAMPLES / "roformer_lit_examples").glob("*.py"):
        assert "roformer_lit.attention" not in path.read_text(encoding="utf-8"), path.name


def test_cope_is_nope_until_its_tables_learn():
    """The paper's zero tables: at initialisation CoPE's bias is zero."""
    ids = random_ids(2, 9)
    cope, nope = small_model(CoPE), small_model("nope")
    missing, unexpected = cope.load_state_dict(nope.state_dict(), strict=False)
    assert missing == ["encoder.position.embeddings"] and unexpected == []
    with torch.no_grad():
        assert not torch.allclose(cope(ids), nope(ids))  # the perturbed tables count
        cope.encoder.position.embeddings.zero_()
        torch.testing.assert_close(cope(ids), nope(ids))


def test_ssmax_claims_are_its_inner_schemes_so_the_rules_read_them():
    """ssmax over nope reads no positions: randomized positions are refused as with nope;
    over rope they are accepted; over fire it claims no translation invariance."""
    from roformer_lit.commands.prelaunch import random_positions_need_a_reader
    from roformer_lit.encoder_config import EncoderConfig
    from roformer_lit.errors import ConfigError

    path = "roformer_lit_examples.ssmax:ScalableSoftmax"
    small = dict(vocab_size=40, hidden_size=16, num_heads=2, num_layers=2, intermediate_size=32)
    over_nope = EncoderConfig(position=path, **small)
    with pytest.raises(ConfigError, match="reads none"):
        random_positions_need_a_reader(over_nope, {"random_positions": 64})
    over_rope = EncoderConfig(position=path, position_kwargs={"inner": "rope"}, **small)
    random_positions_need_a_reader(over_rope, {"random_positions": 64})
    over_fire = EncoderConfig(position=path, position_kwargs={"inner": "fire"}, **small)
    assert not over_fire.layers[0].scheme_capabilities.translation_invariant
    assert over_rope.layers[0].scheme_capabilities.translation_invariant
