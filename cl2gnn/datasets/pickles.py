"""Python pickles read without running code: the Planetoid raw files (``ind.<name>.x``, …),
which PyG reads with ``pickle.load`` (a crafted file runs any code it names).

:func:`read_pickle` admits the names the format holds and no other: NumPy's arrays
(``numpy.ndarray``, ``numpy.dtype`` and ``_reconstruct``), SciPy's ``csr_matrix``, and
``collections.defaultdict`` of ``list``. Even these never run while a file loads: each stands
for an inert record (:class:`ArrayRecord`, :class:`DtypeRecord`, :class:`SparseRecord`)
that keeps the values the file gives, and :func:`array` and :func:`sparse_rows` build the
real objects afterwards, checked: a plain numeric type, a buffer of the shape's size, CSR
indices in range and a dense size within the limit (so that a small file cannot allocate
gigabytes, nor make SciPy's ``todense`` write out of bounds). Anything else is refused with
a ``ValueError`` naming the file.
"""

from __future__ import annotations

import math
import pickle
import re
from collections import defaultdict
from pathlib import Path

import numpy as np

# a plain number type: bool, (unsigned) integers and floats of a size NumPy knows
_NUMERIC = re.compile(r"[biuf]\d{1,2}")
_BYTE_ORDERS = ("<", ">", "|", "=")


class DtypeRecord:
    """Stands for ``numpy.dtype(spec, align, copy)``: the spec, checked to be a plain
    number type, and the byte order the file's state sets."""

    spec: str | None = None  # None: made without the spec (a crafted file)
    order = "="

    def __init__(self, spec: object, align: object = False, copy: object = True) -> None:
        if not isinstance(spec, str) or not _NUMERIC.fullmatch(spec):
            raise pickle.UnpicklingError(f"an array type {spec!r} that is not a plain number")
        self.spec = spec

    def __setstate__(self, state: object) -> None:
        # NumPy's state of a plain type: (3, order, None, None, None, -1, -1, 0)
        plain = isinstance(state, tuple) and len(state) == 8 and state[2:5] == (None,) * 3
        if not plain or state[1] not in _BYTE_ORDERS:
            raise pickle.UnpicklingError("an array type with fields or sub-arrays")
        self.order = state[1]

    def dtype(self) -> np.dtype:
        dtype = np.dtype(self.spec)
        return dtype.newbyteorder(self.order) if self.order in "<>" else dtype


class ArrayRecord:
    """Stands for a ``numpy.ndarray`` as NumPy pickles one (``_reconstruct`` of an empty
    array, then its state: version, shape, type, order, bytes)."""

    state: tuple | None = None

    def __setstate__(self, state: object) -> None:
        self.state = state


class SparseRecord:
    """Stands for ``scipy.sparse.csr_matrix``: the attributes the file sets, kept as they
    are (no SciPy code runs while the file loads)."""


class _ArrayType:
    """Stands for ``numpy.ndarray`` where ``_reconstruct`` names it; nothing else takes it."""


_ARRAY_TYPE = _ArrayType()


def _reconstruct(subtype: object, shape: object, code: object) -> ArrayRecord:
    """NumPy's ``_reconstruct`` as its pickles call it: an empty array to set the state of."""
    if subtype is not _ARRAY_TYPE or shape != (0,):
        raise pickle.UnpicklingError("an array built otherwise than NumPy pickles one")
    return ArrayRecord()


ADMITTED = {
    ("numpy", "ndarray"): _ARRAY_TYPE,
    ("numpy", "dtype"): DtypeRecord,
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("scipy.sparse.csr", "csr_matrix"): SparseRecord,
    ("scipy.sparse._csr", "csr_matrix"): SparseRecord,
    ("collections", "defaultdict"): defaultdict,
    ("__builtin__", "list"): list,
    ("builtins", "list"): list,
}


class Refused(pickle.UnpicklingError):
    """A name the file holds that :data:`ADMITTED` does not."""


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> object:
        try:
            return ADMITTED[module, name]
        except KeyError:
            raise Refused(f"{module}.{name}") from None


def read_pickle(path: Path) -> object:
    """The pickle at ``path`` (Python 2's strings read as Latin-1, as PyG reads them) with
    the names of :data:`ADMITTED` alone, as their records; ``ValueError`` naming the file
    otherwise."""
    try:
        with open(path, "rb") as file:
            return _Unpickler(file, encoding="latin1").load()
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({error.strerror or error})") from None
    except Refused as error:
        raise ValueError(
            f"{path}: refused: it names {error}, which the format never holds (loading it "
            "could run code)"
        ) from None
    except Exception as error:  # a damaged pickle fails in any of many ways
        reason = " ".join(str(error).split())[:200] or type(error).__name__
        raise ValueError(f"{path}: refused: not a file of the format ({reason})") from None


def array(value: object, path: Path, what: str) -> np.ndarray:
    """The array an :class:`ArrayRecord` stands for; ``ValueError`` naming ``path`` and
    ``what`` unless it is one with a plain number type and as many bytes as its shape."""
    state = value.state if isinstance(value, ArrayRecord) else None
    if not isinstance(state, tuple) or len(state) != 5:
        raise ValueError(f"{path}: {what} is not an array")
    _, shape, dtype, fortran, raw = state
    if not (isinstance(shape, tuple) and all(_count(n) for n in shape)):
        raise ValueError(f"{path}: {what} has the shape {shape!r}")
    plain = isinstance(dtype, DtypeRecord) and dtype.spec is not None
    if not plain or not isinstance(fortran, bool):
        raise ValueError(f"{path}: {what} is not an array of plain numbers")
    raw = raw.encode("latin1") if isinstance(raw, str) else raw  # Python 2's str
    dtype = dtype.dtype()
    if not isinstance(raw, bytes) or len(raw) != math.prod(shape) * dtype.itemsize:
        raise ValueError(f"{path}: {what} holds other than the {list(shape)} {dtype} it declares")
    flat = np.frombuffer(raw, dtype).copy()  # writable, as torch.from_numpy wants it
    return flat.reshape(shape, order="F" if fortran else "C")


def sparse_rows(value: object, path: Path, what: str, max_bytes: int) -> np.ndarray:
    """The dense float array a :class:`SparseRecord` (a CSR matrix) stands for, as SciPy's
    ``todense`` gives it; ``ValueError`` naming ``path`` and ``what`` unless its arrays
    make a CSR matrix whose indices are in range and whose dense form is at most
    ``max_bytes``."""
    import scipy.sparse as sp

    fields = value.__dict__ if isinstance(value, SparseRecord) else {}
    if not {"data", "indices", "indptr", "_shape"} <= set(fields):
        raise ValueError(f"{path}: {what} is not a CSR matrix")
    data, indices, indptr = (
        array(fields[k], path, f"{what}.{k}") for k in ("data", "indices", "indptr")
    )
    shape = fields["_shape"]
    if not (isinstance(shape, tuple) and len(shape) == 2 and all(_count(n) for n in shape)):
        raise ValueError(f"{path}: {what} has the shape {shape!r}")
    dense = math.prod(shape) * data.dtype.itemsize
    if dense > max_bytes:
        raise ValueError(
            f"{path}: {what} declares {shape[0]:,} x {shape[1]:,} entries ({dense:,} bytes "
            f"dense), past the {max_bytes:,} bytes a file may inflate to"
        )
    try:
        matrix = sp.csr_matrix((data, indices, indptr), shape=shape)
        matrix.check_format(full_check=True)  # every index in range: todense trusts them
    except (ValueError, TypeError) as error:
        raise ValueError(f"{path}: {what} is not a valid CSR matrix ({error})") from None
    return np.asarray(matrix.todense())


def adjacency(value: object, path: Path, num_nodes: int) -> dict[int, list[int]]:
    """A Planetoid graph: a mapping of node ids to lists of node ids, each in
    ``0 … num_nodes - 1``; ``ValueError`` naming ``path`` otherwise."""
    if not isinstance(value, dict):
        raise ValueError(f"{path}: not a mapping of nodes to their neighbors")
    for node, neighbors in value.items():
        if not _node(node, num_nodes) or not isinstance(neighbors, list):
            raise ValueError(f"{path}: node {node!r} is not one of the {num_nodes} nodes")
        for neighbor in neighbors:
            if not _node(neighbor, num_nodes):
                raise ValueError(
                    f"{path}: node {node} has the neighbor {neighbor!r}, not one of the "
                    f"{num_nodes} nodes (0 … {num_nodes - 1})"
                )
    return value


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _node(value: object, num_nodes: int) -> bool:
    return _count(value) and value < num_nodes
