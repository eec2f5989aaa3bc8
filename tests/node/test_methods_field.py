"""The field's methods (BGRL, CCA-SSG, GraphACL): each loss, by value and gradient, against a
float64 loop over its formula written here without cl2gnn's code; and each method's
composition: what it feeds its loss, its target encoder's moving average, its sampling."""

import ast
import math
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from cl2gnn.losses import bootstrap_loss, cca_ssg_loss, graphacl_loss
from cl2gnn.node import (
    REGISTRY,
    NodeConfig,
    train_node_model,
)
from cl2gnn.node.encoders.graph_encoder import GraphEncoder
from cl2gnn.node.methods import ContrastiveMethod
from cl2gnn.node.methods.graphacl import sample_neighbors
from cl2gnn.node.methods.target import TargetEncoder

from ..conftest import method_of
from ._method_views import encoder_and_batch, randn, small_graph

# the methods outside GRACE's scheme that train in mini-batches (MVGRL takes none)
FIELD = tuple(
    sorted(n for n, c in REGISTRY.items() if not issubclass(c, ContrastiveMethod) and c.minibatch)
)


def dot(a, b):
    return sum(a[c] * b[c] for c in range(len(a)))


def cosine(a, b):
    return dot(a, b) / torch.sqrt(dot(a, a) * dot(b, b))


def bootstrap_reference(p1, p2, t1, t2):
    n = len(p1)
    return (
        2
        - sum(cosine(p1[i], t2[i]) for i in range(n)) / n
        - sum(cosine(p2[i], t1[i]) for i in range(n)) / n
    )


def cca_ssg_reference(h1, h2, lam):
    n, d = h1.shape

    def standardised(h):
        columns = []
        for c in range(d):
            mean = sum(h[i, c] for i in range(n)) / n
            std = torch.sqrt(sum((h[i, c] - mean) ** 2 for i in range(n)) / (n - 1))
            columns.append([(h[i, c] - mean) / std for i in range(n)])
        return columns  # [d][n]

    z1, z2 = standardised(h1), standardised(h2)
    trace = sum(sum(z1[c][i] * z2[c][i] for i in range(n)) / n for c in range(d))
    decor = 0.0
    for z in (z1, z2):
        for a in range(d):
            for b in range(d):
                gram = sum(z[a][i] * z[b][i] for i in range(n)) / n
                decor = decor + ((1.0 if a == b else 0.0) - gram) ** 2
    return -trace + lam * decor


def graphacl_reference(p, u, z, positives, tau, negatives=None):
    anchors = len(z)
    per_anchor = {}
    for k, i in positives.T.tolist():
        keys = range(anchors) if negatives is None else negatives[i].tolist()
        positive = dot(p[i], u[k]) / tau
        denominator = torch.exp(positive) + sum(torch.exp(dot(z[i], z[j]) / tau) for j in keys)
        per_anchor.setdefault(i, []).append(torch.log(denominator) - positive)
    return sum(sum(terms) / len(terms) for terms in per_anchor.values()) / len(per_anchor)


def value_and_grads(fn, *inputs):
    inputs = [x.clone().requires_grad_(True) for x in inputs]
    value = fn(*inputs)
    return [value, *torch.autograd.grad(value, inputs, materialize_grads=True)]


def assert_close(got, expected):
    for a, b in zip(got, expected, strict=True):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-12), (a, b)


def test_every_registered_method_has_a_test_of_its_own():
    """Adding a method is its file and its test: a registered name that no methods' test
    names (a string constant in tests/node/test_methods_*.py, where each method's float64
    reference lives) fails here."""
    named = set()
    for path in Path(__file__).parent.glob("test_methods_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                named.add(node.value)
    assert sorted(set(REGISTRY) - named) == []


def test_bootstrap_loss_equals_reference():
    inputs = [randn(5, 3, seed=s) for s in range(4)]
    got = value_and_grads(bootstrap_loss, *inputs)
    expected = value_and_grads(bootstrap_reference, *inputs)
    assert_close(got[:3], expected[:3])  # value, the predictions' gradients
    assert torch.count_nonzero(got[3]) == 0 and torch.count_nonzero(got[4]) == 0  # sg targets


@pytest.mark.parametrize("lam", [0.0, 1e-3, 0.5])
def test_cca_ssg_loss_equals_reference(lam):
    h1, h2 = randn(7, 3, seed=1), randn(7, 3, seed=2)
    got = value_and_grads(lambda a, b: cca_ssg_loss(a, b, lam), h1, h2)
    assert_close(got, value_and_grads(lambda a, b: cca_ssg_reference(a, b, lam), h1, h2))


@pytest.mark.parametrize("sampled", [False, True], ids=["dense", "sampled negatives"])
def test_graphacl_loss_equals_reference(sampled):
    anchors, rows, d, tau = 5, 7, 3, 0.6
    p, z = (F.normalize(randn(anchors, d, seed=s), dim=1) for s in (3, 4))
    u = F.normalize(randn(rows, d, seed=5), dim=1)
    # irregular: anchor 0 has three positives, anchor 3 one (itself), anchor 4 none
    positives = torch.tensor([[1, 5, 6, 0, 2, 3], [0, 0, 0, 1, 2, 3]])
    negatives = torch.tensor([[1, 2], [0, 0], [4, 2], [3, 1], [0, 4]]) if sampled else None
    got = value_and_grads(
        lambda a, b, c: graphacl_loss(a, b, c, positives, tau, negatives), p, u, z
    )
    expected = value_and_grads(
        lambda a, b, c: graphacl_reference(a, b, c, positives, tau, negatives), p, u, z
    )
    assert_close(got, expected)


def test_references_tell_the_losses_apart():
    # a loss that dropped a term would fail above: every term moves the value here
    h1, h2 = randn(6, 3, seed=1), randn(6, 3, seed=2)
    assert cca_ssg_reference(h1, h2, 0.0) != cca_ssg_reference(h1, h2, 0.1)
    p = F.normalize(randn(4, 3, seed=3), dim=1)
    pos = torch.tensor([[1, 2, 0], [0, 1, 2]])
    dense = graphacl_reference(p, p, p, pos, 0.5)
    assert dense != graphacl_reference(p, p, p, pos, 0.5, torch.tensor([[1], [2], [0], [0]]))


def test_bgrl_aligns_each_prediction_with_the_other_views_target():
    config = NodeConfig(
        out_channels=8, batch_norm=True, activation="prelu", options={"predictor_hidden": 16}
    )
    encoder, batch = encoder_and_batch(config)
    method = method_of("bgrl", config, encoder)
    loss = method(batch)
    h = [view(encoder) for view in batch.views]
    with torch.no_grad():
        t = [view(method.target.encoder) for view in batch.views]
    p = [method.predictor(v) for v in h]
    assert not torch.allclose(t[0], t[1], atol=1e-3)  # the pairing below is observable
    expected = bootstrap_reference(p[0], p[1], t[0], t[1])
    assert torch.allclose(loss, expected, atol=1e-6)
    same_view = bootstrap_reference(p[0], p[1], t[1], t[0])  # each with its own target
    assert not torch.allclose(loss, same_view, atol=1e-3)
    # the target is a constant: outside the optimiser, its outputs without a graph
    assert not any(p.requires_grad for p in method.target.parameters())
    assert not any(t.requires_grad for t in method.target(batch))
    # BGRL's target starts from other weights than the online encoder (the authors' code)
    online, target = encoder.convs[0].lin.weight, method.target.encoder.convs[0].lin.weight
    assert not torch.equal(target, online)


@pytest.mark.parametrize("cosine", [False, True])
def test_target_moves_by_the_moving_average(cosine):
    online = GraphEncoder(4, 3, batch_norm=True)
    target = TargetEncoder(online, decay=0.9, cosine=cosine)
    before = {k: v.clone() for k, v in target.encoder.state_dict().items()}
    with torch.no_grad():
        for parameter in online.parameters():
            parameter.add_(1.0)
    progress = 0.25
    target.update(online, progress)
    decay = 1 - 0.1 * (math.cos(math.pi * progress) + 1) / 2 if cosine else 0.9
    for key, value in target.encoder.state_dict().items():
        if value.is_floating_point():
            expected = decay * before[key] + (1 - decay) * online.state_dict()[key]
            assert torch.allclose(value, expected, atol=1e-6), key
    assert TargetEncoder(online, 0.99, cosine=True).current_decay(1.0) == 1.0


def test_cca_ssg_feeds_both_views_embeddings_to_its_loss():
    config = NodeConfig(out_channels=3, hidden_channels=5, options={"decorrelation": 0.2})
    encoder, batch = encoder_and_batch(config)
    method = method_of("cca_ssg", config, encoder)
    h = [view(encoder) for view in batch.views]
    assert torch.allclose(method(batch), cca_ssg_loss(h[0], h[1], 0.2))


@pytest.mark.parametrize("self_loops", [False, True])
def test_graphacl_dense_form_uses_every_neighbor_and_node(self_loops):
    config = NodeConfig(
        out_channels=4,
        self_loops=self_loops,
        options={"samples_per_node": None, "temperature": 0.7},
    )
    encoder, batch = encoder_and_batch(config)
    method = method_of("graphacl", config, encoder)
    with torch.no_grad():  # the target apart from the online encoder, as after training
        for parameter in method.target.encoder.parameters():
            parameter.add_(0.3 * torch.randn_like(parameter))
    loss = method(batch)
    h = batch.views[0](encoder)
    with torch.no_grad():
        u = batch.views[0](method.target.encoder)
    assert not torch.allclose(h, u, atol=1e-3)  # online and target outputs differ
    edges = small_graph()
    edges = edges[:, edges[0] != edges[1]]
    if self_loops:  # every node its own neighbor once
        edges = torch.cat([edges, torch.arange(6).expand(2, -1)], dim=1)
    else:  # the graph as it is: node 5's self-loop is its one neighbor
        edges = torch.cat([edges, torch.tensor([[5], [5]])], dim=1)
    expected = graphacl_reference(
        F.normalize(method.predictor(h), dim=1),
        F.normalize(u, dim=1),
        F.normalize(h, dim=1),
        edges,
        0.7,
    )
    assert torch.allclose(loss, expected, atol=1e-6)
    # and the gradients: the predictor reads the online encoder, the target none
    params = [p for p in encoder.parameters()] + list(method.predictor.parameters())
    got = torch.autograd.grad(loss, params)
    want = torch.autograd.grad(expected, params)
    for a, b in zip(got, want, strict=True):
        assert torch.allclose(a, b, atol=1e-6)


def test_sample_neighbors_draws_without_replacement_and_pads_short_nodes():
    # node 0: five neighbors; node 1: two; node 2: none
    edge_index = torch.tensor([[3, 4, 5, 6, 7, 8, 9], [0, 0, 0, 0, 0, 1, 1]])
    torch.manual_seed(0)
    for _ in range(20):
        source, target = sample_neighbors(edge_index, 10, 3)
        assert torch.bincount(target, minlength=3).tolist()[:3] == [3, 3, 0]
        zero = source[target == 0]
        assert len(set(zero.tolist())) == 3 and set(zero.tolist()) <= {3, 4, 5, 6, 7}
        assert set(source[target == 1].tolist()) == {8, 9}  # both, and one again
    counts = torch.zeros(10)
    for _ in range(400):
        source, target = sample_neighbors(edge_index, 10, 3)
        counts += torch.bincount(source[target == 0], minlength=10)
    assert torch.allclose(counts[3:8] / 400, torch.full((5,), 0.6), atol=0.08)  # uniform 3/5


@pytest.mark.parametrize("method", FIELD)
def test_field_method_trains_full_batch_and_in_mini_batches(method, digits):
    config = NodeConfig(
        out_channels=16, hidden_channels=32, epochs=3, options={"predictor_hidden": 16}
    )
    untrained = train_node_model(digits, method, config.with_overrides(epochs=0), progress=False)
    full = train_node_model(digits, method, config, progress=False)
    assert not torch.allclose(full.embeddings, untrained.embeddings)
    mini = train_node_model(digits, method, config.with_overrides(batch_size=600), progress=False)
    assert len(mini.losses) == 3 and all(math.isfinite(v) for v in mini.losses)
    assert not torch.allclose(mini.embeddings, untrained.embeddings)


def test_the_field_losses_are_modules_equal_to_their_functional_forms():
    from cl2gnn.losses import BootstrapLoss, CCASSGLoss, GraphACLLoss

    p1, p2, t1, t2 = (randn(5, 3, seed=s) for s in range(4))
    assert torch.equal(BootstrapLoss()(p1, p2, t1, t2), bootstrap_loss(p1, p2, t1, t2))
    loss = CCASSGLoss(decorrelation=0.3)
    assert torch.equal(loss(p1, p2), cca_ssg_loss(p1, p2, 0.3))
    loss.decorrelation = -1.0  # an option set after construction is checked at the next call
    with pytest.raises(ValueError, match="decorrelation"):
        loss(p1, p2)
    positives = torch.tensor([[1, 2, 0], [0, 1, 2]])
    p, u, z = (F.normalize(randn(3, 4, seed=s), dim=1) for s in (5, 6, 7))
    module = GraphACLLoss(temperature=0.4)
    assert torch.equal(module(p, u, z, positives), graphacl_loss(p, u, z, positives, 0.4))
    for bad in (0.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="temperature"):
            GraphACLLoss(temperature=bad)
    wide = F.normalize(randn(5, 4, seed=8), dim=1)  # 5 target rows, 3 anchors
    with pytest.raises(ValueError, match="not one of the 3 anchors"):
        module(p, wide, z, torch.tensor([[0], [4]]))
    with pytest.raises(ValueError, match="refers to node 5"):
        module(p, wide, z, torch.tensor([[5], [0]]))
    with pytest.raises(ValueError, match="same shape"):
        BootstrapLoss()(p1, p2[:4], t1, t2)
