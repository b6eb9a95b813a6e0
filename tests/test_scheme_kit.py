"""The scheme kit's checks (roformer_lit/testing) over every registered scheme and kernel.

These are the suite's property tests of the built-in schemes (shapes, padding, translation
invariance, packed documents, arbitrary positions, float32 against float64, gradients, the
reference where a class gives one): the same functions an author runs with
``check_scheme(MyScheme)``, so the kit cannot drift from what the suite checks. That the
kit fails broken schemes is tests/test_scheme_kit_fails.py.
"""

from __future__ import annotations

import dataclasses

import pytest

from roformer_lit import ATTENTION_KERNELS, POSITION_SCHEMES
from roformer_lit.attention.softmax import SoftmaxAttention
from roformer_lit.errors import ConfigError
from roformer_lit.positions.nope import NoPosition
from roformer_lit.testing import CHECKS, check_scheme, run_check, scheme_checks

CASES = [
    (position, attention, check)
    for position, cls in POSITION_SCHEMES.items()
    for check, attention in scheme_checks(cls)
]


@pytest.mark.parametrize("position,attention,check", CASES)
def test_registered_scheme_passes_the_kit(position, attention, check):
    run_check(check, POSITION_SCHEMES[position], attention)


def test_every_scheme_gets_every_check_but_the_optional_ones():
    """Each registered scheme is checked on the softmax kernel by every check but the
    ``reference`` of a class without one, so a new check reaches every scheme."""
    for position, cls in POSITION_SCHEMES.items():
        on_softmax = {check for check, attention in scheme_checks(cls) if attention == "softmax"}
        optional = set() if hasattr(cls, "reference") else {"reference"}
        assert on_softmax == set(CHECKS) - optional, position


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda nope: check_scheme(dict), TypeError, "PositionScheme subclass"),
        (
            lambda nope: check_scheme(nope, checks=["shape"]),
            ValueError,
            "unknown check 'shape'; valid: shapes",
        ),
        (lambda nope: check_scheme(nope, checks=[]), ValueError, "nothing would be checked"),
        (
            lambda nope: check_scheme(nope, attention="sofmax"),
            ValueError,
            "unknown attention 'sofmax'; valid choices: linear, softmax",
        ),
        (lambda nope: run_check("paddng", nope), ValueError, "unknown check 'paddng'"),
        (
            lambda nope: run_check("padding", nope, "sofmax"),
            ValueError,
            "unknown attention 'sofmax'",
        ),
    ],
)
def test_check_scheme_refuses_what_it_cannot_check(call, error, match):
    """A name the kit does not know is one clear error, never a bare KeyError."""
    with pytest.raises(error, match=match):
        call(POSITION_SCHEMES["nope"])


def test_a_check_named_alone_is_one_check(monkeypatch):
    """``checks="padding"`` runs the padding check, not seven one-letter checks."""
    ran = []
    monkeypatch.setattr("roformer_lit.testing.run_check", lambda name, *a, **k: ran.append(name))
    check_scheme(POSITION_SCHEMES["nope"], attention="softmax", checks="padding")
    assert ran == ["padding"]


def test_an_unregistered_class_is_checked_and_leaves_the_registry_as_it_was():
    before = dict(POSITION_SCHEMES)

    class Unregistered(POSITION_SCHEMES["alibi"]):
        """ALiBi under a class no registry holds."""

    check_scheme(Unregistered, attention="softmax", checks=["padding", "translation"])
    assert POSITION_SCHEMES == before


class _Quads(NoPosition):
    """Needs a head size that is a multiple of 4, declared where the rule table reads a
    scheme's claims (``capabilities``); its class attribute keeps the default 1."""

    def __init__(self, shape):
        super().__init__(shape)
        head_size = shape.hidden_size // shape.num_heads
        if head_size % 4:
            raise ConfigError(f"quads needs a head size that is a multiple of 4, got {head_size}")

    @classmethod
    def capabilities(cls, options=None):
        return dataclasses.replace(super().capabilities(options), head_size_multiple=4)


class _DeclaresNoDocuments(SoftmaxAttention):
    """Softmax declaring, in ``capabilities``, that it does not keep packed documents
    apart (its class attribute ``supports_segments`` is softmax's, True)."""

    @classmethod
    def capabilities(cls, options=None):
        return dataclasses.replace(super().capabilities(options), segments=False)


def test_the_kit_reads_the_head_size_a_scheme_declares():
    """The kit read ``head_size_multiple`` off the class while the rule table reads what a
    scheme declares (``capabilities``): a scheme declaring it there was built at a head
    size it refuses (6, in the shapes check)."""
    check_scheme(_Quads, attention="softmax", checks=["shapes"])


def test_the_kit_reads_the_documents_a_kernel_declares():
    """The kit read ``supports_segments`` off the kernel's class: the segments check applied
    to a kernel declaring (``capabilities``) that it does not keep documents apart."""
    ATTENTION_KERNELS.register("declares_no_documents", _DeclaresNoDocuments)
    try:
        checks = {c for c, _ in scheme_checks(NoPosition, "declares_no_documents")}
    finally:
        ATTENTION_KERNELS.unregister("declares_no_documents")
    assert "segments" in {c for c, _ in scheme_checks(NoPosition, "softmax")}  # the control
    assert "segments" not in checks
