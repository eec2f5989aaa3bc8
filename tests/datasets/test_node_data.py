"""Heterophilous graphs and user .npz files: loading, format checks, the ``splits``
protocol, ROC-AUC for two classes and the baselines."""

import json
import os
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score

from cl2gnn.apps.cli import main
from cl2gnn.apps.node import run_node
from cl2gnn.datasets.names import HETEROPHILOUS
from cl2gnn.node import (
    NodeConfig,
    default_config,
    default_method,
    load_node_dataset,
    make_split,
    probe_scores,
    train_node_model,
)
from cl2gnn.node.config import OTHER_GRAPHS_METHOD
from cl2gnn.node.evaluate import C_GRID, default_protocol, metric_for

DATA = os.environ.get("CL2GNN_DATA")
SHIPPED = Path(DATA or "/nonexistent") / "heterophilous"


def graph_arrays(n=40, classes=3, splits=2, features=6, seed=0) -> dict:
    """A small graph in the heterophilous graphs' format: a directed ring plus random
    chords (one direction listed), and ``splits`` random 50/25/25 splits."""
    rng = np.random.default_rng(seed)
    ring = np.stack([np.arange(n), (np.arange(n) + 1) % n], 1)
    chords = rng.integers(0, n, (n, 2))
    masks = np.zeros((3, splits, n), bool)
    for s in range(splits):
        part = np.repeat([0, 1, 2], [n // 2, n // 4, n - n // 2 - n // 4])
        masks[rng.permutation(part), s, np.arange(n)] = True
    return {
        "node_features": rng.standard_normal((n, features)).astype(np.float32),
        "node_labels": np.arange(n) % classes,
        "edges": np.concatenate([ring, chords[chords[:, 0] != chords[:, 1]]]),
        "train_masks": masks[0],
        "val_masks": masks[1],
        "test_masks": masks[2],
    }


def write(path: Path, arrays: dict) -> str:
    np.savez(path, **arrays)
    return str(path)


@pytest.mark.parametrize("name", HETEROPHILOUS)
def test_shipped_graphs_load_undirected_with_their_masks(name):
    path = SHIPPED / f"{name.replace('-', '_')}.npz"
    if not path.is_file():
        pytest.skip(f"needs CL2GNN_DATA with heterophilous/{path.name}")
    raw = np.load(path)
    data = load_node_dataset(name)
    n, f = raw["node_features"].shape
    assert data.name == name and data.x.shape == (n, f) and data.x.dtype == torch.float32
    assert torch.equal(data.y, torch.from_numpy(raw["node_labels"]))
    # every listed pair in both directions, nothing else, no duplicates
    pairs = {tuple(e) for e in raw["edges"].tolist()}
    expected = pairs | {(b, a) for a, b in pairs}
    got = [tuple(e) for e in data.edge_index.t().tolist()]
    assert len(got) == len(set(got)) and set(got) == expected
    for key in ("train", "val", "test"):  # [N, splits], column s = the file's row s
        mask = getattr(data, f"{key}_mask")
        assert mask.dtype == torch.bool and mask.shape == (n, 10)
        assert torch.equal(mask.t(), torch.from_numpy(raw[f"{key}_masks"]))
    assert default_protocol(data) == "splits"
    assert metric_for(data.y) == ("roc_auc" if name == "minesweeper" else "accuracy")


def test_a_user_npz_file_loads(tmp_path):
    arrays = graph_arrays()
    data = load_node_dataset(write(tmp_path / "mine.npz", arrays))
    assert data.name == "mine.npz"  # never a published dataset's name, so generic defaults
    assert data.is_undirected() and data.num_nodes == 40
    assert data.train_mask.shape == (40, 2)
    assert torch.equal(data.test_mask[:, 1], torch.from_numpy(arrays["test_masks"][1]))
    one_split = {**arrays, **{k: arrays[k][0] for k in ("train_masks", "val_masks", "test_masks")}}
    assert load_node_dataset(write(tmp_path / "one.npz", one_split)).train_mask.shape == (40, 1)


def _broken(arrays: dict, key: str, value) -> dict:
    broken = dict(arrays)
    if value is None:
        del broken[key]
    else:
        broken[key] = value
    return broken


BAD_FILES = {
    "missing key": ("val_masks", None, "missing key.*val_masks"),
    "mask of wrong shape": ("train_masks", np.ones((2, 39), bool), r"train_masks must have shape"),
    "masks with different splits": ("test_masks", np.ones((3, 40), bool), "same number of splits"),
    "node in train and test": ("test_masks", "train", "two of train/val/test"),
    "labels out of range": ("node_labels", np.arange(40) % 3 - 1, "node_labels out of range"),
    "labels not integers": ("node_labels", np.zeros(40), "node_labels must be 40 integers"),
    "NaN features": ("node_features", "nan", "NaN"),
    "edge to a missing node": ("edges", np.array([[0, 40]]), "edges name nodes outside"),
    "edges not pairs": ("edges", np.zeros((5, 3), np.int64), r"edges must be integer node pairs"),
}


@pytest.mark.parametrize("case", BAD_FILES)
def test_a_bad_file_raises_naming_file_and_problem(tmp_path, case):
    key, value, message = BAD_FILES[case]
    arrays = graph_arrays()
    if isinstance(value, str) and value == "train":
        value = arrays["train_masks"].copy()
    elif isinstance(value, str) and value == "nan":
        value = arrays["node_features"].copy()
        value[3, 2] = np.nan
    path = write(tmp_path / "bad.npz", _broken(arrays, key, value))
    with pytest.raises(ValueError, match=rf"bad\.npz: .*{message}"):
        load_node_dataset(path)


def test_not_a_file_and_unknown_names_raise(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        load_node_dataset(str(tmp_path / "absent.npz"))
    (tmp_path / "junk.npz").write_text("not a zip")
    with pytest.raises(ValueError, match=r"junk\.npz: not a readable"):
        load_node_dataset(str(tmp_path / "junk.npz"))
    with pytest.raises(ValueError, match="unknown dataset"):
        load_node_dataset("chameleonn")


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
    (result,) = run_node(path, OTHER_GRAPHS_METHOD, epochs=2, progress=False, out_channels=8)
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


def test_run_node_on_splits_with_baselines(tmp_path):
    path = write(tmp_path / "g.npz", graph_arrays(n=120, splits=3))
    # a short run that moves the encoder; the single default's encoder and read-out
    train = {"out_channels": 8, "learning_rate": 0.05, "encoder": "sage", "embedding": "layers"}
    method = default_method(load_node_dataset(path))
    (result,) = run_node(path, method, epochs=10, baselines=True, progress=False, **train)
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
        run_node(path, method, seeds=4, epochs=1, progress=False)


def test_untrained_encoder_is_the_seeded_initialisation(tmp_path):
    data = load_node_dataset(write(tmp_path / "g.npz", graph_arrays()))
    config = NodeConfig(out_channels=8, proj_hidden=8)
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


def test_cli_refuses_a_bad_file_in_one_line(tmp_path, capsys):
    arrays = graph_arrays()
    path = write(tmp_path / "bad.npz", _broken(arrays, "edges", None))
    out = tmp_path / "r.json"
    with pytest.raises(SystemExit) as exit_info:
        main(["node", "--dataset", path, "--epochs", "1", "--json", str(out), "--no-progress"])
    assert exit_info.value.code == 2 and not out.exists()
    err = capsys.readouterr().err.strip()
    assert err.startswith("cl2gnn node: error:") and "missing key(s) edges" in err
    assert len(err.splitlines()) == 1


def test_a_graph_without_a_published_configuration_trains_the_chosen_default():
    from cl2gnn.node.config import GRACE_OTHER_GRAPHS, GRACE_PUBLISHED, OTHER_GRAPHS

    assert default_method("Cora") == "grace" and default_config("Cora") == GRACE_PUBLISHED["Cora"]
    assert default_method("chameleon") == OTHER_GRAPHS_METHOD
    assert default_config("chameleon") == OTHER_GRAPHS
    # a named method keeps its own configuration; GRACE's family its unpublished one
    assert default_config("chameleon", "grace") == GRACE_OTHER_GRAPHS
    assert default_config("Cora", "cca_ssg") == default_config("chameleon", "cca_ssg")
