"""Exact softmax attention over the complete affinity graph in ``O(N d + tile²)`` memory:
``out_i = Σ_j P_ij v_j`` with ``P = softmax_rows(u uᵀ / τ)`` (self pairs optional, a
symmetric set of pairs removed), never forming the ``N × N`` matrix.

The forward keeps a running max and sum per row (flash-attention style) and saves only
``u``, ``v``, ``out`` and the row log-partitions; the backward recomputes each block:
with ``g = ∂L/∂out`` and ``δ_i = g_i · out_i``, ``∂L/∂S_ij = P_ij (g_i · v_j - δ_i)``,
which reaches ``u`` through both ends of the logit (queries and keys are the same rows).
Low-precision inputs are multiplied in their dtype and reduced in float32.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .._tiles import acc_dtype, tile_ranges
from .tiled import _excluded_by_block, _mask_block


def _block_logits(u, rows, cols, tau, acc, self_loops, excluded, a, b):
    """``u_I u_Jᵀ / τ`` in ``acc`` precision, the self and excluded pairs ``-inf``."""
    s = torch.mm(u[rows[0] : rows[1]], u[cols[0] : cols[1]].T).to(acc).div_(tau)
    # the excluded pairs are stored once, in the block (min, max) of their two ends
    pairs = excluded.get((min(a, b), max(a, b)))
    if pairs is not None and a > b:
        pairs = (pairs[1], pairs[0])
    return _mask_block(s, a == b, self_loops, pairs)


class _TiledAttention(torch.autograd.Function):
    @staticmethod
    def forward(ctx, u, v, tau, self_loops, exclude, tile):
        n, acc = u.size(0), acc_dtype(u.dtype)
        excluded = _excluded_by_block(exclude, n, tile)
        ranges = tile_ranges(n, tile)
        out = torch.zeros(n, v.size(1), dtype=acc, device=u.device)
        lse = torch.empty(n, dtype=acc, device=u.device)
        for a, rows in enumerate(ranges):
            r = slice(*rows)
            m = torch.full((rows[1] - rows[0],), float("-inf"), dtype=acc, device=u.device)
            total = torch.zeros_like(m)
            for b, cols in enumerate(ranges):
                s = _block_logits(u, rows, cols, tau, acc, self_loops, excluded, a, b)
                new_max = torch.maximum(m, s.amax(1))
                shift = torch.where(torch.isfinite(new_max), new_max, torch.zeros_like(new_max))
                decay = torch.exp(m - shift)
                p = s.sub_(shift[:, None]).exp_()
                total.mul_(decay).add_(p.sum(1))
                out[r] = out[r] * decay[:, None] + torch.mm(p.to(v.dtype), v[slice(*cols)]).to(acc)
                m = new_max
            out[r] /= total.clamp_min(torch.finfo(acc).tiny)[:, None]  # no keys: 0
            lse[r] = total.log() + torch.where(torch.isfinite(m), m, torch.zeros_like(m))
        ctx.save_for_backward(u, v, out, lse)
        ctx.settings = (tau, self_loops, excluded, tile)
        return out.to(v.dtype)

    @staticmethod
    def backward(ctx, grad_out):
        u, v, out, lse = ctx.saved_tensors
        tau, self_loops, excluded, tile = ctx.settings
        acc = out.dtype
        grad_out = grad_out.to(acc)
        delta = (grad_out * out).sum(1)
        lse = torch.where(torch.isfinite(lse), lse, torch.full_like(lse, float("inf")))
        grad_u = torch.zeros(u.shape, dtype=acc, device=u.device)
        grad_v = torch.zeros(v.shape, dtype=acc, device=u.device)
        ranges = tile_ranges(u.size(0), tile)
        for a, rows in enumerate(ranges):
            r = slice(*rows)
            for b, cols in enumerate(ranges):
                c = slice(*cols)
                s = _block_logits(u, rows, cols, tau, acc, self_loops, excluded, a, b)
                p = s.sub_(lse[r, None]).exp_()
                grad_v[c] += torch.mm(p.T, grad_out[r])
                dp = torch.mm(grad_out[r], v[c].to(acc).T)
                ds = p.mul_(dp.sub_(delta[r, None])).div_(tau)
                grad_u[r] += torch.mm(ds, u[c].to(acc))
                grad_u[c] += torch.mm(ds.T, u[r].to(acc))
        return grad_u.to(u.dtype), grad_v.to(v.dtype), None, None, None, None


def tiled_attention(
    u: Tensor,
    v: Tensor,
    temperature: float,
    self_loops: bool = True,
    exclude_index: Tensor | None = None,
    tile_size: int = 1024,
) -> Tensor:
    r"""``softmax_rows(u uᵀ / τ) v`` over the complete graph (``τ = temperature``; self
    pairs kept with ``self_loops``; a *symmetric* set of pairs ``exclude_index`` removed),
    exact, differentiable in ``u`` and ``v``, in ``O(N d + tile²)`` memory; ``0`` for a row
    without keys."""
    return _TiledAttention.apply(u, v, float(temperature), self_loops, exclude_index, tile_size)
