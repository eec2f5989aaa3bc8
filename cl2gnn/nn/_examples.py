"""Random inputs of the operators' example calls (see :mod:`cl2gnn._registry`)."""

from __future__ import annotations

import torch
from torch import Tensor


def features(n: int, d: int, generator: torch.Generator) -> Tensor:
    return torch.randn(n, d, generator=generator, dtype=torch.float64)


def weighted_graph(n: int, generator: torch.Generator) -> tuple[Tensor, Tensor]:
    """``4 n`` random edges (self-loops and repeats included) with positive weights."""
    edge_index = torch.randint(0, n, (2, 4 * n), generator=generator)
    return edge_index, torch.rand(4 * n, generator=generator, dtype=torch.float64) + 0.1


def keys(n: int, generator: torch.Generator) -> Tensor:
    """A quarter of the ``n >= 4`` rows, drawn without repeats."""
    return torch.randperm(n, generator=generator)[: n // 4]
