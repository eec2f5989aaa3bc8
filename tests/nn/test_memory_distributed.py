"""MultiStageMemory.push all-gathers under torch.distributed: every rank keeps the bank
(and the ``filled`` flags) that one process would keep after pushing the concatenated
rows, whatever the number of rows per rank — a last partial batch, a rank with none.
CPU processes on the gloo backend; one process group per world size serves every case."""

import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from cl2gnn.nn import MultiStageMemory

from .._ranks import free_port

NUM_SAMPLES, DIM, STAGES = 16, 3, 3

# Per case, the rows each rank pushes in each stage (next_stage() between stages).
CASES = {
    2: [
        [(4, 4)],  # even
        [(4, 3)],  # a last partial batch (drop_last=False)
        [(0, 5), (3, 0)],  # a rank with no rows
        [(0, 0), (2, 1)],  # no rows anywhere
        [(4, 3), (2, 5), (1, 1), (3, 2)],  # more stages than kept: the oldest is overwritten
    ],
    3: [
        [(4, 3, 0)],
        [(0, 2, 5), (1, 1, 1)],
        [(5, 0, 0), (0, 0, 0), (2, 4, 3), (1, 0, 2)],
    ],
}


def _pushes(case):
    """The rows of every push of a case: one ``(x, sample_id)`` per rank per stage."""
    gen = torch.Generator().manual_seed(len(case) * 100 + sum(map(sum, case)))
    stages = []
    for counts in case:
        ids = torch.randperm(NUM_SAMPLES, generator=gen)[: sum(counts)]
        x = torch.randn(sum(counts), DIM, generator=gen)
        stages.append(list(zip(x.split(counts), ids.split(counts), strict=True)))
    return stages


def _run(memory, stages, ranks):
    """Push the rows of ``ranks`` (concatenated) in each stage, closing each but the last."""
    for k, rows in enumerate(stages):
        if k:
            memory.next_stage()
        memory.push(torch.cat([rows[r][0] for r in ranks]), torch.cat([rows[r][1] for r in ranks]))
    return memory.state_dict()


def _worker(rank, world, port, out_dir):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    states = [
        _run(MultiStageMemory(NUM_SAMPLES, DIM, stages=STAGES), _pushes(case), [rank])
        for case in CASES[world]
    ]
    torch.save(states, os.path.join(out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()


@pytest.mark.parametrize("world", sorted(CASES))
def test_push_with_uneven_rows_matches_one_process(world, tmp_path):
    mp.spawn(_worker, args=(world, free_port(), str(tmp_path)), nprocs=world, join=True)
    for rank in range(world):
        states = torch.load(tmp_path / f"rank{rank}.pt")
        for case, state in zip(CASES[world], states, strict=True):
            single = _run(
                MultiStageMemory(NUM_SAMPLES, DIM, stages=STAGES), _pushes(case), range(world)
            )
            for key in ("bank", "filled", "pointer", "stages_done"):
                assert torch.equal(state[key], single[key]), (rank, case, key)
