from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor
from typing_extensions import Unpack

from .._options import Positive, checks_options
from .._registry import PAIR_LOSSES, Example
from .._validation import check_features, check_normalized, check_same_shape
from ._inputs import Graph, GraphLoss, resolve_views, two_view_batches


@checks_options()
def alignment(x: Tensor, y: Tensor, alpha: Positive = 2.0) -> Tensor:
    r"""``mean_i ‖x_i - y_i‖₂^α`` over positive pairs of unit vectors."""
    check_features(x, "x")
    check_same_shape(x, y, ("x", "y"))
    check_normalized(x, "x")
    check_normalized(y, "y")
    return (x - y).norm(dim=1).pow(alpha).mean()


@checks_options()
def uniformity(x: Tensor, t: Positive = 2.0) -> Tensor:
    r"""``log mean_{i<j} exp(-t ‖x_i - x_j‖²)`` of unit vectors (a log-mean-exp, stable)."""
    check_features(x, "x", min_rows=2)
    check_normalized(x, "x")
    i, j = torch.triu_indices(x.size(0), x.size(0), offset=1, device=x.device)
    sq = (x[i] - x[j]).square().sum(-1)
    return torch.logsumexp(-t * sq, dim=0) - math.log(sq.numel())


@checks_options()
def alignment_uniformity(
    z1: Tensor,
    z2: Tensor | None = None,
    *,
    alpha: Positive = 2.0,
    t: Positive = 2.0,
    lam: float = 1.0,
    **graph: Unpack[Graph],
) -> Tensor:
    """Functional form of :class:`AlignmentUniformityLoss`."""
    if two_view_batches(z2, graph):
        uniform = 0.5 * (uniformity(z1, t) + uniformity(z2, t))
        return alignment(z1, z2, alpha) + lam * uniform
    x, edge_index, _ = resolve_views(z1, z2, **graph)
    src, dst = edge_index
    return alignment(x[dst], x[src], alpha) + lam * uniformity(x, t)


@PAIR_LOSSES.register
class AlignmentUniformityLoss(GraphLoss):
    r"""Alignment and uniformity on the hypersphere (*Understanding Contrastive
    Representation Learning through Alignment and Uniformity on the Hypersphere*, Wang &
    Isola, ICML 2020):

    .. math::
        \mathcal{L}_{\text{align}} = \mathbb{E}_{(x, y)}\|x - y\|_2^\alpha, \qquad
        \mathcal{L}_{\text{unif}} = \log \mathbb{E}_{i<j} e^{-t\|x_i - x_j\|_2^2},

    combined as :math:`\mathcal{L}_{\text{align}} + \lambda \cdot \frac12
    (\mathcal{L}_{\text{unif}}(z_1) + \mathcal{L}_{\text{unif}}(z_2))` (with a graph: the
    mean over its edges, and uniformity of all rows). The inputs must be L2-normalised;
    un-normalised features raise ``ValueError``. :meth:`alignment` and :meth:`uniformity`
    are the metrics.

    Args:
        alpha (float, optional): alignment exponent (default: ``2``).
        t (float, optional): uniformity scale (default: ``2``).
        lam (float, optional): uniformity weight :math:`\lambda` (default: ``1``).

    Shapes:
        - **input:** ``z1, z2`` :math:`(B, d)` unit rows, or ``x`` :math:`(N, d)` with
          ``edge_index`` or ``sample_id``
        - **output:** scalar

    Examples:
        >>> loss_fn = AlignmentUniformityLoss()
        >>> z1, z2 = F.normalize(z1, dim=-1), F.normalize(z2, dim=-1)
        >>> loss = loss_fn(z1, z2)
        >>> loss_fn.alignment(z1, z2), loss_fn.uniformity(z1)
    """

    functional = staticmethod(alignment_uniformity)

    @classmethod
    def examples(cls, n: int, d: int, generator: torch.Generator) -> dict[str, Example]:
        """Those of :class:`GraphLoss` on unit rows."""
        return {
            label: example._replace(args=tuple(F.normalize(x, dim=1) for x in example.args))
            for label, example in super().examples(n, d, generator).items()
        }

    def alignment(self, x: Tensor, y: Tensor) -> Tensor:
        return alignment(x, y, self.alpha)

    def uniformity(self, x: Tensor) -> Tensor:
        return uniformity(x, self.t)
