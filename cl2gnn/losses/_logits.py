"""Contrastive cross-entropy over an arbitrary log-kernel, row-tiled."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor
from torch_geometric.nn.conv.gcn_conv import gcn_norm

from ..distributed import Shard, gather_rows, ring_row_logsumexp
from . import _tiling
from ._distributed import share_of_mean
from ._tiling import edges_by_target, row_tiled_sum


def graph_contrastive(
    x: Tensor,
    log_kernel: Callable[[Tensor, Tensor], Tensor],
    edge_index: Tensor,
    edge_weight: Tensor | None = None,
    positive_in_denominator: bool = True,
    distributed: str | None = None,
    shard: Shard | None = None,
) -> Tensor:
    r"""``mean_i [ LSE_{j != i} L_ij - Σ_{(k -> i)} Ā_ik L_ik ]`` with ``L = log_kernel(x, x)``.

    ``Ā`` is the symmetric-normalised augmentation graph, so for a regular graph (views of
    a sample) the positive term is the average over an anchor's positives. This is the
    InfoNCE form that ``ContrastiveConv`` composes for the inner-product kernel.

    With a ``shard`` (this rank's rows of the global batch, see
    :func:`~cl2gnn.losses._distributed.views_shard`) the keys are every rank's rows,
    all-gathered (``distributed="gather"``) or passed round the ranks
    (``"ring"``), and the result is ``world_size ×`` this rank's share of the mean.
    """
    n, tile = x.size(0), _tiling.TILE
    edge_index, weight = gcn_norm(edge_index, edge_weight, n, add_self_loops=False, dtype=x.dtype)
    groups = edges_by_target(edge_index, n, tile)
    ring = shard is not None and distributed == "ring"
    keys, offset = x, 0  # the ring's keys travel separately: the tiles see the local rows
    if shard is not None and not ring:
        keys, offset = gather_rows(x, shard), shard.offset

    def term(start: int, end: int) -> Tensor:
        logits = log_kernel(x[start:end], keys)
        ids = groups[start // tile]
        local, src = edge_index[1, ids] - start, edge_index[0, ids] + offset
        positive = (weight[ids] * logits[local, src]).sum()
        if ring:
            return -positive
        masked = logits  # the positives are gathered: mask in place, no N-wide copy
        masked[:, offset + start : offset + end].fill_diagonal_(float("-inf"))
        if not positive_in_denominator:
            masked[local, src] = float("-inf")
        lse = torch.logsumexp(masked, dim=1)
        return torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse)).sum() - positive

    total = row_tiled_sum(term, n, tile)
    if ring:
        exclude = None if positive_in_denominator else edge_index
        lse = ring_row_logsumexp(x, log_kernel, shard, exclude_index=exclude)
        total = total + torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse)).sum()
    return share_of_mean(total, n, shard)
