"""Contrastive cross-entropy over an arbitrary log-kernel, row-tiled."""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor
from torch_geometric.nn.conv.gcn_conv import gcn_norm

from . import _tiling
from ._tiling import edges_by_target, row_tiled_sum


def graph_contrastive(
    x: Tensor,
    log_kernel: Callable[[Tensor, Tensor], Tensor],
    edge_index: Tensor,
    edge_weight: Tensor | None = None,
    positive_in_denominator: bool = True,
) -> Tensor:
    r"""``mean_i [ LSE_{j != i} L_ij - Σ_{(k -> i)} Ā_ik L_ik ]`` with ``L = log_kernel(x, x)``.

    ``Ā`` is the symmetric-normalised augmentation graph, so for a regular graph (views of
    a sample) the positive term is the average over an anchor's positives. This is the
    InfoNCE form that ``ContrastiveConv`` composes for the inner-product kernel.
    """
    n, tile = x.size(0), _tiling.TILE
    edge_index, weight = gcn_norm(edge_index, edge_weight, n, add_self_loops=False, dtype=x.dtype)
    groups = edges_by_target(edge_index, n, tile)

    def term(start: int, end: int) -> Tensor:
        logits = log_kernel(x[start:end], x)
        ids = groups[start // tile]
        local, src = edge_index[1, ids] - start, edge_index[0, ids]
        positive = (weight[ids] * logits[local, src]).sum()
        masked = logits  # the positives are gathered: mask in place, no N-wide copy
        masked[:, start:end].fill_diagonal_(float("-inf"))
        if not positive_in_denominator:
            masked[local, src] = float("-inf")
        lse = torch.logsumexp(masked, dim=1)
        return torch.where(torch.isfinite(lse), lse, torch.zeros_like(lse)).sum() - positive

    return row_tiled_sum(term, n, tile) / n
