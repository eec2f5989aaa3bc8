"""Node-level GCL: CLI on the embedded default, a short Cora run, protocols, determinism."""

import json
import os
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import mask_feature

from cl2gnn.cli.main import main
from cl2gnn.datasets.nodes import feature_knn_dataset
from cl2gnn.node import (
    METHODS,
    MaskFeatures,
    SparseFeatures,
    adam_probe_scores,
    default_config,
    load_node_dataset,
    make_split,
    prepare_features,
    probe_score,
    probe_scores,
    train_node_model,
)
from cl2gnn.node.encoders.features import ColumnMasked
from cl2gnn.node.encoders.graph_encoder import GraphEncoder
from cl2gnn.node.training.minibatch import layer_rows, trimmed

from ..conftest import random_graph

DATA = os.environ.get("CL2GNN_DATA")
HAS_CORA = bool(DATA) and (Path(DATA) / "planetoid" / "Cora" / "raw").is_dir()


def test_cli_embedded_default_writes_json(tmp_path, capsys):
    out = tmp_path / "result.json"
    args = ["node", "--method", "grace", "--seeds", "2", "--epochs", "10"]  # auto: test_node_auto
    code = main([*args, "--json", str(out), "--no-progress"])
    assert code == 0
    result = json.loads(out.read_text())
    for key in (
        "dataset",
        "method",
        "protocol",
        "metric",
        "score_mean",
        "score_std",
        "seeds",
        "epoch_ms",
    ):
        assert key in result
    assert result["dataset"] == "digits-knn" and result["seeds"] == [0, 1]
    assert result["metric"] == "accuracy"
    assert result["score_mean"] > 80.0  # 10 classes: chance is ~10 %
    assert "digits-knn" in capsys.readouterr().out


def test_feature_knn_dataset_is_the_union_of_nearest_neighbors():
    x = torch.randn(12, 3, generator=torch.Generator().manual_seed(0))
    data = feature_knn_dataset(x, torch.arange(12) % 3, "points", k=2, metric="l2")
    dist = torch.cdist(x.double(), x.double()).fill_diagonal_(float("inf"))
    nearest = dist.topk(2, largest=False).indices
    expected = {(i, int(j)) for i in range(12) for j in nearest[i]}
    expected |= {(j, i) for i, j in expected}
    assert set(map(tuple, data.edge_index.T.tolist())) == expected
    assert data.name == "points" and torch.equal(data.x, x)


def test_split_sizes(digits):
    n = digits.num_nodes
    train, val, test = make_split("grace", digits, 0)
    assert val is None and len(train) == round(0.1 * n) and len(test) == n - len(train)
    train, val, test = make_split("gca", digits, 0)
    assert len(train) == round(0.1 * n) and len(val) == round(0.1 * n)
    assert len(test) == n - len(train) - len(val)  # 80 %, not 10 %
    assert len(torch.unique(torch.cat([train, val, test]))) == n
    with pytest.raises(ValueError, match="public split"):
        make_split("public", digits, 0)


@pytest.mark.skipif(not HAS_CORA, reason="needs CL2GNN_DATA with planetoid/Cora")
def test_cora_public_split_and_short_run():
    shared = Path(DATA) / "planetoid" / "Cora"
    before = {p: p.stat().st_mtime_ns for p in shared.rglob("*")}
    data = load_node_dataset("Cora")
    assert {p: p.stat().st_mtime_ns for p in shared.rglob("*")} == before  # never written
    train, val, test = make_split("public", data, 0)
    assert (len(train), len(val), len(test)) == (140, 500, 1000)
    config = default_config("Cora").with_overrides(epochs=40)
    result = train_node_model(data, "grace", config, seed=0, progress=False)
    accuracy = probe_score(result.embeddings, data.y, make_split("grace", data, 0))
    assert accuracy > 75.0, accuracy  # majority class: 30 %


def test_loss_falls_and_same_seed_same_numbers(digits):
    config = default_config("digits-knn").with_overrides(epochs=15)
    a = train_node_model(digits, "grace", config, seed=3, progress=False)
    b = train_node_model(digits, "grace", config, seed=3, progress=False)
    c = train_node_model(digits, "grace", config, seed=4, progress=False)
    assert a.losses[-1] < a.losses[0]
    assert a.losses == b.losses and torch.equal(a.embeddings, b.embeddings)
    assert a.losses != c.losses


@pytest.mark.parametrize("method", METHODS)
def test_every_method_trains_its_objective(method, digits, monkeypatch):
    # the trainer minimises the registered method's loss (its value is checked against
    # each method's formula in test_node_objectives.py), reports that loss's values, and
    # its gradient moves the encoder away from its initialisation
    from cl2gnn.node.methods import REGISTRY

    calls = []
    forward = REGISTRY[method].forward

    def recorded(self, batch):
        loss = forward(self, batch)
        calls.append((self.name, float(loss.detach())))
        return loss

    monkeypatch.setattr(REGISTRY[method], "forward", recorded)
    config = default_config("digits-knn").with_overrides(epochs=2)
    untrained = train_node_model(digits, method, config.with_overrides(epochs=0), progress=False)
    result = train_node_model(digits, method, config, progress=False)
    assert calls == [(method, loss) for loss in result.losses] and len(calls) == 2
    assert not torch.allclose(result.embeddings, untrained.embeddings)


def test_gat_encoder_and_bad_names(digits):
    config = default_config("digits-knn").with_overrides(epochs=2, encoder="gat")
    assert train_node_model(digits, "grace", config, progress=False).embeddings.shape[0] == 1797
    with pytest.raises(ValueError, match="unknown dataset"):
        load_node_dataset("Karate")
    with pytest.raises(ValueError, match="method"):
        train_node_model(digits, "byol", config, progress=False)


def embeds_as_dense(encoder, graph, features, dense):
    """``encoder``'s embedding of ``features`` (a sparse or column-masked form), checked to
    have the outputs and the parameters' gradients of the ``dense`` matrix's."""
    outputs, grads = [], []
    for x in (features, dense):
        encoder.zero_grad()
        out = encoder.embed(x, graph)
        out.square().sum().backward()
        outputs.append(out)
        grads.append([p.grad.clone() for p in encoder.parameters()])
    assert torch.allclose(outputs[0], outputs[1], atol=1e-12)
    for a, b in zip(*grads, strict=True):
        assert torch.allclose(a, b, atol=1e-10)
    return outputs[0]


@pytest.mark.parametrize("conv", ["gcn", "sage", "gat"])
def test_sparse_features_equal_the_masked_dense_path(conv):
    # a fixed sparse X with the column mask moved to the weight: same outputs and gradients
    # as the dense masked X
    gen = torch.Generator().manual_seed(0)
    x = (torch.rand(30, 40, generator=gen, dtype=torch.float64) < 0.05).double()
    edge_index = torch.randint(0, 30, (2, 90), generator=gen)
    mask = (torch.rand(40, generator=gen) > 0.3).double()
    sparse = prepare_features(x)
    assert isinstance(sparse, SparseFeatures) and torch.equal(sparse.to_dense(), x)
    encoder = GraphEncoder(40, 8, conv=conv, readout="concat").double()
    graph = encoder.propagation_graph(edge_index, 30)
    if conv != "gat":
        graph = graph.to(torch.float64)
    masked = sparse.with_column_mask(mask)
    assert torch.equal(masked.to_dense(), x * mask)
    out = embeds_as_dense(encoder, graph, masked, x * mask)
    assert out.shape == (30, 3 * 8)  # both layers: 2·out_channels + out_channels


@pytest.mark.parametrize(  # GAT's edge lists are not trimmed
    ("conv", "trim"),
    [("gcn", False), ("sage", False), ("gat", False), ("gcn", True), ("sage", True)],
)
def test_column_masked_features_equal_the_masked_copy(conv, trim):
    # a dense view's column mask on the first layer's weight: the same outputs and
    # gradients as the masked copy of X, on the whole graph and on trimmed layers
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(30, 12, generator=gen, dtype=torch.float64)
    # seeds 0-4 receive from nodes 0-14 only: a sampled subgraph's order by hop
    inner = torch.stack([torch.randint(0, 15, (25,), generator=gen), torch.arange(25) % 5])
    outer = torch.stack(
        [torch.randint(0, 30, (60,), generator=gen), torch.randint(5, 30, (60,), generator=gen)]
    )
    edge_index = torch.cat([inner, outer], 1)
    mask = (torch.rand(12, generator=gen) > 0.4).double()
    assert 0 < mask.sum() < 12
    encoder = GraphEncoder(12, 8, conv=conv, readout="last" if trim else "concat").double()
    graph = encoder.propagation_graph(edge_index, 30)
    if conv != "gat":
        graph = graph.to(torch.float64)
    if trim:
        graph = trimmed(graph, layer_rows(edge_index, 5, 2))
        assert graph[0].size(0) == 15
    view = ColumnMasked(x, mask)
    assert torch.equal(view.to_dense(), x * mask)
    out = embeds_as_dense(encoder, graph, view, x * mask)
    assert out.shape == ((5, 8) if trim else (30, 3 * 8))  # concat: both layers


@pytest.mark.parametrize("p", [0.0, 0.3, 1.0])
def test_mask_features_masks_columns_as_mask_feature_draws_them(p):
    # the columns the built-in encoder masks on its weight are PyG's mask_feature's, from
    # the same random draw, and the transform's own output is the masked copy
    x = torch.rand(20, 50) + 0.5
    view = MaskFeatures(p)
    torch.manual_seed(3)
    keep = view.keep(50)
    drawn_next = torch.rand(3)
    torch.manual_seed(3)
    expected, _ = mask_feature(x, p=p, mode="col")
    assert torch.equal(torch.rand(3), drawn_next)  # as many numbers drawn
    assert (keep is None) == (p == 0.0)  # p = 0: nothing drawn, nothing masked
    assert torch.equal(x if keep is None else x * keep, expected)
    torch.manual_seed(3)
    assert torch.equal(view(Data(x=x)).x, expected)
    with pytest.raises(ValueError, match="probability"):
        MaskFeatures(1.5)


def test_concat_embedding_option(digits):
    config = default_config("digits-knn").with_overrides(epochs=2, embedding="concat")
    result = train_node_model(digits, "grace", config, progress=False)
    assert result.embeddings.shape == (digits.num_nodes, 3 * config.out_channels)
    with pytest.raises(ValueError, match="embedding"):
        config.with_overrides(embedding="sum")


def test_out_channels_keeps_the_layers_ratio_unless_hidden_channels_is_given():
    from cl2gnn.node.evaluation.experiment import configure

    base = default_config("Cora").with_overrides(out_channels=256, hidden_channels=512)
    assert configure(base, None, 1024).hidden_channels == 2048
    assert configure(base, {"hidden_channels": 1024}, 1024).hidden_channels == 1024
    assert configure(base, None, 1024, hidden_channels=64).hidden_channels == 64
    assert configure(base, None, 1024).options["proj_hidden"] == 1024


def test_cli_embedding_and_width_flags(tmp_path):
    out = tmp_path / "r.json"
    args = ["node", "--method", "grace", "--seeds", "1", "--epochs", "2", "--embedding", "concat"]
    assert main([*args, "--out-channels", "16", "--json", str(out), "--no-progress"]) == 0
    config = json.loads(out.read_text())["config"]
    assert config["embedding"] == "concat" and config["out_channels"] == config["proj_hidden"] == 16
    assert config["normalize_features"] is False and "neighbor_weight" not in config  # grace's
    args = ["node", "--seeds", "1", "--epochs", "2", "--method", "neighbors"]
    args += ["--neighbor-weight", "0.5", "--normalize-features", "--json", str(out)]
    assert main([*args, "--no-progress"]) == 0
    result = json.loads(out.read_text())
    assert result["method"] == "neighbors"
    assert result["config"]["neighbor_weight"] == 0.5 and result["config"]["normalize_features"]
    args[args.index("neighbors")] = "homophily"
    assert main([*args, "--clusters", "4", "--no-progress"]) == 0
    result = json.loads(out.read_text())
    assert result["method"] == "homophily" and result["config"]["clusters"] == 4


def dense_neighbor_infonce(z1, z2, graph, tau, lam, keep):
    """InfoNCE over the 2N stacked views whose positives are each node's other view (weight
    1) and, for the edges ``keep(i, j)`` accepts, the neighbor's other view (weight λ),
    Ā-normalised: a dense brute force in float64."""
    from ..reference import sym_normalized

    n = z1.size(0)
    adj = torch.zeros(2 * n, 2 * n, dtype=z1.dtype)
    for i in range(n):
        adj[i, i + n] = adj[i + n, i] = 1.0
    for j, i in graph.T.tolist():
        if keep(i, j):  # i's view 1 is positive with j's view 2 and vice versa
            adj[i, j + n] += lam
            adj[i + n, j] += lam
    x = torch.nn.functional.normalize(torch.cat([z1, z2]), dim=1)
    s = x @ x.T / tau
    lse = torch.logsumexp(s.masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf")), 1)
    return (lse - (sym_normalized(adj) * s).sum(1)).mean()


def test_neighbors_objective_equals_weighted_positive_infonce():
    from ..conftest import node_method, objective
    from ..reference import f64

    gen = torch.Generator().manual_seed(1)
    n, d, tau, lam = 7, 5, 0.4, 0.5
    graph = torch.tensor([[0, 1, 1, 2, 3, 4, 5, 6, 2], [1, 0, 2, 1, 4, 3, 6, 5, 2]])  # + a loop
    z1, z2 = (
        torch.randn(n, d, generator=gen, dtype=f64),
        torch.randn(n, d, generator=gen, dtype=f64),
    )
    method = node_method("neighbors", n, d, tau, graph, neighbor_weight=lam)
    loss = objective(method)(z1, z2, z1, z2)
    expected = dense_neighbor_infonce(z1, z2, graph, tau, lam, keep=lambda i, j: i != j)
    assert torch.allclose(loss, expected, atol=1e-12)


def test_homophily_objective_keeps_only_same_cluster_neighbors():
    # two clear groups of encoder outputs and one edge between them: with 2 clusters the
    # loss is the neighbors' InfoNCE without that edge
    from ..conftest import node_method, objective
    from ..reference import f64

    gen = torch.Generator().manual_seed(2)
    n, d, tau, lam = 7, 5, 0.4, 0.5
    graph = torch.tensor([[0, 1, 1, 2, 2, 3, 4, 5, 6, 3], [1, 0, 2, 1, 3, 2, 5, 4, 3, 6]])
    group = torch.tensor([0, 0, 0, 1, 1, 1, 1])
    h = torch.nn.functional.one_hot(group, d).to(f64) + 0.05 * torch.randn(n, d, generator=gen)
    z1, z2 = (torch.randn(n, d, generator=gen, dtype=f64) for _ in range(2))
    method = node_method("homophily", n, d, tau, graph, neighbor_weight=lam, clusters=2)
    loss = objective(method)(z1, z2, h, h)
    expected = dense_neighbor_infonce(z1, z2, graph, tau, lam, lambda i, j: group[i] == group[j])
    assert torch.allclose(loss, expected, atol=1e-12)
    neighbors = node_method("neighbors", n, d, tau, graph, neighbor_weight=lam)
    assert not torch.allclose(loss, objective(neighbors)(z1, z2, h, h))  # the cut edge mattered
    for bad in (0, 8, 2.0, True):
        with pytest.raises(ValueError, match="clusters"):
            node_method("homophily", n, d, tau, graph, clusters=bad)


def test_callable_objective_matches_the_named_method(digits):
    from cl2gnn.losses import info_nce

    config = default_config("digits-knn").with_overrides(epochs=4)
    named = train_node_model(digits, "grace", config, seed=2, progress=False)

    def grace(z1, z2, h1, h2):
        return info_nce(z1, z2, temperature=config.options["temperature"])

    plugged = train_node_model(digits, grace, config, seed=2, progress=False)
    assert plugged.losses == named.losses
    assert torch.equal(plugged.embeddings, named.embeddings)


def test_normalize_features_option_leaves_the_data_alone(digits):
    config = default_config("digits-knn").with_overrides(epochs=2)
    before = digits.x.clone()
    raw = train_node_model(digits, "grace", config, seed=0, progress=False)
    rows = train_node_model(
        digits, "grace", config.with_overrides(normalize_features=True), seed=0, progress=False
    )
    assert torch.equal(digits.x, before)
    assert not torch.allclose(raw.embeddings, rows.embeddings)  # other inputs, other outputs


def test_module_objective_parameters_are_trained(digits):
    from cl2gnn.losses import info_nce

    config = default_config("digits-knn").with_overrides(epochs=3)

    class ExtraHead(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(config.out_channels, config.out_channels)

        def forward(self, z1, z2, h1, h2):
            return info_nce(self.lin(z1), self.lin(z2), temperature=config.options["temperature"])

    objective = ExtraHead()
    before = objective.lin.weight.detach().clone()
    train_node_model(digits, objective, config, progress=False)
    assert not torch.equal(objective.lin.weight, before)  # the optimizer stepped it


def test_probe_scaling_and_c_grid():
    # the label is an offset (5 or 6) in a feature dwarfed by a noise feature of std 100:
    # per-feature standardisation keeps it separable, L2 row normalisation divides it by
    # the noise and loses it
    gen = torch.Generator().manual_seed(0)
    y = torch.arange(400) % 2
    feats = torch.stack([100 * torch.randn(400, generator=gen), 5.0 + y], dim=1)
    feats[:, 1] += 0.05 * torch.randn(400, generator=gen)
    split = (torch.arange(0, 200), torch.arange(200, 300), torch.arange(300, 400))
    assert probe_score(feats, y, split, scaling="standard") > 95.0
    assert probe_score(feats, y, split, scaling="l2") < 80.0
    # 3:1 labels: a C so small that only the intercept is learnt predicts the majority
    y3 = (torch.arange(400) % 4 == 0).long()
    feats[:, 1] = 5.0 + y3 + 0.05 * torch.randn(400, generator=gen)
    assert probe_score(feats, y3, split, scaling="standard") > 95.0
    assert probe_score(feats, y3, split, scaling="standard", c_grid=[1e-6]) == 75.0
    tiny = probe_scores(feats, y3, split, scaling="standard", c_grid=[1e-6])
    assert tiny == {"validation": 75.0, "test": 75.0}  # majority rate on nodes 200-299 too
    cv = probe_scores(feats, y3, (split[0], None, split[2]), scaling="standard", c_grid=[1e-6])
    assert cv["validation"] == 75.0  # cross-validated on the training nodes
    with pytest.raises(ValueError, match="scaling"):
        probe_score(feats, y, split, scaling="minmax")


def test_adam_probe_reads_the_test_nodes_at_the_best_validation_epoch():
    gen = torch.Generator().manual_seed(0)
    y = torch.arange(300) % 3
    feats = 3.0 * torch.nn.functional.one_hot(y).float() + 0.3 * torch.randn(300, 3, generator=gen)
    split = (torch.arange(0, 100), torch.arange(100, 200), torch.arange(200, 300))
    scores = adam_probe_scores(feats, y, split, seed=0)
    assert scores["validation"] > 95.0 and scores["test"] > 95.0
    assert adam_probe_scores(feats, y, split, seed=0) == scores  # seeded
    # test labels permuted: the rule learnt on train and validation gets every test node
    # wrong, so a probe that looked at the test nodes to choose its epoch would score higher
    shifted = y.clone()
    shifted[200:] = (y[200:] + 1) % 3
    assert adam_probe_scores(feats, shifted, split, seed=0)["test"] < 5.0
    with pytest.raises(ValueError, match="validation"):
        adam_probe_scores(feats, y, (split[0], None, split[2]))


def test_snapshots_leave_the_run_unchanged(digits):
    config = default_config("digits-knn").with_overrides(epochs=6)
    plain = train_node_model(digits, "grace", config, seed=1, progress=False)
    kept = train_node_model(digits, "grace", config, seed=1, progress=False, snapshot_every=3)
    assert plain.snapshots == {} and sorted(kept.snapshots) == [3, 6]
    assert kept.losses == plain.losses and torch.equal(kept.embeddings, plain.embeddings)
    assert not torch.equal(kept.snapshots[3], kept.embeddings)
    # 6 epochs, every 4: one snapshot, the final embeddings computed after the loop
    sparse = train_node_model(digits, "grace", config, seed=1, progress=False, snapshot_every=4)
    assert sorted(sparse.snapshots) == [4] and torch.equal(sparse.embeddings, plain.embeddings)
    assert not torch.equal(sparse.snapshots[4], plain.embeddings)
    with pytest.raises(ValueError, match="snapshot_every"):
        train_node_model(digits, "grace", config, progress=False, snapshot_every=-1)


def test_patience_counts_a_tied_loss_as_no_improvement(monkeypatch):
    """Patience 2 over the losses 3, 2, 2, 2, 1, …: the two ties after the lowest loss are
    two epochs without a lower one, so the run stops after epoch 4 and hands back the
    weights the lowest loss was computed on (those epoch 2 started from), not a tie's."""
    from cl2gnn.node import NodeConfig
    from cl2gnn.node.training.fullbatch import FullBatchTrainer

    script, real = iter([3.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0]), FullBatchTrainer.epoch

    def scripted(trainer):
        real(trainer)  # the weights move as in a run; the loss is the script's
        return torch.tensor(next(script))

    monkeypatch.setattr(FullBatchTrainer, "epoch", scripted)
    edge_index, _ = random_graph(30, 90, torch.Generator().manual_seed(0), weighted=False)
    data = Data(x=torch.randn(30, 6), edge_index=edge_index)
    config = NodeConfig(out_channels=8, hidden_channels=8, epochs=8, patience=2, learning_rate=0.01)
    config = config.with_overrides(proj_hidden=8)
    result = train_node_model(data, "grace", config, snapshot_every=1, progress=False)
    assert result.losses == [3.0, 2.0, 2.0, 2.0]
    assert torch.equal(result.embeddings, result.snapshots[1])
    assert not torch.equal(result.embeddings, result.snapshots[2])


def test_sampled_keys_repeat_and_reduce_to_the_exact_loss(digits, tmp_path):
    config = default_config("digits-knn").with_overrides(epochs=15)
    exact = train_node_model(digits, "grace", config, seed=1, progress=False)
    sampled = config.with_overrides(num_keys=128)
    a, b = (train_node_model(digits, "grace", sampled, seed=1, progress=False) for _ in "ab")
    assert a.losses == b.losses and torch.equal(a.embeddings, b.embeddings)
    assert a.losses != exact.losses and a.losses[-1] < a.losses[0]
    every = config.with_overrides(num_keys=2 * digits.num_nodes)  # all views: exact
    assert train_node_model(digits, "grace", every, seed=1, progress=False).losses == exact.losses
    with pytest.raises(ValueError, match="num_keys"):
        train_node_model(digits, "kernel", sampled, progress=False)
    out = tmp_path / "r.json"
    args = ["node", "--method", "grace", "--seeds", "1", "--epochs", "2", "--num-keys", "64"]
    args += ["--json", str(out)]
    assert main([*args, "--no-progress"]) == 0
    assert json.loads(out.read_text())["config"]["num_keys"] == 64
