"""The per-anchor log-partition over the keys of every rank, by either mode."""

from __future__ import annotations

import math
from functools import partial

import torch
from torch import Tensor

from .collectives import gather_rows
from .ring import LogKernel, RingRowLogSumExp
from .shard import Shard


def _scaled_inner(scale: float, queries: Tensor, keys: Tensor) -> Tensor:
    return (queries * scale) @ keys.T  # scaled on the n × d side, not the n × N one


def inner_product(scale: float) -> LogKernel:
    """The kernel ``scale · q·k`` (``scale = 1/τ``)."""
    return partial(_scaled_inner, float(scale))


def row_logsumexp(
    x: Tensor,
    kernel: LogKernel,
    mode: str,
    shard: Shard,
    *,
    self_loops: bool = False,
    exclude_index: Tensor | None = None,
    stop_gradient: bool = False,
    tile_size: int = 1024,
) -> Tensor:
    r"""Per local row :math:`\log \sum_j \exp k(x_i, x_j)` over the rows ``j`` of every rank
    (``[n_local]``, ``-inf`` for a row without keys), exact.

    Args:
        x (Tensor): this rank's rows :math:`(n_r, d)`, queries and keys at once.
        kernel (callable): ``(queries, keys) -> logits``, differentiable (the ring's backward
            recomputes it under autograd), e.g. :func:`inner_product`.
        mode (str): ``"gather"`` forms this rank's :math:`n_r \times N` logits against the
            gathered keys; ``"ring"`` passes the keys round in tiles, in
            :math:`O(N d / P + \text{tile}^2)` memory per rank.
        shard (Shard): the rows per rank, from :func:`~cl2gnn.distributed.shard_of`.
        self_loops (bool, optional): keep :math:`j = i` (default: ``False``).
        exclude_index (Tensor, optional): local pairs ``(key, anchor)`` :math:`(2, E)` left
            out, e.g. the positives of a decoupled loss (default: ``None``).
        stop_gradient (bool, optional): keys are constants in the gradient
            (default: ``False``).
        tile_size (int, optional): the ring's queries and keys per tile (default: ``1024``).
    """
    if mode == "ring":
        if tile_size < 1:
            raise ValueError(f"tile_size must be >= 1, got {tile_size}")
        return RingRowLogSumExp.apply(
            x, kernel, shard, self_loops, exclude_index, stop_gradient, int(tile_size)
        )
    keys = gather_rows(x, shard, grad=not stop_gradient)
    logits = masked_logits(kernel(x, keys), shard.offset, self_loops, exclude_index)
    return masked_logsumexp(logits)


def masked_logits(
    logits: Tensor, offset: int, self_loops: bool, exclude_index: Tensor | None
) -> Tensor:
    """``-inf`` on the self pairs (row ``i``'s own key is column ``offset + i``) unless
    ``self_loops``, and on the ``(key, anchor)`` pairs of ``exclude_index``; a new tensor
    (the kernel's backward may need its output), written on the device: the diagonal by a
    fill, the excluded pairs by index, without an ``n × N`` mask and without a value made
    on the host (on a GPU, a copy the step would wait for)."""
    if self_loops and exclude_index is None:
        return logits
    masked = logits.clone()
    if not self_loops:
        masked.diagonal(offset).fill_(-math.inf)
    if exclude_index is not None:
        pairs = (exclude_index[1], exclude_index[0] + offset)
        masked.index_put_(pairs, masked.new_full((), -math.inf))
    return masked


def masked_logsumexp(logits: Tensor) -> Tensor:
    """Row-wise ``logsumexp``, ``-inf`` (with a zero gradient, not NaN) for a row whose
    every key is masked, without reading a value back from the device: ``logsumexp``'s own
    steps (the row's maximum, the shifted sum of exponentials) with a masked row's shift and
    sum replaced by harmless constants."""
    peak = logits.detach().amax(1, keepdim=True)
    has_keys = torch.isfinite(peak)
    peak = torch.where(has_keys, peak, torch.zeros_like(peak))
    total = (logits - peak).exp().sum(1)
    has_keys = has_keys.view(-1)
    total = torch.where(has_keys, total, torch.ones_like(total))  # log(1): no 1/0 backward
    return torch.where(has_keys, total.log() + peak.view(-1), float("-inf"))
