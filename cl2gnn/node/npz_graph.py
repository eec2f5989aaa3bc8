"""Graphs in the ``.npz`` format of Platonov et al. (ICLR 2023, "A critical look at the
evaluation of GNNs under heterophily"), the format of PyG's ``HeterophilousGraphDataset``:

* ``node_features`` ``[N, F]`` (finite numbers), ``node_labels`` ``[N]`` (integers
  ``0 … C-1``), ``edges`` ``[E, 2]`` (node pairs, read as undirected);
* ``train_masks``, ``val_masks``, ``test_masks`` ``[S, N]`` booleans (or ``0/1``): ``S``
  splits, in each of which a node is in at most one of the three sets (a single split may
  be given as ``[N]``).

Any file with these keys loads, so a user's own graph runs like the shipped ones; a file
that breaks the format raises ``ValueError`` naming the file and the problem.
"""

from __future__ import annotations

import zipfile
import zlib
from pathlib import Path

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

KEYS = ("node_features", "node_labels", "edges", "train_masks", "val_masks", "test_masks")
MASKS = ("train_masks", "val_masks", "test_masks")


def _split_masks(raw, path: Path, num_nodes: int) -> list[np.ndarray]:
    masks = []
    for key in MASKS:
        mask = np.atleast_2d(raw[key])
        if mask.ndim != 2 or mask.shape[1] != num_nodes:
            raise ValueError(
                f"{path}: {key} must have shape [splits, {num_nodes}] (one row per split, "
                f"one column per node), got {list(raw[key].shape)}"
            )
        if mask.dtype != np.bool_:
            if not np.isin(mask, (0, 1)).all():
                raise ValueError(f"{path}: {key} must be boolean (or 0/1)")
            mask = mask.astype(bool)
        masks.append(mask)
    if len({m.shape[0] for m in masks}) != 1:
        shapes = ", ".join(f"{k} {list(m.shape)}" for k, m in zip(MASKS, masks, strict=True))
        raise ValueError(f"{path}: the three masks must hold the same number of splits ({shapes})")
    train, val, test = masks
    for split in range(train.shape[0]):
        if (train[split] & test[split]).any() or (val[split] & (train[split] | test[split])).any():
            raise ValueError(f"{path}: split {split} puts a node in two of train/val/test")
        for key, mask in zip(MASKS, masks, strict=True):
            if not mask[split].any():
                raise ValueError(f"{path}: split {split} has no node in {key}")
    return masks


def read_npz_graph(path: str | Path, name: str | None = None) -> Data:
    """A PyG ``Data`` (``x``, undirected ``edge_index``, ``y``; ``train_mask``,
    ``val_mask``, ``test_mask`` of shape ``[N, S]``, one column per split, as PyG's
    heterophilous datasets hold them) from a file in the format above; ``name`` defaults to
    the file's name (``graph.npz``: never a published dataset's name, so a user's file gets
    the defaults for graphs without a published configuration)."""
    path = Path(path)
    try:
        raw = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
        raise ValueError(f"{path}: not a readable .npz file ({error})") from error
    with raw:
        missing = [key for key in KEYS if key not in raw.files]
        if missing:
            raise ValueError(
                f"{path}: missing key(s) {', '.join(missing)}; needs {', '.join(KEYS)}"
            )
        try:  # a damaged member fails only when it is read
            arrays = {key: raw[key] for key in KEYS}
        except (OSError, ValueError, zipfile.BadZipFile, EOFError, zlib.error) as error:
            raise ValueError(f"{path}: a member cannot be read ({error})") from error
        x, y, edges = arrays["node_features"], arrays["node_labels"], arrays["edges"]
        if x.ndim != 2 or not np.issubdtype(x.dtype, np.number):
            raise ValueError(f"{path}: node_features must be a numeric [N, F] array")
        if not np.isfinite(x).all():
            raise ValueError(f"{path}: node_features has NaN or infinite values")
        n = x.shape[0]
        if y.shape != (n,) or not np.issubdtype(y.dtype, np.integer):
            raise ValueError(
                f"{path}: node_labels must be {n} integers, got {y.dtype} {list(y.shape)}"
            )
        if n == 0 or y.min() < 0:
            raise ValueError(f"{path}: node_labels out of range: labels must be 0 … C-1")
        if np.unique(y).size < 2:
            raise ValueError(f"{path}: node_labels hold a single class; a probe needs two")
        if edges.ndim != 2 or edges.shape[1] != 2 or not np.issubdtype(edges.dtype, np.integer):
            raise ValueError(
                f"{path}: edges must be integer node pairs [E, 2], got {list(edges.shape)}"
            )
        if edges.size and (edges.min() < 0 or edges.max() >= n):
            raise ValueError(f"{path}: edges name nodes outside 0 … {n - 1}")
        train, val, test = _split_masks(arrays, path, n)
    edge_index = to_undirected(torch.from_numpy(edges.astype(np.int64)).t(), num_nodes=n)
    data = Data(
        x=torch.from_numpy(x.astype(np.float32)),
        edge_index=edge_index,
        y=torch.from_numpy(y.astype(np.int64)),
        train_mask=torch.from_numpy(train).t().contiguous(),
        val_mask=torch.from_numpy(val).t().contiguous(),
        test_mask=torch.from_numpy(test).t().contiguous(),
    )
    data.name = name or path.name
    return data
