"""Row-tiled evaluation of dense pairwise losses.

A loss that is a sum of per-anchor terms over all pairs is evaluated ``tile`` anchors at a
time; each tile is checkpointed (recomputed in backward), so peak memory is
``O(tile * N)`` instead of ``O(N²)`` and no ``N × N`` temporaries are allocated (on a CPU
their page faults cost more than the arithmetic).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor
from torch.utils.checkpoint import checkpoint

TILE = 1024  # anchors per tile; module-level so that tests can shrink it


def row_tiled_sum(term: Callable[[int, int], Tensor], n: int, tile: int) -> Tensor:
    """``Σ term(start, end)`` over row tiles; ``term`` returns the tile's scalar sum."""
    if n <= tile:
        return term(0, n)
    parts = [
        checkpoint(term, start, min(start + tile, n), use_reentrant=False)
        for start in range(0, n, tile)
    ]
    return torch.stack(parts).sum()


def edges_by_target(edge_index: Tensor, n: int, tile: int) -> list[Tensor]:
    """Edge ids grouped by the row tile of their target (anchor)."""
    bucket = edge_index[1] // tile
    order = torch.argsort(bucket, stable=True)
    counts = torch.bincount(bucket, minlength=(n + tile - 1) // tile).tolist()
    return list(torch.split(order, counts))


def self_mask(start: int, end: int, n: int, device: torch.device) -> Tensor:
    """Boolean ``[end-start, n]``, true at each row's own column."""
    mask = torch.zeros(end - start, n, dtype=torch.bool, device=device)
    mask[:, start:end].fill_diagonal_(True)
    return mask
