"""Graph Barlow Twins across ranks: several gloo processes, each holding an uneven share of
the global batch's rows (one row on a rank), equal one process on the union in float64 —
the loss's value (the mean over ranks), its gradient on each rank's rows (``world_size ×``
the single-process one) and, averaged over ranks as DDP does, on a shared linear layer's
weights. The cross-correlation is the ranks' summed ``Z1ᵀZ2`` over the global ``N``: a
mean of the ranks' own cross-correlations (reduce, then divide by each rank's rows) fails.
The reference is the float64 loop over the formula (tests/test_node_zoo.py)."""

import pytest
import torch
import torch.multiprocessing as mp

from cl2gnn.losses import barlow_twins_loss
from cl2gnn.node import EncoderInput, NodeConfig, ViewBatch, make_method

from .test_cca_ssg_ranks import SIZES, WIDTH, Linear, _free_port, _inputs, _join
from .test_node_zoo import barlow_twins_reference

LAMBDAS = (None, 0.5)  # the authors' 1/d; another weight


def _rank_results(rank, world, lam, dead):
    """This rank's loss and gradients: the function's on its rows of ``h1, h2``, the
    method's (built for a process group, the authors' λ) on the shared weights."""
    x1, x2, weight = _inputs(dead)
    sizes = SIZES[world]
    mine = slice(sum(sizes[:rank]), sum(sizes[: rank + 1]))
    x1, x2 = x1[mine], x2[mine]
    h1, h2 = (x @ weight for x in (x1, x2))
    h1.requires_grad_(True), h2.requires_grad_(True)
    value = barlow_twins_loss(h1, h2, lam, "gather")
    grad1, grad2 = torch.autograd.grad(value, [h1, h2])
    encoder = Linear(weight)
    method = make_method(
        "gbt",
        NodeConfig(hidden=WIDTH),
        dim=WIDTH,
        num_nodes=7,
        distributed="gather",
        encoder=encoder,
    )
    graph = torch.empty(2, 0, dtype=torch.long)
    batch = ViewBatch([EncoderInput(x1, graph), EncoderInput(x2, graph)], graph, len(x1))
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
    import torch.distributed as dist

    _join(rank, world, port)
    try:
        cases = [(lam, False) for lam in LAMBDAS] + [(None, True)]
        results = {(lam, dead): _rank_results(rank, world, lam, dead) for lam, dead in cases}
        torch.save(results, f"{out}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()


@pytest.fixture(scope="module", params=sorted(SIZES), ids=lambda w: f"{w}ranks")
def ranks(request, tmp_path_factory):
    """``(world, [results of rank 0, rank 1, ...])`` from one spawned process group."""
    world = request.param
    out = tmp_path_factory.mktemp(f"gbt_world{world}")
    mp.spawn(_worker, args=(world, _free_port(), str(out)), nprocs=world, join=True)
    return world, [torch.load(out / f"rank{r}.pt") for r in range(world)]


def _single_process(loss, dead=False):
    x1, x2, weight = _inputs(dead)
    weight.requires_grad_(True)
    h1, h2 = x1 @ weight, x2 @ weight
    value = loss(h1, h2)
    return value, *torch.autograd.grad(value, [h1, h2, weight])


def _assert_close(got, expected):
    assert torch.allclose(got, expected, rtol=1e-10, atol=1e-12), (got, expected)


def _assert_equals_one_process(world, results, value, grad1, grad2, grad_weight, method=True):
    sizes = SIZES[world]
    _assert_close(torch.stack([r["value"] for r in results]).mean(), value)
    if method:
        _assert_close(torch.stack([r["method_value"] for r in results]).mean(), value)
        _assert_close(torch.stack([r["grad_weight"] for r in results]).mean(0), grad_weight)
    for rank, result in enumerate(results):
        mine = slice(sum(sizes[:rank]), sum(sizes[: rank + 1]))
        # world_size × the rank's rows' gradient: DDP's average over ranks makes it exact
        _assert_close(result["grad_h1"], world * grad1[mine])
        _assert_close(result["grad_h2"], world * grad2[mine])


@pytest.mark.parametrize("lam", LAMBDAS, ids=["1/d", "0.5"])
def test_ranks_with_uneven_shares_equal_one_process_on_the_union(ranks, lam):
    world, results = ranks
    expected = _single_process(lambda a, b: barlow_twins_reference(a, b, lam))
    # the method uses the authors' λ = 1/d
    _assert_equals_one_process(world, [r[lam, False] for r in results], *expected, lam is None)


def test_a_dead_unit_across_ranks_gets_the_single_process_gradient_not_nan(ranks):
    world, results = ranks
    expected = _single_process(barlow_twins_loss, dead=True)
    assert torch.isfinite(expected[3]).all()
    _assert_equals_one_process(world, [r[None, True] for r in results], *expected)
