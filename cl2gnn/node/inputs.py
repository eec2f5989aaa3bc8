"""What node-level training is given, checked where it enters the library: the graph
(:func:`check_graph`), a user's encoder (:func:`check_encoder`) and the labels a probe will
read (:func:`check_labels`). Every problem is one ``ValueError`` naming the field, so that no
bad index reaches a kernel (an out-of-range edge made PyG's CSR builds write out of bounds)."""

from __future__ import annotations

import inspect

import torch
from torch import Tensor
from torch_geometric.data import Data

from .._validation import all_finite


def check_graph(data: Data) -> None:
    """``data.x`` floating point ``[N, F]`` with ``N, F >= 1`` and finite, ``edge_index``
    ``[2, E]`` integers in ``0 … N - 1``, ``edge_weight`` (if any) ``[E]`` finite and
    non-negative; ``edge_attr`` refused (nothing here reads it, and it must not be ignored
    silently)."""
    if not isinstance(data, Data):
        raise ValueError(f"data must be a torch_geometric.data.Data, got {type(data).__name__}")
    x = data.get("x")
    if not isinstance(x, Tensor):
        raise ValueError("data.x: the graph has no node features (a [N, F] tensor)")
    if x.dim() != 2:
        raise ValueError(f"data.x must be a 2-D [N, F] tensor, got shape {tuple(x.shape)}")
    if x.dtype not in (torch.float32, torch.float64):  # what the encoders and losses compute in
        raise ValueError(f"data.x must be floating point (float32 or float64), got {x.dtype}")
    n = x.size(0)
    if n == 0:
        raise ValueError("data.x: the graph is empty (no nodes)")
    if x.size(1) == 0:
        raise ValueError("data.x has zero feature columns")
    if not all_finite(x):
        raise ValueError("data.x contains NaN or inf values")
    if data.num_nodes != n:
        raise ValueError(f"data.num_nodes is {data.num_nodes} but data.x has {n} rows")
    edge_index = data.get("edge_index")
    if not isinstance(edge_index, Tensor):
        raise ValueError("data.edge_index: the graph has no edges tensor ([2, E] integers)")
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"data.edge_index must have shape [2, E], got {tuple(edge_index.shape)}")
    if edge_index.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"data.edge_index must be int64 (or int32), got {edge_index.dtype}")
    if edge_index.numel():
        low, high = int(edge_index.min()), int(edge_index.max())
        if low < 0 or high >= n:
            raise ValueError(
                f"data.edge_index refers to node {low if low < 0 else high}, but the graph has "
                f"{n} nodes (0 … {n - 1})"
            )
    weight = data.get("edge_weight")
    if weight is not None:
        if not isinstance(weight, Tensor) or weight.shape != (edge_index.size(1),):
            shape = tuple(weight.shape) if isinstance(weight, Tensor) else type(weight).__name__
            raise ValueError(
                f"data.edge_weight must be a [E] = [{edge_index.size(1)}] tensor, got {shape}"
            )
        if not weight.is_floating_point():
            raise ValueError(f"data.edge_weight must be floating point, got {weight.dtype}")
        if not all_finite(weight) or (weight.numel() and float(weight.min()) < 0):
            raise ValueError("data.edge_weight must be finite and non-negative")
    if data.get("edge_attr") is not None:
        raise ValueError(
            "data.edge_attr: node-level training reads edge_index and edge_weight only; "
            "remove edge_attr, or fold it into an edge_weight [E]"
        )


def takes_edge_weight(encoder: torch.nn.Module) -> bool:
    """Whether ``encoder``'s forward accepts ``edge_weight=`` (by name, or ``**kwargs``)."""
    try:
        parameters = inspect.signature(encoder.forward).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "edge_weight" or p.kind is p.VAR_KEYWORD for p in parameters)


def check_encoder(encoder: object) -> None:
    if not isinstance(encoder, torch.nn.Module):
        raise ValueError(
            f"encoder must be a torch.nn.Module called as encoder(x, edge_index), got "
            f"{type(encoder).__name__}"
        )


@torch.no_grad()
def output_width(encoder: torch.nn.Module, x: Tensor, edge_index: Tensor) -> int:
    """The width ``d`` of ``encoder(x, edge_index)``, read from its output on the first few
    nodes and the edges among them (in eval mode, its training mode restored); ``ValueError``
    unless it is ``[rows, d]``."""
    rows = min(x.size(0), 8)
    keep = (edge_index[0] < rows) & (edge_index[1] < rows)
    was_training = encoder.training
    encoder.eval()
    try:
        out = encoder(x[:rows], edge_index[:, keep])
    finally:
        encoder.train(was_training)
    if not isinstance(out, Tensor) or out.dim() != 2 or out.size(0) != rows:
        shape = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
        raise ValueError(
            f"encoder(x, edge_index) must return one row per node, [N, d]; on {rows} nodes it "
            f"returned {shape}"
        )
    return out.size(1)


def check_labels(y: object, num_nodes: int) -> None:
    """Labels a probe can read: ``[N]`` integers ``0 … C-1`` with ``C <= N`` (checked
    before anything sized by a label is allocated), at least two classes."""
    if not isinstance(y, Tensor):
        raise ValueError("data.y: the graph has no labels to probe")
    if y.shape != (num_nodes,):
        raise ValueError(f"data.y must be [N] = [{num_nodes}], got {tuple(y.shape)}")
    if y.is_floating_point() or y.is_complex() or y.dtype == torch.bool:
        raise ValueError(f"data.y must hold integer class labels, got {y.dtype}")
    if y.numel() and int(y.min()) < 0:
        raise ValueError(f"data.y holds a negative label ({int(y.min())}); classes are 0, 1, …")
    if y.numel() and int(y.max()) >= num_nodes:
        raise ValueError(
            f"data.y holds the label {int(y.max())}; classes are 0 … C-1 with C at most the "
            f"{num_nodes} nodes"
        )
    if torch.unique(y).numel() < 2:
        raise ValueError("data.y holds a single class: there is nothing to probe")
