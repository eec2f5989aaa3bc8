"""The seed nodes of each mini-batch, for one process or each rank of several."""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import Tensor

from ..._checks import integer


class SeedBatches(torch.utils.data.Sampler):
    """The seed nodes of one process's batches (a ``batch_sampler`` for the loaders).

    Every epoch draws a permutation of the ``num_seeds`` seeds from a generator seeded with
    ``seed`` (the same permutation on every rank), cuts it into global batches of
    ``batch_size`` and gives this rank its share of each (:func:`torch.tensor_split`:
    shares differ by at most one seed). Every share holds at least ``min_share`` seeds (the
    smallest batch the method needs, :attr:`~cl2gnn.node.methods.NodeMethod.min_batch_size`):
    a last global batch too small for that joins the batch before it. Each seed is in one
    batch of one rank per epoch.

    Args:
        num_seeds (int): the seeds are ``0 … num_seeds - 1`` (indices of the loader's
            input nodes).
        batch_size (int): seeds per global batch, over all ranks.
        rank (int, optional): this process's rank (default: ``0``).
        world_size (int, optional): the number of processes (default: ``1``).
        seed (int, optional): seeds the permutations (default: ``0``).
        min_share (int, optional): the fewest seeds of a rank's share (default: ``1``).
        user (str, optional): what needs ``min_share`` seeds, for the errors (default:
            ``"these batches"``; the trainer names its method).
    """

    def __init__(
        self,
        num_seeds: int,
        batch_size: int,
        *,
        rank: int = 0,
        world_size: int = 1,
        seed: int = 0,
        min_share: int = 1,
        user: str = "these batches",
    ) -> None:
        integer(1)(num_seeds, "num_seeds")
        integer(1)(batch_size, "batch_size")
        integer(1)(world_size, "world_size")
        integer(0, world_size - 1)(rank, "rank")
        integer(1)(min_share, "min_share")
        self.smallest = world_size * min_share  # the fewest seeds of a global batch
        on = f"on {world_size} process{'es' if world_size > 1 else ''}"
        if num_seeds < self.smallest:
            raise ValueError(
                f"the graph's {num_seeds} nodes are too few for {user} {on}: each process "
                f"needs at least {min_share} seeds per batch"
            )
        if batch_size < self.smallest:
            raise ValueError(
                f"batch_size {batch_size} is too small for {user} {on}: each process's share "
                f"needs at least {min_share} seeds (batch_size >= {self.smallest})"
            )
        self.num_seeds, self.batch_size = num_seeds, batch_size
        self.rank, self.world_size, self.min_share = rank, world_size, min_share
        self.generator = torch.Generator().manual_seed(seed)

    def global_batches(self) -> list[Tensor]:
        """The next epoch's global batches (advances the generator)."""
        order = torch.randperm(self.num_seeds, generator=self.generator)
        batches = list(order.split(self.batch_size))
        if len(batches) > 1 and batches[-1].numel() < self.smallest:
            batches[-2:] = [torch.cat(batches[-2:])]
        return batches

    def __iter__(self) -> Iterator[list[int]]:
        for batch in self.global_batches():
            yield batch.tensor_split(self.world_size)[self.rank].tolist()

    def __len__(self) -> int:
        full, rest = divmod(self.num_seeds, self.batch_size)
        if rest == 0:
            return full
        return full if full and rest < self.smallest else full + 1
