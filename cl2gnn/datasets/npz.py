"""Graphs in the ``.npz`` format of Platonov et al. (ICLR 2023, "A critical look at the
evaluation of GNNs under heterophily"), the format of PyG's ``HeterophilousGraphDataset``:

* ``node_features`` ``[N, F]`` (finite numbers), ``node_labels`` ``[N]`` (integers
  ``0 … C-1``), ``edges`` ``[E, 2]`` (node pairs, read as undirected);
* ``train_masks``, ``val_masks``, ``test_masks`` ``[S, N]`` booleans (or ``0/1``): ``S``
  splits, in each of which a node is in at most one of the three sets (a single split may
  be given as ``[N]``).

Any file with these keys loads, so a user's own graph runs like the shipped ones; a file
that breaks the format raises ``ValueError`` naming the file and the problem, before
anything of a size the file declares is allocated: a member's ``.npy`` header is checked
against the bytes the member holds, and the compressed members may inflate to
:data:`MAX_INFLATED_BYTES` in all (1 GiB; ``$CL2GNN_NPZ_MAX_INFLATED_BYTES`` or
``max_inflated_bytes=`` raise it for a larger graph), so that a file of a few megabytes
cannot make the reader allocate gigabytes (a stored member costs no more than the file's own
bytes).
:func:`write_npz` writes a PyG ``Data`` in the format, chunk by chunk (a generated graph of
ogbn-products' size included).
"""

from __future__ import annotations

import math
import os
import zipfile
import zlib
from pathlib import Path

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected

from .._checks import integer
from .._files import atomic_path

KEYS = ("node_features", "node_labels", "edges", "train_masks", "val_masks", "test_masks")
MASKS = ("train_masks", "val_masks", "test_masks")
# what the compressed members may inflate to, in all: 36x the largest graph shipped in the
# format (actor's 29 MB, 218 times its compressed size), where a 14 MB deflate "bomb" may
# declare 3 GB
MAX_INFLATED_BYTES = 1 << 30
LIMIT_VARIABLE = "CL2GNN_NPZ_MAX_INFLATED_BYTES"


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


def inflation_limit(max_inflated_bytes: int | None = None) -> int:
    """``max_inflated_bytes``, else ``$CL2GNN_NPZ_MAX_INFLATED_BYTES``, else
    :data:`MAX_INFLATED_BYTES`; ``ValueError`` naming the source unless a byte count >= 1."""
    source, value = "max_inflated_bytes", max_inflated_bytes
    if value is None and os.environ.get(LIMIT_VARIABLE):
        source, value = f"${LIMIT_VARIABLE}", os.environ[LIMIT_VARIABLE]
        try:
            value = int(value)
        except ValueError:
            raise ValueError(f"{source} must be a number of bytes, got {value!r}") from None
    if value is None:
        return MAX_INFLATED_BYTES
    integer(1)(value, source)
    return value


def check_inflated_sizes(
    archive: zipfile.ZipFile, path: Path, limit: int, keys: tuple[str, ...] = KEYS
) -> None:
    """The sizes the compressed members ``keys`` inflate to (as the archive states them:
    reading stops there) against ``limit``, before any is inflated."""
    read = {*keys, *(f"{key}.npy" for key in keys)}
    compressed = [
        i
        for i in archive.infolist()
        if i.filename in read and i.compress_type != zipfile.ZIP_STORED
    ]
    total = 0
    for info in sorted(compressed, key=lambda i: -i.file_size):
        total += info.file_size
        if total > limit:
            raise ValueError(
                f"{path}: {info.filename} inflates to {info.file_size:,} bytes from "
                f"{info.compress_size:,}"
                f", past the {limit:,} bytes the compressed members may inflate to in all; "
                f"set {LIMIT_VARIABLE} to read it"
            )


def check_declared_sizes(archive: zipfile.ZipFile, keys: tuple[str, ...] = KEYS) -> None:
    """Each member's ``.npy`` header against the bytes it holds, before NumPy allocates the
    shape the header declares (a header may declare 10¹⁸ elements in a file of a few
    bytes)."""
    for key in keys:
        name = f"{key}.npy" if f"{key}.npy" in archive.namelist() else key
        info = archive.getinfo(name)
        with archive.open(info) as member:
            version = np.lib.format.read_magic(member)
            read_header = (
                np.lib.format.read_array_header_1_0
                if version == (1, 0)
                else np.lib.format.read_array_header_2_0
            )
            shape, _, dtype = read_header(member)
            declared = math.prod(shape) * dtype.itemsize
            held = info.file_size - member.tell()
        if declared > held:
            raise ValueError(
                f"{key} declares shape {list(shape)} of {dtype} ({declared} bytes) but holds "
                f"{held} bytes"
            )


def read_npz_graph(
    path: str | Path, name: str | None = None, *, max_inflated_bytes: int | None = None
) -> Data:
    """A PyG ``Data`` (``x``, undirected ``edge_index``, ``y``; ``train_mask``,
    ``val_mask``, ``test_mask`` of shape ``[N, S]``, one column per split, as PyG's
    heterophilous datasets hold them) from a file in the format above; ``name`` defaults to
    the file's name (``graph.npz``: never a published dataset's name, so a user's file gets
    the defaults for graphs without a published configuration). ``max_inflated_bytes``:
    what the compressed members may inflate to in all (:func:`inflation_limit`)."""
    path = Path(path)
    limit = inflation_limit(max_inflated_bytes)
    try:
        raw = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as error:
        raise ValueError(f"{path}: not a readable .npz file ({error})") from error
    if not isinstance(raw, np.lib.npyio.NpzFile):  # np.load also reads a plain .npy
        raise ValueError(f"{path}: not a .npz archive (a single array, {raw.dtype} {raw.shape})")
    with raw:
        missing = [key for key in KEYS if key not in raw.files]
        if missing:
            raise ValueError(
                f"{path}: missing key(s) {', '.join(missing)}; needs {', '.join(KEYS)}"
            )
        check_inflated_sizes(raw.zip, path, limit)
        try:  # a damaged member fails only when it is read
            check_declared_sizes(raw.zip)
            arrays = {key: raw[key] for key in KEYS}
        except (OSError, ValueError, zipfile.BadZipFile, EOFError, zlib.error) as error:
            raise ValueError(f"{path}: a member cannot be read ({error})") from error
        x, y, edges = arrays["node_features"], arrays["node_labels"], arrays["edges"]
        if x.ndim != 2 or np.iscomplexobj(x) or not np.issubdtype(x.dtype, np.number):
            raise ValueError(
                f"{path}: node_features must be a real numeric [N, F] array, "
                f"got {x.dtype} {list(x.shape)}"
            )
        if x.shape[1] == 0:
            raise ValueError(f"{path}: node_features has zero feature columns")
        # checked after the cast: 1e300 is finite as float64, infinite as float32 (the
        # overflow is reported below, as one line, rather than as NumPy's warning)
        with np.errstate(over="ignore"):
            x = x.astype(np.float32, copy=False)
        if not np.isfinite(x).all():
            raise ValueError(
                f"{path}: node_features has NaN or infinite values (as float32, which "
                "holds magnitudes up to 3.4e38)"
            )
        n = x.shape[0]
        if y.shape != (n,) or not np.issubdtype(y.dtype, np.integer):
            raise ValueError(
                f"{path}: node_labels must be {n} integers, got {y.dtype} {list(y.shape)}"
            )
        if n == 0 or y.min() < 0 or y.max() >= n:  # C <= N: nothing sized by a label is large
            raise ValueError(
                f"{path}: node_labels out of range: labels must be 0 … C-1 with C at most the "
                f"{n} nodes, got values in {y.min() if n else '-'} … {y.max() if n else '-'}"
            )
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
        x=torch.from_numpy(x),
        edge_index=edge_index,
        y=torch.from_numpy(y.astype(np.int64)),
        train_mask=torch.from_numpy(train).t().contiguous(),
        val_mask=torch.from_numpy(val).t().contiguous(),
        test_mask=torch.from_numpy(test).t().contiguous(),
    )
    data.name = name or path.name
    return data


def write_npz(data: Data, path: str | Path, *, chunk_size: int = 1 << 22) -> None:
    """Write ``data`` in the ``.npz`` format of Platonov et al. that
    :func:`cl2gnn.node.npz_graph.read_npz_graph` and ``cl2gnn node --dataset PATH.npz``
    read: ``node_features``, ``node_labels``, ``edges`` ``[E, 2]`` (each undirected edge
    once, as ``(i, j)`` with ``i <= j``; int32 when the node ids fit) and ``train_masks``,
    ``val_masks``, ``test_masks`` ``[S, N]``.

    The edges are streamed ``chunk_size`` at a time, so that writing needs no copy of
    ``edge_index``; the file appears at ``path`` only once complete.

    Args:
        data (torch_geometric.data.Data): ``x``, ``y``, an undirected ``edge_index`` (both
            directions of every edge, as :func:`contextual_sbm` and PyG's
            ``to_undirected`` give) and ``train_mask``, ``val_mask``, ``test_mask``
            (``[N]`` for one split or ``[N, S]``).
        path (str or pathlib.Path): the file to write.
        chunk_size (int, optional): edges per write (default: ``2**22``).
    """
    integer(1)(chunk_size, "chunk_size")
    keys = ("x", "y", "edge_index", "train_mask", "val_mask", "test_mask")
    missing = [key for key in keys if data.get(key) is None]
    if missing:
        raise ValueError(f"data lacks {', '.join(missing)}; write_npz needs {', '.join(keys)}")
    row, col = data.edge_index.cpu()
    forward = backward = 0
    for start in range(0, row.numel(), chunk_size):
        r, c = row[start : start + chunk_size], col[start : start + chunk_size]
        forward += int((r < c).sum())
        backward += int((r > c).sum())
    if forward != backward:
        raise ValueError(
            "data.edge_index must hold both directions of every edge (the format stores "
            f"each once): it has {forward} edges i -> j with i < j and {backward} with i > j"
        )
    num_nodes = data.num_nodes
    dtype = np.dtype(np.int32 if num_nodes <= np.iinfo(np.int32).max else np.int64)
    header = {"descr": dtype.str, "fortran_order": False, "shape": (row.numel() - backward, 2)}
    with atomic_path(path) as temporary, zipfile.ZipFile(temporary, "w") as archive:
        _write_array(archive, "node_features", data.x)
        _write_array(archive, "node_labels", data.y)
        with archive.open("edges.npy", "w", force_zip64=True) as file:
            np.lib.format.write_array_header_1_0(file, header)
            for start in range(0, row.numel(), chunk_size):
                r, c = row[start : start + chunk_size], col[start : start + chunk_size]
                keep = r <= c
                pairs = torch.stack([r[keep], c[keep]], dim=1).numpy().astype(dtype)
                file.write(pairs.tobytes())
        for key in ("train", "val", "test"):
            mask = data[f"{key}_mask"]
            _write_array(archive, f"{key}_masks", mask.t() if mask.dim() == 2 else mask[None])


def _write_array(archive: zipfile.ZipFile, name: str, array: Tensor) -> None:
    with archive.open(f"{name}.npy", "w", force_zip64=True) as file:
        array = np.ascontiguousarray(array.detach().cpu().numpy())
        np.lib.format.write_array(file, array, allow_pickle=False)
