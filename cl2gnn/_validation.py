"""Input checks shared by operators, losses and graph builders.

Every check raises ``ValueError`` with a message naming the argument, so that a wrong
shape or a NaN fails at the call site instead of deep inside a scatter. Checks that read
tensor values (finiteness, index range) force a device sync; they are skipped while
``torch.compile`` traces and can be switched off globally with :func:`set_validation`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import Tensor
from torch_geometric.utils import is_sparse, to_edge_index

_ENABLED = True


def set_validation(enabled: bool) -> None:
    """Turn the value-reading input checks on or off (shape checks always run)."""
    global _ENABLED
    _ENABLED = bool(enabled)


@contextmanager
def without_value_checks() -> Iterator[None]:
    """The value-reading checks off inside the block (the previous setting back after it):
    for the library's own loops over inputs it made or checked already, where each check
    would wait for the device."""
    enabled = _ENABLED
    set_validation(False)
    try:
        yield
    finally:
        set_validation(enabled)


def read_values() -> bool:
    """Whether the checks that read tensor values run (:func:`set_validation`, not while
    ``torch.compile`` traces)."""
    return _ENABLED and not torch.compiler.is_compiling()


def all_finite(x: Tensor) -> bool:
    """No NaN or inf in ``x``: min and max propagate both, in one pass without the
    ``N × d`` boolean temporary of ``isfinite(x).all()``."""
    if x.numel() == 0:
        return True
    lo, hi = torch.aminmax(x)
    return bool(torch.isfinite(lo) & torch.isfinite(hi))


def check_features(x: Tensor, name: str = "x", min_rows: int = 1) -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.dim() != 2:
        raise ValueError(f"{name} must be a 2-D [N, d] tensor, got shape {tuple(x.shape)}")
    if not x.is_floating_point():
        raise ValueError(f"{name} must be floating point, got {x.dtype}")
    if x.size(0) < min_rows:
        raise ValueError(f"{name} needs at least {min_rows} rows, got {x.size(0)}")
    if x.size(1) == 0:
        raise ValueError(f"{name} has zero feature columns")
    if read_values() and not all_finite(x):
        raise ValueError(f"{name} contains NaN or inf values")


def check_same_shape(a: Tensor, b: Tensor, names: tuple[str, str] = ("z1", "z2")) -> None:
    if a.shape != b.shape:
        raise ValueError(
            f"{names[0]} and {names[1]} must have the same shape, "
            f"got {tuple(a.shape)} and {tuple(b.shape)}"
        )


def check_normalized(x: Tensor, name: str = "x") -> None:
    """Raise if the rows of ``x`` are not unit vectors (a frequent user mistake)."""
    if not read_values():
        return
    tol = 1e-2 if x.dtype in (torch.float16, torch.bfloat16) else 1e-4
    norms = x.detach().float().norm(dim=-1)
    worst = float((norms - 1).abs().max()) if norms.numel() else 0.0
    if worst > tol:
        raise ValueError(
            f"{name} must be L2-normalised row-wise (max | ||row|| - 1 | = {worst:.3g}); "
            "apply torch.nn.functional.normalize(x, dim=-1) first"
        )


def as_edge_index(
    edge_index: Tensor,
    edge_weight: Tensor | None,
    num_nodes: int,
    allow_empty: bool = False,
    non_negative: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """Validate a graph and return it as a plain ``[2, E]`` ``(source, target)`` tensor;
    ``non_negative``: refuse negative edge weights (a degree normalisation needs them).

    A sparse adjacency (``torch.sparse`` or ``SparseTensor``) is read as PyG's ``adj_t``:
    entry ``[i, j]`` is the edge ``j -> i``; its values become the edge weights.
    """
    if is_sparse(edge_index):
        if edge_weight is not None:
            raise ValueError("pass edge weights as the values of the sparse adjacency")
        if tuple(edge_index.shape[:2]) != (num_nodes, num_nodes):
            raise ValueError(
                f"sparse adjacency must be [{num_nodes}, {num_nodes}], "
                f"got {tuple(edge_index.shape)}"
            )
        edge_index, edge_weight = to_edge_index(edge_index)
        edge_index = edge_index.flip(0)
    if not isinstance(edge_index, Tensor):
        raise TypeError(f"edge_index must be a Tensor, got {type(edge_index).__name__}")
    if type(edge_index) is not Tensor:  # EdgeIndex -> plain tensor (a plain one as it is)
        edge_index = edge_index.as_subclass(Tensor)
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"edge_index must have shape [2, E], got {tuple(edge_index.shape)}")
    if edge_index.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"edge_index must be an integer tensor, got {edge_index.dtype}")
    edge_index = edge_index.long()
    if edge_index.size(1) == 0 and not allow_empty:
        raise ValueError("the graph is empty: edge_index has no edges")
    if edge_weight is not None:
        if edge_weight.dim() != 1 or edge_weight.numel() != edge_index.size(1):
            raise ValueError(
                f"edge_weight must have shape [E] = [{edge_index.size(1)}], "
                f"got {tuple(edge_weight.shape)}"
            )
        if read_values() and not all_finite(edge_weight):
            raise ValueError("edge_weight contains NaN or inf values")
        if read_values() and non_negative and edge_weight.numel() and edge_weight.min() < 0:
            raise ValueError(
                f"edge_weight must be >= 0 (the degrees D^-1/2 normalises by), "
                f"got {float(edge_weight.min())}"
            )
    if read_values() and edge_index.numel() > 0:
        lo, hi = int(edge_index.min()), int(edge_index.max())
        if lo < 0 or hi >= num_nodes:
            raise ValueError(
                f"edge_index refers to node {lo if lo < 0 else hi}, "
                f"but there are only {num_nodes} nodes (valid range 0..{num_nodes - 1})"
            )
    return edge_index, edge_weight


def as_keys(keys: Tensor, num_rows: int) -> Tensor:
    """Validate sampled key rows (a non-empty 1-D integer tensor of distinct indices in
    range) and return them as ``int64``."""
    if not isinstance(keys, Tensor):
        raise TypeError(f"keys must be a Tensor, got {type(keys).__name__}")
    if keys.dim() != 1 or keys.numel() == 0:
        raise ValueError(f"keys must be a non-empty 1-D tensor, got shape {tuple(keys.shape)}")
    if keys.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"keys must be an integer tensor, got {keys.dtype}")
    keys = keys.long()
    if not read_values():
        return keys
    lo, hi = int(keys.min()), int(keys.max())
    if lo < 0 or hi >= num_rows:
        raise ValueError(f"keys refer to row {lo if lo < 0 else hi}, but there are {num_rows} rows")
    if torch.unique(keys).numel() != keys.numel():
        raise ValueError("keys must be distinct (a repeated key would be counted twice)")
    return keys


def non_finite_entries(value: object, name: str = "") -> list[str]:
    """The names (``key.key[index]``) of the floating-point tensors and numbers in
    ``value`` (dicts, lists and tuples of them, as a loaded state holds them) that hold NaN
    or inf: what a loaded file must not carry into a run."""
    if isinstance(value, Tensor):
        numbers = value.is_floating_point() or value.is_complex()
        finite = not numbers or bool(torch.isfinite(value).all())
        return [] if finite else [name or "the tensor"]
    if isinstance(value, float):
        return [] if math.isfinite(value) else [name or "the number"]
    if isinstance(value, dict):
        items = ((f"{name}.{key}" if name else str(key), v) for key, v in value.items())
    elif isinstance(value, list | tuple):
        items = ((f"{name}[{index}]", v) for index, v in enumerate(value))
    else:
        return []
    return [entry for key, v in items for entry in non_finite_entries(v, key)]
