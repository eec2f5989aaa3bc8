"""Ranks that call different objectives or modes fail at once, on every
rank, with a message naming what each rank called, instead of waiting in collectives that
never match until the process group's timeout (here 20 s; gloo's default is 30 minutes)."""

from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist

from cl2gnn.losses import InfoNCELoss, SpectralContrastiveLoss
from cl2gnn.nn import UniformAttention

from .test_promises import _spawn

TIMEOUT = 20.0  # the group's; a mismatch caught by the library takes well under it
# (label, what rank 0 calls, what rank 1 calls)
MISMATCHES = {
    "gather against ring": (
        lambda z: InfoNCELoss(distributed="gather")(z, z),
        lambda z: InfoNCELoss(distributed="ring")(z, z),
    ),
    "InfoNCE against spectral": (
        lambda z: InfoNCELoss(distributed="ring")(z, z),
        lambda z: SpectralContrastiveLoss(distributed="ring")(z, z),
    ),
    "a loss against an operator": (
        lambda z: InfoNCELoss(distributed="gather")(z, z),
        lambda z: UniformAttention(distributed="gather").energy(z),
    ),
}


def _worker(rank: int, world: int, port: int, out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=TIMEOUT))
    torch.set_num_threads(1)
    outcome = {}
    for label, calls in MISMATCHES.items():
        start = time.monotonic()
        try:
            calls[rank](torch.randn(4, 3, dtype=torch.float64))
            outcome[label] = None
        except Exception as error:  # compared across ranks by the test
            outcome[label] = (type(error).__name__, str(error), time.monotonic() - start)
        torch.save(outcome, os.path.join(out, f"rank{rank}.pt"))
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory):
    return _spawn(_worker, 2, tmp_path_factory.mktemp("mismatch"))


@pytest.mark.parametrize("label", sorted(MISMATCHES))
def test_ranks_calling_different_objectives_fail_at_once_naming_them(outcomes, label):
    errors = [outcome[label] for outcome in outcomes]
    assert all(error is not None for error in errors), errors
    (kind, message, seconds), (_, other, _) = errors
    assert kind == "ValueError" and message == other
    assert message.startswith("the ranks called different objectives or modes: rank 0 ")
    assert seconds < TIMEOUT / 2
