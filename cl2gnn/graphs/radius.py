"""ε-ball graphs: every pair closer than a radius."""

from __future__ import annotations

import torch
from torch import Tensor

from .._validation import check_features


def radius_graph(
    x: Tensor,
    r: float,
    *,
    max_num_neighbors: int | None = None,
    tile_size: int = 4096,
) -> Tensor:
    r"""Edges ``j -> i`` for every pair with :math:`\|x_i - x_j\|_2 \le r`, ``i != j``.

    Computed by tiled matmul on ``x``'s device, O(tile_size * N) extra memory.

    Args:
        x (torch.Tensor): points ``[N, d]``.
        r (float): radius, ``> 0``.
        max_num_neighbors (int, optional): keep only the nearest this many per row.
        tile_size (int, optional): rows per tile (default: ``4096``).

    Returns:
        ``edge_index`` ``[2, E]`` (source = neighbor, target = centre), grouped by target.
        Symmetric unless ``max_num_neighbors`` truncates.
    """
    check_features(x)
    if not r > 0:
        raise ValueError(f"r must be > 0, got {r}")
    if max_num_neighbors is not None and max_num_neighbors < 1:
        raise ValueError(f"max_num_neighbors must be >= 1, got {max_num_neighbors}")
    x = x.detach()
    n = x.size(0)
    sq = (x * x).sum(-1)
    sources, targets = [], []
    for start in range(0, n, tile_size):
        q = x[start : start + tile_size]
        d2 = (sq[start : start + tile_size, None] + sq[None, :] - 2 * q @ x.T).clamp(min=0)
        rows = torch.arange(q.size(0), device=x.device)
        d2[rows, rows + start] = float("inf")
        d2 = d2.masked_fill(d2 > r * r, float("inf"))
        if max_num_neighbors is not None and max_num_neighbors < n - 1:
            d2, cols = d2.topk(max_num_neighbors, dim=1, largest=False)
        else:
            cols = torch.arange(n, device=x.device).expand_as(d2)
        hit = torch.isfinite(d2)
        sources.append(cols[hit])
        targets.append((rows + start)[:, None].expand_as(d2)[hit])
    return torch.stack([torch.cat(sources), torch.cat(targets)])
