"""Row gathers and sums across ranks, with the gradients that make every rank's backward
exact.

``gather_rows`` (all-gather forward; all-reduce-sum, then slice, backward) lets a rank's
loss use every rank's rows as keys: each key's gradient is the sum of what every rank's
anchors send it, delivered to the rank that owns it. ``all_reduce_sum`` (all-reduce forward
and backward) does the same for a sum of per-rank statistics such as Gram matrices.
"""

from __future__ import annotations

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import Tensor

from .shard import Shard


def _gather(x: Tensor, shard: Shard) -> Tensor:
    """The rows of every rank, concatenated in rank order (padded to the largest count for
    the collective, then trimmed)."""
    longest = max(shard.sizes)
    padded = F.pad(x, (0, 0, 0, longest - x.size(0))).contiguous()
    parts = [torch.empty_like(padded) for _ in shard.sizes]
    dist.all_gather(parts, padded)
    return torch.cat([part[:size] for part, size in zip(parts, shard.sizes, strict=True)])


def _sum(x: Tensor) -> Tensor:
    out = x.contiguous().clone()
    dist.all_reduce(out)
    return out


class _GatherRows(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor, shard: Shard) -> Tensor:
        ctx.shard = shard
        return _gather(x, shard)

    @staticmethod
    def backward(ctx, grad: Tensor):
        # every rank holds a gradient for every key: sum them, keep this rank's rows
        shard = ctx.shard
        return _sum(grad)[shard.offset : shard.offset + shard.rows], None


def gather_rows(x: Tensor, shard: Shard, grad: bool = True) -> Tensor:
    """``[N_global, d]``: every rank's ``x`` in rank order; differentiable unless
    ``grad=False`` (e.g. stop-gradient keys)."""
    if grad and x.requires_grad:
        return _GatherRows.apply(x, shard)
    return _gather(x.detach(), shard)


class _AllReduceSum(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: Tensor) -> Tensor:
        return _sum(x)

    @staticmethod
    def backward(ctx, grad: Tensor) -> Tensor:
        # d(Σ_r loss_r)/d x_s = Σ_r d loss_r / d(Σ x): the same sum on every rank
        return _sum(grad)


def all_reduce_sum(x: Tensor) -> Tensor:
    """``Σ_ranks x``, differentiable (each rank's ``x`` receives the summed gradient)."""
    return _AllReduceSum.apply(x) if x.requires_grad else _sum(x)


def global_logsumexp(values: Tensor) -> tuple[Tensor, int]:
    """``log Σ exp`` of the 1-D ``values`` of every rank (no gradient; in ``values``' dtype),
    and their number. The exponentials are summed in float32 at least, and the sum and the
    count travel in float64: bf16 counts exactly only to 256, fp16 overflows at 65,504."""
    values = values.detach()
    top = values.max() if values.numel() else values.new_tensor(float("-inf"))
    top = top.clone()
    dist.all_reduce(top, op=dist.ReduceOp.MAX)
    wide = torch.promote_types(values.dtype, torch.float32)
    total = (values.to(wide) - top.to(wide)).exp().sum().to(torch.float64)
    total = torch.stack([total, total.new_tensor(float(values.numel()))])
    dist.all_reduce(total)
    return (total[0].log() + top.to(torch.float64)).to(values.dtype), int(total[1])
