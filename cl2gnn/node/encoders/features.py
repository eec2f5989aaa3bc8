"""Node features for the encoder: dense, or sparse bag-of-words kept as one fixed
:class:`~torch_geometric.EdgeIndex` whose feature masks act on the weight instead; a dense
view's column mask acts on the weight too (:class:`ColumnMasked`).

GRACE masks whole feature columns, ``X diag(m)``, and ``X diag(m) W = X (diag(m) W)``: the
sparse matrix never changes, so its row- and column-sorted forms are computed once and the
first layer's backward (``Xᵀ G``) needs no per-step transpose.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
from torch import Tensor
from torch_geometric import EdgeIndex

SPARSE_BELOW = 0.1  # density under which features are kept sparse (Cora: 1.3 %)


@dataclass(frozen=True)
class SparseFeatures:
    """A fixed sparse ``[N, F]`` feature matrix and an optional column mask ``m``."""

    index: EdgeIndex  # (node, feature) pairs, sorted by node
    values: Tensor
    column_mask: Tensor | None = None

    @classmethod
    def from_dense(cls, x: Tensor) -> SparseFeatures:
        node, feature = torch.nonzero(x, as_tuple=True)
        # nonzero() lists entries row by row: the index is sorted by node already
        index = EdgeIndex(
            torch.stack([node, feature]), sparse_size=tuple(x.shape), sort_order="row"
        )
        return cls(index, x[node, feature])

    @property
    def shape(self) -> tuple[int, int]:
        return self.index.sparse_size()

    def size(self, dim: int) -> int:
        return self.shape[dim]

    def with_column_mask(self, mask: Tensor) -> SparseFeatures:
        return replace(self, column_mask=mask)

    def matmul(self, weight: Tensor) -> Tensor:
        """``X diag(m) weight`` for ``weight`` of shape ``[F, out]``."""
        if self.column_mask is not None:
            weight = weight * self.column_mask[:, None]
        if torch.compiler.is_compiling():  # dynamo takes no EdgeIndex: the sums by index
            node, feature = self.index
            messages = self.values[:, None] * weight.index_select(0, feature)
            return weight.new_zeros(self.size(0), weight.size(1)).index_add(0, node, messages)
        return self.index.matmul(weight, self.values)

    def to_dense(self) -> Tensor:
        dense = self.index.to_dense(self.values)
        return dense if self.column_mask is None else dense * self.column_mask

    def rows(self, order: Tensor) -> SparseFeatures:
        """The matrix whose row ``i`` is row ``order[i]`` of this one (``order`` a
        permutation of the rows), the column mask kept."""
        position = torch.empty_like(order)
        position[order] = torch.arange(order.numel(), device=order.device)
        node, feature = self.index
        node = position[node]
        sort = torch.argsort(node, stable=True)
        index = EdgeIndex(
            torch.stack([node[sort], feature[sort]]), sparse_size=self.shape, sort_order="row"
        )
        return replace(self, index=index, values=self.values[sort])


@dataclass(frozen=True)
class ColumnMasked:
    """A dense ``[N, F]`` feature matrix and a column mask ``m`` kept apart: the first layer
    computes ``X diag(m) W`` as ``X (diag(m) W)``, masking its ``[F, out]`` weight instead of
    copying ``X`` for each view (the products are the same, term by term)."""

    x: Tensor
    column_mask: Tensor

    def size(self, dim: int) -> int:
        return self.x.size(dim)

    def masked(self, weight: Tensor) -> Tensor:
        """A linear layer's ``[out, F]`` weight with the masked columns zeroed."""
        return weight * self.column_mask

    def to_dense(self) -> Tensor:
        return self.x * self.column_mask


def permute_rows(
    x: Tensor | SparseFeatures | ColumnMasked, order: Tensor
) -> Tensor | SparseFeatures | ColumnMasked:
    """``x`` (in any of the encoder's forms) whose row ``i`` is row ``order[i]`` (``order`` a
    permutation of the rows), a column mask kept; sparse features stay sparse."""
    if isinstance(x, SparseFeatures):
        return x.rows(order)
    if isinstance(x, ColumnMasked):
        return replace(x, x=x.x[order])
    return x[order]


def dense_features(x: Tensor | SparseFeatures | ColumnMasked) -> Tensor:
    """``x`` (in any of the encoder's forms) as one dense ``[N, F]`` matrix, a column mask
    applied."""
    if isinstance(x, SparseFeatures):
        return x.to_dense()
    if isinstance(x, ColumnMasked):
        return x.x * x.column_mask
    return x


def shuffle_rows(
    x: Tensor | SparseFeatures | ColumnMasked,
) -> Tensor | SparseFeatures | ColumnMasked:
    """``x`` with its rows in a random order (torch's global generator): DGI's corruption."""
    if isinstance(x, SparseFeatures):
        device = x.values.device
    else:
        device = (x.x if isinstance(x, ColumnMasked) else x).device
    return permute_rows(x, torch.randperm(x.size(0), device=device))


def is_sparse(x: Tensor) -> bool:
    """Whether ``x`` is sparse enough to be kept sparse (density below ``SPARSE_BELOW``)."""
    return x.numel() > 0 and int(torch.count_nonzero(x)) < SPARSE_BELOW * x.numel()


def prepare_features(x: Tensor, sparse: bool | None = None) -> Tensor | SparseFeatures:
    """Sparse bag-of-words features as :class:`SparseFeatures`, others unchanged;
    ``sparse`` decides (default: :func:`is_sparse` of ``x``). Mini-batches pass the whole
    graph's answer: one decision, not one density pass per batch."""
    return SparseFeatures.from_dense(x) if (is_sparse(x) if sparse is None else sparse) else x


def with_column_mask(x: Tensor | SparseFeatures, keep: Tensor) -> ColumnMasked | SparseFeatures:
    """``x`` with the feature columns ``keep`` (booleans ``[F]``) kept, the mask apart: the
    built-in encoder applies it to its first layer's weight."""
    if isinstance(x, SparseFeatures):
        return x.with_column_mask(keep.to(x.values.dtype))
    return ColumnMasked(x, keep.to(x.dtype))
