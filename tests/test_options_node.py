"""The node command's options take effect, each in the way it says, and change nothing at
their neutral value: ``--mask-nodes`` zeroes that fraction of each view's feature rows,
``--swa-start`` embeds with the mean of the encoder's weights from that epoch on,
``--neighbor-weight`` weights the graph-neighbour positives, ``--clusters`` sets the
k-means that selects them (``homophily``)."""

import json
from dataclasses import replace

import pytest
import torch
from torch.optim.optimizer import register_optimizer_step_post_hook

from cl2gnn.apps.cli import main
from cl2gnn.node import default_config, train_node_model
from cl2gnn.node import fit as node_fit
from cl2gnn.node import fullbatch as node_fullbatch
from cl2gnn.node import trainer as node_trainer
from cl2gnn.node.features import prepare_features
from cl2gnn.node.methods import contrastive as node_methods

from . import reference as ref
from .conftest import node_method

CONFIG = default_config("digits-knn").with_overrides(epochs=2)


def train(data, config):
    return train_node_model(data, "grace", config, seed=0, progress=False)


def spy_views(monkeypatch):
    """Record the feature matrix of every view the trainer draws (view 0, 1, 0, 1, ...)."""
    views = []

    def augment(*args, **kwargs):
        x, edge_index = real(*args, **kwargs)
        views.append(x.to_dense() if hasattr(x, "to_dense") else x)
        return x, edge_index

    real = node_fullbatch.augment
    monkeypatch.setattr(node_fullbatch, "augment", augment)
    return views


def zero_row_fraction(x):
    return float((x == 0).all(dim=1).double().mean())


def test_mask_nodes_zeroes_that_fraction_of_each_views_rows(digits, monkeypatch):
    views = spy_views(monkeypatch)
    masked = train(digits, CONFIG.with_overrides(mask_nodes=(0.5, 0.2)))
    assert len(views) == 2 * CONFIG.epochs
    for view, p in ((0, 0.5), (1, 0.2)):  # 1,797 rows: a binomial fraction's sd is 1.2 %
        assert all(abs(zero_row_fraction(x) - p) < 0.05 for x in views[view::2])
    views.clear()
    neutral = train(digits, CONFIG.with_overrides(mask_nodes=(0.0, 0.0)))  # the default
    assert all(zero_row_fraction(x) == 0 for x in views)  # no digit image is blank
    assert masked.losses != neutral.losses


def test_swa_start_embeds_with_the_mean_of_the_weights_from_that_epoch_on(digits, monkeypatch):
    encoders, weights = [], []  # the trained encoder; its weights after every step

    class RecordedEncoder(node_trainer.GraphEncoder):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            encoders.append(self)

    def record(optimizer, args, kwargs):
        weights.append({k: v.detach().clone() for k, v in encoders[0].state_dict().items()})

    monkeypatch.setattr(node_trainer, "GraphEncoder", RecordedEncoder)
    hook = register_optimizer_step_post_hook(record)
    try:
        # large steps, so that the mean weights embed visibly apart from the last ones
        config = CONFIG.with_overrides(epochs=3, swa_start=2, learning_rate=0.05)
        averaged = train(digits, config)
    finally:
        hook.remove()
    assert len(encoders) == 1 and len(weights) == 3
    encoder = encoders[0]
    encoder.load_state_dict(
        {k: torch.stack([w[k] for w in weights[1:]]).mean(0) for k in weights[0]}
    )
    encoder.eval()
    with torch.no_grad():
        graph = encoder.propagation_graph(digits.edge_index, digits.num_nodes)
        expected = encoder(prepare_features(digits.x), graph, readout=config.embedding)
    assert torch.allclose(averaged.embeddings, expected, atol=1e-5)
    # training itself is unchanged; without averaging the last weights embed (swa_start
    # equal to the epochs, the mean of the last weights alone, is test_node.py's)
    # (dataclasses.replace: with_overrides reads None as "not given" and would keep 2)
    plain = train(digits, replace(config, swa_start=None))
    assert plain.losses == averaged.losses
    assert float((averaged.embeddings - plain.embeddings).abs().max()) > 1e-2


# a small graph for the objectives: two groups of three nodes, edges inside and across them
N, TAU = 6, 0.5
GRAPH = torch.tensor([[0, 1], [1, 2], [2, 3], [3, 4], [0, 4], [1, 5]]).T
GRAPH = torch.cat([GRAPH, GRAPH.flip(0)], dim=1)


def small_views():
    gen = torch.Generator().manual_seed(5)
    z1, z2 = (torch.randn(N, 4, generator=gen, dtype=torch.float64) for _ in "12")
    groups = torch.eye(2, dtype=torch.float64)[torch.tensor([0, 0, 0, 1, 1, 1])]
    h = groups + 0.1 * torch.randn(N, 2, generator=gen, dtype=torch.float64)
    return z1, z2, h


def neighbour_infonce(z1, z2, weight):
    a = ref.pair_adjacency(N)
    for s, t in GRAPH.T.tolist():
        ref.add_cross_view(a, N, s, t, weight)
    return ref.info_nce_on_graph(torch.cat([z1, z2]), a, TAU)


@pytest.mark.parametrize("weight", [0.25, 1.0, 4.0])
def test_neighbor_weight_weights_the_neighbour_positives(weight):
    z1, z2, h = small_views()
    loss = node_method("neighbors", N, 4, TAU, GRAPH, neighbor_weight=weight).objective(
        z1, z2, h, h
    )
    assert torch.allclose(loss, neighbour_infonce(z1, z2, weight), rtol=1e-12)
    assert not torch.allclose(loss, neighbour_infonce(z1, z2, 0.0))  # i.e. GRACE's loss


def test_neighbor_weight_tends_to_grace():
    # weight 0 (neutral) is refused; towards it the loss meets GRACE's, linearly
    z1, z2, h = small_views()
    grace = node_method("grace", N, 4, TAU).objective(z1, z2, h, h)

    def neighbors(weight):
        return node_method("neighbors", N, 4, TAU, GRAPH, neighbor_weight=weight).objective(
            z1, z2, h, h
        )

    gaps = [float((neighbors(w) - grace).abs()) for w in (1e-3, 1e-6)]
    assert gaps[1] < 1e-5 and 0.5e3 < gaps[0] / gaps[1] < 2e3


def test_clusters_select_the_neighbour_positives():
    z1, z2, h = small_views()

    def homophily(clusters):
        method = node_method("homophily", N, 4, TAU, GRAPH, neighbor_weight=1.0, clusters=clusters)
        return method.objective(z1, z2, h, h)

    neighbors = node_method("neighbors", N, 4, TAU, GRAPH, neighbor_weight=1.0).objective(
        z1, z2, h, h
    )
    grace = node_method("grace", N, 4, TAU).objective(z1, z2, h, h)
    assert torch.allclose(homophily(1), neighbors, rtol=1e-12)  # one cluster keeps every edge
    assert torch.allclose(homophily(N), grace, rtol=1e-12)  # a cluster per node keeps none
    within = [(s, t) for s, t in GRAPH.T.tolist() if (s < 3) == (t < 3)]
    a = ref.pair_adjacency(N)
    for s, t in within:
        ref.add_cross_view(a, N, s, t)
    expected = ref.info_nce_on_graph(torch.cat([z1, z2]), a, TAU)
    assert torch.allclose(homophily(2), expected, rtol=1e-12)  # the two groups of h


def test_cli_node_options_reach_training(digits, tmp_path, monkeypatch):
    """The flags of ``cl2gnn node`` drive the training run, not only its JSON."""
    views = spy_views(monkeypatch)
    objectives, clusterings, averaging = [], [], []

    def make_method(*args, **kwargs):
        objectives.append(real_make_method(*args, **kwargs))
        return objectives[-1]

    def cluster_labels(x, clusters):
        labels = real_labels(x, clusters)
        clusterings.append((clusters, len(labels.unique())))
        return labels

    class RecordedAverage(node_fit.AveragedModel):
        def update_parameters(self, model):
            averaging.append(model)
            super().update_parameters(model)

    real_labels, real_make_method = node_methods.cluster_labels, node_trainer.make_method
    monkeypatch.setattr(node_trainer, "make_method", make_method)
    monkeypatch.setattr(node_methods, "cluster_labels", cluster_labels)
    monkeypatch.setattr(node_fit, "AveragedModel", RecordedAverage)
    args = ["node", "--method", "homophily", "--seeds", "1", "--epochs", "3", "--no-progress"]
    args += ["--mask-nodes", "0.5", "0.2", "--swa-start", "2", "--neighbor-weight", "0.5"]
    args += ["--clusters", "3", "--json", str(tmp_path / "r.json")]
    assert main(args) == 0
    assert json.loads((tmp_path / "r.json").read_text())["method"] == "homophily"
    for view, p in ((0, 0.5), (1, 0.2)):
        assert all(abs(zero_row_fraction(x) - p) < 0.05 for x in views[view::2])
    assert len(averaging) == 2  # epochs 2 and 3
    assert clusterings and all(c == 3 and found <= 3 for c, found in clusterings)
    # the objective the run trained is the homophily loss with neighbour weight 0.5
    (trained,) = objectives
    n, dim = digits.num_nodes, 8
    z1, z2, h = (torch.randn(n, dim) for _ in range(3))

    def value(objective):
        torch.manual_seed(0)  # the same k-means seed
        return objective.objective(z1, z2, h, h)

    graph = digits.edge_index
    same = node_method(
        "homophily", n, dim, CONFIG.temperature, graph, neighbor_weight=0.5, clusters=3
    )
    default = node_method("homophily", n, dim, CONFIG.temperature, graph, clusters=3)
    assert torch.equal(value(trained), value(same)) and value(trained) != value(default)
