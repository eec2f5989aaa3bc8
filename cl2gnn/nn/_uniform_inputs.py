"""The checks of :class:`~cl2gnn.nn.UniformAttention`'s inputs where they enter it (shapes,
index ranges, what goes with what), so that no bad index reaches a kernel."""

from __future__ import annotations

from torch import Tensor

from .._validation import as_edge_index, as_keys, check_features


def check_inputs(
    x: Tensor,
    edge_index: Tensor | None,
    weight: Tensor | None,
    exclude_index: Tensor | None,
    keys: Tensor | None,
    distributed: bool,
    self_loops: bool,
) -> tuple[Tensor, Tensor | None, Tensor | None]:
    """:class:`~cl2gnn.nn.UniformAttention`'s inputs on this rank, checked: the
    ``(weight, exclude_index, keys)`` it computes with (``weight`` ``None``: ones)."""
    if distributed and (edge_index is not None or keys is not None):
        raise ValueError(
            "distributed spans the complete affinity graph: pass no edge_index or keys"
        )
    # across ranks the row counts are checked together, by shard_of
    min_rows = 0 if distributed else 1 if self_loops or edge_index is not None else 2
    check_features(x, min_rows=min_rows)
    if keys is not None:
        if edge_index is not None or exclude_index is not None:
            raise ValueError("keys sample the complete graph: pass no edge_index or exclude_index")
        keys = as_keys(keys, x.size(0))
    if exclude_index is not None:
        if edge_index is not None:
            raise ValueError("exclude_index applies to the implicit complete graph only")
        exclude_index, _ = as_edge_index(exclude_index, None, x.size(0), allow_empty=True)
    if weight is None:
        return x.new_ones(x.size(0)), exclude_index, keys
    if weight.shape != (x.size(0),):
        raise ValueError(f"weight must have shape [N] = [{x.size(0)}], got {tuple(weight.shape)}")
    return weight.detach().to(x.dtype), exclude_index, keys
