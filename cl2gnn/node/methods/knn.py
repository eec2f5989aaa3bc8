"""InfoNCE with feature-space nearest neighbors as positives across the views."""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.data import Data

from ...graphs import knn_graph, pair_graph
from ...losses import info_nce
from .base import ViewBatch, register_method
from .contrastive import InfoNCEMethod, Keys, MatmulDtype, Views, cross_view_edges
from .options import Temperature, Width


@register_method("knn")
class KNearest(InfoNCEMethod):
    """InfoNCE on the pair graph plus, across views, each node's ``k = 5`` nearest
    neighbors by cosine similarity of the mean encoder output (feature-space positives
    from :func:`~cl2gnn.graphs.knn_graph`). Args as :class:`GRACE`'s."""

    k = 5
    min_batch_size = k + 1  # the k neighbors of a seed among the batch's other seeds

    def __init__(
        self,
        encoder: torch.nn.Module,
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

    def forward(self, data: Data | ViewBatch) -> Tensor:
        z1, z2, h1, h2 = self.project(data)
        nbr, node = knn_graph(0.5 * (h1 + h2).detach(), self.k, backend="torch")
        positives = torch.cat(
            [pair_graph(h1.size(0), 2, device=h1.device), cross_view_edges(nbr, node, h1.size(0))],
            dim=1,
        )
        return info_nce.unchecked(torch.cat([z1, z2]), edge_index=positives, **self.loss_options())
