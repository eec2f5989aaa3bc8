"""Every node method's objective, by value and gradient, against a float64 reference of
its formula written here (or in tests/reference.py) without cl2gnn's losses: a method
that computed another method's loss, or dropped one of its terms, fails.

Views: ``z1, z2`` (projections) and ``h1, h2`` (encoder outputs) of ``N`` nodes; the
``2N`` stacked views are anchors, row ``i`` and ``i + N`` the two views of node ``i``.
InfoNCE on an augmentation graph with weights ``A_ij`` (``j`` a positive of anchor
``i``) is ``mean_i [log Σ_{j≠i} e^{s_ij} - Σ_j Ā_ij s_ij]``, ``s_ij = x_i·x_j/τ`` on
L2-normalised rows and ``Ā = D^-½ A D^-½``, ``D`` the anchors' summed weights.
"""

from pathlib import Path

import pytest
import torch

from cl2gnn.node import METHODS, REGISTRY
from cl2gnn.node.methods import ContrastiveMethod

from .. import reference as ref
from ..conftest import node_method, objective

HERE = Path(__file__).resolve().parent
N, TAU, KNN_K, NEIGHBOR_WEIGHT = 6, 0.5, 2, 0.75  # 0.75: exact in the float32 buffer
# h: two tight clusters of three nodes (the homophily method's k-means recovers them)
CLUSTER = torch.tensor([0, 0, 0, 1, 1, 1])
# an undirected graph (both directions listed) with edges inside and across the clusters,
# irregular degrees and a self-loop, which the neighbor methods must ignore
GRAPH = torch.tensor([[0, 1], [1, 2], [2, 3], [3, 4], [0, 4], [1, 5], [2, 2]]).T
GRAPH = torch.cat([GRAPH, GRAPH.flip(0)], dim=1)


def unit(x):
    return x / x.norm(dim=1, keepdim=True)


def views():
    gen = torch.Generator().manual_seed(7)
    z1, z2 = (torch.randn(N, 4, generator=gen, dtype=torch.float64) for _ in range(2))
    centres = torch.eye(3, dtype=torch.float64)[CLUSTER]
    h1, h2 = (centres + 0.1 * torch.randn(N, 3, generator=gen, dtype=torch.float64) for _ in "12")
    return z1, z2, h1, h2


def info_nce_on_graph(z1, z2, a):
    return ref.info_nce_on_graph(torch.cat([z1, z2]), a, TAU)


def grace(z1, z2, h1, h2):
    return info_nce_on_graph(z1, z2, ref.pair_adjacency(N))


def attention(z1, z2, h1, h2):  # the paper's normalisation over negatives, β = 1
    return ref.attention_nt_xent(z1, z2, h1, h2, TAU, beta=1.0)


def kernel(z1, z2, h1, h2):  # Laplacian kernel exp(-||x - y|| / τ)
    return ref.kernel_nce(z1, z2, 1.0, TAU)


def random_walk(z1, z2, h1, h2):
    return ref.random_walk(z1, z2, TAU)


def spectral(z1, z2, h1, h2):
    return ref.spectral(z1, z2)


def knn(z1, z2, h1, h2):
    """Positives of node i's views: its other view and the other views of the k nodes
    nearest to it by cosine similarity of the mean encoder output."""
    mean = unit((0.5 * (h1 + h2)).detach())
    a = ref.pair_adjacency(N)
    for i in range(N):
        similarity = {j: float(mean[i] @ mean[j]) for j in range(N) if j != i}
        for j in sorted(similarity, key=similarity.get, reverse=True)[:KNN_K]:
            ref.add_cross_view(a, N, j, i)
    return info_nce_on_graph(z1, z2, a)


def neighbors(z1, z2, h1, h2, keep=lambda s, t: True):
    """Positives: the other view (weight 1) and the other view of every graph neighbor
    (weight ``neighbor_weight``); self-loops add nothing."""
    a = ref.pair_adjacency(N)
    for s, t in GRAPH.T.tolist():
        if s != t and keep(s, t):
            ref.add_cross_view(a, N, s, t, NEIGHBOR_WEIGHT)
    return info_nce_on_graph(z1, z2, a)


def homophily(z1, z2, h1, h2):
    """The neighbor positives whose ends share a cluster of the encoder outputs (here the
    two planted clusters, which a spherical k-means with 2 centroids finds)."""
    return neighbors(z1, z2, h1, h2, keep=lambda s, t: bool(CLUSTER[s] == CLUSTER[t]))


REFERENCES = {
    "grace": grace,
    "gca": grace,  # GRACE's loss; its adaptive views are tested in test_adaptive_views.py
    "attention": attention,
    "kernel": kernel,
    "random_walk": random_walk,
    "spectral": spectral,
    "knn": knn,
    "neighbors": neighbors,
    "homophily": homophily,
}


def node_objective(method, device="cpu"):
    """The registered method's loss on given projections and encoder outputs."""
    module = node_method(
        method, N, 4, TAU, GRAPH.to(device), neighbor_weight=NEIGHBOR_WEIGHT, clusters=2
    ).to(device)
    module.k = KNN_K  # the knn method's neighbors per node
    return module


def value_and_grad(fn, z1, z2, h1, h2):
    z1, z2 = z1.clone().requires_grad_(True), z2.clone().requires_grad_(True)
    value = fn(z1, z2, h1, h2)
    return (value, *torch.autograd.grad(value, (z1, z2)))


def assert_close(got, expected):
    for a, b in zip(got, expected, strict=True):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-12), (a, b)


def test_every_contrastive_method_has_a_reference():
    """Here, or in its own test file (a method added by docs/extending.md brings one): the
    others (BGRL, CCA-SSG, GraphACL, MVGRL, ...) have theirs in test_methods_field.py,
    test_methods_mvgrl.py and their like; the multi-stage method's is below."""
    contrastive = {n for n, c in REGISTRY.items() if issubclass(c, ContrastiveMethod)}
    own_file = {n for n in contrastive if (HERE / f"test_methods_{n}.py").is_file()}
    assert set(REFERENCES) | {"multistage"} | own_file == contrastive


def test_the_commands_names_are_the_registrys():
    """``cl2gnn --help`` lists torch-free names; they must be the registered classes'."""
    assert METHODS == tuple(sorted(REGISTRY))
    assert all(REGISTRY[name].name == name for name in METHODS)


@pytest.mark.parametrize("method", sorted(REFERENCES))
def test_objective_equals_reference(method):
    z1, z2, h1, h2 = views()
    got = value_and_grad(objective(node_objective(method)), z1, z2, h1, h2)
    assert_close(got, value_and_grad(REFERENCES[method], z1, z2, h1, h2))


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
@pytest.mark.parametrize("method", sorted(REFERENCES))
def test_objective_on_cuda_equals_reference(method):
    """The objective built from, and applied to, CUDA tensors (its buffers and the graphs it
    makes on every step on the inputs' device)."""
    z1, z2, h1, h2 = views()
    on_gpu = [t.cuda() for t in (z1, z2, h1, h2)]
    loss = objective(node_objective(method, "cuda"))
    got = [t.cpu() for t in value_and_grad(loss, *on_gpu)]
    expected = value_and_grad(REFERENCES[method], z1, z2, h1, h2)
    for a, b in zip(got, expected, strict=True):  # float64 sums in another order
        assert torch.allclose(a, b, rtol=1e-9, atol=1e-12), (a, b)


def test_references_tell_the_methods_apart():
    # on these inputs no two references agree, so a method computing another's loss (or
    # homophily keeping every neighbor) fails above
    z1, z2, h1, h2 = views()
    distinct = {fn for name, fn in REFERENCES.items() if name != "gca"}  # GRACE's loss
    values = [round(float(fn(z1, z2, h1, h2)), 6) for fn in distinct]
    assert len(set(values)) == len(values)


def test_multistage_objective_equals_reference():
    """InfoNCE plus, after the warm-up, ``1/τ`` times the multi-stage alignment
    ``-½ mean_i [x1_i·sg(z̄2_i) + x2_i·sg(z̄1_i)]``, ``z̄`` the mean of the other view and
    the node's stored mean view from each of the last ``stages - 1`` steps (each step is a
    stage; the bank stores in its dtype)."""
    method = node_objective("multistage")
    memory = method.multistage.memory
    assert memory.mode == "mean"
    gen = torch.Generator().manual_seed(3)
    stored = []  # the mean normalised view of every step so far
    for step in range(memory.warmup + 3):
        z1, z2 = (torch.randn(N, 4, generator=gen, dtype=torch.float64) for _ in range(2))

        def reference(z1, z2, h1, h2, step=step):
            x1, x2 = unit(z1), unit(z2)
            previous = stored[len(stored) - memory.stages + 1 :] if step >= memory.warmup else []
            target1 = torch.stack([x1.detach(), *previous]).mean(0)
            target2 = torch.stack([x2.detach(), *previous]).mean(0)
            pull = -0.5 * ((x1 * target2).sum(1) + (x2 * target1).sum(1)).mean()
            return grace(z1, z2, h1, h2) + pull / TAU

        expected = value_and_grad(reference, z1, z2, None, None)
        assert_close(value_and_grad(objective(method), z1, z2, None, None), expected)
        mean_view = 0.5 * (unit(z1) + unit(z2))
        stored.append(mean_view.to(memory.bank.dtype).to(torch.float64))
    assert memory.active  # the last steps used the memory
