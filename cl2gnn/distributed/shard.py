"""Which rows of the global batch this rank holds."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import torch
import torch.distributed as dist
from torch import Tensor

from .._torchrun import MODES

T = TypeVar("T")


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


def shard_of(
    x: Tensor, min_total: int = 1, error: Exception | None = None, call: str = ""
) -> Shard:
    """This rank's place in the global batch. One all-gather of the row counts, the widths,
    whether this rank's own input checks failed (``error``: what they raised) and a hash of
    ``call`` (what the caller is about to compute: its objective and mode), so that every
    rank raises the same error (a rank without rows, a rank's invalid input, unequal
    widths, too few rows in all, ranks computing different objectives or modes) instead of
    leaving the others waiting in a collective that never matches. A rank's own error
    reaches every rank as ``ValueError`` (``TypeError`` for a type error) ``"rank r: <its
    message>"``."""
    rank, world = dist.get_rank(), dist.get_world_size()
    shaped = isinstance(x, Tensor) and x.dim() == 2
    rows, width = (x.size(0), x.size(1)) if shaped else (-1, -1)  # -1: not a [N, d] tensor
    local = torch.tensor([rows, width, error is not None, zlib.crc32(call.encode())])
    local = local.to(_device(x))
    counts = [torch.empty_like(local) for _ in range(world)]
    dist.all_gather(counts, local)
    if len({int(c[3]) for c in counts}) > 1:  # the calls' names only now: a second collective
        calls = [None] * world
        dist.all_gather_object(calls, call)
        raise ValueError(
            "the ranks called different objectives or modes: "
            + ", ".join(f"rank {r} {name!r}" for r, name in enumerate(calls))
        )
    sizes = tuple(int(c[0]) for c in counts)
    empty = [r for r, size in enumerate(sizes) if size == 0]
    if empty:
        raise ValueError(
            f"rank {empty[0]} has no rows: every rank needs at least one "
            f"({world} ranks, {sum(max(size, 0) for size in sizes)} rows in all)"
        )
    failed = [r for r, c in enumerate(counts) if int(c[2])]
    if failed:  # every rank learns the first bad rank's message (a second collective)
        messages = [None] * world
        mine = None if error is None else (type(error).__name__, str(error))
        dist.all_gather_object(messages, mine)
        kind, message = messages[failed[0]]
        cls = TypeError if kind == "TypeError" else ValueError
        raise cls(f"rank {failed[0]}: {message}") from error
    widths = {int(c[1]) for c in counts}
    if len(widths) > 1:
        raise ValueError(f"every rank needs the same feature width, got {sorted(widths)}")
    if sum(sizes) < min_total:
        raise ValueError(
            f"the global batch needs at least {min_total} rows, got {sum(sizes)} over {world} ranks"
        )
    return Shard(rank, sizes)


def checked_shard(
    x: Tensor, check: Callable[[], T], min_total: int = 1, call: str = ""
) -> tuple[T, Shard]:
    """``check()`` (this rank's input checks, before any collective) and this rank's shard
    of ``x``'s rows, the checks' outcome decided by every rank together: where one rank's
    ``check`` raises ``ValueError`` or ``TypeError``, every rank raises it, naming that rank
    (:func:`shard_of`, which also compares the ranks' ``call``)."""
    try:
        result = check()
    except (TypeError, ValueError) as error:
        shard_of(x, min_total, error, call)  # raises on every rank
        raise  # unreachable: shard_of raised
    return result, shard_of(x, min_total, call=call)


def _device(x) -> torch.device:
    """Where the collective's tensor lives: ``x``'s device; for a non-tensor, the current
    CUDA device under NCCL, else the CPU."""
    if isinstance(x, Tensor):
        return x.device
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")
