"""InfoNCE with attention-weighted positives (eq. 15 of the message-passing paper)."""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.data import Data

from ...losses import attention_info_nce
from .base import ViewBatch, register_method
from .contrastive import ContrastiveMethod, Views
from .options import Temperature, Width


@register_method("attention")
class Attention(ContrastiveMethod):
    """InfoNCE whose positive pairs are reweighted by detached attention on the encoder
    outputs (eq. 15 of the message-passing paper; :func:`~cl2gnn.losses.attention_info_nce`,
    ``beta=1``). Args: ``encoder``, ``proj_hidden``, ``temperature``, as :class:`GRACE`'s."""

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

    def forward(self, data: Data | ViewBatch) -> Tensor:
        z1, z2, h1, h2 = self.project(data)
        temperature = self.options.temperature
        return attention_info_nce(
            z1, z2, h1=h1, h2=h2, temperature=temperature, beta=1.0, distributed=self.distributed
        )
