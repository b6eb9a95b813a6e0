"""The kernel kit's pytest option, run as an author runs it: pytest in a fresh process, in a
directory of its own, with ``-p roformer_lit.testing.pytest_plugin --kernel-kit``."""

from __future__ import annotations

from test_scheme_kit_plugin import pytest_in

from roformer_lit import ATTENTION_KERNELS
from roformer_lit.testing import kernel_checks

#: A conftest that registers a kernel attending to padded keys.
LEAKY_CONFTEST = '''
from roformer_lit.attention import ATTENTION_KERNELS
from roformer_lit.attention.softmax import SoftmaxAttention


class Leaky(SoftmaxAttention):
    """Drops the key-padding mask."""

    def forward(self, q, k, v, **kwargs):
        return super().forward(q, k, v, **{**kwargs, "key_padding_mask": None})


ATTENTION_KERNELS.register("leaky", Leaky)
'''


def test_one_test_per_registered_kernel_and_check(tmp_path):
    listed = pytest_in(tmp_path, "--kernel-kit", "--collect-only")
    items = [line for line in listed.stdout.splitlines() if "kernel-kit[" in line]
    expected = [
        f"kernel-kit[{name}-{check}]"
        for name, cls in ATTENTION_KERNELS.items()
        for check in kernel_checks(cls)
    ]
    assert [item.split("::")[-1] for item in items] == expected


def test_a_failing_kernel_check_is_reported_by_name_and_an_unknown_kernel_refused(tmp_path):
    (tmp_path / "conftest.py").write_text(LEAKY_CONFTEST, encoding="utf-8")
    run = pytest_in(tmp_path, "--kernel-kit=leaky,linear", "-k", "padding or shapes")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 failed, 3 passed" in run.stdout, run.stdout
    assert (
        "padding check failed for kernel leaky (options {}): AssertionError: padded" in run.stdout
    )
    refused = pytest_in(tmp_path, "--kernel-kit=sofmax")
    assert refused.returncode != 0
    assert "--kernel-kit: unknown kernel(s) sofmax; valid choices: leaky, linear" in refused.stderr
