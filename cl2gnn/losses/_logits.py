"""Contrastive cross-entropy over an arbitrary log-kernel matrix."""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.nn.conv.gcn_conv import gcn_norm


def graph_contrastive(
    logits: Tensor,
    edge_index: Tensor,
    edge_weight: Tensor | None = None,
    positive_in_denominator: bool = True,
) -> Tensor:
    r"""``mean_i [ LSE_{j != i} L_ij - Σ_{(k -> i)} Ā_ik L_ik ]`` for a log-kernel ``L``.

    ``Ā`` is the symmetric-normalised augmentation graph, so for a regular graph (views of
    a sample) the positive term is the average over an anchor's positives. This is the
    InfoNCE form that ``ContrastiveConv`` composes for the inner-product kernel.
    """
    n = logits.size(0)
    edge_index, weight = gcn_norm(
        edge_index, edge_weight, n, add_self_loops=False, dtype=logits.dtype
    )
    src, dst = edge_index
    mask = torch.eye(n, dtype=torch.bool, device=logits.device)
    if not positive_in_denominator:
        mask[dst, src] = True
    masked = logits.masked_fill(mask, float("-inf"))
    has_keys = torch.isfinite(masked).any(1, keepdim=True)
    lse = torch.logsumexp(masked.masked_fill(~has_keys, 0.0), dim=1) * has_keys.view(-1)
    return (lse.sum() - (weight * logits[dst, src]).sum()) / n
