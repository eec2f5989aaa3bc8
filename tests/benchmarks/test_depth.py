"""The depth benchmark compares like with like: every variant takes the same LayerNorm
option, ``contrastive-exact`` is ContraNorm's GNN form (the input graph's edges and self
pairs masked, against a float64 brute force), and the sampled form evaluates on fixed keys."""

import pytest
import torch
import torch.nn.functional as F

from ._scripts import load

depth = load("depth")
f64 = torch.float64
N, D, CLASSES = 9, 5, 3


def small_graph():
    """A symmetric graph without self loops: a ring and a few chords."""
    ring = torch.stack([torch.arange(N), (torch.arange(N) + 1) % N])
    chords = torch.tensor([[0, 2], [4, 7]])
    edges = torch.cat([ring, chords], 1)
    return torch.cat([edges, edges.flip(0)], 1)


def norm(variant, layer_norm, keys=4):
    return depth.Norm(variant, D, CLASSES, 1.0, keys, N, layer_norm).double()


@pytest.mark.parametrize("variant", depth.VARIANTS)
def test_every_variant_takes_the_layer_norm_option(variant):
    gen = torch.Generator().manual_seed(0)
    x = 2 + 3 * torch.randn(N, D, generator=gen, dtype=f64)  # rows far from standardised
    edges = small_graph()

    # LayerNorm at its initial affine map: rows of mean 0 and variance var / (var + eps)
    def standardised(out):
        mean, var = out.mean(1), out.var(1, unbiased=False)
        return bool(torch.allclose(mean, torch.zeros_like(mean), atol=1e-6)) and bool(
            torch.allclose(var, torch.ones_like(var), atol=1e-3)
        )

    assert standardised(norm(variant, True)(x, edges))
    assert not standardised(norm(variant, False)(x, edges))
    model = depth.DeepGCN(variant, 4, D, 8, CLASSES, 0.0, 1.0, 4, N, True)
    assert sum(isinstance(m, torch.nn.LayerNorm) for m in model.modules()) == 3  # every layer


def brute_contranorm(x, edges, scale=1.0):
    """ContraNorm's ``NormLayer`` mode ``CN`` (``identity`` form, ``tau = 1``) in float64:
    similarities of normalised rows, the adjacency's pairs and the diagonal set to ``-inf``,
    row softmax, ``(1 + s) x - s P x``."""
    u = F.normalize(x, dim=1)
    sim = u @ u.T
    sim[edges[0], edges[1]] = float("-inf")
    sim.fill_diagonal_(float("-inf"))
    return (1 + scale) * x - scale * torch.softmax(sim, dim=1) @ x


def test_the_exact_form_is_contranorms_with_the_edges_and_self_pairs_masked():
    gen = torch.Generator().manual_seed(1)
    x = 3 * torch.randn(N, D, generator=gen, dtype=f64)
    edges = small_graph()
    out = norm("contrastive-exact", False)(x, edges)
    assert torch.allclose(out, brute_contranorm(x, edges), atol=1e-10)


def test_the_exact_form_reads_nothing_from_a_neighbour_or_itself():
    # row i's attention term depends on x_j only through j being a key of i: a masked pair
    # gives a zero Jacobian block (self pairs: the block is the identity part alone)
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(N, D, generator=gen, dtype=f64)
    edges = small_graph()
    layer = norm("contrastive-exact", False)
    jac = torch.autograd.functional.jacobian(lambda z: layer(z, edges), x)  # [N, D, N, D]
    masked = torch.zeros(N, N, dtype=torch.bool)
    masked[edges[0], edges[1]] = True
    for i in range(N):
        for j in range(N):
            block = jac[i, :, j, :]
            if i == j:
                # (1 + s) I - s * d(P x)_i/dx_i, where x_i enters only as the anchor
                anchor = torch.autograd.functional.jacobian(
                    lambda row, i=i: (
                        torch.softmax(
                            (F.normalize(row, dim=0) @ F.normalize(x, dim=1).T).masked_fill(
                                masked[i] | (torch.arange(N) == i), float("-inf")
                            ),
                            0,
                        )
                        @ x
                    ),
                    x[i],
                )
                assert torch.allclose(block, 2 * torch.eye(D, dtype=f64) - anchor, atol=1e-10)
            elif masked[i, j]:
                assert block.abs().max() == 0
            else:
                assert block.abs().max() > 1e-6


@pytest.mark.parametrize("variant", ["contrastive", "contrastive-residual"])
def test_the_sampled_form_resamples_in_training_and_evaluates_on_fixed_keys(variant):
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(N, D, generator=gen, dtype=f64)
    edges = small_graph()
    torch.manual_seed(0)
    layer = norm(variant, False, keys=3)
    layer.eval()
    first = layer(x, edges)
    assert torch.equal(layer(x, edges), first)
    expected = layer.inner(x, keys=layer.eval_keys)
    assert torch.equal(first, expected)
    layer.train()
    outs = {tuple(layer(x, edges).flatten().tolist()) for _ in range(20)}
    assert len(outs) > 1  # 3 keys of 9: twenty equal draws would be chance ~1e-35


def test_the_notes_name_every_row_where_neither_contrastive_form_is_best():
    def cells(test):
        return [{"test": test}]

    groups = {
        ("Cora", 16, True, "pairnorm"): cells(0.70),
        ("Cora", 16, True, "contrastive"): cells(0.60),
        ("Cora", 16, True, "contrastive-exact"): cells(0.75),  # the exact form wins
        ("Cora", 32, False, "batchnorm"): cells(0.50),
        ("Cora", 32, False, "contrastive"): cells(0.40),
        ("Cora", 32, False, "contrastive-exact"): cells(0.45),  # neither form wins
    }
    assert depth.not_won(groups) == [
        "Cora 32 (LayerNorm no): batchnorm 50.0 against contrastive-exact 45.0"
    ]
