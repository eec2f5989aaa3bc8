"""PyG's benchmark graphs read from their raw files in place, without running code and
without PyG's ``processed/`` cache (whose loader falls back to a full unpickling when a
weights-only load fails, and which PyG reuses whatever root the files came from): the
Planetoid files (Cora, CiteSeer, PubMed: pickles, read by :mod:`.pickles`), the
gnn-benchmark ``.npz`` files (Amazon, Coauthor: read with ``allow_pickle=False``, their
sizes checked as :mod:`.npz` checks them, then PyG's own ``parse_npz``) and WikiCS's JSON.
Each gives the ``Data`` PyG's dataset class gives on the same files, tensor for tensor
(tests/datasets/test_pyg_raw.py); a file that breaks its format raises ``ValueError``
naming it. Files a root lacks are downloaded from PyG's sources into the cache, whole or
not at all."""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data

from .._dataset_files import PYG_LAYOUTS, cache_root, data_root, raw_files
from .._files import staging_folder
from .npz import check_declared_sizes, check_inflated_sizes, inflation_limit
from .pickles import ArrayRecord, adjacency, array, read_pickle, sparse_rows

# the public split's validation nodes follow the training nodes (PyG's Planetoid)
PLANETOID_VALIDATION = 500
GNN_BENCHMARK_KEYS = (
    "attr_data",
    "attr_indices",
    "attr_indptr",
    "attr_shape",
    "adj_data",
    "adj_indices",
    "adj_indptr",
    "adj_shape",
    "labels",
)
# where PyG downloads each family's files from: its dataset classes' ``url``
SOURCES = {"planetoid": "Planetoid", "amazon": "Amazon", "coauthor": "Coauthor", "wikics": "WikiCS"}


def read_pyg_dataset(canonical: str, root: str | os.PathLike | None) -> Data:
    """The dataset ``canonical`` (one of :data:`~cl2gnn._dataset_files.PYG_LAYOUTS`) from its
    raw files in its data root (``root``, else ``$CL2GNN_DATA/<family>``), else from the
    cache (downloaded there first if missing). A root that holds some of the files but not
    all is refused, naming the first it lacks."""
    local = data_root(canonical, root)
    files = raw_files(canonical, local) if local is not None else []
    present = [path.is_file() for path in files]
    if files and any(present) and not all(present):
        missing = files[present.index(False)]
        raise ValueError(f"{missing}: missing beside the other raw files of {canonical}")
    if not files or not all(present):
        files = raw_files(canonical, cache_root(canonical))
        _download(canonical, files, local)
    family = PYG_LAYOUTS[canonical].family
    if family == "planetoid":
        data = read_planetoid(files[0].parent, canonical)
    elif family == "wikics":
        data = read_wikics(files[0])
    else:
        data = read_gnn_benchmark(files[0])
    data.name = canonical
    return data


def _download(canonical: str, files: list[Path], local: Path | None) -> None:
    """The ``files`` the cache lacks, from PyG's source, each moved into place whole."""
    import torch_geometric.datasets as pyg_datasets
    from torch_geometric.data import download_url

    url = getattr(pyg_datasets, SOURCES[PYG_LAYOUTS[canonical].family]).url.rstrip("/")
    for path in files:
        if path.is_file():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        with staging_folder(path.parent, path.name) as staging:
            try:
                download_url(f"{url}/{path.name}", str(staging), log=False)
            except OSError as error:
                raise OSError(
                    f"{canonical}: no raw files under {local or 'the data root'} and the "
                    f"download failed ({error}); pass --root or set CL2GNN_DATA"
                ) from error
            os.replace(staging / path.name, path)


def read_planetoid(folder: Path, name: str) -> Data:
    """Cora, CiteSeer or PubMed (``name``) from ``folder``'s ``ind.<name>.*`` files, as
    PyG's ``read_planetoid_data`` assembles them: the features of the training, other and
    test nodes stacked, the test nodes put at their indices, one-hot labels to classes, the
    public split's masks, the adjacency lists as edges without self-loops or duplicates."""
    from torch_geometric.io import read_txt_array
    from torch_geometric.io.planetoid import edge_index_from_dict
    from torch_geometric.utils import index_to_mask

    path = {key: folder / f"ind.{name.lower()}.{key}" for key in ("x", "tx", "allx", "y", "ty")}
    path |= {key: folder / f"ind.{name.lower()}.{key}" for key in ("ally", "graph", "test.index")}
    limit = inflation_limit()
    x, tx, allx, y, ty, ally = (
        _rows(read_pickle(path[key]), path[key], limit)
        for key in ("x", "tx", "allx", "y", "ty", "ally")
    )
    graph = read_pickle(path["graph"])
    try:
        test_index = read_txt_array(str(path["test.index"]), dtype=torch.long)
    except Exception as error:  # text that is not integers fails in many ways
        reason = " ".join(str(error).split())[:200] or type(error).__name__
        raise ValueError(f"{path['test.index']}: not a list of node ids ({reason})") from None
    _check_planetoid_shapes(path, x, tx, allx, y, ty, ally, test_index)
    sorted_test_index = test_index.sort()[0]
    low, high = int(sorted_test_index[0]), int(sorted_test_index[-1])
    if name.lower() == "citeseer":  # isolated test nodes: zero rows at their indices
        span = high - low + 1
        if low < 0 or not isinstance(graph, dict) or span > len(graph):
            raise ValueError(
                f"{path['test.index']}: test nodes {low} … {high} span more nodes than the "
                f"graph's {len(graph) if isinstance(graph, dict) else 0}"
            )
        tx_all = torch.zeros(span, tx.size(1), dtype=tx.dtype)
        tx_all[sorted_test_index - low] = tx
        ty_all = torch.zeros(span, ty.size(1), dtype=ty.dtype)
        ty_all[sorted_test_index - low] = ty
        tx, ty = tx_all, ty_all
    num_nodes = allx.size(0) + tx.size(0)
    if low < 0 or high >= num_nodes:
        raise ValueError(
            f"{path['test.index']}: names node {low if low < 0 else high}, but the graph has "
            f"{num_nodes} nodes"
        )
    if y.size(0) + PLANETOID_VALIDATION > num_nodes:
        raise ValueError(
            f"{path['y']}: {y.size(0)} training nodes leave no {PLANETOID_VALIDATION} "
            f"validation nodes among the {num_nodes}"
        )
    graph = adjacency(graph, path["graph"], num_nodes)
    if not any(graph.values()):
        raise ValueError(f"{path['graph']}: the graph has no edges")
    features = torch.cat([allx, tx], dim=0)
    features[test_index] = features[sorted_test_index]
    labels = torch.cat([ally, ty], dim=0).max(dim=1)[1]
    labels[test_index] = labels[sorted_test_index]
    data = Data(
        x=features,
        edge_index=edge_index_from_dict(graph, num_nodes=num_nodes),
        y=labels,
    )
    data.train_mask = index_to_mask(torch.arange(y.size(0)), size=num_nodes)
    validation = torch.arange(y.size(0), y.size(0) + PLANETOID_VALIDATION)
    data.val_mask = index_to_mask(validation, size=num_nodes)
    data.test_mask = index_to_mask(test_index, size=num_nodes)
    return data


def _rows(value: object, path: Path, limit: int) -> Tensor:
    """A Planetoid matrix (a CSR matrix or an array, ``[rows, columns]``) as float32 rows,
    as PyG reads it (dense, then ``torch.float``)."""
    if isinstance(value, ArrayRecord):
        rows = array(value, path, "the matrix")
    else:
        rows = sparse_rows(value, path, "the matrix", limit)
    if rows.ndim != 2:
        raise ValueError(f"{path}: must hold a [rows, columns] matrix, got {list(rows.shape)}")
    return torch.from_numpy(rows).to(torch.float)


def _check_planetoid_shapes(path, x, tx, allx, y, ty, ally, test_index) -> None:
    """The files' matrices fit together: one feature width, one label width, each label
    matrix as long as its features, the training nodes among all, one test id per test row."""
    for key, matrix, width in (("tx", tx, x.size(1)), ("allx", allx, x.size(1))):
        if matrix.size(1) != width:
            raise ValueError(f"{path[key]}: {matrix.size(1)} features, ind.*.x has {width}")
    for key, matrix, rows in (("y", y, x), ("ty", ty, tx), ("ally", ally, allx)):
        if matrix.size(1) != y.size(1) or matrix.size(0) != rows.size(0) or matrix.size(1) < 1:
            raise ValueError(
                f"{path[key]}: {list(matrix.shape)} labels do not fit {rows.size(0)} rows of "
                f"one-hot labels {y.size(1)} wide"
            )
    if x.size(0) > allx.size(0):
        raise ValueError(f"{path['x']}: {x.size(0)} training rows, more than allx's")
    if test_index.dim() != 1 or test_index.numel() != tx.size(0) or tx.size(0) == 0:
        raise ValueError(
            f"{path['test.index']}: {test_index.numel()} test ids for {tx.size(0)} test rows"
        )


def read_gnn_benchmark(path: Path) -> Data:
    """An Amazon or Coauthor graph from its gnn-benchmark ``.npz`` (CSR attributes and
    adjacency, labels), as PyG's ``read_npz(path, to_undirected=True)`` reads it; its
    compressed members and the dense attributes bounded as :mod:`.npz` bounds a graph's."""
    import scipy.sparse as sp
    from torch_geometric.io.npz import parse_npz

    limit = inflation_limit()
    try:
        raw = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
        raise ValueError(f"{path}: not a readable .npz file ({error})") from error
    if not isinstance(raw, np.lib.npyio.NpzFile):
        raise ValueError(f"{path}: not a .npz archive")
    with raw:
        missing = [key for key in GNN_BENCHMARK_KEYS if key not in raw.files]
        if missing:
            raise ValueError(f"{path}: missing key(s) {', '.join(missing)}")
        check_inflated_sizes(raw.zip, path, limit, GNN_BENCHMARK_KEYS)
        try:
            check_declared_sizes(raw.zip, GNN_BENCHMARK_KEYS)
            arrays = {key: raw[key] for key in GNN_BENCHMARK_KEYS}
        except (OSError, ValueError, zipfile.BadZipFile, EOFError, zlib.error) as error:
            raise ValueError(f"{path}: a member cannot be read ({error})") from error
    try:
        shapes = {}
        for part in ("attr", "adj"):
            shapes[part] = tuple(int(n) for n in arrays[f"{part}_shape"])
            matrix = sp.csr_matrix(
                (arrays[f"{part}_data"], arrays[f"{part}_indices"], arrays[f"{part}_indptr"]),
                shape=shapes[part],
            )
            matrix.check_format(full_check=True)  # every index in range: todense trusts them
        rows, columns = shapes["attr"]
        dense = rows * columns * max(arrays["attr_data"].dtype.itemsize, 4)
        if dense > limit:
            raise ValueError(f"the attributes are {dense:,} bytes dense, past {limit:,}")
        if shapes["adj"] != (rows, rows) or arrays["labels"].shape != (rows,):
            raise ValueError(f"an adjacency {shapes['adj']} and labels for {rows} nodes")
    except (ValueError, TypeError, OverflowError) as error:
        raise ValueError(f"{path}: not a gnn-benchmark graph ({error})") from None
    return parse_npz(arrays, to_undirected=True)


def read_wikics(path: Path) -> Data:
    """WikiCS from its ``data.json``, as PyG's ``WikiCS(root, is_undirected=True)`` builds
    it: features, labels, the links made undirected, the 20 training, validation and
    stopping splits and the test mask."""
    from torch_geometric.utils import to_undirected

    try:
        with open(path) as file:
            raw = json.load(file)
        x = torch.tensor(raw["features"], dtype=torch.float)
        y = torch.tensor(raw["labels"], dtype=torch.long)
        edges = [(i, j) for i, targets in enumerate(raw["links"]) for j in targets]
        edge_index = torch.tensor(edges, dtype=torch.long).t().contiguous()
        masks = {
            key: torch.tensor(raw[key], dtype=torch.bool)
            for key in ("train_masks", "val_masks", "stopping_masks", "test_mask")
        }
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({error.strerror or error})") from None
    except Exception as error:  # JSON of another shape fails in many ways
        reason = " ".join(str(error).split())[:200] or type(error).__name__
        raise ValueError(f"{path}: not WikiCS's data.json ({reason})") from None
    n = x.size(0)
    if x.dim() != 2 or y.shape != (n,) or len(raw["links"]) != n:
        raise ValueError(f"{path}: features {list(x.shape)}, labels {list(y.shape)} disagree")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= n):
        raise ValueError(f"{path}: a link names a node outside 0 … {n - 1}")
    for key, mask in masks.items():
        if mask.size(-1) != n or mask.dim() != (1 if key == "test_mask" else 2):
            raise ValueError(f"{path}: {key} {list(mask.shape)} for {n} nodes")
    return Data(
        x=x,
        y=y,
        edge_index=to_undirected(edge_index, num_nodes=n),
        train_mask=masks["train_masks"].t().contiguous(),
        val_mask=masks["val_masks"].t().contiguous(),
        test_mask=masks["test_mask"],
        stopping_mask=masks["stopping_masks"].t().contiguous(),
    )
