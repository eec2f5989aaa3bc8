"""Helpers shared by the operators: graph normalisation and segment reductions."""

from __future__ import annotations

from torch import Tensor
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import scatter

from .._validation import as_edge_index


def normalized_graph(
    x: Tensor, edge_index: Tensor, edge_weight: Tensor | None
) -> tuple[Tensor, Tensor]:
    """Validated ``(edge_index, Ā weights)`` with ``Ā = D^{-1/2} A D^{-1/2}`` (``gcn_norm``)."""
    edge_index, edge_weight = as_edge_index(edge_index, edge_weight, x.size(0), non_negative=True)
    if edge_weight is not None:
        edge_weight = edge_weight.to(x.dtype)
    edge_index, weight = gcn_norm(
        edge_index, edge_weight, x.size(0), add_self_loops=False, dtype=x.dtype
    )
    return edge_index, weight


def edge_dot(x: Tensor, y: Tensor, edge_index: Tensor) -> Tensor:
    """``x_dst · y_src`` per edge (``index_select``: its backward is an ``index_add``, not
    the sort-based accumulation of ``x[index]``)."""
    src, dst = edge_index
    return (x.index_select(0, dst) * y.index_select(0, src)).sum(-1)


def scatter_logsumexp(src: Tensor, index: Tensor, dim_size: int) -> Tensor:
    """``log Σ exp`` of ``src`` grouped by ``index``; ``-inf`` for empty groups."""
    shift = scatter(src.detach(), index, 0, dim_size=dim_size, reduce="max")
    total = scatter((src - shift[index]).exp(), index, 0, dim_size=dim_size, reduce="sum")
    return total.log() + shift
