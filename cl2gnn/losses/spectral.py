from __future__ import annotations

import math

import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from typing_extensions import Unpack

from .._options import Distributed, Positive, checks_options
from .._registry import PAIR_LOSSES
from .._validation import check_features, check_same_shape
from ..distributed import Shard, all_reduce_sum
from ..nn._graph import edge_dot
from ._inputs import Graph, GraphLoss, resolve_views, two_view_batches, views_shard


@checks_options()
def spectral_contrastive(
    z1: Tensor,
    z2: Tensor | None = None,
    *,
    mu: Positive = 1.0,
    normalize: bool = True,
    distributed: Distributed = None,
    **graph: Unpack[Graph],
) -> Tensor:
    """Functional form of :class:`SpectralContrastiveLoss`."""

    def scale(z: Tensor) -> Tensor:
        return F.normalize(z, dim=-1) * math.sqrt(mu) if normalize else z

    # across ranks: this rank's anchors against every rank's rows, through the Gram matrices
    two_views = two_view_batches(z2, graph)

    def check(rows: int) -> tuple | None:
        if two_views:
            check_features(z1, "z1", rows)
            check_features(z2, "z2", rows)
            check_same_shape(z1, z2)
            return None
        return resolve_views(z1, z2, **graph, min_rows=rows)

    resolved, shard = views_shard(z1, z2, distributed, check, "SpectralContrastiveLoss")
    world = 1 if shard is None else shard.world_size
    rows = z1.size(0) if shard is None else shard.total // (2 if z2 is not None else 1)
    if rows < 2:  # the same on every rank: the totals are global
        what = "samples" if two_views else "rows"
        raise ValueError(
            f"the spectral loss averages over pairs of distinct {what} and needs at least 2, "
            f"got {rows}"
        )
    if two_views:
        a, b = scale(z1), scale(z2)
        n = a.size(0) if shard is None else shard.total // 2
        positive = (a * b).sum() / n
        return world * (-2 * positive + _off_diagonal_square_sum(a, b, shard) / (n * (n - 1)))
    x, edge_index, edge_weight = resolved
    x = scale(x)
    edge_index, weight = gcn_norm(edge_index, edge_weight, x.size(0), False, False, dtype=x.dtype)
    n, weight_total = x.size(0), weight.sum()
    if shard is not None:
        n, weight_total = shard.total, all_reduce_sum(weight_total)
    positive = (weight * edge_dot(x, x, edge_index)).sum() / weight_total
    return world * (-2 * positive + _off_diagonal_square_sum(x, x, shard) / (n * (n - 1)))


def _off_diagonal_square_sum(a: Tensor, b: Tensor, shard: Shard | None) -> Tensor:
    """``Σ_{i != j} (a_i·b_j)²`` over this process's rows ``i`` (every rank's rows ``j``
    when ``shard`` is given) without masks: all pairs minus the diagonal. All pairs are
    ``‖A Bᵀ‖²_F = ⟨AᵀA, BᵀB⟩_F``: with fewer features than rows the ``d × d`` Gram matrices
    cost ``O(N d²)`` instead of the ``O(N² d)`` pair matrix, and across ranks ``BᵀB`` is
    the all-reduced sum of the ranks' Gram matrices."""
    n, d = a.shape
    if shard is not None:
        total = (a.T @ a).mul_(all_reduce_sum(b.T @ b)).sum()
    elif d < n:
        total = (a.T @ a).mul_(b.T @ b).sum()
    else:
        total = (a @ b.T).square_().sum()
    return total - (a * b).sum(-1).square().sum()


@PAIR_LOSSES.register
class SpectralContrastiveLoss(GraphLoss):
    r"""Spectral contrastive loss (*Provable Guarantees for Self-Supervised Deep Learning
    with Spectral Contrastive Loss*, HaoChen et al., NeurIPS 2021): a low-rank
    factorisation of the normalised augmentation graph,

    .. math::
        \mathcal{L} = -2\, \mathbb{E}_{(x, x^+)} f(x)^\top f(x^+)
        + \mathbb{E}_{x \ne x'} \big(f(x)^\top f(x')\big)^2.

    For two view batches the second expectation runs over cross-view pairs
    :math:`(z_{1,i}, z_{2,j})`, :math:`i \ne j` (the authors' estimator); with a graph the
    positive term is the ``Ā``-weighted mean over its edges and the second term runs over
    all pairs of distinct rows. Features are L2-normalised and scaled by
    :math:`\sqrt{\mu}` unless ``normalize=False``. The second term is computed from the
    :math:`d \times d` Gram matrices when :math:`d < B` (:math:`O(B d^2)`, no
    :math:`B \times B` matrix).

    Args:
        mu (float, optional): squared feature norm after normalisation (default: ``1``).
        normalize (bool, optional): normalise the features (default: ``True``).
        distributed (str, optional): ``"gather"`` or ``"ring"``: the second expectation
            spans every rank's rows, with the ranks' ``d × d`` Gram matrices all-reduced
            (both modes alike: nothing of size ``N`` is exchanged); each rank returns
            ``world_size ×`` its anchors' share, as :class:`InfoNCELoss` (default: ``None``).

    Shapes:
        - **input:** ``z1, z2`` :math:`(B, d)`, or ``x`` :math:`(N, d)` with
          ``edge_index`` or ``sample_id``
        - **output:** scalar

    Examples:
        >>> loss = SpectralContrastiveLoss()(z1, z2)
    """

    functional = staticmethod(spectral_contrastive)
