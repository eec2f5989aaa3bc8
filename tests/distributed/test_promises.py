"""What the distributed modes promise beyond equal losses (issue 31, part B).

* Ring mode keeps its memory promise on every path that accepts it: while rank 0
  evaluates any distributed case (every loss and operator, forward and backward) on the
  same rows, the other rank's rows, and so ``N``, changing, not one of its tensors larger
  than a tile changes shape, and the largest is bounded by its rows times the feature or
  tile width; gather mode, measured alike, holds tensors that grow like ``n × N``.
  SimCLR's kNN positives over the global batch refuse ring mode.
* (Every operator's forward, a step usable as a layer, has the single-process gradient on
  2 and 3 gloo ranks: ``tests/distributed/test_distributed.py``'s step cases.)
* A rank whose input is invalid (NaN, a graph out of range) does not leave the others
  waiting in a collective: every rank raises the same error, naming that rank.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.multiprocessing.spawn import ProcessException
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from cl2gnn.losses import InfoNCELoss, SpectralContrastiveLoss

from .._ranks import free_port
from . import distributed_cases as cases

SMALL_TILE = cases.TILINGS["small tiles"]
# samples per rank: rank 0's the same, the other's (and N) changing, N of 12 to 54 rows
# against tiles of 3; every rank's rows a multiple of the tile, so that only N could change
# a shape (a partial last tile would)
MEMORY_SIZES = {"larger N": (9, 9), "smaller N": (9, 3)}
BAD_RANK = 1
DEADLINE = 240.0  # seconds for a process group's work; past it the test fails, not hangs


def _spawn(worker, world: int, out, *args) -> list[dict]:
    """Run ``worker(rank, world, port, out, *args)`` on ``world`` processes and return each
    rank's ``rank{r}.pt``. Ranks still running after :data:`DEADLINE`, or a rank that dies,
    fail the test, with what every rank had recorded."""
    context = mp.start_processes(
        worker, args=(world, free_port(), str(out), *args), nprocs=world, join=False
    )
    end, failure = time.monotonic() + DEADLINE, None
    try:
        while not context.join(timeout=max(end - time.monotonic(), 0.0)):
            if time.monotonic() >= end:
                failure = f"ranks still waiting after {DEADLINE:.0f} s"
                break
    except ProcessException as error:
        failure = f"a rank died ({error})"
    if failure is not None:
        for process in context.processes:
            if process.is_alive():
                process.kill()
        recorded = [
            torch.load(out / f"rank{r}.pt") if (out / f"rank{r}.pt").exists() else None
            for r in range(world)
        ]
        pytest.fail(f"{failure}; recorded: {recorded}")
    return [torch.load(out / f"rank{r}.pt") for r in range(world)]


def _join(rank: int, world: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=60))
    torch.set_num_threads(1)


# ---------------------------------------------------------------------------------------------
# forward gradients and memory: one process group per world size


class Shapes(TorchDispatchMode):
    """The largest tensor (in elements) any operation returns, and the shapes of those with
    a dimension larger than ``tile``."""

    def __init__(self, tile: int) -> None:
        super().__init__()
        self.tile, self.largest, self.shapes = tile, 0, set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for value in tree_flatten(out)[0]:
            if isinstance(value, torch.Tensor):
                self.largest = max(self.largest, value.numel())
                if any(size > self.tile for size in value.shape):
                    self.shapes.add(tuple(value.shape))
        return out


def _views(name: str) -> int:
    """Rows per sample of a case's inputs."""
    return cases.global_inputs(name, 1)["z"].size(1)


def _memory(name: str, mode: str, samples: int) -> dict:
    """Evaluate a case (value and gradients) on ``samples`` samples of this rank (inputs that
    depend on their number alone), and measure the second evaluation (the first fills the
    caches: pair graphs, shared operators)."""
    inputs = cases.global_inputs(name, samples)
    cases.evaluate(name, inputs, mode)
    with Shapes(SMALL_TILE) as record:
        cases.evaluate(name, inputs, mode)
    return {"largest": record.largest, "shapes": record.shapes}


def _memory_worker(rank: int, world: int, port: int, out: str) -> None:
    _join(rank, world, port)
    results = {}
    with cases.tiles(SMALL_TILE):
        for label, samples in MEMORY_SIZES.items():
            for name in cases.CASES:
                for mode in cases.MODES:
                    results[name, mode, label] = _memory(name, mode, samples[rank])
    torch.save(results, os.path.join(out, f"rank{rank}.pt"))
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def memory(tmp_path_factory):
    """Rank 0's measurements, on two ranks."""
    return _spawn(_memory_worker, 2, tmp_path_factory.mktemp("memory"))[0]


# gather's measurement holds the global batch except where no keys are formed: the spectral
# loss (d × d Gram matrices) and the attention normalised over positive edges
WITHOUT_KEYS = {
    "SpectralContrastiveLoss",
    "SpectralContrastiveLoss-graph",
    "AttentionAlignConv-forward-positives-stop_gradient",
}


@pytest.mark.parametrize("name", list(cases.CASES))
def test_ring_holds_nothing_of_the_global_batch_size(memory, name):
    """Rank 0's tensors in ring mode do not change with ``N`` (the other rank's rows), and
    the largest is bounded by rank 0's rows times the feature or tile width, below
    ``n × N``; its gather-mode tensors, measured alike, have ``N`` rows or columns (the
    gathered keys, the ``n × N`` logits) and a larger peak."""
    views = _views(name)
    rows = MEMORY_SIZES["larger N"][0] * views  # rank 0's, the most of any rank
    bound = 4 * rows * max(cases.DIM, SMALL_TILE)
    larger, smaller = (
        {mode: memory[name, mode, label] for mode in cases.MODES} for label in MEMORY_SIZES
    )
    total = sum(MEMORY_SIZES["larger N"]) * views
    assert bound < rows * total  # n × N lies above the bound
    ring = larger["ring"]
    assert ring["shapes"] == smaller["ring"]["shapes"], ring["shapes"] ^ smaller["ring"]["shapes"]
    assert ring["largest"] <= bound, (ring["largest"], bound)
    if name not in WITHOUT_KEYS:  # the measurement sees what gather holds
        gather = larger["gather"]
        assert gather["shapes"] != smaller["gather"]["shapes"]
        assert any(total in shape for shape in gather["shapes"])
        assert ring["largest"] < gather["largest"]


def test_simclr_nn_positives_refuse_ring():
    """The kNN positives come from the global batch gathered on every rank: ring refused."""
    from cl2gnn.vision.objectives import SimCLRObjective

    with pytest.raises(ValueError, match="nn_positives"):
        SimCLRObjective(0.5, nn_positives=1, distributed="ring")
    SimCLRObjective(0.5, nn_positives=1, distributed="gather")
    SimCLRObjective(0.5, distributed="ring")


def test_simclr_command_refuses_ring_with_nn_positives(capsys):
    """``cl2gnn simclr --distributed ring --nn-positives K``: one line, exit status 2, while
    the options are parsed (before torch works)."""
    from cl2gnn.cli.simclr import parse

    with pytest.raises(SystemExit) as exit_:
        parse(["--distributed", "ring", "--nn-positives", "1"], prog="cl2gnn simclr")
    lines = capsys.readouterr().err.splitlines()
    assert exit_.value.code == 2
    assert lines[-1].startswith("cl2gnn simclr: error: ") and "--nn-positives" in lines[-1]
    assert "ring" in lines[-1]
    parse(["--distributed", "gather", "--nn-positives", "1"], prog="cl2gnn simclr")


# ---------------------------------------------------------------------------------------------
# one rank's invalid input


def _spoiled(key: str, where: tuple, value: float = float("nan")):
    def spoil(inputs: dict) -> dict:
        spoilt = inputs[key].clone()
        spoilt[where] = value
        return {**inputs, key: spoilt}

    return spoil


def _invalid_cases() -> dict:
    """``(case, how the bad rank's inputs are spoiled)``: a NaN in every case's features,
    a NaN or an inf in the second view, a NaN in the attention features."""
    spoiled = {name: (name, _spoiled("z", (0, 0, 0))) for name in cases.CASES}
    spoiled["InfoNCELoss, NaN in z2"] = ("InfoNCELoss", _spoiled("z", (0, 1, 0)))
    spoiled["SpectralContrastiveLoss, inf in z2"] = (
        "SpectralContrastiveLoss",
        _spoiled("z", (1, 1, 2), float("inf")),
    )
    spoiled["AttentionInfoNCELoss-negatives, NaN in h"] = (
        "AttentionInfoNCELoss-negatives",
        _spoiled("h", (0, 1, 0)),
    )
    spoiled["AttentionAlignConv-forward, NaN in h"] = (
        "AttentionAlignConv-forward",
        _spoiled("h", (0, 0, 1)),
    )
    return spoiled


def _edge_out_of_range(rank: int, mode: str) -> None:
    x = torch.randn(6, cases.DIM, dtype=torch.float64)
    edges = torch.tensor([[0, 1, 2], [1, 2, 6 if rank == BAD_RANK else 0]])
    InfoNCELoss(distributed=mode)(x, edge_index=edges)


def _spectral_views_of_unequal_shapes(rank: int, mode: str) -> None:
    z1 = torch.randn(4, cases.DIM, dtype=torch.float64)
    z2 = torch.randn(3 if rank == BAD_RANK else 4, cases.DIM, dtype=torch.float64)
    SpectralContrastiveLoss(distributed=mode)(z1, z2)


def _invalid_worker(rank: int, world: int, port: int, out: str) -> None:
    _join(rank, world, port)
    sizes = cases.SIZES[world]
    mine = cases.sample_slice(sizes, rank)
    errors = {}
    path = os.path.join(out, f"rank{rank}.pt")

    def attempt(key, run) -> None:
        try:
            run()
            errors[key] = None
        except Exception as error:  # recorded, compared across ranks by the test
            errors[key] = (type(error).__name__, str(error))
        torch.save(errors, path)  # after each case: a hang shows where it happened

    with cases.tiles(SMALL_TILE):
        for label, (name, spoil) in _invalid_cases().items():
            local = {k: v[mine] for k, v in cases.global_inputs(name, sum(sizes)).items()}
            if rank == BAD_RANK:
                local = spoil(local)
            for mode in cases.MODES:
                attempt((label, mode), lambda: cases.evaluate(name, local, mode))  # noqa: B023
        for label, run in (
            ("edge_index out of range", _edge_out_of_range),
            ("z1 and z2 of unequal shapes", _spectral_views_of_unequal_shapes),
        ):
            for mode in cases.MODES:
                attempt((label, mode), lambda: run(rank, mode))  # noqa: B023
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def invalid(tmp_path_factory):
    return _spawn(_invalid_worker, 2, tmp_path_factory.mktemp("invalid"))


INVALID = [*_invalid_cases(), "edge_index out of range", "z1 and z2 of unequal shapes"]


@pytest.mark.parametrize("mode", cases.MODES)
@pytest.mark.parametrize("label", INVALID)
def test_one_ranks_invalid_input_raises_on_every_rank(invalid, label, mode):
    """Every rank raises the same ``ValueError``, naming the bad rank, and none waits."""
    errors = [invalid[r][label, mode] for r in range(len(invalid))]
    assert all(error is not None for error in errors), errors
    assert all(error == errors[0] for error in errors), errors
    kind, message = errors[0]
    assert kind == "ValueError" and message.startswith(f"rank {BAD_RANK}: "), message
