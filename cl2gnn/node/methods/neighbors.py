"""The input graph's edges as positives: Local-GCL's and HomoGCL's augmentation graph."""

from __future__ import annotations

from typing import Annotated

import torch
from torch import Tensor
from torch_geometric.data import Data

from ..._checks import integer, number
from ...graphs import cluster_labels, pair_graph
from ...losses import info_nce
from .base import ViewBatch, register_method
from .contrastive import InfoNCEMethod, Keys, MatmulDtype, Views, cross_view_edges
from .options import MethodOptions, Temperature, Width


class GraphPositives(InfoNCEMethod):
    """InfoNCE on an augmentation graph that links each node's view to its own other view
    (weight 1) and to the other view of its graph neighbors (weight ``neighbor_weight``):
    what :class:`Neighbors` and :class:`Homophily` share."""

    minibatch = False
    reads_graph = True

    def __init__(
        self,
        encoder: torch.nn.Module,
        options: MethodOptions,
        edge_index: Tensor,
        num_nodes: int,
        **context,
    ) -> None:
        super().__init__(encoder, options, **context)
        self.num_nodes = n = integer(1)(num_nodes, "num_nodes")
        graph = edge_index[:, edge_index[0] != edge_index[1]]  # a node's own view is a pair
        pairs = pair_graph(n, 2, device=graph.device)
        edges = torch.cat([pairs, cross_view_edges(graph[0], graph[1], n)], 1)
        weights = torch.ones(edges.size(1), device=graph.device)
        weights[pairs.size(1) :] = options.neighbor_weight
        self.register_buffer("positives", edges, persistent=False)
        self.register_buffer("positive_weight", weights, persistent=False)

    @classmethod
    def config_arguments(cls, config, data) -> dict:
        return {"edge_index": data.edge_index, "num_nodes": data.num_nodes}

    def positive_weights(self, h1: Tensor, h2: Tensor) -> Tensor:
        return self.positive_weight

    def forward(self, data: Data | ViewBatch) -> Tensor:
        z1, z2, h1, h2 = self.project(data)
        return info_nce.unchecked(
            torch.cat([z1, z2]),
            edge_index=self.positives,
            edge_weight=self.positive_weights(h1, h2).to(z1.dtype),
            **self.loss_options(),
        )


NeighborWeight = Annotated[float, number(0.0, 1000.0, above=True)]


@register_method("neighbors")
class Neighbors(GraphPositives):
    """The input graph as part of the augmentation graph, as in Local-GCL (Zhang et al.,
    2022) and HomoGCL (Li et al., KDD 2023): each node's view is a positive of its own other
    view (weight 1) and of its graph neighbors' other views (weight ``neighbor_weight``).

    Args:
        encoder (torch.nn.Module): the encoder.
        edge_index (Tensor): the input graph ``[2, E]`` whose edges are positives.
        num_nodes (int): its nodes.
        neighbor_weight (float, optional): the neighbors' weight (default: ``1.0``).
        proj_hidden, temperature, num_keys, matmul_dtype, views, dim: as :class:`GRACE`'s.
    """

    def __init__(
        self,
        encoder: torch.nn.Module,
        edge_index: Tensor,
        num_nodes: int,
        *,
        neighbor_weight: NeighborWeight = 1.0,
        proj_hidden: Width = 128,
        temperature: Temperature = 0.4,
        num_keys: Keys = None,
        matmul_dtype: MatmulDtype = None,
        views: Views = None,
        dim: int | None = None,
        distributed: str | None = None,
    ) -> None:
        options = self.Options(
            neighbor_weight=neighbor_weight,
            proj_hidden=proj_hidden,
            temperature=temperature,
            num_keys=num_keys,
            matmul_dtype=matmul_dtype,
        )
        super().__init__(
            encoder,
            options,
            edge_index,
            num_nodes,
            views=views,
            dim=dim,
            distributed=distributed,
        )


@register_method("homophily")
class Homophily(GraphPositives):
    """:class:`Neighbors` keeping only the edges whose ends fall in the same cluster of a
    spherical k-means (``clusters`` centroids, at most the nodes) of this step's encoder
    outputs: HomoGCL's saliency (Li et al., KDD 2023) in its hard limit, which stops pulling
    together neighbors that the embedding already separates. Args as :class:`Neighbors`'."""

    def __init__(
        self,
        encoder: torch.nn.Module,
        edge_index: Tensor,
        num_nodes: int,
        *,
        clusters: Annotated[int, integer(1)] = 10,
        neighbor_weight: NeighborWeight = 1.0,
        proj_hidden: Width = 128,
        temperature: Temperature = 0.4,
        num_keys: Keys = None,
        matmul_dtype: MatmulDtype = None,
        views: Views = None,
        dim: int | None = None,
        distributed: str | None = None,
    ) -> None:
        options = self.Options(
            clusters=clusters,
            neighbor_weight=neighbor_weight,
            proj_hidden=proj_hidden,
            temperature=temperature,
            num_keys=num_keys,
            matmul_dtype=matmul_dtype,
        )
        check_clusters(clusters, num_nodes)
        super().__init__(
            encoder,
            options,
            edge_index,
            num_nodes,
            views=views,
            dim=dim,
            distributed=distributed,
        )
        # the nodes at the ends of each positive edge
        self.register_buffer("positive_nodes", self.positives % self.num_nodes, persistent=False)

    @classmethod
    def check_compatible(cls, options, config, data, encoder) -> None:
        check_clusters(options.clusters, data.num_nodes)

    def positive_weights(self, h1, h2):
        labels = cluster_labels(0.5 * (h1 + h2), self.options.clusters)
        ends = labels[self.positive_nodes]
        return self.positive_weight * (ends[0] == ends[1])  # a node's own views: always kept


def check_clusters(clusters: int, num_nodes: int) -> None:
    """The homophily method's k-means: at most one centroid per node."""
    integer(1, num_nodes)(clusters, "homophily.clusters")
