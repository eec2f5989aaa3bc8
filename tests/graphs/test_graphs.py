"""Graph builders against brute force, and Proposition 2's spectral diagnostics."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from cl2gnn.datasets import sbm_graph
from cl2gnn.graphs import (
    algebraic_connectivity,
    class_spectra,
    faiss_available,
    knn_graph,
    pair_graph,
    radius_graph,
)
from cl2gnn.nn import AlignConv

from .. import reference as ref

BACKENDS = ["torch"] + (["faiss"] if faiss_available() else [])


def edge_set(edge_index):
    return set(map(tuple, edge_index.T.tolist()))


@given(st.integers(1, 6), st.integers(2, 4))
def test_pair_graph_cliques(b, v):
    edge_index = pair_graph(b, v)
    assert edge_index.size(1) == b * v * (v - 1)
    expected = {(j, i) for i in range(b * v) for j in range(b * v) if i != j and i % b == j % b}
    assert edge_set(edge_index) == expected


@given(st.lists(st.integers(0, 4), min_size=2, max_size=15))
def test_pair_graph_from_sample_id(ids):
    sample_id = torch.tensor(ids)
    expected = {
        (j, i) for i in range(len(ids)) for j in range(len(ids)) if i != j and ids[i] == ids[j]
    }
    if not expected:
        with pytest.raises(ValueError, match="empty"):
            pair_graph(sample_id=sample_id)
        return
    assert edge_set(pair_graph(sample_id=sample_id)) == expected


def check_knn(x, k, metric, backend, **kwargs):
    edge_index, scores = knn_graph(x, k, metric, backend=backend, return_scores=True, **kwargs)
    n = x.size(0)
    assert edge_index.shape == (2, n * k)
    assert torch.equal(edge_index[1], torch.arange(n).repeat_interleave(k))
    assert not bool((edge_index[0] == edge_index[1]).any()), "self pair returned"
    expected = ref.brute_knn(x, k, metric)
    assert torch.allclose(scores.view(n, k).double(), expected, atol=1e-4)
    # the scores are those of the returned neighbors, not just the right numbers
    xs = torch.nn.functional.normalize(x, dim=1) if metric == "cosine" else x
    src, dst = edge_index
    if metric == "l2":
        actual = ((xs[src] - xs[dst]) ** 2).sum(1)
    else:
        actual = (xs[src] * xs[dst]).sum(1)
    assert torch.allclose(actual, scores, atol=1e-4)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("metric", ["cosine", "ip", "l2"])
def test_knn_matches_bruteforce(backend, metric):
    check_knn(torch.randn(40, 6), 5, metric, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_knn_duplicates_and_zero_rows(backend):
    base = torch.randn(10, 4)
    x = torch.cat([base, base, base[:3], torch.zeros(3, 4)])  # exact duplicates + zeros
    for metric in ("cosine", "ip", "l2"):
        check_knn(x, 4, metric, backend)
    edge_index = knn_graph(x, 2, "cosine", backend=backend)
    zero_rows = torch.arange(23, 26)
    assert torch.isin(edge_index[1], zero_rows).sum() == 6  # zero rows still get k edges


def test_knn_torch_tiles_agree():
    x = torch.randn(50, 3)
    small_tiles = knn_graph(x, 3, "l2", backend="torch", tile_size=7)
    assert torch.equal(small_tiles, knn_graph(x, 3, "l2", backend="torch"))


@pytest.mark.skipif(not faiss_available(), reason="faiss not installed")
def test_knn_ivf_recall():
    gen = torch.Generator().manual_seed(0)
    centers = torch.randn(20, 16, generator=gen) * 4
    x = centers[torch.randint(0, 20, (4000,), generator=gen)] + torch.randn(4000, 16, generator=gen)
    exact = knn_graph(x, 10, "l2", backend="torch")
    approx = knn_graph(x, 10, "l2", backend="faiss", index="ivf", nprobe=8)
    recall = len(edge_set(exact) & edge_set(approx)) / exact.size(1)
    assert recall > 0.9, recall


def test_knn_symmetrize():
    x = torch.randn(30, 4)
    directed = edge_set(knn_graph(x, 3, backend="torch"))
    union = edge_set(knn_graph(x, 3, backend="torch", symmetrize="union"))
    mutual = edge_set(knn_graph(x, 3, backend="torch", symmetrize="mutual"))
    assert union == directed | {(b, a) for a, b in directed}
    assert mutual == {(a, b) for a, b in directed if (b, a) in directed}
    assert mutual < union


@pytest.mark.parametrize("r", [0.5, 1.5])
def test_radius_graph_bruteforce(r):
    x = torch.randn(40, 2)
    n = x.size(0)
    expected = {(j, i) for i in range(n) for j in range(n) if i != j and (x[i] - x[j]).norm() <= r}
    assert edge_set(radius_graph(x, r, tile_size=9)) == expected
    capped = radius_graph(x, r, max_num_neighbors=2)
    assert edge_set(capped) <= expected
    assert torch.bincount(capped[1], minlength=n).max() <= 2


def test_sbm_graph():
    edge_index, labels = sbm_graph([30, 30, 30], 1.0, 0.0, seed=0)
    assert torch.equal(labels, torch.arange(3).repeat_interleave(30))
    assert edge_index.size(1) == 3 * 30 * 29  # complete blocks, both directions, no loops
    assert bool((labels[edge_index[0]] == labels[edge_index[1]]).all())
    a, two = sbm_graph([50, 50], 0.5, 0.1, seed=3)
    b, _ = sbm_graph([50, 50], 0.5, 0.1, seed=3)
    assert torch.equal(a, b)
    same = (two[a[0]] == two[a[1]]).float().mean()
    assert 0.7 < float(same) < 0.9  # 0.5*49 / (0.5*49 + 0.1*50) ≈ 0.83


def test_algebraic_connectivity_known_graphs():
    n = 6
    complete = pair_graph(sample_id=torch.zeros(n, dtype=torch.long))
    path = torch.tensor([[0, 1, 1, 2, 2, 3], [1, 0, 2, 1, 3, 2]])
    two_parts = torch.tensor([[0, 1, 2, 3], [1, 0, 3, 2]])
    labels = torch.zeros(n, dtype=torch.long)
    assert torch.allclose(
        algebraic_connectivity(complete, labels), torch.tensor([n / (n - 1)], dtype=torch.float64)
    )
    # path P4: normalised Laplacian eigenvalues 1 - cos(pi k / 3)
    lam = algebraic_connectivity(path, torch.zeros(4, dtype=torch.long))
    assert torch.allclose(lam, torch.tensor([1 - np.cos(np.pi / 3)], dtype=torch.float64))
    assert float(algebraic_connectivity(two_parts, torch.zeros(4, dtype=torch.long))) < 1e-12
    per_class = algebraic_connectivity(two_parts, torch.tensor([0, 0, 1, 1]))
    assert torch.allclose(per_class, torch.tensor([2.0, 2.0], dtype=torch.float64))


@pytest.mark.parametrize("step", [0.05, 0.2, 0.45])
def test_proposition_2_alignconv_contraction_bound(step):
    """Iterating AlignConv on a connected class graph contracts the distance to the null
    space of L at every step by at most max|1 - 2αλ| over its non-zero eigenvalues."""
    edge_index, labels = sbm_graph([25], 0.3, 0.0, seed=1)
    spectrum = class_spectra(edge_index, labels)[0]
    assert spectrum.lambda_2 > 0  # connected
    deg = torch.bincount(edge_index[1], minlength=25).double()
    u = (deg.sqrt() / deg.sqrt().norm())[:, None]  # null space of L

    def dist(x):
        return float((x - u @ (u.T @ x)).norm())

    x = torch.randn(25, 3, dtype=torch.float64)
    op = AlignConv(step=step)
    rate = spectrum.contraction_rate(step)
    for _ in range(25):  # few enough that the distance stays far above round-off
        new = op(x, edge_index)
        ratio = dist(new) / dist(x)
        assert ratio <= rate * (1 + 1e-9)
        x = new
    # and tight: once the slowest mode dominates, the ratio reaches the bound
    assert ratio > 0.97 * rate
