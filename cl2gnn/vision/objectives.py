"""The image SSL objectives of the examples, all from cl2gnn losses and operators."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from ..graphs import knn_graph, pair_graph
from ..losses import (
    AttentionInfoNCELoss,
    InfoNCELoss,
    KernelInfoNCELoss,
    MultiStageSimSiamLoss,
)
from ..nn import MultiStageMemory

KERNELS = {
    "laplacian": {"gamma": 1.0},
    "exp0.5": {"gamma": 0.5},
    "sum": {"gamma": 1.0, "mixture": "simple"},
    "concat": {"gamma": 1.0, "mixture": "concat"},
}


class SimCLRObjective(torch.nn.Module):
    """InfoNCE on two views; optionally attention alignment (``beta``), a Kernel-InfoNCE
    kernel, or kNN positives within the batch (``nn_positives`` neighbours per view)."""

    def __init__(
        self,
        temperature: float = 0.5,
        attention: float | None = None,
        kernel: str | None = None,
        nn_positives: int = 0,
    ) -> None:
        super().__init__()
        if (
            sum(
                x is not None and x is not False and x != 0
                for x in (attention, kernel, nn_positives)
            )
            > 1
        ):
            raise ValueError("choose at most one of attention, kernel and nn_positives")
        if kernel is not None and kernel not in KERNELS:
            raise ValueError(f"kernel must be one of {sorted(KERNELS)}, got {kernel!r}")
        self.nn_positives = nn_positives
        if attention is not None:
            self.loss = AttentionInfoNCELoss(temperature, beta=attention)
        elif kernel is not None:
            self.loss = KernelInfoNCELoss(temperature=temperature, **KERNELS[kernel])
        else:
            self.loss = InfoNCELoss(temperature)

    def forward(self, out1, out2, sample_id: Tensor) -> Tensor:
        (h1, z1, _), (h2, z2, _) = out1, out2
        z1, z2 = z1.float(), z2.float()
        if isinstance(self.loss, AttentionInfoNCELoss):
            return self.loss(z1, z2, h1=h1.float(), h2=h2.float())
        if self.nn_positives:
            x = torch.cat([z1, z2])
            graph = torch.cat(
                [
                    pair_graph(len(z1), 2, device=x.device),
                    knn_graph(x.detach(), self.nn_positives, backend="torch"),
                ],
                dim=1,
            )
            return self.loss(x, edge_index=graph)
        return self.loss(z1, z2)


class SimSiamObjective(torch.nn.Module):
    """SimSiam's symmetric negative cosine; with ``memory`` the targets are multi-stage."""

    def __init__(self, memory: MultiStageMemory | None = None) -> None:
        super().__init__()
        self.multistage = MultiStageSimSiamLoss(memory) if memory is not None else None

    def forward(self, out1, out2, sample_id: Tensor) -> Tensor:
        (_, z1, p1), (_, z2, p2) = out1, out2
        z1, z2, p1, p2 = z1.float(), z2.float(), p1.float(), p2.float()
        if self.multistage is not None:
            return self.multistage(p1, p2, z1, z2, sample_id)
        return -0.5 * (
            F.cosine_similarity(p1, z2.detach()).mean()
            + F.cosine_similarity(p2, z1.detach()).mean()
        )

    def end_epoch(self) -> None:
        if self.multistage is not None:
            self.multistage.next_stage()
