"""The Barlow Twins loss of Graph Barlow Twins: the cross-correlation of two views'
batch-normalised embeddings pulled towards the identity."""

from __future__ import annotations

from typing import Annotated

import torch
from torch import Tensor

from .._checks import non_negative, optional
from .._options import Distributed, checks_options
from ..distributed import all_reduce_sum
from ._inputs import FunctionalLoss
from .cca_ssg import node_views

EPS = 1e-15  # added to the standard deviation, as the authors' code does


def batch_normalize(h: Tensor) -> Tensor:
    """Each column to zero mean and unit (unbiased) standard deviation over the rows, the
    deviation plus :data:`EPS` (the authors' normalisation)."""
    return (h - h.mean(0)) / (h.std(0) + EPS)


def batch_normalize_across_ranks(h: Tensor, n: int) -> Tensor:
    """:func:`batch_normalize` of this rank's rows of every view ``h`` ``(views, rows, d)``
    by the columns' statistics over every rank's rows, ``n`` in all (differentiable)."""
    centred = h - all_reduce_sum(h.sum(1, keepdim=True)) / n
    variance = all_reduce_sum(centred.square().sum(1, keepdim=True)) / (n - 1)
    # a dead unit's zero variance would give sqrt a 0/0 gradient (NaN), which torch.std
    # masks; its centred rows are zero, so the clamp changes no value
    return centred / (variance.clamp(min=torch.finfo(h.dtype).tiny).sqrt() + EPS)


@checks_options()
def barlow_twins_loss(
    h1: Tensor,
    h2: Tensor,
    off_diagonal: Annotated[float | None, optional(non_negative)] = None,
    distributed: Distributed = None,
) -> Tensor:
    r"""The Barlow Twins loss as Graph Barlow Twins' code computes it: with :math:`Z_v` the
    batch-normalised :math:`H_v` (each column centred and divided by its unbiased standard
    deviation plus :math:`10^{-15}`) and the cross-correlation
    :math:`C = Z_1^\top Z_2 / N`,

    .. math::
        \mathcal{L} = \sum_i (1 - C_{ii})^2 + \lambda \sum_{i \ne j} C_{ij}^2.

    With ``distributed`` (``"gather"`` or ``"ring"``, alike here) under a process group of
    several ranks, each rank passes its rows of the global batch and the loss is that of
    the union of every rank's rows: the columns' means and deviations over all :math:`N`
    rows, and :math:`C` the all-reduced *sum* of the ranks' :math:`Z_1^\top Z_2` (with
    autograd) divided by the global :math:`N` — not a mean of the ranks' own
    cross-correlations. Every rank returns the global loss (``world_size ×`` an equal
    share of it, :mod:`cl2gnn.distributed`'s convention), so that DDP's average of the
    gradients over ranks is the single-process gradient.

    Functional form of :class:`BarlowTwinsLoss`.

    Shapes: ``h1, h2`` :math:`(N, d)`, :math:`N \ge 2` (over all ranks); output: scalar.
    """
    n, d, shard = node_views(h1, h2, distributed, "Barlow Twins normalises")
    if shard is None:
        correlation = batch_normalize(h1).T @ batch_normalize(h2) / n
    else:
        z1, z2 = batch_normalize_across_ranks(torch.stack([h1, h2]), n)
        correlation = all_reduce_sum(z1.T @ z2) / n
    weight = 1.0 / d if off_diagonal is None else off_diagonal
    diagonal = correlation.diagonal()
    off = correlation.square().sum() - diagonal.square().sum()
    return (1.0 - diagonal).square().sum() + weight * off


class BarlowTwinsLoss(FunctionalLoss):
    r"""The Barlow Twins loss (Zbontar et al., *Barlow Twins: Self-Supervised Learning via
    Redundancy Reduction*, ICML 2021) as Graph Barlow Twins (Bielak et al., *Graph Barlow
    Twins: A self-supervised representation learning framework for graphs*,
    Knowledge-Based Systems 2022) computes it: the cross-correlation
    :math:`C = Z_1^\top Z_2 / N` of the two views' batch-normalised embeddings pulled
    towards the identity (:func:`barlow_twins_loss`),

    .. math::
        \mathcal{L} = \sum_i (1 - C_{ii})^2 + \lambda \sum_{i \ne j} C_{ij}^2.

    In the message-passing reading the diagonal term aligns the two views of each node (as
    :class:`~cl2gnn.nn.AlignConv` on the pair graph, per embedding dimension) and the
    off-diagonal term decorrelates the dimensions, standing in for uniformity: the family
    of CCA-SSG's decorrelation (:class:`CCASSGLoss`), here on the cross-view correlation
    instead of each view's own.

    Args:
        off_diagonal (float, optional): :math:`\lambda`; ``None``: :math:`1/d`, the
            authors' choice (default: ``None``).
        distributed (str, optional): ``"gather"`` or ``"ring"`` (alike here): under a
            process group, the loss of the union of every rank's rows (the statistics and
            the :math:`d \times d` cross-correlation all-reduced with autograd, nothing of
            size :math:`N` exchanged) (default: ``None``).

    Shapes:
        - **input:** ``h1, h2`` :math:`(N, d)`, :math:`N \ge 2`
        - **output:** scalar

    Examples:
        >>> loss = BarlowTwinsLoss()(encoder(view1), encoder(view2))
    """

    functional = staticmethod(barlow_twins_loss)

    def forward(self, h1: Tensor, h2: Tensor) -> Tensor:
        return self.call_functional(h1, h2)
