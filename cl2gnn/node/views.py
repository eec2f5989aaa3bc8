"""Augmented views of a graph as PyG transforms (``Data -> Data``): GRACE's edge dropping
(:class:`DropEdge`, PyG's ``dropout_edge``) and feature-column masking (:class:`MaskFeatures`,
drawn as PyG's ``mask_feature`` draws it). Any other PyG transform is a view too, and
``torch_geometric.transforms.Compose`` chains them.

The built-in encoder opts into one speed-up: where a view is made of these two alone, the
column mask is kept apart and applied to its first layer's weight
(:func:`augment_with_column_mask`), so that no view copies the features."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence

import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.transforms import BaseTransform, Compose
from torch_geometric.utils import dropout_edge

View = Callable[[Data], Data]


def _probability(p: float, name: str) -> float:
    if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
        raise ValueError(f"{name} must be a probability in [0, 1], got {p!r}")
    return float(p)


class DropEdge(BaseTransform):
    """Drops each edge with probability ``p`` (PyG's ``dropout_edge``), and its
    ``edge_weight`` / ``edge_attr`` with it.

    Args:
        p (float): the probability of dropping an edge.
    """

    def __init__(self, p: float) -> None:
        self.p = _probability(p, "p")

    def forward(self, data: Data) -> Data:
        data.edge_index, kept = dropout_edge(data.edge_index, p=self.p)
        for key in ("edge_weight", "edge_attr"):
            if data.get(key) is not None:
                data[key] = data[key][kept]
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p})"


class MaskFeatures(BaseTransform):
    """Masks each feature column with probability ``p``, the same columns on every node
    (GRACE's feature masking; PyG's ``mask_feature(mode="col")``).

    Args:
        p (float): the probability of masking a column.
        generator (torch.Generator, optional): a CPU generator to draw the mask from
            instead of torch's global one; then one draw of ``F`` numbers per call whatever
            ``p``, so that processes whose generators are seeded alike mask the same columns
            (default: ``None``).
    """

    def __init__(self, p: float, generator: torch.Generator | None = None) -> None:
        self.p, self.generator = _probability(p, "p"), generator

    def keep(self, num_features: int, device: torch.device | str = "cpu") -> Tensor | None:
        """The columns kept (booleans ``[num_features]``); ``None``: all of them (``p = 0``
        draws nothing, as ``mask_feature`` draws nothing)."""
        if self.generator is not None:
            return (torch.rand(num_features, generator=self.generator) >= self.p).to(device)
        if self.p == 0:
            return None
        return torch.rand(num_features, device=device) >= self.p

    def forward(self, data: Data) -> Data:
        keep = self.keep(data.x.size(1), data.x.device)
        if keep is not None:
            data.x = data.x * keep.to(data.x.dtype)
        return data

    def __repr__(self) -> str:
        return f"{type(self).__name__}(p={self.p})"


def config_views(
    drop_edge: Sequence[float], drop_feature: Sequence[float], generator=None
) -> tuple[View, View]:
    """The two views of a configuration: ``Compose([DropEdge, MaskFeatures])`` with each
    view's probabilities."""
    return tuple(
        Compose([DropEdge(drop_edge[v]), MaskFeatures(drop_feature[v], generator)]) for v in (0, 1)
    )


def view_pair(augment: View | Sequence[View] | None, default: tuple[View, View]):
    """``augment`` as two views: one callable for both, a pair, or ``None`` (``default``)."""
    if augment is None:
        return default
    if callable(augment):
        return (augment, augment)
    if isinstance(augment, Sequence) and len(augment) == 2 and all(map(callable, augment)):
        return tuple(augment)
    raise ValueError(
        "augment must be a callable Data -> Data (a PyG transform) or a pair of them (one per "
        f"view), got {augment!r}"
    )


def _steps(view: View) -> list[View]:
    return [s for t in view.transforms for s in _steps(t)] if isinstance(view, Compose) else [view]


def augment_with_column_mask(view: View, data: Data) -> tuple[Data, Tensor | None]:
    """``view(data)`` with, where the view is :class:`DropEdge` and :class:`MaskFeatures`
    alone, the feature columns kept returned apart (``None``: all) and ``data.x`` left as it
    is, for an encoder that masks its weight instead; any other view is applied as it is
    (``None``: its mask, if any, is in ``x``)."""
    steps = _steps(view)
    if not all(isinstance(step, DropEdge | MaskFeatures) for step in steps):
        return view(data), None
    keep, data = None, copy.copy(data)  # as BaseTransform's call: its tensors not written
    for step in steps:
        if isinstance(step, DropEdge):
            data = step.forward(data)
        else:
            mask = step.keep(data.num_features, data.x.device)
            if mask is not None:
                keep = mask if keep is None else keep & mask
    return data, keep
