"""The per-anchor log-partition over the keys of every rank, by either mode."""

from __future__ import annotations

import math
from functools import partial

import torch
from torch import Tensor

from .collectives import gather_rows
from .ring import LogKernel, ring_row_logsumexp
from .shard import Shard


def _scaled_inner(scale: float, queries: Tensor, keys: Tensor) -> Tensor:
    return (queries * scale) @ keys.T  # scaled on the n × d side, not the n × N one


def inner_product(scale: float) -> LogKernel:
    """The kernel ``scale · q·k`` (``scale = 1/τ``)."""
    return partial(_scaled_inner, float(scale))


def row_logsumexp(
    x: Tensor,
    kernel: LogKernel,
    mode: str,
    shard: Shard,
    *,
    self_loops: bool = False,
    exclude_index: Tensor | None = None,
    stop_gradient: bool = False,
    tile_size: int = 1024,
) -> Tensor:
    """``[n_local]`` log-partition ``log Σ_j exp k(x_i, x_j)`` of this rank's rows over
    the rows of every rank: ``"gather"`` forms this rank's ``n_local × N`` logits against
    the gathered keys, ``"ring"`` passes the keys round (:func:`ring_row_logsumexp`).
    Self pairs are left out unless ``self_loops``; ``exclude_index`` holds local
    ``(key, anchor)`` pairs also left out. ``-inf`` for a row without keys."""
    if mode == "ring":
        return ring_row_logsumexp(
            x,
            kernel,
            shard,
            self_loops=self_loops,
            exclude_index=exclude_index,
            stop_gradient=stop_gradient,
            tile_size=tile_size,
        )
    keys = gather_rows(x, shard, grad=not stop_gradient)
    logits = masked_logits(kernel(x, keys), shard.offset, self_loops, exclude_index)
    return masked_logsumexp(logits)


def masked_logits(
    logits: Tensor, offset: int, self_loops: bool, exclude_index: Tensor | None
) -> Tensor:
    """``-inf`` on the self pairs (row ``i``'s own key is column ``offset + i``) unless
    ``self_loops``, and on the ``(key, anchor)`` pairs of ``exclude_index``; a new tensor
    (the kernel's backward may need its output), written by index, without an ``n × N``
    mask."""
    rows, cols = [], []
    if not self_loops:
        diagonal = torch.arange(logits.size(0), device=logits.device)
        rows, cols = [diagonal], [diagonal + offset]
    if exclude_index is not None:
        rows.append(exclude_index[1])
        cols.append(exclude_index[0] + offset)
    if not rows:
        return logits
    return logits.index_put((torch.cat(rows), torch.cat(cols)), logits.new_tensor(-math.inf))


def masked_logsumexp(logits: Tensor) -> Tensor:
    """Row-wise ``logsumexp``, ``-inf`` (with a zero gradient, not NaN) for a row whose
    every key is masked."""
    lse = torch.logsumexp(logits, dim=1)
    if bool(torch.isfinite(lse).all()):  # the usual case: one pass, no extra copies
        return lse
    has_keys = torch.isfinite(logits).any(1, keepdim=True)
    lse = torch.logsumexp(logits.masked_fill(~has_keys, 0.0), dim=1)
    return lse.masked_fill(~has_keys.view(-1), float("-inf"))
