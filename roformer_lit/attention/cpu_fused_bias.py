"""Softmax attention with a float score bias on PyTorch's fused CPU kernel, gradient included.

    out = softmax(q k^T * scale + mask) v,     lse_i = log sum_j exp(q_i k_j * scale + mask_ij)

``mask`` is the scheme's bias with ``-inf`` where a key may not be read. SDPA on a CPU runs
its fused (flash) kernel for a float mask only when the mask needs no gradient (fixed
ALiBi); a learned bias (T5, KERPLE, FIRE, XL, DeBERTa) sends it to the unfused math kernel,
which stores the ``[B, h, L, L]`` probabilities. Here the forward is the fused kernel's
(``_scaled_dot_product_flash_attention_for_cpu``: only ``out`` and ``lse`` are kept); a
fixed mask takes its backward too, and a learned one a backward that also gives the mask's
gradient, one head and a chunk of queries at a time from the kept ``lse``:

    P = exp(q k^T * scale + mask - lse),   dP = dout v^T,   D_i = sum_d dout_id out_id
    dS = P (dP - D),   dq = dS k * scale,   dk = dS^T q * scale,   dv = P^T dout
    d mask = dS,       summed over the dimensions the mask broadcasts

Exact up to float rounding: the same function as
``F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)``.

Speed on a CPU needs subnormal floats flushed to zero
(:mod:`roformer_lit.training.denormals`): a bias of ``-m |i - j|`` makes many probabilities
subnormal, and every product with one then takes a slow microcode path (docs/performance.md,
"Bias schemes on a CPU", has the step times with them kept).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

#: The dtypes the fused CPU kernel takes.
FUSED_DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)


def fused_bias_available(q: Tensor, dropout_p: float) -> bool:
    """True where the fused kernel applies: a CPU tensor of a dtype it takes, no dropout
    (it has none), no CPU autocast (which would hand it mixed dtypes), and not while
    ``torch.compile`` traces (the compiled graph keeps SDPA, which inductor lowers itself;
    compiling does not pay on a CPU here, see docs/performance.md)."""
    return (
        q.device.type == "cpu"
        and q.dtype in FUSED_DTYPES
        and dropout_p == 0
        and not torch.is_autocast_enabled("cpu")
        and not torch.compiler.is_compiling()
    )


#: Queries per chunk of the backward: one head's ``[B, 256, L]`` probabilities and their
#: gradient stay small enough to be reused from cache (on the 2-core CPU at 2,048 tokens,
#: chunks of 256 rows were faster than whole heads and than chunks of 128 or 512).
BACKWARD_ROWS = 256


class _FusedAttentionWithBias(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q: Tensor, k: Tensor, v: Tensor, mask: Tensor, scale: float) -> Tensor:
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            q, k, v, 0.0, False, attn_mask=mask, scale=scale
        )
        ctx.save_for_backward(q, k, v, mask, out, lse)
        ctx.scale = scale
        return out

    @staticmethod
    def backward(ctx, dout: Tensor) -> tuple[Tensor | None, ...]:
        q, k, v, mask, out, lse = ctx.saved_tensors
        dout = dout.contiguous()
        if not ctx.needs_input_grad[3]:  # a fixed bias: the fused kernel's own backward
            dq, dk, dv = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
                dout, q, k, v, out, lse, 0.0, False, attn_mask=mask, scale=ctx.scale
            )
            return dq, dk, dv, None, None
        return (*_backward_with_mask(q, k, v, mask, out, lse, dout, ctx.scale), None)


def _backward_with_mask(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor,
    out: Tensor,
    lse: Tensor,
    dout: Tensor,
    scale: float,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """``dq, dk, dv`` and the mask's gradient, one head and ``BACKWARD_ROWS`` queries at a
    time: ``P`` from ``lse``, then ``dv += P^T dout``, ``dS = P (dP - D)``,
    ``dq = dS k * scale``, ``dk += dS^T q * scale``, ``dmask = dS`` summed to the mask's
    shape. The transient is one chunk's ``[B, rows, L]``, twice."""
    batch, heads, length, _ = q.shape
    dtype = q.dtype
    scaled_q = q * scale
    delta = (dout * out).sum(-1, keepdim=True)  # D: [B, h, L, 1]
    lse = lse.to(dtype).unsqueeze(-1)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    per_row = mask.shape[2] > 1
    once = per_row and mask.shape[1] == heads  # each entry of dmask is written exactly once
    dmask = (torch.empty if once else torch.zeros)(mask.shape, dtype=dtype)
    for h in range(heads):
        mask_h, dmask_h = (m[:, h if mask.shape[1] > 1 else 0] for m in (mask, dmask))
        k_h, v_h, q_h, dout_h = k[:, h], v[:, h], scaled_q[:, h], dout[:, h]
        k_t, v_t = k_h.transpose(1, 2), v_h.transpose(1, 2)
        dk_h = dv_h = None  # the first chunk's products, then accumulated (contiguous)
        for start in range(0, length, BACKWARD_ROWS):
            rows = slice(start, min(start + BACKWARD_ROWS, length))
            probs = torch.matmul(q_h[:, rows], k_t)
            probs.add_(mask_h[:, rows] if per_row else mask_h)
            probs.sub_(lse[:, h, rows]).exp_()
            # dS written straight into dmask where these rows of it are one block
            direct = once and mask.shape[0] == batch and dmask_h[:, rows].is_contiguous()
            dscore = torch.matmul(dout_h[:, rows], v_t, out=dmask_h[:, rows] if direct else None)
            dscore.sub_(delta[:, h, rows]).mul_(probs)
            if dv_h is None or dk_h is None:
                dv_h = torch.bmm(probs.transpose(1, 2), dout_h[:, rows])
                dk_h = torch.bmm(dscore.transpose(1, 2), q_h[:, rows])
            else:
                dv_h.baddbmm_(probs.transpose(1, 2), dout_h[:, rows])
                dk_h.baddbmm_(dscore.transpose(1, 2), q_h[:, rows])
            torch.bmm(dscore, k_h, out=dq[:, h, rows])
            if direct:
                continue
            if once and mask.shape[0] == 1:
                torch.sum(dscore, 0, keepdim=True, out=dmask_h[:, rows])
            elif once:
                dmask_h[:, rows].copy_(dscore)
            else:
                if mask.shape[0] == 1:
                    dscore = dscore.sum(0, keepdim=True)
                if per_row:
                    dmask_h[:, rows] += dscore
                else:
                    dmask_h += dscore.sum(1, keepdim=True)
        dk[:, h], dv[:, h] = dk_h, dv_h
    return dq.mul_(scale), dk, dv, dmask


class _FusedAttentionRebuildingMask(torch.autograd.Function):
    """The fused kernel for a mask rebuilt in backward by ``rebuild()`` instead of kept
    (blocks of a bias on long rows: memory stays linear in the length without recomputing
    the attention's forward). A mask that needs no gradient takes the fused kernel's own
    backward; one read from ``reads`` (and from no other tensor that needs a gradient:
    parameters, or tensors computed before) is rebuilt with its graph, and ``dmask`` goes
    back through it to them, whence autograd carries it on."""

    @staticmethod
    def forward(
        ctx, q: Tensor, k: Tensor, v: Tensor, rebuild, scale: float, *reads: Tensor
    ) -> Tensor:  # noqa: ANN001
        with torch.no_grad():
            mask = rebuild().to(q.dtype)
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
            q, k, v, 0.0, False, attn_mask=mask, scale=scale
        )
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.rebuild, ctx.scale, ctx.reads = rebuild, scale, reads
        return out

    @staticmethod
    def backward(ctx, dout: Tensor) -> tuple[Tensor | None, ...]:
        q, k, v, out, lse = ctx.saved_tensors
        dout = dout.contiguous()
        wanted = [t for t, need in zip(ctx.reads, ctx.needs_input_grad[5:], strict=True) if need]
        if not wanted:
            with torch.no_grad():
                mask = ctx.rebuild().to(q.dtype)
            dq, dk, dv = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
                dout, q, k, v, out, lse, 0.0, False, attn_mask=mask, scale=ctx.scale
            )
            return dq, dk, dv, None, None, *(None for _ in ctx.reads)
        with torch.enable_grad():
            mask = ctx.rebuild().to(q.dtype)
        dq, dk, dv, dmask = _backward_with_mask(q, k, v, mask.detach(), out, lse, dout, ctx.scale)
        got = iter(torch.autograd.grad(mask, wanted, dmask, allow_unused=True))
        grads = [next(got) if need else None for need in ctx.needs_input_grad[5:]]
        return dq, dk, dv, None, None, *grads


def fused_attention_rebuilding_mask(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    rebuild: Callable[[], Tensor],
    scale: float,
    reads: tuple[Tensor, ...] = (),
) -> Tensor:
    """``softmax(q k^T * scale + rebuild()) v`` on the fused CPU kernel, the mask never
    kept: ``rebuild`` is called in forward (under ``no_grad``) and again in backward. A
    mask that needs a gradient must be a function of ``reads`` alone among the tensors
    that need one: its gradient reaches them through the rebuilt mask."""
    distinct = tuple({id(t): t for t in reads}.values())  # a tensor named twice: one share
    return _FusedAttentionRebuildingMask.apply(q, k, v, rebuild, scale, *distinct)


def fused_attention_with_bias(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor, scale: float
) -> Tensor:
    """``softmax(q k^T * scale + mask) v`` for ``q, k, v`` ``[B, h, L, d]`` and a float
    ``mask`` broadcasting to ``[B, h, L, L]`` (in ``q``'s dtype), on the fused CPU kernel;
    the mask's gradient (a learned bias) flows back through it."""
    return _FusedAttentionWithBias.apply(q, k, v, mask.to(q.dtype), scale)
