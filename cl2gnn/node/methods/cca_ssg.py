"""CCA-SSG: canonical-correlation-analysis-inspired self-supervision on graphs."""

from __future__ import annotations

from typing import Annotated

import torch
from torch import Tensor
from torch_geometric.data import Data

from ..._checks import number
from ...losses import CCASSGLoss
from ..views import View
from .base import NodeMethod, ViewBatch, register_method


@register_method("cca_ssg")
class CCASSG(NodeMethod):
    r"""CCA-SSG (Zhang et al., *From Canonical Correlation Analysis to Self-supervised Graph
    Neural Networks*, NeurIPS 2021): invariance between the two views' standardised
    embeddings plus decorrelation of the embedding dimensions
    (:class:`~cl2gnn.losses.CCASSGLoss`); no
    projector, no negatives.

    In the message-passing reading the invariance is alignment on the pair graph
    (:class:`~cl2gnn.nn.AlignConv`) and the decorrelation stands in for uniformity: it
    spreads the embedding over its dimensions as the affinity graph's attention spreads it
    over the nodes. The statistics are the batch's: under ``torchrun`` those of the global
    batch, every rank's seeds (the means, standard deviations and Grams all-reduced), so
    the loss and, after DDP's average, the gradient are one process's on the global batch.

    Args:
        encoder (torch.nn.Module): the encoder.
        decorrelation (float, optional): the decorrelation term's weight :math:`\lambda`
            (default: ``1e-3``).
        views, dim, distributed: as :class:`~cl2gnn.node.NodeMethod`'s.
    """

    spans_ranks = True
    # per rank's share: one process's share is the whole batch, whose standard deviations
    # need two rows (a last batch of one seed joins the one before); across ranks the loss
    # would take a share of one row
    min_batch_size = 2

    def __init__(
        self,
        encoder: torch.nn.Module,
        *,
        decorrelation: Annotated[float, number(0.0, 1000.0)] = 1e-3,
        views: View | tuple[View, View] | None = None,
        dim: int | None = None,
        distributed: str | None = None,
    ) -> None:
        options = self.Options(decorrelation=decorrelation)
        super().__init__(encoder, options, views=views, dim=dim, distributed=distributed)
        self.loss = CCASSGLoss(decorrelation, self.distributed)

    def forward(self, data: Data | ViewBatch) -> Tensor:
        h1, h2 = self.encode(self.view_batch(data))
        return self.loss(h1, h2)
