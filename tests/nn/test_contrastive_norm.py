"""ContrastiveNorm: its step is UniformAttention's stop-gradient step (checked by autograd
in float64), its published form (ContraNorm) against a brute force, the tiled attention
against the dense one, and its input checks."""

import pytest
import torch
import torch.nn.functional as F

from cl2gnn.nn import ContrastiveNorm, UniformAttention
from cl2gnn.nn.tiled_attention import tiled_attention

f64 = torch.float64
TOL = 1e-10
N, D = 11, 4


def graph_args(kind, n, gen):
    """``(edge_index, kwargs)`` of one affinity graph: complete, complete minus a symmetric
    set of pairs, sparse, or sampled keys."""
    pairs = torch.randint(0, n, (2, 2 * n), generator=gen)
    if kind == "exclude":
        return None, {"exclude_index": torch.cat([pairs, pairs.flip(0)], 1)}
    if kind == "sparse":
        return pairs, {}
    if kind == "keys":
        return None, {"keys": torch.randperm(n, generator=gen)[: n // 2]}
    return None, {}


def step_error(op, x, edge_index, kwargs):
    """max |forward(x) - norm(x - α ∇E(x))| with E the layer's energy, by autograd."""
    x = x.detach().requires_grad_(True)
    (grad,) = torch.autograd.grad(op.energy(x, edge_index, **kwargs), x)
    stepped = x - op.step_size() * grad
    expected = stepped if op.norm is None else op.norm(stepped)
    return float((op(x, edge_index, **kwargs) - expected).detach().abs().max())


GRAPHS = ["complete", "exclude", "sparse", "keys"]


@pytest.mark.parametrize("kind", GRAPHS)
@pytest.mark.parametrize("self_loops", [True, False])
@pytest.mark.parametrize("implementation", ["dense", "tiled"])
def test_forward_is_a_step_of_the_stop_gradient_uniformity_energy(kind, self_loops, implementation):
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(N, D, generator=gen, dtype=f64)
    edge_index, kwargs = graph_args(kind, N, gen)
    op = ContrastiveNorm(
        D, 0.3, 0.7, normalize=False, self_loops=self_loops, implementation=implementation
    )
    op = op.double()
    torch.nn.init.normal_(op.norm.weight, generator=gen)  # a non-trivial affine LayerNorm
    torch.nn.init.normal_(op.norm.bias, generator=gen)
    op.tile_size = 4  # several tiles, the last one ragged
    assert step_error(op, x, edge_index, kwargs) < TOL
    # on unit rows ContraNorm's normalised similarities are x's own: the same step
    unit = F.normalize(x, dim=1)
    op.normalize = True
    assert step_error(op, unit, edge_index, kwargs) < TOL
    # the energy is UniformAttention's stop-gradient energy on the same graph
    uniform = UniformAttention(0.3, 0.7, stop_gradient=True, self_loops=self_loops)
    assert torch.allclose(
        op.energy(x, edge_index, **kwargs), uniform.energy(x, edge_index, **kwargs)
    )


@pytest.mark.parametrize("kind", GRAPHS)
def test_learnable_step_is_a_per_channel_step_and_learns(kind):
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(N, D, generator=gen, dtype=f64)
    edge_index, kwargs = graph_args(kind, N, gen)
    op = ContrastiveNorm(D, 0.4, 0.5, normalize=False, learnable_step=True, norm=None).double()
    with torch.no_grad():
        op.rate.copy_(torch.rand(D, generator=gen, dtype=f64))
    assert step_error(op, x, edge_index, kwargs) < TOL
    op(x, edge_index, **kwargs).square().sum().backward()
    assert op.rate.grad is not None and op.rate.grad.abs().sum() > 0
    op.reset_parameters()
    assert torch.allclose(op.rate, torch.full((D,), 0.4 / 0.5, dtype=f64))


def contranorm_reference(x, scale, tau, self_loops, excluded=(), eps=1e-6):
    """ContraNorm's GNN layer written out: cosine similarities / τ, the self pairs (unless
    kept) and the excluded pairs masked, row softmax, ``(1 + s) x - s P x``, then a plain
    LayerNorm (unit weight, zero bias)."""
    n = x.size(0)
    unit = x / x.norm(dim=1, keepdim=True)
    logits = unit @ unit.T / tau
    for i in range(n):
        for j in range(n):
            if (i == j and not self_loops) or (j, i) in excluded:
                logits[i, j] = float("-inf")
    out = (1 + scale) * x - scale * torch.softmax(logits, dim=1) @ x
    centred = out - out.mean(dim=1, keepdim=True)
    return centred / torch.sqrt(centred.square().mean(dim=1, keepdim=True) + eps)


def sampled_keys_reference(x, keys, scale, tau, self_loops, eps=1e-6):
    """The same layer on sampled keys written out: each row's cosine similarities / τ to
    the key rows (its own pair masked unless kept), row softmax over the keys, the keys'
    rows of ``x`` (not their normalised rows) averaged, then the plain LayerNorm."""
    unit = x / x.norm(dim=1, keepdim=True)
    logits = unit @ unit[keys].T / tau
    for i in range(x.size(0)):
        for j, key in enumerate(keys.tolist()):
            if key == i and not self_loops:
                logits[i, j] = float("-inf")
    out = (1 + scale) * x - scale * torch.softmax(logits, dim=1) @ x[keys]
    centred = out - out.mean(dim=1, keepdim=True)
    return centred / torch.sqrt(centred.square().mean(dim=1, keepdim=True) + eps)


@pytest.mark.parametrize("self_loops", [True, False])
def test_sampled_keys_average_x_where_its_normalised_rows_differ(self_loops):
    gen = torch.Generator().manual_seed(4)
    x = 3 * torch.randn(N, D, generator=gen, dtype=f64)  # rows far from unit norm: U != X
    assert (x.norm(dim=1) - 1).abs().min() > 0.1
    keys = torch.randperm(N, generator=gen)[: N // 2]
    op = ContrastiveNorm(D, 0.6, 0.5, self_loops=self_loops).double()
    expected = sampled_keys_reference(x, keys, 0.6 / 0.5, 0.5, self_loops)
    assert torch.allclose(op(x, keys=keys), expected, atol=TOL)


@pytest.mark.parametrize("implementation", ["dense", "tiled"])
@pytest.mark.parametrize("self_loops", [True, False])
def test_published_form_matches_a_brute_force(implementation, self_loops):
    gen = torch.Generator().manual_seed(3)
    x = 3 * torch.randn(N, D, generator=gen, dtype=f64)  # rows far from unit norm
    pairs = torch.randint(0, N, (2, 2 * N), generator=gen)
    pairs = pairs[:, pairs[0] != pairs[1]]
    exclude = torch.cat([pairs, pairs.flip(0)], 1)
    excluded = set(map(tuple, exclude.T.tolist()))
    op = ContrastiveNorm(
        D, 0.6, 0.5, self_loops=self_loops, implementation=implementation, tile_size=3
    ).double()
    expected = contranorm_reference(x, 0.6 / 0.5, 0.5, self_loops, excluded)
    assert torch.allclose(op(x, exclude_index=exclude), expected, atol=TOL)
    expected = contranorm_reference(x, 0.6 / 0.5, 0.5, self_loops)
    assert torch.allclose(op(x), expected, atol=TOL)


@pytest.mark.parametrize("self_loops", [True, False])
@pytest.mark.parametrize("tile", [1, 4, 32])
def test_tiled_attention_matches_dense_values_and_gradients(self_loops, tile):
    gen = torch.Generator().manual_seed(4)
    n = 13
    u = torch.randn(n, 3, generator=gen, dtype=f64, requires_grad=True)
    v = torch.randn(n, 5, generator=gen, dtype=f64, requires_grad=True)
    pairs = torch.randint(0, n, (2, 20), generator=gen)
    exclude = torch.cat([pairs, pairs.flip(0)], 1)
    mask = torch.zeros(n, n, dtype=torch.bool)
    mask[exclude[1], exclude[0]] = True
    if not self_loops:
        mask.fill_diagonal_(True)
    mask[0] = True  # a row without keys attends to nothing
    mask[:, 0] = True
    exclude = torch.cat(
        [exclude, torch.stack([torch.zeros(n, dtype=torch.long), torch.arange(n)])], 1
    )
    exclude = torch.cat([exclude, exclude.flip(0)], 1)
    logits = (u @ u.T / 0.6).masked_fill(mask, float("-inf"))
    dense = torch.nan_to_num(torch.softmax(logits, dim=1)) @ v
    tiled = tiled_attention(u, v, 0.6, self_loops, exclude, tile)
    assert torch.allclose(tiled, dense, atol=TOL)
    assert tiled[0].abs().max() == 0
    weight = torch.randn(n, 5, generator=gen, dtype=f64)
    expected = torch.autograd.grad((dense * weight).sum(), (u, v))
    got = torch.autograd.grad((tiled * weight).sum(), (u, v))
    for a, b in zip(got, expected, strict=True):
        assert torch.allclose(a, b, atol=TOL)


def test_the_step_spreads_a_collapsing_cloud():
    # features squeezed around one point: with near-uniform attention the step is
    # x + s (x - mean), so the spread about the mean grows about (1 + s)-fold (here 3)
    gen = torch.Generator().manual_seed(5)
    x = torch.randn(200, 8, generator=gen, dtype=f64) * 0.05 + torch.ones(8, dtype=f64)
    out = ContrastiveNorm(8, step=1.0, temperature=0.5, norm=None).double()(x)

    def spread(z):  # spread about the mean over the mean's norm: 0 = collapsed
        centre = z.mean(0)
        return float((z - centre).norm(dim=1).mean() / centre.norm())

    assert spread(out) > 2.5 * spread(x)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"temperature": 0.0}, "temperature"),
        ({"temperature": float("inf")}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"step": float("nan")}, "step"),
        ({"norm": "batch"}, "norm"),
        ({"implementation": "triton"}, "implementation"),
        ({"tile_size": 0}, "tile_size"),
    ],
)
def test_bad_options_raise_naming_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ContrastiveNorm(D, **kwargs)


def test_bad_inputs_raise_naming_the_argument():
    op = ContrastiveNorm(D)
    with pytest.raises(ValueError, match="channels"):
        ContrastiveNorm(0)
    with pytest.raises(ValueError, match="channels"):
        op(torch.randn(N, D + 1))
    with pytest.raises(ValueError, match="NaN"):
        op(torch.full((N, D), float("nan")))
    with pytest.raises(ValueError, match="at most one"):
        op(
            torch.randn(N, D),
            keys=torch.arange(3),
            exclude_index=torch.zeros(2, 1, dtype=torch.long),
        )
    with pytest.raises(ValueError, match="keys"):
        op(torch.randn(N, D), keys=torch.tensor([0, 0]))
