"""The image SSL objectives of the examples, all from cl2gnn losses and operators."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn.conv.gcn_conv import gcn_norm

from .._validation import check_features, check_same_shape
from ..distributed import Shard, checked_shard, gather_rows, is_distributed
from ..graphs import knn_graph, pair_graph
from ..losses import (
    AttentionInfoNCELoss,
    InfoNCELoss,
    KernelInfoNCELoss,
    MultiStageSimSiamLoss,
)
from ..losses._operators import uniform_attention
from ..nn import MultiStageMemory

KERNELS = {
    "laplacian": {"gamma": 1.0},
    "exp0.5": {"gamma": 0.5},
    "sum": {"gamma": 1.0, "mixture": "simple"},
    "concat": {"gamma": 1.0, "mixture": "concat"},
}


# the kNN positives are searched in the global batch, gathered on every rank
NN_POSITIVES_IN_RING = (
    "nn_positives searches each view's neighbors in the global batch gathered on every rank: "
    "use distributed='gather' (ring mode holds nothing of the global batch's size)"
)


def _full(x: Tensor) -> Tensor:
    """Half-precision outputs (bf16 autocast) in float32 for the loss; others unchanged."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


class SimCLRObjective(torch.nn.Module):
    """InfoNCE on two views; optionally attention alignment (``beta``), a Kernel-InfoNCE
    kernel, or kNN positives within the batch (``nn_positives`` neighbors per view).
    ``distributed`` (``"gather"`` or ``"ring"``) takes the negatives from the global batch
    of every rank, and in gather mode the kNN positives too; ring mode refuses
    ``nn_positives`` (``ValueError``), whose neighbors are searched in the gathered global
    batch."""

    def __init__(
        self,
        temperature: float = 0.5,
        attention: float | None = None,
        kernel: str | None = None,
        nn_positives: int = 0,
        distributed: str | None = None,
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
        if nn_positives and distributed == "ring":
            raise ValueError(NN_POSITIVES_IN_RING)
        self.nn_positives, self.temperature, self.distributed = (
            nn_positives,
            temperature,
            distributed,
        )
        if attention is not None:
            self.loss = AttentionInfoNCELoss(temperature, beta=attention, distributed=distributed)
        elif kernel is not None:
            self.loss = KernelInfoNCELoss(
                temperature=temperature, distributed=distributed, **KERNELS[kernel]
            )
        else:
            self.loss = InfoNCELoss(temperature, distributed=distributed)

    def forward(self, out1, out2, sample_id: Tensor) -> Tensor:
        (h1, z1, _), (h2, z2, _) = out1, out2
        z1, z2 = _full(z1), _full(z2)
        if isinstance(self.loss, AttentionInfoNCELoss):
            return self.loss(z1, z2, h1=_full(h1), h2=_full(h2))
        if self.nn_positives and is_distributed(self.distributed):
            if self.distributed == "ring":  # set after construction
                raise ValueError(NN_POSITIVES_IN_RING)
            return self._global_nn_positives(z1, z2)
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

    def _global_nn_positives(self, z1: Tensor, z2: Tensor) -> Tensor:
        """InfoNCE with each view's ``nn_positives`` nearest neighbors in the gathered batch
        of every rank as extra positives: the single-process objective on the union of the
        ranks' batches, each rank returning ``world_size ×`` its anchors' share. The
        positives' keys are gathered with autograd (gather mode), so that a neighbor on
        another rank receives its gradient. Every rank's views are checked together before
        the gather."""

        def check() -> None:
            check_features(z1, "z1", min_rows=0)
            check_features(z2, "z2", min_rows=0)
            check_same_shape(z1, z2)

        _, samples = checked_shard(z1, check, call="SimCLR nn-positives (gather)")
        shard = Shard(samples.rank, tuple(2 * size for size in samples.sizes))
        x = F.normalize(torch.cat([z1, z2]), dim=1)
        keys = gather_rows(x, shard)
        pairs = []  # each rank's two views, stacked [z1_r; z2_r] at its offset
        for rank, size in enumerate(shard.sizes):
            pairs.append(pair_graph(size // 2, 2, device=x.device) + sum(shard.sizes[:rank]))
        neighbors = knn_graph(keys.detach(), self.nn_positives, backend="torch")
        edge_index, weight = gcn_norm(  # Ā of the global augmentation graph
            torch.cat([*pairs, neighbors], dim=1),
            num_nodes=shard.total,
            add_self_loops=False,
            dtype=x.dtype,
        )
        mine = (edge_index[1] >= shard.offset) & (edge_index[1] < shard.offset + shard.rows)
        source, target = edge_index[0, mine], edge_index[1, mine] - shard.offset
        positive = (weight[mine] * (x[target] * keys[source]).sum(1)).sum() / self.temperature
        lse = uniform_attention(self.temperature, self.distributed).row_logsumexp(x)
        return (lse.sum() - positive) * (shard.world_size / shard.total)


class SimSiamObjective(torch.nn.Module):
    """SimSiam's symmetric negative cosine; with ``memory`` the targets are multi-stage."""

    def __init__(self, memory: MultiStageMemory | None = None) -> None:
        super().__init__()
        self.multistage = MultiStageSimSiamLoss(memory) if memory is not None else None

    def forward(self, out1, out2, sample_id: Tensor) -> Tensor:
        (_, z1, p1), (_, z2, p2) = out1, out2
        z1, z2, p1, p2 = _full(z1), _full(z2), _full(p1), _full(p2)
        if self.multistage is not None:
            return self.multistage(p1, p2, z1, z2, sample_id)
        return -0.5 * (
            F.cosine_similarity(p1, z2.detach()).mean()
            + F.cosine_similarity(p2, z1.detach()).mean()
        )

    def end_epoch(self) -> None:
        if self.multistage is not None:
            self.multistage.next_stage()
