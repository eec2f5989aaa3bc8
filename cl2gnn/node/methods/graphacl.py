"""GraphACL: asymmetric contrastive learning on the input graph."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.utils import add_remaining_self_loops, remove_self_loops, sort_edge_index

from ..._validation import check_integer
from ...nn._graph import edge_dot
from ..config import NodeConfig
from .base import NodeMethod, ViewBatch
from .target import TargetEncoder, predictor


def sample_neighbours(edge_index: Tensor, num_nodes: int, samples: int) -> Tensor:
    """``samples`` in-neighbours of every node that has one, as edges ``[2, E']`` (source
    the neighbour): drawn without replacement where a node has at least ``samples``, all of
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
    # nodes with fewer: the missing draws uniformly among their neighbours
    short = torch.nonzero((degree > 0) & (degree < samples)).view(-1)
    missing = (samples - degree[short]).clamp(min=0)
    nodes = short.repeat_interleave(missing)
    offsets = (torch.rand(nodes.numel(), device=target.device) * degree[nodes]).long()
    extra = start[nodes] + offsets
    chosen = torch.cat([keep, extra])
    return torch.stack([source[chosen], target[chosen]])


def graphacl_loss(
    p: Tensor,
    u: Tensor,
    z: Tensor,
    positives: Tensor,
    temperature: float,
    negatives: Tensor | None = None,
) -> Tensor:
    r"""GraphACL's loss: anchor ``i``'s unit-norm prediction ``p_i`` and online embedding
    ``z_i``, the unit-norm target embeddings ``u`` of every row; each positive edge
    ``k -> i`` (a neighbour ``k`` of anchor ``i``) contributes

    .. math::
        \log\Big(e^{p_i^\top u_k / \tau} + \sum_{j \in Q_i} e^{z_i^\top z_j / \tau}\Big)
        - p_i^\top u_k / \tau,

    averaged over each anchor's positives and then over the anchors that have any. The
    negatives :math:`Q_i` are ``negatives[i]`` (anchor indices: GraphACL's sampled
    negatives) or, with ``None``, every anchor (its dense form, ``j = i`` included).

    Shapes: ``p, z`` :math:`(S, d)` (the anchors), ``u`` :math:`(R, d)`, ``positives``
    :math:`(2, E)` (sources in ``0 … R-1``, targets in ``0 … S-1``), ``negatives``
    :math:`(S, K)`; output: scalar.
    """
    anchors = z.size(0)
    anchor = positives[1]
    positive = edge_dot(p, u, positives) / temperature
    if negatives is None:
        negative = torch.logsumexp(z @ z.T / temperature, dim=1)
    else:
        negative = torch.logsumexp((z[:, None, :] * z[negatives]).sum(-1) / temperature, dim=1)
    per_edge = torch.logaddexp(positive, negative[anchor]) - positive
    count = torch.bincount(anchor, minlength=anchors)
    per_anchor = torch.zeros(anchors, dtype=per_edge.dtype, device=z.device).index_add(
        0, anchor, per_edge / count[anchor]
    )
    return per_anchor[count > 0].mean()


class GraphACL(NodeMethod):
    r"""GraphACL (Xiao et al., *Simple and Asymmetric Graph Contrastive Learning without
    Augmentations*, NeurIPS 2023): a predictor on a node's online embedding is aligned,
    through InfoNCE, with the target embeddings of its one-hop neighbours (a target encoder
    following the online one by a moving average), against negatives drawn among the nodes
    (:func:`graphacl_loss`); no augmentation.

    In the message-passing reading this is alignment on the *input* graph
    (:class:`~cl2gnn.nn.AlignConv` on :math:`A`, not on an augmentation graph) through an
    asymmetric predictor, minus uniformity with sampled keys
    (``UniformAttention(keys=...)``). The predictor lets a node's representation differ from
    its neighbours' while predicting them, so it captures two-hop "monophily": why it works
    under heterophily.

    ``num_samples`` neighbours and negatives per node and step (the authors' heterophilous
    graphs' code), or ``None``: every neighbour and every node (their Cora code). With the
    configuration's ``self_loops`` a node is its own neighbour too, as in the authors' Cora
    graph. Mini-batches: the neighbours are a batch's sampled ones, the negatives its seeds.
    """

    name = "graphacl"

    def __init__(self, config: NodeConfig, *, encoder: torch.nn.Module, **context) -> None:
        super().__init__(config, encoder=encoder, **context)
        if config.num_samples is not None:
            check_integer(config.num_samples, "num_samples", 1)
        if not config.temperature > 0:
            raise ValueError(f"temperature must be > 0, got {config.temperature}")
        self.temperature, self.num_samples = config.temperature, config.num_samples
        self.self_loops = config.self_loops
        self.predictor = predictor(
            config.hidden, config.predictor_hidden, config.predictor_layers, "relu"
        )
        self.target = TargetEncoder(encoder, config.ema_decay, cosine=config.ema_cosine)

    def forward(self, encoder: torch.nn.Module, batch: ViewBatch) -> Tensor:
        view = batch.views[0]  # one view: GraphACL needs no augmentation
        seeds = batch.num_seeds
        h = encoder(*view)
        (u,) = self.target(ViewBatch([view], batch.edge_index, seeds))
        edges = batch.edge_index
        edges = edges[:, edges[1] < seeds]  # the seeds' neighbours
        if self.self_loops:
            edges = add_remaining_self_loops(remove_self_loops(edges)[0], num_nodes=seeds)[0]
        negatives = None
        if self.num_samples is not None:
            edges = sample_neighbours(edges, u.size(0), self.num_samples)
            negatives = torch.randint(seeds, (seeds, self.num_samples), device=h.device)
        z = F.normalize(h[:seeds], dim=-1)
        p = F.normalize(self.predictor(h[:seeds]), dim=-1)
        return graphacl_loss(p, F.normalize(u, dim=-1), z, edges, self.temperature, negatives)

    def after_step(self, encoder: torch.nn.Module, progress: float) -> None:
        self.target.update(encoder, progress)
