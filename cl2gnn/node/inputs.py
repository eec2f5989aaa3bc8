"""What node-level training is given, checked where it enters the library: the graph
(:func:`check_graph`; its edges, a view's and a direct encoder call's by
:func:`check_edge_index` and :func:`check_edge_weight`), the scale of its features against
float32 (:func:`check_feature_scale`), a user's encoder (:func:`check_encoder`) and every
output of it (:func:`checked_output`), a user's view (:func:`check_view`), the labels a probe
will read (:func:`check_labels`), the seeds of an experiment (:func:`check_seeds`) and, on
the way out, the final embeddings (:func:`check_finite_embeddings`). Every problem is one
``ValueError`` naming the field, so that no bad index reaches a kernel (an out-of-range edge
made PyG's CSR builds write out of bounds) and nothing non-finite leaves a run."""

from __future__ import annotations

import math

import torch
from torch import Tensor
from torch_geometric.data import Data

from .._checks import FLOAT32_MAX, SEED_MAX, integer
from .._validation import all_finite


def check_graph(data: Data) -> None:
    """``data.x`` ``[N, F]`` with ``N, F >= 1``, finite, in torch's default dtype (what the
    models are made in), ``edge_index`` ``[2, E]`` integers in ``0 … N - 1``
    (:func:`check_edge_index`), ``edge_weight`` (if any) ``[E]`` finite and non-negative,
    of ``x``'s dtype; ``edge_attr`` refused (nothing here reads it, and it must not be
    ignored silently)."""
    if not isinstance(data, Data):
        raise ValueError(f"data must be a torch_geometric.data.Data, got {type(data).__name__}")
    x = data.get("x")
    if not isinstance(x, Tensor):
        raise ValueError("data.x: the graph has no node features (a [N, F] tensor)")
    if x.dim() != 2:
        raise ValueError(f"data.x must be a 2-D [N, F] tensor, got shape {tuple(x.shape)}")
    if x.dtype not in (torch.float32, torch.float64):  # what the encoders and losses compute in
        raise ValueError(f"data.x must be floating point (float32 or float64), got {x.dtype}")
    check_model_dtype(x.dtype, "data.x")
    n = x.size(0)
    if n == 0:
        raise ValueError("data.x: the graph is empty (no nodes)")
    if x.size(1) == 0:
        raise ValueError("data.x has zero feature columns")
    if not all_finite(x):
        raise ValueError("data.x contains NaN or inf values")
    if data.num_nodes != n:
        raise ValueError(f"data.num_nodes is {data.num_nodes} but data.x has {n} rows")
    if x.requires_grad:
        raise ValueError(
            "data.x requires grad: training reads the features and does not differentiate "
            "them; pass data.x.detach()"
        )
    check_edge_index(data.get("edge_index"), n, "data.edge_index")
    weight = data.get("edge_weight")
    check_edge_weight(weight, data.edge_index, x.dtype, "data.edge_weight", "data.x")
    if data.get("edge_attr") is not None:
        raise ValueError(
            "data.edge_attr: node-level training reads edge_index and edge_weight only; "
            "remove edge_attr, or fold it into an edge_weight [E]"
        )


def check_edge_weight(
    weight: object,
    edge_index: Tensor,
    dtype: torch.dtype,
    name: str = "edge_weight",
    features: str = "x",
) -> None:
    """``weight`` (if not ``None``) ``[E]`` for the ``E`` edges of ``edge_index``, floating
    point of the dtype of the features (``features``, of ``dtype``), finite and
    non-negative; ``ValueError`` naming ``name``."""
    if weight is None:
        return
    if not isinstance(weight, Tensor) or weight.shape != (edge_index.size(1),):
        shape = tuple(weight.shape) if isinstance(weight, Tensor) else type(weight).__name__
        raise ValueError(f"{name} must be a [E] = [{edge_index.size(1)}] tensor, got {shape}")
    if not weight.is_floating_point():
        raise ValueError(f"{name} must be floating point, got {weight.dtype}")
    if weight.dtype != dtype:
        raise ValueError(
            f"{name} is {weight.dtype} and {features} {dtype}: give them one dtype "
            f"({name} = {name}.to({features}.dtype))"
        )
    if not all_finite(weight) or (weight.numel() and float(weight.min()) < 0):
        raise ValueError(f"{name} must be finite and non-negative")


def check_model_dtype(dtype: torch.dtype, name: str) -> None:
    """Features of torch's default dtype, the one the built-in encoder, the heads and the
    predictors are made in (a float64 ``x`` beside float32 weights fails deep inside)."""
    default = torch.get_default_dtype()
    if dtype != default:
        to = ".float()" if default == torch.float32 else f".to({default})"
        raise ValueError(
            f"{name} is {dtype}, but the models are made in {default} (torch's default "
            f"dtype): convert the features, data.x = data.x{to}, or make every model in "
            f"{dtype} with torch.set_default_dtype({dtype}) first"
        )


def check_edge_index(edge_index: object, num_nodes: int, name: str = "edge_index") -> None:
    """``edge_index`` ``[2, E]``, integer, every id in ``0 … num_nodes - 1``: the one range
    check of every graph that reaches an encoder (the input ``Data``'s, a view's of one's own,
    a direct call of the built-in encoder). PyG's CSR builds and torch's sparse matmul trust
    their indices: an id out of range writes or reads out of bounds (heap corruption, a
    segfault or wrong values), not an error. ``ValueError`` naming ``name``."""
    if not isinstance(edge_index, Tensor):
        raise ValueError(f"{name}: the graph has no edges tensor ([2, E] integers)")
    if edge_index.dim() != 2 or edge_index.size(0) != 2:
        raise ValueError(f"{name} must have shape [2, E], got {tuple(edge_index.shape)}")
    if edge_index.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"{name} must be int64 (or int32), got {edge_index.dtype}")
    if edge_index.numel():
        low, high = (int(v) for v in torch.aminmax(edge_index))  # both ends: sources too
        if low < 0 or high >= num_nodes:
            raise ValueError(
                f"{name} refers to node {low if low < 0 else high}, but the graph has "
                f"{num_nodes} nodes (0 … {num_nodes - 1})"
            )


def check_view(view: object, num_nodes: int) -> None:
    """The output of a view that is not one of the library's (a transform of one's own) on
    a graph of ``num_nodes`` nodes: a ``Data`` of the same nodes (the loss pairs node ``i``
    of both views), its edges in range (:func:`check_edge_index`), its weights ``[E]``."""
    if not isinstance(view, Data):
        raise ValueError(f"augment: a view must return a Data, got {type(view).__name__}")
    x = view.get("x")
    if not isinstance(x, Tensor) or x.dim() != 2 or x.size(0) != num_nodes:
        shape = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
        raise ValueError(
            f"augment: a view must keep the graph's {num_nodes} nodes (x [{num_nodes}, F]), "
            f"got x {shape}"
        )
    check_edge_index(view.get("edge_index"), num_nodes, "augment: a view's edge_index")
    weight = view.get("edge_weight")
    edges = view.edge_index.size(1)
    if weight is not None and (not isinstance(weight, Tensor) or weight.shape != (edges,)):
        shape = tuple(weight.shape) if isinstance(weight, Tensor) else type(weight).__name__
        raise ValueError(f"augment: a view's edge_weight must be [E] = [{edges}], got {shape}")


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


# float32 squares a row's norm (row normalisation of embeddings, batch norm, the losses'
# norms), and sqrt(float32's largest) is about 2**64: rows up to 2**56 keep 2**16 of headroom
# in those squares for the widths of the layers
FEATURE_NORM_MAX = 2.0**56


def check_feature_scale(x: Tensor, normalize_features: bool) -> None:
    """Features whose rows float32 contrastive learning can still tell apart: without row
    normalisation, every row's norm at most :data:`FEATURE_NORM_MAX` (past it the squares
    of norms overflow and every embedding collapses to one point, with a loss that stays
    finite); with it (PyG's ``NormalizeFeatures``: shifted by the least feature, divided by
    the row sum), the shifted row sums finite in float32. ``ValueError`` naming the largest
    row and the fix otherwise."""
    if x.numel() == 0:
        return
    low, high = (float(v) for v in torch.aminmax(x.detach()))
    if normalize_features:  # a shifted row sums at most F values of at most high - low
        bound, limit, what = (high - low) * x.size(1), FLOAT32_MAX, "row sum (after the shift)"
    else:
        bound, limit, what = max(-low, high) * math.sqrt(x.size(1)), FEATURE_NORM_MAX, "row norm"
    if bound <= limit:
        return
    largest = 0.0  # the exact rows, in float64 a block at a time
    for rows in x.detach().split(1 << 14):
        rows = rows.double()
        sizes = (rows - low).sum(dim=1) if normalize_features else rows.norm(dim=1)
        largest = max(largest, float(sizes.max()))
    if largest > limit:
        raise ValueError(
            f"data.x: a {what} of {largest:.3g}, past the {limit:.3g} that float32 "
            "training can separate (the squares of such rows overflow and every embedding "
            "becomes one point): scale the features, e.g. standardise each column"
            + ("" if normalize_features else ", or row-normalise them (normalize_features)")
        )


def check_finite_embeddings(embeddings: Tensor, what: str = "the final embeddings") -> Tensor:
    """``embeddings`` if every value is finite; ``ValueError`` naming how many rows are not
    (the encoder in eval mode gave NaN or inf where training's losses stayed finite)."""
    if not all_finite(embeddings):
        bad = ~torch.isfinite(embeddings).all(dim=1)
        rows = bad.nonzero().flatten()
        raise ValueError(
            f"{what} hold NaN or inf in {rows.numel()} of {embeddings.size(0)} rows (the "
            f"first: node {int(rows[0])}): the encoder's output in eval mode is not finite"
        )
    return embeddings


def check_seeds(first_seed: int, seeds: int) -> range:
    """The seeds ``first_seed … first_seed + seeds - 1`` of an experiment, every one of them
    a seed NumPy takes (checked before the first trains); ``ValueError`` otherwise."""
    integer(1)(seeds, "seeds")
    integer(0, SEED_MAX)(first_seed, "first_seed")
    if first_seed + seeds - 1 > SEED_MAX:
        raise ValueError(
            f"seeds: {seeds} seeds from {first_seed} run to {first_seed + seeds - 1}, past "
            f"{SEED_MAX}, the largest seed NumPy takes"
        )
    return range(first_seed, first_seed + seeds)
