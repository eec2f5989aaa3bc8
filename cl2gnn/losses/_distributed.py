"""Where this rank's views sit in the global batch, and its share of a mean over it."""

from __future__ import annotations

from torch import Tensor

from .._validation import check_features
from ..distributed import Shard, is_distributed, shard_of


def views_shard(z1: Tensor, z2: Tensor | None, distributed: str | None) -> Shard | None:
    """The rows per rank of the stacked views ``x`` (``cat([z1, z2])``, or ``z1``) under a
    process group of several ranks, ``None`` otherwise. Called before any local check, so
    that a rank without rows fails on every rank alike instead of leaving the others in a
    collective."""
    if not is_distributed(distributed):
        return None
    check_features(z1, "z1", min_rows=0)
    shard = shard_of(z1, min_total=1 if z2 is not None else 2)
    views = 1 if z2 is None else 2
    return Shard(shard.rank, tuple(views * size for size in shard.sizes))


def share_of_mean(total: Tensor, rows: int, shard: Shard | None) -> Tensor:
    """``total / rows`` for a sum over this process's ``rows`` anchors; across ranks
    ``world_size × total / N_global``: ``world_size ×`` this rank's share of the global
    mean, so that DDP's gradient averaging yields the single-process gradient and the mean
    of the ranks' values is the global loss (lightly's convention)."""
    return total / rows if shard is None else total * (shard.world_size / shard.total)
