from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

from ..nn import MultiStageMemory


def multi_stage_alignment(
    memory: MultiStageMemory, z1: Tensor, z2: Tensor, sample_id: Tensor
) -> Tensor:
    r"""``-½ mean_i [x1_i·sg(z̄(x2)_i) + x2_i·sg(z̄(x1)_i)]`` on L2-normalised views (eq. 13).

    Computed from ``MultiStageMemory.energy``: ``E(x) - ½‖x‖² = -Σ x·sg(z̄)``.
    """
    return _alignment(memory, F.normalize(z1, dim=-1), F.normalize(z2, dim=-1), sample_id)


def _alignment(memory: MultiStageMemory, x1: Tensor, x2: Tensor, sample_id: Tensor) -> Tensor:
    e1 = memory.energy(x1, sample_id, current=x2) - 0.5 * (x1 * x1).sum()
    e2 = memory.energy(x2, sample_id, current=x1) - 0.5 * (x2 * x2).sum()
    return 0.5 * (e1 + e2) / x1.size(0)


def multi_stage_simsiam(
    memory: MultiStageMemory, p1: Tensor, p2: Tensor, z1: Tensor, z2: Tensor, sample_id: Tensor
) -> Tensor:
    r"""SimSiam's symmetric negative cosine with multi-stage targets:
    ``-½ [cos(p1, sg(z̄(z2))) + cos(p2, sg(z̄(z1)))]``, batch mean."""
    target2 = memory.aggregate_stages(z2.detach(), sample_id).detach()
    target1 = memory.aggregate_stages(z1.detach(), sample_id).detach()
    cos = F.cosine_similarity(p1, target2, dim=-1) + F.cosine_similarity(p2, target1, dim=-1)
    return -0.5 * cos.mean()


class _MemoryLoss(torch.nn.Module):
    def __init__(self, memory: MultiStageMemory, push: bool = True) -> None:
        super().__init__()
        self.memory = memory
        self.push = push

    def _store(self, a: Tensor, b: Tensor, sample_id: Tensor) -> None:
        if self.push and self.training:
            self.memory.push(0.5 * (a.detach() + b.detach()), sample_id)

    def next_stage(self) -> None:
        """Close the current stage (call at the end of every epoch, or step)."""
        self.memory.next_stage()

    def extra_repr(self) -> str:
        return f"push={self.push!r}"


class MultiStageAlignmentLoss(_MemoryLoss):
    r"""Multi-stage alignment :math:`-\mathbb{E} f(x)^\top \bar{z}` (eq. 13 of *A Message
    Passing Perspective on Learning Dynamics of Contrastive Learning*, Wang et al., ICLR
    2023): each view is pulled towards the JK aggregate of the other view's current and
    stored features (:class:`~cl2gnn.nn.MultiStageMemory`).

    In training mode the mean of the two normalised views is pushed into the memory after
    the loss is computed; call :meth:`next_stage` at the end of each stage. Add a
    uniformity term to prevent collapse.

    Args:
        memory (MultiStageMemory): the bank (``dim`` = feature dimension).
        push (bool, optional): store each batch automatically (default: ``True``).

    Shapes:
        - **input:** ``z1, z2`` :math:`(B, d)`, ``sample_id`` :math:`(B)`
        - **output:** scalar

    Examples:
        >>> memory = MultiStageMemory(num_samples=50_000, dim=128, stages=2, warmup=10)
        >>> loss_fn = MultiStageAlignmentLoss(memory)
        >>> loss = loss_fn(z1, z2, sample_id=index)
        >>> loss_fn.next_stage()  # at the end of the epoch
    """

    def forward(self, z1: Tensor, z2: Tensor, sample_id: Tensor) -> Tensor:
        x1, x2 = F.normalize(z1, dim=-1), F.normalize(z2, dim=-1)
        loss = _alignment(self.memory, x1, x2, sample_id)
        self._store(x1, x2, sample_id)
        return loss


class MultiStageSimSiamLoss(_MemoryLoss):
    r"""SimSiam (Chen & He, CVPR 2021) with multi-stage targets: the stop-gradient target
    of each predictor output is the JK aggregate (:class:`~cl2gnn.nn.MultiStageMemory`) of
    the other view's projection and its stored projections from previous stages (eq. 13
    of the message-passing paper; with ``stages=2`` and a warm-up the PKU-ML reference
    code's ``½ current + ½ previous epoch``).

    .. math::
        \mathcal{L} = -\tfrac12 \big[\cos(p_1, \operatorname{sg}\bar{z}(z_2))
        + \cos(p_2, \operatorname{sg}\bar{z}(z_1))\big]

    Args:
        memory (MultiStageMemory): the bank (``dim`` = projection dimension).
        push (bool, optional): store each batch's mean projection (default: ``True``).

    Shapes:
        - **input:** ``p1, p2, z1, z2`` :math:`(B, d)`, ``sample_id`` :math:`(B)`
        - **output:** scalar

    Examples:
        >>> memory = MultiStageMemory(50_000, 2048, stages=2, warmup=50, dtype=torch.bfloat16)
        >>> loss_fn = MultiStageSimSiamLoss(memory)
        >>> loss = loss_fn(p1, p2, z1, z2, sample_id=index)
    """

    def forward(self, p1: Tensor, p2: Tensor, z1: Tensor, z2: Tensor, sample_id: Tensor) -> Tensor:
        loss = multi_stage_simsiam(self.memory, p1, p2, z1, z2, sample_id)
        self._store(z1, z2, sample_id)
        return loss
