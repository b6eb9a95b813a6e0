"""p-RoPE (Barbero et al., ICLR 2025): rope's ``unrotated_fraction`` against the paper's
formula, computed slowly in float64, and the position invariance of the unrotated pairs."""

from __future__ import annotations

import math

import pytest
import torch

from roformer_lit.errors import ConfigError
from roformer_lit.positions import POSITION_SCHEMES
from roformer_lit.positions.base import EncoderShape

HEAD = 16


def rope_scheme(**options: object):
    return POSITION_SCHEMES["rope"](EncoderShape(2 * HEAD, 2, 1, 64), **options)


def rotate(scheme, x: torch.Tensor) -> torch.Tensor:
    return scheme.layer(0).rotate(x, scheme.prepare(x.shape[-2], x.device, x.dtype))


def p_rope_oracle(x: torch.Tensor, p: float, base: float = 10000.0) -> torch.Tensor:
    """The paper's p-RoPE (its Gemma code): ``floor(p d / 2)`` pairs rotate with timescale
    ``base^(2t/d)``, the rest have an infinite timescale (angle ``m / inf = 0``); pair ``t``
    is dimensions ``(2t, 2t + 1)`` as in RoFormer. Loops over float64 Python numbers."""
    d = x.shape[-1]
    rotated = math.floor(p * d / 2 + 1e-9)
    timescale = [base ** (2 * t / d) if t < rotated else math.inf for t in range(d // 2)]
    out = x.clone().double()
    for m in range(x.shape[-2]):
        for t, scale in enumerate(timescale):
            angle = m / scale
            c, s = math.cos(angle), math.sin(angle)
            a, b = x[..., m, 2 * t].double(), x[..., m, 2 * t + 1].double()
            out[..., m, 2 * t], out[..., m, 2 * t + 1] = a * c - b * s, a * s + b * c
    return out


@pytest.mark.parametrize("unrotated", [0.0, 0.25, 0.5, 0.75, 0.3])
def test_unrotated_fraction_equals_the_papers_formula(unrotated):
    x = torch.randn(2, 2, 40, HEAD, dtype=torch.float64)
    got = rotate(rope_scheme(unrotated_fraction=unrotated), x.float()).double()
    torch.testing.assert_close(got, p_rope_oracle(x, 1 - unrotated), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("unrotated,pairs", [(0.25, 2), (0.5, 4), (0.75, 6)])
def test_unrotated_pairs_score_alike_at_every_position_and_the_rotated_do_not(unrotated, pairs):
    """``rot(q, m)[pair] . rot(k, n)[pair]`` for the lowest-frequency pairs is ``q . k``
    on them at every (m, n); each rotated pair's changes with the offset."""
    length = 24
    q, k = torch.randn(HEAD, dtype=torch.float64), torch.randn(HEAD, dtype=torch.float64)
    scheme = rope_scheme(unrotated_fraction=unrotated)
    assert scheme.unrotated_pairs == pairs
    rq = rotate(scheme, q.float().expand(1, 1, length, HEAD)).double()[0, 0]  # q at 0..L-1
    rk = rotate(scheme, k.float().expand(1, 1, length, HEAD)).double()[0, 0]
    per_pair = (rq[:, None, :] * rk[None, :, :]).unflatten(-1, (HEAD // 2, 2)).sum(-1)  # [m, n, t]
    plain = (q * k).unflatten(-1, (HEAD // 2, 2)).sum(-1)
    still = slice(HEAD // 2 - pairs, HEAD // 2)
    assert torch.allclose(per_pair[..., still], plain[still].expand_as(per_pair[..., still]))
    moving = per_pair[..., : HEAD // 2 - pairs]
    assert (moving.amax(dim=(0, 1)) - moving.amin(dim=(0, 1)) > 1e-3).all()


def test_zero_unrotated_fraction_is_todays_rope_bit_for_bit():
    x = torch.randn(2, 2, 80, HEAD)  # past max_positions: the tables grow
    assert torch.equal(rotate(rope_scheme(unrotated_fraction=0), x), rotate(rope_scheme(), x))


@pytest.mark.parametrize(
    "value,message",
    [
        (-0.1, r"unrotated_fraction.*in \[0, 1\)"),
        (1.0, r"unrotated_fraction.*in \[0, 1\)"),
        (float("nan"), r"unrotated_fraction.*in \[0, 1\)"),
        ("half", r"unrotated_fraction.*in \[0, 1\)"),
        (0.95, "rotates none"),  # 8 pairs: floor(0.05 * 8) = 0 rotate
    ],
)
def test_bad_unrotated_fraction_is_one_line(value, message):
    with pytest.raises(ConfigError, match=message) as info:
        rope_scheme(unrotated_fraction=value)
    assert "\n" not in str(info.value)
