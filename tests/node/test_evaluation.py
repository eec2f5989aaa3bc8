"""The node experiment's evaluation on graphs that ship their splits: the ``splits``
protocol, the probe's C chosen on the validation nodes, ROC-AUC for two classes, the
baselines, and the default method of a graph without a published configuration."""

import json

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from cl2gnn.cli.main import main
from cl2gnn.node import (
    NodeConfig,
    default_config,
    default_method,
    load_node_dataset,
    make_split,
    probe_scores,
    train_node_model,
)
from cl2gnn.node.evaluation.experiment import run_experiment
from cl2gnn.node.evaluation.probes import C_GRID, default_protocol, metric_for
from cl2gnn.node.presets import OTHER_GRAPHS_METHOD

from ..datasets.test_node_data import graph_arrays, write


def test_splits_protocol_uses_the_shipped_masks(tmp_path):
    arrays = graph_arrays(splits=3)
    data = load_node_dataset(write(tmp_path / "g.npz", arrays))
    for split in range(3):
        got = make_split("splits", data, split)
        for key, index in zip(("train", "val", "test"), got, strict=True):
            assert torch.equal(
                index, torch.from_numpy(np.flatnonzero(arrays[f"{key}_masks"][split]))
            )
    with pytest.raises(ValueError, match="ships 3 splits; split 3"):
        make_split("splits", data, 3)
    with pytest.raises(ValueError, match="no public split"):  # [N, S] masks are not one split
        make_split("public", data, 0)
    digits = load_node_dataset("digits-knn")
    assert default_protocol(digits) == "grace"
    with pytest.raises(ValueError, match="ships no splits"):
        make_split("splits", digits, 0)


def reference_probe(x: np.ndarray, y: np.ndarray, split, metric: str) -> tuple[float, float]:
    """The validation-chosen C's test score, and the best test score over the grid (what
    a probe that peeked at the test nodes would report)."""
    train, val, test = (s.numpy() for s in split)
    feats = x / np.linalg.norm(x, axis=1, keepdims=True)

    def score(model, nodes):
        if metric == "roc_auc":
            return 100 * roc_auc_score(y[nodes], model.predict_proba(feats[nodes])[:, 1])
        return 100 * model.score(feats[nodes], y[nodes])

    models = [LogisticRegression(C=c, max_iter=2000).fit(feats[train], y[train]) for c in C_GRID]
    chosen = models[int(np.argmax([score(m, val) for m in models]))]
    return score(chosen, test), max(score(m, test) for m in models)


@pytest.mark.parametrize("metric", ["accuracy", "roc_auc"])
def test_probe_chooses_c_on_the_validation_nodes_only(metric):
    # noisy labels, few training nodes: the C best on validation is not the best on test,
    # so a probe that chose C by the test score would report more than the reference
    gen = np.random.default_rng(3)
    n, classes = 300, 2 if metric == "roc_auc" else 4
    y = gen.integers(0, classes, n)
    x = gen.standard_normal((n, 20)) + 0.6 * np.eye(20)[y]
    perm = torch.from_numpy(gen.permutation(n))
    split = (perm[:40], perm[40:140], perm[140:])
    expected, peeking = reference_probe(x, y, split, metric)
    assert peeking > expected + 0.5  # the case can tell the two apart
    got = probe_scores(torch.from_numpy(x).float(), torch.from_numpy(y), split, metric=metric)
    assert got["test"] == pytest.approx(expected, abs=0.5)


def test_two_classes_are_scored_by_roc_auc(tmp_path):
    arrays = graph_arrays(classes=2)
    path = write(tmp_path / "binary.npz", arrays)
    (result,) = run_experiment(path, OTHER_GRAPHS_METHOD, epochs=2, progress=False, out_channels=8)
    assert result["metric"] == "roc_auc" and result["protocol"] == "splits"
    data = load_node_dataset(path)
    assert metric_for(data.y) == "roc_auc"
    # the scores are ROC-AUCs of the probe's probabilities: the reference, split by split
    # the default method of a graph without a published configuration, at width 8
    method, size = (
        default_method(data.name),
        {"out_channels": 8, "hidden_channels": 8, "proj_hidden": 8},
    )
    assert result["method"] == method == OTHER_GRAPHS_METHOD
    config = default_config(data.name, method).with_overrides(**size, epochs=2)
    for seed, score in enumerate(result["scores"]):
        embeddings = train_node_model(data, method, config, seed=seed, progress=False).embeddings
        split = make_split("splits", data, seed)
        expected, _ = reference_probe(embeddings.double().numpy(), data.y.numpy(), split, "roc_auc")
        assert score == pytest.approx(expected, abs=1e-6)


def test_run_experiment_on_splits_with_baselines(tmp_path):
    path = write(tmp_path / "g.npz", graph_arrays(n=120, splits=3))
    # a short run that moves the encoder; the single default's encoder and read-out
    train = {"out_channels": 8, "learning_rate": 0.05, "encoder": "sage", "embedding": "layers"}
    method = default_method(load_node_dataset(path))
    (result,) = run_experiment(path, method, epochs=10, baselines=True, progress=False, **train)
    assert result["seeds"] == [0, 1, 2] and result["protocol"] == "splits"
    assert result["metric"] == "accuracy"
    data = load_node_dataset(path)
    base = result["baselines"]

    def probe(features, seed, **options):
        return probe_scores(features, data.y, make_split("splits", data, seed), seed, **options)

    raw = [probe(data.x, s)["test"] for s in range(3)]
    assert base["raw features"]["scores"] == pytest.approx(raw)
    standardised = [probe(data.x, s, scaling="standard")["test"] for s in range(3)]
    assert base["raw features, standardised"]["scores"] == pytest.approx(standardised)
    # the untrained encoder: the same seeded initialisation, no training step
    size = {"out_channels": 8, "hidden_channels": 8, "proj_hidden": 8}
    method = default_method(data.name)
    config = default_config(data.name, method).with_overrides(
        **size, epochs=0, learning_rate=0.05, encoder="sage", embedding="layers"
    )
    untrained = [
        probe(train_node_model(data, method, config, seed=s, progress=False).embeddings, s)["test"]
        for s in range(3)
    ]
    assert untrained != result["scores"]  # the trained encoder scores otherwise
    assert base["untrained encoder"]["scores"] == pytest.approx(untrained)
    with pytest.raises(ValueError, match="ships 3 splits"):
        run_experiment(path, method, seeds=4, epochs=1, progress=False)


def test_each_seeds_epochs_run_is_the_number_of_losses_it_trained(tmp_path, monkeypatch):
    # a learning rate of 1e-9 lowers the loss only by the views' chance: patience 1 stops
    # each seed within a few of the 30 epochs
    from cl2gnn.node.evaluation import experiment

    trained, real = [], experiment.train_node_model

    def spy(*args, **kwargs):
        result = real(*args, **kwargs)
        trained.append(len(result.losses))
        return result

    monkeypatch.setattr(experiment, "train_node_model", spy)
    path = write(tmp_path / "g.npz", graph_arrays())
    fields = {"patience": 1, "learning_rate": 1e-9, "out_channels": 8, "hidden_channels": 8}
    (result,) = run_experiment(path, "grace", epochs=30, progress=False, **fields)
    assert len(trained) == 2 and all(0 < epochs < 30 for epochs in trained)
    assert result["epochs"] == 30 and result["epochs_run"] == trained


def test_untrained_encoder_is_the_seeded_initialisation(tmp_path):
    data = load_node_dataset(write(tmp_path / "g.npz", graph_arrays()))
    config = NodeConfig(out_channels=8, options={"proj_hidden": 8})
    untrained = train_node_model(
        data, "grace", config.with_overrides(epochs=0), seed=1, progress=False
    )
    trained = train_node_model(
        data, "grace", config.with_overrides(epochs=3), seed=1, progress=False
    )
    again = train_node_model(data, "grace", config.with_overrides(epochs=0), seed=1, progress=False)
    assert untrained.losses == [] and torch.equal(untrained.embeddings, again.embeddings)
    assert not torch.allclose(untrained.embeddings, trained.embeddings)


def test_cli_runs_a_user_file_with_baselines(tmp_path, capsys):
    path = write(tmp_path / "g.npz", graph_arrays())
    out = tmp_path / "r.json"
    args = ["node", "--dataset", path, "--method", "grace", "--epochs", "2", "--out-channels", "8"]
    args.append("--baselines")
    assert main([*args, "--json", str(out), "--no-progress"]) == 0
    result = json.loads(out.read_text())
    assert result["protocol"] == "splits" and result["seeds"] == [0, 1]
    assert result["metric"] == "accuracy" and "score_mean" in result
    assert set(result["baselines"]) == {
        "raw features",
        "raw features, standardised",
        "untrained encoder",
    }
    printed = capsys.readouterr().out
    assert "raw features" in printed and "untrained encoder" in printed


def test_a_graph_without_a_published_configuration_trains_the_chosen_default():
    from cl2gnn.node.presets import GRACE_OTHER_GRAPHS, GRACE_PUBLISHED, OTHER_GRAPHS

    assert default_method("Cora") == "grace" and default_config("Cora") == GRACE_PUBLISHED["Cora"]
    assert default_method("chameleon") == OTHER_GRAPHS_METHOD
    assert default_config("chameleon") == OTHER_GRAPHS
    # a named method keeps its own configuration; GRACE's family its unpublished one
    assert default_config("chameleon", "grace") == GRACE_OTHER_GRAPHS
    assert default_config("Cora", "cca_ssg") == default_config("chameleon", "cca_ssg")
