"""Log-partition of the uniformity term over sampled keys, ``lse_i = log Σ_{j ∈ K, j≠i}
exp(x_i·x_j / τ)``, with a hand-written backward.

Autograd through ``mm``, masking and ``logsumexp`` keeps several ``N × K`` temporaries and
computes ``exp`` twice; here the forward keeps the softmax ``P`` and the backward is two
GEMMs, ``grad_I = (w P / τ) x_K`` for the anchors and ``grad_K += (w P / τ)ᵀ x`` for the keys
(left out with ``stop_gradient``). Low-precision inputs are multiplied in their dtype and
reduced in float32.
"""

from __future__ import annotations

import torch
from torch import Tensor

from .tiled import _acc_dtype


def sampled_logits(
    x: Tensor,
    keys: Tensor,
    temperature: float,
    self_loops: bool = False,
    stop_gradient: bool = False,
) -> Tensor:
    """``[N, K]`` logits ``x_i·x_{k_j}/τ`` (``τ = temperature``) in float32 (float64 for
    float64 input), self pairs ``-inf`` unless ``self_loops``; with ``stop_gradient`` the key
    rows are detached. The scaling and masking act in place on the fresh product (autograd
    allows it: ``mm`` does not need its output)."""
    key_rows = x.index_select(0, keys)
    logits = torch.mm(x, (key_rows.detach() if stop_gradient else key_rows).T)
    logits = logits.to(_acc_dtype(x.dtype)).mul_(1.0 / temperature)
    if not self_loops:
        logits[keys, torch.arange(keys.numel(), device=x.device)] = float("-inf")
    return logits


class _SampledRowLogSumExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, keys, tau, stop_gradient, self_loops):
        logits = sampled_logits(x, keys, tau, self_loops)
        row_max = logits.amax(1, keepdim=True)  # -inf only for a row without keys
        shift = torch.where(torch.isfinite(row_max), row_max, torch.zeros_like(row_max))
        attn = logits.sub_(shift).exp_()
        total = attn.sum(1, keepdim=True)
        attn.div_(total.clamp_min(torch.finfo(attn.dtype).tiny))  # a row without keys stays 0
        ctx.save_for_backward(x, keys, attn)
        ctx.settings = (tau, stop_gradient)
        return (total.log() + shift).squeeze(1).to(x.dtype)

    @staticmethod
    def backward(ctx, grad_lse):
        x, keys, attn = ctx.saved_tensors
        tau, stop_gradient = ctx.settings
        weighted = (attn * (grad_lse.to(attn.dtype)[:, None] / tau)).to(x.dtype)
        grad = torch.mm(weighted, x.index_select(0, keys))
        if not stop_gradient:
            grad.index_add_(0, keys, torch.mm(weighted.T, x))
        return grad, None, None, None, None


def sampled_row_logsumexp(
    x: Tensor,
    keys: Tensor,
    temperature: float,
    stop_gradient: bool = False,
    self_loops: bool = False,
) -> Tensor:
    """Per row ``log Σ_{j ∈ keys} exp(x_i·x_j/τ)`` (``[N]``, ``τ = temperature``, self
    pairs left out unless ``self_loops``; ``-inf`` for a row without keys). With
    ``stop_gradient`` the keys are constants in the gradient. ``keys``: distinct ``int64``
    row indices."""
    return _SampledRowLogSumExp.apply(x, keys, float(temperature), stop_gradient, self_loops)
