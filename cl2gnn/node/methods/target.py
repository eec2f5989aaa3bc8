"""A target encoder that follows the online encoder by an exponential moving average, and
the predictor on the online side: what the bootstrapping methods (BGRL, GraphACL) share."""

from __future__ import annotations

import copy
import math
from typing import Annotated

import torch
from torch import Tensor
from torch_geometric.nn import MLP
from torch_geometric.nn.inits import reset

from ..._checks import integer, number
from ..config import MAX_DEPTH
from .base import ViewBatch

# a predictor's layers, and the target's moving-average decay
PredictorLayers = Annotated[int, integer(0, MAX_DEPTH)]
Decay = Annotated[float, number(0.0, 1.0)]


class TargetEncoder(torch.nn.Module):
    """A copy of the online encoder, outside the optimiser, moved after every step to
    ``decay · target + (1 - decay) · online``.

    Its outputs carry no gradient: the target's side of an alignment is a stop-gradient
    target, as in BYOL and SimSiam (eq. 8's stop-gradient, here on the alignment term).

    Args:
        encoder (torch.nn.Module): the online encoder, copied.
        decay (float): the moving average's decay in ``[0, 1]``.
        cosine (bool, optional): raise the decay to 1 along a cosine over training
            (BGRL's schedule, ``1 - (1 - decay)(cos(π t) + 1) / 2`` at progress ``t``)
            (default: ``False``).
        reinitialise (bool, optional): start from fresh weights rather than the online
            encoder's (BGRL's code does) (default: ``False``).
    """

    def __init__(
        self,
        encoder: torch.nn.Module,
        decay: float,
        cosine: bool = False,
        reinitialise: bool = False,
    ) -> None:
        super().__init__()
        if not 0.0 <= decay <= 1.0:
            raise ValueError(f"ema_decay must lie in [0, 1], got {decay}")
        self.encoder = copy.deepcopy(encoder)
        if reinitialise:  # every submodule's reset_parameters (any encoder)
            reset(self.encoder)
        self.encoder.requires_grad_(False)
        self.decay, self.cosine = decay, cosine

    def current_decay(self, progress: float) -> float:
        if not self.cosine:
            return self.decay
        return 1.0 - (1.0 - self.decay) * (math.cos(math.pi * progress) + 1.0) / 2.0

    @torch.no_grad()
    def update(self, online: torch.nn.Module, progress: float) -> None:
        """One moving-average step towards ``online`` (weights and batch-norm statistics)."""
        decay = self.current_decay(progress)
        for target, source in zip(
            self.encoder.state_dict().values(), online.state_dict().values(), strict=True
        ):
            if target.is_floating_point():
                target.lerp_(source, 1.0 - decay)
            else:  # batch norm's step count
                target.copy_(source)

    @torch.no_grad()
    def forward(self, batch: ViewBatch) -> list[Tensor]:
        """The target's outputs on each view, all rows (in training mode, as the online
        encoder runs: batch norm normalises by the batch's statistics)."""
        self.encoder.train()
        return [view(self.encoder) for view in batch.views]


def predictor(dim: int, hidden: int, layers: int, activation: str) -> torch.nn.Module:
    """An MLP ``dim -> hidden -> … -> dim`` (PyG's ``MLP``, no normalisation), one linear
    layer for ``layers=1``, none (the identity) for ``layers=0``."""
    if layers < 0:
        raise ValueError(f"predictor_layers must be >= 0, got {layers}")
    if layers <= 1:
        return torch.nn.Linear(dim, dim) if layers else torch.nn.Identity()
    return MLP([dim, *[hidden] * (layers - 1), dim], act=activation, norm=None)
