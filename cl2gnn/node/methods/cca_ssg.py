"""CCA-SSG: canonical-correlation-analysis-inspired self-supervision on graphs."""

from __future__ import annotations

import torch
from torch import Tensor

from ...graphs import pair_graph
from ...nn import AlignConv
from ..config import NodeConfig
from .base import NodeMethod, ViewBatch


def standardize(h: Tensor) -> Tensor:
    """Each column to zero mean and unit (unbiased) standard deviation over the rows; a
    constant column (a dead unit in a small batch) stays zero instead of dividing by 0."""
    return (h - h.mean(0)) / h.std(0).clamp(min=torch.finfo(h.dtype).eps)


def cca_ssg_loss(h1: Tensor, h2: Tensor, decorrelation: float) -> Tensor:
    r"""CCA-SSG's loss on the two views' embeddings, as the authors' code computes it: with
    :math:`Z_v` the column-standardised :math:`H_v` and :math:`C = Z_1^\top Z_2 / N`,
    :math:`C_v = Z_v^\top Z_v / N`,

    .. math::
        \mathcal{L} = -\operatorname{tr}(C)
        + \lambda \big(\|I - C_1\|_F^2 + \|I - C_2\|_F^2\big).

    The invariance term is half the paper's :math:`\|\tilde Z_1 - \tilde Z_2\|_F^2`
    (:math:`\tilde Z = Z / \sqrt{N}`) less a constant, since standardised columns have a
    fixed norm: :class:`~cl2gnn.nn.AlignConv`'s energy on the pair graph of the two views'
    rows, ``Σ_i ‖z̃1_i - z̃2_i‖²``. The decorrelation acts on the :math:`d \times d` feature
    Gram, whose non-zero spectrum is that of the :math:`N \times N` affinity Gram of
    :class:`~cl2gnn.losses.SpectralContrastiveLoss`'s uniformity term.

    Shapes: ``h1, h2`` :math:`(N, d)`, :math:`N \ge 2`; output: scalar.
    """
    n, d = h1.shape
    if n < 2:
        raise ValueError(f"CCA-SSG standardises over the nodes: needs at least 2, got {n}")
    z1, z2 = standardize(h1) / n**0.5, standardize(h2) / n**0.5
    invariance = AlignConv().energy(torch.cat([z1, z2]), pair_graph(n, 2, device=h1.device))
    constant = d * (n - 1) / n  # ‖Z̃_v‖² per view: n - 1 per standardised column, over n
    eye = torch.eye(d, dtype=h1.dtype, device=h1.device)
    decor = (eye - z1.T @ z1).square().sum() + (eye - z2.T @ z2).square().sum()
    return 0.5 * invariance - constant + decorrelation * decor


class CCASSG(NodeMethod):
    r"""CCA-SSG (Zhang et al., *From Canonical Correlation Analysis to Self-supervised Graph
    Neural Networks*, NeurIPS 2021): invariance between the two views' standardised
    embeddings plus decorrelation of the embedding dimensions (:func:`cca_ssg_loss`); no
    projector, no negatives.

    In the message-passing reading the invariance is alignment on the pair graph
    (:class:`~cl2gnn.nn.AlignConv`) and the decorrelation stands in for uniformity: it
    spreads the embedding over its dimensions as the affinity graph's attention spreads it
    over the nodes. The statistics are the batch's, so under ``torchrun`` each rank's
    batch is standardised alone: it is refused there.
    """

    name = "cca_ssg"

    def __init__(self, config: NodeConfig, **context) -> None:
        super().__init__(config, **context)
        if not config.decorrelation >= 0:
            raise ValueError(f"decorrelation must be >= 0, got {config.decorrelation}")
        self.decorrelation = config.decorrelation

    def forward(self, encoder: torch.nn.Module, batch: ViewBatch) -> Tensor:
        h1, h2 = self.encode(encoder, batch)
        return cca_ssg_loss(h1, h2, self.decorrelation)
