"""Node-level contrastive objectives, all built from cl2gnn's operators and losses.

Each objective maps the projections ``z1, z2`` and encoder outputs ``h1, h2`` of the two
augmented views (``[N, d]``, row ``i`` = node ``i``) to a scalar.
"""

from __future__ import annotations

import torch
from torch import Tensor

from ..graphs import knn_graph, pair_graph
from ..losses import (
    KernelInfoNCELoss,
    MultiStageAlignmentLoss,
    RandomWalkLoss,
    SpectralContrastiveLoss,
    attention_info_nce,
    info_nce,
)
from ..nn import MultiStageMemory

METHODS = ("grace", "attention", "multistage", "kernel", "random_walk", "spectral", "knn")


class NodeObjective(torch.nn.Module):
    """The training loss of one method; stateful methods keep their state as buffers."""

    def __init__(self, method: str, num_nodes: int, dim: int, tau: float, knn_k: int = 5) -> None:
        super().__init__()
        if method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {method!r}")
        self.method, self.tau, self.knn_k = method, tau, knn_k
        self.register_buffer("pairs", pair_graph(num_nodes, 2), persistent=False)
        if method == "multistage":  # training steps are the stages
            memory = MultiStageMemory(num_nodes, dim, stages=2, warmup=20)
            self.multistage = MultiStageAlignmentLoss(memory)
        self.loss = {
            "kernel": KernelInfoNCELoss(gamma=1.0, temperature=tau),
            "random_walk": RandomWalkLoss(temperature=tau),
            "spectral": SpectralContrastiveLoss(),
        }.get(method)

    def forward(self, z1: Tensor, z2: Tensor, h1: Tensor, h2: Tensor) -> Tensor:
        m = self.method
        if self.loss is not None:
            return self.loss(z1, z2)
        if m == "grace":  # inter- and intra-view negatives: InfoNCE over the 2N stacked views
            return info_nce(z1, z2, temperature=self.tau)
        if m == "attention":
            return attention_info_nce(z1, z2, h1=h1, h2=h2, temperature=self.tau, beta=1.0)
        if m == "multistage":
            nodes = torch.arange(z1.size(0), device=z1.device)
            pull = self.multistage(z1, z2, nodes)  # also stores this step's features
            self.multistage.next_stage()
            return info_nce(z1, z2, temperature=self.tau) + pull / self.tau
        return info_nce(
            torch.cat([z1, z2]), edge_index=self._knn_positives(h1, h2), temperature=self.tau
        )

    def _knn_positives(self, h1: Tensor, h2: Tensor) -> Tensor:
        """The pair graph plus, across views, each node's k nearest feature-space neighbours."""
        n = h1.size(0)
        nbr, node = knn_graph(0.5 * (h1 + h2).detach(), self.knn_k, backend="torch")
        cross = torch.cat([torch.stack([nbr + n, node]), torch.stack([nbr, node + n])], dim=1)
        return torch.cat([self.pairs, cross], dim=1)
