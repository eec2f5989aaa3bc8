"""Graph Barlow Twins: the Barlow Twins loss on two augmented views of the graph."""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.data import Data

from ...losses import BarlowTwinsLoss
from ..views import View
from .base import NodeMethod, ViewBatch, register_method


@register_method("gbt")
class GraphBarlowTwins(NodeMethod):
    r"""Graph Barlow Twins (Bielak et al., *Graph Barlow Twins: A self-supervised
    representation learning framework for graphs*, Knowledge-Based Systems 2022): the
    encoder's outputs on two augmented views, batch-normalised over the nodes, and their
    cross-correlation pulled towards the identity (:class:`~cl2gnn.losses.BarlowTwinsLoss`,
    :math:`\lambda = 1/d`); no projector, no negatives.

    In the message-passing reading this is CCA-SSG's family: the diagonal term is alignment
    of the two views of each node (:class:`~cl2gnn.nn.AlignConv` on the pair graph, per
    dimension) and the off-diagonal term decorrelates the embedding dimensions, standing in
    for uniformity, on the cross-view correlation where CCA-SSG decorrelates each view's
    own. The statistics are the batch's: under ``torchrun`` those of the global batch (the
    means, deviations and the cross-correlation all-reduced with autograd, the sum divided
    by the global number of nodes), so the loss and, after DDP's average, the gradient are
    one process's on the global batch.

    Args:
        encoder (torch.nn.Module): the encoder.
        views, dim, distributed: as :class:`~cl2gnn.node.NodeMethod`'s.
    """

    spans_ranks = True
    min_batch_size = 2  # the deviations over a process's share need two rows

    def __init__(
        self,
        encoder: torch.nn.Module,
        *,
        views: View | tuple[View, View] | None = None,
        dim: int | None = None,
        distributed: str | None = None,
    ) -> None:
        super().__init__(encoder, self.Options(), views=views, dim=dim, distributed=distributed)
        self.loss = BarlowTwinsLoss(distributed=self.distributed)

    def forward(self, data: Data | ViewBatch) -> Tensor:
        h1, h2 = self.encode(self.view_batch(data))
        return self.loss(h1, h2)
