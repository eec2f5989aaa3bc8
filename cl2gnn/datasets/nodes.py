"""Node-classification datasets: PyG's homophilous benchmarks, the heterophilous graphs of
Platonov et al. with their standard splits, any ``.npz`` file in their format, and an
embedded default that needs no download.

Every dataset is read from its raw files where they are (:mod:`cl2gnn._dataset_files` names
them): a data root (``--root``, else ``$CL2GNN_DATA/<family>``, e.g.
``$CL2GNN_DATA/planetoid/Cora/raw``) or, where none holds them, the cache
(``$CL2GNN_CACHE``, default ``~/.cache/cl2gnn``) they are downloaded into from PyG's
sources (the heterophilous graphs from Platonov et al.'s repository, where PyG's
``HeterophilousGraphDataset`` gets its files). Nothing is written beside a root's files,
nothing derived from them is kept, and no file runs code when read (:mod:`.pyg_raw`,
:mod:`.npz`).
"""

from __future__ import annotations

import os
from pathlib import Path

import torch
from torch import Tensor
from torch_geometric.data import Data

from .._dataset_files import (
    DATASETS,
    EMBEDDED_DATASET,
    HETEROPHILOUS,
    PYG_DATASETS,
    cache_root,
    canonical_name,
    data_root,
    raw_files,
)
from .._files import staging_folder
from ..distributed.launch import rank_zero_first
from ..graphs import knn_graph
from .npz import read_npz_graph
from .pyg_raw import read_pyg_dataset

__all__ = [
    "DATASETS",
    "EMBEDDED_DATASET",
    "HETEROPHILOUS",
    "PYG_DATASETS",
    "digits_knn_graph",
    "feature_knn_dataset",
    "heterophilous_graph",
    "load_node_dataset",
]


def load_node_dataset(name: str = EMBEDDED_DATASET, root: str | None = None) -> Data:
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
    canonical = canonical_name(name)
    if canonical is None:
        raise ValueError(
            f"unknown dataset {name!r}; choose from {', '.join(DATASETS)} or give a .npz path"
        )
    if canonical == EMBEDDED_DATASET:
        return digits_knn_graph()
    if canonical in HETEROPHILOUS:
        return heterophilous_graph(canonical, root)
    return rank_zero_first(lambda: read_pyg_dataset(canonical, root), f"preparing {canonical}")


def heterophilous_graph(name: str, root: str | None = None) -> Data:
    """One of :data:`HETEROPHILOUS` from ``<root>/<file>.npz`` (default
    root ``$CL2GNN_DATA/heterophilous``), else downloaded into the cache."""
    from torch_geometric.data import download_url
    from torch_geometric.datasets import HeterophilousGraphDataset

    local = data_root(name, root)
    (path,) = raw_files(name, local) if local is not None else [None]
    if path is None or not path.is_file():
        (path,) = raw_files(name, cache_root(name))

        def download() -> None:
            if path.is_file():
                return
            path.parent.mkdir(parents=True, exist_ok=True)
            with staging_folder(path.parent, path.name) as staging:
                try:
                    download_url(f"{HeterophilousGraphDataset.url}/{path.name}", str(staging))
                except OSError as error:
                    raise OSError(
                        f"{name}: no {path.name} under {local or 'the data root'} and the "
                        f"download failed ({error}); pass --root or set CL2GNN_DATA"
                    ) from error
                os.replace(staging / path.name, path)

        rank_zero_first(download, f"downloading {name}")
    return read_npz_graph(path, name)


def digits_knn_graph(k: int = 10) -> Data:
    """scikit-learn's 1,797 real 8×8 digit images as nodes of a union-symmetrised cosine
    kNN graph built with :func:`cl2gnn.graphs.knn_graph` (10 classes, 64 features)."""
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = torch.tensor(digits.data, dtype=torch.float32) / 16.0
    return feature_knn_dataset(x, torch.tensor(digits.target), EMBEDDED_DATASET, k)


def feature_knn_dataset(
    x: Tensor, y: Tensor, name: str, k: int = 10, metric: str = "cosine"
) -> Data:
    """Rows of ``x`` as nodes of a union-symmetrised kNN graph (a graph for data that has
    features and labels but no edges)."""
    edge_index = knn_graph(x, k=k, metric=metric, backend="torch", symmetrize="union")
    data = Data(x=x, edge_index=edge_index, y=y)
    data.name = name
    return data
