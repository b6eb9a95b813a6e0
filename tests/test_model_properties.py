"""Properties every registered scheme x kernel pair must have, parametrised over the registries."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from model_factory import (
    INVALID_PAIRS,
    VALID_PAIRS,
    VOCAB,
    random_ids,
    small_model,
)

from roformer_lit import ATTENTION_KERNELS, POSITION_SCHEMES, MaskedLM
from roformer_lit.positions.base import PositionScheme

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.parametrize("name", sorted(POSITION_SCHEMES))
def test_every_registered_scheme_is_documented(name):
    """The README's scheme table lists every registered scheme (and only those), and each
    scheme's class states what it computes. Its declared translation invariance is checked
    against the model's behaviour by the kit's translation check (tests/test_scheme_kit.py)."""
    rows = re.findall(r"^\| `(\w+)` \|", README.read_text(encoding="utf-8"), flags=re.M)
    schemes = [row for row in rows if row in POSITION_SCHEMES or row not in ATTENTION_KERNELS]
    assert name in schemes
    assert set(schemes) <= set(POSITION_SCHEMES), set(schemes) - set(POSITION_SCHEMES)
    assert (POSITION_SCHEMES[name].__doc__ or "").strip()


@pytest.mark.parametrize("name", sorted(ATTENTION_KERNELS))
def test_every_registered_kernel_is_documented(name):
    text = README.read_text(encoding="utf-8")
    assert f"`{name}`" in text
    assert (ATTENTION_KERNELS[name].__doc__ or "").strip()


@pytest.mark.parametrize("attention", ["softmax", "linear"])
def test_nope_is_permutation_equivariant(attention):
    model = small_model("nope", attention)
    ids = random_ids(2, 17)
    perm = torch.randperm(17, generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        torch.testing.assert_close(model(ids[:, perm]), model(ids)[:, perm], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("position,attention", VALID_PAIRS)
def test_runs_past_max_positions_except_bounded_schemes(position, attention):
    model = small_model(position, attention, max_positions=16)
    ids = random_ids(1, 40)
    if model.max_length is not None and 40 > model.max_length:
        with pytest.raises(ValueError, match="max_positions"):
            model(ids)
    else:
        assert torch.isfinite(model(ids)).all()
    bounded = POSITION_SCHEMES[position].max_length is not PositionScheme.max_length
    assert (model.max_length is None) == (not bounded)


@pytest.mark.parametrize("position,attention", VALID_PAIRS)
def test_mlm_loss_equals_cross_entropy_of_full_logits(position, attention):
    model = small_model(position, attention)
    ids = random_ids(3, 12)
    labels = torch.full_like(ids, -100)
    labels[0, 2], labels[1, 5], labels[2, 0], labels[2, 11] = 4, 9, 1, 50
    with torch.no_grad():
        expected = F.cross_entropy(model(ids).flatten(0, 1), labels.flatten(), ignore_index=-100)
        torch.testing.assert_close(model.mlm_loss(ids, labels), expected, atol=1e-5, rtol=1e-5)
        assert model.mlm_loss(ids, torch.full_like(ids, -100)).item() == 0.0


@pytest.mark.parametrize("pre_norm", [False, True])
@pytest.mark.parametrize("position,attention", VALID_PAIRS)
def test_mlm_loss_on_labelled_rows_matches_the_full_forward(position, attention, pre_norm):
    """mlm_loss runs the last layer's row-wise work at labelled positions only; the loss
    and every gradient equal those of the full forward's logits (padding included)."""
    model = small_model(position, attention, pre_norm=pre_norm)
    ids = random_ids(3, 14)
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, 9:] = False
    labels = torch.where(
        torch.rand(ids.shape, generator=torch.Generator().manual_seed(3)) < 0.3, ids, -100
    )
    labels[~mask] = -100

    def gradients(loss: torch.Tensor) -> list[torch.Tensor]:
        model.zero_grad(set_to_none=True)
        loss.backward()
        return [p.grad.clone() for p in model.parameters()]

    full_logits = model(ids, mask).flatten(0, 1)
    expected_loss = F.cross_entropy(full_logits, labels.flatten(), ignore_index=-100)
    expected = gradients(expected_loss)
    loss = model.mlm_loss(ids, labels, mask)
    torch.testing.assert_close(loss, expected_loss, atol=1e-5, rtol=1e-5)
    for got, want in zip(gradients(loss), expected, strict=True):
        torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("position,attention", INVALID_PAIRS)
def test_incompatible_pairs_are_refused_naming_valid_kernels(position, attention):
    with pytest.raises(ValueError, match="valid attention kernels.*softmax"):
        small_model(position, attention)


@pytest.mark.parametrize(
    "kwargs,pattern",
    [
        ({"position": "rotary"}, r"unknown position 'rotary'; valid choices: alibi, deberta"),
        ({"attention": "flash"}, r"unknown attention 'flash'; valid choices: linear, softmax"),
        ({"position_kwargs": {"bsae": 10}}, r"'bsae'.*valid keys: base"),
        ({"position": "nope", "position_kwargs": {"base": 10}}, r"'base'.*valid keys: none"),
        ({"attention_kwargs": {"eps": 1e-6}}, r"'eps'.*for attention 'softmax'"),
        (
            {"hidden_size": 50, "num_heads": 3},
            r"not divisible by num_heads 3.*\[1, 2, 5, 10, 25, 50\]",
        ),
        ({"hidden_size": 30, "num_heads": 2}, r"rope needs an even head size.*15"),
        ({"hidden_size": 0}, r"hidden_size must be an integer in 1\.\."),
        ({"num_layers": -1}, r"num_layers must be an integer in 1\.\."),
        ({"dropout": 1.5}, r"dropout must be in \[0, 1\)"),
        (
            {"position": "deberta", "position_kwargs": {"c2p": False, "p2c": False}},
            "use position=nope",
        ),
        ({"position": "xl", "attention": "linear"}, r"valid attention kernels for 'xl': softmax"),
        ({"position": "deberta", "attention": "linear"}, r"valid attention kernels.*softmax"),
    ],
)
def test_bad_input(kwargs, pattern):
    args = dict(
        position="rope",
        attention="softmax",
        vocab_size=50,
        hidden_size=32,
        num_layers=1,
        num_heads=2,
        intermediate_size=32,
    )
    args.update(kwargs)
    with pytest.raises(ValueError, match=pattern):
        MaskedLM(**args)


#: name -> (forward's arguments over ``ids`` [2, 8], what the ValueError must say: the
#: argument, its shape or dtype, and what is expected)
MALFORMED_INPUTS = {
    "ids of rank 1": (
        lambda ids: {"input_ids": ids[0]},
        "input_ids must be a [batch, length] tensor of token ids (torch.long or torch.int), "
        "got shape (8,), torch.int64",
    ),
    "ids of rank 3": (lambda ids: {"input_ids": ids[None]}, "got shape (1, 2, 8), torch.int64"),
    "float ids": (
        lambda ids: {"input_ids": ids.float()},
        "(torch.long or torch.int), got shape (2, 8), torch.float32",
    ),
    "a list of ids": (
        lambda ids: {"input_ids": ids.tolist()},
        "(torch.long or torch.int), got a list",
    ),
    "an id past the vocabulary": (
        lambda ids: {"input_ids": ids.clone().index_fill_(1, torch.tensor([3]), VOCAB)},
        f"input_ids holds token id {VOCAB}, outside the vocabulary: ids must be in "
        f"0..{VOCAB - 1} (model.vocab_size={VOCAB})",
    ),
    "a negative id": (
        lambda ids: {"input_ids": ids.clone().index_fill_(1, torch.tensor([0]), -1)},
        f"input_ids holds token id -1, outside the vocabulary: ids must be in 0..{VOCAB - 1}",
    ),
    "a mask of another shape": (
        lambda ids: {"input_ids": ids, "attention_mask": torch.ones(2, 7, dtype=torch.bool)},
        "attention_mask must be None or a tensor of input_ids' shape (2, 8), bool or integer "
        "(True or 1 at real tokens); got shape (2, 7), torch.bool",
    ),
    "a float mask": (
        lambda ids: {"input_ids": ids, "attention_mask": torch.ones(2, 8)},
        "attention_mask must be None or a tensor of input_ids' shape (2, 8), bool or integer "
        "(True or 1 at real tokens); got shape (2, 8), torch.float32",
    ),
    "positions of another shape": (
        lambda ids: {"input_ids": ids, "position_ids": torch.arange(8)},
        "position_ids must be None or a tensor of input_ids' shape (2, 8), integer; got shape "
        "(8,), torch.int64",
    ),
    "float positions": (
        lambda ids: {"input_ids": ids, "position_ids": torch.arange(8.0).expand(2, 8)},
        "position_ids must be None or a tensor of input_ids' shape (2, 8), integer; got shape "
        "(2, 8), torch.float32",
    ),
    "segments of another shape": (
        lambda ids: {"input_ids": ids, "segment_ids": torch.zeros(2, 7, dtype=torch.long)},
        "segment_ids must be None or a tensor of input_ids' shape (2, 8), integer; got shape "
        "(2, 7), torch.int64",
    ),
    "a negative position": (
        lambda ids: {"input_ids": ids, "position_ids": torch.arange(-1, 7).expand(2, 8)},
        "position_ids holds position -1: positions are 0 or more",
    ),
    # the documented contract (Encoder.forward; what every scheme is promised): increasing
    # and distinct along each row; every built-in scheme took these without a word
    "a repeated position": (
        lambda ids: {
            "input_ids": ids,
            "position_ids": torch.tensor([[0, 2, 4, 6, 8, 10, 12, 14], [0, 1, 2, 3, 3, 5, 6, 7]]),
        },
        "position_ids must increase along each row (distinct positions, in the tokens' order), "
        "but row 1 has position 3 at index 4 after 3 at index 3",
    ),
    "positions out of order": (
        lambda ids: {"input_ids": ids, "position_ids": torch.arange(8).flip(0).expand(2, 8)},
        "but row 0 has position 6 at index 1 after 7 at index 0",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED_INPUTS))
@pytest.mark.parametrize("call", ["forward", "encoder", "mlm_loss"])
def test_a_malformed_forward_input_is_one_value_error_naming_it(case, call):
    model = small_model("rope")
    arguments, expected = MALFORMED_INPUTS[case]
    given = arguments(random_ids(2, 8))
    run = {
        "forward": lambda: model(**given),
        "encoder": lambda: model.encoder(**given),
        "mlm_loss": lambda: model.mlm_loss(
            given.pop("input_ids"), torch.full((2, 8), -100), **given
        ),
    }[call]
    with pytest.raises(ValueError) as error:
        run()
    message = str(error.value)
    assert "\n" not in message and expected in message, message


@pytest.mark.parametrize("scheme", ["learned", "rope"])
def test_a_negative_position_is_refused_by_every_scheme(scheme):
    """learned's table at -1 was torch's IndexError; rope took it silently."""
    with pytest.raises(ValueError, match="position_ids holds position -3: positions are 0"):
        small_model(scheme)(random_ids(2, 8), position_ids=torch.arange(-3, 5).expand(2, 8))


@pytest.mark.parametrize(
    "rows",
    [torch.ones(2, 4, dtype=torch.bool), torch.ones(2, 8, dtype=torch.long), torch.ones(2, 8)],
    ids=["another shape", "integer", "float"],
)
def test_malformed_rows_are_one_value_error_naming_them(rows):
    """Encoder.forward's ``rows`` selects (bool): another shape was an IndexError, integer
    ones indexed (a matmul's shape error later), float ones torch's index error."""
    with pytest.raises(ValueError) as error:
        small_model("rope").encoder(random_ids(2, 8), rows=rows)
    message = str(error.value)
    assert "\n" not in message, message
    assert "rows must be None or a tensor of input_ids' shape (2, 8), bool" in message, message


#: name -> (labels for ids [2, 8], what the ValueError must say)
MALFORMED_LABELS = {
    "another shape": (
        lambda ids: torch.full((2, 4), -100),
        "labels must be a tensor of input_ids' shape (2, 8), torch.long or torch.int (a token "
        "id to predict, or -100 where nothing is scored); got shape (2, 4), torch.int64",
    ),
    "flattened": (lambda ids: ids.flatten(), "got shape (16,), torch.int64"),
    "float": (lambda ids: ids.float(), "got shape (2, 8), torch.float32"),
    "bool": (lambda ids: ids > 0, "got shape (2, 8), torch.bool"),
    "int16": (lambda ids: ids.short(), "got shape (2, 8), torch.int16"),
    "a list": (lambda ids: ids.tolist(), "got a list"),
    "past the vocabulary": (
        lambda ids: ids.clone().index_fill_(1, torch.tensor([2]), VOCAB),
        f"labels holds {VOCAB}: a label is a token id in 0..{VOCAB - 1} "
        f"(model.vocab_size={VOCAB}) or -100 (not scored)",
    ),
    "-1 for not scored": (
        lambda ids: ids.clone().index_fill_(1, torch.tensor([2]), -1),
        "labels holds -1: a label is a token id",
    ),
}


@pytest.mark.parametrize("case", list(MALFORMED_LABELS))
@pytest.mark.parametrize("call", ["mlm_loss", "masked_logits"])
def test_malformed_labels_are_one_value_error_naming_them(case, call):
    """Each was an IndexError or RuntimeError from inside torch (a shape mismatch at the
    rows' selection, cross_entropy's dtype or 'Target 70 is out of bounds')."""
    model = small_model("rope")
    ids = random_ids(2, 8)
    labels, expected = MALFORMED_LABELS[case]
    with pytest.raises(ValueError) as error:
        getattr(model, call)(ids, labels(ids))
    message = str(error.value)
    assert "\n" not in message and expected in message, message


def test_the_labels_check_leaves_the_loss_as_it_was():
    """int32 labels score as long ones; -100 rows are not scored."""
    model = small_model("rope")
    ids = random_ids(2, 8)
    labels = ids.clone()
    labels[:, ::2] = -100
    with torch.no_grad():
        expected = model.mlm_loss(ids, labels)
        torch.testing.assert_close(model.mlm_loss(ids, labels.int()), expected)
        logits = model(ids)[labels != -100]
        torch.testing.assert_close(F.cross_entropy(logits, labels[labels != -100]), expected)


def test_the_input_check_leaves_the_logits_as_they_were():
    """int32 ids, an integer mask and bool ids' equivalents all give the long ids' logits."""
    model = small_model("rope")
    ids = random_ids(2, 8)
    mask = torch.ones(2, 8, dtype=torch.bool)
    mask[1, -3:] = False
    with torch.no_grad():
        expected = model(ids, attention_mask=mask)
        torch.testing.assert_close(model(ids.int(), attention_mask=mask.long()), expected)
