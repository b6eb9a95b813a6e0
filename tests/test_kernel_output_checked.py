"""A kernel whose output is not ``[B, h, L, d]`` in q's dtype is one line naming it when
the model runs it (``SelfAttention.check_output``), not a traceback in the output
projection, nor a ``[B, L, h, d]`` output reshaped into the next layer without a word."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor

from roformer_lit.attention.softmax import SoftmaxAttention
from roformer_lit.errors import ConfigError
from roformer_lit.testing.models import random_ids, small_model


class Swapped(SoftmaxAttention):
    """Returns ``[B, L, h, d]``: as many numbers, another layout."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        return super().forward(q, k, v, **kwargs).transpose(1, 2)


class Double(SoftmaxAttention):
    """Returns float64 for float32 heads."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        return super().forward(q, k, v, **kwargs).double()


class Pair(SoftmaxAttention):
    """Returns the output and the weights, a tuple."""

    def forward(self, q: Tensor, k: Tensor, v: Tensor, **kwargs) -> Tensor:
        return super().forward(q, k, v, **kwargs), None


@pytest.mark.parametrize(
    ("kernel", "words"),
    [
        (Swapped, "returned shape (2, 7, 3, 16) for q, k, v of shape (2, 3, 7, 16)"),
        (Double, "returned dtype torch.float64 for q, k, v of shape (2, 3, 7, 16)"),
        (Pair, "returned tuple for q, k, v of shape (2, 3, 7, 16)"),
    ],
)
def test_a_kernel_output_of_another_shape_or_dtype_is_one_line(kernel, words):
    model = small_model("rope", kernel, num_layers=2)
    with pytest.raises(ConfigError) as info:
        model(random_ids(2, 7))  # every row, as validation and export read them
    message = str(info.value)
    assert "\n" not in message and words in message, message
    assert message.startswith(f"attention 'kit-check-{kernel.__qualname__}' returned"), message


def test_a_right_kernel_runs_under_autocast():
    model = small_model("rope", SoftmaxAttention, num_layers=2)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        model(random_ids(2, 7))
