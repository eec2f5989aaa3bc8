"""GraphACL: asymmetric contrastive learning on the input graph."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.utils import add_remaining_self_loops, remove_self_loops, sort_edge_index

from ..._checks import integer, optional
from ..._checks import temperature as temperature_check
from ...losses import GraphACLLoss
from ..config import NodeConfig
from .base import NodeMethod, ViewBatch, register_method
from .options import option
from .target import TargetEncoder, TargetOptions, predictor


def sample_neighbors(edge_index: Tensor, num_nodes: int, samples: int) -> Tensor:
    """``samples`` in-neighbors of every node that has one, as edges ``[2, E']`` (source
    the neighbor): drawn without replacement where a node has at least ``samples``, all of
    them and the rest drawn with replacement where it has fewer (torch's global generator).
    """
    edge_index = sort_edge_index(edge_index, num_nodes=num_nodes, sort_by_row=False)
    source, target = edge_index
    degree = torch.bincount(target, minlength=num_nodes)
    start = torch.cumsum(degree, 0) - degree
    # without replacement: the first `samples` of a random order within each node's edges
    order = torch.argsort(target * 2.0 + torch.rand(target.numel(), device=target.device))
    rank = torch.arange(target.numel(), device=target.device) - start[target[order]]
    keep = order[rank < samples]
    # nodes with fewer: the missing draws uniformly among their neighbors
    short = torch.nonzero((degree > 0) & (degree < samples)).view(-1)
    missing = (samples - degree[short]).clamp(min=0)
    nodes = short.repeat_interleave(missing)
    offsets = (torch.rand(nodes.numel(), device=target.device) * degree[nodes]).long()
    extra = start[nodes] + offsets
    chosen = torch.cat([keep, extra])
    return torch.stack([source[chosen], target[chosen]])


# GraphACL's neighbors and negatives drawn per node and step: its authors draw 5 to 10, each
# one N more pairs a step
MAX_SAMPLES = 1024


@dataclass(frozen=True)
class GraphACLOptions(TargetOptions):
    """The loss's temperature, and ``samples_per_node``: the neighbors and negatives drawn
    per node and step (``None``: all of them)."""

    temperature: float = option(0.4, temperature_check)
    samples_per_node: int | None = option(5, optional(integer(1, MAX_SAMPLES)))


@register_method("graphacl")
class GraphACL(NodeMethod):
    r"""GraphACL (Xiao et al., *Simple and Asymmetric Graph Contrastive Learning without
    Augmentations*, NeurIPS 2023): a predictor on a node's online embedding is aligned,
    through InfoNCE, with the target embeddings of its one-hop neighbors (a target encoder
    following the online one by a moving average), against negatives drawn among the nodes
    (:class:`~cl2gnn.losses.GraphACLLoss`); no augmentation.

    In the message-passing reading this is alignment on the *input* graph
    (:class:`~cl2gnn.nn.AlignConv` on :math:`A`, not on an augmentation graph) through an
    asymmetric predictor, minus uniformity with sampled keys
    (``UniformAttention(keys=...)``). The predictor lets a node's representation differ from
    its neighbors' while predicting them, so it captures two-hop "monophily": why it works
    under heterophily.

    ``samples_per_node`` neighbors and negatives per node and step (the authors' heterophilous
    graphs' code), or ``None``: every neighbor and every node (their Cora code). With the
    configuration's ``self_loops`` a node is its own neighbor too, as in the authors' Cora
    graph. Mini-batches: the neighbors are a batch's sampled ones, the negatives its seeds.
    """

    Options = GraphACLOptions
    reads_graph = True

    def __init__(self, config: NodeConfig, *, encoder: torch.nn.Module, **context) -> None:
        super().__init__(config, encoder=encoder, **context)
        options = self.options
        self.samples_per_node = options.samples_per_node
        self.self_loops = config.self_loops
        self.predictor = predictor(
            self.dim, options.predictor_hidden, options.predictor_layers, "relu"
        )
        self.loss = GraphACLLoss(options.temperature)
        self.target = TargetEncoder(encoder, options.ema_decay, cosine=options.ema_cosine)

    def forward(self, encoder: torch.nn.Module, batch: ViewBatch) -> Tensor:
        view = batch.views[0]  # one view: GraphACL needs no augmentation
        seeds = batch.num_seeds
        h = view(encoder)
        (u,) = self.target(ViewBatch([view], batch.edge_index, seeds))
        edges = batch.edge_index
        edges = edges[:, edges[1] < seeds]  # the seeds' neighbors
        if self.self_loops:
            edges = add_remaining_self_loops(remove_self_loops(edges)[0], num_nodes=seeds)[0]
        negatives = None
        if self.samples_per_node is not None:
            edges = sample_neighbors(edges, u.size(0), self.samples_per_node)
            negatives = torch.randint(seeds, (seeds, self.samples_per_node), device=h.device)
        z = F.normalize(h[:seeds], dim=-1)
        p = F.normalize(self.predictor(h[:seeds]), dim=-1)
        return self.loss(p, F.normalize(u, dim=-1), z, edges, negatives)

    def after_step(self, encoder: torch.nn.Module, progress: float) -> None:
        self.target.update(encoder, progress)
