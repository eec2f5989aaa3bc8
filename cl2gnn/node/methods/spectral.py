"""The spectral contrastive loss on GRACE's scheme."""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.data import Data

from ...losses import SpectralContrastiveLoss
from .base import ViewBatch, register_method
from .contrastive import ContrastiveMethod, Views
from .options import Width


@register_method("spectral")
class Spectral(ContrastiveMethod):
    """The spectral contrastive loss (HaoChen et al., NeurIPS 2021): no temperature. Args:
    ``encoder``, ``proj_hidden``, as :class:`GRACE`'s."""

    spans_ranks = True

    def __init__(
        self,
        encoder: torch.nn.Module,
        *,
        proj_hidden: Width = 128,
        views: Views = None,
        dim: int | None = None,
        distributed: str | None = None,
    ) -> None:
        options = self.Options(proj_hidden=proj_hidden)
        super().__init__(encoder, options, views=views, dim=dim, distributed=distributed)
        self.loss = SpectralContrastiveLoss(distributed=self.distributed)

    def forward(self, data: Data | ViewBatch) -> Tensor:
        z1, z2, _, _ = self.project(data)
        return self.loss(z1, z2)
