"""Node-level contrastive objectives, all built from cl2gnn's operators and losses.

Each objective maps the projections ``z1, z2`` and encoder outputs ``h1, h2`` of the two
augmented views (``[N, d]``, row ``i`` = node ``i``) to a scalar.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from .._validation import check_integer
from ..distributed import check_mode
from ..graphs import knn_graph, pair_graph
from ..losses import (
    KernelInfoNCELoss,
    MultiStageAlignmentLoss,
    RandomWalkLoss,
    SpectralContrastiveLoss,
    attention_info_nce,
    info_nce,
)
from ..losses._operators import cached_pair_graph
from ..losses.infonce import check_num_keys
from ..nn import MultiStageMemory
from .names import DISTRIBUTED_METHODS, METHODS, SAMPLED_KEYS_METHODS


def cluster_labels(x: Tensor, clusters: int) -> Tensor:
    """Spherical k-means (FAISS, 20 iterations) labels of the rows of ``x``; FAISS's seed is
    drawn from torch's global generator, so seeded runs repeat."""
    import faiss

    data = F.normalize(x.detach().float(), dim=1).cpu().numpy()
    seed = int(torch.randint(2**31 - 1, ()))
    kmeans = faiss.Kmeans(data.shape[1], clusters, niter=20, spherical=True, seed=seed)
    kmeans.train(data)
    _, labels = kmeans.index.search(data, 1)
    return torch.from_numpy(labels[:, 0]).to(x.device)


def cross_view_edges(source: Tensor, target: Tensor, num_nodes: int) -> Tensor:
    """Edges ``source -> target`` of a node graph as positives across the two stacked
    views: ``source`` in view 2 for ``target`` in view 1, and the reverse."""
    return torch.cat(
        [torch.stack([source + num_nodes, target]), torch.stack([source, target + num_nodes])],
        dim=1,
    )


class NodeObjective(torch.nn.Module):
    """The training loss of one method; stateful methods keep their state as buffers.

    ``neighbors`` is InfoNCE on an augmentation graph that links each node's view to its
    own other view (weight 1) and to the other view of its graph neighbours (weight
    ``neighbor_weight``): the input graph is part of the augmentation graph, as in
    Local-GCL (Zhang et al., 2022) and HomoGCL (Li et al., KDD 2023). It needs ``graph``,
    the input ``edge_index``.

    ``homophily`` keeps of those neighbour positives only the edges whose ends fall in the
    same cluster of a spherical k-means (``clusters`` centroids) of this step's encoder
    outputs: HomoGCL's saliency (Li et al., KDD 2023) in its hard limit, which stops
    pulling together neighbours that the embedding already separates.

    ``num_keys`` (InfoNCE-based methods) computes the uniformity term over that many views
    drawn afresh each step instead of all ``2N`` (see :func:`~cl2gnn.losses.info_nce`).

    ``distributed`` (``"gather"`` or ``"ring"``, methods :data:`DISTRIBUTED_METHODS`):
    under a process group, each rank passes its own nodes' views and the negatives span
    every rank's (see :mod:`cl2gnn.distributed`); the value is ``world_size ×`` this rank's
    share of the global loss.

    The methods that keep no per-node state (:data:`BATCH_METHODS`) take any number of
    rows per call, as mini-batch training needs.
    """

    def __init__(
        self,
        method: str,
        num_nodes: int,
        dim: int,
        tau: float,
        graph: Tensor | None = None,
        neighbor_weight: float = 1.0,
        knn_k: int = 5,
        num_keys: int | None = None,
        clusters: int = 10,
        distributed: str | None = None,
    ) -> None:
        super().__init__()
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        if num_keys is not None and method not in SAMPLED_KEYS_METHODS:
            raise ValueError(
                f"num_keys applies to the methods {SAMPLED_KEYS_METHODS}, not {method!r}"
            )
        check_num_keys(num_keys)
        check_mode(distributed)
        if distributed is not None and method not in DISTRIBUTED_METHODS:
            raise ValueError(
                f"distributed applies to the methods {DISTRIBUTED_METHODS}, not {method!r}"
            )
        if distributed is not None and num_keys is not None:
            raise ValueError("distributed takes no num_keys: the negatives are every rank's")
        self.distributed = distributed
        self.method, self.tau, self.knn_k, self.num_keys = method, tau, knn_k, num_keys
        if method == "homophily":
            check_integer(clusters, "clusters", 1, num_nodes)
        self.clusters = clusters
        if method in ("neighbors", "homophily"):
            if graph is None:
                raise ValueError(f"the {method!r} method needs the input graph")
            if not neighbor_weight > 0:
                raise ValueError(f"neighbor_weight must be > 0, got {neighbor_weight}")
            graph = graph[:, graph[0] != graph[1]]  # a node's own view is already a pair
            pairs = pair_graph(num_nodes, 2, device=graph.device)
            edges = torch.cat([pairs, cross_view_edges(graph[0], graph[1], num_nodes)], 1)
            weights = torch.ones(edges.size(1), device=graph.device)
            weights[pairs.size(1) :] = neighbor_weight
            self.register_buffer("positives", edges, persistent=False)
            self.register_buffer("positive_weight", weights, persistent=False)
            if method == "homophily":  # the nodes at the ends of each positive edge
                self.register_buffer("positive_nodes", edges % num_nodes, persistent=False)
        if method == "multistage":  # training steps are the stages
            memory = MultiStageMemory(num_nodes, dim, stages=2, warmup=20)
            self.multistage = MultiStageAlignmentLoss(memory)
        self.loss = {
            "kernel": lambda: KernelInfoNCELoss(1.0, temperature=tau, distributed=distributed),
            "random_walk": lambda: RandomWalkLoss(temperature=tau, distributed=distributed),
            "spectral": lambda: SpectralContrastiveLoss(distributed=distributed),
        }.get(method, lambda: None)()

    def forward(self, z1: Tensor, z2: Tensor, h1: Tensor, h2: Tensor) -> Tensor:
        m = self.method
        if self.loss is not None:
            return self.loss(z1, z2)
        if m == "grace":  # inter- and intra-view negatives: InfoNCE over the 2N stacked views
            return info_nce(
                z1, z2, temperature=self.tau, num_keys=self.num_keys, distributed=self.distributed
            )
        if m == "attention":
            return attention_info_nce(
                z1, z2, h1=h1, h2=h2, temperature=self.tau, beta=1.0, distributed=self.distributed
            )
        if m in ("neighbors", "homophily"):
            weight = self.positive_weight.to(z1.dtype)
            if m == "homophily":
                labels = cluster_labels(0.5 * (h1 + h2), self.clusters)
                ends = labels[self.positive_nodes]
                weight = weight * (ends[0] == ends[1])  # a node's own views: always kept
            return info_nce(
                torch.cat([z1, z2]),
                edge_index=self.positives,
                edge_weight=weight,
                temperature=self.tau,
                num_keys=self.num_keys,
            )
        if m == "multistage":
            nodes = torch.arange(z1.size(0), device=z1.device)
            pull = self.multistage(z1, z2, nodes)  # also stores this step's features
            self.multistage.next_stage()
            return info_nce(z1, z2, temperature=self.tau, num_keys=self.num_keys) + pull / self.tau
        return info_nce(
            torch.cat([z1, z2]),
            edge_index=self._knn_positives(h1, h2),
            temperature=self.tau,
            num_keys=self.num_keys,
        )

    def _knn_positives(self, h1: Tensor, h2: Tensor) -> Tensor:
        """The pair graph plus, across views, each node's k nearest feature-space neighbours."""
        nbr, node = knn_graph(0.5 * (h1 + h2).detach(), self.knn_k, backend="torch")
        pairs = cached_pair_graph(h1.size(0), h1.device)
        return torch.cat([pairs, cross_view_edges(nbr, node, h1.size(0))], dim=1)
