"""PolyGCL: its loss, by value and gradient, against a float64 computation written here from
the paper's formulas (each filter by the eigendecomposition of L̃, the encoder's linear map
by hand, the 4N binary cross-entropy by a loop); its composition (α on the high view, the
summary, the corruption, the per-node encoder); its own learning rates; its refusals."""

import math

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from cl2gnn.node import EncoderInput, GraphEncoder, NodeConfig, PolyGCL, train_node_model
from cl2gnn.node.methods import ViewBatch
from cl2gnn.node.methods.polygcl import PolyGCLEncoder
from cl2gnn.node.training.fullbatch import FullBatchTrainer

from ..conftest import method_of

f64 = torch.float64
N, F, D, K = 7, 4, 5, 4


def graph():
    pairs = torch.tensor([[0, 1, 2, 3, 4, 0, 5], [1, 2, 3, 4, 5, 3, 6]])
    return torch.cat([pairs, pairs.flip(0)], dim=1)


def config(**options):
    return NodeConfig(
        layers=1,
        out_channels=D,
        epochs=1,
        options={"filter_degree": K, "input_dropout": 0.0, "filter_dropout": 0.0, **options},
    )


def method_and_encoder(seed=0, **options):
    torch.manual_seed(seed)
    encoder = GraphEncoder(F, D, layers=1).double()
    method = method_of(
        "polygcl", config(**options), encoder, num_nodes=N, graph=graph(), num_features=F
    ).double()
    with torch.no_grad():  # filters away from their initial (mirror-image) values
        method.filters.low.theta.copy_(torch.rand(K, dtype=f64))
        method.filters.high.theta.copy_(torch.rand(K, dtype=f64))
        method.filters.alpha.fill_(0.3)
        method.filters.beta.fill_(0.8)
    return method, encoder


def dense_filter(theta, pass_band, edge_index, x):
    """U h(Λ) Uᵀ x, h the Chebyshev interpolant through γ at the nodes, on L̃ = L − I."""
    n = x.size(0)
    adj = torch.zeros(n, n, dtype=f64)
    adj[edge_index[1], edge_index[0]] = 1.0
    dinv = adj.sum(1).rsqrt()
    lam, U = torch.linalg.eigh(-(dinv[:, None] * adj * dinv[None, :]))
    k = len(theta)
    nodes = np.cos((k - np.arange(k + 1) + 0.5) * np.pi / (k + 1))
    steps = np.r_[0.0, np.cumsum(np.maximum(theta.detach().numpy(), 0))]
    gamma = 2 - steps if pass_band == "low" else steps
    coef = np.polynomial.chebyshev.chebfit(nodes, gamma, k)
    h = torch.from_numpy(np.polynomial.chebyshev.chebval(lam.numpy(), coef))
    return U @ (h[:, None] * (U.T @ x))


def reference_loss(x, order, theta_low, theta_high, weight, bias, alpha, beta, disc_w, disc_b):
    """The paper's objective, written out: f(z) = ReLU(z Wᵀ + b) per node, Z_L, Z_H and
    their corruptions (rows of x permuted by ``order``), c = ReLU(mean(αZ_H + βZ_L)),
    −1/(4N) Σ_i [log σ(D(Z_L,i)) + log σ(D(Z_H,i)) + log σ(−D(Z̃_L,i)) + log σ(−D(Z̃_H,i))].

    The filters' θ enter through ``dense_filter`` (numpy): the reference differentiates
    with respect to x's linear map, α, β and the discriminator only."""
    ei = graph()

    def f(z):
        return torch.relu(z @ weight.T + bias)

    def views(features):
        low = dense_filter(theta_low, "low", ei, features)
        high = dense_filter(theta_high, "high", ei, features)
        return f(low), f(high)

    z_low, z_high = views(x)
    c_low, c_high = views(x[order])
    summary = torch.relu((alpha * z_high + beta * z_low).mean(0))
    n, d = z_low.shape

    def score(h):
        return sum(h[a] * disc_w[a, b] * summary[b] for a in range(d) for b in range(d)) + disc_b

    total = 0.0
    for i in range(n):
        total = total - torch.log(torch.sigmoid(score(z_low[i])))
        total = total - torch.log(torch.sigmoid(score(z_high[i])))
        total = total - torch.log(1 - torch.sigmoid(score(c_low[i])))
        total = total - torch.log(1 - torch.sigmoid(score(c_high[i])))
    return total / (4 * n)


def batch(x):
    return ViewBatch([EncoderInput(x, graph())] * 2, graph(), N)


def test_loss_and_gradients_equal_the_float64_reference():
    method, encoder = method_and_encoder()
    x = torch.randn(N, F, generator=torch.Generator().manual_seed(1), dtype=f64)
    torch.manual_seed(5)
    loss = method(batch(x))
    torch.manual_seed(5)
    order = torch.randperm(N)  # the draw the method made
    lin, disc, filters = encoder.convs[0], method.loss, method.filters
    params = [lin.lin.weight, lin.bias, filters.alpha, filters.beta, disc.weight, disc.bias]
    grads = torch.autograd.grad(loss, params)
    inputs = [p.detach().clone().requires_grad_(True) for p in params]
    expected = reference_loss(
        x, order, filters.low.theta, filters.high.theta, *inputs[:2], *inputs[2:4], *inputs[4:]
    )
    expected_grads = torch.autograd.grad(expected, inputs)
    assert torch.allclose(loss, expected, rtol=1e-10, atol=1e-12)
    for got, want in zip(grads, expected_grads, strict=True):
        assert torch.allclose(got, want, rtol=1e-8, atol=1e-12)


def test_the_reference_tells_alpha_and_beta_and_the_corruption_apart():
    """The checks above can fail: α and β swapped, or an unpermuted corruption, change the
    reference's value."""
    method, encoder = method_and_encoder()
    x = torch.randn(N, F, generator=torch.Generator().manual_seed(1), dtype=f64)
    lin, disc, filters = encoder.convs[0], method.loss, method.filters
    common = (filters.low.theta, filters.high.theta, lin.lin.weight, lin.bias)
    order = torch.randperm(N, generator=torch.Generator().manual_seed(2))
    value = reference_loss(x, order, *common, 0.3, 0.8, disc.weight, disc.bias)
    swapped = reference_loss(x, order, *common, 0.8, 0.3, disc.weight, disc.bias)
    unpermuted = reference_loss(x, torch.arange(N), *common, 0.3, 0.8, disc.weight, disc.bias)
    assert not torch.isclose(value, swapped) and not torch.isclose(value, unpermuted)


def test_the_embedding_is_alpha_high_plus_beta_low_of_the_encoder_on_each_node():
    """result.encoder's output: the built-in one-layer encoder reads the filtered features
    alone (no propagation over the graph on top of the filters)."""
    method, encoder = method_and_encoder()
    model = method.embedding_model().eval()
    assert isinstance(model, PolyGCLEncoder)
    x = torch.randn(N, F, dtype=f64)
    lin = encoder.convs[0]

    def f(z):
        return torch.relu(lin.lin(z) + lin.bias)

    low = f(dense_filter(method.filters.low.theta, "low", graph(), x))
    high = f(dense_filter(method.filters.high.theta, "high", graph(), x))
    with torch.no_grad():
        assert torch.allclose(model(x, graph()), 0.3 * high + 0.8 * low)


def test_the_discriminator_and_the_encoder_start_as_nn_bilinear_and_nn_linear():
    """Their code's default inits, U(±1/√fan-in) with the biases too (the bias the tell:
    DGI's discriminator and PyG's GCN start theirs at zero)."""
    method, encoder = method_and_encoder()
    bound = 1 / math.sqrt(D)
    for p in (method.loss.weight, method.loss.bias):
        assert p.abs().max() <= bound
    assert method.loss.bias != 0
    conv = encoder.convs[0]
    # within 1/√F = 0.5, where Glorot's U(±√(6/(F+D))) = U(±0.82) would exceed it
    assert conv.lin.weight.abs().max() <= 1 / math.sqrt(F) and (conv.bias != 0).all()


def test_filters_alpha_and_beta_train_at_their_own_learning_rate():
    gen = torch.Generator().manual_seed(0)
    data = Data(x=torch.rand(N, F, generator=gen), edge_index=graph())
    cfg = config(filter_lr=0.05).with_overrides(learning_rate=0.002)
    trainer = FullBatchTrainer(data, "polygcl", cfg)
    rates = {id(p): g["lr"] for g in trainer.optimizer.param_groups for p in g["params"]}
    filters = trainer.method.filters
    own = [filters.low.theta, filters.high.theta, filters.alpha, filters.beta]
    assert all(rates[id(p)] == 0.05 for p in own)
    others = [p for p in trainer.model.parameters() if all(p is not q for q in own)]
    assert others and all(rates[id(p)] == 0.002 for p in others)
    # a schedule scales both alike: the first warm-up step at 1/10 of each
    warm = FullBatchTrainer(data, "polygcl", cfg.with_overrides(epochs=20, lr_warmup=10))
    warm.epoch()
    lrs = sorted(g["lr"] for g in warm.optimizer.param_groups)
    assert lrs == pytest.approx([0.0002, 0.005])


def test_the_filters_batch_norm_trains_at_the_configurations_learning_rate():
    """With ``filter_batch_norm`` the filters hold a ``BatchNorm1d``: its weight and bias
    are the encoder's kind, at ``learning_rate``, while θ, α and β stay at ``filter_lr``."""
    data = Data(x=torch.rand(N, F, generator=torch.Generator().manual_seed(0)), edge_index=graph())
    cfg = config(filter_lr=0.05, filter_batch_norm=True).with_overrides(learning_rate=0.002)
    trainer = FullBatchTrainer(data, "polygcl", cfg)
    rates = {id(p): g["lr"] for g in trainer.optimizer.param_groups for p in g["params"]}
    filters = trainer.method.filters
    norm = list(filters.norm.parameters())
    assert isinstance(filters.norm, torch.nn.BatchNorm1d) and len(norm) == 2
    assert [rates[id(p)] for p in norm] == [0.002, 0.002]
    own = [filters.low.theta, filters.high.theta, filters.alpha, filters.beta]
    assert [rates[id(p)] for p in own] == [0.05] * 4


def test_training_moves_the_filters_and_embeds_every_node():
    gen = torch.Generator().manual_seed(0)
    data = Data(x=torch.rand(N, F, generator=gen), edge_index=graph())
    result = train_node_model(data, "polygcl", config().with_overrides(epochs=3), progress=False)
    theta = result.method.filters.low.theta.detach()
    assert not torch.allclose(theta, torch.full((K,), 2.0 / K))
    assert result.embeddings.shape == (N, D)


def test_refusals_name_what_to_change():
    data = Data(x=torch.rand(N, F), edge_index=graph())
    with pytest.raises(ValueError, match="self_loops"):
        train_node_model(data, "polygcl", config().with_overrides(self_loops=False), progress=False)
    users = torch.nn.Sequential()  # any module: refused before it is called
    with pytest.raises(ValueError, match="filter_batch_norm"):
        PolyGCL(users, filter_batch_norm=True, dim=D)
    with pytest.raises(ValueError, match="filter_lr"):
        PolyGCL(users, filter_lr=0.0, dim=D)
