"""GraphACL: asymmetric contrastive learning on the input graph."""

from __future__ import annotations

from typing import Annotated

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.utils import add_remaining_self_loops, remove_self_loops, sort_edge_index

from ..._checks import integer, optional
from ...losses import GraphACLLoss
from ..views import View
from .base import NodeMethod, ViewBatch, register_method
from .options import Flag, Temperature, Width
from .target import Decay, PredictorLayers, TargetEncoder, predictor


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

    Args:
        encoder (torch.nn.Module): the online encoder (the target is a copy of it).
        temperature (float, optional): the loss's :math:`\tau` (default: ``0.4``).
        samples_per_node (int, optional): neighbors and negatives drawn per node and step
            (``None``: every neighbor and every node) (default: ``5``).
        predictor_hidden, predictor_layers, ema_decay, ema_cosine: as :class:`BGRL`'s
            (default: 512, 2, 0.99, ``False``).
        self_loops (bool, optional): a node is its own neighbor too (default: ``True``).
        views, dim: as :class:`~cl2gnn.node.NodeMethod`'s (one view is read).
    """

    reads_graph = True

    def __init__(
        self,
        encoder: torch.nn.Module,
        *,
        temperature: Temperature = 0.4,
        samples_per_node: Annotated[int | None, optional(integer(1, MAX_SAMPLES))] = 5,
        predictor_hidden: Width = 512,
        predictor_layers: PredictorLayers = 2,
        ema_decay: Decay = 0.99,
        ema_cosine: Flag = False,
        self_loops: bool = True,
        views: View | tuple[View, View] | None = None,
        dim: int | None = None,
        distributed: str | None = None,
    ) -> None:
        options = self.Options(
            temperature=temperature,
            samples_per_node=samples_per_node,
            predictor_hidden=predictor_hidden,
            predictor_layers=predictor_layers,
            ema_decay=ema_decay,
            ema_cosine=ema_cosine,
        )
        super().__init__(encoder, options, views=views, dim=dim, distributed=distributed)
        self.samples_per_node, self.self_loops = samples_per_node, bool(self_loops)
        self.predictor = predictor(self.dim, predictor_hidden, predictor_layers, "relu")
        self.loss = GraphACLLoss(temperature)
        self.target = TargetEncoder(encoder, ema_decay, cosine=ema_cosine)

    @classmethod
    def config_arguments(cls, config, data) -> dict:
        return {"self_loops": config.self_loops}  # the configuration's, the GCN's too

    def forward(self, data: Data | ViewBatch) -> Tensor:
        batch = self.view_batch(data)
        view = batch.views[0]  # one view: GraphACL needs no augmentation
        seeds = batch.num_seeds
        h = view(self.encoder)
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

    def after_step(self, progress: float = 1.0) -> None:
        self.target.update(self.encoder, progress)
