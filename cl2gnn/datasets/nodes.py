"""Node-classification datasets: PyG's homophilous benchmarks, the heterophilous graphs of
Platonov et al. with their standard splits, any ``.npz`` file in their format, and an
embedded default that needs no download.

A dataset root may hold PyG's raw files (e.g. ``$CL2GNN_DATA/planetoid/Cora/raw``). PyG
writes ``processed/`` beside ``raw/``, so the raw files are first copied into a cache
(``$CL2GNN_CACHE``, default ``~/.cache/cl2gnn``): a shared or read-only data root is never
written to. Without local raw files PyG downloads into the cache. The heterophilous graphs
are read in place (``$CL2GNN_DATA/heterophilous/<name>.npz``) or downloaded into the cache
from Platonov et al.'s repository, where PyG's ``HeterophilousGraphDataset`` gets its files.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import torch
from torch import Tensor
from torch_geometric.data import Data

from .._files import cache_dir
from ..distributed.launch import rank_zero_first
from ..graphs import knn_graph
from .npz import read_npz_graph

EMBEDDED = "digits-knn"  # scikit-learn's digits as a kNN graph: needs no download
PYG_DATASETS = ("Cora", "CiteSeer", "PubMed", "Computers", "Photo", "CS", "Physics", "WikiCS")
HETEROPHILOUS = (
    "actor",
    "chameleon",
    "chameleon-filtered",
    "cornell",
    "texas",
    "wisconsin",
    "minesweeper",
)
DATASETS = (EMBEDDED, *PYG_DATASETS, *HETEROPHILOUS)


# name -> (PyG class, root sub-folder under CL2GNN_DATA, folder of the raw files in a root)
_PYG = {
    "Cora": ("Planetoid", "planetoid", "Cora"),
    "CiteSeer": ("Planetoid", "planetoid", "CiteSeer"),
    "PubMed": ("Planetoid", "planetoid", "PubMed"),
    "Computers": ("Amazon", "amazon", "Computers"),
    "Photo": ("Amazon", "amazon", "Photo"),
    "CS": ("Coauthor", "coauthor", "CS"),
    "Physics": ("Coauthor", "coauthor", "Physics"),
    "WikiCS": ("WikiCS", "wikics", "."),
}


def load_node_dataset(name: str = EMBEDDED, root: str | None = None) -> Data:
    """A PyG ``Data`` with ``x``, ``edge_index``, ``y`` (and Planetoid's public masks, or a
    heterophilous graph's splits as ``[N, splits]`` masks).

    Args:
        name: one of :data:`DATASETS` (case-insensitive; ``_`` for ``-`` accepted), or the
            path of a ``.npz`` file in Platonov et al.'s format (see :mod:`.npz`).
        root: a folder holding the dataset (``<root>/<Name>/raw``, WikiCS: ``<root>/raw``,
            heterophilous graphs: ``<root>/<name>.npz``); default
            ``$CL2GNN_DATA/<planetoid|amazon|coauthor|wikics|heterophilous>``, else download.
    """
    if name.endswith(".npz"):
        if not Path(name).is_file():
            raise ValueError(f"dataset file {name} does not exist")
        return read_npz_graph(name)
    canonical = {n.lower(): n for n in DATASETS}.get(name.lower().replace("_", "-"))
    if canonical is None:
        raise ValueError(
            f"unknown dataset {name!r}; choose from {', '.join(DATASETS)} or give a .npz path"
        )
    if canonical == EMBEDDED:
        return digits_knn_graph()
    if canonical in HETEROPHILOUS:
        return heterophilous_graph(canonical, root)
    return rank_zero_first(lambda: _pyg_dataset(canonical, root), f"preparing {canonical}")


def _pyg_dataset(canonical: str, root: str | None) -> Data:
    import torch_geometric.datasets as pyg_datasets

    cls_name, sub, folder = _PYG[canonical]
    if root is None and os.environ.get("CL2GNN_DATA"):
        root = str(Path(os.environ["CL2GNN_DATA"]) / sub)
    staged = cache_dir() / sub
    source = Path(root) / folder / "raw" if root else None
    target = staged / folder / "raw"
    if source is not None and source.is_dir() and not target.is_dir():
        shutil.copytree(source, target)
    cls = getattr(pyg_datasets, cls_name)
    try:
        if cls_name == "WikiCS":
            dataset = cls(str(staged), is_undirected=True)
        else:
            dataset = cls(str(staged), canonical)
    except OSError as error:  # no local raw files and no way to download them
        raise OSError(
            f"{canonical}: no raw files under {source or 'the data root'} and the download "
            f"failed ({error}); pass --root or set CL2GNN_DATA"
        ) from error
    data = dataset[0]
    data.name = canonical
    return data


def heterophilous_graph(name: str, root: str | None = None) -> Data:
    """One of :data:`HETEROPHILOUS` from ``<root>/<file>.npz`` (default
    root ``$CL2GNN_DATA/heterophilous``), else downloaded into the cache."""
    from torch_geometric.data import download_url
    from torch_geometric.datasets import HeterophilousGraphDataset

    filename = name.replace("-", "_") + ".npz"
    if root is None and os.environ.get("CL2GNN_DATA"):
        root = str(Path(os.environ["CL2GNN_DATA"]) / "heterophilous")
    path = Path(root) / filename if root else None
    if path is None or not path.is_file():
        path = cache_dir() / "heterophilous" / filename

        def download() -> None:
            if path.is_file():
                return
            try:
                download_url(f"{HeterophilousGraphDataset.url}/{filename}", str(path.parent))
            except OSError as error:
                raise OSError(
                    f"{name}: no {filename} under {root or 'the data root'} and the download "
                    f"failed ({error}); pass --root or set CL2GNN_DATA"
                ) from error

        rank_zero_first(download, f"downloading {name}")
    return read_npz_graph(path, name)


def digits_knn_graph(k: int = 10) -> Data:
    """scikit-learn's 1,797 real 8×8 digit images as nodes of a union-symmetrised cosine
    kNN graph built with :func:`cl2gnn.graphs.knn_graph` (10 classes, 64 features)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    return feature_knn_dataset(x, torch.tensor(digits.target), EMBEDDED, k)


def feature_knn_dataset(
    x: Tensor, y: Tensor, name: str, k: int = 10, metric: str = "cosine"
) -> Data:
    """Rows of ``x`` as nodes of a union-symmetrised kNN graph (a graph for data that has
    features and labels but no edges)."""
    edge_index = knn_graph(x, k=k, metric=metric, backend="torch", symmetrize="union")
    data = Data(x=x, edge_index=edge_index, y=y)
    data.name = name
    return data
