"""The node command's options take effect, each in the way it says, and change nothing at
their neutral value: ``--drop-edge`` / ``--drop-feature`` drop that fraction of each view's
edges and feature columns, ``--neighbor-weight`` weights the graph-neighbor positives,
``--clusters`` sets the k-means that selects them (``homophily``), ``--lr``,
``--weight-decay``, ``--temperature`` and ``--layers`` reach the optimiser, the loss and the
encoder."""

import json

import pytest
import torch
from torch_geometric.data import Data

from cl2gnn.cli.main import main
from cl2gnn.node import REGISTRY, default_config, methods, train_node_model
from cl2gnn.node.methods import neighbors as node_methods
from cl2gnn.node.training import fit as node_fit
from cl2gnn.node.training import fullbatch as node_fullbatch
from cl2gnn.node.training import plan as node_plan
from cl2gnn.node.training import trainer as node_trainer

from .. import reference as ref
from ..conftest import node_method, objective

CONFIG = default_config("digits-knn").with_overrides(epochs=2)


def train(data, config):
    return train_node_model(data, "grace", config, seed=0, progress=False)


def spy_views(monkeypatch):
    """Record, for every view the trainer draws (view 0, 1, 0, 1, ...), the fraction of the
    graph's edges it keeps and of the feature columns it keeps."""
    views = []

    def masks(view, data):
        edges, columns = real(view, data)
        views.append(tuple(1.0 if m is None else float(m.float().mean()) for m in (edges, columns)))
        return edges, columns

    real = node_trainer.view_masks
    monkeypatch.setattr(node_trainer, "view_masks", masks)
    return views


def test_drop_rates_drop_that_fraction_of_each_views_edges_and_columns(digits, monkeypatch):
    views = spy_views(monkeypatch)
    config = CONFIG.with_overrides(epochs=6, drop_edge=(0.5, 0.1), drop_feature=(0.5, 0.0))
    dropped = train(digits, config)
    assert len(views) == 2 * config.epochs
    # 15k edges: a binomial fraction's sd is 0.4 %; 64 columns over 6 draws: about 2.6 %
    for view, (p_edge, p_feature) in enumerate(
        zip(config.drop_edge, config.drop_feature, strict=True)
    ):
        edges = [e for e, _ in views[view::2]]
        columns = [c for _, c in views[view::2]]
        assert all(abs(e - (1 - p_edge)) < 0.02 for e in edges)
        assert abs(sum(columns) / len(columns) - (1 - p_feature)) < 0.1
    views.clear()
    neutral = train(digits, CONFIG.with_overrides(drop_edge=0.0, drop_feature=0.0))
    assert all(view == (1.0, 1.0) for view in views)
    assert dropped.losses[:2] != neutral.losses


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


def neighbor_infonce(z1, z2, weight):
    a = ref.pair_adjacency(N)
    for s, t in GRAPH.T.tolist():
        ref.add_cross_view(a, N, s, t, weight)
    return ref.info_nce_on_graph(torch.cat([z1, z2]), a, TAU)


@pytest.mark.parametrize("weight", [0.25, 1.0, 4.0])
def test_neighbor_weight_weights_the_neighbor_positives(weight):
    z1, z2, h = small_views()
    loss = objective(node_method("neighbors", N, 4, TAU, GRAPH, neighbor_weight=weight))(
        z1, z2, h, h
    )
    assert torch.allclose(loss, neighbor_infonce(z1, z2, weight), rtol=1e-12)
    assert not torch.allclose(loss, neighbor_infonce(z1, z2, 0.0))  # i.e. GRACE's loss


def test_neighbor_weight_tends_to_grace():
    # weight 0 (neutral) is refused; towards it the loss meets GRACE's, linearly
    z1, z2, h = small_views()
    grace = objective(node_method("grace", N, 4, TAU))(z1, z2, h, h)

    def neighbors(weight):
        method = node_method("neighbors", N, 4, TAU, GRAPH, neighbor_weight=weight)
        return objective(method)(z1, z2, h, h)

    gaps = [float((neighbors(w) - grace).abs()) for w in (1e-3, 1e-6)]
    assert gaps[1] < 1e-5 and 0.5e3 < gaps[0] / gaps[1] < 2e3


def test_clusters_select_the_neighbor_positives():
    z1, z2, h = small_views()

    def homophily(clusters):
        method = node_method("homophily", N, 4, TAU, GRAPH, neighbor_weight=1.0, clusters=clusters)
        return objective(method)(z1, z2, h, h)

    neighbors = objective(node_method("neighbors", N, 4, TAU, GRAPH, neighbor_weight=1.0))(
        z1, z2, h, h
    )
    grace = objective(node_method("grace", N, 4, TAU))(z1, z2, h, h)
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
    objectives, clusterings, trainers = [], [], []

    def build(plan, *args, **kwargs):
        objectives.append(real_build(plan, *args, **kwargs))
        return objectives[-1]

    def cluster_labels(x, clusters):
        labels = real_labels(x, clusters)
        clusterings.append((clusters, len(labels.unique())))
        return labels

    class RecordedTrainer(node_fullbatch.FullBatchTrainer):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            trainers.append(self)

    real_labels, real_build = node_methods.cluster_labels, node_plan.RunPlan.build
    monkeypatch.setattr(node_plan.RunPlan, "build", build)
    monkeypatch.setattr(node_methods, "cluster_labels", cluster_labels)
    monkeypatch.setattr(node_fit, "FullBatchTrainer", RecordedTrainer)
    args = ["node", "--method", "homophily", "--seeds", "1", "--epochs", "3", "--no-progress"]
    args += ["--drop-edge", "0.5", "0.25", "--drop-feature", "0", "--neighbor-weight", "0.5"]
    args += ["--clusters", "3", "--lr", "0.02", "--weight-decay", "0.001"]
    args += ["--temperature", "0.7", "--layers", "3", "--json", str(tmp_path / "r.json")]
    assert main(args) == 0
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["method"] == "homophily"
    assert result["config"]["drop_edge"] == [0.5, 0.25] and result["config"]["layers"] == 3
    for view, p in ((0, 0.5), (1, 0.25)):
        assert all(
            abs(edges - (1 - p)) < 0.03 and columns == 1.0 for edges, columns in views[view::2]
        )
    assert clusterings and all(c == 3 and found <= 3 for c, found in clusterings)
    (trainer,) = trainers
    group = trainer.optimizer.param_groups[0]
    assert group["lr"] == 0.02 and group["weight_decay"] == 0.001
    assert trainer.encoder.num_layers == 3
    # the objective the run trained is the homophily loss with neighbor weight 0.5, τ 0.7
    (trained,) = objectives
    assert trained.options.temperature == 0.7
    n, dim = digits.num_nodes, 8
    z1, z2, h = (torch.randn(n, dim) for _ in range(3))

    def value(method):
        torch.manual_seed(0)  # the same k-means seed
        return objective(method)(z1, z2, h, h)

    graph = digits.edge_index
    same = node_method("homophily", n, dim, 0.7, graph, neighbor_weight=0.5, clusters=3)
    default = node_method("homophily", n, dim, 0.7, graph, clusters=3)
    assert torch.equal(value(trained), value(same)) and value(trained) != value(default)


INFO_NCE_METHODS = sorted(
    name for name, cls in REGISTRY.items() if issubclass(cls, methods.InfoNCEMethod)
)


@pytest.mark.parametrize("name", INFO_NCE_METHODS)
def test_a_held_infonce_method_refuses_the_losss_joint_options_where_it_is_built(name):
    """A method held without the plan (``from_config`` alone) checks InfoNCE's options once,
    where it is built, so its step can call the unchecked loss: sampled keys across ranks
    are refused there, for every method whose loss is InfoNCE (GCA's own constructor too)."""
    generator = torch.Generator().manual_seed(0)
    edges = torch.randint(0, 20, (2, 60), generator=generator)
    data = Data(
        x=torch.rand(20, 6, generator=generator), edge_index=torch.cat([edges, edges.flip(0)], 1)
    )
    config = default_config(data, name).with_overrides(
        hidden_channels=8, out_channels=8, num_keys=4
    )
    REGISTRY[name].from_config(config, data)  # on one process: accepted
    with pytest.raises(ValueError, match="distributed takes neither num_keys"):
        REGISTRY[name].from_config(config, data, distributed="gather")
