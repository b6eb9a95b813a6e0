"""Linear attention (Katharopoulos et al. 2020) with ``phi(x) = elu(x) + 1``; O(L d^2).

    out_i = sum_j (R_i phi(q_i)) . (R_j phi(k_j)) v_j  /  sum_j phi(q_i) . phi(k_j)

``R`` is the scheme's rotation, if any (RoFormer eq. 19): applied after the feature map
and in the numerator only, so the denominator stays positive. Without a rotation this is
plain linear attention. Padded keys get ``phi(k_j) = 0``. The score scale is unused.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from roformer_lit.attention.base import AttentionKernel, Rotation
from roformer_lit.score_bias import ScoreBias
from roformer_lit.validation import check, finite_positive_float


class LinearAttention(AttentionKernel):
    """Kernelised attention; cannot take a score bias (it never forms the score matrix)."""

    supports_score_bias = False
    supports_dropout = False  # no attention matrix: nothing to drop out
    rotates_inputs = False  # it rotates the feature maps, in the numerator only

    def __init__(self, *, eps: float = 1e-6) -> None:
        super().__init__()
        check("linear attention eps", eps, finite_positive_float, option="eps")
        self.eps = eps

    def forward(
        self,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        *,
        scale: float,
        bias: ScoreBias | None = None,
        key_padding_mask: Tensor | None = None,
        rotate: Rotation | None = None,
        dropout_p: float = 0.0,
        segment_ids: Tensor | None = None,
        window: int | None = None,
    ) -> Tensor:
        if bias is not None and bias.adds_bias:
            raise ValueError("linear attention cannot add a score bias")
        if window is not None:
            raise ValueError("linear attention cannot restrict to a window")
        # its sums run over the whole block; the pre-launch check refuses document_mask here
        assert segment_ids is None, "attention 'linear' cannot keep documents apart"
        phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
        if key_padding_mask is not None:
            phi_k = phi_k * key_padding_mask[:, None, :, None].to(phi_k.dtype)
        denominator = phi_q @ phi_k.sum(dim=-2, keepdim=True).transpose(-1, -2)  # [B, h, L, 1]
        if rotate is not None:
            phi_q, phi_k = rotate(phi_q), rotate(phi_k)
        numerator = phi_q @ (phi_k.transpose(-1, -2) @ v)  # [B, h, L, d]
        return numerator / (denominator + self.eps)

    @staticmethod
    def reference(
        kernel: LinearAttention,
        q: Tensor,
        k: Tensor,
        v: Tensor,
        scale: float,
        *,
        bias: Tensor | None = None,
        key_padding_mask: Tensor | None = None,
        rotate: Rotation | None = None,
        segment_ids: Tensor | None = None,
        window: int | None = None,
    ) -> Tensor:
        """The module's formula pair by pair, in float64 (the kernel kit's oracle):
        ``s_ij = (R_i phi(q_i)) . (R_j phi(k_j))`` and ``n_ij = phi(q_i) . phi(k_j)`` over
        the real keys, ``out_i = sum_j s_ij v_j / (sum_j n_ij + eps)``: ``O(L^2)``, where the
        kernel sums the keys first (``O(L d^2)``)."""
        q, k, v = q.double(), k.double(), v.double()
        phi_q, phi_k = F.elu(q) + 1, F.elu(k) + 1
        real = torch.ones(q.shape[0], q.shape[-2], dtype=torch.float64, device=q.device)
        if key_padding_mask is not None:
            real = key_padding_mask.to(torch.float64)
        real = real[:, None, None, :]  # [B, 1, 1, L]: over the keys
        plain = phi_q @ phi_k.transpose(-1, -2)
        turned = plain if rotate is None else rotate(phi_q) @ rotate(phi_k).transpose(-1, -2)
        numerator = (turned * real) @ v
        denominator = (plain * real).sum(dim=-1, keepdim=True)
        return numerator / (denominator + kernel.eps)
