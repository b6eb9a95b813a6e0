"""Each scheme and kernel against a slow oracle written from its paper's formula (stated in each
scheme's module docstring)."""

from __future__ import annotations

import math

import pytest
import torch
from model_factory import small_model

from roformer_lit.attention.linear import LinearAttention
from roformer_lit.attention.softmax import SoftmaxAttention
from roformer_lit.positions.base import QKVWeights
from roformer_lit.positions.rope import apply_rope, rope_tables
from roformer_lit.positions.sinusoidal import sinusoidal_table
from roformer_lit.score_bias import ScoreBias, lookup_of_dense

ROPE_TOL = {"atol": 1e-6, "rtol": 1e-6}  # the cos/sin tables are float32 by design


@pytest.fixture(autouse=True)
def double_precision():
    """Oracles in double, so differences are the code's, not rounding's."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def rotation_matrix(m: int, d: int, base: float = 10000.0) -> torch.Tensor:
    """The block-diagonal ``[d, d]`` RoPE matrix R_m (the seed's slow first version)."""
    R = torch.zeros(d, d)
    for t in range(d // 2):
        angle = m * base ** (-2 * t / d)
        c, s = math.cos(angle), math.sin(angle)
        R[2 * t, 2 * t], R[2 * t, 2 * t + 1] = c, -s
        R[2 * t + 1, 2 * t], R[2 * t + 1, 2 * t + 1] = s, c
    return R


def rope_by_matrix(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    """Rotate ``x[..., L, d]`` position by position with explicit matrices."""
    length, d = x.shape[-2:]
    return torch.stack(
        [x[..., m, :] @ rotation_matrix(m, d, base).T for m in range(length)], dim=-2
    )


def rope(x: torch.Tensor, base: float = 10000.0) -> torch.Tensor:
    cos, signed_sin = rope_tables(x.shape[-2], x.shape[-1], base)
    return apply_rope(x, cos.to(x.dtype), signed_sin.to(x.dtype))


@pytest.mark.parametrize("d,base", [(8, 10000.0), (16, 10000.0), (6, 500.0)])
def test_rope_elementwise_equals_rotation_matrices(d, base):
    x = torch.randn(2, 3, 9, d)
    torch.testing.assert_close(rope(x, base), rope_by_matrix(x, base), **ROPE_TOL)


@pytest.mark.parametrize("d", [4, 16])
def test_rope_dot_product_depends_only_on_offset(d):
    q, k = torch.randn(d), torch.randn(d)

    def score(m, n):
        return (q @ rotation_matrix(m, d).T) @ (k @ rotation_matrix(n, d).T)

    x = torch.stack([q, k])[None].expand(40, 2, d)  # the same q, k at every position
    rotated = rope(x.transpose(0, 1))  # [2, 40, d]: q and k rotated at positions 0..39
    for m, n, shift in [(3, 7, 11), (20, 2, 17), (5, 5, 30)]:
        base = rotated[0, m] @ rotated[1, n]
        torch.testing.assert_close(base, rotated[0, m + shift] @ rotated[1, n + shift], **ROPE_TOL)
        torch.testing.assert_close(base, score(m, n), **ROPE_TOL)
    # it does depend on the offset itself
    assert abs(rotated[0, 3] @ rotated[1, 7] - rotated[0, 3] @ rotated[1, 9]) > 1e-6


def test_sinusoidal_table_is_interleaved_vaswani():
    length, dim = 12, 10
    table = sinusoidal_table(length, dim)
    for pos in range(length):
        for t in range(dim // 2):
            angle = pos / 10000 ** (2 * t / dim)
            assert table[pos, 2 * t].item() == pytest.approx(math.sin(angle), abs=1e-6)
            assert table[pos, 2 * t + 1].item() == pytest.approx(math.cos(angle), abs=1e-6)


def heads(b=2, h=3, length=7, d=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(b, h, length, d, generator=g) for _ in range(3)]


@pytest.mark.parametrize("backend", ["sdpa", "flex"])
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("with_mask", [False, True])
@pytest.mark.parametrize("with_rope", [False, True])
def test_softmax_kernel_equals_explicit_softmax(with_bias, with_mask, with_rope, backend):
    """Both softmax paths (SDPA; FlexAttention reading the dense bias) equal the formula."""
    q, k, v = heads(d=16)  # FlexAttention needs a head size of at least 16
    scale = 0.3
    bias = torch.randn(2, 3, 7, 7) if with_bias else None
    mask = torch.tensor([[True] * 7, [True] * 4 + [False] * 3]) if with_mask else None
    out = SoftmaxAttention(backend=backend)(
        q,
        k,
        v,
        scale=scale,
        bias=None if bias is None else ScoreBias(bias, scale, lookup=lookup_of_dense(bias)),
        key_padding_mask=mask,
        rotate=rope if with_rope else None,
    )
    qr, kr = (rope_by_matrix(q), rope_by_matrix(k)) if with_rope else (q, k)
    scores = qr @ kr.transpose(-1, -2) * scale
    if bias is not None:
        scores = scores + bias
    if mask is not None:
        scores = scores.masked_fill(~mask[:, None, None, :], -torch.inf)
    torch.testing.assert_close(out, torch.softmax(scores, -1) @ v, **ROPE_TOL)


def eq19_oracle(q, k, v, mask=None, rotate=False):
    """out_i = sum_j (R_i phi(q_i)).(R_j phi(k_j)) v_j / sum_j phi(q_i).phi(k_j), by loops."""
    phi = lambda x: torch.nn.functional.elu(x) + 1  # noqa: E731
    b, h, length, d = q.shape
    out = torch.zeros_like(v)
    for bi in range(b):
        for hi in range(h):
            for i in range(length):
                num, den = torch.zeros(d), 0.0
                for j in range(length):
                    if mask is not None and not mask[bi, j]:
                        continue
                    pq, pk = phi(q[bi, hi, i]), phi(k[bi, hi, j])
                    if rotate:
                        w = (rotation_matrix(i, d) @ pq) @ (rotation_matrix(j, d) @ pk)
                    else:
                        w = pq @ pk
                    num = num + w * v[bi, hi, j]
                    den = den + pq @ pk
                out[bi, hi, i] = num / den
    return out


@pytest.mark.parametrize("with_mask", [False, True])
@pytest.mark.parametrize("with_rope", [False, True])
def test_linear_kernel_equals_eq19_quadratic_oracle(with_mask, with_rope):
    q, k, v = heads(length=6, d=4)
    mask = torch.tensor([[True] * 6, [False] * 2 + [True] * 4]) if with_mask else None
    kernel = LinearAttention(eps=1e-12)
    out = kernel(q, k, v, scale=1.0, key_padding_mask=mask, rotate=rope if with_rope else None)
    torch.testing.assert_close(out, eq19_oracle(q, k, v, mask, with_rope), **ROPE_TOL)


def test_linear_kernel_rotation_is_not_applied_before_the_feature_map():
    """performer-style rotation before phi is a different model: eq. 19 must differ from it."""
    q, k, v = heads(length=6, d=4)
    ours = LinearAttention()(q, k, v, scale=1.0, rotate=rope)
    before_phi = LinearAttention()(rope(q), rope(k), v, scale=1.0)
    assert (ours - before_phi).abs().max() > 1e-3


def xl_score_oracle(q, k, u, v_bias, w_r, length, hidden):
    """A_ij = [(q_i + u).k_j + (q_i + v).(W_r R_{i-j})] / sqrt(d), R_p = [sin(p f), cos(p f)]."""
    b, h, _, d = q.shape
    inv_freq = [1 / 10000 ** (2 * t / hidden) for t in range(hidden // 2)]
    scores = torch.zeros(b, h, length, length)
    for i in range(length):
        for j in range(length):
            p = i - j
            R = torch.tensor(
                [math.sin(p * f) for f in inv_freq] + [math.cos(p * f) for f in inv_freq]
            )
            r = (w_r @ R).view(h, d)
            for hi in range(h):
                content = ((q[:, hi, i] + u[hi]) * k[:, hi, j]).sum(-1)
                position = ((q[:, hi, i] + v_bias[hi]) * r[hi]).sum(-1)
                scores[:, hi, i, j] = (content + position) / math.sqrt(d)
    return scores


@pytest.mark.parametrize("block_rows", [256, 4])
@pytest.mark.parametrize("per_layer", [True, False])
def test_xl_score_equals_formula(per_layer, block_rows, monkeypatch):
    monkeypatch.setattr("roformer_lit.positions.xl.BLOCK_ROWS", block_rows)
    model = small_model("xl", hidden_size=24, num_heads=3, position_kwargs={"per_layer": per_layer})
    model.double()
    scheme = model.encoder.position
    length = 10  # with 4-row blocks: two full blocks and a partial one
    ctx = scheme.prepare(length, torch.device("cpu"), torch.float64)
    q, k, _ = heads(b=2, h=3, length=length, d=8)
    layer = scheme.layer(1)
    assert (layer is scheme.layer(0)) == (not per_layer)
    got = layer.score(q, k, ctx, model.encoder.layers[1].attention)
    full = q @ k.transpose(-1, -2) * got.scale + got.bias
    expected = xl_score_oracle(q, k, layer.u[:, 0], layer.v[:, 0], layer.r_proj.weight, length, 24)
    torch.testing.assert_close(full, expected)


def deberta_delta(i: int, j: int, buckets: int, max_position: int) -> int:
    """delta(i, j) from the DeBERTa paper (the deberta module docstring), scalar by scalar."""
    rel = i - j
    mid = buckets // 2
    if abs(rel) <= mid:
        bucket = rel
    else:
        log_pos = (
            math.ceil(math.log(abs(rel) / mid) / math.log((max_position - 1) / mid) * (mid - 1))
            + mid
        )
        bucket = int(math.copysign(log_pos, rel))
    return min(max(bucket + buckets, 0), 2 * buckets - 1)


@pytest.mark.parametrize("c2p,p2c", [(True, True), (True, False), (False, True)])
def test_deberta_score_equals_formula(c2p, p2c):
    buckets, max_rel, length = 8, 32, 40  # long enough for log buckets and clamping
    model = small_model(
        "deberta",
        hidden_size=24,
        num_heads=3,
        max_positions=64,
        position_kwargs={
            "position_buckets": buckets,
            "max_relative_positions": max_rel,
            "c2p": c2p,
            "p2c": p2c,
        },
    )
    model.double()
    scheme = model.encoder.position
    attn = model.encoder.layers[0].attention
    ctx = scheme.prepare(length, torch.device("cpu"), torch.float64)
    q, k, _ = heads(b=1, h=3, length=length, d=8)
    weights = QKVWeights(attn.qkv.weight, attn.qkv.bias, attn.num_heads)
    got = scheme.layer(0).score(q, k, ctx, weights)
    full = q @ k.transpose(-1, -2) * got.scale + got.bias

    table = torch.nn.functional.layer_norm(
        scheme.rel_embeddings.weight,
        (24,),
        scheme.rel_norm.weight,
        scheme.rel_norm.bias,
        scheme.rel_norm.eps,
    )
    w, bias = attn.qkv.weight, attn.qkv.bias
    Qr = (table @ w[:24].T + bias[:24]).view(-1, 3, 8)
    Kr = (table @ w[24:48].T + bias[24:48]).view(-1, 3, 8)
    d = 8
    n_terms = int(c2p) + int(p2c)
    expected = torch.zeros_like(full)
    for i in range(length):
        for j in range(length):
            delta = deberta_delta(i, j, buckets, max_rel)
            for hi in range(3):
                s = q[0, hi, i] @ k[0, hi, j]
                if c2p:
                    s = s + q[0, hi, i] @ Kr[delta, hi]
                if p2c:
                    s = s + k[0, hi, j] @ Qr[delta, hi]
                expected[0, hi, i, j] = s / math.sqrt(d * (1 + n_terms))
    torch.testing.assert_close(full, expected)


@pytest.mark.parametrize("scale_embeddings", [True, False])
def test_sinusoidal_embed_is_vaswani(scale_embeddings):
    """x_pos = sqrt(H) E[token] + PE[pos] (Vaswani et al.), or E + PE when switched off."""
    from roformer_lit.positions import POSITION_SCHEMES, EncoderShape

    hidden = 12
    scheme = POSITION_SCHEMES["sinusoidal"](
        EncoderShape(hidden, 2, 1, 8), scale_embeddings=scale_embeddings
    )
    x = torch.randn(2, 20, hidden)  # longer than max_positions: the table grows
    factor = math.sqrt(hidden) if scale_embeddings else 1.0
    expected = torch.zeros_like(x)
    for pos in range(20):
        for t in range(hidden // 2):
            angle = pos / 10000 ** (2 * t / hidden)
            expected[:, pos, 2 * t] = factor * x[:, pos, 2 * t] + math.sin(angle)
            expected[:, pos, 2 * t + 1] = factor * x[:, pos, 2 * t + 1] + math.cos(angle)
    torch.testing.assert_close(scheme.embed(x), expected, **ROPE_TOL)


def test_xl_blocked_position_term_equals_one_block_in_float32(monkeypatch):
    """The optimised (blocked) path against the unblocked one, whole model, float32."""
    torch.set_default_dtype(torch.float32)
    model = small_model("xl", hidden_size=24, num_heads=3)
    ids = torch.randint(1, 97, (2, 37), generator=torch.Generator().manual_seed(0))
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, 30:] = False
    with torch.no_grad():
        monkeypatch.setattr("roformer_lit.positions.xl.BLOCK_ROWS", 256)
        one_block = model(ids, mask)
        monkeypatch.setattr("roformer_lit.positions.xl.BLOCK_ROWS", 8)  # 4 full + 1 partial
        blocked = model(ids, mask)
    torch.testing.assert_close(blocked, one_block, atol=1e-5, rtol=1e-5)
