"""CCA-SSG across ranks: several gloo processes, each holding an uneven share of the global
batch's rows (one row on a rank), equal one process on the union in float64 — the loss's
value (the mean over ranks), its gradient on each rank's rows (``world_size ×`` the
single-process one) and, averaged over ranks as DDP does, on a shared linear layer's weights.
The reference is the float64 loop over the formula (tests/test_node_methods_field.py)."""

import os
import socket
from datetime import timedelta

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from cl2gnn.losses import cca_ssg_loss
from cl2gnn.node import EncoderInput, NodeConfig, ViewBatch, make_method

from .test_node_methods_field import cca_ssg_reference

f64 = torch.float64
SIZES = {2: (1, 6), 3: (4, 1, 2)}  # rows per rank, 7 in all
FEATURES, WIDTH = 4, 3
LAMBDAS = (0.0, 0.5)  # the invariance alone; with the decorrelation's Grams
DEAD = "dead unit"  # a column that is zero on every row of every rank


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _join(rank, world, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=60))


def _inputs(dead=False):
    """Both views' input rows of the global batch ``(N, FEATURES)`` and the shared weights."""
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


def _rank_results(rank, world, lam, dead):
    """This rank's loss and gradients: the function's on its rows of ``h1, h2``, the
    method's (built for a process group) on the shared weights."""
    x1, x2, weight = _inputs(dead)
    sizes = SIZES[world]
    mine = slice(sum(sizes[:rank]), sum(sizes[: rank + 1]))
    x1, x2 = x1[mine], x2[mine]
    h1, h2 = (x @ weight for x in (x1, x2))
    h1.requires_grad_(True), h2.requires_grad_(True)
    value = cca_ssg_loss(h1, h2, lam, "gather")
    grad1, grad2 = torch.autograd.grad(value, [h1, h2])
    config = NodeConfig(hidden=WIDTH, decorrelation=lam)
    encoder = Linear(weight)
    method = make_method(
        "cca_ssg", config, dim=WIDTH, num_nodes=7, distributed="gather", encoder=encoder
    )
    graph = torch.empty(2, 0, dtype=torch.long)
    views = [EncoderInput(x1, graph), EncoderInput(x2, graph)]
    batch = ViewBatch(views=views, edge_index=graph, num_seeds=len(x1))
    method_value = method(encoder, batch)
    (grad_weight,) = torch.autograd.grad(method_value, [encoder.weight])
    return {
        "value": value.detach(),
        "grad_h1": grad1,
        "grad_h2": grad2,
        "method_value": method_value.detach(),
        "grad_weight": grad_weight,
    }


def _worker(rank, world, port, out):
    _join(rank, world, port)
    try:
        cases = [(lam, False) for lam in LAMBDAS] + [(0.5, True)]
        results = {(lam, dead): _rank_results(rank, world, lam, dead) for lam, dead in cases}
        torch.save(results, f"{out}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module", params=sorted(SIZES), ids=lambda w: f"{w}ranks")
def ranks(request, tmp_path_factory):
    """``(world, [results of rank 0, rank 1, ...])`` from one spawned process group."""
    world = request.param
    out = tmp_path_factory.mktemp(f"cca_ssg_world{world}")
    mp.spawn(_worker, args=(world, _free_port(), str(out)), nprocs=world, join=True)
    return world, [torch.load(out / f"rank{r}.pt") for r in range(world)]


def _single_process(loss, dead=False):
    """``loss(h1, h2)`` on the union of the ranks' rows: the value and the gradients on
    ``h1``, ``h2`` and on the shared weights."""
    x1, x2, weight = _inputs(dead)
    weight.requires_grad_(True)
    h1, h2 = x1 @ weight, x2 @ weight
    value = loss(h1, h2)
    return value, *torch.autograd.grad(value, [h1, h2, weight])


def _assert_close(got, expected):
    assert torch.allclose(got, expected, rtol=1e-10, atol=1e-12), (got, expected)


def _assert_equals_one_process(world, results, value, grad1, grad2, grad_weight):
    sizes = SIZES[world]
    _assert_close(torch.stack([r["value"] for r in results]).mean(), value)
    _assert_close(torch.stack([r["method_value"] for r in results]).mean(), value)
    for rank, result in enumerate(results):
        mine = slice(sum(sizes[:rank]), sum(sizes[: rank + 1]))
        # world_size × the rank's rows' gradient: DDP's average over ranks makes it exact
        _assert_close(result["grad_h1"], world * grad1[mine])
        _assert_close(result["grad_h2"], world * grad2[mine])
    _assert_close(torch.stack([r["grad_weight"] for r in results]).mean(0), grad_weight)


@pytest.mark.parametrize("lam", LAMBDAS)
def test_ranks_with_uneven_shares_equal_one_process_on_the_union(ranks, lam):
    world, results = ranks
    expected = _single_process(lambda a, b: cca_ssg_reference(a, b, lam))
    _assert_equals_one_process(world, [r[lam, False] for r in results], *expected)


def test_a_dead_unit_across_ranks_gets_the_single_process_gradient_not_nan(ranks):
    world, results = ranks
    # the loop reference divides by the dead column's zero deviation: the library's clamp
    expected = _single_process(lambda a, b: cca_ssg_loss(a, b, 0.5), dead=True)
    assert torch.isfinite(expected[3]).all()
    _assert_equals_one_process(world, [r[0.5, True] for r in results], *expected)
