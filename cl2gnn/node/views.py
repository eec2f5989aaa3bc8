"""The two augmented views of a graph: GRACE's edge dropping and feature masking, with
PyG's ``dropout_edge`` and ``mask_feature``."""

from __future__ import annotations

import numpy as np
import torch
from torch import Tensor
from torch_geometric.utils import dropout_edge, mask_feature

from .features import ColumnMasked, SparseFeatures


def augment(
    x: Tensor | SparseFeatures,
    edge_index: Tensor,
    p_edge: float,
    p_feature: float,
    p_node: float = 0.0,
    *,
    feature_generator: torch.Generator | None = None,
):
    """One GRACE view: drop edges (PyG ``dropout_edge``) and mask feature columns, as PyG's
    ``mask_feature`` draws them, on the first layer's weight instead of a copy of the
    features (:class:`ColumnMasked`; :class:`SparseFeatures` with the mask); ``p_node > 0``
    also zeroes that fraction of the nodes' whole feature rows (GraphMAE's node masking,
    here a view to contrast).

    ``feature_generator`` (a CPU generator) draws the column mask instead of torch's global
    generator, one draw of ``x.size(1)`` numbers per call whatever ``p_feature``: several
    processes whose generators are seeded alike mask the same columns (the edges and the
    node rows stay on the global generator)."""
    # the sparse path draws its own masks, so it does not get mask_feature's range check
    for name, p in (("feature mask", p_feature), ("node mask", p_node)):
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"the {name} probability must lie in [0, 1], got {p}")
    edge_index, _ = dropout_edge(edge_index, p=p_edge)
    sparse = isinstance(x, SparseFeatures)
    device = x.values.device if sparse else x.device
    keep = None
    if feature_generator is not None:
        keep = (torch.rand(x.size(1), generator=feature_generator) >= p_feature).to(device)
    if sparse:
        dtype = x.values.dtype
        if keep is None:
            keep = torch.rand(x.size(1), device=device) >= p_feature
        x = x.with_column_mask(keep.to(dtype))
        if p_node > 0:
            x = x.with_row_mask((torch.rand(x.size(0), device=device) >= p_node).to(dtype))
        return x, edge_index
    if keep is None and p_feature > 0:  # mask_feature's draw (it draws nothing at p = 0)
        keep = torch.rand(x.size(1), device=device) >= p_feature
    if p_node > 0:
        x, _ = mask_feature(x, p=p_node, mode="row")
    return (x if keep is None else ColumnMasked(x, keep.to(x.dtype))), edge_index


def seed_everything(seed: int) -> None:
    torch.manual_seed(seed)
    np.random.seed(seed)  # noqa: NPY002 -- seeds libraries that use the legacy global RNG
