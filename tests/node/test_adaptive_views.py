"""GCA's adaptive views: the drop and mask probabilities against a float64 brute-force
computation of the paper's formula (centralities by loops and NumPy, written here), the
empirical drop rates of the drawn views against those probabilities, and the checks."""

import math

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from cl2gnn.node import AdaptiveDropEdge, AdaptiveMaskFeatures, NodeConfig
from cl2gnn.node.adaptive_views import node_centrality
from cl2gnn.node.training.plan import check_run

from ..conftest import method_of, random_graph

CENTRALITIES = ("degree", "pagerank", "eigenvector")
P, P_MAX = 0.3, 0.7
# an undirected graph of 7 nodes with irregular degrees (both directions listed) and one
# edge listed one way only (6 -> 2), which the degree counts in both directions
UNDIRECTED = [(0, 1), (0, 2), (0, 3), (0, 4), (1, 2), (2, 3), (4, 5)]
EDGES = [*UNDIRECTED, *[(t, s) for s, t in UNDIRECTED], (6, 2)]
NUM_NODES = 7
# features with negative entries (|x| counts) and an all-zero column (no importance at all)
X = torch.tensor(
    [
        [1.0, 0.0, 0.5, 0.0, 0.0],
        [0.0, 2.0, 0.0, 1.0, 0.0],
        [1.0, 1.0, 0.0, 0.0, 0.0],
        [0.0, -1.0, 0.0, 3.0, 0.0],
        [0.5, 0.0, 0.0, 0.0, 0.0],
        [0.0, 0.0, 2.0, 0.0, 0.0],
        [0.0, 0.0, 0.0, 1.0, 0.0],
    ]
)


def brute_centrality(name):
    """Each node's centrality by its definition, in float64 Python and NumPy."""
    if name == "degree":  # distinct neighbors in the undirected graph
        return [len({u for e in EDGES for u in e if v in e and u != v}) for v in range(NUM_NODES)]
    if name == "pagerank":  # the authors' iteration: x <- 0.15 x + 0.85 Σ_{u->v} x_u / d_out(u)
        out_degree = [sum(1 for s, _ in EDGES if s == u) for u in range(NUM_NODES)]
        x = [1.0] * NUM_NODES
        for _ in range(200):
            spread = [
                sum(x[s] / out_degree[s] for s, t in EDGES if t == v) for v in range(NUM_NODES)
            ]
            x = [0.15 * x[v] + 0.85 * spread[v] for v in range(NUM_NODES)]
        return x
    adjacency = np.zeros((NUM_NODES, NUM_NODES))
    for s, t in EDGES:
        adjacency[s, t] = adjacency[t, s] = 1.0
    values, vectors = np.linalg.eigh(adjacency)
    leading = vectors[:, np.argmax(values)]
    return list(leading * np.sign(leading.sum()))


def brute_probabilities(s, p, p_max):
    """``min((s_max - s) / (s_max - mean s) · p, p_max)``; no importance (``-inf``): ``p_max``."""
    finite = [v for v in s if math.isfinite(v)]
    top, mean = max(finite), sum(finite) / len(finite)
    return [min((top - v) / (top - mean) * p, p_max) if math.isfinite(v) else p_max for v in s]


def log(v):
    return math.log(v) if v > 0 else -math.inf


def brute_edge_probabilities(name):
    phi = brute_centrality(name)
    if name == "eigenvector":
        phi = [max(v, 0.0) + 1e-8 for v in phi]
    return brute_probabilities([log(phi[t]) for _, t in EDGES], P, P_MAX)


def brute_feature_probabilities(name, binary=False):
    phi = [max(v, 0.0) for v in brute_centrality(name)]
    columns = [[float(v != 0) if binary else abs(v) for v in c] for c in X.double().T.tolist()]
    weights = [sum(column[u] * phi[u] for u in range(NUM_NODES)) for column in columns]
    return brute_probabilities([log(w) for w in weights], P, P_MAX)


def edge_index():
    return torch.tensor(EDGES).T


def authors_feature_probabilities(x, phi, p, p_max):
    """GCA's code (CRIPAC-DIG/GCA, ``pGRACE/functional.py``): ``feature_drop_weights`` on
    the presence of each entry, then ``drop_feature_weighted_2``'s probabilities, written out
    in float64 NumPy with the same IEEE arithmetic (``log 0 = -inf``, ``inf / inf = NaN``,
    ``NaN < p_max`` false)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        w = np.log((np.asarray(x) != 0).astype(np.float64).T @ np.asarray(phi, np.float64))
        s = (w.max() - w) / (w.max() - w.mean())
        s = s / s.mean() * p
        return np.where(s < p_max, s, p_max)


def zero_column_probabilities(x, centrality, zero_columns):
    view = AdaptiveMaskFeatures(P, P_MAX, centrality, binary=True, zero_columns=zero_columns)
    return view.probability(x, edge_index()).double().numpy()


@pytest.mark.parametrize("centrality", CENTRALITIES)
def test_edge_probabilities_are_the_formulas(centrality):
    got = AdaptiveDropEdge(P, P_MAX, centrality).probability(edge_index(), NUM_NODES)
    expected = torch.tensor(brute_edge_probabilities(centrality), dtype=torch.float32)
    assert torch.allclose(got, expected, atol=1e-6), (got, expected)
    assert got.max() == pytest.approx(P_MAX)  # the least central targets are cut off


@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("centrality", CENTRALITIES)
def test_feature_probabilities_are_the_formulas(centrality, binary):
    got = AdaptiveMaskFeatures(P, P_MAX, centrality, binary).probability(X, edge_index())
    expected = torch.tensor(brute_feature_probabilities(centrality, binary), dtype=torch.float32)
    assert torch.allclose(got, expected, atol=1e-6), (got, expected)


@pytest.mark.parametrize("centrality", ["degree", "pagerank"])
def test_every_column_rule_is_the_authors_code_on_a_zero_column(centrality):
    """X's last column is zero on every node: GCA's code masks every column at the cut-off
    (its NaN), which ``zero_columns="every_column"`` reproduces and the default does not."""
    assert not X[:, -1].any()
    theirs = authors_feature_probabilities(X, brute_centrality(centrality), P, P_MAX)
    every = zero_column_probabilities(X, centrality, "every_column")
    assert np.allclose(every, theirs, atol=1e-6), (every, theirs)
    itself = zero_column_probabilities(X, centrality, "itself")
    assert np.abs(itself - theirs).max() > 0.1  # the default spares the present columns


@pytest.mark.parametrize("zero_columns", ["itself", "every_column"])
@pytest.mark.parametrize("centrality", ["degree", "pagerank"])
def test_without_a_zero_column_both_rules_are_the_authors_code(centrality, zero_columns):
    """Every column non-zero somewhere: both rules give GCA's own probabilities, which
    differ between columns (the rule changes nothing but the zero-column case)."""
    x = X[:, :-1]
    theirs = authors_feature_probabilities(x, brute_centrality(centrality), P, P_MAX)
    got = zero_column_probabilities(x, centrality, zero_columns)
    assert np.allclose(got, theirs, atol=1e-6), (got, theirs)
    assert np.ptp(theirs) > 0.1


def test_an_unknown_zero_column_rule_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"^zero_columns must"):
        AdaptiveMaskFeatures(P, zero_columns="nan")


def test_binary_feature_weights_differ_from_the_magnitudes_on_this_x():
    """X's non-zero entries are not all 1: the two weightings are told apart here."""
    magnitude, presence = (brute_feature_probabilities("degree", b) for b in (False, True))
    assert max(abs(a - b) for a, b in zip(magnitude, presence, strict=True)) > 1e-3


def test_the_centralities_tell_the_probabilities_apart():
    # on this graph no two centralities give the same probabilities: a view reading the
    # wrong one fails above
    edges = {c: tuple(round(p, 6) for p in brute_edge_probabilities(c)) for c in CENTRALITIES}
    features = {c: tuple(round(p, 6) for p in brute_feature_probabilities(c)) for c in CENTRALITIES}
    assert len(set(edges.values())) == len(CENTRALITIES)
    assert len(set(features.values())) == len(CENTRALITIES)


def test_node_centrality_is_float64_per_node():
    for name in CENTRALITIES:
        phi = node_centrality(edge_index(), NUM_NODES, name)
        assert phi.dtype == torch.float64 and phi.shape == (NUM_NODES,)


def test_edges_are_dropped_at_their_probabilities():
    """On a random graph of 5,000 edges, 300 views: every edge's drop frequency within
    5 standard deviations of its probability, and the mean rate the mean probability."""
    gen = torch.Generator().manual_seed(0)
    edges, _ = random_graph(500, 5000, gen, weighted=False)
    view = AdaptiveDropEdge(0.4, 0.7, "degree")
    probability = view.probability(edges, 500).double()
    ids = torch.arange(edges.size(1))
    dropped, draws = torch.zeros(edges.size(1), dtype=torch.float64), 300
    torch.manual_seed(1)
    for _ in range(draws):
        out = view(Data(edge_index=edges, edge_weight=ids.clone(), num_nodes=500))
        dropped += 1
        dropped[out.edge_weight] -= 1
    rate = dropped / draws
    sigma = (probability * (1 - probability) / draws).sqrt()
    assert ((rate - probability).abs() <= 5 * sigma + 1 / draws).all()
    assert abs(float(rate.mean() - probability.mean())) < 0.005
    assert probability.std() > 0.1  # the probabilities do differ across edges


def test_feature_columns_are_masked_at_their_probabilities():
    gen = torch.Generator().manual_seed(2)
    edges, _ = random_graph(300, 3000, gen, weighted=False)
    x = torch.rand(300, 200, generator=gen) * (torch.rand(300, 200, generator=gen) < 0.1) + 1e-3
    view = AdaptiveMaskFeatures(0.3, 0.7, "pagerank")
    probability = view.probability(x, edges).double()
    masked, draws = torch.zeros(200, dtype=torch.float64), 400
    torch.manual_seed(3)
    for _ in range(draws):
        out = view(Data(x=x, edge_index=edges))
        masked += (out.x == 0).all(0).double()
    rate = masked / draws
    sigma = (probability * (1 - probability) / draws).sqrt()
    assert ((rate - probability).abs() <= 5 * sigma + 1 / draws).all()
    assert probability.std() > 0.05


def test_probabilities_follow_the_graph_they_are_given():
    """The probabilities are cached per graph: another graph gets its own."""
    view = AdaptiveDropEdge(P, P_MAX)
    first = view.probability(edge_index(), NUM_NODES)
    other = torch.tensor([[0, 1, 2], [1, 2, 0]])
    assert view.probability(other, 3).shape == (3,)
    assert torch.equal(view.probability(edge_index(), NUM_NODES), first)


@pytest.mark.parametrize("view", [AdaptiveDropEdge, AdaptiveMaskFeatures])
@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"p": 1.0}, "p"),
        ({"p": -0.1}, "p"),
        ({"p": True}, "p"),
        ({"p": 0.3, "p_max": 1.0}, "p_max"),
        ({"p": 0.5, "p_max": 0.4}, "p_max"),
        ({"p": 0.3, "centrality": "closeness"}, "centrality"),
    ],
)
def test_bad_arguments_are_refused_naming_them(view, kwargs, name):
    with pytest.raises(ValueError, match=f"^{name} must"):
        view(**kwargs)


def test_gca_trains_on_the_adaptive_views_of_its_configuration():
    config = NodeConfig(
        drop_edge=(0.2, 0.4), drop_feature=(0.3, 0.1), options={"centrality": "eigenvector"}
    )
    method = method_of("gca", config, num_nodes=NUM_NODES, graph=edge_index())
    views = method.default_views(config)
    steps = [view.transforms for view in views]
    assert [(e.p, f.p) for f, e in steps] == [(0.2, 0.3), (0.4, 0.1)]
    assert all(step.centrality == "eigenvector" and step.p_max == 0.7 for s in steps for step in s)
    assert isinstance(steps[0][0], AdaptiveMaskFeatures)
    assert isinstance(steps[0][1], AdaptiveDropEdge)
    # the feature importances are the whole graph's, not those of a view's dropped edges
    mask = steps[0][0]
    views[0](Data(x=X, edge_index=edge_index()))
    # GCA's default: a column weighed by where it is non-zero (its code's, but on WikiCS)
    expected = brute_feature_probabilities("eigenvector", binary=True)
    assert torch.allclose(mask._cache[1], torch.tensor(expected, dtype=torch.float32), atol=1e-6)
    # a zero column masks itself alone by default; GCA's code's rule where configured
    assert all(f.zero_columns == "itself" for f, _ in steps)
    authors = config.with_overrides(zero_columns="every_column")
    authors_views = method_of("gca", authors, num_nodes=NUM_NODES).default_views(authors)
    assert all(v.transforms[0].zero_columns == "every_column" for v in authors_views)
    with pytest.raises(ValueError, match="mini-batch"):
        check_run(Data(x=X, edge_index=edge_index()), "gca", config.with_overrides(batch_size=8))
