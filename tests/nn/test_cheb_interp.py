"""PolyGCL's filter (ChebInterpConv) against a dense spectral reference in float64: the
eigendecomposition of L̃ = L − I, the Chebyshev interpolant through γ applied to its
eigenvalues (numpy's own interpolation, not the operator's coefficient formula)."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from cl2gnn.nn import ChebInterpConv

from .. import reference as ref
from ..conftest import identity_error

f64 = torch.float64


def nodes(K):
    """The Chebyshev–Gauss nodes in increasing order (the paper's x_j)."""
    return np.cos((K - np.arange(K + 1) + 0.5) * np.pi / (K + 1))


def gamma_reference(theta, pass_band):
    increments = np.r_[0.0, np.cumsum(np.maximum(theta, 0.0))]
    return 2.0 - increments if pass_band == "low" else increments


def interpolant(theta, pass_band):
    """h: the degree-K polynomial through (x_j, γ_j), by numpy's least squares on K + 1
    points (an exact fit)."""
    K = len(theta)
    coef = np.polynomial.chebyshev.chebfit(nodes(K), gamma_reference(theta, pass_band), K)
    return lambda t: np.polynomial.chebyshev.chebval(t, coef)


def dense_laplacian_minus_identity(edge_index, n, weight=None):
    """L̃ = −½(Ā + Āᵀ), Ā = D^{-1/2} A D^{-1/2} without self-loops."""
    keep = edge_index[0] != edge_index[1]
    adj = ref.dense_adjacency(edge_index[:, keep], n, None if weight is None else weight[keep])
    abar = ref.sym_normalized(adj)
    return -0.5 * (abar + abar.T)


def spectral_reference(op, x, edge_index, weight=None):
    lap = dense_laplacian_minus_identity(edge_index, x.size(0), weight).numpy()
    lam, U = np.linalg.eigh(lap)
    h = interpolant(op.theta.detach().numpy(), op.pass_band)
    return torch.from_numpy(U @ (h(lam)[:, None] * (U.T @ x.numpy())))


def with_theta(op, theta):
    with torch.no_grad():
        op.theta.copy_(torch.as_tensor(theta, dtype=op.theta.dtype))
    return op


@st.composite
def graphs(draw):
    n = draw(st.integers(2, 12))
    seed = draw(st.integers(0, 2**31 - 1))
    gen = torch.Generator().manual_seed(seed)
    e = draw(st.integers(0, 3 * n))
    edge_index = torch.randint(0, n, (2, e), generator=gen)  # loops, repeats, isolated nodes
    weight = torch.rand(e, generator=gen, dtype=f64) + 0.1 if draw(st.booleans()) else None
    x = torch.randn(n, draw(st.integers(1, 4)), generator=gen, dtype=f64)
    K = draw(st.integers(1, 10))
    theta = (torch.rand(K, generator=gen, dtype=f64) - 0.3).numpy()  # some increments off
    return x, edge_index, weight, theta


@settings(deadline=None)
@given(graphs(), st.sampled_from(["low", "high"]))
def test_filter_matches_dense_spectral_reference(case, pass_band):
    x, edge_index, weight, theta = case
    op = with_theta(ChebInterpConv(K=len(theta), pass_band=pass_band).double(), theta)
    expected = spectral_reference(op, x, edge_index, weight)
    assert torch.allclose(op(x, edge_index, weight), expected, atol=1e-10, rtol=1e-10)


def test_dense_reference_on_an_undirected_graph_with_an_isolated_node():
    """The authors' case (an undirected graph, one isolated node, K = 10), where
    L̃ = −D^{-1/2} A D^{-1/2} needs no symmetrising."""
    gen = torch.Generator().manual_seed(1)
    pairs = torch.tensor([[0, 1, 1, 2, 3, 4, 5, 2], [1, 2, 3, 3, 4, 5, 0, 5]])
    edge_index = torch.cat([pairs, pairs.flip(0)], dim=1)  # node 6 isolated
    x = torch.randn(7, 3, generator=gen, dtype=f64)
    for pass_band in ("low", "high"):
        theta = torch.randn(10, generator=gen, dtype=f64).numpy()
        op = with_theta(ChebInterpConv(pass_band=pass_band).double(), theta)
        expected = spectral_reference(op, x, edge_index)
        assert torch.allclose(op(x, edge_index), expected, atol=1e-12)


@pytest.mark.parametrize("pass_band", ["low", "high"])
def test_filter_interpolates_gamma_at_the_nodes(pass_band):
    """g(x_j) = γ_j exactly: the coefficients evaluated as a Chebyshev series."""
    theta = np.random.default_rng(0).normal(size=10)
    op = with_theta(ChebInterpConv(pass_band=pass_band).double(), theta)
    values = np.polynomial.chebyshev.chebval(nodes(10), op.coefficients().detach().numpy())
    assert np.allclose(values, gamma_reference(theta, pass_band), atol=1e-12)
    assert np.allclose(op.gamma().detach().numpy(), gamma_reference(theta, pass_band))


def test_initial_filters_are_near_linear_low_and_high_pass():
    """θ = 2/K: γ linear in j from 2 down to 0 (low) and up from 0 to 2 (high); on the
    eigenvalues λ = 1 + t of L, low ≈ 2 − λ and high ≈ λ (not exactly: the nodes are not
    equispaced)."""
    low, high = ChebInterpConv(pass_band="low").double(), ChebInterpConv(pass_band="high").double()
    assert torch.allclose(low.gamma(), torch.linspace(2, 0, 11, dtype=f64), atol=1e-6)
    assert torch.allclose(high.gamma(), torch.linspace(0, 2, 11, dtype=f64), atol=1e-6)
    t = np.linspace(-1, 1, 5)
    g_low = np.polynomial.chebyshev.chebval(t, low.coefficients().detach().numpy())
    g_high = np.polynomial.chebyshev.chebval(t, high.coefficients().detach().numpy())
    assert np.allclose(g_low + g_high, 2.0)  # mirror images
    grid = np.linspace(-1, 1, 201)
    assert (
        np.diff(np.polynomial.chebyshev.chebval(grid, low.coefficients().detach().numpy())) < 0
    ).all()
    assert g_low[2] == pytest.approx(1.0) and g_low[0] > 2.0 > g_low[1]


def test_gamma_is_monotone_and_the_low_pass_is_unbounded_below():
    theta = torch.tensor([0.5, -0.2, 0.4, 0.3, 0.9, 0.1, -1.0, 0.2], dtype=f64)
    low = with_theta(ChebInterpConv(K=8, pass_band="low").double(), theta)
    high = with_theta(ChebInterpConv(K=8, pass_band="high").double(), theta)
    assert (low.gamma().diff() <= 0).all() and (high.gamma().diff() >= 0).all()
    assert low.gamma()[0] == 2 and high.gamma()[0] == 0
    assert low.gamma()[-1] < 0  # no clamp, as the authors' real-data code


def test_an_increment_switched_off_gets_no_gradient():
    theta = torch.tensor([0.3, -0.1, 0.2], dtype=f64)
    op = with_theta(ChebInterpConv(K=3).double(), theta)
    x = torch.randn(5, 2, dtype=f64)
    edge_index = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 4]])
    op(x, edge_index).square().sum().backward()
    assert op.theta.grad[1] == 0 and (op.theta.grad[[0, 2]] != 0).all()


@settings(deadline=None, max_examples=25)
@given(graphs(), st.sampled_from(["low", "high"]), st.floats(-1.0, 2.0))
def test_energy_step_identity(case, pass_band, step):
    x, edge_index, weight, theta = case
    op = with_theta(ChebInterpConv(len(theta), pass_band, step).double(), theta)
    assert identity_error(op, x, edge_index, weight) < 1e-10
    filtered = spectral_reference(op, x, edge_index, weight)
    energy = 0.5 * ((x * x).sum() - (x * filtered).sum())
    assert torch.allclose(op.energy(x, edge_index, weight), energy)


def test_theta_gradient_matches_finite_differences():
    gen = torch.Generator().manual_seed(3)
    edge_index = torch.randint(0, 8, (2, 20), generator=gen)
    x = torch.randn(8, 3, generator=gen, dtype=f64)
    theta = torch.rand(6, generator=gen, dtype=f64) + 0.05  # away from the ReLU's kink
    op = ChebInterpConv(K=6, pass_band="high").double()

    def output(t):
        return torch.func.functional_call(op, {"theta": t}, (x, edge_index))

    assert torch.autograd.gradcheck(output, (theta.requires_grad_(),))


def test_directed_graph_uses_the_symmetric_part():
    edge_index = torch.tensor([[0, 1, 0], [1, 2, 2]])  # directed, in-degrees 0, 1, 2
    x = torch.randn(3, 2, dtype=f64)
    op = ChebInterpConv(K=3).double()
    both = torch.cat([edge_index, edge_index.flip(0)], dim=1)
    undirected = op(x, both)  # another graph: the degrees count both directions
    assert not torch.allclose(op(x, edge_index), undirected)
    assert torch.allclose(op(x, edge_index), spectral_reference(op, x, edge_index))


def test_repr_and_options_are_checked():
    assert repr(ChebInterpConv(K=4, pass_band="high", step=0.5)) == (
        "ChebInterpConv(K=4, pass_band='high', step=0.5)"
    )
    with pytest.raises(ValueError, match="pass_band"):
        ChebInterpConv(pass_band="band")
    with pytest.raises(ValueError, match="K"):
        ChebInterpConv(K=0)
    with pytest.raises(ValueError, match="edge_index"):
        ChebInterpConv()(torch.randn(3, 2), torch.tensor([[0, 5], [1, 2]]))
