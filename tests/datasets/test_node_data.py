"""Heterophilous graphs and user .npz files: loading and format checks, in the library and
at the command line. (What the node experiment does with them, the ``splits`` protocol,
ROC-AUC for two classes and the baselines: tests/node/test_evaluation.py.)"""

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from cl2gnn.cli.main import main
from cl2gnn.datasets.nodes import HETEROPHILOUS
from cl2gnn.node import (
    load_node_dataset,
)
from cl2gnn.node.evaluation.probes import default_protocol, metric_for

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
