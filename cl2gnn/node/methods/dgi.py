"""Deep Graph Infomax: nodes told from a row-shuffled corruption against the graph's
summary."""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import Tensor
from torch_geometric.data import Data

from ...losses import LocalGlobalLoss
from ..encoders.features import shuffle_rows
from ..views import View
from .base import EncoderInput, NodeMethod, ViewBatch, register_method


def corrupt(view: EncoderInput) -> EncoderInput:
    """DGI's corruption: the view's feature rows shuffled over its nodes (torch's global
    generator), its graph kept."""
    return replace(view, x=shuffle_rows(view.x))


@register_method("dgi")
class DeepGraphInfomax(NodeMethod):
    r"""Deep Graph Infomax (Veličković et al., *Deep Graph Infomax*, ICLR 2019): the encoder
    on the graph and on a corruption of it (its feature rows shuffled over the nodes, the
    edges kept), a summary :math:`s = \sigma(\operatorname{mean}_i h_i)` of the graph, and
    a bilinear discriminator trained with the encoder to score the graph's nodes against
    :math:`s` above the corrupted ones (:class:`~cl2gnn.losses.LocalGlobalLoss`).

    In the message-passing reading this is alignment of every node with one summary node:
    the star graph from every node to a virtual node holding :math:`s`, aligned under the
    bilinear similarity, with the corrupted nodes as the negatives pushed away from it. It
    uses the first view only (DGI augments nothing but by the corruption: its
    configuration drops no edges and masks no features).

    Mini-batches: the summary is the batch's seeds' and the corruption shuffles the
    sampled subgraph's rows. Under ``torchrun`` it is refused: the summary would be every
    rank's and the corruption a shuffle across ranks.

    Args:
        encoder (torch.nn.Module): the encoder.
        views, dim: as :class:`~cl2gnn.node.NodeMethod`'s (DGI's configuration augments
            nothing: the views drop no edge and mask no feature).
    """

    min_batch_size = 2  # one node shuffled is itself: no negative

    def __init__(
        self,
        encoder: torch.nn.Module,
        *,
        views: View | tuple[View, View] | None = None,
        dim: int | None = None,
        distributed: str | None = None,
    ) -> None:
        super().__init__(encoder, self.Options(), views=views, dim=dim, distributed=distributed)
        self.loss = LocalGlobalLoss(self.dim)

    def forward(self, data: Data | ViewBatch) -> Tensor:
        batch = self.view_batch(data)
        view, seeds = batch.views[0], batch.num_seeds
        h = view(self.encoder)[:seeds]
        corrupted = corrupt(view)(self.encoder)[:seeds]
        return self.loss(h, corrupted, torch.sigmoid(h.mean(0)))
