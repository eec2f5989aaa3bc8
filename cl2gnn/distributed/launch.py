"""Start and stop the process group under ``torchrun``; without it, nothing changes. Also
what every rank needs around the group: per-rank random streams that never coincide, work
that rank 0 does first (preparing a dataset's files), and waits longer than the group's
own timeout (rank 0 alone probing the embeddings)."""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from datetime import timedelta
from typing import TypeVar

import numpy as np
import torch
import torch.distributed as dist

from .._checks import first_line
from .._torchrun import launched_by_torchrun

T = TypeVar("T")

# how long the other ranks wait for rank 0 (its probe, its dataset preparation) by default;
# the process group's own timeout (NCCL's: 10 minutes) is too short for either on a large graph
WAIT_VARIABLE = "CL2GNN_WAIT_TIMEOUT"
DEFAULT_WAIT_SECONDS = 4 * 3600.0


def init_from_env(device: str | torch.device) -> torch.device:
    """Under ``torchrun``, join the process group (NCCL for CUDA, gloo for the CPU) and
    return this process's device (``cuda:LOCAL_RANK`` for CUDA); otherwise return
    ``device`` unchanged."""
    device = torch.device(device)
    if not launched_by_torchrun() or dist.is_initialized():
        return device
    if device.type == "cuda":
        local_rank, gpus = int(os.environ.get("LOCAL_RANK", "0")), torch.cuda.device_count()
        if local_rank >= gpus:  # NCCL takes one GPU per process
            raise ValueError(
                f"torchrun started more processes on this machine than its {gpus} GPU(s): "
                "one GPU per process with --device cuda; --device cpu runs any number (gloo)"
            )
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return device


def rank_and_world() -> tuple[int, int]:
    """``(rank, world_size)``; ``(0, 1)`` without a process group."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def shutdown() -> bool:
    """Leave the process group (every rank, after its last collective): destroy it, then
    free now what still refers to its work (tensors of finished collectives and their
    Python objects), while the interpreter is whole rather than during its teardown, where
    releasing them from a C++ thread aborts the process (see :func:`group_ended`). Returns
    whether there was a group to leave."""
    if not (dist.is_available() and dist.is_initialized()):
        return False
    dist.destroy_process_group()
    gc.collect()
    global _ENDED
    _ENDED = True
    return True


_ENDED = False


def group_ended() -> bool:
    """Whether :func:`shutdown` left a process group in this process. Torch 2.14 aborts a
    few percent of gloo runs after ``destroy_process_group``, during the interpreter's
    teardown, once ``torch._dynamo`` is imported (PyG imports it): "terminate called
    without an active exception", SIGABRT, the run's work done. The command line therefore
    ends such a process with ``os._exit`` after flushing (:func:`cl2gnn.cli.main.run`); a
    script of one's own may do the same."""
    return _ENDED


def stream_seed(seed: int, *key: int) -> int:
    """A 64-bit seed for the random stream ``key`` (e.g. ``(purpose, rank)``) of a run seeded
    with ``seed``: NumPy's ``SeedSequence(seed, spawn_key=key)``, the child that
    ``SeedSequence(seed).spawn`` gives at that place, hashed from the whole pair. Unlike
    ``seed + rank``, seed ``s`` on rank 1 is not seed ``s + 1`` on rank 0: distinct pairs
    give unrelated seeds (equal only by a 64-bit hash collision)."""
    for name, value in (("seed", seed), *((f"key[{i}]", k) for i, k in enumerate(key))):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {value!r}")
    sequence = np.random.SeedSequence(int(seed), spawn_key=tuple(int(k) for k in key))
    return int(sequence.generate_state(1, np.uint64)[0])


def wait_timeout(seconds: float | None = None) -> timedelta:
    """How long a rank waits for rank 0: ``seconds``, else ``$CL2GNN_WAIT_TIMEOUT`` (seconds),
    else :data:`DEFAULT_WAIT_SECONDS` (4 hours)."""
    source = "the wait timeout"
    if seconds is None and os.environ.get(WAIT_VARIABLE):
        source, text = f"${WAIT_VARIABLE}", os.environ[WAIT_VARIABLE]
        try:
            seconds = float(text)
        except ValueError:
            raise ValueError(f"{source} must be a number of seconds, got {text!r}") from None
    seconds = DEFAULT_WAIT_SECONDS if seconds is None else seconds
    if not 0 < seconds < float("inf"):
        raise ValueError(f"{source} must be a positive number of seconds, got {seconds}")
    return timedelta(seconds=seconds)


def waiting_group(seconds: float | None = None) -> dist.ProcessGroup | None:
    """A gloo group of every rank whose collectives wait up to :func:`wait_timeout`
    ``(seconds)`` (gloo whatever the main backend: it waits on the CPU, beside NCCL);
    ``None`` without a process group of several ranks. Every rank must call it, in the same
    order (it is a collective); :func:`release` it when done."""
    if rank_and_world()[1] == 1:
        return None
    return dist.new_group(backend="gloo", timeout=wait_timeout(seconds))


def release(group: dist.ProcessGroup | None) -> None:
    if group is not None:
        dist.destroy_process_group(group)


def wait_for_rank_zero(group: dist.ProcessGroup | None, what: str, hint: str) -> None:
    """Every rank of ``group`` (from :func:`waiting_group`) waits here until all arrive,
    rank 0 the last, busy with ``what``; a wait beyond the group's timeout raises
    ``RuntimeError`` naming ``what`` and ``hint`` (how to wait longer)."""
    if group is None:
        return
    try:
        dist.barrier(group=group)
    except RuntimeError as error:  # gloo's DistBackendError: a timeout, or a rank gone
        raise RuntimeError(
            f"rank {dist.get_rank()} stopped waiting for {what}: {first_line(error)}; {hint}"
        ) from error


def rank_zero_first(prepare: Callable[[], T], what: str = "preparing the data") -> T:
    """``prepare()`` on every rank, one turn after another: rank 0 first, then the first
    process of every other machine (``LOCAL_RANK`` 0), then the rest, each turn after the
    ones before have finished. Work that writes files (a download, a cache) is done once
    where the ranks share a folder, and once per machine where they do not; the later turns
    read what it wrote. An error in a turn stops every rank: the rank that failed raises
    its own error, the others ``RuntimeError`` naming it. Without a process group of
    several ranks, ``prepare()``. The wait is :func:`wait_timeout`'s."""
    rank, world = rank_and_world()
    if world == 1:
        return prepare()
    local = int(os.environ.get("LOCAL_RANK", rank))
    turn = 0 if rank == 0 else 1 if local == 0 else 2
    group = waiting_group()
    result, error = None, None
    try:
        for current in range(3):
            if current == turn:
                try:
                    result = prepare()
                except Exception as caught:  # the others learn of it below, then it is raised
                    error = caught
            failed = torch.tensor([rank if error is not None else -1])
            dist.all_reduce(failed, op=dist.ReduceOp.MAX, group=group)  # also the barrier
            if error is not None:
                raise error
            if int(failed) >= 0:
                raise RuntimeError(f"{what} failed on rank {int(failed)} (see its error)")
        return result
    finally:
        release(group)
