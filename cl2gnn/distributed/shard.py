"""Which rows of the global batch this rank holds."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.distributed as dist
from torch import Tensor

from .._torchrun import MODES


def check_mode(mode: str | None) -> None:
    if mode is not None and mode not in MODES:
        raise ValueError(f"distributed must be None or one of {MODES}, got {mode!r}")


def is_distributed(mode: str | None) -> bool:
    """Whether ``mode`` asks for global negatives and a process group of several ranks is
    up; with one process (or none initialised) every objective is the single-process one."""
    check_mode(mode)
    return (
        mode is not None
        and dist.is_available()
        and dist.is_initialized()
        and dist.get_world_size() > 1
    )


@dataclass(frozen=True)
class Shard:
    """The global batch is the concatenation of every rank's rows, in rank order."""

    rank: int
    sizes: tuple[int, ...]  # rows per rank

    @property
    def world_size(self) -> int:
        return len(self.sizes)

    @property
    def rows(self) -> int:
        return self.sizes[self.rank]

    @property
    def offset(self) -> int:
        """Global index of this rank's first row."""
        return sum(self.sizes[: self.rank])

    @property
    def total(self) -> int:
        return sum(self.sizes)


def shard_of(x: Tensor, min_total: int = 1) -> Shard:
    """This rank's place in the global batch. One all-gather of the row counts and widths,
    so that every rank raises the same error (a rank without rows, unequal widths, too
    few rows in all) instead of leaving the others waiting in a collective."""
    rank, world = dist.get_rank(), dist.get_world_size()
    local = torch.tensor([x.size(0), x.size(1)], device=x.device)
    counts = [torch.empty_like(local) for _ in range(world)]
    dist.all_gather(counts, local)
    sizes = tuple(int(c[0]) for c in counts)
    widths = {int(c[1]) for c in counts}
    if len(widths) > 1:
        raise ValueError(f"every rank needs the same feature width, got {sorted(widths)}")
    empty = [r for r, size in enumerate(sizes) if size == 0]
    if empty:
        raise ValueError(
            f"rank {empty[0]} has no rows: every rank needs at least one "
            f"({world} ranks, {sum(sizes)} rows in all)"
        )
    if sum(sizes) < min_total:
        raise ValueError(
            f"the global batch needs at least {min_total} rows, got {sum(sizes)} over {world} ranks"
        )
    return Shard(rank, sizes)
