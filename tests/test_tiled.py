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
from cl2gnn.nn import UniformAttention
from cl2gnn.nn import tiled as tiled_module
from cl2gnn.nn.tiled import tiled_logsumexp

from . import reference as ref


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
    op = UniformAttention(tau=0.3, implementation="tiled", tile_size=5)
    assert torch.allclose(op.energy(x), ref.uniform_energy(x, 0.3))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_tiled_energy_low_precision(dtype):
    x = F.normalize(torch.randn(300, 32, dtype=torch.float64), dim=1)
    dense = UniformAttention(tau=0.1, implementation="dense")
    tiled = UniformAttention(tau=0.1, implementation="tiled", tile_size=64)
    vd, gd = value_and_grad(dense.energy, x)
    vt, gt = value_and_grad(tiled.energy, x.to(dtype))
    tol = 1e-5 if dtype == torch.float32 else 3e-2
    assert torch.isfinite(gt).all()
    vt, vd = float(vt.detach()), float(vd.detach())
    assert abs(vt - vd) <= tol * abs(vd)
    assert float((gt.double() - gd).norm() / gd.norm()) < tol * 5


def test_auto_switches_to_tiled_and_rejects_asymmetric_exclusion():
    x = torch.randn(10, 3)
    asym = torch.tensor([[0], [1]])
    assert not UniformAttention()._use_tiled(x, None)
    assert UniformAttention(implementation="tiled")._use_tiled(x, None)
    assert not UniformAttention(implementation="auto")._use_tiled(torch.randn(3000, 2), asym)
    with pytest.raises(ValueError, match="symmetric"):
        UniformAttention(implementation="tiled").energy(x, exclude_index=asym)


def test_tiled_logsumexp_rows_without_keys_contribute_zero():
    x = torch.randn(2, 3, dtype=torch.float64, requires_grad=True)
    both = torch.tensor([[0, 1], [1, 0]])  # every key of both rows excluded
    value = tiled_logsumexp(x, 0.5, exclude_index=both, tile_size=1)
    value.backward()
    assert float(value) == 0.0 and torch.equal(x.grad, torch.zeros_like(x))


LOSSES = [
    lambda: InfoNCELoss(0.3),
    lambda: KernelInfoNCELoss(1.0, 0.5),
    lambda: KernelInfoNCELoss(0.5, 0.5, mixture="concat", mixture_form="kernel"),
    lambda: KernelInfoNCELoss(1.0, 0.5, mixture="simple", mixture_form="loss"),
    lambda: RandomWalkLoss(0.5),
    lambda: RandomWalkLoss(0.5, form="squared"),
    lambda: GeneralizedNTXentLoss(0.4),
]


@pytest.mark.parametrize("make", LOSSES)
def test_row_tiled_losses_equal_untiled(make, monkeypatch):
    z1, z2 = torch.randn(11, 6, dtype=torch.float64), torch.randn(11, 6, dtype=torch.float64)
    whole = value_and_grad(lambda a: make()(a, z2), z1)
    monkeypatch.setattr(_tiling, "TILE", 4)  # 22 rows in 6 tiles
    tiled = value_and_grad(lambda a: make()(a, z2), z1)
    assert torch.allclose(whole[0], tiled[0], atol=1e-12)
    assert torch.allclose(whole[1], tiled[1], atol=1e-12)
