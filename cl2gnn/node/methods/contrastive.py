"""GRACE's scheme and the contrastive objectives of the seed papers on it: both views through
the encoder and a projection head, a contrastive loss between the projections.

In the message-passing reading every one of them is alignment on an augmentation graph
(the two views of a node, and for some methods graph or feature-space neighbors) minus
uniformity on the affinity graph of the projections: :class:`~cl2gnn.nn.AlignConv` and
:class:`~cl2gnn.nn.UniformAttention` through the losses of :mod:`cl2gnn.losses`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor

from ..._checks import integer, number, one_of, optional
from ..._checks import temperature as temperature_check
from ...graphs import cluster_labels, knn_graph, pair_graph
from ...losses import (
    KernelInfoNCELoss,
    MultiStageAlignmentLoss,
    RandomWalkLoss,
    SpectralContrastiveLoss,
    attention_info_nce,
    info_nce,
)
from ...nn import MultiStageMemory
from ...nn.tiled import MATMUL_DTYPES
from ..config import WIDTH, NodeConfig
from .base import NodeMethod, ViewBatch, register_method
from .heads import ProjectionHead
from .options import MethodOptions, option


def cross_view_edges(source: Tensor, target: Tensor, num_nodes: int) -> Tensor:
    """Edges ``source -> target`` of a node graph as positives across the two stacked
    views: ``source`` in view 2 for ``target`` in view 1, and the reverse."""
    return torch.cat(
        [torch.stack([source + num_nodes, target]), torch.stack([source, target + num_nodes])],
        dim=1,
    )


@dataclass(frozen=True)
class HeadOptions(MethodOptions):
    """GRACE's projection head: its hidden width."""

    proj_hidden: int = option(128, WIDTH)


@dataclass(frozen=True)
class ContrastiveOptions(HeadOptions):
    """A contrastive loss's temperature."""

    temperature: float = option(0.4, temperature_check)


@dataclass(frozen=True)
class InfoNCEOptions(ContrastiveOptions):
    """The exact InfoNCE's: its uniformity term over ``num_keys`` views drawn per step
    instead of all ``2N`` (``None``: exact; full-batch only, a mini-batch's negatives are its
    seeds), and its tiles' products in ``matmul_dtype`` on the CPU (``"bfloat16"``: float32
    accumulation; ``None``: float32, exact)."""

    num_keys: int | None = option(None, optional(integer(1)), others_refuse=True)
    matmul_dtype: str | None = option(None, optional(one_of(*MATMUL_DTYPES)), others_refuse=True)


class ContrastiveMethod(NodeMethod):
    """GRACE's scheme (Zhu et al., 2020): encoder outputs ``h1, h2`` of the two views,
    projections ``z = head(h)`` (:class:`~cl2gnn.node.ProjectionHead`), and
    :meth:`objective` ``(z1, z2, h1, h2) -> loss`` over the seed rows."""

    Options = ContrastiveOptions
    min_batch_size = 2  # one seed has no negative: its loss is zero, or NaN (spectral)

    def __init__(self, config: NodeConfig, **context) -> None:
        super().__init__(config, **context)
        self.head = ProjectionHead(self.dim, self.options.proj_hidden)

    def loss_options(self) -> dict:
        """The exact InfoNCE's options, as :func:`~cl2gnn.losses.info_nce` takes them."""
        keys = ("temperature", "num_keys", "matmul_dtype")
        return {k: getattr(self.options, k) for k in keys if hasattr(self.options, k)}

    def forward(self, encoder: torch.nn.Module, batch: ViewBatch) -> Tensor:
        h1, h2 = self.encode(encoder, batch)
        return self.objective(self.head(h1), self.head(h2), h1, h2)

    def objective(self, z1: Tensor, z2: Tensor, h1: Tensor, h2: Tensor) -> Tensor:
        raise NotImplementedError


@register_method("grace")
class Grace(ContrastiveMethod):
    """GRACE: InfoNCE over the ``2N`` stacked projections, inter- and intra-view negatives
    (:func:`~cl2gnn.losses.info_nce` = ``AlignConv`` on the pair graph + ``UniformAttention``)."""

    Options = InfoNCEOptions
    spans_ranks = True

    def objective(self, z1, z2, h1, h2):
        return info_nce(z1, z2, distributed=self.distributed, **self.loss_options())


@register_method("attention")
class Attention(ContrastiveMethod):
    """InfoNCE whose positive pairs are reweighted by detached attention on the encoder
    outputs (eq. 15 of the message-passing paper; :func:`~cl2gnn.losses.attention_info_nce`,
    ``beta=1``)."""

    spans_ranks = True

    def objective(self, z1, z2, h1, h2):
        return attention_info_nce(
            z1,
            z2,
            h1=h1,
            h2=h2,
            temperature=self.options.temperature,
            beta=1.0,
            distributed=self.distributed,
        )


class _LossMethod(ContrastiveMethod):
    """A method that is one loss module of :mod:`cl2gnn.losses` on the projections."""

    spans_ranks = True

    def __init__(self, config: NodeConfig, **context) -> None:
        super().__init__(config, **context)
        self.loss = self.make_loss()

    def make_loss(self) -> torch.nn.Module:
        raise NotImplementedError

    def objective(self, z1, z2, h1, h2):
        return self.loss(z1, z2)


@register_method("kernel")
class KernelInfoNCE(_LossMethod):
    """Kernel-InfoNCE with the Laplacian kernel ``exp(-‖x - y‖ / τ)`` (Tan et al., ICLR
    2024)."""

    def make_loss(self):
        temperature = self.options.temperature
        return KernelInfoNCELoss(1.0, temperature=temperature, distributed=self.distributed)


@register_method("random_walk")
class RandomWalk(_LossMethod):
    """The random-walk Laplacian loss (Tan et al., ICLR 2024)."""

    def make_loss(self):
        return RandomWalkLoss(temperature=self.options.temperature, distributed=self.distributed)


@register_method("spectral")
class Spectral(_LossMethod):
    """The spectral contrastive loss (HaoChen et al., NeurIPS 2021): no temperature."""

    Options = HeadOptions

    def make_loss(self):
        return SpectralContrastiveLoss(distributed=self.distributed)


@register_method("multistage")
class MultiStage(ContrastiveMethod):
    """InfoNCE plus ``1/τ`` times the multi-stage alignment (eq. 13): each view pulled
    towards the mean of the other view and the node's stored mean views of the previous
    step (training steps are the stages, after a warm-up of 20)."""

    Options = InfoNCEOptions
    minibatch = False
    per_node_state = True

    def __init__(self, config: NodeConfig, **context) -> None:
        super().__init__(config, **context)
        memory = MultiStageMemory(self.num_nodes, self.dim, stages=2, warmup=20)
        self.multistage = MultiStageAlignmentLoss(memory)

    def objective(self, z1, z2, h1, h2):
        nodes = torch.arange(z1.size(0), device=z1.device)
        pull = self.multistage(z1, z2, nodes)  # also stores this step's features
        self.multistage.next_stage()
        loss = info_nce(z1, z2, **self.loss_options())
        return loss + pull / self.options.temperature


@register_method("knn")
class KNearest(ContrastiveMethod):
    """InfoNCE on the pair graph plus, across views, each node's ``k = 5`` nearest
    neighbors by cosine similarity of the mean encoder output (feature-space positives
    from :func:`~cl2gnn.graphs.knn_graph`)."""

    Options = InfoNCEOptions
    k = 5
    min_batch_size = k + 1  # the k neighbors of a seed among the batch's other seeds

    def objective(self, z1, z2, h1, h2):
        nbr, node = knn_graph(0.5 * (h1 + h2).detach(), self.k, backend="torch")
        positives = torch.cat(
            [pair_graph(h1.size(0), 2, device=h1.device), cross_view_edges(nbr, node, h1.size(0))],
            dim=1,
        )
        return info_nce(
            torch.cat([z1, z2]),
            edge_index=positives,
            **self.loss_options(),
        )


@dataclass(frozen=True)
class NeighborsOptions(InfoNCEOptions):
    """The weight of the graph neighbors' views as positives."""

    neighbor_weight: float = option(1.0, number(0.0, 1000.0, above=True))


@dataclass(frozen=True)
class HomophilyOptions(NeighborsOptions):
    """The k-means centroids (HomoGCL's Cora value)."""

    clusters: int = option(10, integer(1))


@register_method("neighbors")
class Neighbors(ContrastiveMethod):
    """InfoNCE on an augmentation graph that links each node's view to its own other view
    (weight 1) and to the other view of its graph neighbors (weight ``neighbor_weight``):
    the input graph is part of the augmentation graph, as in Local-GCL (Zhang et al., 2022)
    and HomoGCL (Li et al., KDD 2023)."""

    Options = NeighborsOptions
    minibatch = False
    reads_graph = True

    def __init__(self, config: NodeConfig, *, graph: Tensor | None = None, **context) -> None:
        super().__init__(config, graph=graph, **context)
        if graph is None:
            raise ValueError(f"the {self.name!r} method needs the input graph")
        n = self.num_nodes
        graph = graph[:, graph[0] != graph[1]]  # a node's own view is already a pair
        pairs = pair_graph(n, 2, device=graph.device)
        edges = torch.cat([pairs, cross_view_edges(graph[0], graph[1], n)], 1)
        weights = torch.ones(edges.size(1), device=graph.device)
        weights[pairs.size(1) :] = self.options.neighbor_weight
        self.register_buffer("positives", edges, persistent=False)
        self.register_buffer("positive_weight", weights, persistent=False)

    def positive_weights(self, h1: Tensor, h2: Tensor) -> Tensor:
        return self.positive_weight

    def objective(self, z1, z2, h1, h2):
        return info_nce(
            torch.cat([z1, z2]),
            edge_index=self.positives,
            edge_weight=self.positive_weights(h1, h2).to(z1.dtype),
            **self.loss_options(),
        )


@register_method("homophily")
class Homophily(Neighbors):
    """:class:`Neighbors` keeping only the edges whose ends fall in the same cluster of a
    spherical k-means (``clusters`` centroids) of this step's encoder outputs: HomoGCL's
    saliency (Li et al., KDD 2023) in its hard limit, which stops pulling together
    neighbors that the embedding already separates."""

    Options = HomophilyOptions

    def __init__(self, config: NodeConfig, **context) -> None:
        super().__init__(config, **context)
        integer(1, self.num_nodes)(self.options.clusters, "homophily.clusters")
        # the nodes at the ends of each positive edge
        self.register_buffer("positive_nodes", self.positives % self.num_nodes, persistent=False)

    def positive_weights(self, h1, h2):
        labels = cluster_labels(0.5 * (h1 + h2), self.options.clusters)
        ends = labels[self.positive_nodes]
        return self.positive_weight * (ends[0] == ends[1])  # a node's own views: always kept


class CallableObjective(ContrastiveMethod):
    """GRACE's scheme with any objective ``(z1, z2, h1, h2) -> loss`` (a baseline to compare
    against, a loss under study); the parameters of a ``torch.nn.Module`` objective train
    with the encoder."""

    name = "callable"
    Options = HeadOptions  # the objective's own options are its own business

    def __init__(self, config: NodeConfig, objective: Callable, **context) -> None:
        super().__init__(config, **context)
        self.fn = objective  # a Module is registered as a submodule: its parameters train
        self.label = getattr(objective, "__name__", type(objective).__name__)

    def objective(self, z1, z2, h1, h2):
        return self.fn(z1, z2, h1, h2)
