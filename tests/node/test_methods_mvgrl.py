"""MVGRL: the local–global loss, by value and gradient, against a float64 loop over its
formula written here; the method's composition (which view's nodes meet which summary,
the corruption, the two encoders, the embedding); the diffusion view against a dense
float64 personalised PageRank."""

import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import coalesce, remove_self_loops

from cl2gnn.losses import LocalGlobalLoss, local_global_loss
from cl2gnn.node import Diffusion, GraphEncoder, NodeConfig, train_node_model
from cl2gnn.node.encoders.features import permute_rows

from ..conftest import random_graph

f64 = torch.float64


def randn(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=f64)


def log_sigmoid(v):
    return -torch.log1p(torch.exp(-v))


def local_global_reference(positive, negative, summary, weight, bias):
    """``(1/2N) Σ_i [-log σ(D(h_i, s)) - log(1 - σ(D(h̃_i, s)))]``, ``D(h, s) = hᵀ W s + b``."""
    n, d = positive.shape

    def score(h):
        return sum(h[a] * weight[a, b] * summary[b] for a in range(d) for b in range(d)) + bias

    total = sum(-log_sigmoid(score(positive[i])) for i in range(n))
    total = total + sum(-log_sigmoid(-score(negative[i])) for i in range(n))  # 1 - σ(v) = σ(-v)
    return total / (2 * n)


def value_and_grads(fn, *inputs):
    inputs = [x.clone().requires_grad_(True) for x in inputs]
    value = fn(*inputs)
    return (value, *torch.autograd.grad(value, inputs))


def assert_close(got, expected):
    for a, b in zip(got, expected, strict=True):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-12), (a, b)


def loss_inputs():
    positive, negative = randn(5, 3, seed=0), randn(5, 3, seed=1)
    return (
        positive,
        negative,
        torch.sigmoid(randn(3, seed=2)),
        randn(3, 3, seed=3),
        randn(1, seed=4),
    )


def test_local_global_loss_equals_reference():
    inputs = loss_inputs()
    assert_close(
        value_and_grads(local_global_loss, *inputs),
        value_and_grads(local_global_reference, *inputs),
    )


def test_the_module_is_the_functional_form_with_its_discriminator():
    positive, negative, summary, _, _ = loss_inputs()
    module = LocalGlobalLoss(3).double()
    weight, bias = module.weight, module.bias
    assert torch.equal(
        module(positive, negative, summary),
        local_global_loss(positive, negative, summary, weight, bias),
    )
    assert torch.equal(bias, torch.zeros((), dtype=f64))
    assert torch.allclose(
        module(positive, negative, summary),
        local_global_reference(positive, negative, summary, weight, bias),
        rtol=1e-10,
    )
    with pytest.raises(ValueError, match="summary must have shape"):
        module(positive, negative, summary[:2])
    with pytest.raises(ValueError, match="same shape"):
        module(positive, negative[:4], summary)


def tiny_graph():
    gen = torch.Generator().manual_seed(5)
    edges, _ = random_graph(12, 40, gen, weighted=False)
    edges = coalesce(remove_self_loops(torch.cat([edges, edges.flip(0)], 1))[0])  # simple
    return Data(x=torch.rand(12, 6, generator=gen, dtype=f64), edge_index=edges, num_nodes=12)


CONFIG = NodeConfig(
    out_channels=4, layers=1, activation="prelu", epochs=2, options={"diffusion_k": 5}
)


@pytest.fixture
def float64():
    """float64 throughout (the trainer builds its modules and graphs in the default dtype)."""
    torch.set_default_dtype(f64)
    yield
    torch.set_default_dtype(torch.float32)


def trained_state():
    """A FullBatchTrainer for MVGRL on a small graph."""
    from cl2gnn.node import FullBatchTrainer

    return FullBatchTrainer(tiny_graph(), "mvgrl", CONFIG)


def test_mvgrl_contrasts_each_views_nodes_with_the_other_views_summary(float64):
    """The method's loss is ``½ [ℓ(h_δ, h̃_δ, σ(mean h_α)) + ℓ(h_α, h̃_α, σ(mean h_δ))]``:
    the graph encoder on the graph and the diffusion encoder on the diffusion, corrupted by
    one row shuffle of the features; value and gradient (discriminator and both encoders)."""
    trainer = trained_state()
    method, encoder = trainer.method, trainer.encoder
    data = tiny_graph()
    graph_view, diffusion_view = (
        trainer.view_input(v, trainer.x_input, trainer.prepared, trainer.edge_index, trainer.graphs)
        for v in trainer.method.views
    )
    from cl2gnn.node import ViewBatch

    batch = ViewBatch([graph_view, diffusion_view], data.edge_index, 12)
    params = [*encoder.parameters(), *method.parameters()]
    torch.manual_seed(9)
    got = method(batch)
    got_grads = torch.autograd.grad(got, params)

    torch.manual_seed(9)
    order = torch.randperm(12)
    h_a, h_d = graph_view(encoder), diffusion_view(method.diffusion_encoder)
    c_a = with_rows(graph_view, order)(encoder)
    c_d = with_rows(diffusion_view, order)(method.diffusion_encoder)
    weight, bias = method.loss.weight, method.loss.bias
    expected = 0.5 * (
        local_global_reference(h_d, c_d, torch.sigmoid(h_a.mean(0)), weight, bias)
        + local_global_reference(h_a, c_a, torch.sigmoid(h_d.mean(0)), weight, bias)
    )
    expected_grads = torch.autograd.grad(expected, params, allow_unused=True)
    assert torch.allclose(got, expected, rtol=1e-10)
    for a, b in zip(got_grads, expected_grads, strict=True):
        assert torch.allclose(a, torch.zeros_like(a) if b is None else b, rtol=1e-9, atol=1e-12)


def dense(x):
    return x.to_dense() if hasattr(x, "to_dense") else x


def with_rows(view, order):
    """The view on its graph with its (dense) feature rows in the order ``order``."""
    return replace(view, x=dense(view.x)[order])


def test_mvgrl_corrupts_the_features_keeping_their_form(float64):
    trainer = trained_state()
    view = trainer.view_input(
        trainer.method.views[0],
        trainer.x_input,
        trainer.prepared,
        trainer.edge_index,
        trainer.graphs,
    )
    order = torch.randperm(12)
    corrupt = permute_rows(view.x, order)
    assert type(corrupt) is type(view.x)  # sparse features stay sparse
    assert torch.equal(dense(corrupt), dense(view.x)[order])


def test_mvgrl_has_two_encoders_and_embeds_with_their_sum(float64):
    trainer = trained_state()
    encoder, second = trainer.encoder, trainer.method.diffusion_encoder
    assert type(second) is type(encoder)
    assert not torch.equal(second.convs[0].lin.weight, encoder.convs[0].lin.weight)
    data = tiny_graph()
    edges, weights = Diffusion(0.2, k=5).diffusion(data.edge_index, 12)
    expected = encoder(data.x, data.edge_index) + second(
        data.x, edges, edge_weight=weights.double()
    )
    assert torch.allclose(trainer.embed().double(), expected.detach(), rtol=1e-10)


def dense_ppr(edges, n, alpha):
    """``α (I - (1-α) D^-½ (A+I) D^-½)^-1`` in float64 NumPy."""
    a = np.eye(n)
    for s, t in edges.T.tolist():
        a[s, t] = 1.0
    d = np.diag(a.sum(0) ** -0.5)  # in-degrees, GDC's symmetric normalisation
    return alpha * np.linalg.inv(np.eye(n) - (1 - alpha) * d @ a @ d)


@pytest.mark.parametrize("k, eps", [(4, None), (None, 0.05)])
def test_diffusion_is_the_sparsified_personalised_pagerank(k, eps):
    data = tiny_graph()
    out = Diffusion(0.2, k=k, eps=eps)(data)
    s = dense_ppr(data.edge_index, 12, 0.2)
    kept = np.zeros((12, 12), dtype=bool)
    if k is not None:  # each node's k largest in-weights (column j: the edges into j)
        for j in range(12):
            kept[np.argsort(-s[:, j])[:k], j] = True
    else:
        kept = s >= eps
    got = np.zeros((12, 12))
    got[out.edge_index[0].numpy(), out.edge_index[1].numpy()] = out.edge_weight.numpy()
    assert np.allclose(got, np.where(kept, s, 0.0), atol=1e-6)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"alpha": 1.5}, "alpha"),
        ({"k": 0}, "k"),
        ({"k": None, "eps": -1.0}, "eps"),
        ({"eps": 0.1}, "one of k and eps"),
    ],
)
def test_diffusion_refuses_bad_arguments(kwargs, name):
    with pytest.raises(ValueError, match=name):
        Diffusion(**kwargs)


def test_mvgrl_trains_full_batch_and_refuses_mini_batches(digits):
    config = NodeConfig(
        out_channels=16, layers=1, activation="prelu", epochs=3, options={"diffusion_k": 16}
    )
    untrained = train_node_model(digits, "mvgrl", config.with_overrides(epochs=0), progress=False)
    result = train_node_model(digits, "mvgrl", config, progress=False)
    assert all(math.isfinite(v) for v in result.losses)
    assert not torch.allclose(result.embeddings, untrained.embeddings)
    with pytest.raises(ValueError, match="mini-batch"):
        train_node_model(digits, "mvgrl", config.with_overrides(batch_size=100), progress=False)


def test_mvgrl_refuses_an_encoder_without_edge_weights(digits):
    class Plain(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(digits.num_features, 8)

        def forward(self, x, edge_index):
            return self.lin(x)

    own = NodeConfig(epochs=2, options={"diffusion_k": 5})  # the built-in encoder's fields left out
    with pytest.raises(ValueError, match="edge_weight"):
        train_node_model(digits, "mvgrl", own, encoder=Plain(), progress=False)


def test_builtin_encoder_of_mvgrls_configuration_is_one_gcn_layer():
    encoder = GraphEncoder.from_config(10, CONFIG)
    assert encoder.num_layers == 1 and encoder.out_channels == 4
