from __future__ import annotations

import math

import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn.conv.gcn_conv import gcn_norm

from .._validation import check_features, check_same_shape
from ..nn._graph import edge_dot
from ._base import GraphLoss
from ._views import resolve_views


def spectral_contrastive(
    z1: Tensor,
    z2: Tensor | None = None,
    *,
    edge_index: Tensor | None = None,
    edge_weight: Tensor | None = None,
    sample_id: Tensor | None = None,
    mu: float = 1.0,
    normalize: bool = True,
) -> Tensor:
    """Functional form of :class:`SpectralContrastiveLoss`."""

    def scale(z: Tensor) -> Tensor:
        return F.normalize(z, dim=-1) * math.sqrt(mu) if normalize else z

    if z2 is not None and edge_index is None and sample_id is None:
        check_features(z1, "z1")
        check_same_shape(z1, z2)
        a, b = scale(z1), scale(z2)
        return -2 * (a * b).sum(-1).mean() + _mean_off_diagonal_square(a, b)
    x, edge_index, edge_weight = resolve_views(z1, z2, edge_index, edge_weight, sample_id)
    x = scale(x)
    edge_index, weight = gcn_norm(edge_index, edge_weight, x.size(0), False, False, dtype=x.dtype)
    positive = (weight * edge_dot(x, x, edge_index)).sum() / weight.sum()
    return -2 * positive + _mean_off_diagonal_square(x, x)


def _mean_off_diagonal_square(a: Tensor, b: Tensor) -> Tensor:
    """``mean_{i != j} (a_i·b_j)²`` without masks: all pairs minus the diagonal. All pairs
    are ``‖A Bᵀ‖²_F = ⟨AᵀA, BᵀB⟩_F``: with fewer features than rows the ``d × d`` Gram
    matrices cost ``O(N d²)`` instead of the ``O(N² d)`` pair matrix."""
    n, d = a.shape
    total = (a.T @ a).mul_(b.T @ b).sum() if d < n else (a @ b.T).square_().sum()
    return (total - (a * b).sum(-1).square().sum()) / (n * (n - 1))


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

    Shapes:
        - **input:** ``z1, z2`` :math:`(B, d)`, or ``x`` :math:`(N, d)` with
          ``edge_index`` or ``sample_id``
        - **output:** scalar

    Examples:
        >>> loss = SpectralContrastiveLoss()(z1, z2)
    """

    functional = staticmethod(spectral_contrastive)

    def __init__(self, mu: float = 1.0, normalize: bool = True) -> None:
        if not mu > 0:
            raise ValueError(f"mu must be > 0, got {mu}")
        super().__init__(mu=mu, normalize=normalize)
