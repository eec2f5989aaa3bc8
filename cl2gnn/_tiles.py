"""Tile arithmetic shared by the tiled (one process) and ring (several) log-partitions;
imports torch alone, so that ``cl2gnn.nn`` and ``cl2gnn.distributed`` can both use it."""

from __future__ import annotations

import torch
from torch import Tensor


def acc_dtype(dtype: torch.dtype) -> torch.dtype:
    """float64 stays float64; everything else accumulates in float32."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def tile_ranges(n: int, tile: int) -> list[tuple[int, int]]:
    return [(s, min(s + tile, n)) for s in range(0, n, tile)]


def online_update(m: Tensor, s: Tensor, block: Tensor, dim: int, inplace: bool) -> None:
    """Fold the exp-sums of ``block`` along ``dim`` into running max ``m`` and sum ``s``."""
    new_max = torch.maximum(m, block.amax(dim))
    safe = torch.where(torch.isfinite(new_max), new_max, torch.zeros_like(new_max))
    shift = safe[:, None] if dim == 1 else safe[None, :]
    shifted = block.sub_(shift) if inplace else block - shift
    s.mul_(torch.exp(m - safe)).add_(shifted.exp_().sum(dim))
    m.copy_(new_max)
