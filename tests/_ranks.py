"""The scaffolding of the rank tests of a two-view loss
(tests/node/test_methods_cca_ssg_ranks.py, tests/node/test_methods_gbt_ranks.py): gloo
process groups whose ranks hold uneven shares of one float64 batch, each rank's loss and
gradients (the function's on its rows, the method's on a shared linear encoder's weights),
and the check that they equal one process on the union."""

import os
import socket
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch_geometric.data import Data

from cl2gnn.node import REGISTRY, EncoderInput, ViewBatch

f64 = torch.float64
SIZES = {2: (1, 6), 3: (4, 1, 2)}  # rows per rank, 7 in all
FEATURES, WIDTH = 4, 3


def free_port() -> int:
    """A TCP port free on this host now, for a process group's rendezvous."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def inputs(dead=False):
    """Both views' input rows of the global batch ``(N, FEATURES)`` and the shared weights
    (with ``dead``, a last column that is zero on every row of every rank)."""
    generator = torch.Generator().manual_seed(3)
    rows = sum(SIZES[2])
    x1, x2 = (torch.randn(rows, FEATURES, generator=generator, dtype=f64) for _ in range(2))
    weight = torch.randn(FEATURES, WIDTH, generator=generator, dtype=f64)
    if dead:
        weight[:, -1] = 0.0
    return x1, x2, weight


class Linear(torch.nn.Module):
    """An encoder ``x ↦ x W`` that ignores the graph."""

    def __init__(self, weight):
        super().__init__()
        self.weight = torch.nn.Parameter(weight.clone())

    def forward(self, x, graph):
        return x @ self.weight


def _rows(world, rank):
    sizes = SIZES[world]
    return slice(sum(sizes[:rank]), sum(sizes[: rank + 1]))


def rank_results(rank, world, loss, method, config, dead):
    """This rank's loss and gradients: ``loss(h1, h2)`` on its rows of ``h1, h2``, and
    ``method`` (built for a process group with ``config``) on the shared weights."""
    x1, x2, weight = inputs(dead)
    mine = _rows(world, rank)
    x1, x2 = x1[mine], x2[mine]
    h1, h2 = (x @ weight for x in (x1, x2))
    h1.requires_grad_(True), h2.requires_grad_(True)
    value = loss(h1, h2)
    grad1, grad2 = torch.autograd.grad(value, [h1, h2])
    encoder = Linear(weight)
    method = REGISTRY[method].from_config(
        config,
        Data(x=x1, edge_index=torch.empty(2, 0, dtype=torch.long)),
        encoder=encoder,
        distributed="gather",
    )
    graph = torch.empty(2, 0, dtype=torch.long)
    batch = ViewBatch([EncoderInput(x1, graph), EncoderInput(x2, graph)], graph, len(x1))
    method_value = method(batch)
    (grad_weight,) = torch.autograd.grad(method_value, [encoder.weight])
    return {
        "value": value.detach(),
        "grad_h1": grad1,
        "grad_h2": grad2,
        "method_value": method_value.detach(),
        "grad_weight": grad_weight,
    }


def _worker(rank, world, port, out, results, cases):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=60))
    try:
        torch.save({case: results(rank, world, *case) for case in cases}, f"{out}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()


def spawn_ranks(world, out, results, cases):
    """``[results of rank 0, rank 1, ...]`` from one spawned process group of ``world``
    ranks: each rank's ``{case: results(rank, world, *case)}`` (``results``: a module-level
    function, which the spawned processes import)."""
    mp.spawn(_worker, args=(world, free_port(), str(out), results, cases), nprocs=world)
    return [torch.load(out / f"rank{r}.pt") for r in range(world)]


def single_process(loss, dead=False):
    """``loss(h1, h2)`` on the union of the ranks' rows: the value and the gradients on
    ``h1``, ``h2`` and on the shared weights."""
    x1, x2, weight = inputs(dead)
    weight.requires_grad_(True)
    h1, h2 = x1 @ weight, x2 @ weight
    value = loss(h1, h2)
    return value, *torch.autograd.grad(value, [h1, h2, weight])


def _assert_close(got, expected):
    assert torch.allclose(got, expected, rtol=1e-10, atol=1e-12), (got, expected)


def assert_equals_one_process(world, results, value, grad1, grad2, grad_weight, method=True):
    """The ranks' mean loss is the single-process one, each rank's gradient on its rows
    ``world ×`` the single-process one and, with ``method``, the method's value and its
    gradient on the weights averaged over ranks the single-process ones."""
    _assert_close(torch.stack([r["value"] for r in results]).mean(), value)
    if method:
        _assert_close(torch.stack([r["method_value"] for r in results]).mean(), value)
        _assert_close(torch.stack([r["grad_weight"] for r in results]).mean(0), grad_weight)
    for rank, result in enumerate(results):
        mine = _rows(world, rank)
        # world_size × the rank's rows' gradient: DDP's average over ranks makes it exact
        _assert_close(result["grad_h1"], world * grad1[mine])
        _assert_close(result["grad_h2"], world * grad2[mine])
