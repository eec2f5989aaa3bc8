"""Exact sums over keys spread across ranks, with nothing of the global batch's size on any
rank: the keys travel rank to rank.

Rank ``r`` keeps its queries ``x_r``, a running max and sum per query, and one block of
keys at a time. At step ``t`` it holds the keys of rank ``r - t`` and, while it folds them
into its sums tile by tile, already receives the next block from rank ``r - 1``
(``batch_isend_irecv``, so communication overlaps computation). A sum that belongs to the
keys (a key's gradient, the attention a key receives) travels with them in an accumulator
to which each rank adds what its queries send those keys, and which arrives back at the
keys' owner after the last hop (the scheme of Inf-CL, Cheng et al., 2024).

* :class:`RingRowLogSumExp` (``row_logsumexp``'s ``"ring"`` mode): the log-partition of
  each query over every rank's keys; its backward sends the keys round once more,
  recomputing each tile's logits, and the keys' gradients travel home.
* :func:`ring_attention`: softmax attention over every rank's keys, ``w_i Σ_j P_ij x_j``
  per query and, optionally, the transposed sum ``Σ_i w_i P_ij x_i`` per key, exact and
  differentiable (the step of :class:`~cl2gnn.nn.UniformAttention`).

Memory per rank: ``O(N d / P + tile²)`` for ``N`` rows over ``P`` ranks (blocks are padded to
the largest rank's rows); compute: the multiply-adds of the dense computation, a few times.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.distributed as dist
from torch import Tensor

from .._tiles import acc_dtype, online_update, tile_ranges
from .shard import Shard

# a log-kernel: (queries [a, d], keys [b, d]) -> logits log K [a, b]
LogKernel = Callable[[Tensor, Tensor], Tensor]
# visit(owner, block, accumulator): fold the block of rank ``owner`` (padded) into this
# rank's sums and, if there is one, add to the block's travelling accumulator
Visit = Callable[[int, Tensor, "Tensor | None"], None]


def _pass_on(send: Tensor, receive: Tensor) -> list:
    """Send to the next rank and receive from the previous one, asynchronously."""
    rank, world = dist.get_rank(), dist.get_world_size()
    ops = [
        dist.P2POp(dist.isend, send, (rank + 1) % world),
        dist.P2POp(dist.irecv, receive, (rank - 1) % world),
    ]
    return dist.batch_isend_irecv(ops)


def _wait(requests: list) -> None:
    for request in requests:
        request.wait()


def _padded(x: Tensor, rows: int) -> Tensor:
    out = x.new_zeros(rows, x.size(1))
    out[: x.size(0)] = x
    return out


def _circulate(
    shard: Shard, block: Tensor, visit: Visit, accumulator: Tensor | None = None
) -> Tensor | None:
    """Pass this rank's ``block`` (padded to the largest rank's rows) round the ring, calling
    ``visit`` on each rank's block while the next one arrives; from three ranks on ``block``
    is overwritten (it receives a later block). ``accumulator`` (zeros, one
    row per block row) travels with the blocks, and after the last hop the one of this
    rank's block is home: it is returned."""
    incoming = torch.empty_like(block)
    arriving = None if accumulator is None else torch.empty_like(accumulator)
    for step in range(shard.world_size):
        owner = (shard.rank - step) % shard.world_size
        last = step == shard.world_size - 1
        requests = [] if last else _pass_on(block, incoming)
        visit(owner, block, accumulator)
        _wait(requests)
        if accumulator is not None:  # it moves on; after the last hop it is home
            _wait(_pass_on(accumulator, arriving))
            accumulator, arriving = arriving, accumulator
        block, incoming = incoming, block
    return accumulator


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


class RingRowLogSumExp(torch.autograd.Function):
    """``[n_local]`` log-partition of each local row over every rank's rows, with the keys
    passed round; called through :func:`~cl2gnn.distributed.row_logsumexp`."""

    @staticmethod
    def forward(ctx, x, kernel, shard, self_loops, exclude, stop_gradient, tile):
        acc = acc_dtype(x.dtype)
        n = x.size(0)
        running_max = torch.full((n,), float("-inf"), dtype=acc, device=x.device)
        running_sum = torch.zeros(n, dtype=acc, device=x.device)

        def visit(owner: int, keys: Tensor, _) -> None:
            for q0, q1 in tile_ranges(n, tile):
                m, s = running_max[q0:q1], running_sum[q0:q1]
                for k0, k1 in tile_ranges(shard.sizes[owner], tile):
                    logits = kernel(x[q0:q1], keys[k0:k1]).to(acc)
                    logits = _masked(logits, q0, k0, owner == shard.rank, self_loops, exclude)
                    online_update(m, s, logits, 1, inplace=True)

        _circulate(shard, _padded(x, max(shard.sizes)), visit)
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

        def visit(owner: int, keys: Tensor, key_grad: Tensor | None) -> None:
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

        key_grad = None if stop_gradient else torch.zeros(longest, d, dtype=acc, device=x.device)
        key_grad = _circulate(shard, _padded(x, longest), visit, key_grad)
        if key_grad is not None:
            grad += key_grad[:n]
        return grad.to(x.dtype), None, None, None, None, None, None


def _attention_tiles(
    x: Tensor, lse: Tensor, scale: float, shard: Shard, owner: int, keys: Tensor, masking, tile
):
    """``(q0, q1, k0, k1, P)`` for every pair of a query tile of ``x`` and a key tile of the
    block of rank ``owner``: ``P_ij = exp(scale x_i·k_j - L_i)``, zero where masked
    (``masking``: ``(self_loops, exclude)``); ``L`` the queries' log-partition (0 for a
    query without keys)."""
    own = owner == shard.rank
    for q0, q1 in tile_ranges(x.size(0), tile):
        for k0, k1 in tile_ranges(shard.sizes[owner], tile):
            logits = _masked((x[q0:q1] * scale) @ keys[k0:k1].T, q0, k0, own, *masking)
            yield q0, q1, k0, k1, logits.sub_(lse[q0:q1, None]).exp_()


class _RingAttention(torch.autograd.Function):
    """``(w_i Σ_j P_ij x_j, [Σ_i w_i P_ij x_i])`` over every rank's rows ``j``."""

    @staticmethod
    def forward(ctx, x, weight, scale, shard, self_loops, exclude, transposed, tile):
        acc = acc_dtype(x.dtype)
        n, d, longest = x.size(0), x.size(1), max(shard.sizes)
        xa, w, masking = x.to(acc), weight.to(acc), (self_loops, exclude)
        # pass 1, an online softmax: each query's log-partition and mean of the keys
        running_max = torch.full((n,), float("-inf"), dtype=acc, device=x.device)
        running_sum = torch.zeros(n, dtype=acc, device=x.device)
        summed = torch.zeros(n, d, dtype=acc, device=x.device)

        def attend(owner: int, keys: Tensor, _) -> None:
            own = owner == shard.rank
            for q0, q1 in tile_ranges(n, tile):
                m, s, a = running_max[q0:q1], running_sum[q0:q1], summed[q0:q1]
                for k0, k1 in tile_ranges(shard.sizes[owner], tile):
                    k = keys[k0:k1]
                    logits = _masked((xa[q0:q1] * scale) @ k.T, q0, k0, own, *masking)
                    top = torch.maximum(m, logits.amax(1))
                    safe = torch.where(torch.isfinite(top), top, torch.zeros_like(top))
                    rescale = (m - safe).exp_()
                    p = logits.sub_(safe[:, None]).exp_()
                    s.mul_(rescale).add_(p.sum(1))
                    a.mul_(rescale[:, None]).add_(p @ k)
                    m.copy_(top)

        _circulate(shard, _padded(xa, longest), attend)
        has_keys = running_sum > 0
        lse = torch.where(has_keys, running_sum.log() + running_max, torch.zeros_like(running_sum))
        mean = summed / torch.where(has_keys, running_sum, torch.ones_like(running_sum))[:, None]
        outputs = [w[:, None] * mean]
        if transposed:  # pass 2: what the queries of every rank send each key, sent home

            def send(owner: int, keys: Tensor, received: Tensor) -> None:
                for q0, q1, k0, k1, p in _attention_tiles(
                    xa, lse, scale, shard, owner, keys, masking, tile
                ):
                    received[k0:k1] += (p * w[q0:q1, None]).T @ xa[q0:q1]

            received = torch.zeros(longest, d, dtype=acc, device=x.device)
            outputs.append(_circulate(shard, _padded(xa, longest), send, received)[:n])
        ctx.save_for_backward(xa, w, lse, mean)
        ctx.settings = (scale, shard, masking, transposed, tile, x.dtype)
        return tuple(out.to(x.dtype) for out in outputs)

    @staticmethod
    def backward(ctx, grad_attended, grad_transposed=None):
        r"""With ``g``, ``h`` the upstream gradients of the two outputs, their pairing is
        ``Σ_ij P_ij V_ij``, ``V_ij = w_i (g_i·x_j + h_j·x_i)``, so the logits receive
        ``P_ij (V_ij - c_i)``, ``c_i = Σ_j P_ij V_ij = w_i (g_i·mean_i + x_i·Σ_j P_ij h_j)``,
        and ``x`` also appears linearly: key ``j`` receives ``Σ_i w_i P_ij g_i``, query ``i``
        ``w_i Σ_j P_ij h_j``. ``c`` needs every key: with the transposed output a first pass
        sends each key's ``h`` round with it; the second sends the keys' gradients home."""
        xa, w, lse, mean = ctx.saved_tensors
        scale, shard, masking, transposed, tile, dtype = ctx.settings
        acc = xa.dtype
        n, d, longest = xa.size(0), xa.size(1), max(shard.sizes)
        g = grad_attended.to(acc)
        block = _padded(xa, longest)  # the keys, with their h alongside
        if transposed:
            block = torch.cat([block, _padded(grad_transposed.to(acc), longest)], dim=1)
        grad = torch.zeros(n, d, dtype=acc, device=xa.device)
        if transposed:  # grad: w_i Σ_j P_ij h_j for now

            def pull(owner: int, keys: Tensor, _) -> None:
                for q0, q1, k0, k1, p in _attention_tiles(
                    xa, lse, scale, shard, owner, keys[:, :d], masking, tile
                ):
                    grad[q0:q1] += p @ keys[k0:k1, d:]

            _circulate(shard, block.clone(), pull)  # block goes round again below
            c = (g * mean).sum(1).add_((xa * grad).sum(1)).mul_(w)
            grad.mul_(w[:, None])
        else:
            c = (g * mean).sum(1).mul_(w)

        def push(owner: int, keys: Tensor, key_grad: Tensor) -> None:
            for q0, q1, k0, k1, p in _attention_tiles(
                xa, lse, scale, shard, owner, keys[:, :d], masking, tile
            ):
                k, q, wq = keys[k0:k1, :d], xa[q0:q1], w[q0:q1, None]
                pairing = g[q0:q1] @ k.T
                if transposed:
                    pairing += q @ keys[k0:k1, d:].T
                logits_grad = p * (wq * pairing - c[q0:q1, None])
                grad[q0:q1] += scale * (logits_grad @ k)
                key_grad[k0:k1] += scale * (logits_grad.T @ q) + (p * wq).T @ g[q0:q1]

        key_grad = torch.zeros(longest, d, dtype=acc, device=xa.device)
        grad += _circulate(shard, block, push, key_grad)[:n]
        return grad.to(dtype), None, None, None, None, None, None, None


def ring_attention(
    x: Tensor,
    shard: Shard,
    *,
    scale: float,
    weight: Tensor | None = None,
    self_loops: bool = False,
    exclude_index: Tensor | None = None,
    transposed: bool = True,
    tile_size: int = 1024,
) -> tuple[Tensor, Tensor | None]:
    r"""Softmax attention of this rank's rows over the rows of every rank, and what each of
    its rows receives from the queries of every rank, with
    :math:`P_{ij} = \operatorname{softmax}_j(\text{scale}\, x_i^\top x_j)`:

    .. math::
        a_i = w_i \sum_j P_{ij} x_j, \qquad t_j = \sum_i w_i P_{ij} x_i,

    ``i`` and ``j`` over the global batch (self pairs left out unless ``self_loops``; a row
    without keys attends to nothing). Exact and differentiable in ``x`` (``weight`` is a
    constant), in ``O(N d / P + tile²)`` memory per rank: the forward passes the keys round
    twice (an online softmax, then the sums ``t`` travelling home with the keys), the
    backward twice (each key's upstream gradient of ``t`` travelling with it, then the
    keys' gradients home).

    Args:
        x (Tensor): this rank's rows :math:`(n_r, d)`, queries and keys at once.
        shard (Shard): the rows per rank, from :func:`~cl2gnn.distributed.shard_of`.
        scale (float): the logits' scale (``1/τ``).
        weight (Tensor, optional): the queries' weights :math:`w` :math:`(n_r)`
            (default: ones).
        self_loops (bool, optional): keep :math:`j = i` (default: ``False``).
        exclude_index (Tensor, optional): local pairs ``(key, anchor)`` :math:`(2, E)` left
            out (default: ``None``).
        transposed (bool, optional): also return :math:`t` (default: ``True``); ``None``
            in its place otherwise.
        tile_size (int, optional): queries and keys per tile (default: ``1024``).

    Returns:
        ``(a, t)``, each :math:`(n_r, d)` in ``x``'s dtype.
    """
    if tile_size < 1:
        raise ValueError(f"tile_size must be >= 1, got {tile_size}")
    weight = x.new_ones(x.size(0)) if weight is None else weight.detach()
    out = _RingAttention.apply(
        x, weight, float(scale), shard, self_loops, exclude_index, transposed, int(tile_size)
    )
    return out[0], (out[1] if transposed else None)
