"""Graph Barlow Twins and Deep Graph Infomax: each loss (DGI's the local-global loss against
the nodes' own summary), by value and gradient, against a float64 loop over its formula
written here without cl2gnn's code; and what each method
feeds its loss (both views; a view and its row-shuffled corruption)."""

import math

import pytest
import torch
from torch_geometric.data import Data

from cl2gnn.losses import (
    BarlowTwinsLoss,
    LocalGlobalLoss,
    barlow_twins_loss,
    local_global_loss,
)
from cl2gnn.node import EncoderInput, NodeConfig
from cl2gnn.node.encoders.features import ColumnMasked, SparseFeatures, shuffle_rows
from cl2gnn.node.encoders.graph_encoder import GraphEncoder
from cl2gnn.node.training.plan import check_run

from ..conftest import method_of
from ._method_views import encoder_and_batch, randn

f64 = torch.float64


def value_and_grads(fn, *inputs):
    inputs = [x.clone().requires_grad_(True) for x in inputs]
    value = fn(*inputs)
    return [value, *torch.autograd.grad(value, inputs)]


def assert_close(got, expected):
    for a, b in zip(got, expected, strict=True):
        assert torch.allclose(a, b, rtol=1e-10, atol=1e-12), (a, b)


def barlow_twins_reference(h1, h2, lam=None):
    """Columns standardised by the unbiased deviation plus 1e-15 (the authors'),
    ``C_ab = Σ_i z1_ia z2_ib / N``, ``Σ_a (1 - C_aa)² + λ Σ_{a≠b} C_ab²``, ``λ = 1/d``."""
    n, d = h1.shape
    lam = 1.0 / d if lam is None else lam

    def normalised(h):
        columns = []
        for c in range(d):
            mean = sum(h[i, c] for i in range(n)) / n
            std = torch.sqrt(sum((h[i, c] - mean) ** 2 for i in range(n)) / (n - 1))
            columns.append([(h[i, c] - mean) / (std + 1e-15) for i in range(n)])
        return columns

    z1, z2 = normalised(h1), normalised(h2)
    loss = 0.0
    for a in range(d):
        for b in range(d):
            c = sum(z1[a][i] * z2[b][i] for i in range(n)) / n
            loss = loss + ((1.0 - c) ** 2 if a == b else lam * c**2)
    return loss


def dgi_reference(h, corrupted, weight, bias):
    """``s = σ(mean_i h_i)``, ``D(x, s) = Σ_ab x_a W_ab s_b + b``, binary cross-entropy
    with logits over the ``2N`` scores: label 1 for the graph's rows, 0 for the
    corruption's."""
    n, d = h.shape
    s = [1.0 / (1.0 + torch.exp(-sum(h[i, c] for i in range(n)) / n)) for c in range(d)]

    def score(x):
        return sum(x[a] * weight[a, b] * s[b] for a in range(d) for b in range(d)) + bias

    total = 0.0
    for i in range(n):
        total = total - torch.log(torch.sigmoid(score(h[i])))  # label 1
        total = total - torch.log(1.0 - torch.sigmoid(score(corrupted[i])))  # label 0
    return total / (2 * n)


@pytest.mark.parametrize("lam", [None, 0.0, 0.5])
def test_barlow_twins_loss_equals_reference(lam):
    h1, h2 = randn(7, 3, seed=1), randn(7, 3, seed=2)
    got = value_and_grads(lambda a, b: barlow_twins_loss(a, b, lam), h1, h2)
    assert_close(got, value_and_grads(lambda a, b: barlow_twins_reference(a, b, lam), h1, h2))


def deep_graph_infomax(h, corrupted, weight, bias):
    """DGI's loss through the local-global loss: the nodes against their own summary."""
    return local_global_loss(h, corrupted, torch.sigmoid(h.mean(0)), weight, bias)


def test_deep_graph_infomax_equals_reference():
    # the gradient reaches h through the summary too
    h, corrupted = randn(6, 3, seed=3), randn(6, 3, seed=4)
    weight, bias = randn(3, 3, seed=5), randn((), seed=6)
    got = value_and_grads(deep_graph_infomax, h, corrupted, weight, bias)
    assert_close(got, value_and_grads(dgi_reference, h, corrupted, weight, bias))


def test_references_tell_the_terms_apart():
    # a loss that dropped a term, or took a view's own correlation, would fail above
    h1, h2 = randn(6, 3, seed=1), randn(6, 3, seed=2)
    assert barlow_twins_reference(h1, h2, 0.0) != barlow_twins_reference(h1, h2, 0.5)
    assert barlow_twins_reference(h1, h2) != barlow_twins_reference(h1, h1)
    h, corrupted, weight = randn(5, 3, seed=3), randn(5, 3, seed=4), randn(3, 3, seed=5)
    zero = torch.zeros((), dtype=f64)
    assert dgi_reference(h, corrupted, weight, zero) != dgi_reference(h, h, weight, zero)


def test_the_losses_are_modules_equal_to_their_functional_forms():
    h1, h2 = randn(5, 4, seed=1), randn(5, 4, seed=2)
    assert torch.equal(BarlowTwinsLoss(0.3)(h1, h2), barlow_twins_loss(h1, h2, 0.3))
    loss = BarlowTwinsLoss()
    loss.off_diagonal = -1.0  # an option set after construction is checked at the next call
    with pytest.raises(ValueError, match="off_diagonal"):
        loss(h1, h2)
    with pytest.raises(ValueError, match="at least 2"):
        barlow_twins_loss(h1[:1], h2[:1])
    module = LocalGlobalLoss(4).double()
    weight, bias = module.weight, module.bias
    with torch.no_grad():
        bias.fill_(0.25)
    summary = torch.sigmoid(h1.mean(0))
    expected = local_global_loss(h1, h2, summary, weight, bias)
    assert torch.equal(module(h1, h2, summary), expected)
    bound = math.sqrt(6 / (4 * 4 + 4))  # nn.Bilinear's Xavier bound, the authors' init
    assert weight.abs().max() <= bound
    with pytest.raises(ValueError, match="weight must have shape"):
        local_global_loss(h1, h2, summary, weight[:3], bias)
    with pytest.raises(ValueError, match="dim"):
        LocalGlobalLoss(0)


@pytest.mark.parametrize("form", ["dense", "column mask", "sparse"])
def test_shuffle_rows_permutes_every_form_of_the_features(form):
    x = (randn(7, 5, seed=9) > 0.8).double() * randn(7, 5, seed=10)
    mask = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0], dtype=f64)
    features = {
        "dense": x,
        "column mask": ColumnMasked(x, mask),
        "sparse": SparseFeatures.from_dense(x).with_column_mask(mask),
    }[form]
    torch.manual_seed(4)
    shuffled = shuffle_rows(features)
    torch.manual_seed(4)
    order = torch.randperm(7)
    assert not torch.equal(order, torch.arange(7))
    expected = x[order] if form == "dense" else x[order] * mask
    got = shuffled if form == "dense" else shuffled.to_dense()
    assert torch.equal(got, expected)


def test_gbt_feeds_both_views_embeddings_to_its_loss():
    config = NodeConfig(out_channels=3, hidden_channels=5, batch_norm=True, out_activation=False)
    encoder, batch = encoder_and_batch(config)
    method = method_of("gbt", config, encoder)
    loss = method(batch)
    h1, h2 = (view(encoder) for view in batch.views)
    assert torch.allclose(loss, barlow_twins_loss(h1, h2), atol=1e-6)
    assert not torch.allclose(loss, barlow_twins_loss(h1, h1), atol=1e-3)


def test_dgi_scores_the_first_view_against_its_row_shuffled_features():
    config = NodeConfig(out_channels=4, layers=1, activation="prelu")
    encoder, batch = encoder_and_batch(config)
    method = method_of("dgi", config, encoder)
    weight, bias = method.loss.weight, method.loss.bias
    with torch.no_grad():
        bias.fill_(0.1)
    torch.manual_seed(2)
    loss = method(batch)
    view = batch.views[0]
    torch.manual_seed(2)
    order = torch.randperm(6)
    corrupted = EncoderInput(view.x[order], view.graph, prepared=True)
    expected = deep_graph_infomax(view(encoder), corrupted(encoder), weight, bias)
    assert torch.allclose(loss, expected, atol=1e-6)
    # the second view is not DGI's: its loss on it differs
    other = deep_graph_infomax(batch.views[1](encoder), corrupted(encoder), weight, bias)
    assert not torch.allclose(loss, other, atol=1e-4)
    # the discriminator trains with the encoder
    trained = {n for n, _ in method.named_parameters()}
    assert {"loss.weight", "loss.bias"} <= trained


def test_dgi_is_refused_under_a_process_group_and_gbt_is_not():
    config = NodeConfig(out_channels=4)
    encoder = GraphEncoder(4, 4)
    data = Data(x=torch.randn(6, 4), edge_index=torch.tensor([[0, 1, 2], [1, 2, 3]]))
    with pytest.raises(ValueError, match="'dgi' does not span the ranks"):
        check_run(data, "dgi", config, distributed="gather")
    check_run(data, "gbt", config, distributed="ring")
    method = method_of("gbt", config, encoder, distributed="ring")
    assert method.loss.distributed == "ring"
