"""Start and stop the process group under ``torchrun``; without it, nothing changes."""

from __future__ import annotations

import os

import torch
import torch.distributed as dist

from .._torchrun import launched_by_torchrun


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


def shutdown() -> None:
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()
