"""Node-level GCL: CLI on the embedded default, a short Cora run, protocols, determinism."""

import json
import os
from pathlib import Path

import pytest
import torch

from cl2gnn.cli import main
from cl2gnn.node import (
    METHODS,
    SparseFeatures,
    default_config,
    load_node_dataset,
    make_split,
    prepare_features,
    probe_accuracy,
    train_node_model,
)
from cl2gnn.node.models import GraphEncoder

DATA = os.environ.get("CL2GNN_DATA")
HAS_CORA = bool(DATA) and (Path(DATA) / "planetoid" / "Cora" / "raw").is_dir()


@pytest.fixture(autouse=True)
def _cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("CL2GNN_CACHE", str(tmp_path_factory.getbasetemp() / "cl2gnn-cache"))


@pytest.fixture(scope="module")
def digits():
    return load_node_dataset("digits-knn")


def test_cli_embedded_default_writes_json(tmp_path, capsys):
    out = tmp_path / "result.json"
    code = main(["node", "--seeds", "2", "--epochs", "10", "--json", str(out), "--no-progress"])
    assert code == 0
    result = json.loads(out.read_text())
    for key in (
        "dataset",
        "method",
        "protocol",
        "accuracy_mean",
        "accuracy_std",
        "seeds",
        "epoch_ms",
    ):
        assert key in result
    assert result["dataset"] == "digits-knn" and result["seeds"] == 2
    assert result["accuracy_mean"] > 80.0  # 10 classes: chance is ~10 %
    assert "digits-knn" in capsys.readouterr().out


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
    data = load_node_dataset("Cora")
    assert not (Path(DATA) / "planetoid" / "Cora" / "processed").exists()  # never written
    train, val, test = make_split("public", data, 0)
    assert (len(train), len(val), len(test)) == (140, 500, 1000)
    config = default_config("Cora").with_overrides(epochs=40)
    result = train_node_model(data, "grace", config, seed=0, progress=False)
    accuracy = probe_accuracy(result.embeddings, data.y, make_split("grace", data, 0))
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
def test_every_method_trains(method, digits):
    config = default_config("digits-knn").with_overrides(epochs=3)
    result = train_node_model(digits, method, config, seed=0, progress=False)
    assert all(torch.isfinite(torch.tensor(result.losses)))
    assert result.embeddings.shape == (digits.num_nodes, config.hidden)


def test_gat_encoder_and_bad_names(digits):
    config = default_config("digits-knn").with_overrides(epochs=2, encoder="gat")
    assert train_node_model(digits, "grace", config, progress=False).embeddings.shape[0] == 1797
    with pytest.raises(ValueError, match="unknown dataset"):
        load_node_dataset("Karate")
    with pytest.raises(ValueError, match="method"):
        train_node_model(digits, "byol", config, progress=False)


@pytest.mark.parametrize("conv", ["gcn", "gat"])
def test_sparse_features_equal_the_masked_dense_path(conv):
    # a fixed sparse X with the column mask moved to the weight: same outputs and gradients
    gen = torch.Generator().manual_seed(0)
    x = (torch.rand(30, 40, generator=gen, dtype=torch.float64) < 0.05).double()
    edge_index = torch.randint(0, 30, (2, 90), generator=gen)
    mask = (torch.rand(40, generator=gen) > 0.3).double()
    sparse = prepare_features(x)
    assert isinstance(sparse, SparseFeatures) and torch.equal(sparse.to_dense(), x)
    encoder = GraphEncoder(40, 8, conv=conv).double()
    graph = encoder.propagation_graph(edge_index, 30)
    if conv == "gcn":
        graph = graph.to(torch.float64)
    outputs, grads = [], []
    for features in (sparse.with_column_mask(mask), x * mask):
        encoder.zero_grad()
        out = encoder(features, graph, concat_layers=True)
        out.square().sum().backward()
        outputs.append(out)
        grads.append([p.grad.clone() for p in encoder.parameters()])
    assert outputs[0].shape == (30, 3 * 8)  # both layers: 2·hidden + hidden
    assert torch.allclose(outputs[0], outputs[1], atol=1e-12)
    for a, b in zip(*grads, strict=True):
        assert torch.allclose(a, b, atol=1e-10)


def test_concat_embedding_option(digits):
    config = default_config("digits-knn").with_overrides(epochs=2, embedding="concat")
    result = train_node_model(digits, "grace", config, progress=False)
    assert result.embeddings.shape == (digits.num_nodes, 3 * config.hidden)
    with pytest.raises(ValueError, match="embedding"):
        train_node_model(digits, "grace", config.with_overrides(embedding="sum"), progress=False)


def test_cli_embedding_and_width_flags(tmp_path):
    out = tmp_path / "r.json"
    args = ["node", "--seeds", "1", "--epochs", "2", "--embedding", "concat", "--hidden", "16"]
    assert main([*args, "--json", str(out), "--no-progress"]) == 0
    config = json.loads(out.read_text())["config"]
    assert config["embedding"] == "concat" and config["hidden"] == config["proj_hidden"] == 16
