"""What the command lines need to know of ``torchrun`` before torch loads: whether it
launched this process, and the modes in which the objectives share negatives across
ranks (:mod:`cl2gnn.distributed`, which imports torch, takes both from here)."""

from __future__ import annotations

import os

MODES = ("gather", "ring")


def launched_by_torchrun() -> bool:
    """``torchrun`` (or any launcher of its conventions) set ``WORLD_SIZE`` above one."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1
