"""The random-walk Laplacian loss on GRACE's scheme."""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.data import Data

from ...losses import RandomWalkLoss
from .base import ViewBatch, register_method
from .contrastive import ContrastiveMethod, Views
from .options import Temperature, Width


@register_method("random_walk")
class RandomWalk(ContrastiveMethod):
    """The random-walk Laplacian loss (Tan et al., ICLR 2024). Args: ``encoder``,
    ``proj_hidden``, ``temperature``, as :class:`GRACE`'s."""

    spans_ranks = True

    def __init__(
        self,
        encoder: torch.nn.Module,
        *,
        proj_hidden: Width = 128,
        temperature: Temperature = 0.4,
        views: Views = None,
        dim: int | None = None,
        distributed: str | None = None,
    ) -> None:
        options = self.Options(proj_hidden=proj_hidden, temperature=temperature)
        super().__init__(encoder, options, views=views, dim=dim, distributed=distributed)
        self.loss = RandomWalkLoss(temperature=temperature, distributed=self.distributed)

    def forward(self, data: Data | ViewBatch) -> Tensor:
        z1, z2, _, _ = self.project(data)
        return self.loss(z1, z2)
