"""Turn a loss's inputs into stacked features plus an augmentation graph."""

from __future__ import annotations

import torch
from torch import Tensor

from .._validation import as_edge_index, check_features, check_same_shape
from ..graphs import pair_graph
from ._operators import cached_pair_graph


def resolve_views(
    z1: Tensor,
    z2: Tensor | None = None,
    edge_index: Tensor | None = None,
    edge_weight: Tensor | None = None,
    sample_id: Tensor | None = None,
) -> tuple[Tensor, Tensor, Tensor | None]:
    """``(x [N, d], edge_index [2, E], edge_weight)`` from either of the two input forms.

    * two view batches ``z1, z2`` (``[B, d]`` each): ``x = cat([z1, z2])`` with the pair
      graph linking row ``b`` and row ``B + b``;
    * features ``z1 = x`` with an augmentation graph: ``edge_index`` (+ ``edge_weight``),
      e.g. kNN positives, or ``sample_id`` (rows sharing an id are positives).
    """
    if z2 is not None:
        if edge_index is not None or sample_id is not None:
            raise ValueError("pass either two view batches (z1, z2) or a graph, not both")
        check_features(z1, "z1")
        check_features(z2, "z2")
        check_same_shape(z1, z2)
        return torch.cat([z1, z2]), cached_pair_graph(z1.size(0), z1.device), None
    check_features(z1, "x")
    if (edge_index is None) == (sample_id is None):
        raise ValueError("with a single feature tensor pass exactly one of edge_index, sample_id")
    if sample_id is not None:
        if sample_id.shape != (z1.size(0),):
            raise ValueError(
                f"sample_id must have shape [N] = [{z1.size(0)}], got {tuple(sample_id.shape)}"
            )
        return z1, pair_graph(sample_id=sample_id.to(z1.device)), None
    edge_index, edge_weight = as_edge_index(edge_index, edge_weight, z1.size(0))
    return z1, edge_index, edge_weight
