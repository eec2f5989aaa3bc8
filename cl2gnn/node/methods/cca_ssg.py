"""CCA-SSG: canonical-correlation-analysis-inspired self-supervision on graphs."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from ..._checks import number
from ...losses import CCASSGLoss
from ..config import NodeConfig
from .base import NodeMethod, ViewBatch, register_method
from .options import MethodOptions, option


@dataclass(frozen=True)
class CCASSGOptions(MethodOptions):
    """The weight of the decorrelation term."""

    decorrelation: float = option(1e-3, number(0.0, 1000.0))


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
    """

    Options = CCASSGOptions
    spans_ranks = True
    # per rank's share: one process's share is the whole batch, whose standard deviations
    # need two rows (a last batch of one seed joins the one before); across ranks the loss
    # would take a share of one row
    min_batch_size = 2

    def __init__(self, config: NodeConfig, **context) -> None:
        super().__init__(config, **context)
        self.loss = CCASSGLoss(self.options.decorrelation, self.distributed)

    def forward(self, encoder: torch.nn.Module, batch: ViewBatch) -> Tensor:
        h1, h2 = self.encode(encoder, batch)
        return self.loss(h1, h2)
