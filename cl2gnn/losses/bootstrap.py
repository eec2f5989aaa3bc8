"""BGRL's and BYOL's bootstrap loss: predictions aligned with stop-gradient targets."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from .._validation import check_features, check_same_shape
from ..graphs import cached_pair_graph
from ..nn import AlignConv
from ._operators import shared_operator


def bootstrap_loss(p1: Tensor, p2: Tensor, t1: Tensor, t2: Tensor) -> Tensor:
    r"""BGRL's (and BYOL's) symmetric loss: each view's prediction aligned with the other
    view's stop-gradient target,

    .. math::
        \mathcal{L} = 2 - \frac{1}{N} \sum_i \cos(p_{1,i}, \operatorname{sg} t_{2,i})
                    - \frac{1}{N} \sum_i \cos(p_{2,i}, \operatorname{sg} t_{1,i}),

    computed as :class:`~cl2gnn.nn.AlignConv`'s energy on the pair graph of the unit-norm
    prediction and target rows: ``tr(Xᵀ L X) = Σ_i ‖p̂_i - t̂_i‖² = Σ_i (2 - 2 cos)``.
    Functional form of :class:`BootstrapLoss`.

    Shapes: ``p1, p2, t1, t2`` :math:`(N, d)`; output: scalar.
    """
    for name, value in (("p1", p1), ("p2", p2), ("t1", t1), ("t2", t2)):
        check_features(value, name)
    for name, other in (("p2", p2), ("t1", t1), ("t2", t2)):
        check_same_shape(p1, other, ("p1", name))
    n = p1.size(0)
    pairs = cached_pair_graph(n, 2, device=p1.device)
    align = shared_operator(AlignConv)
    energy = sum(
        align.energy(torch.cat([F.normalize(p, dim=-1), F.normalize(t.detach(), dim=-1)]), pairs)
        for p, t in ((p1, t2), (p2, t1))
    )
    return energy / (2 * n)


class BootstrapLoss(torch.nn.Module):
    r"""The bootstrap loss of BGRL (Thakoor et al., *Large-Scale Representation Learning on
    Graphs via Bootstrapping*, ICLR 2022) and BYOL (Grill et al., NeurIPS 2020): the online
    predictions of each view aligned, by cosine, with the other view's target embeddings,
    which receive no gradient (:func:`bootstrap_loss`),

    .. math::
        \mathcal{L} = 2 - \frac{1}{N} \sum_i \big(\cos(p_{1,i}, \operatorname{sg} t_{2,i})
                    + \cos(p_{2,i}, \operatorname{sg} t_{1,i})\big).

    In the message-passing reading this is :class:`~cl2gnn.nn.AlignConv` on the pair graph
    toward a stop-gradient target, with no uniformity term: the predictor and the moving
    average of the target keep it from collapsing.

    Shapes:
        - **input:** predictions ``p1, p2`` and targets ``t1, t2``, each :math:`(N, d)`
        - **output:** scalar

    Examples:
        >>> loss_fn = BootstrapLoss()
        >>> p1, p2 = predictor(online(view1)), predictor(online(view2))
        >>> with torch.no_grad():
        ...     t1, t2 = target(view1), target(view2)
        >>> loss = loss_fn(p1, p2, t1, t2)
    """

    def __init__(self) -> None:  # no options
        super().__init__()

    def forward(self, p1: Tensor, p2: Tensor, t1: Tensor, t2: Tensor) -> Tensor:
        return bootstrap_loss(p1, p2, t1, t2)
