"""Tiled (memory-bounded) computations equal the dense forms: values and gradients."""

import pytest
import torch
import torch.nn.functional as F

from cl2gnn.graphs import pair_graph
from cl2gnn.losses import (
    GeneralizedNTXentLoss,
    InfoNCELoss,
    KernelInfoNCELoss,
    RandomWalkLoss,
    _tiling,
)
from cl2gnn.nn import UniformAttention, _dispatch
from cl2gnn.nn import tiled as tiled_module
from cl2gnn.nn import uniform as uniform_module
from cl2gnn.nn.tiled import tiled_logsumexp, tiled_row_logsumexp

from .. import reference as ref


def value_and_grad(fn, x):
    x = x.detach().clone().requires_grad_(True)
    value = fn(x)
    (grad,) = torch.autograd.grad(value, x)
    return value, grad


@pytest.mark.parametrize(("n", "tile"), [(7, 2), (30, 7), (64, 16), (65, 64), (40, 100)])
@pytest.mark.parametrize("stop_gradient", [False, True])
@pytest.mark.parametrize("self_loops", [False, True])
@pytest.mark.parametrize("scale", [1.0, 30.0])  # 30: logits beyond the unshifted-exp path
@pytest.mark.parametrize("saved", [True, False])  # exp blocks kept for backward / recomputed
def test_tiled_energy_equals_dense(n, tile, stop_gradient, self_loops, scale, saved, monkeypatch):
    if not saved:
        monkeypatch.setattr(tiled_module, "SAVED_BLOCKS_MAX_BYTES", 0)
    x = F.normalize(torch.randn(n, 5, dtype=torch.float64), dim=1) * scale
    weight = torch.rand(n, dtype=torch.float64)
    exclude = pair_graph(sample_id=torch.arange(n) // 2)
    kwargs = {"weight": weight, "exclude_index": exclude}
    dense = UniformAttention(0.1, 0.5, stop_gradient, self_loops, implementation="dense")
    tiled = UniformAttention(
        0.1, 0.5, stop_gradient, self_loops, implementation="tiled", tile_size=tile
    )
    vd, gd = value_and_grad(lambda v: dense.energy(v, **kwargs), x)
    vt, gt = value_and_grad(lambda v: tiled.energy(v, **kwargs), x)
    assert torch.allclose(vd, vt, rtol=1e-12, atol=1e-9)
    assert torch.allclose(gd, gt, rtol=1e-10, atol=1e-9)


def test_saved_blocks_survive_a_second_backward():
    x = F.normalize(torch.randn(50, 4, dtype=torch.float64), dim=1).requires_grad_(True)
    value = tiled_logsumexp(x, 0.5, weight=torch.rand(50, dtype=torch.float64), tile_size=16)
    (first,) = torch.autograd.grad(value, x, retain_graph=True)
    (second,) = torch.autograd.grad(value, x)
    assert torch.equal(first, second)


def test_tiled_energy_matches_bruteforce_reference():
    x = torch.randn(23, 4, dtype=torch.float64)
    op = UniformAttention(temperature=0.3, implementation="tiled", tile_size=5)
    assert torch.allclose(op.energy(x), ref.uniform_energy(x, 0.3))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_tiled_log_partition_low_precision(dtype):
    # Rows are multiplied in their dtype and reduced in float32. Against the float64
    # log-partition of the same rounded rows, value and gradient then carry one rounding
    # of the result to the dtype (unit roundoff u = eps / 2), the logits' rounding to the
    # dtype before exp (up to u |S_ij| each, but independent across the N keys: about u in
    # the norm) and the float32 reduction of N terms (at most N u_32). Reducing in the
    # dtype instead adds a rounding per tile to the gradient, about 3 u: it fails.
    n, tau, tile = 1024, 0.1, 32
    u, u32 = torch.finfo(dtype).eps / 2, torch.finfo(torch.float32).eps / 2
    tol = 2 * u + n * u32
    x = F.normalize(torch.randn(n, 16, dtype=torch.float64), dim=1).to(dtype)
    weight = torch.rand(n, dtype=torch.float64).to(dtype)

    exact = x.double().requires_grad_(True)
    logits = (exact @ exact.T / tau).masked_fill(torch.eye(n, dtype=torch.bool), float("-inf"))
    lse_ref = torch.logsumexp(logits, dim=1)
    (grad_ref,) = torch.autograd.grad(lse_ref, exact, grad_outputs=weight.double())

    rows = x.clone().requires_grad_(True)
    lse = tiled_row_logsumexp(rows, tau, tile_size=tile)
    (grad,) = torch.autograd.grad(lse, rows, grad_outputs=weight)
    assert lse.dtype == grad.dtype == dtype
    assert float((lse.double() - lse_ref).norm() / lse_ref.norm()) <= tol
    assert float((grad.double() - grad_ref).norm() / grad_ref.norm()) <= tol


def test_tiled_rejects_asymmetric_exclusion():
    x = torch.randn(10, 3)
    asym = torch.tensor([[0], [1]])
    with pytest.raises(ValueError, match="symmetric"):
        UniformAttention(implementation="tiled").energy(x, exclude_index=asym)


def test_tiled_logsumexp_rows_without_keys_contribute_zero():
    x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    both = torch.tensor([[0, 1], [1, 0]])  # every key of both rows excluded
    value = tiled_logsumexp(x, 0.5, exclude_index=both, tile_size=1)
    value.backward()
    assert float(value) == 0.0 and torch.equal(x.grad, torch.zeros_like(x))


TILE = 4  # 22 rows in 6 tiles

# (loss, the tiled path it takes): "rows" is _tiling.row_tiled_sum (dense pairwise
# losses); "log-partition" is UniformAttention's tiled_row_logsumexp, which "auto" takes
# on the CPU from _dispatch.CPU_TILED_MIN_ROWS rows on (InfoNCE, the random-walk loss)
LOSSES = [
    pytest.param(lambda: InfoNCELoss(0.3), "log-partition", id="infonce"),
    pytest.param(lambda: KernelInfoNCELoss(1.0, 0.5), "rows", id="kernel"),
    pytest.param(
        lambda: KernelInfoNCELoss(0.5, 0.5, mixture="concat", mixture_form="kernel"),
        "rows",
        id="kernel-concat-kernel",
    ),
    pytest.param(
        lambda: KernelInfoNCELoss(1.0, 0.5, mixture="simple", mixture_form="loss"),
        "rows",
        id="kernel-simple-loss",
    ),
    pytest.param(lambda: RandomWalkLoss(0.5), "log-partition", id="random-walk"),
    pytest.param(
        lambda: RandomWalkLoss(0.5, form="squared"), "log-partition", id="random-walk-squared"
    ),
    pytest.param(lambda: GeneralizedNTXentLoss(0.4), "rows", id="generalized-ntxent"),
]


def spy_row_tiles(monkeypatch, tiles):
    """Shrink row_tiled_sum's tiles to TILE and record each tile (one per checkpoint)."""
    real = _tiling.checkpoint

    def checkpoint(term, start, end, **kwargs):
        tiles.append(1)
        return real(term, start, end, **kwargs)

    monkeypatch.setattr(_tiling, "checkpoint", checkpoint)
    monkeypatch.setattr(_tiling, "TILE", TILE)


def spy_tiled_log_partition(monkeypatch, tiles):
    """Let "auto" take the tiled log-partition at any size, in tiles of TILE rows, and
    record each call's number of row tiles."""
    real = uniform_module.TiledRowLogSumExp.apply

    class Tiled:  # the operator calls the tiles' autograd function itself
        @staticmethod
        def apply(x, tau, stop_gradient, self_loops, exclude_index, tile, matmul_dtype):
            tiles.append(-(-x.size(0) // TILE))
            return real(x, tau, stop_gradient, self_loops, exclude_index, TILE, matmul_dtype)

    monkeypatch.setattr(uniform_module, "TiledRowLogSumExp", Tiled)
    monkeypatch.setitem(_dispatch.CPU_TILED_MIN_ROWS, "log-partition", 1)


@pytest.mark.parametrize(("make", "path"), LOSSES)
def test_row_tiled_losses_equal_untiled(make, path, monkeypatch):
    z1, z2 = torch.randn(11, 6, dtype=torch.float64), torch.randn(11, 6, dtype=torch.float64)
    spy = spy_row_tiles if path == "rows" else spy_tiled_log_partition
    with monkeypatch.context() as patch:  # the spy alone: whole rows, dense log-partition
        untiled_tiles = []
        spy(patch, untiled_tiles)
        patch.setattr(_tiling, "TILE", 1024)
        patch.setitem(_dispatch.CPU_TILED_MIN_ROWS, "log-partition", 1024)
        whole = value_and_grad(lambda a: make()(a, z2), z1)
    tiled_tiles = []
    spy(monkeypatch, tiled_tiles)
    tiled = value_and_grad(lambda a: make()(a, z2), z1)
    assert untiled_tiles == []  # the reference did not take the tiled path...
    assert sum(tiled_tiles) >= 6  # ...the tiled run did, 22 rows in tiles of 4
    assert torch.allclose(whole[0], tiled[0], atol=1e-12)
    assert torch.allclose(whole[1], tiled[1], atol=1e-12)
