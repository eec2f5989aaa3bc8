"""PyG's benchmark graphs read from their raw files without running code
(cl2gnn/datasets/pyg_raw.py, cl2gnn/datasets/pickles.py): the same ``Data`` as PyG's own
dataset classes on the same files, tensor for tensor (Cora's real files; a CiteSeer with
isolated test nodes, an Amazon graph and WikiCS made here in their formats), the restricted
reader admitting the names the Planetoid files hold and nothing else, and nothing written
beside a root's files. (Crafted files, one per finding of issue 64:
tests/reliability/_cases_files.py.)"""

import json
import os
import pickle
import pickletools
import shutil
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from cl2gnn.datasets import load_node_dataset
from cl2gnn.datasets.pickles import ADMITTED, read_pickle
from cl2gnn.datasets.pyg_raw import read_gnn_benchmark, read_planetoid, read_wikics

DATA = os.environ.get("CL2GNN_DATA")
CORA = Path(DATA or "/nonexistent") / "planetoid" / "Cora" / "raw"
needs_cora = pytest.mark.skipif(not CORA.is_dir(), reason="needs $CL2GNN_DATA/planetoid/Cora")


def same_data(ours, theirs) -> None:
    """Every tensor PyG's ``Data`` holds, equal in type, shape and value."""
    assert set(theirs.keys()) <= set(ours.keys())
    for key in theirs.keys():
        a, b = ours[key], theirs[key]
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), key


@needs_cora
def test_cora_reads_as_pygs_planetoid_tensor_for_tensor(tmp_path):
    from torch_geometric.datasets import Planetoid

    shutil.copytree(CORA, tmp_path / "Cora" / "raw")
    same_data(load_node_dataset("Cora", str(CORA.parents[1])), Planetoid(str(tmp_path), "Cora")[0])


@needs_cora
def test_every_name_the_cora_files_hold_is_admitted_and_no_other_is():
    names = set()
    for path in CORA.glob("ind.cora.*"):
        if path.name.endswith("test.index"):
            continue
        ops = pickletools.genops(path.read_bytes())
        names |= {tuple(arg.split(" ")) for op, arg, _ in ops if op.name == "GLOBAL"}
    # the shipped files use the older modules' names; the newer ones are their aliases
    assert names <= set(ADMITTED)
    aliases = {("numpy._core.multiarray", "_reconstruct"), ("scipy.sparse._csr", "csr_matrix")}
    assert set(ADMITTED) - names <= aliases | {("builtins", "list")}


def planetoid_files(root: Path, name: str, rng: np.random.Generator, gaps: bool = False) -> None:
    """A small Planetoid graph in PyG's raw format (pickles of CSR features and one-hot
    labels, an adjacency dict, the test ids as text), its test ids out of order, with gaps
    where ``gaps`` (CiteSeer's isolated test nodes)."""
    n_train, n_all, features, classes = 8, 520, 12, 3
    offsets = [5, 0, 2, 3, 7] if gaps else [3, 0, 4, 1, 2]  # with gaps: 1, 4, 6 missing
    test_ids = n_all + np.array(offsets)
    n = n_all + max(offsets) + 1

    def features_of(rows):
        return sp.csr_matrix((rng.random((rows, features)) < 0.3).astype(np.float32))

    def labels_of(rows):
        return np.eye(classes, dtype=np.int64)[rng.integers(0, classes, rows)]

    graph = defaultdict(list)
    for node in range(n):
        graph[node] = sorted({int(v) for v in rng.integers(0, n, 3)} | {(node + 1) % n})
    raw = root / name / "raw"
    raw.mkdir(parents=True)
    arrays = {
        "x": features_of(n_train),
        "tx": features_of(len(test_ids)),
        "allx": features_of(n_all),
        "y": labels_of(n_train),
        "ty": labels_of(len(test_ids)),
        "ally": labels_of(n_all),
        "graph": graph,
    }
    for key, value in arrays.items():
        (raw / f"ind.{name.lower()}.{key}").write_bytes(pickle.dumps(value, protocol=4))
    (raw / f"ind.{name.lower()}.test.index").write_text("\n".join(map(str, test_ids)) + "\n")


def test_a_citeseer_with_isolated_test_nodes_reads_as_pygs(tmp_path):
    from torch_geometric.datasets import Planetoid

    planetoid_files(tmp_path / "ours", "CiteSeer", np.random.default_rng(0), gaps=True)
    shutil.copytree(tmp_path / "ours", tmp_path / "theirs")
    ours = read_planetoid(tmp_path / "ours" / "CiteSeer" / "raw", "CiteSeer")
    same_data(ours, Planetoid(str(tmp_path / "theirs"), "CiteSeer")[0])
    assert ours.num_nodes == 528 and not ours.x[521].any()  # an isolated test node: zeros


def gnn_benchmark_file(path: Path, rng: np.random.Generator, n: int = 30) -> None:
    attributes = sp.csr_matrix((rng.random((n, 7)) < 0.3) * rng.random((n, 7)))
    adjacency = sp.csr_matrix(rng.random((n, n)) < 0.1)
    np.savez(
        path,
        attr_data=attributes.data,
        attr_indices=attributes.indices,
        attr_indptr=attributes.indptr,
        attr_shape=attributes.shape,
        adj_data=adjacency.data,
        adj_indices=adjacency.indices,
        adj_indptr=adjacency.indptr,
        adj_shape=adjacency.shape,
        labels=rng.integers(0, 4, n),
    )


def test_an_amazon_npz_reads_as_pygs(tmp_path):
    from torch_geometric.datasets import Amazon

    raw = tmp_path / "Photo" / "raw"
    raw.mkdir(parents=True)
    gnn_benchmark_file(raw / "amazon_electronics_photo.npz", np.random.default_rng(1))
    ours = read_gnn_benchmark(raw / "amazon_electronics_photo.npz")
    same_data(ours, Amazon(str(tmp_path), "Photo")[0])


def test_wikics_json_reads_as_pygs(tmp_path):
    from torch_geometric.datasets import WikiCS

    rng, n = np.random.default_rng(2), 25
    raw = {
        "features": rng.random((n, 5)).round(3).tolist(),
        "labels": rng.integers(0, 3, n).tolist(),
        "links": [sorted({int(v) for v in rng.integers(0, n, 3)}) for _ in range(n)],
        "train_masks": (rng.random((4, n)) < 0.5).tolist(),
        "val_masks": (rng.random((4, n)) < 0.3).tolist(),
        "stopping_masks": (rng.random((4, n)) < 0.3).tolist(),
        "test_mask": (rng.random(n) < 0.4).tolist(),
    }
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw" / "data.json").write_text(json.dumps(raw))
    ours = read_wikics(tmp_path / "raw" / "data.json")
    same_data(ours, WikiCS(str(tmp_path), is_undirected=True)[0])


def test_a_root_is_read_in_place_and_nothing_is_written_beside_it(tmp_path, monkeypatch):
    planetoid_files(tmp_path / "root", "PubMed", np.random.default_rng(3))
    monkeypatch.setenv("CL2GNN_CACHE", str(tmp_path / "cache"))
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    data = load_node_dataset("pubmed", str(tmp_path / "root"))
    assert data.name == "PubMed" and data.num_nodes == 525
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before


def test_a_root_lacking_one_raw_file_is_refused_naming_it(tmp_path):
    planetoid_files(tmp_path, "Cora", np.random.default_rng(4))
    (tmp_path / "Cora" / "raw" / "ind.cora.ty").unlink()
    with pytest.raises(ValueError, match=r"ind\.cora\.ty: missing beside the other raw files"):
        load_node_dataset("Cora", str(tmp_path))


class Marker:
    """Unpickling this would create ``path``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return open, (str(self.path), "w")


@pytest.mark.parametrize(
    "value",
    [
        lambda marker: Marker(marker),  # a callable of the standard library
        lambda marker: {"features": [Marker(marker)]},  # nested in a plain container
        lambda marker: np.array([1, "a"], dtype=object),  # an object array
    ],
    ids=["callable", "nested callable", "object array"],
)
def test_the_restricted_reader_refuses_what_the_format_never_holds(tmp_path, value):
    marker, path = tmp_path / "ran", tmp_path / "ind.cora.x"
    path.write_bytes(pickle.dumps(value(marker), protocol=4))
    with pytest.raises(ValueError, match=f"^{path}: refused: "):
        read_pickle(path)
    assert not marker.exists()
