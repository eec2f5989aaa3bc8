"""Exact log-partition over keys spread across ranks, with nothing of the global batch's
size on any rank: the keys travel rank to rank.

Rank ``r`` keeps its queries ``x_r``, a running max and sum per query, and one block of
keys at a time. At step ``t`` it holds the keys of rank ``r - t`` and, while it folds them
into its log-sum-exp tile by tile, already receives the next block from rank ``r - 1``
(``batch_isend_irecv``, so communication overlaps computation). The backward sends the keys
round once more, recomputing each tile's logits; every block carries a gradient
accumulator to which each rank adds what its anchors send those keys, and which arrives
back at the keys' owner after the last hop (the scheme of Inf-CL, Cheng et al., 2024).

Memory per rank: ``O(N d / P + tile²)`` for ``N`` rows over ``P`` ranks; compute: the same
multiply-adds as a dense loss, ``(N / P) N d`` forward and three times that backward.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.distributed as dist
from torch import Tensor

from .._tiles import acc_dtype, online_update, tile_ranges
from .shard import Shard

Kernel = Callable[[Tensor, Tensor], Tensor]  # (queries [a, d], keys [b, d]) -> logits [a, b]


def _pass_on(sends: list[Tensor], receives: list[Tensor]) -> list:
    """Send to the next rank and receive from the previous one, asynchronously."""
    rank, world = dist.get_rank(), dist.get_world_size()
    ops = [dist.P2POp(dist.isend, t, (rank + 1) % world) for t in sends]
    ops += [dist.P2POp(dist.irecv, t, (rank - 1) % world) for t in receives]
    return dist.batch_isend_irecv(ops)


def _wait(requests: list) -> None:
    for request in requests:
        request.wait()


def _padded(x: Tensor, rows: int) -> Tensor:
    out = x.new_zeros(rows, x.size(1))
    out[: x.size(0)] = x
    return out


def _masked(
    logits: Tensor, q0: int, k0: int, own: bool, self_loops: bool, exclude: Tensor | None
) -> Tensor:
    """``-inf`` on this tile's self pairs and excluded pairs (both only in the rank's own
    block, as positives are local); a copy, so that autograd's logits stay intact."""
    if not own or (self_loops and exclude is None):
        return logits
    logits = logits.clone()
    rows, cols = logits.shape
    first, last = max(q0, k0), min(q0 + rows, k0 + cols)  # rows whose own key is here
    if not self_loops and first < last:
        idx = torch.arange(first, last, device=logits.device)
        logits[idx - q0, idx - k0] = float("-inf")
    if exclude is not None:
        key, anchor = exclude
        inside = (anchor >= q0) & (anchor < q0 + rows) & (key >= k0) & (key < k0 + cols)
        logits[anchor[inside] - q0, key[inside] - k0] = float("-inf")
    return logits


class _RingRowLogSumExp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, kernel, shard, self_loops, exclude, stop_gradient, tile):
        acc = acc_dtype(x.dtype)
        n, longest = x.size(0), max(shard.sizes)
        running_max = torch.full((n,), float("-inf"), dtype=acc, device=x.device)
        running_sum = torch.zeros(n, dtype=acc, device=x.device)
        keys, incoming = _padded(x, longest), x.new_empty(longest, x.size(1))
        for step in range(shard.world_size):
            owner = (shard.rank - step) % shard.world_size
            last = step == shard.world_size - 1
            requests = [] if last else _pass_on([keys], [incoming])
            for q0, q1 in tile_ranges(n, tile):
                m, s = running_max[q0:q1], running_sum[q0:q1]
                for k0, k1 in tile_ranges(shard.sizes[owner], tile):
                    logits = kernel(x[q0:q1], keys[k0:k1]).to(acc)
                    logits = _masked(logits, q0, k0, owner == shard.rank, self_loops, exclude)
                    online_update(m, s, logits, 1, inplace=True)
            _wait(requests)
            keys, incoming = incoming, keys
        lse = running_sum.log() + running_max  # -inf for a row without keys
        ctx.save_for_backward(x, lse)
        ctx.settings = (kernel, shard, self_loops, exclude, stop_gradient, tile)
        return lse.to(x.dtype)

    @staticmethod
    def backward(ctx, grad_lse):
        x, lse = ctx.saved_tensors
        kernel, shard, self_loops, exclude, stop_gradient, tile = ctx.settings
        acc = acc_dtype(x.dtype)
        n, longest, d = x.size(0), max(shard.sizes), x.size(1)
        has_keys = torch.isfinite(lse)
        weight = torch.where(has_keys, grad_lse.to(acc), torch.zeros_like(lse))
        lse = torch.where(has_keys, lse, torch.zeros_like(lse))
        grad = torch.zeros(n, d, dtype=acc, device=x.device)
        keys, incoming = _padded(x, longest), x.new_empty(longest, d)
        key_grad = None if stop_gradient else torch.zeros(longest, d, dtype=acc, device=x.device)
        incoming_grad = None if stop_gradient else torch.empty_like(key_grad)
        for step in range(shard.world_size):
            owner = (shard.rank - step) % shard.world_size
            last = step == shard.world_size - 1
            requests = [] if last else _pass_on([keys], [incoming])
            for q0, q1 in tile_ranges(n, tile):
                for k0, k1 in tile_ranges(shard.sizes[owner], tile):
                    with torch.enable_grad():
                        q = x[q0:q1].detach().requires_grad_()
                        k = keys[k0:k1].detach().requires_grad_(not stop_gradient)
                        logits = kernel(q, k).to(acc)
                    masked = _masked(
                        logits.detach(), q0, k0, owner == shard.rank, self_loops, exclude
                    )
                    # d lse_i / d logits_ij = P_ij: the upstream weight times the attention
                    attention = (masked - lse[q0:q1, None]).exp_().mul_(weight[q0:q1, None])
                    inputs = (q,) if stop_gradient else (q, k)
                    grads = torch.autograd.grad(logits, inputs, attention)
                    grad[q0:q1] += grads[0]
                    if not stop_gradient:
                        key_grad[k0:k1] += grads[1]
            _wait(requests)
            if not stop_gradient:  # the accumulator moves on; after the last hop it is home
                _wait(_pass_on([key_grad], [incoming_grad]))
                key_grad, incoming_grad = incoming_grad, key_grad
            keys, incoming = incoming, keys
        if not stop_gradient:
            grad += key_grad[:n]
        return grad.to(x.dtype), None, None, None, None, None, None


def ring_row_logsumexp(
    x: Tensor,
    kernel: Kernel,
    shard: Shard,
    *,
    self_loops: bool = False,
    exclude_index: Tensor | None = None,
    stop_gradient: bool = False,
    tile_size: int = 1024,
) -> Tensor:
    r"""Per local row :math:`\log \sum_j \exp k(x_i, x_j)` over the rows ``j`` of every rank
    (``[n_local]``, ``-inf`` for a row without keys), exact, in ``O(N d / P + tile²)``
    memory per rank.

    Args:
        x (Tensor): this rank's rows :math:`(n_r, d)`, queries and keys at once.
        kernel (callable): ``(queries, keys) -> logits`` for a tile, differentiable (the
            backward recomputes it under autograd), e.g. ``lambda q, k: q @ k.T / tau``.
        shard (Shard): the rows per rank, from :func:`~cl2gnn.distributed.shard_of`.
        self_loops (bool, optional): keep :math:`j = i` (default: ``False``).
        exclude_index (Tensor, optional): local pairs ``(key, anchor)`` :math:`(2, E)` left
            out, e.g. the positives of a decoupled loss (default: ``None``).
        stop_gradient (bool, optional): keys are constants in the gradient
            (default: ``False``).
        tile_size (int, optional): queries and keys per tile (default: ``1024``).
    """
    if tile_size < 1:
        raise ValueError(f"tile_size must be >= 1, got {tile_size}")
    return _RingRowLogSumExp.apply(
        x, kernel, shard, self_loops, exclude_index, stop_gradient, int(tile_size)
    )
