"""InfoNCE plus the multi-stage alignment of eq. 13 (a memory of every node)."""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.data import Data

from ..._checks import integer
from ...losses import MultiStageAlignmentLoss, info_nce
from ...nn import MultiStageMemory
from .base import ViewBatch, register_method
from .contrastive import InfoNCEMethod, Keys, MatmulDtype, Views
from .options import Temperature, Width


@register_method("multistage")
class MultiStage(InfoNCEMethod):
    """InfoNCE plus ``1/τ`` times the multi-stage alignment (eq. 13): each view pulled
    towards the mean of the other view and the node's stored mean views of the previous
    step (training steps are the stages, after a warm-up of 20). A memory of every node:
    ``num_nodes``, the graph's. Args otherwise as :class:`GRACE`'s."""

    minibatch = False

    def __init__(
        self,
        encoder: torch.nn.Module,
        num_nodes: int,
        *,
        proj_hidden: Width = 128,
        temperature: Temperature = 0.4,
        num_keys: Keys = None,
        matmul_dtype: MatmulDtype = None,
        views: Views = None,
        dim: int | None = None,
        distributed: str | None = None,
    ) -> None:
        options = self.Options(
            proj_hidden=proj_hidden,
            temperature=temperature,
            num_keys=num_keys,
            matmul_dtype=matmul_dtype,
        )
        super().__init__(encoder, options, views=views, dim=dim, distributed=distributed)
        num_nodes = integer(1)(num_nodes, "num_nodes")
        memory = MultiStageMemory(num_nodes, self.dim, stages=2, warmup=20)
        self.multistage = MultiStageAlignmentLoss(memory)

    @classmethod
    def config_arguments(cls, config, data) -> dict:
        return {"num_nodes": data.num_nodes}

    def forward(self, data: Data | ViewBatch) -> Tensor:
        z1, z2, _, _ = self.project(data)
        nodes = torch.arange(z1.size(0), device=z1.device)
        pull = self.multistage(z1, z2, nodes)  # also stores this step's features
        self.multistage.next_stage()
        loss = info_nce.unchecked(z1, z2, **self.loss_options())
        return loss + pull / self.options.temperature
