"""Stochastic-block-model similarity graphs of the synthetic studies."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor
from torch_geometric.utils import stochastic_blockmodel_graph


def sbm_graph(
    block_sizes: Sequence[int],
    p: float,
    q: float,
    *,
    seed: int | None = None,
    device: torch.device | str | None = None,
) -> tuple[Tensor, Tensor]:
    r"""An undirected SBM graph: edge probability ``p`` inside a block, ``q`` across.

    Args:
        block_sizes (Sequence[int]): vertices per block (the ground-truth clusters).
        p (float): within-block edge probability in ``[0, 1]``.
        q (float): between-block edge probability in ``[0, 1]``.
        seed (int, optional): seed for a reproducible graph.
        device (optional): device of the outputs.

    Returns:
        ``(edge_index [2, E], labels [N])``; no self loops, both directions present.
    """
    if not block_sizes or min(block_sizes) < 1:
        raise ValueError(f"block_sizes must be positive integers, got {list(block_sizes)}")
    for name, value in (("p", p), ("q", q)):
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"{name} must lie in [0, 1], got {value}")
    num_blocks = len(block_sizes)
    probs = torch.full((num_blocks, num_blocks), float(q))
    probs.fill_diagonal_(float(p))
    with torch.random.fork_rng(devices=[]):
        if seed is not None:
            torch.manual_seed(seed)
        edge_index = stochastic_blockmodel_graph(list(block_sizes), probs)
    labels = torch.arange(num_blocks).repeat_interleave(torch.tensor(list(block_sizes)))
    return edge_index.to(device), labels.to(device)
