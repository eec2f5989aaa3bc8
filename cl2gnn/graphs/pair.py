"""The minibatch augmentation graph: views of one natural sample form a clique."""

from __future__ import annotations

from functools import lru_cache

import torch
from torch import Tensor
from torch_geometric.utils import sort_edge_index


def pair_graph(
    batch_size: int | None = None,
    num_views: int = 2,
    *,
    sample_id: Tensor | None = None,
    device: torch.device | str | None = None,
) -> Tensor:
    r"""Edges between every two views of the same natural sample, self pairs excluded.

    With ``batch_size`` the views are assumed stacked view-major, as ``torch.cat([z1, z2,
    ...])`` produces: row ``v * batch_size + b`` is view ``v`` of sample ``b``. With
    ``sample_id`` (``[N]``, any integers) rows sharing an id are connected.

    Args:
        batch_size (int, optional): number of natural samples.
        num_views (int, optional): views per sample (default: ``2``).
        sample_id (torch.Tensor, optional): natural-sample id of every row.
        device (optional): device of the result when built from ``batch_size``.

    Returns:
        ``edge_index`` ``[2, E]`` in PyG's ``(source, target)`` convention, sorted by
        target; ``E = batch_size * num_views * (num_views - 1)`` in the first form.
    """
    if (batch_size is None) == (sample_id is None):
        raise ValueError("pass exactly one of batch_size and sample_id")
    if sample_id is None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if num_views < 2:
            raise ValueError(f"num_views must be >= 2 for a non-empty graph, got {num_views}")
        return _views_cliques(batch_size, num_views, device)
    if sample_id.dim() != 1 or sample_id.is_floating_point():
        raise ValueError(f"sample_id must be a 1-D integer tensor, got {sample_id.dtype}")
    return _cliques(sample_id)


def cached_pair_graph(
    batch_size: int, num_views: int = 2, device: torch.device | str | None = None
) -> Tensor:
    """:func:`pair_graph` of ``batch_size`` samples, built once per size and device and
    then shared between calls (a loss over equal-sized batches builds its graph once):
    read it, never modify it in place. While ``torch.compile`` traces, the graph is built
    in the traced graph (a compiled loss holds no tensor made outside it)."""
    if torch.compiler.is_compiling():
        return pair_graph(batch_size, num_views, device=device)
    return _shared_pair_graph(batch_size, num_views, device)


@lru_cache(maxsize=64)
def _shared_pair_graph(batch_size: int, num_views: int, device) -> Tensor:
    return pair_graph(batch_size, num_views, device=device)


def _views_cliques(batch_size: int, num_views: int, device) -> Tensor:
    """The cliques of ``num_views`` stacked views, built directly (no sort, no read of a
    device value): target ``t = v B + b`` receives from ``w B + b`` for every view ``w != v``,
    in increasing ``w``, the targets in order (what :func:`_cliques` makes of the same ids)."""
    target = torch.arange(batch_size * num_views, device=device).repeat_interleave(num_views - 1)
    others = torch.arange(num_views - 1, device=device).repeat(batch_size * num_views)
    view, sample = target // batch_size, target % batch_size
    source = (others + (others >= view).long()) * batch_size + sample  # every view but its own
    return torch.stack([source, target])


def _cliques(sample_id: Tensor) -> Tensor:
    n = sample_id.numel()
    perm = torch.argsort(sample_id, stable=True)
    _, counts = torch.unique_consecutive(sample_id[perm], return_counts=True)
    starts = torch.cumsum(counts, 0) - counts
    size = counts.repeat_interleave(counts)  # group size of each (sorted) row
    start = starts.repeat_interleave(counts)  # group start of each (sorted) row
    anchor = torch.arange(n, device=sample_id.device).repeat_interleave(size)
    first = (torch.cumsum(size, 0) - size).repeat_interleave(size)
    partner = start.repeat_interleave(size) + torch.arange(anchor.numel(), device=anchor.device)
    partner = partner - first
    keep = partner != anchor
    if not bool(keep.any()):
        raise ValueError("no two rows share a sample_id: the augmentation graph is empty")
    edge_index = torch.stack([perm[partner[keep]], perm[anchor[keep]]])
    return sort_edge_index(edge_index, num_nodes=n, sort_by_row=False)
