"""MultiStageMemory.push all-gathers under torch.distributed: every rank keeps the same
bank. Two CPU processes on the gloo backend."""

import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from cl2gnn.nn import MultiStageMemory


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank, world, port, out_dir):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    mem = MultiStageMemory(num_samples=8, dim=3, stages=2)
    ids = torch.arange(4) + 4 * rank  # each rank sees a different half
    mem.push(torch.full((4, 3), float(rank + 1)), ids)
    torch.save(mem.state_dict(), os.path.join(out_dir, f"rank{rank}.pt"))
    dist.destroy_process_group()


def test_push_is_synchronised_across_ranks(tmp_path):
    mp.spawn(_worker, args=(2, _free_port(), str(tmp_path)), nprocs=2, join=True)
    banks = [torch.load(tmp_path / f"rank{r}.pt")["bank"] for r in range(2)]
    assert torch.equal(banks[0], banks[1])
    expected = torch.cat([torch.full((4, 3), 1.0), torch.full((4, 3), 2.0)])
    assert torch.equal(banks[0][0], expected)
