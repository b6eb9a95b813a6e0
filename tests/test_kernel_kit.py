"""The kernel kit's checks (roformer_lit/testing/kernel_checks.py) over every registered
attention kernel.

These are the suite's property tests of the built-in kernels (shapes, determinism, batch
rows, padding, packed documents, windows, score-bias forms, rotation, dropout, the
model's refusals of what a kernel does not claim, float32 against float64, gradients, the
kernel's float64 reference): the same functions an author runs with
``check_kernel(MyKernel)``, parametrised over the registry, so a kernel registered (or
installed as an entry point) is checked the moment it is. Softmax runs again under options
that send these short rows down its long-row paths (banded windows, blocks of queries
reading the bias's compact forms), SDPA alone, and FlexAttention's forward on the CPU. That
the kit fails broken kernels is tests/test_kernel_kit_fails.py.
"""

from __future__ import annotations

import pytest

from roformer_lit import ATTENTION_KERNELS, POSITION_SCHEMES
from roformer_lit.attention.softmax import SoftmaxAttention
from roformer_lit.errors import ConfigError
from roformer_lit.testing import (
    KERNEL_CHECKS,
    check_kernel,
    check_scheme,
    kernel_checks,
    run_kernel_check,
)

CASES = [
    (kernel, check) for kernel, cls in ATTENTION_KERNELS.items() for check in kernel_checks(cls)
]

#: Softmax options under which the kit's short rows take other paths of the kernel.
SOFTMAX_OPTIONS = {
    "long-row paths": {"window_block": 4, "bias_block": 4, "bias_block_from": 8},
    "sdpa": {"backend": "sdpa"},
    "flex": {"backend": "flex"},
}
SOFTMAX_CASES = [
    pytest.param(options, check, id=f"{label}-{check}")
    for label, options in SOFTMAX_OPTIONS.items()
    for check in kernel_checks(SoftmaxAttention, **options)
]


@pytest.mark.parametrize("kernel,check", CASES)
def test_registered_kernel_passes_the_kit(kernel, check):
    run_kernel_check(check, ATTENTION_KERNELS[kernel])


@pytest.mark.parametrize("options,check", SOFTMAX_CASES)
def test_softmax_passes_the_kit_on_its_other_paths(options, check):
    run_kernel_check(check, SoftmaxAttention, **options)


def test_each_kernel_gets_the_checks_its_claims_call_for():
    """Every check but the claim-bound ones reaches every kernel; softmax claims all."""
    claim_bound = {"segments", "window", "bias", "dropout", "gradients", "reference"}
    for name, cls in ATTENTION_KERNELS.items():
        assert set(KERNEL_CHECKS) - claim_bound <= set(kernel_checks(cls)), name
    assert kernel_checks(ATTENTION_KERNELS["softmax"]) == list(KERNEL_CHECKS)
    linear = set(kernel_checks(ATTENTION_KERNELS["linear"]))
    assert linear.isdisjoint({"segments", "window", "bias", "dropout"})
    assert "reference" in linear  # the built-ins give their formula
    assert "gradients" not in kernel_checks(SoftmaxAttention, backend="flex")  # CUDA only


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: check_kernel(dict), TypeError, "AttentionKernel subclass"),
        (
            lambda: check_kernel(SoftmaxAttention, checks=["shape"]),
            ValueError,
            "unknown check 'shape'; valid: shapes",
        ),
        (lambda: check_kernel(SoftmaxAttention, checks=[]), ValueError, "nothing would be"),
        (lambda: run_kernel_check("paddng", SoftmaxAttention), ValueError, "unknown check"),
        (
            lambda: check_kernel(SoftmaxAttention, backend="fast"),
            ConfigError,
            "model.attention_kwargs.backend='fast' for attention 'softmax' has the wrong type: "
            "expected one of 'auto', 'sdpa', 'flex'",
        ),
        (
            lambda: check_kernel(SoftmaxAttention, window_block=0),
            ConfigError,
            "model.attention_kwargs.window_block: softmax attention window_block",
        ),
        (
            lambda: check_kernel(ATTENTION_KERNELS["linear"], eps=-1.0),
            ConfigError,
            "model.attention_kwargs.eps: linear attention eps",
        ),
        (
            lambda: check_kernel(SoftmaxAttention, blok=4),
            ConfigError,
            "unknown attention_kwargs key",
        ),
        (
            lambda: check_scheme(POSITION_SCHEMES["rope"], base=0.5),
            ConfigError,
            "model.position_kwargs.base: rope base must be > 1",
        ),
    ],
)
def test_the_kits_refuse_what_they_cannot_check_in_one_line(call, error, match):
    """An unknown check is a ValueError; options a run would refuse are refused by the
    same checks, one ConfigError line, before any check runs (both kits)."""
    with pytest.raises(error, match=match) as raised:
        call()
    assert "\n" not in str(raised.value)


def test_a_check_named_alone_is_one_check(monkeypatch):
    ran = []
    monkeypatch.setattr(
        "roformer_lit.testing.run_kernel_check", lambda name, *a, **k: ran.append(name)
    )
    check_kernel(SoftmaxAttention, checks="padding")
    assert ran == ["padding"]


def test_an_unregistered_class_is_checked_and_leaves_the_registry_as_it_was():
    before = dict(ATTENTION_KERNELS)

    class Unregistered(SoftmaxAttention):
        """Softmax under a class no registry holds."""

    check_kernel(Unregistered, checks=["padding", "refusals"])
    assert dict(ATTENTION_KERNELS) == before
