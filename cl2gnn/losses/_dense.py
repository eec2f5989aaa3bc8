"""Dense helpers for the losses defined on all pairs of a batch."""

from __future__ import annotations

import torch
from torch import Tensor


def positive_mask(edge_index: Tensor, n: int) -> Tensor:
    """Boolean ``[N, N]`` with ``[i, j]`` set for every augmentation edge ``j -> i``, ``i != j``."""
    mask = torch.zeros(n, n, dtype=torch.bool, device=edge_index.device)
    mask[edge_index[1], edge_index[0]] = True
    return mask.fill_diagonal_(False)


def off_diagonal(n: int, device: torch.device) -> Tensor:
    return ~torch.eye(n, dtype=torch.bool, device=device)
